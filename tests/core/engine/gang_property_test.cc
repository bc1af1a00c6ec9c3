// Property tests for pod groups (gangs): on random pools with random gangs added, a gang is never
// partially running — after every instant, the members of a group that run are none or at least
// minMember — and a member evicted takes the others with it, including members preempted within
// their namespace's quota and groups that preempt for their own quota. The engine's invariants hold
// after every step and a repeated run is byte-identical.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "core/engine/random_pool.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

using testing_pools::RandomPool;
using testing_pools::Rng;

// RandomPool plus 1-3 pod groups; members of a group share shape, priority and work spec, as the
// replicas of a distributed job do (so they finish together and a group stays whole).
// With `crowded`, the groups run at the top priority tier and every node starts with long
// low-priority 1-GPU pods of a namespace without quota: groups blocked by their quota then often
// need the combined plan (quota victims plus preemption for room).
ManifestSet PoolWithGangs(uint64_t seed, std::map<std::string, int>* min_of, bool crowded = false) {
  ManifestSet m = RandomPool(seed);
  if (crowded) {
    // team-a lends everything it does not use; the others borrow it.
    bool has_a = false;
    for (auto& q : m.elastic_quotas) {
      q.cohort = "pool";
      q.lending_limit = {};
      q.lending_limit_set.clear();
      q.max.reset();
      q.min.Set("nvidia.com/gpu", q.meta.namespace_ == "team-a" ? 16000 : 0);
      has_a = has_a || q.meta.namespace_ == "team-a";
    }
    if (!has_a) {
      ElasticQuota a;
      a.meta.name = a.meta.namespace_ = "team-a";
      a.cohort = "pool";
      a.min = {{"nvidia.com/gpu", 16000}, {"cpu", 64000}};
      m.elastic_quotas.push_back(a);
    }
  }
  if (crowded)
    for (const Node& n : m.nodes)
      for (int64_t i = 0; i < n.capacity.Get("nvidia.com/gpu") / 2000; ++i) {
        Pod p;
        p.meta.name = "filler-" + n.meta.name + "-" + std::to_string(i);
        p.meta.namespace_ = "batch";
        Container c;
        c.name = "c";
        c.requests = {{"cpu", 500}, {"memory", int64_t{1} << 30}, {"nvidia.com/gpu", 1000}};
        p.containers.push_back(c);
        p.priority_class_name = "tier-1000";
        p.sim.qos = "low";
        p.sim.duration = 8 * 3600 * 1000;
        m.pods.push_back(p);
      }
  Rng r{seed ^ 0x6a09e667f3bcc908ULL};
  // Some namespaces preempt within their own quota too, so that groups blocked by quota take
  // both quota preemption paths (reclaim from the cohort, within the namespace).
  for (auto& q : m.elastic_quotas)
    if (r.Chance(50)) q.preemption.within_namespace = WithinNamespacePolicy::kLowerPriority;
  const int groups = static_cast<int>(r.Uniform(1, 3));
  for (int g = 0; g < groups; ++g) {
    Pod base = m.pods[static_cast<size_t>(r.Uniform(0, static_cast<int64_t>(m.pods.size()) - 1))];
    if (crowded) {
      base.meta.namespace_ = "team-a";
      base.priority_class_name = "tier-10000";
      base.sim.qos = "high";
      base.node_selector.clear();
      base.containers.resize(1);
      base.containers[0].requests = {
          {"cpu", 1000}, {"memory", int64_t{4} << 30}, {"nvidia.com/gpu", r.Uniform(1, 2) * 1000}};
      base.containers[0].limits = {};
    }
    PodGroup pg;
    pg.meta.name = "gang-" + std::to_string(g);
    pg.meta.namespace_ = base.meta.namespace_;
    const int members = static_cast<int>(r.Uniform(2, 4));
    pg.min_member = static_cast<int32_t>(r.Uniform(1, members));
    (*min_of)[pg.meta.namespace_ + "/" + pg.meta.name] = pg.min_member;
    m.pod_groups.push_back(pg);
    for (int i = 0; i < members; ++i) {
      Pod p = base;
      p.meta.name = pg.meta.name + "-" + std::to_string(i);
      p.meta.labels[kPodGroupLabel] = pg.meta.name;
      if (r.Chance(30)) p.sim.submit_time += r.Uniform(0, 30) * 60000;  // stragglers
      m.pods.push_back(p);
    }
  }
  ResolvePodGroups(&m);
  return m;
}

struct GangCounts {
  size_t starts = 0, stops = 0, reclaims = 0, reclaims_with_room = 0;
};

void CheckGangsOnRandomPools(bool crowded, GangCounts* n) {
  size_t &gang_starts = n->starts, &gang_stops = n->stops, &gang_reclaims = n->reclaims,
         &gang_reclaims_with_room = n->reclaims_with_room;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<std::string, int> min_of;
    ManifestSet m = PoolWithGangs(seed, &min_of, crowded);
    sim::SimOptions o;
    o.check_invariants = true;
    o.until = 12 * 3600 * 1000;
    auto a = sim::RunSimulation(m, o);
    ASSERT_TRUE(a.ok()) << a.message();
    auto b = sim::RunSimulation(m, o);
    ASSERT_TRUE(b.ok());
    ASSERT_EQ(sim::ReportJson(m, *a, sim::Summarise(m, *a), nullptr).dump(),
              sim::ReportJson(m, *b, sim::Summarise(m, *b), nullptr).dump());
    std::map<std::string, std::string> gang_of;  // workload key -> group key
    for (const auto& p : m.pods)
      if (p.pod_group)
        gang_of[p.meta.namespace_ + "/" + p.meta.name] =
            p.meta.namespace_ + "/" + p.pod_group->name;
    std::map<std::string, std::set<std::string>> running;  // group -> members running
    std::set<std::string> touched;  // groups a member of which started or was stopped this instant
    auto check_instant = [&](Millis t) {
      // Members finishing their own work may leave fewer than minMember running; starts and
      // evictions may not.
      for (const auto& g : touched) {
        const int n = static_cast<int>(running[g].size());
        EXPECT_TRUE(n == 0 || n >= min_of[g])
            << g << " has " << n << " of minMember " << min_of[g] << " members running at " << t;
      }
      touched.clear();
    };
    Millis t = 0;
    for (const auto& ev : a->events()) {
      if (ev.time != t) {
        check_instant(t);
        t = ev.time;
      }
      if (ev.workload == engine::kNoWorkload) continue;
      const std::string& key = a->workloads()[engine::Value(ev.workload)].key;
      auto g = gang_of.find(key);
      if (g == gang_of.end()) continue;
      auto& set = running[g->second];
      if (ev.type == engine::EventType::kQuotaExceeded && ev.reason == "Reclaiming") {
        ++gang_reclaims;
        if (ev.message.find("preempted for room") != std::string::npos) ++gang_reclaims_with_room;
      }
      switch (ev.type) {
        case engine::EventType::kScheduled:
          touched.insert(g->second);
          if (set.empty()) ++gang_starts;
          set.insert(key);
          break;
        case engine::EventType::kPreempted:
        case engine::EventType::kReclaimed:
        case engine::EventType::kTerminated:
        case engine::EventType::kCompleted:
        case engine::EventType::kFailed:
        case engine::EventType::kDeleted:
          if (ev.type == engine::EventType::kPreempted ||
              ev.type == engine::EventType::kReclaimed || ev.type == engine::EventType::kTerminated)
            touched.insert(g->second);
          if (set.erase(key) && (ev.type == engine::EventType::kPreempted ||
                                 ev.type == engine::EventType::kReclaimed))
            ++gang_stops;
          break;
        default:
          break;
      }
    }
    check_instant(t);
  }
  std::printf(
      "gang starts %zu, stops %zu, quota preemptions for groups %zu (with preemption for room "
      "%zu)\n",
      gang_starts, gang_stops, gang_reclaims, gang_reclaims_with_room);
}

TEST(GangPropertyTest, AGangIsNeverPartiallyRunning) {
  GangCounts n;
  CheckGangsOnRandomPools(false, &n);
  // The property is not vacuous: groups start, some are stopped by preemption, and some groups
  // blocked by quota preempt for it (gang_reclaim.cc).
  EXPECT_GT(n.starts, 100u);
  EXPECT_GT(n.stops, 5u);
  EXPECT_GT(n.reclaims, 5u);
}

// The same property where groups blocked by quota often also need room: the combined plan
// (quota victims and preemption for room, all or nothing) never leaves a group partly running.
TEST(GangPropertyTest, AGangReclaimingWithPreemptionForRoomIsNeverPartiallyRunning) {
  GangCounts n;
  CheckGangsOnRandomPools(true, &n);
  EXPECT_GT(n.starts, 100u);
  EXPECT_GT(n.reclaims_with_room, 0u);
}

}  // namespace
}  // namespace arbiter
