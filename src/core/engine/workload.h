// A workload as the engine tracks it (engine-internal; drivers see WorkloadStatus).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/pod_topology.h"
#include "core/engine/types.h"
#include "core/objects.h"
#include "core/placement/node_state.h"

namespace arbiter::engine {

// Index of a workload in the engine's table. Slots are reused once a workload has left; they
// never order anything (WorkloadId does).
using Slot = uint32_t;
inline constexpr Slot kNoSlot = ~Slot{0};
// NodeId value meaning "no node".
inline constexpr uint32_t kNoNode = ~uint32_t{0};
// Gang value meaning "not in a pod group".
inline constexpr uint32_t kNoGang = ~uint32_t{0};

struct Workload {
  // Hot fields first: preemption dry runs read these for thousands of workloads per decision.
  WorkloadId id{};
  Slot slot = kNoSlot;  // its index in the engine's table
  int32_t priority = 0;
  Phase phase = Phase::kPending;
  Millis run_start = 0;
  uint32_t namespace_id = 0;
  int32_t qos = -1;        // interned QoS name (State::qos_names), -1 none
  bool elastic = false;    // its namespace has an ElasticQuota
  bool has_quota = false;  // its namespace has a ResourceQuota or an ElasticQuota
  bool borrowed = false;   // admitted on quota borrowed from the cohort
  bool quota_charged = false;
  bool immediate = false;   // SubmitPod::immediate: one attempt only
  bool deleted = false;     // DeletePod: gone when it exits, never requeued
  uint32_t gang = kNoGang;  // its pod group (State::gangs), kNoGang none
  Millis time_limit = 0;    // spec.activeDeadlineSeconds of a run, 0 none (its end is unknown)
  bool requeue_on_preempt = false;     // arbiter.dev/requeue-on-preempt (QoS: exits within grace)
  uint32_t node = kNoNode;             // NodeId value while it holds a node
  uint32_t nominated_node = kNoNode;   // NodeId value while nominated
  uint32_t model_mask = ~uint32_t{0};  // allowed GPU models as bits (FitEntry::model_bit)
  placement::GpuAssignment gpus;
  placement::PodShape shape;

  std::string key;  // namespace/name
  std::string namespace_;
  std::string name;
  std::map<std::string, std::string> labels;         // PodDisruptionBudget selectors
  std::map<std::string, std::string> node_selector;  // placement filter
  // Node constraints (placement/node_constraints.h): the pod's tolerations and node affinity.
  std::vector<Toleration> tolerations;
  NodeAffinity node_affinity;
  bool tolerates_unschedulable = false;  // tolerates node.kubernetes.io/unschedulable:NoSchedule
  // Pod affinity, anti-affinity and topology spread constraints (engine/pod_topology.h), null none.
  std::shared_ptr<const PodTopologyRules> topology;
  // Its ElasticQuota share is held for it as unreclaimable (State::HoldUnreclaimable).
  bool unreclaimable_hold = false;
  // Running on a node with a NoExecute taint it tolerates for tolerationSeconds: evicted then
  // (Kubernetes' taint eviction controller), -1 none.
  Millis taint_evict_at = -1;
  // The ResourceFlavor it is admitted on (or being tried, flavor_assigner.cc), "" none: its quota
  // is counted on that flavor and it runs only on nodes with all of the flavor's labels.
  std::string flavor;
  std::map<std::string, std::string> flavor_labels;
  std::string priority_class;  // resolved name, "" if none
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  PreemptMode preempt_mode = PreemptMode::kRequeue;
  ResourceList requests;  // effective, after LimitRange defaults
  ResourceList limits;
  Millis grace = 30000;  // terminationGracePeriodSeconds
  // Its checkpoints, as the pod declares them (arbiter.dev/checkpoint-interval, 0 none, and
  // arbiter.dev/shutdown-time): the facts the LeastLostWork victim order weighs (lost_work.h).
  Millis checkpoint_interval = 0;
  Millis shutdown_time = 0;

  Millis submit_time = 0;
  Millis first_start = -1;  // first time it ever started
  Millis finish_time = -1;
  Millis pending_since = 0;
  Millis pending_total = 0;  // accumulated time spent Pending
  // Of it, the time held out of the queue (`held`: the requeue back-off, Slurm's cred_expire),
  // over the finished holds.
  Millis held_total = 0;
  std::string last_node;  // where it runs or last ran
  int preemptions = 0;
  int32_t exit_code = 0;
  std::vector<Slot> waiting_for;  // victims still terminating for this preemptor
  std::string message;            // last reason, verbatim
  std::string_view message_reason;
  // The backfill reservation `message` announces ("; reserved on N from T", backfill.cc): its
  // nodes (NodeId values, in node order) and start; empty / -1 when the message names none.
  // Cleared with every new message (State::SetMessage).
  std::vector<uint32_t> reserved_on;
  Millis reserved_from = -1;
  WorkFacts message_facts = WorkFacts::kNone;
  std::vector<std::string> reason_keys;  // kinds of pending reason already reported this spell
  int last_event_type = -1;
  uint32_t shape_class = 0;    // interned (shape, priority, nodeSelector, models)
  uint32_t preempt_class = 0;  // interned (shape class, namespace, QoS, preemption policy)
  std::vector<uint32_t> pdbs;  // indices of the PodDisruptionBudgets that select it
  // Set while terminating.
  Millis stop_time = 0;      // SIGTERM
  Millis stop_grace = 0;     // the grace period of that SIGTERM
  std::string preempted_by;  // preemptor key, or "node/NAME"
  Slot preemptor = kNoSlot;  // who waits for this victim to exit
  // PoolPolicy spec.latency (Slurm's latencies): its processes are gone at `exited_at` but it
  // holds its node until `release_at` (Slurm's COMPLETING: kill, KillWait, clean-up), -1 none;
  // `exit_kind` says what ended it. A requeued job is held out of the queue until
  // `eligible_at` (cred_expire).
  Millis release_at = -1;
  Millis exited_at = 0;
  uint8_t exit_kind = 0;  // ExitKind
  bool held = false;      // requeued, pending, not yet eligible (not in the queue)
  Millis eligible_at = 0;
};

// What ended a workload whose release is deferred (Workload::exit_kind).
enum ExitKind : uint8_t { kExitVictim = 0, kExitFinishedRunning = 1, kExitFinishedTerminating = 2 };

}  // namespace arbiter::engine
