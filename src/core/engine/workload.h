// A workload as the engine tracks it (engine-internal; drivers see WorkloadStatus).
#pragma once

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/pod_topology.h"
#include "core/engine/slot_table.h"
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

// A placement's GPU devices as a bit set: a node has at most placement::kMaxGpusPerNode (64)
// devices, and a placement's devices are ascending, so 16 bytes hold what GpuAssignment holds in
// 136. Converts to and from GpuAssignment (the placement code's form).
class WorkloadGpus {
 public:
  WorkloadGpus() = default;
  WorkloadGpus(const placement::GpuAssignment& a)  // NOLINT: implicit, as the field's old type
      : milli_(a.milli_per_device) {
    for (const int16_t d : a.devices) {
      if (d < 0 || d >= placement::kMaxGpusPerNode) std::abort();
      mask_ |= uint64_t{1} << d;
    }
  }
  operator placement::GpuAssignment() const {  // NOLINT: implicit, as the field's old type
    placement::GpuAssignment a;
    a.milli_per_device = milli_;
    for (uint64_t m = mask_; m != 0; m &= m - 1)
      a.devices.push_back(static_cast<int16_t>(std::countr_zero(m)));
    return a;
  }
  bool empty() const { return mask_ == 0; }
  int32_t milli_per_device() const { return milli_; }
  bool operator==(const WorkloadGpus&) const = default;

 private:
  uint64_t mask_ = 0;
  int32_t milli_ = 0;
};

// What few pods carry, held apart so that the others pay 8 bytes for it instead of 176: node
// constraints (tolerations, node affinity), the labels of the flavor it is admitted on, the nodes
// of a backfill reservation its message announces, and the kinds of pending reason already
// reported this spell (pending pods with a reason have it; it is dropped when they run).
struct WorkloadRare {
  std::vector<Toleration> tolerations;
  NodeAffinity node_affinity;
  std::map<std::string, std::string> flavor_labels;
  std::vector<uint32_t> reserved_on;     // Workload::reserved_from's nodes (NodeId values)
  std::vector<std::string> reason_keys;  // kinds of pending reason already reported this spell
  // SubmitPod::node until it is bound there: the node it runs on already (IgnoredDuringExecution,
  // State::FilterNode).
  std::string bound_node;
  bool Empty() const {
    return tolerations.empty() && node_affinity.Empty() && flavor_labels.empty() &&
           reserved_on.empty() && reason_keys.empty() && bound_node.empty();
  }
};
inline const WorkloadRare kNoRare{};

// Owns a WorkloadRare, copied with its owner (a Workload is copied for what-if plans).
class RarePtr : public std::unique_ptr<WorkloadRare> {
 public:
  RarePtr() = default;
  RarePtr(RarePtr&&) noexcept = default;
  RarePtr& operator=(RarePtr&&) noexcept = default;
  RarePtr(const RarePtr& o) : unique_ptr(o ? std::make_unique<WorkloadRare>(*o) : nullptr) {}
  RarePtr& operator=(const RarePtr& o) {
    if (this != &o) reset(o ? new WorkloadRare(*o) : nullptr);
    return *this;
  }
  RarePtr& operator=(std::unique_ptr<WorkloadRare>&& p) noexcept {
    unique_ptr::operator=(std::move(p));
    return *this;
  }
  ~RarePtr() = default;
};

// Fields grouped by size (no padding between them), the hot ones first, the rare ones apart
// (WorkloadRare): 848 bytes, against 1,176 with the fields in their old order, the devices as a
// GpuAssignment and the rare fields inline (docs/serve.md, memory).
struct Workload {
  // Hot fields first: preemption dry runs read these for thousands of workloads per decision.
  WorkloadId id{};
  Millis run_start = 0;
  Millis time_limit = 0;  // spec.activeDeadlineSeconds of a run, 0 none (its end is unknown)
  Slot slot = kNoSlot;    // its index in the engine's table
  int32_t priority = 0;
  Phase phase = Phase::kPending;
  uint32_t namespace_id = 0;
  int32_t qos = -1;                    // interned QoS name (State::qos_names), -1 none
  uint32_t gang = kNoGang;             // its pod group (State::gangs), kNoGang none
  uint32_t node = kNoNode;             // NodeId value while it holds a node
  uint32_t nominated_node = kNoNode;   // NodeId value while nominated
  uint32_t model_mask = ~uint32_t{0};  // allowed GPU models as bits (FitEntry::model_bit)
  bool elastic = false;                // its namespace has an ElasticQuota
  bool has_quota = false;              // its namespace has a ResourceQuota or an ElasticQuota
  bool borrowed = false;               // admitted on quota borrowed from the cohort
  bool quota_charged = false;
  bool immediate = false;           // SubmitPod::immediate: one attempt only
  bool deleted = false;             // DeletePod: gone when it exits, never requeued
  bool requeue_on_preempt = false;  // arbiter.dev/requeue-on-preempt (QoS: exits within grace)
  bool submitted =
      false;  // counted in State::unfinished_by_ns (accepted by SubmitPod, not finished)
  WorkloadGpus gpus;
  placement::PodShape shape;

  std::string key;  // namespace/name
  std::string namespace_;
  std::string name;
  std::map<std::string, std::string> labels;         // PodDisruptionBudget selectors
  std::map<std::string, std::string> node_selector;  // placement filter
  // Node constraints (placement/node_constraints.h: rare().tolerations, rare().node_affinity),
  // its flavor's labels, its reservation's nodes, the reasons reported: null when it has none.
  RarePtr rare_block;
  const WorkloadRare& rare() const { return rare_block ? *rare_block : kNoRare; }
  WorkloadRare& rare_mut() {
    if (!rare_block) rare_block = std::make_unique<WorkloadRare>();
    return *rare_block;
  }
  // Pending on a node it runs on already (SubmitPod::node), "" otherwise.
  const std::string& bound_node() const { return rare().bound_node; }
  void DropRareIfEmpty() {
    if (rare_block && rare_block->Empty()) rare_block.reset();
  }
  // Pod affinity, anti-affinity and topology spread constraints (engine/pod_topology.h), null none.
  std::shared_ptr<const PodTopologyRules> topology;
  // The ResourceFlavor it is admitted on (or being tried, flavor_assigner.cc), "" none: its quota
  // is counted on that flavor and it runs only on nodes with all of the flavor's labels.
  std::string flavor;          // its node labels: rare().flavor_labels
  std::string priority_class;  // resolved name, "" if none
  ResourceList requests;       // effective, after LimitRange defaults
  ResourceList limits;

  // Running on a node with a NoExecute taint it tolerates for tolerationSeconds: evicted then
  // (Kubernetes' taint eviction controller), -1 none.
  Millis taint_evict_at = -1;
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
  // The backfill reservation `message` announces ("; reserved on N from T", backfill.cc): its
  // nodes (rare().reserved_on, NodeId values, in node order) and start; empty / -1 when the
  // message names none. Cleared with every new message (State::SetMessage).
  Millis reserved_from = -1;
  // Set while terminating.
  Millis stop_time = 0;   // SIGTERM
  Millis stop_grace = 0;  // the grace period of that SIGTERM
  // PoolPolicy spec.latency (Slurm's latencies): its processes are gone at `exited_at` but it
  // holds its node until `release_at` (Slurm's COMPLETING: kill, KillWait, clean-up), -1 none;
  // `exit_kind` says what ended it. A requeued job is held out of the queue until
  // `eligible_at` (cred_expire).
  Millis release_at = -1;
  Millis exited_at = 0;
  Millis eligible_at = 0;

  std::string last_node;  // where it runs or last ran
  std::string message;    // last reason, verbatim
  std::string_view message_reason;
  std::string preempted_by;       // preemptor key, or "node/NAME" (set while terminating)
  std::vector<Slot> waiting_for;  // victims still terminating for this preemptor
  std::vector<uint32_t> pdbs;     // indices of the PodDisruptionBudgets that select it

  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  PreemptMode preempt_mode = PreemptMode::kRequeue;
  int preemptions = 0;
  int32_t exit_code = 0;
  int last_event_type = -1;
  uint32_t shape_class = 0;    // interned (shape, priority, nodeSelector, models)
  uint32_t preempt_class = 0;  // interned (shape class, namespace, QoS, preemption policy)
  Slot preemptor = kNoSlot;    // who waits for this victim to exit (set while terminating)
  bool tolerates_unschedulable = false;  // tolerates node.kubernetes.io/unschedulable:NoSchedule
  // Its ElasticQuota share is held for it as unreclaimable (State::HoldUnreclaimable).
  bool unreclaimable_hold = false;
  WorkFacts message_facts = WorkFacts::kNone;
  uint8_t exit_kind = 0;  // ExitKind
  bool held = false;      // requeued, pending, not yet eligible (not in the queue)
};

// The engine's workload table, by slot (chunked: growing never copies it).
using WorkloadTable = SlotTable<Workload>;

// What ended a workload whose release is deferred (Workload::exit_kind).
enum ExitKind : uint8_t { kExitVictim = 0, kExitFinishedRunning = 1, kExitFinishedTerminating = 2 };

}  // namespace arbiter::engine
