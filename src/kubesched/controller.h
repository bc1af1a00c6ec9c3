// Arbiter as the scheduler of a real Kubernetes cluster: the cluster's objects (as the informers
// deliver them) in, the engine's decisions out as API actions. Pure: no I/O, no threads, no clock
// (every call carries `now`, wall-clock Unix milliseconds); the app (`arbiter scheduler`) runs the
// informers and carries the actions out (src/kubesched/scheduler.h).
//
// Objects to engine commands, as `arbiter serve` and `arbiter sim` do: each object is read by the
// manifest loader (the same reader and checks as `arbiter validate`), policy objects become the
// Upsert/Delete commands of driver/object_commands.h. Then:
//  - Pods with spec.schedulerName == the scheduler's name are Arbiter's: a pending one is
//    SubmitPod; one that succeeds or fails is PodFinished; one deleted is DeletePod, and once gone
//    VictimExited. Other pods (kube-scheduler's, static, DaemonSet pods) and Arbiter's pods bound
//    by someone else are "foreign": their requests are taken off their node's allocatable.
//  - Nodes: UpsertNode with allocatable minus the foreign pods' requests, and the label
//    kubernetes.io/hostname (as a kubelet sets it) when missing.
//  - At the first step (every informer has listed), the pool is built in one go (policy objects,
//    nodes, a Tick), then Arbiter's pods already bound (a restart) are submitted pinned to their
//    node and placed by a Tick of their own, then the pending ones: the decisions equal
//    `arbiter sim` of the same objects.
//  - batch/v1 Jobs created suspended whose template names the scheduler are admitted as a unit
//    (controller_jobs.cc): placeholder workloads in one pod group hold their quota and nodes;
//    the Job is unsuspended when all run, its pods bound to their nodes, suspended when stopped.
// Actions: Bind (POST pods/binding) for a workload the engine runs and the cluster has not bound;
// Evict (policy/v1 Eviction, so kube-apiserver enforces PodDisruptionBudgets) for a workload the
// engine terminates (a preemption or reclaim victim); Status (PodScheduled False with the
// engine's reason code and pending message, status.nominatedNodeName: driver/pod_scheduling.h,
// as `arbiter serve` writes them) for a pending one whose reason, message or nomination changed;
// Job (PATCH spec.suspend and the arbiter.dev/admission annotation) for a Job admitted as a
// unit. Each accepted Bind, Evict and Status is also an event (Scheduled; Preempted or Reclaimed
// with the engine's message; FailedScheduling or QuotaExceeded, the engine's kind of the pending
// event, with the written message), as driver::PodEventOf says it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/engine.h"
#include "core/objects.h"
#include "kubesched/event_recorder.h"

namespace arbiter::kubesched {

using Json = nlohmann::json;

struct Action {
  // kJob: a batch/v1 Job admitted as a unit (controller_jobs.cc): PATCH spec.suspend and the
  // annotation kAdmissionAnnotation (message).
  // kQuotaStatus: an ElasticQuota's status (used, borrowed, lent) as JSON in `message`
  // (controller_quota_status.cc), PATCHed through the status subresource.
  // kCondition: the status.conditions of one of Arbiter's objects (`kind`), its conditions Valid
  // and Warning included, as JSON in `message` (controller_validity.cc), PATCHed through the
  // status subresource.
  enum class Type { kBind, kEvict, kStatus, kJob, kQuotaStatus, kCondition };
  Type type = Type::kBind;
  std::string namespace_, name, uid;
  std::string node;      // kBind: the node; kStatus: the nominated node ("" none)
  std::string message;   // kStatus: the PodScheduled message; kJob: the admission message
  bool suspend = false;  // kJob: spec.suspend to write
  std::string kind{};    // kCondition: the object's kind (ElasticQuota, PoolPolicy, ...)
  std::string reason{};  // kStatus: the PodScheduled reason (driver::PodSchedulingOf)
};

// The kinds whose objects get the status condition Valid (controller_validity.cc).
const std::vector<std::string>& ValidatedKinds();

// The annotation Arbiter writes on the Jobs it admits as a unit: why the Job waits, or where its
// pods were admitted. Its presence also marks the Job as Arbiter's after a restart.
inline constexpr const char* kAdmissionAnnotation = "arbiter.dev/admission";

// What the API server answered to an action.
struct ActionResult {
  int http_status = 0;     // 0: not reached (connection failure)
  std::string message;     // the Status body's message
  std::string bound_node;  // kBind 409: the pod's spec.nodeName read back ("" unbound or gone)
};

struct ControllerOptions {
  std::string scheduler_name = "arbiter";
  // Objects from --policy FILE (PoolPolicy, QoS, PriceBook, ...), applied before the cluster's.
  ManifestSet policy;
  // Only Nodes carrying all these labels are Arbiter's pool (empty: every node). Pods bound to
  // other nodes are not Arbiter's business (its own pods bound there count nowhere).
  std::map<std::string, std::string> node_selector;
  Millis evict_retry = 5000;         // after a 429 or an error
  Millis bind_retry = 1000;          // after an error
  Millis quota_status_every = 1000;  // ElasticQuota status computed at most this often
};

class Controller {
 public:
  explicit Controller(ControllerOptions options);
  ~Controller();

  // The informers' deliveries. `kind` as in core/api_kinds.h.
  void Synced(const std::string& kind, std::vector<Json> items);
  void Upsert(const std::string& kind, Json object);
  void Remove(const std::string& kind, const Json& object);

  // Applies what changed, runs a scheduling cycle, and returns the API calls to make now.
  // `placed`: the binding of each pod the engine places in this cycle, handed over as the engine
  // reports the placement, while the cycle goes on (so that the caller's calls overlap the rest of
  // it); not in the list returned. Either way each call made is reported through Done before the
  // next Step.
  std::vector<Action> Step(Millis now, const std::function<void(Action)>& placed = nullptr);
  // The outcome of an action returned by Step.
  void Done(const Action& a, const ActionResult& r, Millis now);
  // When Step is due without a delivery (an engine wake-up, a retry), if ever.
  std::optional<Millis> NextDue() const;

  const engine::Engine& engine() const { return *engine_; }
  // Events to record (Scheduled, FailedScheduling, QuotaExceeded, Preempted, Reclaimed), taken by
  // the caller, who writes them through an EventRecorder (series, bounds).
  std::vector<EventRequest> TakeEvents();
  // Lines for the log (what was done and why), taken by the caller.
  std::vector<std::string> TakeLog();
  // The PriceBooks in force for billing: --policy's, then the cluster's PriceBook objects (those
  // the loader refuses are left out: the log said why when they were applied).
  std::vector<PriceBook> PriceBooks() const;
  int64_t binds() const { return binds_; }
  int64_t evictions() const { return evictions_; }

 private:
  struct PodTrack {
    std::optional<uint64_t> workload;
    std::string bound;  // spec.nodeName as last seen, or as bound by us
    std::string written_reason, written_message, written_nominated;
    bool status_written = false;
    bool evicted = false;      // the eviction was accepted
    bool delete_told = false;  // DeletePod given to the engine
    bool invalid = false;      // the loader refused it, or the engine rejected it (said once)
    bool pinning = false;      // at start: bound already, to be placed where it runs
    std::string invalid_message;
    // Rejected by the engine at admission: the PodScheduled reason (driver::PodSchedulingOf of
    // its final status: the engine's reason code) and its Rejected event. Refused by the loader:
    // "" and none (no engine reason: Unschedulable, a FailedScheduling event).
    std::string invalid_reason;
    std::optional<engine::Event> rejection;
    // The object as last applied: spec.nodeName, and whether it finished (Succeeded, Failed).
    std::string seen_node;
    bool seen_terminal = false;
    // What is counted of it in foreign_ (CountForeign): its requests off this node ("" none).
    std::string foreign_node;
    ResourceList foreign_requests;
    Millis retry_at = 0;           // no bind/evict before this
    std::string refusal;           // the API server's last refusal of an eviction of this pod
    std::optional<uint64_t> slot;  // a Job's pod: the slot (placeholder workload) it occupies
    std::string group_wait;        // the PodGroup (its name) it waits for: it does not exist
    std::string group;  // the PodGroup (its name) it was submitted in: its group_members_ entry
  };
  // A batch/v1 Job admitted as a unit (controller_jobs.cc): one placeholder workload ("slot") per
  // pod, in a pod group of them all, holds the Job's quota and nodes in the engine.
  struct JobTrack {
    std::string uid;
    int32_t count = -1;           // pods admitted as a unit: min(parallelism, completions)
    std::vector<uint64_t> slots;  // the placeholder workloads, in order
    std::map<uint64_t, std::pair<std::string, std::string>> occupant;  // slot -> its pod
    std::set<std::pair<std::string, std::string>> waiting;  // its pods waiting for a slot
    std::string dead;  // why a slot left the engine (rejected, cancelled): the Job stays suspended
    bool wrote = false;  // written_* hold what the API server accepted last
    bool written_suspend = true;
    std::string written_message;
    Millis retry_at = 0;
    bool finished = false;  // Complete or Failed: its slots are released
  };
  using Key = std::pair<std::string, std::string>;  // namespace, name
  class Sink;

  void Start(Millis now);
  // The engine placed `e.workload` on `e.node` (its Scheduled event, during Step): the binding to
  // placed_ at once, when it is one Reconcile would return.
  void Placed(const engine::Event& e);
  void ApplyPolicy(const std::string& kind, const Key& key, Millis now);
  void ApplyNode(const std::string& name, Millis now);
  void ApplyPod(const Key& key, Millis now);
  void SubmitPod(const Key& key, const Json& pod, PodTrack& t, Millis now, bool pinned);
  std::string PinRefusal(uint64_t workload) const;
  // The loader's Pod for a pod object (the checks of `arbiter validate`), through pod_loads_.
  Result<Pod> LoadPod(const Json& pod);
  bool ResolveGroup(const Key& key, Pod& p, PodTrack& t);
  void Propagate();  // changes of flavors and groups to the objects that name them
  // PodTrack::group_wait of the pod `key` set to `group` ("": none), group_waiters_ kept with it.
  void SetGroupWait(const Key& key, PodTrack& t, std::string group);
  // PodTrack::group of the pod `key` set to `group` ("": none), group_members_ kept with it (the
  // group's spec recorded as the pod's submission saw it).
  void SetGroupMember(const Key& key, PodTrack& t, std::string group);
  // The cluster's ResourceFlavors as the loader reads them (those it refuses left out): loaded
  // once per step, however many ElasticQuotas the step applies.
  const ManifestSet& LoadedFlavors();
  void DropSubmitLimit(ManifestSet& set);  // PoolPolicy quota.maxSubmittedPerNamespace: serve's
  void Forget(PodTrack& t, Millis now);    // the engine lets go of the pod's workload
  // The engine's decisions to actions, in steps: the pods it rejected since the last cycle are
  // marked (their status said once); the evictions the API server refused, by preemptor; each
  // workload's action (bind, evict, status); the pods the engine does not hold (refused by the
  // loader or the engine, waiting for their PodGroup).
  void Reconcile(Millis now, std::vector<Action>* out);
  void TakeRejected();
  std::map<std::string, std::string> RefusedEvictions() const;
  void ReconcileWorkload(const engine::WorkloadStatus& st,
                         const std::map<std::string, std::string>& refused, Millis now,
                         std::vector<Action>* out);
  void ReconcileUnheld(Millis now, std::vector<Action>* out);
  // Done, by the type of the action.
  void BindDone(const Action& a, const ActionResult& r, const Key& key, PodTrack& t, Millis now);
  void EvictDone(const Action& a, const ActionResult& r, PodTrack& t, Millis now);
  void StatusDone(const Action& a, const ActionResult& r, PodTrack& t, Millis now);
  // foreign_ kept with the pod `key` as it is now: counted off its node while it is bound, not
  // finished and not the engine's (its workload, pinned at start, a Job's slot holding the node).
  // `reread`: the object changed, its requests are read again. The nodes whose foreign usage
  // moved are added to foreign_moved_. O(1) for a pod whose state did not change.
  void CountForeign(const Key& key, PodTrack& t, bool reread);
  bool Ours(const Json& pod) const;
  bool InPool(const Json& node) const;  // options_.node_selector
  void Log(std::string line) { log_.push_back(std::move(line)); }
  Status Apply(engine::Command c);
  // batch/v1 Jobs (controller_jobs.cc).
  bool JobIsOurs(const Json& job) const;
  const std::pair<std::string, std::string>* JobOfPod(const Json& pod) const;
  void ApplyJob(const Key& key, Millis now);
  void SubmitSlots(const Key& key, JobTrack& j, const Json& job,
                   std::vector<std::pair<Key, std::string>> pins, Millis now);
  // The Job's slots end (it completed, failed, or is gone), but a slot whose pod still lives
  // (running, terminating) holds its node and quota until that pod ends or goes (leaving_slots_):
  // a Job's pod stays Arbiter's until it is gone, never counted as another scheduler's.
  void ReleaseSlots(JobTrack& j, int exit_code, Millis now);
  void EndSlot(uint64_t slot, int exit_code, Millis now);  // the engine lets go of a slot
  // A Job's pod no longer occupies its slot; `rewait`: back to waiting if still unbound. A
  // leaving slot (its Job released) ends with it.
  void ReleaseSlot(const std::pair<std::string, std::string>& pod, PodTrack& t, bool rewait,
                   Millis now);
  void ApplyJobPod(const std::pair<std::string, std::string>& job,
                   const std::pair<std::string, std::string>& key, const Json& pod, PodTrack& t,
                   Millis now);
  void ReconcileJob(const Key& key, JobTrack& j, Millis now, std::vector<Action>* out);
  void BindJobPods(const Key& key, JobTrack& j, Millis now, std::vector<Action>* out);
  void JobDone(const Action& a, const ActionResult& r, Millis now);
  EventRequest PreemptedEvent(const Action& a, const PodTrack& t) const;
  // The Event of an engine event about the pod of `a` (driver::PodEventOf), its preemptor (a pod
  // Arbiter holds) as the related object.
  EventRequest PodEventRequest(const Action& a, const engine::Event& e) const;
  // ElasticQuota status (controller_quota_status.cc).
  void ReconcileQuotaStatus(Millis now, std::vector<Action>* out);
  // Namespaces whose usage this engine does not hold in full: a live pod, or an unfinished Job,
  // of another scheduler is there (its usage is not charged here: another Arbiter's engine, or
  // kube-scheduler, has it). Their ElasticQuotas' status is not written.
  std::set<std::string> ForeignNamespaces() const;
  void QuotaStatusDone(const Action& a, const ActionResult& r);
  // The conditions of Arbiter's objects (controller_validity.cc): Valid, what `arbiter validate`
  // finds wrong with each (errors), and Warning, what it warns of that only the pool's nodes show
  // (a cohort's min above the pool's allocatable, on every ElasticQuota of the cohort); by kind
  // and key; written when one of them, or the pool's allocatable, changed.
  struct Findings {
    std::map<std::pair<std::string, Key>, std::string> problems, warnings;
  };
  Findings Problems() const;
  // pool_allocatable_: the node `name` counts `allocatable` now (none: not in the pool, gone or
  // cordoned); a change of the sum makes the conditions due.
  void CountPoolNode(const std::string& name, ResourceList allocatable);
  void ReconcileValidity(Millis now, std::vector<Action>* out);
  void ConditionDone(const Action& a, const ActionResult& r);

  ControllerOptions options_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<Sink> sink_;
  bool started_ = false;
  std::map<std::string, std::map<Key, Json>> objects_;  // the cluster's view, by kind
  std::map<std::string, std::set<Key>> dirty_;          // changed since the last step
  std::map<Key, PodTrack> pods_;
  const std::function<void(Action)>* placed_ = nullptr;  // Step's `placed`, during Step
  std::set<uint64_t> placed_now_;  // workloads whose binding went to placed_ in this Step
  // The pods of one workload (a ReplicaSet's, a Job's) differ in their names only: the loader
  // reads each shape once, keyed by what it reads of the pod (its name left out), at most
  // kPodLoads shapes (then forgotten).
  std::unordered_map<std::string, Pod> pod_loads_;
  static constexpr size_t kPodLoads = 4096;
  // PodGroup (namespace, name) -> the pods waiting for it (PodTrack::group_wait): Propagate's
  // index, so that a PodGroup's arrival does not scan every pod.
  std::map<Key, std::set<Key>> group_waiters_;
  // PodGroup (namespace, name) -> its spec as its members were last submitted with, and the pods
  // submitted as its members (PodTrack::group; one the engine has let go of since stays until
  // the pod goes or Regroup drops it). When the spec changes (or the PodGroup goes), the members
  // still pending and unbound are submitted again in that step (regroup_: ApplyPod), with the
  // PodGroup as it is now, as coscheduling reads it at every attempt; running ones are left be.
  struct GroupMembers {
    std::string spec;
    std::set<Key> pods;
  };
  std::map<Key, GroupMembers> group_members_;
  std::set<Key> regroup_;  // pending members to submit again in this step (Regroup)
  // The PodGroup's spec (JSON), "" when it does not exist: its status alone changes nothing.
  std::string GroupSpec(const Key& group) const;
  void Regroup(const Key& group);       // Propagate's, for one changed PodGroup
  std::optional<ManifestSet> flavors_;  // LoadedFlavors() in this step
  std::map<uint64_t, Key> pod_of_;
  std::map<std::string, std::string> node_sig_;  // what was last upserted, per node
  // Requests of the pods bound to each node that the engine does not hold (CountForeign), and
  // the nodes where they moved since the last step.
  std::map<std::string, ResourceList> foreign_;
  std::set<std::string> foreign_moved_;
  // Workloads that are running where the cluster has them bound: nothing for Reconcile to do
  // until the engine says something about them (any event takes them out of the set), so a
  // cycle looks only at the rest (not every workload's status, at every step).
  std::set<uint64_t> settled_;
  // Victim workload -> the engine's Preempted / Reclaimed event (its preemptor in `by`).
  std::map<uint64_t, engine::Event> stop_of_;
  // Pending workload -> the kind of its last pending event (FailedScheduling, QuotaExceeded).
  std::map<uint64_t, engine::EventType> pending_kind_;
  // Workloads rejected at admission (until the next Reconcile): the engine's Rejected event and
  // the final status it gave (EventSink::OnFinished).
  struct Rejection {
    engine::Event event;
    std::optional<engine::WorkloadStatus> status;
  };
  std::map<uint64_t, Rejection> rejected_;
  std::map<Key, JobTrack> jobs_;  // Arbiter's Jobs
  // Slots of Jobs released (ReleaseSlots) whose pod still lives -> the exit code they end with
  // once it ends or goes (ReleaseSlot). The pod's PodTrack::slot keeps pointing at its slot.
  std::map<uint64_t, int> leaving_slots_;
  std::map<Key, std::string> quota_written_;  // ElasticQuota status last written (JSON)
  std::set<Key> quota_skipped_;               // not written (ForeignNamespaces), said once
  Millis quota_due_ = 0;
  bool validity_due_ = false;  // one of ValidatedKinds() changed: conditions checked again
  // The allocatable of the pool's schedulable nodes, each and summed (as `arbiter validate` adds
  // them up for a cohort's min): kept by ApplyNode; a change of the sum checks again.
  std::map<std::string, ResourceList> pool_nodes_;
  ResourceList pool_allocatable_;
  std::set<std::string> warnings_said_;  // with --node-selector: the warnings logged, once each
  // The condition Valid last accepted, without its transition time (JSON), by kind and key.
  std::map<std::pair<std::string, Key>, std::string> validity_written_;
  std::vector<std::string> log_;
  std::vector<EventRequest> events_;
  int64_t binds_ = 0, evictions_ = 0;
};

// Kubernetes' effective requests of a pod object (max of the containers' sum and each init
// container, plus spec.overhead); quantities that do not parse are left out.
ResourceList PodRequests(const Json& pod);

// An object as the manifest loader reads it (the checks of `arbiter validate`).
Result<ManifestSet> LoadObject(const std::string& kind, const Json& object);

}  // namespace arbiter::kubesched
