// Random pools and workload streams for property tests (engine invariants, snapshots): nodes,
// priority classes, QoS, quotas, budgets and pods drawn from a seed.
#pragma once

#include <cstdint>
#include <string>

#include "core/objects.h"

namespace arbiter::testing_pools {

struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(int percent) { return Uniform(1, 100) <= percent; }
};

inline ManifestSet RandomPool(uint64_t seed) {
  Rng r{seed};
  ManifestSet m;
  PoolPolicy pp;
  pp.cpu_overcommit_milli = r.Chance(50) ? 1000 : 1200;
  pp.preemption_type = r.Chance(25) ? PreemptionType::kQoS : PreemptionType::kPriority;
  pp.disruption_budgets =
      r.Chance(50) ? DisruptionBudgetMode::kStrict : DisruptionBudgetMode::kBestEffort;
  pp.preempt_mode = r.Chance(70) ? PreemptMode::kRequeue : PreemptMode::kCancel;
  pp.min_runtime = r.Chance(30) ? 600000 : 0;
  pp.reclaim = r.Chance(50) ? ReclaimMode::kAny : ReclaimMode::kLowerPriority;
  pp.placement =
      r.Chance(50) ? PlacementPolicyName::kBestFit : PlacementPolicyName::kLeastAllocated;
  pp.when_quota_exceeded =
      r.Chance(85) ? QuotaExceededAction::kQueue : QuotaExceededAction::kReject;
  m.pool_policy = pp;
  int nodes = static_cast<int>(r.Uniform(1, 6));
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.meta.name = "node-" + std::to_string(i);
    n.meta.labels["zone"] = r.Chance(50) ? "a" : "b";
    n.capacity = {{"cpu", r.Uniform(8, 64) * 1000}, {"memory", r.Uniform(32, 256) << 30}};
    if (r.Chance(80)) n.capacity.Set("nvidia.com/gpu", r.Uniform(1, 8) * 1000);
    if (r.Chance(15)) n.capacity.Set("nvidia.com/mig-1g.10gb", 7);
    n.allocatable = n.capacity;
    m.nodes.push_back(n);
  }
  const int32_t tiers[] = {1000, 5000, 10000};
  for (int32_t v : tiers) {
    PriorityClass pc;
    pc.meta.name = "tier-" + std::to_string(v);
    pc.value = v;
    pc.preemption_policy =
        r.Chance(10) ? PreemptionPolicy::kNever : PreemptionPolicy::kPreemptLowerPriority;
    m.priority_classes.push_back(pc);
  }
  const char* qos_names[] = {"low", "normal", "high"};
  for (int i = 0; i < 3; ++i) {
    QoS q;
    q.meta.name = qos_names[i];
    q.priority = (i + 1) * 100;
    for (int j = 0; j < i; ++j) q.preempt.push_back(qos_names[j]);
    if (r.Chance(30)) q.grace_time = r.Uniform(0, 120) * 1000;
    m.qos.push_back(q);
  }
  const char* nss[] = {"team-a", "team-b", "team-c"};
  for (const char* ns : nss) {
    if (r.Chance(60)) {
      ElasticQuota e;
      e.meta.name = ns;
      e.meta.namespace_ = ns;
      e.cohort = r.Chance(85) ? "pool" : "";
      e.min = {{"nvidia.com/gpu", r.Uniform(0, 8) * 1000}, {"cpu", r.Uniform(4, 64) * 1000}};
      if (r.Chance(50)) e.max = ResourceList{{"nvidia.com/gpu", r.Uniform(4, 16) * 1000}};
      if (r.Chance(30)) {
        e.lending_limit.Set("nvidia.com/gpu", r.Uniform(0, 4) * 1000);
        e.lending_limit_set.push_back("nvidia.com/gpu");
      }
      m.elastic_quotas.push_back(e);
    }
    if (r.Chance(40)) {
      ResourceQuota q;
      q.meta.name = "rq";
      q.meta.namespace_ = ns;
      q.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu",
                        r.Uniform(1, 12) * 1000});
      q.hard.push_back({"pods", QuotaTrack::kCount, "pods", r.Uniform(2, 20)});
      if (r.Chance(30))
        q.scope_selector.push_back({"PriorityClass", SelectorOperator::kIn, {"tier-5000"}});
      m.resource_quotas.push_back(q);
    }
    if (r.Chance(40)) {
      PodDisruptionBudget pdb;
      pdb.meta.name = "pdb";
      pdb.meta.namespace_ = ns;
      pdb.selector.match_labels["app"] = "svc";
      IntOrPercent v;
      v.is_percent = r.Chance(50);
      v.value = static_cast<int32_t>(v.is_percent ? r.Uniform(0, 100) : r.Uniform(0, 3));
      if (r.Chance(50))
        pdb.min_available = v;
      else
        pdb.max_unavailable = v;
      m.pdbs.push_back(pdb);
    }
  }
  int pods = static_cast<int>(r.Uniform(5, 60));
  for (int i = 0; i < pods; ++i) {
    Pod p;
    p.meta.name = "p" + std::to_string(i);
    p.meta.namespace_ = nss[r.Uniform(0, 2)];
    if (r.Chance(30)) p.meta.labels["app"] = "svc";
    Container c;
    c.name = "c";
    c.requests.Set("cpu", r.Uniform(1, 16) * 500);
    c.requests.Set("memory", r.Uniform(1, 64) << 30);
    int g = static_cast<int>(r.Uniform(0, 5));
    if (g == 1)
      c.requests.Set("nvidia.com/gpu", r.Uniform(1, 9) * 100);  // shared
    else if (g >= 2)
      c.requests.Set("nvidia.com/gpu", r.Uniform(1, 8) * 1000);
    if (r.Chance(5)) c.requests.Set("nvidia.com/mig-1g.10gb", r.Uniform(1, 3));
    p.containers.push_back(c);
    if (r.Chance(80)) p.priority_class_name = "tier-" + std::to_string(tiers[r.Uniform(0, 2)]);
    if (r.Chance(60)) p.sim.qos = qos_names[r.Uniform(0, 2)];
    if (r.Chance(20)) p.node_selector["zone"] = r.Chance(50) ? "a" : "b";
    p.sim.submit_time = r.Uniform(0, 120) * 60000;
    if (r.Chance(90)) p.sim.duration = r.Uniform(1, 240) * 60000;
    if (r.Chance(40)) p.sim.checkpoint_interval = r.Uniform(1, 30) * 60000;
    p.sim.shutdown_time = r.Uniform(0, 90) * 1000;
    if (r.Chance(50)) p.termination_grace_period = r.Uniform(0, 120) * 1000;
    if (r.Chance(20))
      p.sim.preempt_mode = r.Chance(50) ? PreemptMode::kCancel : PreemptMode::kRequeue;
    m.pods.push_back(p);
  }
  return m;
}

}  // namespace arbiter::testing_pools
