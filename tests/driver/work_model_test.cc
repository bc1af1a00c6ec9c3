// The work model's stop plans (driver/work_model.h): what a SIGTERM's grace keeps, and what a
// second delete's shorter grace changes.
#include "driver/work_model.h"

#include <gtest/gtest.h>

namespace arbiter::driver {
namespace work_model_test {

constexpr Millis kMin = 60000;

// 1 h of work with a checkpoint every 10 min and a 5 min shutdown, started at 0.
Work Checkpointed() {
  Work w;
  w.spec.duration = 60 * kMin;
  w.spec.checkpoint_interval = 10 * kMin;
  w.spec.shutdown = 5 * kMin;
  (void)WorkModel::Start(w, 0);
  return w;
}

// SIGTERM at 25 min with a 10 min grace: the 5 min shutdown ends in time and saves all 25 min.
// A second delete at 27 min with 1 min left kills it at 28 min: only the 20 min checkpoint had
// been saved by the SIGTERM, 5 min are lost.
TEST(WorkModelTest, AShorterGraceKillsBeforeTheShutdownEnds) {
  Work w = Checkpointed();
  const StopPlan first = WorkModel::Stop(w, 25 * kMin, 10 * kMin);
  EXPECT_EQ(first.exit_at, 30 * kMin);
  EXPECT_EQ(first.kept, 25 * kMin);
  EXPECT_EQ(first.lost, 0);
  const StopPlan shorter = WorkModel::Shorten(w, 27 * kMin, kMin);
  EXPECT_EQ(shorter.grace, 3 * kMin) << "the whole grace since the SIGTERM";
  EXPECT_EQ(shorter.exit_at, 28 * kMin);
  EXPECT_EQ(shorter.kept, 20 * kMin);
  EXPECT_EQ(shorter.lost, 5 * kMin);
  EXPECT_EQ(w.lost_ms, 5 * kMin);
  EXPECT_EQ(WorkModel::StopText(w, shorter),
            ", shutdown 5m (killed at the end of the grace period), exits at 28m; progress kept "
            "20m, lost 5m");
  WorkModel::Exited(w);
  EXPECT_EQ(w.progress, 20 * kMin);
}

// A grace that ends after the planned exit changes nothing.
TEST(WorkModelTest, AGraceEndingAfterTheExitChangesNothing) {
  Work w = Checkpointed();
  (void)WorkModel::Stop(w, 25 * kMin, 10 * kMin);
  const StopPlan later = WorkModel::Shorten(w, 26 * kMin, 8 * kMin);
  EXPECT_EQ(later.exit_at, 30 * kMin);
  EXPECT_EQ(later.kept, 25 * kMin);
  EXPECT_EQ(later.lost, 0);
  EXPECT_EQ(w.lost_ms, 0);
}

// Killed at the grace's end already (no checkpoint since): shortening loses nothing more.
TEST(WorkModelTest, ShorteningAKilledStopLosesNothingMore) {
  Work w = Checkpointed();
  w.spec.shutdown = 30 * kMin;
  const StopPlan first = WorkModel::Stop(w, 25 * kMin, 2 * kMin);
  EXPECT_EQ(first.lost, 5 * kMin);
  const StopPlan shorter = WorkModel::Shorten(w, 26 * kMin, 0);
  EXPECT_EQ(shorter.exit_at, 26 * kMin);
  EXPECT_EQ(shorter.lost, 5 * kMin);
  EXPECT_EQ(w.lost_ms, 5 * kMin);
}

}  // namespace work_model_test
}  // namespace arbiter::driver
