// A Job's kept pod table (JobPodTable, job_controller.h) against counts made afresh: random pods
// added, changed (erased and added again) and erased, the table's counts and its list of the pods
// not active checked after every step against a walk of the pods it should hold.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
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
  f.created = static_cast<Millis>(rng() % 1000);
  return f;
}

// What the table should say of `pods`, counted by a walk.
void ExpectCounts(const JobPodTable& t, const std::map<std::string, JobPodFacts>& pods) {
  int64_t active = 0, ready = 0, restarts = 0, crash_loops = 0;
  std::vector<std::string> others;
  for (const auto& [name, f] : pods) {
    const bool finished = f.phase == Phase::kSucceeded || f.phase == Phase::kFailed;
    active += !finished && !f.deleting;
    ready += !finished && !f.deleting && f.ready;
    restarts += f.phase == Phase::kRunning || f.phase == Phase::kPending ? f.restarts : 0;
    crash_loops += f.crash_loop;
    if (finished || f.deleting) others.push_back(name);
  }
  ASSERT_EQ(t.pods().size(), pods.size());
  auto it = t.pods().begin();
  for (const auto& [name, f] : pods) ASSERT_EQ(*it++, f) << name;
  EXPECT_EQ(t.active(), active);
  EXPECT_EQ(t.ready(), ready);
  EXPECT_EQ(t.restarts(), restarts);
  EXPECT_EQ(t.crash_loops(), crash_loops);
  std::vector<std::string> kept;
  for (const JobPodFacts* f : t.others()) kept.push_back(f->name);
  EXPECT_EQ(kept, others);
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
