// The Events the daemon keeps (server/state/event_book.h): beyond the cap, the oldest of the
// namespace keeping the most goes (journal format 7), so one tenant's churn pushes out its own
// Events; formats 1-6 dropped the oldest of all.
#include "server/state/event_book.h"

#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace event_book_test {

using Keys = std::vector<ObjectStore::Key>;

Preemption Of(const std::string& victim) {
  Preemption p;
  p.victim_namespace = "a";
  p.victim = victim;
  return p;
}

TEST(EventBook, BeyondTheCapTheBusiestNamespaceLosesItsOldest) {
  EventBook b;
  EXPECT_EQ(b.Add({"a", "a1"}, Of("x"), 4, true), Keys{});
  EXPECT_EQ(b.Add({"b", "b1"}, std::nullopt, 4, true), Keys{});
  EXPECT_EQ(b.Add({"b", "b2"}, std::nullopt, 4, true), Keys{});
  EXPECT_EQ(b.Add({"b", "b3"}, std::nullopt, 4, true), Keys{});
  EXPECT_EQ(b.Add({"b", "b4"}, std::nullopt, 4, true), Keys({{"b", "b1"}}));  // not a1
  EXPECT_EQ(b.Add({"c", "c1"}, std::nullopt, 4, true), Keys({{"b", "b2"}}));
  // a, b and c keep 1, 2 and 1: b again; then a tie of 1 each... b keeps 1: the last in name order.
  EXPECT_EQ(b.Add({"a", "a2"}, std::nullopt, 4, true), Keys({{"b", "b3"}}));
  EXPECT_EQ(b.Add({"d", "d1"}, std::nullopt, 4, true), Keys({{"a", "a1"}}));  // a keeps 2
  EXPECT_EQ(b.Keys(), Keys({{"b", "b4"}, {"c", "c1"}, {"a", "a2"}, {"d", "d1"}}));
  EXPECT_TRUE(b.Preemptions().empty()) << "a1's preemption left with it";
}

TEST(EventBook, FormatSixDropsTheOldestOfAll) {
  EventBook b;
  b.Add({"a", "a1"}, Of("x"), 3, false);
  b.Add({"b", "b1"}, std::nullopt, 3, false);
  b.Add({"b", "b2"}, Of("y"), 3, false);
  EXPECT_EQ(b.Add({"b", "b3"}, std::nullopt, 3, false), Keys({{"a", "a1"}}));
  EXPECT_EQ(b.Preemptions(), std::vector<Preemption>{Of("y")});
  EXPECT_EQ(b.size(), 3u);
}

TEST(EventBook, AssignKeepsTheOrderAndReadsThePreemptions) {
  EventBook b;
  b.Assign(Keys({{"b", "b1"}, {"a", "a1"}, {"b", "b2"}}),
           [](const ObjectStore::Key& k) -> std::optional<Preemption> {
             if (k.second == "a1") return Of("x");
             return std::nullopt;
           });
  EXPECT_EQ(b.Keys(), Keys({{"b", "b1"}, {"a", "a1"}, {"b", "b2"}}));
  EXPECT_EQ(b.Preemptions(), std::vector<Preemption>{Of("x")});
  EXPECT_EQ(b.Add({"c", "c1"}, std::nullopt, 3, true), Keys({{"b", "b1"}}));
}

// Found by a hostile-tenant trial: a tenant creating and deleting pods within its quota erased
// every other namespace's Events (one cap of 20,000 for all, oldest first). Since journal format
// 7 its churn pushes out its own; a record of formats 1-6 replays as it was answered.
int ChurnAndCountTheOthersEvents(int format) {
  Cluster c("0000abcd");
  c.SetRecordFormat(format);
  fixtures::Ok(c, fixtures::Create(fixtures::kT0, fixtures::Namespace("team-a")));
  fixtures::Ok(c, fixtures::Create(fixtures::kT0, fixtures::Namespace("team-b")));
  // team-a's pod waits (no node): FailedScheduling.
  fixtures::Ok(c, fixtures::Create(fixtures::kT0, fixtures::PodIn("team-a", "mine", 1)));
  const size_t before = c.store().List("Event", "team-a").size();
  EXPECT_GE(before, 1u);
  for (int i = 0; i < static_cast<int>(Cluster::kMaxEvents); ++i) {  // (an Event or more each)
    const Millis t = fixtures::kT0 + 1 + i;
    const std::string name = "churn-" + std::to_string(i);
    fixtures::Ok(c, fixtures::Create(t, fixtures::PodIn("team-b", name, 1)));
    fixtures::Ok(c, fixtures::Delete(t, "Pod", "team-b", name));
  }
  EXPECT_EQ(c.store().List("Event", "team-b").size() + c.store().List("Event", "team-a").size(),
            Cluster::kMaxEvents);
  return static_cast<int>(c.store().List("Event", "team-a").size() - before);
}

TEST(EventBook, AnotherTenantsChurnLeavesANamespacesEvents) {
  EXPECT_EQ(ChurnAndCountTheOthersEvents(7), 0) << "team-a kept all its Events";
  EXPECT_LT(ChurnAndCountTheOthersEvents(6), 0) << "formats 1-6: the oldest of all went";
}

}  // namespace event_book_test
}  // namespace arbiter::server
