// Field order of the object model in state files (serial.h): one Io per type, both directions.
// Changing a type's fields here changes the state file format: bump the format version of the
// files that contain it (engine snapshot, simulation state) and say so in docs/snapshot.md.
#pragma once

#include "core/decimal.h"
#include "core/int128.h"
#include "core/objects.h"
#include "core/placement/node_state.h"
#include "core/placement/policy.h"
#include "core/serial.h"

namespace arbiter::serial {

#define ARB_SERIAL_ENUM(E, MAX)                                \
  inline void Io(Writer& w, const E& v) { IoEnum(w, v, MAX); } \
  inline void Io(Reader& r, E& v) { IoEnum(r, v, MAX); }

ARB_SERIAL_ENUM(PreemptionPolicy, PreemptionPolicy::kNever)
ARB_SERIAL_ENUM(PreemptMode, PreemptMode::kCancel)
ARB_SERIAL_ENUM(QuotaTrack, QuotaTrack::kCount)
ARB_SERIAL_ENUM(SelectorOperator, SelectorOperator::kDoesNotExist)
ARB_SERIAL_ENUM(LimitType, LimitType::kPod)
ARB_SERIAL_ENUM(QuotaExceededAction, QuotaExceededAction::kReject)
ARB_SERIAL_ENUM(PlacementPolicyName, PlacementPolicyName::kRandom)
ARB_SERIAL_ENUM(PreemptionType, PreemptionType::kQoS)
ARB_SERIAL_ENUM(DisruptionBudgetMode, DisruptionBudgetMode::kBestEffort)
ARB_SERIAL_ENUM(ReclaimMode, ReclaimMode::kNever)
ARB_SERIAL_ENUM(WithinNamespacePolicy, WithinNamespacePolicy::kLowerOrNewerEqualPriority)
ARB_SERIAL_ENUM(BorrowWithinCohortPolicy, BorrowWithinCohortPolicy::kLowerPriority)
ARB_SERIAL_ENUM(FairShareStrategy, FairShareStrategy::kLessThanInitialShare)
ARB_SERIAL_ENUM(BillingMode, BillingMode::kBlended)
ARB_SERIAL_ENUM(MigRule, MigRule::kMax)
ARB_SERIAL_ENUM(CreditPolicy, CreditPolicy::kLostWork)
ARB_SERIAL_ENUM(IdleSharing, IdleSharing::kEven)
ARB_SERIAL_ENUM(TaintEffect, TaintEffect::kNoExecute)
ARB_SERIAL_ENUM(TolerationOperator, TolerationOperator::kExists)
ARB_SERIAL_ENUM(NodeSelectorOperator, NodeSelectorOperator::kLt)

template <typename A>
void Io(A& a, ResourceList& r) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count(9);
    r = ResourceList{};
    for (uint64_t i = 0; i < n && a.ok(); ++i) {
      std::string name;
      int64_t v = 0;
      Io(a, name);
      Io(a, v);
      if (r.Has(name)) a.Fail("a resource named twice");
      r.Set(name, v);
    }
  } else {
    a.U64(r.entries().size());
    for (const auto& [name, v] : r.entries()) {
      Io(a, name);
      Io(a, v);
    }
  }
}

template <typename A>
void Io(A& a, Decimal& d) {
  int128 u = d.units();
  Io(a, u);
  if constexpr (A::kReading) d = Decimal::FromUnits(u);
}

template <typename A>
void Io(A& a, SourceRef& s) {
  Io(a, s.file);
  Io(a, s.line);
}

template <typename A>
void Io(A& a, ObjectMeta& m) {
  Io(a, m.name);
  Io(a, m.namespace_);
  Io(a, m.labels);
  Io(a, m.annotations);
  Io(a, m.source);
}

template <typename A>
void Io(A& a, Namespace& n) {
  Io(a, n.meta);
}

template <typename A>
void Io(A& a, Taint& t) {
  Io(a, t.key);
  Io(a, t.value);
  Io(a, t.effect);
}

template <typename A>
void Io(A& a, Toleration& t) {
  Io(a, t.key);
  Io(a, t.op);
  Io(a, t.value);
  Io(a, t.effect);
  Io(a, t.toleration_seconds);
}

template <typename A>
void Io(A& a, NodeSelectorRequirement& r) {
  Io(a, r.key);
  Io(a, r.op);
  Io(a, r.values);
}

template <typename A>
void Io(A& a, NodeSelectorTerm& t) {
  Io(a, t.match_expressions);
  Io(a, t.match_fields);
}

template <typename A>
void Io(A& a, PreferredSchedulingTerm& t) {
  Io(a, t.weight);
  Io(a, t.preference);
}

template <typename A>
void Io(A& a, NodeAffinity& n) {
  Io(a, n.required);
  Io(a, n.preferred);
}

template <typename A>
void Io(A& a, LabelSelector& s);

template <typename A>
void Io(A& a, PodAffinityTerm& t) {
  Io(a, t.label_selector);
  Io(a, t.namespaces);
  Io(a, t.namespace_selector);
  Io(a, t.topology_key);
}

template <typename A>
void Io(A& a, WeightedPodAffinityTerm& t) {
  Io(a, t.weight);
  Io(a, t.term);
}

template <typename A>
void Io(A& a, PodAffinity& p) {
  Io(a, p.required);
  Io(a, p.preferred);
}

template <typename A>
void Io(A& a, TopologySpreadConstraint& c) {
  Io(a, c.max_skew);
  Io(a, c.topology_key);
  Io(a, c.do_not_schedule);
  Io(a, c.label_selector);
  Io(a, c.min_domains);
}

template <typename A>
void Io(A& a, Node& n) {
  Io(a, n.meta);
  Io(a, n.capacity);
  Io(a, n.allocatable);
  Io(a, n.unschedulable);
  Io(a, n.sim.add_time);
  Io(a, n.sim.remove_time);
  if (!a.constraintless) Io(a, n.taints);  // engine snapshot / command 6, simulation state 4
}

template <typename A>
void Io(A& a, Container& c) {
  Io(a, c.name);
  Io(a, c.requests);
  Io(a, c.limits);
}

template <typename A>
void Io(A& a, SimSpec& s) {
  Io(a, s.submit_time);
  Io(a, s.duration);
  Io(a, s.usage);
  Io(a, s.checkpoint_interval);
  Io(a, s.shutdown_time);
  Io(a, s.preempt_mode);
  Io(a, s.qos);
  Io(a, s.requeue_on_preempt);
}

template <typename A>
void Io(A& a, PodGroupRef& g) {
  Io(a, g.name);
  Io(a, g.min_member);
  Io(a, g.schedule_timeout);
}

template <typename A>
void Io(A& a, Pod& p) {
  Io(a, p.meta);
  Io(a, p.containers);
  Io(a, p.init_containers);
  Io(a, p.priority_class_name);
  Io(a, p.priority);
  Io(a, p.preemption_policy);
  Io(a, p.termination_grace_period);
  Io(a, p.node_selector);
  Io(a, p.sim);
  Io(a, p.active_deadline);
  Io(a, p.pod_group);
  if (!a.constraintless) {  // engine snapshot / command version 6, simulation state version 4
    Io(a, p.tolerations);
    Io(a, p.node_affinity);
  }
  if (!a.topologyless) {  // engine snapshot / command version 7, simulation state version 5
    Io(a, p.pod_affinity);
    Io(a, p.pod_anti_affinity);
    Io(a, p.topology_spread);
    Io(a, p.overhead);
  }
}

template <typename A>
void Io(A& a, QuotaItem& q) {
  Io(a, q.key);
  Io(a, q.track);
  Io(a, q.resource);
  Io(a, q.hard);
}

template <typename A>
void Io(A& a, ScopeRequirement& s) {
  Io(a, s.scope_name);
  Io(a, s.op);
  Io(a, s.values);
}

template <typename A>
void Io(A& a, ResourceQuota& q) {
  Io(a, q.meta);
  Io(a, q.hard);
  Io(a, q.scope_selector);
}

template <typename A>
void Io(A& a, LimitRangeItem& i) {
  Io(a, i.type);
  Io(a, i.min);
  Io(a, i.max);
  Io(a, i.default_limit);
  Io(a, i.default_request);
  Io(a, i.max_limit_request_ratio_milli);
}

template <typename A>
void Io(A& a, LimitRange& l) {
  Io(a, l.meta);
  Io(a, l.limits);
}

template <typename A>
void Io(A& a, PriorityClass& p) {
  Io(a, p.meta);
  Io(a, p.value);
  Io(a, p.global_default);
  Io(a, p.preemption_policy);
  Io(a, p.description);
}

template <typename A>
void Io(A& a, IntOrPercent& v) {
  Io(a, v.is_percent);
  Io(a, v.value);
}

template <typename A>
void Io(A& a, LabelRequirement& r) {
  Io(a, r.key);
  Io(a, r.op);
  Io(a, r.values);
}

template <typename A>
void Io(A& a, LabelSelector& s) {
  Io(a, s.match_labels);
  Io(a, s.match_expressions);
}

template <typename A>
void Io(A& a, PodDisruptionBudget& p) {
  Io(a, p.meta);
  Io(a, p.min_available);
  Io(a, p.max_unavailable);
  Io(a, p.selector);
}

template <typename A>
void Io(A& a, PoolPolicy::SlurmLatency& l) {
  Io(a, l.grace_end_delay);
  Io(a, l.kill_wait);
  Io(a, l.message_timeout);
  Io(a, l.epilog);
  Io(a, l.cred_expire);
  if (!a.schedless) Io(a, l.sched_interval);  // engine snapshot / command 7, simulation state 5
}

template <typename A>
void Io(A& a, PoolPolicy::RequeueBackoff& b) {
  Io(a, b.base);
  Io(a, b.max);
  if (!a.heldless) Io(a, b.immediate);  // engine snapshot 11, command 10, sim state 8
}

template <typename A>
void Io(A& a, PoolPolicy& p) {
  Io(a, p.meta);
  Io(a, p.cpu_overcommit_milli);
  Io(a, p.memory_overcommit_milli);
  Io(a, p.when_quota_exceeded);
  Io(a, p.placement);
  Io(a, p.percentage_of_nodes_to_score);
  Io(a, p.preemption_type);
  Io(a, p.preempt_mode);
  Io(a, p.disruption_budgets);
  Io(a, p.min_runtime);
  Io(a, p.reclaim);
  Io(a, p.scrape_interval);
  Io(a, p.backfill);
  {  // one byte; before LeastLostWork (engine snapshot 9, command 8) a bool: YoungestFirst
    uint8_t order = static_cast<uint8_t>(p.victim_order);
    Io(a, order);
    if constexpr (A::kReading) {
      if (order > static_cast<uint8_t>(VictimOrder::kLeastLostWork)) {
        a.Fail("an unknown victim order " + std::to_string(order));
        order = 0;
      }
      p.victim_order = static_cast<VictimOrder>(order);
    }
  }
  if (!a.latencyless) Io(a, p.latency);  // engine snapshot / command version 4
  if (!a.depthless) {                    // engine snapshot / command version 5
    Io(a, p.backfill_depth);
    Io(a, p.fair_preemption_strategies);
  }
  if (!a.backoffless) Io(a, p.requeue_backoff);  // engine snapshot 10, command 9, sim state 7
  if (!a.submitless) Io(a, p.max_submitted_per_namespace);  // engine snapshot 15, command 14
}

template <typename A>
void Io(A& a, QuotaFlavor& f) {
  Io(a, f.name);
  Io(a, f.min);
  Io(a, f.max);
  Io(a, f.lending_limit);
  Io(a, f.node_labels);
}

template <typename A>
void Io(A& a, ElasticQuota& q) {
  Io(a, q.meta);
  Io(a, q.cohort);
  Io(a, q.min);
  Io(a, q.max);
  Io(a, q.lending_limit);
  Io(a, q.lending_limit_set);
  Io(a, q.preemption.within_namespace);
  Io(a, q.preemption.reclaim_within_cohort);
  Io(a, q.preemption.borrow_within_cohort);
  Io(a, q.preemption.max_priority_threshold);
  Io(a, q.fair_weight_milli);
  if (!a.flavorless) Io(a, q.flavors);  // engine snapshot / command version 3
}

template <typename A>
void Io(A& a, PriceBook& b) {
  Io(a, b.meta);
  Io(a, b.currency);
  Io(a, b.effective_from);
  Io(a, b.mode);
  Io(a, b.blended_request_weight);
  Io(a, b.prices);
  Io(a, b.gpu_models);
  Io(a, b.mig_rule);
  Io(a, b.preemption_credit);
  Io(a, b.namespace_modes);
  Io(a, b.share_idle);
}

template <typename A>
void Io(A& a, QoS& q) {
  Io(a, q.meta);
  Io(a, q.priority);
  Io(a, q.preempt);
  Io(a, q.preempt_mode);
  Io(a, q.grace_time);
  if (!a.namespaceless) Io(a, q.namespaces);  // engine snapshot 14, command 13
}

template <typename A>
void Io(A& a, placement::PodShape& s) {
  Io(a, s.cpu_milli);
  Io(a, s.mem_bytes);
  Io(a, s.gpu_count);
  Io(a, s.gpu_milli_per_device);
  Io(a, s.ext);
  Io(a, s.gpu_model);
  Io(a, s.allowed_gpu_models);
}

template <typename A>
void Io(A& a, placement::GpuAssignment& g) {
  Io(a, g.milli_per_device);
  if constexpr (A::kReading) {
    const uint64_t n = a.Count(2);
    g.devices.clear();
    if (n > static_cast<uint64_t>(placement::kMaxGpusPerNode)) {
      a.Fail("more GPU devices than a node has");
      return;
    }
    for (uint64_t i = 0; i < n; ++i) {
      int16_t d = 0;
      Io(a, d);
      if (d < 0 || d >= placement::kMaxGpusPerNode) a.Fail("a GPU device index out of range");
      g.devices.push_back(d);
    }
  } else {
    a.U64(g.devices.size());
    for (int16_t d : g.devices) Io(a, d);
  }
}

template <typename A>
void Io(A& a, placement::WorkloadProfile::Entry& e) {
  Io(a, e.shape);
  Io(a, e.weight);
}

template <typename A>
void Io(A& a, placement::WorkloadProfile& p) {
  Io(a, p.shapes);
}

// The Writer takes const objects too.
template <typename T>
void Write(Writer& w, const T& v) {
  Io(w, const_cast<T&>(v));
}

}  // namespace arbiter::serial
