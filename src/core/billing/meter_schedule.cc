#include "core/billing/meter_schedule.h"

#include <algorithm>

#include "core/billing/metering.h"

namespace arbiter::billing {

namespace {
Millis FloorHour(Millis t) { return t / kHourMs * kHourMs - (t % kHourMs < 0 ? kHourMs : 0); }
}  // namespace

MeterJobStep PlanMeterJob(Millis now, std::optional<Millis> watermark, const MeterJobSettings& s) {
  MeterJobStep step;
  const Millis closable = FloorHour(now - s.delay);  // hours before it are closed
  const Millis start = watermark ? FloorHour(*watermark) : closable;
  Millis next = start;
  if (start < closable) {
    const Millis to = std::min(closable, start + std::max<int64_t>(1, s.max_hours) * kHourMs);
    step.closed = HourWindow{start, to};
    next = to;
  }
  // While catching up, the open hours wait until the closed ones are done.
  if (s.open_hours && next >= closable) {
    const Millis end = FloorHour(now) + kHourMs;
    if (next < end) step.open = HourWindow{next, end};
  }
  return step;
}

Millis MeterLagMs(Millis now, std::optional<Millis> watermark, const MeterJobSettings& s) {
  if (!watermark) return 0;
  return std::max<Millis>(0, FloorHour(now - s.delay) - FloorHour(*watermark));
}

}  // namespace arbiter::billing
