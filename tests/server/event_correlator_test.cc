// EventCorrelator: client-go's event correlation (tools/record/events_cache.go) for the Job
// controller's events: similar messages combined, repeats counted, a spam filter per object.
#include "server/state/event_correlator.h"

#include <gtest/gtest.h>

#include <string>

namespace arbiter::server {
namespace {

using Event = EventCorrelator::Event;

Event Ev(const std::string& reason, const std::string& message, int64_t now,
         const std::string& type = "Normal", const std::string& object = "job-uid") {
  return {object, type, reason, message, now, "ev-" + message};
}

TEST(EventCorrelatorTest, TheTenthDistinctMessageIsCombinedAndLaterOnesCountOnIt) {
  EventCorrelator c;
  for (int i = 1; i <= 9; ++i) {
    auto r = c.Correlate(Ev("SuccessfulCreate", "Created pod: p" + std::to_string(i), i));
    EXPECT_FALSE(r.skip);
    EXPECT_EQ(r.count, 1);
    EXPECT_EQ(r.message, "Created pod: p" + std::to_string(i));
    EXPECT_EQ(r.name, "ev-Created pod: p" + std::to_string(i));
  }
  auto tenth = c.Correlate(Ev("SuccessfulCreate", "Created pod: p10", 10));
  EXPECT_EQ(tenth.message, "(combined from similar events): Created pod: p10");
  EXPECT_EQ(tenth.count, 1);
  EXPECT_EQ(tenth.name, "ev-Created pod: p10");
  auto eleventh = c.Correlate(Ev("SuccessfulCreate", "Created pod: p11", 11));
  EXPECT_EQ(eleventh.message, "(combined from similar events): Created pod: p11");
  EXPECT_EQ(eleventh.count, 2);
  EXPECT_EQ(eleventh.name, "ev-Created pod: p10");  // the combined event, updated
  EXPECT_EQ(eleventh.first, 10);
  // Another reason is aggregated on its own.
  EXPECT_EQ(c.Correlate(Ev("SuccessfulDelete", "Deleted pod: p1", 12)).message, "Deleted pod: p1");
}

TEST(EventCorrelatorTest, AnIdenticalEventUpdatesTheFirstOneAndTheWindowRestartsAggregation) {
  EventCorrelator c;
  auto a = c.Correlate(Ev("FailedCreate", "Error creating: quota", 1000, "Warning"));
  auto b = c.Correlate(Ev("FailedCreate", "Error creating: quota", 5000, "Warning"));
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(b.count, 2);
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.first, 1000);
  for (int i = 0; i < 9; ++i) c.Correlate(Ev("SuccessfulCreate", "m" + std::to_string(i), 2000));
  // 600 s after the last one the distinct messages are forgotten: not combined.
  EXPECT_EQ(c.Correlate(Ev("SuccessfulCreate", "late", 2000 + 600001)).message, "late");
}

TEST(EventCorrelatorTest, TwentyFiveEventsAnObjectAndTypeThenOneEveryFiveMinutes) {
  EventCorrelator c;
  int written = 0;
  for (int i = 0; i < 40; ++i)
    written += !c.Correlate(Ev("Completed", "same " + std::to_string(i % 3), 0)).skip;
  EXPECT_EQ(written, 25);
  // Warnings and other objects have their own buckets.
  EXPECT_FALSE(c.Correlate(Ev("BackoffLimitExceeded", "x", 0, "Warning")).skip);
  EXPECT_FALSE(c.Correlate(Ev("Completed", "x", 0, "Normal", "other-uid")).skip);
  EXPECT_TRUE(c.Correlate(Ev("Completed", "x", 299999)).skip);
  EXPECT_FALSE(c.Correlate(Ev("Completed", "x", 300000)).skip);
  EXPECT_TRUE(c.Correlate(Ev("Completed", "x", 300001)).skip);
  c.Forget("job-uid");
  EXPECT_FALSE(c.Correlate(Ev("Completed", "x", 300002)).skip);
}

TEST(EventCorrelatorTest, SavedAndLoadedItCorrelatesTheSame) {
  EventCorrelator a;
  for (int i = 0; i < 30; ++i) a.Correlate(Ev("SuccessfulCreate", "p" + std::to_string(i), i));
  a.Correlate(Ev("FailedCreate", "q", 40, "Warning"));
  EventCorrelator b;
  b.Load(a.Save());
  EXPECT_EQ(b.Save(), a.Save());
  for (int64_t t : {50, 300100, 300200}) {
    auto x = a.Correlate(Ev("SuccessfulCreate", "later", t));
    auto y = b.Correlate(Ev("SuccessfulCreate", "later", t));
    EXPECT_EQ(x.skip, y.skip);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.message, y.message);
    EXPECT_EQ(x.name, y.name);
  }
  EXPECT_THROW(b.Load(nlohmann::json::parse(R"([["u", "x"]])")), nlohmann::json::exception);
}

}  // namespace
}  // namespace arbiter::server
