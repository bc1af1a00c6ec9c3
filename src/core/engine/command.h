// The engine's inputs: everything that changes an Engine is one of these commands, given to
// `Status Engine::Apply(const Command&)`. The engine never reads a clock, never calls out, and
// keeps its own copies of every object it is given (no pointers into the caller's data).
//
// Time. Every command carries the instant it happens (`Command::time`, milliseconds on the
// driver's clock: virtual for `arbiter sim`, wall for `arbiter serve`). Times must not go
// backwards; a time before the engine's clock is taken as the engine's clock. Events emitted
// while applying a command are stamped with that time.
//
// Decisions. Commands change state and emit events, but only Tick schedules: admission against
// quotas, placement, preemption and reclaim happen in the scheduling cycle a Tick runs. A driver
// applies what happened at an instant (exits, node changes, submissions, object changes) and then
// a Tick, and also Ticks at Engine::NextWakeup() (a workload protected by minRuntime comes of age).
//
// Results. Apply returns OK or a Status whose code says why the command was refused
// (InvalidArgument, NotFound, AlreadyExists, Conflict, FailedPrecondition); a refused command
// changes nothing. Outcomes of an accepted command (Rejected, QuotaExceeded, Scheduled, ...) are
// events and run records given to the sinks (sink.h) before Apply returns: an API server can
// answer a create request from the events of that one call.
//
// Runtime changes of policy objects take effect the way Kubernetes (and, for QoS, Slurm) applies
// them: nothing already running is evicted by a change; admissions, placements and preemptions
// decided afterwards follow the new objects. Each command below states its rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/duration.h"
#include "core/engine/ids.h"
#include "core/objects.h"

namespace arbiter::engine {

// A namespaced object's name.
struct ObjectRef {
  std::string namespace_;
  std::string name;
};

// ------------------------------------------------------------------ the clock

// Runs one scheduling cycle at Command::time, after the minRuntime wake-ups due by then. The
// first Tick starts the engine: nodes upserted before it form the initial pool (no NodeAdded
// events), as a simulation's pool at time 0 or a daemon's pool restored at start-up.
struct Tick {};

// ------------------------------------------------------------------ pods

// A pod arrives. The engine admits it at once: PriorityClass (by name, else the globalDefault
// class, else pod.priority, default 0) or, under PoolPolicy preemption type QoS, the QoS priority;
// preempt mode (annotation arbiter.dev/preempt-mode, else its QoS, else the PoolPolicy);
// LimitRange defaults and checks; ResourceQuota container constraints and hard limits that can
// never be met. A pod that fails admission becomes a Rejected workload (events Submitted,
// Rejected with the reason); otherwise it waits in the queue (Submitted) for the next Tick.
// Priority, preemptionPolicy and QoS are resolved here once and kept, as Kubernetes stores them in
// the pod spec. The pod's simulation annotations (submit-time, duration, usage, checkpoint
// interval, shutdown time) are the driver's work model and are ignored here.
// The workload gets the next WorkloadId (Engine::next_workload_id()).
// Refused: InvalidArgument (no name), AlreadyExists (a live workload has this namespace/name).
struct SubmitPod {
  Pod pod;
  // One scheduling attempt only (Slurm's --immediate): if the next Tick neither binds the pod nor
  // starts a preemption or reclaim for it, it is Rejected with the reason of that attempt. Trace
  // replay uses it for the FGD paper's protocol (a pod that fits nowhere fails).
  bool immediate = false;
  // A placement constraint for GPU pods (a trace's gpu_spec "A|B"): only nodes whose
  // nvidia.com/gpu.product label is one of these. Empty: any model.
  std::vector<std::string> allowed_gpu_models;
  // The node the pod runs on already (its spec.nodeName: a scheduler restarted under running
  // pods), "" none. The next Tick binds it there if the node has the room and its quota admits
  // it; what only decides placements does not apply to a running pod (Kubernetes'
  // IgnoredDuringExecution): cordoning, NoSchedule and PreferNoSchedule taints, nodeSelector and
  // node affinity, pod affinity, anti-affinity and topology spread, room held for nominated or
  // reserved workloads. A NoExecute taint evicts it once bound, as any running workload (unless
  // tolerated, for its tolerationSeconds from the bind). It never preempts nor reclaims: if it
  // cannot be bound it stays Pending with the reason (WorkloadStatus::reason and message), and
  // once bound it is an ordinary workload (requeued, it may go anywhere).
  std::string node = {};  // (a default: SubmitPod{pod, immediate, models} leaves it out)
};

// A user deletes a pod (kubectl delete, scancel). Pending: it leaves the queue at once (event
// Deleted; final phase Deleted). Running: it gets SIGTERM with its grace period (or
// `grace_period`, like --grace-period) and keeps its node until the driver reports VictimExited
// (or PodFinished); then it is gone (Terminated; final phase Deleted), never requeued. Already
// terminating (a preemption victim, or deleted before): it will not be requeued when it exits,
// and with `shorten` a `grace_period` that ends sooner than its SIGTERM's becomes its grace (as
// kube-apiserver lets a second delete only shorten one; Deleted with work facts kStopSooner). A
// preemptor deleted while it waits for its victims gives up its nomination and quota hold (the
// victims, signalled already, still exit). Refused: NotFound (no such live workload).
struct DeletePod {
  WorkloadId id{};
  std::optional<Millis> grace_period;
  bool shorten = true;  // (commands before version 12: false)
};

// The workload's process ended by itself (the driver's work model or a real runtime).
// Running: exit code 0 is Succeeded (event Completed), anything else Failed (event Failed,
// "exited with code N"); the node and quota are released and its run record is closed.
// Terminating (after SIGTERM): exit code 0 is Succeeded too (it finished within its grace period
// and is not requeued); another code is the same as VictimExited.
// Refused: NotFound, FailedPrecondition (not running or terminating).
struct PodFinished {
  WorkloadId id{};
  int32_t exit_code = 0;
};

// A terminating workload (SIGTERM from preemption, reclaim or DeletePod) has exited. Its node and
// quota are released (event Terminated), then it meets its fate: Requeue (back to Pending,
// Requeued), Cancel (final phase Preempted, Cancelled) or, if it was deleted, gone (Deleted). The
// preemptor waiting for it is told. Refused: NotFound, FailedPrecondition (not terminating).
struct VictimExited {
  WorkloadId id{};
};

// A pod's spec.activeDeadlineSeconds set, or lowered, by an update (all Kubernetes'
// ValidatePodUpdate allows for it): the workload's time limit becomes `active_deadline`. A
// running workload's expected end (run start + limit) moves, so the next Tick's backfill
// reservations plan with it; a pending one runs under it. Quota scopes follow the new value: a
// workload that gets a limit moves from NotTerminating to Terminating quota usage (a quota left
// above hard so blocks new admissions, it never evicts). Refused: NotFound (no live workload),
// InvalidArgument (not positive), FailedPrecondition (raises the limit it has).
struct SetPodDeadline {
  WorkloadId id{};
  Millis active_deadline = 0;
};

// A pod's metadata.labels changed by an update (Kubernetes lets every label change): the
// workload's labels become `labels`. The PodDisruptionBudgets that select it are matched again (a
// budget protects it from now on, or no longer), and so is what pod affinity, anti-affinity and
// topology spread read of it; its classes follow. The next Tick plans with them (a preemption plan
// cached before is dropped). Refused: NotFound (no live workload).
struct SetPodLabels {
  WorkloadId id{};
  std::map<std::string, std::string> labels;
};

// ------------------------------------------------------------------ nodes

// Adds a node, or replaces an existing node's spec. A new node joins the pool (event NodeAdded
// once the engine has started). An existing node keeps its workloads: changed labels, cordoning
// (unschedulable), NoSchedule taints and a lower allocatable never evict (Kubernetes'
// IgnoredDuringExecution); they apply to later placements. A NoExecute taint evicts the
// workloads that do not tolerate it at once, and those that tolerate it for tolerationSeconds
// when that time has passed (Kubernetes' taint eviction controller: event Preempted, reason
// TaintManagerEviction, then their preemption fate). GPU devices may be added; removing devices
// that a workload uses is refused (FailedPrecondition). Capacity is allocatable (capacity when
// absent) times the PoolPolicy overcommit. `order` is the node's rank in the engine's node order:
// nodes are scanned, and placement and preemption ties broken, in (order, name) order. Leave it 0
// for name order (what manifests get); trace replay passes a seeded shuffle (the FGD paper's random
// tie-break). Refused: InvalidArgument (no name; nvidia.com/gpu not a whole number of devices or
// above 64).
struct UpsertNode {
  Node node;
  int64_t order = 0;
};

// A node leaves the pool (event NodeRemoved), like a Kubernetes node deletion or a Slurm node
// failure: its workloads stop at once without SIGTERM or grace (event Terminated, reason
// NodeRemoved), keep only what their work model saved, and meet their preemption fate (Requeue or
// Cancel); a victim shutting down there is cut short; preemptors nominated to it lose the
// nomination. Refused: NotFound.
struct RemoveNode {
  std::string name;
};

// ------------------------------------------------------------------ policy objects
//
// Upsert creates or replaces (matched by name, and namespace for namespaced kinds); Delete removes
// (NotFound if absent). An object without a name is refused (InvalidArgument).

// Namespaces are recorded; pods may name a namespace that has no Namespace object (manifests
// often omit them; an API layer may require one). Deleting a namespace deletes, as Kubernetes'
// namespace controller does, every workload in it (DeletePod with each pod's grace period) and
// its ResourceQuotas, LimitRanges, PodDisruptionBudgets and ElasticQuota.
struct UpsertNamespace {
  Namespace ns;
};
struct DeleteNamespace {
  std::string name;
};

// Quota usage is recounted from the namespace's workloads that hold resources (as the quota
// controller does), so a new quota sees what already runs. A lowered (or new) quota never evicts:
// usage may stay above `hard` until workloads end, and meanwhile new admissions wait
// (whenExceeded: Queue) or are Rejected (Reject). Deleting a quota lifts its limits.
struct UpsertResourceQuota {
  ResourceQuota quota;
};
struct DeleteResourceQuota {
  ObjectRef ref;
};

// LimitRanger runs at submission only: a change applies to pods submitted afterwards; admitted
// pods, pending ones included, keep their defaults.
struct UpsertLimitRange {
  LimitRange limit_range;
};
struct DeleteLimitRange {
  ObjectRef ref;
};

// Pods keep the priority and preemptionPolicy they resolved at submission. Changing an existing
// class's `value` is refused (InvalidArgument: "may not be changed in an update", as
// kube-apiserver); a second globalDefault class is refused (Conflict). Deleting a class rejects
// new pods that name it; workloads that resolved it keep their priority.
struct UpsertPriorityClass {
  PriorityClass priority_class;
};
struct DeletePriorityClass {
  std::string name;
};

// Budgets are evaluated at every preemption and reclaim decision from the pods present then, so a
// change applies to the next decision.
struct UpsertPodDisruptionBudget {
  PodDisruptionBudget pdb;
};
struct DeletePodDisruptionBudget {
  ObjectRef ref;
};

// One per namespace (another name in the same namespace: AlreadyExists). Usage is recounted from
// the namespace's running workloads; admissions and reclaims from the next Tick use the new
// min/max/lendingLimit/cohort. A lower min or max never evicts (as Kueue); workloads admitted on
// borrowed quota stay marked borrowed until the namespace is back within its min. Deleting it
// leaves the namespace unlimited and unprotected, and clears its workloads' borrowed marks.
struct UpsertElasticQuota {
  ElasticQuota quota;
};
struct DeleteElasticQuota {
  ObjectRef ref;
};

// A workload resolves its QoS at submission (its priority under QoS preemption, its preempt
// mode); the QoS's preempt list and GraceTime are read by name at each decision, as Slurm reads
// its QoS table when it preempts, so changes apply to the next decision. A deleted QoS preempts
// nothing and its GraceTime no longer applies; new pods that name it are Rejected, as are new pods
// of a namespace its spec.namespaces leaves out (QoSNotAllowed; pods submitted before a change of
// the list keep their QoS, as Slurm's pending jobs do).
struct UpsertQoS {
  QoS qos;
};
struct DeleteQoS {
  std::string name;
};

// At most one (any name replaces it); Delete restores the defaults. Overcommit ratios change node
// capacities at once, without eviction. A new placement policy is used from the next Tick (Random
// restarts its stream from the engine seed); EngineOptions::placement, when set, still wins.
// Preemption type applies to the priority resolution of later submissions and to every later
// decision; whenExceeded, minRuntime, reclaim, disruptionBudgets and percentageOfNodesToScore
// from the next Tick; maxSubmittedPerNamespace from the next SubmitPod (pods over it already stay).
// Refused: InvalidArgument (overcommit.cpu or memory below 1.0, maxSubmittedPerNamespace below 0).
struct UpsertPoolPolicy {
  PoolPolicy policy;
};
struct DeletePoolPolicy {};

// Kept for the driver's metering and billing (Engine::price_books()); the engine does not bill.
struct UpsertPriceBook {
  PriceBook price_book;
};
struct DeletePriceBook {
  std::string name;
};

// ------------------------------------------------------------------ the envelope

using CommandOp =
    std::variant<Tick, SubmitPod, DeletePod, PodFinished, VictimExited, UpsertNode, RemoveNode,
                 UpsertNamespace, DeleteNamespace, UpsertResourceQuota, DeleteResourceQuota,
                 UpsertLimitRange, DeleteLimitRange, UpsertPriorityClass, DeletePriorityClass,
                 UpsertPodDisruptionBudget, DeletePodDisruptionBudget, UpsertElasticQuota,
                 DeleteElasticQuota, UpsertQoS, DeleteQoS, UpsertPoolPolicy, DeletePoolPolicy,
                 UpsertPriceBook, DeletePriceBook, SetPodDeadline, SetPodLabels>;

struct Command {
  Millis time = 0;
  CommandOp op;
};

// `Command{t, SubmitPod{...}}` reads well enough; this names the intent at call sites.
template <typename Op>
Command At(Millis time, Op op) {
  return Command{time, CommandOp(std::move(op))};
}

// "SubmitPod", "Tick", ... (for logs and journals).
const char* CommandName(const Command& c);

// A command as bytes and back (a daemon's journal; format: docs/snapshot.md's encoding, sealed as
// kind "command", version kCommandVersion). Decoding refuses foreign, corrupt and other-version
// bytes with a message.
// 3: ElasticQuota spec.flavors; 4: PoolPolicy spec.latency; 5: PoolPolicy
// scheduling.backfillDepth and fairSharing.preemptionStrategies; 6: node taints, pod tolerations
// and node affinity; 7: pod affinity, anti-affinity and topology spread constraints, PoolPolicy
// spec.latency.schedInterval; 8: PoolPolicy preemption.victimOrder LeastLostWork (the same byte,
// a new value); 9: PoolPolicy preemption.requeuingStrategy; 10: its immediateRequeues; 11:
// SubmitPod::node; 12: DeletePod::shorten; 13: QoS spec.namespaces; 14: PoolPolicy
// quota.maxSubmittedPerNamespace (2 to 13 still read).
inline constexpr uint32_t kCommandVersion = 14;
std::string EncodeCommand(const Command& c);
Result<Command> DecodeCommand(std::string_view bytes);

}  // namespace arbiter::engine
