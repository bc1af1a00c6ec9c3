// The daemon's meter job schedule (core/billing/meter_schedule.h): which hours are sealed when,
// catching up after downtime, and the open (partial) hours.
#include "core/billing/meter_schedule.h"

#include <gtest/gtest.h>

#include "core/billing/metering.h"

namespace arbiter::billing {
namespace {

constexpr Millis H = kHourMs;
constexpr Millis kT0 = 1796126400000;  // 2026-12-01T12:00:00Z
constexpr Millis kMin = 60000;

TEST(MeterJobPlan, AnHourIsSealedOnlyOnceItsEndPlusTheDelayHasPassed) {
  MeterJobSettings s;
  s.delay = 10 * kMin;
  // Watermark 12:00: the hour 12:00 ends at 13:00 and is closed at 13:10, not before.
  EXPECT_EQ(PlanMeterJob(kT0 + H + 9 * kMin, kT0, s), MeterJobStep{});
  EXPECT_EQ(PlanMeterJob(kT0 + H + 10 * kMin, kT0, s).closed, (HourWindow{kT0, kT0 + H}));
  EXPECT_EQ(PlanMeterJob(kT0 + 2 * H + 9 * kMin, kT0, s).closed, (HourWindow{kT0, kT0 + H}));
}

TEST(MeterJobPlan, AFirstRunStartsAtTheHourThatClosesNext) {
  MeterJobSettings s;
  s.delay = 10 * kMin;
  // 13:05 with a 10 minute delay: the hour 12:00 is not closed yet; it is the first one metered.
  EXPECT_EQ(PlanMeterJob(kT0 + H + 5 * kMin, std::nullopt, s), MeterJobStep{});
  s.open_hours = true;
  EXPECT_EQ(PlanMeterJob(kT0 + H + 5 * kMin, std::nullopt, s).open, (HourWindow{kT0, kT0 + 2 * H}));
}

TEST(MeterJobPlan, CatchingUpAfterDowntimeGoesInWindowsOfAtMostMaxHoursBeforeTheOpenHours) {
  MeterJobSettings s;
  s.delay = 0;
  s.max_hours = 24;
  s.open_hours = true;
  const Millis now = kT0 + 50 * H + 30 * kMin;  // 50.5 hours after the watermark
  auto first = PlanMeterJob(now, kT0, s);
  EXPECT_EQ(first.closed, (HourWindow{kT0, kT0 + 24 * H}));
  EXPECT_FALSE(first.open);
  auto second = PlanMeterJob(now, kT0 + 24 * H, s);
  EXPECT_EQ(second.closed, (HourWindow{kT0 + 24 * H, kT0 + 48 * H}));
  auto third = PlanMeterJob(now, kT0 + 48 * H, s);
  EXPECT_EQ(third.closed, (HourWindow{kT0 + 48 * H, kT0 + 50 * H}));
  EXPECT_EQ(third.open, (HourWindow{kT0 + 50 * H, kT0 + 51 * H}));
  auto caught_up = PlanMeterJob(now, kT0 + 50 * H, s);
  EXPECT_FALSE(caught_up.closed);
  EXPECT_EQ(caught_up.open, (HourWindow{kT0 + 50 * H, kT0 + 51 * H}));
}

TEST(MeterJobPlan, TheLagIsTheClosedHoursTheWatermarkHasNotReached) {
  MeterJobSettings s;
  s.delay = 10 * kMin;
  // Caught up: the watermark is the end of the last closed hour.
  EXPECT_EQ(MeterLagMs(kT0 + H + 10 * kMin, kT0 + H, s), 0);
  EXPECT_EQ(MeterLagMs(kT0 + 2 * H + 9 * kMin, kT0 + H, s), 0);  // 13:00 not closed yet
  // Down for a day: 24 closed hours wait; each window sealed takes its hours off.
  EXPECT_EQ(MeterLagMs(kT0 + 24 * H + 10 * kMin, kT0, s), 24 * H);
  auto step = PlanMeterJob(kT0 + 24 * H + 10 * kMin, kT0, MeterJobSettings{s.delay, false, 6});
  ASSERT_TRUE(step.closed);
  EXPECT_EQ(MeterLagMs(kT0 + 24 * H + 10 * kMin, step.closed->to, s), 18 * H);
  // Before the first window, and with a watermark ahead of the clock: no lag.
  EXPECT_EQ(MeterLagMs(kT0, std::nullopt, s), 0);
  EXPECT_EQ(MeterLagMs(kT0, kT0 + 5 * H, s), 0);
}

TEST(MeterJobPlan, WithinTheDelayTheHourJustEndedIsStillOpen) {
  MeterJobSettings s;
  s.delay = 10 * kMin;
  s.open_hours = true;
  // 13:05, watermark 12:00: both the hour 12:00 (ended, not sealed) and 13:00 are open.
  auto p = PlanMeterJob(kT0 + H + 5 * kMin, kT0, s);
  EXPECT_FALSE(p.closed);
  EXPECT_EQ(p.open, (HourWindow{kT0, kT0 + 2 * H}));
}

}  // namespace
}  // namespace arbiter::billing
