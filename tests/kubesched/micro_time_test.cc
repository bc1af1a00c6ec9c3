// metav1.MicroTime text (src/kubesched/micro_time.h), as Leases and events.k8s.io Events carry it.
// Leader election and the event recorder each had their own copy; the lease's gave a negative
// fraction before the epoch.
#include "kubesched/micro_time.h"

#include <gtest/gtest.h>

namespace arbiter::kubesched {
namespace micro_time_test {

TEST(MicroTime, SixDigitsInUtc) {
  EXPECT_EQ(FormatMicroTime(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatMicroTime(250), "1970-01-01T00:00:00.250000Z");
  EXPECT_EQ(FormatMicroTime(1764000000123), "2025-11-24T16:00:00.123000Z");
}

TEST(MicroTime, BeforeTheEpochTheFractionStaysPositive) {
  EXPECT_EQ(FormatMicroTime(-1), "1969-12-31T23:59:59.999000Z");
  EXPECT_EQ(FormatMicroTime(-1000), "1969-12-31T23:59:59.000000Z");
}

}  // namespace micro_time_test
}  // namespace arbiter::kubesched
