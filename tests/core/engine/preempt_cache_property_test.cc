// Property test for the preemption plan cache (core/engine/preempt_plan.h): on random
// oversubscribed pools where the cache is on (no PodDisruptionBudgets, no minRuntime), with
// several priority tiers, node selectors, QoS preemption, backfill time limits and pod groups,
// every answer the cache gives is checked against a fresh dry run of the node (the engine does
// that whenever check_invariants is on, and aborts on a difference), and the run decides the
// same with the check on and off.
#include <gtest/gtest.h>

#include "core/engine/random_pool.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

using testing_pools::Rng;

ManifestSet CachePool(uint64_t seed) {
  Rng r{seed};
  ManifestSet m;
  PoolPolicy pp;
  pp.preemption_type = r.Chance(25) ? PreemptionType::kQoS : PreemptionType::kPriority;
  pp.victim_order = r.Chance(50) ? VictimOrder::kYoungestFirst : VictimOrder::kDefault;
  pp.preempt_mode = r.Chance(70) ? PreemptMode::kRequeue : PreemptMode::kCancel;
  pp.placement =
      r.Chance(50) ? PlacementPolicyName::kBestFit : PlacementPolicyName::kLeastAllocated;
  pp.backfill = r.Chance(70);
  m.pool_policy = pp;
  const int nodes = static_cast<int>(r.Uniform(3, 40));
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.meta.name = "node-" + std::to_string(i);
    n.meta.labels["zone"] = r.Chance(50) ? "a" : "b";
    n.capacity = {
        {"cpu", 64000}, {"memory", int64_t{512} << 30}, {"nvidia.com/gpu", r.Uniform(2, 8) * 1000}};
    n.allocatable = n.capacity;
    m.nodes.push_back(n);
  }
  const int32_t tiers[] = {1000, 5000, 10000};
  for (int32_t v : tiers) {
    PriorityClass pc;
    pc.meta.name = "tier-" + std::to_string(v);
    pc.value = v;
    m.priority_classes.push_back(pc);
  }
  const char* qos_names[] = {"low", "normal", "high"};
  for (int i = 0; i < 3; ++i) {
    QoS q;
    q.meta.name = qos_names[i];
    q.priority = (i + 1) * 100;
    for (int j = 0; j < i; ++j) q.preempt.push_back(qos_names[j]);
    m.qos.push_back(q);
  }
  const char* nss[] = {"team-a", "team-b", "team-c"};
  // Few shapes, so that preemptors share plan classes and the cache is hit.
  const int64_t gpus[] = {0, 500, 1000, 1000, 2000, 4000};
  const int pods = nodes * static_cast<int>(r.Uniform(6, 14));
  for (int i = 0; i < pods; ++i) {
    Pod p;
    p.meta.name = "p" + std::to_string(i);
    p.meta.namespace_ = nss[r.Uniform(0, 2)];
    Container c;
    c.name = "c";
    c.requests.Set("cpu", r.Uniform(1, 4) * 2000);
    c.requests.Set("memory", int64_t{8} << 30);
    if (int64_t g = gpus[r.Uniform(0, 5)]; g > 0) c.requests.Set("nvidia.com/gpu", g);
    p.containers.push_back(c);
    p.priority_class_name = "tier-" + std::to_string(tiers[r.Uniform(0, 2)]);
    p.sim.qos = qos_names[r.Uniform(0, 2)];
    if (r.Chance(15)) p.node_selector["zone"] = r.Chance(50) ? "a" : "b";
    p.sim.submit_time = r.Uniform(0, 240) * 60000;
    p.sim.duration = r.Uniform(5, 180) * 60000;
    if (r.Chance(40)) p.active_deadline = *p.sim.duration + r.Uniform(0, 60) * 60000;
    m.pods.push_back(p);
  }
  const int groups = static_cast<int>(r.Uniform(0, 3));
  for (int g = 0; g < groups; ++g) {
    const Pod base = m.pods[static_cast<size_t>(r.Uniform(0, pods - 1))];
    PodGroup pg;
    pg.meta.name = "gang-" + std::to_string(g);
    pg.meta.namespace_ = base.meta.namespace_;
    const int members = static_cast<int>(r.Uniform(2, 4));
    pg.min_member = members;
    m.pod_groups.push_back(pg);
    for (int k = 0; k < members; ++k) {
      Pod p = base;
      p.meta.name = pg.meta.name + "-" + std::to_string(k);
      p.meta.labels[kPodGroupLabel] = pg.meta.name;
      m.pods.push_back(p);
    }
  }
  ResolvePodGroups(&m);
  return m;
}

TEST(PreemptCachePropertyTest, CachedPlansEqualFreshDryRuns) {
  size_t preemptions = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = CachePool(seed);
    sim::SimOptions o;
    o.until = 12 * 3600 * 1000;
    o.check_invariants = true;  // the cache is checked against a fresh dry run at every answer
    auto checked = sim::RunSimulation(m, o);
    ASSERT_TRUE(checked.ok()) << checked.message();
    o.check_invariants = false;
    auto plain = sim::RunSimulation(m, o);
    ASSERT_TRUE(plain.ok()) << plain.message();
    ASSERT_EQ(sim::ReportJson(m, *checked, sim::Summarise(m, *checked), nullptr).dump(),
              sim::ReportJson(m, *plain, sim::Summarise(m, *plain), nullptr).dump());
    for (const auto& ev : checked->events())
      preemptions += ev.type == engine::EventType::kPreempting;
  }
  std::printf("preemption cache property: 60 pools, %zu preemptions, every cached answer checked\n",
              preemptions);
  EXPECT_GT(preemptions, 500u);
}

}  // namespace
}  // namespace arbiter
