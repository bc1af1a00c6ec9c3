// When the daemon's meter job (`arbiter serve --meter-prometheus`) meters which hours: pure, from
// the wall-clock time it is given, its watermark (every hour before it is metered and sealed) and
// its settings. An hour [h, h + 1h) is closed once h + 1h + delay <= now: it is metered one last
// time and sealed, and the watermark moves past it. A job that was down catches up in windows of
// at most `max_hours`. With `open_hours`, the hours after the watermark up to the current one are
// metered too, unsealed (rows of a partial hour, replaced in place as it fills up).
#pragma once

#include <cstdint>
#include <optional>

#include "core/duration.h"

namespace arbiter::billing {

struct MeterJobSettings {
  Millis delay = 300000;    // how long after an hour ends it is sealed
  bool open_hours = false;  // also meter the hours not closed yet (unsealed)
  int64_t max_hours = 168;  // the longest window metered at once when catching up (a week)
};

struct HourWindow {
  Millis from = 0, to = 0;  // whole hours, from < to
  bool operator==(const HourWindow&) const = default;
};

struct MeterJobStep {
  // Hours to meter and seal; the watermark becomes closed->to. Absent: nothing closed yet.
  std::optional<HourWindow> closed;
  // Hours to meter without sealing (open_hours), after what `closed` covers.
  std::optional<HourWindow> open;
  bool operator==(const MeterJobStep&) const = default;
};

// A job without a watermark starts at the hour that closes next (the hour holding now - delay).
MeterJobStep PlanMeterJob(Millis now, std::optional<Millis> watermark, const MeterJobSettings& s);

// How far the job is behind: the closed hours its watermark has not reached yet, in ms (0 when
// caught up, and before its first window: it starts at the hour that closes next).
Millis MeterLagMs(Millis now, std::optional<Millis> watermark, const MeterJobSettings& s);

}  // namespace arbiter::billing
