// A Job's kept pod table (JobPodTable, job_controller.h) against counts made afresh: random pods
// added, changed (erased and added again) and erased, the table's counts and its lists (the pods
// not active, the active ones in the order a Job deletes them, the tracked unfinished ones)
// checked after every step against a walk of the pods it should hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "server/state/job_controller.h"

namespace arbiter::server {
namespace {

using Phase = JobPodFacts::Phase;

JobPodFacts RandomFacts(std::mt19937& rng, const std::string& name) {
  auto coin = [&] { return rng() % 2 == 0; };
  JobPodFacts f;
  f.name = name;
  f.phase = static_cast<Phase>(rng() % 5);
  f.deleting = rng() % 4 == 0;
  f.tracked = coin();
  f.ready = coin();
  f.crash_loop = rng() % 5 == 0;
  f.restarts = static_cast<int32_t>(rng() % 4);
  f.index = static_cast<int32_t>(rng() % 7) - 1;
  f.bound = coin();
  f.created = static_cast<Millis>(rng() % 8);  // (ties: the name decides)
  return f;
}

// What the table should say of `pods`, counted by a walk.
void ExpectCounts(const JobPodTable& t, const std::map<std::string, JobPodFacts>& pods) {
  int64_t active = 0, ready = 0, restarts = 0, crash_loops = 0;
  std::vector<std::string> others, tracked_active, tracked_terminating;
  std::vector<std::tuple<bool, Millis, std::string>> deleted_first;  // (bound, -created, -name)
  for (const auto& [name, f] : pods) {
    const bool finished = f.phase == Phase::kSucceeded || f.phase == Phase::kFailed;
    active += !finished && !f.deleting;
    ready += !finished && !f.deleting && f.ready;
    restarts += f.phase == Phase::kRunning || f.phase == Phase::kPending ? f.restarts : 0;
    crash_loops += f.crash_loop;
    if (finished || f.deleting) others.push_back(name);
    if (!finished && !f.deleting) deleted_first.emplace_back(f.bound, f.created, name);
    if (f.tracked && !finished) (f.deleting ? tracked_terminating : tracked_active).push_back(name);
  }
  // A Job deletes pending (unbound) pods first, then the newest, then by name descending.
  std::sort(deleted_first.begin(), deleted_first.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return !std::get<0>(a);
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) > std::get<1>(b);
    return std::get<2>(a) > std::get<2>(b);
  });
  ASSERT_EQ(t.pods().size(), pods.size());
  auto it = t.pods().begin();
  for (const auto& [name, f] : pods) ASSERT_EQ(*it++, f) << name;
  EXPECT_EQ(t.active(), active);
  EXPECT_EQ(t.ready(), ready);
  EXPECT_EQ(t.restarts(), restarts);
  EXPECT_EQ(t.crash_loops(), crash_loops);
  auto names = [](const auto& set) {
    std::vector<std::string> out;
    for (const JobPodFacts* f : set) out.push_back(f->name);
    return out;
  };
  EXPECT_EQ(names(t.others()), others);
  std::vector<std::string> ranked;
  for (const auto& d : deleted_first) ranked.push_back(std::get<2>(d));
  EXPECT_EQ(names(t.active_pods()), ranked);
  EXPECT_EQ(names(t.tracked_active()), tracked_active);
  EXPECT_EQ(names(t.tracked_terminating()), tracked_terminating);
}

TEST(JobPodTable, CountsKeptAsPodsComeChangeAndGoMatchAFreshWalk) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    JobPodTable table;
    std::map<std::string, JobPodFacts> pods;
    for (int step = 0; step < 400; ++step) {
      const std::string name = "p" + std::to_string(rng() % 40);
      switch (rng() % 3) {
        case 0: {  // added (a pod of that name stays as it was)
          JobPodFacts f = RandomFacts(rng, name);
          table.Add(f);
          pods.try_emplace(name, f);
          break;
        }
        case 1: {  // changed, as the Cluster does (NoteJobPod): erased, then added
          JobPodFacts f = RandomFacts(rng, name);
          table.Erase(name);
          table.Add(f);
          pods[name] = f;
          break;
        }
        default:
          table.Erase(name);
          pods.erase(name);
      }
      ASSERT_NO_FATAL_FAILURE(ExpectCounts(table, pods));
    }
    JobPodTable fresh;
    for (const auto& [name, f] : pods) fresh.Add(f);
    EXPECT_TRUE(table == fresh);
    if (!pods.empty()) {  // a change the table did not see is told apart
      JobPodFacts f = pods.begin()->second;
      f.deleting = !f.deleting;
      fresh.Erase(f.name);
      fresh.Add(f);
      EXPECT_FALSE(table == fresh);
    }
  }
}

TEST(JobPodTable, AnAddOfANameItHoldsChangesNothing) {
  JobPodTable table;
  JobPodFacts running{.name = "a", .phase = Phase::kRunning, .ready = true};
  table.Add(running);
  JobPodFacts failed{.name = "a", .phase = Phase::kFailed};
  table.Add(failed);
  EXPECT_EQ(table.active(), 1);
  EXPECT_EQ(table.ready(), 1);
  EXPECT_TRUE(table.others().empty());
  table.Erase("a");
  table.Erase("a");
  EXPECT_EQ(table.active(), 0);
  EXPECT_TRUE(table.pods().empty());
}

}  // namespace
}  // namespace arbiter::server
