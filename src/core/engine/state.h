// The engine's state and its steps (engine-internal: drivers use engine.h).
//
// One class, its steps defined in one file per kube-scheduler extension point:
//   queue.cc       pending classes, queue order, the scheduling cycle (merge loop)
//   filter.cc      node selection, the dense fit index, nominated protection, no-fit reasons,
//                  scoring (placement)
//   backfill.cc    reservations for blocked workloads (Slurm sched/backfill)
//   gang.cc        pod groups (coscheduling): all-or-nothing quota, placement and preemption
//   preemption.cc  default Kubernetes preemption and Slurm QoS preemption, victim order, SIGTERM
//   reclaim.cc     ElasticQuota reclaim of lent quota (with gang_reclaim.cc: one planner,
//                  reclaim_planner.h, for a pod and for a pod group)
//   pdb.cc         PodDisruptionBudget membership and accounting
//   lifecycle.cc   submission and admission, quota admission, bind, release, exit, delete
//   pool.cc        nodes and policy objects (the Upsert/Delete commands)
//   invariants.cc  CheckInvariants
//   snapshot.cc    Snapshot / Restore
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/command.h"
#include "core/engine/engine_options.h"
#include "core/engine/preempt_plan.h"
#include "core/engine/quota_book.h"
#include "core/engine/sink.h"
#include "core/engine/workload.h"
#include "core/placement/fit_view.h"
#include "core/placement/policy.h"

namespace arbiter::engine {

struct NodeInfo {  // by NodeId
  std::string name;
  bool present = false;
  Node spec;                                  // the engine's copy
  std::map<std::string, std::string> labels;  // spec labels + kubernetes.io/hostname
  int64_t order = 0;                          // UpsertNode::order
  uint32_t pos = 0;                           // index into State::nodes while present
  // A capacity change (UpsertNode, overcommit) left the node above its capacity: nothing is
  // evicted, and the capacity invariant waits until its workloads have shrunk below it again.
  bool over_capacity = false;
};

// What is on a present node, by position (hot in scans; moved with the node when nodes are
// reordered).
struct NodeLive {
  std::vector<Slot> workloads;  // running + terminating, in bind order
  std::vector<Slot> nominated;  // preemptors nominated here, in nomination order
  uint64_t epoch = 0;           // bumped when anything on the node changes
  // The lowest priority of `workloads` (INT32_MAX none): a preemptor of no higher priority finds
  // no victim here (priority preemption) without reading them. Kept with `workloads`, with how
  // many of them have it: a release walks `workloads` only when the last of those goes.
  int32_t min_priority = INT32_MAX;
  uint32_t at_min_priority = 0;
};

// The fit numbers of one node, copied densely in node order so that a placement scans a few
// cache lines per node instead of the NodeState (the same rule: placement::FitsNumbers).
struct FitEntry {  // 32 bytes: two per cache line
  int64_t cpu_free = 0;
  int64_t mem_free = 0;
  int32_t gpu_free = 0;   // free milli-GPU over all devices (BestFit scores from it)
  int16_t full_free = 0;  // at most kMaxGpusPerNode
  int16_t max_free = 0;   // at most kMilliPerGpu
  uint32_t model_bit =
      0;  // the node's GPU model as a bit (State::model_ids; the last bit: the rest)
  bool schedulable = true;
  bool has_ext = false;  // declares extended resources (MIG, pods, ...): the full rule applies
  bool tainted = false;  // has a NoSchedule or NoExecute taint: TaintToleration filters
};

struct QueueOrder {
  const WorkloadTable* w;
  bool operator()(Slot a, Slot b) const;
};

// A pod group (scheduler-plugins coscheduling): its members are admitted and placed together
// until minMember of them run; interned by namespace/name for good.
struct Gang {
  std::string key;  // namespace/name
  int32_t min_member = 1;
  Millis timeout = 0;         // PodGroup spec.scheduleTimeoutSeconds, 0 none
  Millis window_start = -1;   // when the current wait for the whole group began, -1 not waiting
  std::vector<Slot> members;  // live members
  uint64_t tried_cycle = 0;   // the cycle that last attempted it (State::cycle), and its outcome
  bool tried_ok = false;
  uint64_t deferred_cycle = 0;  // the cycle whose first pass deferred it as a borrower
};

// A placement chosen but not made (TryPlace's dry run).
struct PlaceChoice {
  uint32_t pos = 0;
  placement::GpuAssignment gpus;
};

// A preemption planned but not executed (TryPreempt's dry run for a gang): victims in
// `excluded` (by slot) are gone already in the plan being built.
struct PreemptDryRun {
  const std::vector<char>* excluded = nullptr;
  // By position: nodes the plan being built has changed already (null: treat every node so).
  const std::vector<char>* touched = nullptr;
  uint32_t pos = 0;
  std::vector<Slot> victims;
};

// Room promised to a blocked workload (or pod group) at its earliest start: this cycle's
// (backfill.cc; recomputed every cycle, so not part of snapshots).
struct Reservation {
  Slot holder = kNoSlot;
  Millis start = 0;
  std::vector<uint32_t> pos;  // nodes, by position
  std::vector<Slot> members;  // whose shape it needs there, parallel to pos (a slot, not a
                              // pointer: the table moves a chunk after a snapshot's capture)
  // When each member is expected to leave there (start + its time limit; -1 unknown).
  std::vector<Millis> ends;
};

class State {
 public:
  explicit State(EngineOptions o);

  // ---------------------------------------------------------------- the command handlers
  Status Submit(SubmitPod&& c);
  // Why Submit would reject `pod` now for a QoS its namespace may not name, or for quota alone
  // (a ResourceQuota it can never fit), in
  // Kubernetes' words alone (QuotaBook::NeverAdmitted::words: Submit's rejection adds
  // kNeverAdmitted to a request above `hard`); none otherwise, or when Submit would reject it
  // first for another reason.
  std::optional<std::string> NeverAdmissible(const Pod& pod) const;
  Status Delete(const DeletePod& c);
  bool ShortenGrace(Workload& w, Millis grace);
  Status Finished(const PodFinished& c);
  Status VictimGone(const VictimExited& c);
  Status SetPodDeadlineCmd(const SetPodDeadline& c);  // pod_deadline.cc
  Status SetPodLabelsCmd(const SetPodLabels& c);      // pod_deadline.cc
  Status UpsertNodeCmd(UpsertNode&& c);
  Status RemoveNodeCmd(const RemoveNode& c);
  Status Tick();
  Status UpsertNamespaceCmd(UpsertNamespace&& c);
  Status DeleteNamespaceCmd(const DeleteNamespace& c);
  Status UpsertResourceQuotaCmd(UpsertResourceQuota&& c);
  Status DeleteResourceQuotaCmd(const DeleteResourceQuota& c);
  Status UpsertLimitRangeCmd(UpsertLimitRange&& c);
  Status DeleteLimitRangeCmd(const DeleteLimitRange& c);
  Status UpsertPriorityClassCmd(UpsertPriorityClass&& c);
  Status DeletePriorityClassCmd(const DeletePriorityClass& c);
  Status UpsertPdbCmd(UpsertPodDisruptionBudget&& c);
  Status DeletePdbCmd(const DeletePodDisruptionBudget& c);
  Status UpsertElasticQuotaCmd(UpsertElasticQuota&& c);
  Status DeleteElasticQuotaCmd(const DeleteElasticQuota& c);
  Status UpsertQoSCmd(UpsertQoS&& c);
  Status DeleteQoSCmd(const DeleteQoS& c);
  Status UpsertPoolPolicyCmd(std::optional<PoolPolicy> p);
  Status UpsertPriceBookCmd(UpsertPriceBook&& c);
  Status DeletePriceBookCmd(const DeletePriceBook& c);
  // Hands the final status of finished workloads to the sink and frees their slots (end of Apply).
  void Flush();

  // ---------------------------------------------------------------- queries
  WorkloadStatus StatusOf(const Workload& w) const;
  Slot SlotOf(WorkloadId id) const;
  RunRecord MakeRun(const Workload& w) const;  // run record ending now
  Status CheckInvariants() const;

  // ---------------------------------------------------------------- events (lifecycle.cc)
  void Emit(EventType type, const Workload& w, std::string node, std::string_view reason,
            std::string message, std::string by = "", WorkFacts facts = WorkFacts::kNone,
            Millis grace = 0);
  void EmitNode(EventType type, const std::string& node, std::string message);
  void Reject(Workload& w, std::string_view reason, const std::string& message);
  void SetPending(Workload& w, EventType type, std::string_view reason, const std::string& message,
                  const std::string& dedupe = "");
  void Restated(const Workload& w);  // EventSink::OnRestated
  void SetMessage(Workload& w, std::string message, std::string_view reason,
                  WorkFacts facts = WorkFacts::kNone);
  void MarkFinished(Workload& w);

  // ---------------------------------------------------------------- lifecycle.cc
  bool TryAdmitQuota(Workload& w);
  void Bind(Workload& w, uint32_t pos, const placement::GpuAssignment& gpus);
  void Release(Workload& w);
  void Exit(Workload& w, bool emit_terminated = true);
  // PoolPolicy spec.latency (Slurm's latencies, lifecycle.cc): how long a workload that exits
  // now keeps its node; defer its release; release the due ones and requeue the eligible ones.
  Millis GraceEndDelay(const Workload& w) const;
  Millis CleanupDelay(const Workload& w, bool killed) const;
  std::string CleanupText(const Workload& w, bool killed) const;
  void DeferRelease(Workload& w, Millis delay, ExitKind kind, std::string message);
  void ReleaseDue();
  // PoolPolicy preemption.requeuingStrategy: holds a victim being requeued for its back-off.
  std::string BackOff(Workload& w);
  void FinishNow(Workload& w, int32_t exit_code, bool was_terminating);
  void DropNomination(Workload& w);
  void Nominate(Workload& w, uint32_t pos);
  void Signal(Workload& v, Millis grace);   // SIGTERM: the workload becomes Terminating
  Millis GraceOf(const Workload& w) const;  // pod grace, or its QoS GraceTime under QoS preemption

  // ---------------------------------------------------------------- queue.cc
  void PendingInsert(Slot s);
  void PendingErase(Slot s);
  bool IsPending(Slot s) const;
  void RunCycle();
  bool Attempt(Workload& w, std::unordered_map<uint32_t, std::string>& no_fit,
               std::unordered_map<uint32_t, std::pair<std::string, std::string>>& no_preempt);
  std::string ShapeKey(const Workload& w) const;
  // Interns w's shape class and preemption class (ShapeKey, namespace, QoS, preemption policy,
  // gang): at admission, and when its time limit changes (pod_deadline.cc).
  void AssignClasses(Workload& w);

  // ---------------------------------------------------------------- filter.cc
  // kube-scheduler's NodeUnschedulable, TaintToleration and NodeAffinity filters (with Kueue's
  // flavor labels): the node's spec admits `w`, resources aside.
  bool NodeSelectable(uint32_t pos, const Workload& w) const;
  // Which of those filters rejects `w` on the node (the first, in kube-scheduler's order).
  // The pod topology filters (pod_topology.cc) come after the resources' in kube-scheduler's
  // order: `topology` false leaves them out.
  enum class NodeFilter : uint8_t {
    kPass,
    kUnschedulable,
    kTaint,
    kAffinity,
    kSpreadLabel,           // PodTopologySpread: the node lacks a constraint's topologyKey
    kSpread,                // PodTopologySpread: maxSkew exceeded
    kPodAffinity,           // InterPodAffinity: required podAffinity
    kPodAntiAffinity,       // InterPodAffinity: the workload's required podAntiAffinity
    kExistingAntiAffinity,  // InterPodAffinity: a placed pod's required podAntiAffinity
  };
  NodeFilter FilterNode(uint32_t pos, const Workload& w, const Taint** taint = nullptr,
                        bool topology = true) const;
  // `w` has a constraint NodeSelectable must check on every node (selector, affinity, flavor)
  // or the pool has tainted nodes.
  bool NeedsNodeFilter(const Workload& w) const {
    return !w.node_selector.empty() || !w.rare().flavor_labels.empty() ||
           w.rare().node_affinity.required || tainted_nodes > 0 || NeedsTopology(w) ||
           !w.bound_node().empty();
  }
  // Taint and affinity preferences make a difference among the feasible nodes (kube-scheduler's
  // TaintToleration and NodeAffinity scores).
  bool HasNodePreferences(const Workload& w) const {
    return !w.rare().node_affinity.preferred.empty() || prefer_tainted_nodes > 0 ||
           HasTopologyPreferences(w);
  }
  // Among `feasible`, the node with the best combined score (docs/scheduling.md "Node
  // constraints"): the placement policy's and the constraint scores, normalised and weighted.
  std::optional<placement::Choice> ChooseWithPreferences(const std::vector<size_t>& feasible,
                                                         const Workload& w);
  const Node& SpecAt(uint32_t pos) const { return node_info[node_at[pos]].spec; }
  const std::map<std::string, std::string>& LabelsAt(uint32_t pos) const {
    return node_info[node_at[pos]].labels;
  }

  // ---------------------------------------------------------------- pod_topology.cc
  // kube-scheduler's InterPodAffinity and PodTopologySpread. `w` has rules of its own, or a placed
  // pod's required anti-affinity may reject it (the symmetric rule).
  bool NeedsTopology(const Workload& w) const {
    return w.topology != nullptr || !anti_affinity_pods.empty() || PlacingHasTopology();
  }
  bool PlacingHasTopology() const { return placing_with_topology > 0; }
  // Some score of the two plugins can differ among nodes: `w`'s preferred terms or ScheduleAnyway
  // constraints, or a placed pod's terms that score toward `w` (symmetry, scoring_pods).
  bool HasTopologyPreferences(const Workload& w) const;
  // The attempt's counts for `w` (cached while the pool does not change).
  const TopologyState& TopologyOf(const Workload& w) const;
  // The two plugins' filters on the node, with the workloads in `removed` (on that node: a
  // preemption's victims) gone.
  NodeFilter TopologyFilter(uint32_t pos, const Workload& w,
                            const std::vector<Slot>* removed = nullptr) const;
  // A preemption cannot help with the filter's failure (kube-scheduler's
  // UnschedulableAndUnresolvable: a missing topology label, required pod affinity).
  static bool Unresolvable(NodeFilter f) {
    return f != NodeFilter::kPass && f != NodeFilter::kSpread &&
           f != NodeFilter::kPodAntiAffinity && f != NodeFilter::kExistingAntiAffinity;
  }
  // The two plugins' scores (before weights) over `feasible`, normalised.
  void TopologyScores(const std::vector<size_t>& feasible, const Workload& w,
                      std::vector<int64_t>& affinity, std::vector<int64_t>& spread) const;
  // Bound pods with a required anti-affinity term (the symmetric rule), and bound pods with a
  // required affinity or a preferred (anti-)affinity term (InterPodAffinity's symmetric score:
  // their terms score toward the incoming pods they select); kept by Bind and Release.
  std::vector<Slot> anti_affinity_pods, scoring_pods;
  void TrackPlacedTopology(const Workload& w, bool bound);
  // A workload with pod topology rules was submitted once: labels and namespace are part of every
  // shape class from then on (who is selected depends on them).
  bool topology_seen = false;
  mutable TopologyState topology_cache;
  // A pod was placed in this cycle while topology rules exist: it may satisfy a waiting pod's
  // required affinity or raise a spread domain's count. kube-scheduler requeues the pods it may
  // help at once (its queueing hints on pod add); Tick runs the cycle again, in full, while a
  // cycle placed something and a pending class head has such rules. Not part of snapshots.
  bool topology_bound = false;
  bool RequeueForTopology();  // true: run the cycle again
  // taint_eviction.cc (Kubernetes' taint eviction controller): after a node's taints changed,
  // its workloads that do not tolerate a NoExecute taint are evicted now, those that tolerate
  // it for tolerationSeconds get an eviction time; EvictTaintedDue evicts those due.
  void NoExecuteTaintsChanged(uint32_t pos);
  void ScheduleTaintEviction(Workload& w, uint32_t pos);  // on bind and taint changes
  void EvictTaintedDue();
  std::vector<Slot> taint_timed;  // workloads with a taint_evict_at (recomputed on Restore)
  void EvictForTaint(Workload& w, const std::string& node, const std::string& why);
  // `fit_known`: the caller has just checked the node's fit rule.
  bool FitsRespectingNominated(uint32_t pos, const Workload& w, bool fit_known = false) const;
  std::string NoFitMessage(const Workload& w) const;
  std::string HeldFor(uint32_t pos, const Workload& w) const;  // " Node n is held for ns/x ..."
  size_t NumFeasibleNodesToFind() const;
  bool TryPlace(Workload& w, PlaceChoice* dry = nullptr);
  // filter.cc: the nodes where `w` fits, from position `start` in rotating order, until `want`
  // are found (kube-scheduler's feasible-node search); `take(pos)` for each. `skip_blocks`: skip
  // fit-index blocks where nothing fits. Returns the positions scanned.
  template <class Take>
  size_t ScanFit(const Workload& w, size_t start, size_t want, bool skip_blocks, Take&& take) const;
  template <class NumbersFit, class Take>
  size_t ScanFitWith(const Workload& w, size_t start, size_t want, bool skip_blocks,
                     NumbersFit numbers_fit, Take&& take) const;
  // The node TryPlace chooses among the feasible ones (nullopt: none is).
  std::optional<placement::Choice> ChooseFeasible(const Workload& w, size_t start, size_t want,
                                                  size_t* scanned);
  void RefreshFit(uint32_t pos);
  void RebuildFitIndex();
  uint32_t ModelBit(const std::string& model);
  uint32_t ModelMask(const placement::PodShape& shape);
  void NodeChanged(uint32_t pos);  // after an allocation or release on the node
  // NodeLive::min_priority (and at_min_priority) from its workloads, and kept as one is bound
  // (CountMinPriority) or released.
  void RecountMinPriority(uint32_t pos);
  void CountMinPriority(uint32_t pos, int32_t priority);
  void Touch(uint32_t node_id) {
    ++node_live[node_info[node_id].pos].epoch;
    ++pool_version;
  }
  NodeLive& LiveOf(uint32_t node_id) { return node_live[node_info[node_id].pos]; }

  // ---------------------------------------------------------------- preemption.cc
  bool MayPreempt(const Workload& preemptor, const Workload& victim,
                  bool ignore_min_runtime = false) const;
  bool TryPreempt(Workload& w, std::string* why, PreemptDryRun* dry = nullptr);
  // `why` replaces the default message (before "; SIGTERM, grace ...").
  void StopVictim(Workload& victim, const Workload& preemptor, EventType kind,
                  const std::string* why = nullptr);
  size_t NumPreemptionCandidates() const;

  // ---------------------------------------------------------------- quota_preemption.cc
  // Kueue's classical quota preemption over ElasticQuotas (namespace = ClusterQueue, min =
  // nominal quota): who may be evicted so that `w` fits its namespace's quota, and in which order.
  enum class QuotaVariant : uint8_t {
    kWithinNamespace,          // withinNamespace: a workload of the preemptor's own namespace
    kReclaim,                  // the preemptor stays within its min: reclaim from a borrower
    kReclaimWithoutBorrowing,  // allowed only if the preemptor then does not borrow
    kReclaimWhileBorrowing,    // borrowWithinCohort: allowed even though the preemptor borrows
  };
  struct QuotaPolicy {  // ElasticQuota spec.preemption with PoolPolicy defaults
    WithinNamespacePolicy within = WithinNamespacePolicy::kNever;
    ReclaimMode reclaim = ReclaimMode::kAny;
    bool borrow = false;
    std::optional<int32_t> threshold;
  };
  struct QuotaCandidates {
    std::vector<Slot> slots;  // Kueue's order: other namespaces first, priority, newest admitted
    std::vector<QuotaVariant> variant;
    std::vector<std::string> needed;    // resources needing preemption
    std::vector<bool> attempts;         // allowBorrowing of each attempt, in order
    std::vector<const Workload*> base;  // terminating workloads of the namespace and its cohort
    std::optional<Millis>
        young_until;          // a candidate skipped as younger than minRuntime comes of age
    std::vector<Slot> young;  // the candidates skipped as younger than minRuntime
    bool within_min = false;  // the preemptor stays within its min (a reclaim)
    // Its request alone exceeds its min in a resource needing preemption, and its namespace may
    // not preempt while borrowing: no candidates (Kueue's NoFit).
    bool beyond_min = false;
  };
  QuotaPolicy QuotaPolicyOf(const ElasticQuota& q) const;
  // `as_of` (default now): minRuntime counted to that instant (quota_wait.cc asks ahead).
  QuotaCandidates CollectQuotaCandidates(const Workload& w, Millis as_of = -1) const;
  // Leaves out the members of `w`'s own pod group (a group's pending members, or a pod's running
  // group, are one workload to Kueue: never candidates for it).
  void DropOwnGroup(QuotaCandidates* c, const Workload& w) const;
  // Kueue's candidateIsValid: a victim of another namespace only while its namespace is still
  // above its min in a needed resource (given `released`), never a reclaim-without-borrowing one
  // in an attempt that lets the preemptor borrow.
  bool QuotaCandidateValid(const QuotaCandidates& c, size_t k,
                           const std::vector<const Workload*>& released,
                           bool allow_borrowing) const;
  // Kueue's workloadFits: `w` fits its quota once `released` are gone (and, unless
  // `allow_borrowing`, stays within its min).
  bool QuotaFitsOnceGone(const Workload& w, const std::vector<const Workload*>& released,
                         bool allow_borrowing) const;
  // When quota preemption for `w` (the group's sum for a gang) must wait for candidates younger
  // than minRuntime that would free its quota (EarliestQuotaWait): "reclaiming lent quota: 2
  // borrowing workload(s) become reclaimable at 30m (minRuntime 30m)" ("by 30m" when some of the
  // two come of age earlier); else "".
  std::string YoungCandidatesMessage(const Workload& w, const QuotaCandidates& c) const;
  // quota_wait.cc. The victims that free `w`'s quota, room aside: the reclaim planner's rule
  // (victim_sets.h: Kueue's attempts, greedy in candidate order, then minimal; the fair-sharing
  // strategies in such a cohort).
  std::optional<std::vector<Slot>> QuotaOnlyVictims(const Workload& w,
                                                    const QuotaCandidates& c) const;
  // The earliest instant T at which the candidates that have run minRuntime by T free `w`'s
  // quota (QuotaOnlyVictims as of T), and which of `c.young` that needs; nothing if never.
  struct QuotaWait {
    Millis at = 0;
    std::vector<Slot> needed;  // by id
  };
  std::optional<QuotaWait> EarliestQuotaWait(const Workload& w, const QuotaCandidates& c) const;
  // SIGTERM to a victim of the preemptor's own namespace (withinNamespace): a Preempted event.
  void StopWithinNamespace(Workload& victim, const Workload& preemptor);

  // ---------------------------------------------------------------- fair_preemption.cc
  // Kueue's fair-sharing preemption (cohorts whose ElasticQuotas set spec.fairSharing): victims
  // from the namespaces with the highest weighted share first, each allowed by the PoolPolicy's
  // fairSharing.preemptionStrategies; `node` as in TryReclaim (room there too); strict PDBs as
  // there. Null: the candidates cannot make `w` fit.
  struct PdbState;  // pdb.cc
  enum class FairRule : uint8_t {
    kWithinNamespace,  // withinNamespace, the preemptor's namespace had the highest share
    kWithinNominal,    // the preemptor stays within its min: a plain reclaim
    kFinalShare,       // LessThanOrEqualToFinalShare
    kInitialShare,     // LessThanInitialShare
  };
  struct FairPick {
    Slot slot;
    FairRule rule;
    int64_t preemptor_share;  // the preemptor's namespace's, once `w` is admitted
    int64_t before, after;    // the victim's namespace's, before and after this eviction
  };
  // `blocking` (optional) collects the budgets that held a candidate back.
  std::optional<std::vector<FairPick>> FairVictims(
      const Workload& w, const QuotaCandidates& c, std::optional<uint32_t> node,
      const std::vector<PdbState>* strict_pdbs, std::vector<std::string>* blocking = nullptr) const;
  std::string FairWhy(const Workload& w, const FairPick& p) const;

  // ---------------------------------------------------------------- cohort_order.cc
  // Kueue's order within an instant: workloads that fit within their namespace's min first, then
  // the borrowers — by lowest weighted share when their cohort uses fair sharing, else in queue
  // order. Tick runs the cycle with borrowers deferred, then admits the deferred ones.
  void CycleNominalFirst();
  void AdmitDeferredBorrowers();
  bool defer_borrowers = false;  // during the first pass: TryAdmitQuota defers borrowers
  std::vector<Slot> deferred;    // borrowers deferred in this cycle
  // Kueue's reserveCapacityForUnreclaimablePreempt: a workload that fits its namespace's unused
  // min but could not reclaim it (reclaimWithinCohort is not Any, no candidate) holds its share,
  // so that no borrower takes it meanwhile. Kueue takes the hold again in every cycle; a cycle
  // here retries the queue only after something was released, so the hold lasts until such a
  // full cycle, which drops every hold before it retries their workloads.
  std::vector<Slot> cycle_holds;  // workloads with Workload::unreclaimable_hold (maybe stale)
  void HoldUnreclaimable(Workload& w, const QuotaBook::ElasticResult& eq);
  void DropUnreclaimableHolds();

  // ---------------------------------------------------------------- flavor_assigner.cc
  // Kueue's flavor assignment for a namespace whose ElasticQuota has spec.flavors: the flavors
  // the pod may use (its nodeSelector and allowed GPU models against their node labels), tried
  // in order; the first whose quota admits it (within min or by borrowing) and whose nodes fit
  // it wins; else quota preemption / priority preemption per flavor in the same order.
  std::vector<const QuotaFlavor*> CompatibleFlavors(const Workload& w) const;
  void SetFlavor(Workload& w, const QuotaFlavor* f);  // null: none
  // A workload of a flavored namespace without a flavor gets its first compatible one (gangs).
  void DefaultFlavor(Workload& w);
  bool AttemptFlavors(Workload& w);

  // ---------------------------------------------------------------- gang.cc
  void JoinGang(Workload& w, const PodGroupRef& group);
  void LeaveGang(Workload& w);
  // Its pod group is not running yet (fewer than minMember members run): it starts as a gang.
  bool NeedsGang(const Workload& w) const;
  bool AttemptGang(Workload& w);
  // AttemptGang's steps (`pend`: the pending members in queue order; `group`: "pod group ns/g").
  // The dry run: every member's quota (ElasticQuota, ResourceQuota) and room, nothing kept.
  struct GangDryRun {
    bool placed = false;              // every member has quota and room: `choice`
    std::vector<PlaceChoice> choice;  // per member
    std::string failure;              // why not ("pod group ns/g: ...")
    bool quota_failure = false;       // a quota blocks a member (else room is missing)
    bool rq_failure = false;          // a ResourceQuota blocks (quota preemption cannot help)
    bool borrowing = false;           // within quota, but some member borrows from the cohort
  };
  GangDryRun DryRunGang(const std::vector<Slot>& pend, const std::string& group);
  // Priority preemption for room for every member (`plans`: each member's node and victims);
  // false with `why` (a suffix for the reason), nothing evicted either way.
  bool PlanGangPreemption(const std::vector<Slot>& pend, std::vector<PreemptDryRun>& plans,
                          std::string* why);
  void ExecuteGangPreemption(const std::vector<Slot>& pend, const std::vector<PreemptDryRun>& plans,
                             const std::string& group);
  // Every pending member waits with `msg`; after the group's timeout (Coscheduling's Permit
  // timeout) they are rejected and retried instead.
  void GangWaitAll(Gang& g, const std::vector<Slot>& pend, EventType type, std::string_view why,
                   const std::string& msg, const std::string& key);
  // A running member was stopped (preemption, reclaim, node loss, deletion): the others follow it.
  void StopGang(const Workload& stopped, const std::string& by);
  // gang_reclaim.cc: quota preemption for a group blocked by its ElasticQuota (`pend`: its pending
  // members in queue order; the planner of reclaim_planner.h, as for a single pod); false with
  // nothing evicted (`why`: a suffix for the reason, or ""). When the quota is not freed now only
  // because candidates are younger than minRuntime, `wait` gets YoungCandidatesMessage (it replaces
  // the quota message). When the quota victims free the quota but not room for every member,
  // lower-priority workloads are preempted for the room too (Kubernetes' rules, as for a group that
  // does not fit), all or nothing.
  bool TryReclaimGang(Gang& g, const std::vector<Slot>& pend, std::string* why, std::string* wait);
  // A pod group's dry runs (gang.cc, gang_reclaim.cc): tentative node changes, each applied at
  // once (the next member sees it) and logged; UndoTentative gives them back in reverse order.
  // `touched` (by position; ignored when null or empty) marks the nodes a change touched.
  struct Tentative {
    uint32_t pos;
    const placement::PodShape* shape;
    placement::GpuAssignment gpus;
    bool allocated;  // an allocation (a member placed), else a release (a victim gone)
    Slot member;     // the member placed (kNoSlot: none named)
  };
  // `member`: the member placed, which the next members' pod topology sees (`placing`).
  void ApplyTentative(std::vector<Tentative>& log, uint32_t pos, const placement::PodShape& shape,
                      const placement::GpuAssignment& gpus, bool allocate,
                      std::vector<char>* touched = nullptr, Slot member = kNoSlot);
  // Members of a pod group placed tentatively in the dry run under way (slot, node position), in
  // placement order: the pod topology of the members after them counts them as placed there.
  std::vector<std::pair<Slot, uint32_t>> placing;
  size_t placing_with_topology = 0;  // of `placing`, those with pod topology rules
  void ReleaseTentative(std::vector<Tentative>& log, Slot victim, std::vector<char>* touched);
  void UndoTentative(std::vector<Tentative>& log);
  // Room for every pending member of a group, in queue order: free room, else a priority
  // preemption plan of its own (TryPreempt's dry run; `excluded` victims are gone already and the
  // plan's victims join them). `plans[k]` gets member k's node and victims. False at the first
  // member with neither (`why`: "ns/name: its reason"); the changes stay in `log` either way.
  bool PlanRoomForMembers(const std::vector<Slot>& pend, std::vector<Tentative>& log,
                          std::vector<char>& excluded, std::vector<char>& touched,
                          std::vector<PreemptDryRun>& plans, std::string* why);
  bool SameGang(const Workload& a, const Workload& b) const {
    return a.gang != kNoGang && a.gang == b.gang;
  }

  // ---------------------------------------------------------------- backfill.cc
  // When `x` is expected to release its node: a terminating workload at the end of its grace
  // period, a running one at run start + activeDeadlineSeconds; -1 unknown (no deadline).
  Millis ExpectedEnd(const Workload& x) const;
  // After `w` failed in a cycle: a reservation at its earliest start, if one can be computed.
  void TryReserve(Workload& w);
  // Placing `w` on the node now would make a reservation there start later.
  bool DelaysReservation(uint32_t pos, const Workload& w) const;
  // The same with `w` on `gpus` (its shared-GPU device), or on FitView::Hold's choice (nullptr).
  bool DelaysReservationOn(uint32_t pos, const Workload& w,
                           const placement::GpuAssignment* gpus) const;
  bool Reserved(uint32_t pos) const { return !reservations.empty() && reserved_at[pos]; }
  bool HoldsReservation(uint32_t pos, const Workload& w) const;
  void ClearReservations();
  // Holds in `view` the room of every reservation on the node active at `t` (but `w`'s own):
  // false when one does not fit.
  bool HoldReservedAt(uint32_t pos, Millis t, const Workload* w, placement::FitView& view) const;
  // Invariant (check_invariants, end of a cycle): at each reservation's start, what is expected to
  // run on its nodes then and the reservations active then all fit.
  void CheckReservations() const;

  // ---------------------------------------------------------------- reclaim.cc
  // `wait` as for TryReclaimGang.
  bool TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why,
                  std::string* wait);
  bool FitsOnceGone(uint32_t pos, const Workload& w, const std::vector<Slot>& gone) const;

  // ---------------------------------------------------------------- pdb.cc
  struct PdbState {
    int64_t allowed = 0;  // disruptions still allowed now
  };
  void ComputePdbState(std::vector<PdbState>* out) const;
  int CountViolations(const std::vector<Slot>& victims, const std::vector<PdbState>& state,
                      std::vector<std::string>* names) const;
  // Quota preemption's budget rule (issue 27): a PodDisruptionBudget protects only the pods
  // within their namespace's own min. The quota victims of another namespace are taken only
  // while it is above its min (borrowed quota), so their budgets do not protect them: they use
  // up their budgets' allowed disruptions (for the `node_victims` of the same plan) but are
  // never violations. Quota victims of `w`'s own namespace (withinNamespace) and node victims
  // (priority preemption for room) count as CountViolations counts them.
  // "PodDisruptionBudget ns/a, PodDisruptionBudget ns/b": `names` sorted, each once.
  static std::string BudgetList(std::vector<std::string> names);
  int QuotaVictimViolations(const Workload& w, const std::vector<Slot>& quota_victims,
                            const std::vector<Slot>& node_victims,
                            const std::vector<PdbState>& state,
                            std::vector<std::string>* names) const;
  void MatchPdbs(Workload& w);  // w.pdbs from the current budgets
  void RematchAllPdbs();
  void RematchPdb(uint32_t k);
  void UnmatchPdb(uint32_t k);
  void SortPdbMembers(bool scan);

  // ---------------------------------------------------------------- pool.cc
  Status AddNode(const Node& node, int64_t order);
  Status UpdateNode(uint32_t id, const Node& node, int64_t order);
  void EnsureNodes();  // puts appended nodes in node order (once for an initial pool)
  void ApplyCapacity(NodeInfo& info, placement::NodeState& s);
  void CheckOverCapacity(uint32_t pos);  // NodeInfo::over_capacity from the node's usage
  void NodesReordered();                 // after nodes were added, removed or reordered
  void ResetPlacer();
  void RecomputePolicy();  // effective policy from the spec and the override
  void DropQuotaHolds();   // before a ResourceQuota / ElasticQuota change
  void QuotaChanged();     // after it: recount usage, take the holds again
  const PriorityClass* GlobalDefault() const;
  int32_t QoSId(const std::string& name);
  const QoS* QoSOf(int32_t id) const {
    return id >= 0 && qos_defs[static_cast<size_t>(id)] ? &*qos_defs[static_cast<size_t>(id)]
                                                        : nullptr;
  }

  // ---------------------------------------------------------------- data
  EngineOptions options;
  EventSink* events_sink = nullptr;
  RunSink* runs_sink = nullptr;
  Millis now = 0;
  bool started = false;

  // Policy objects (the engine's copies).
  std::optional<PoolPolicy> pool_policy;  // as upserted
  PoolPolicy policy;                      // effective: defaults, spec, placement override
  std::map<std::string, Namespace> namespaces;
  std::map<std::string, PriorityClass> classes;
  std::map<std::string, std::map<std::string, LimitRange>>
      limit_ranges;                       // namespace -> name -> object
  std::vector<PodDisruptionBudget> pdbs;  // in the order they were first upserted
  std::vector<std::string> qos_names;     // interned QoS names (ids never change)
  std::unordered_map<std::string, int32_t> qos_ids;
  std::vector<std::optional<QoS>> qos_defs;       // by QoS id; empty once deleted
  std::vector<std::vector<int32_t>> qos_preempt;  // by QoS id: the preempt list as QoS ids
  std::vector<PriceBook> price_books;
  QuotaBook quota;
  std::vector<Workload*> held_quota;  // holds dropped for a quota change, taken again after it

  // Nodes.
  std::deque<NodeInfo> node_info;  // by NodeId (a deque: labels stay put for NodeState::labels)
  std::unordered_map<std::string, uint32_t> node_ids;
  std::vector<placement::NodeState> nodes;  // present nodes in node order
  std::vector<uint32_t> node_at;            // position -> NodeId
  std::vector<NodeLive> node_live;          // position -> workloads, nominations, epoch
  std::vector<FitEntry> fit;                // position -> fit numbers
  // By block of kFitBlock positions: each fit number's largest value in the block, so that a scan
  // skips a block in which nothing can fit (filter.cc); kept by RefreshFit.
  static constexpr size_t kFitBlock = 64;
  std::vector<FitEntry> fit_block;
  void RefreshFitBlock(size_t block);
  std::unordered_map<std::string, uint32_t> model_ids;  // GPU model -> bit index (31: the rest)
  bool nodes_dirty = false;                             // nodes appended, not yet in node order
  // Present nodes with a NoSchedule / NoExecute taint, and with a PreferNoSchedule taint (kept by
  // pool.cc): with none, no workload needs the taint filter or score.
  size_t tainted_nodes = 0;
  size_t prefer_tainted_nodes = 0;
  void CountTaints(const Node& node, int sign);
  std::unique_ptr<placement::PlacementPolicy> placer;
  PlacementPolicyName placer_name = PlacementPolicyName::kBestFit;
  std::vector<size_t> scratch_feasible;  // TryPlace's feasible list, reused
  size_t next_start_node = 0;            // kube-scheduler's rotating start index
  size_t next_preempt_node = 0;          // same, for preemption dry runs

  // Workloads.
  WorkloadTable workloads;  // by slot (chunked: growing never copies it)
  std::vector<Slot> free_slots;
  std::unordered_map<uint64_t, Slot> slot_of;    // live WorkloadId -> slot
  std::unordered_map<std::string, Slot> by_key;  // live namespace/name -> slot
  uint64_t next_id = 0;
  std::vector<Slot> finished;  // reached a final phase during this Apply (see Flush)
  bool applying = false;       // in Engine::Apply (a sink's callback may take a snapshot)
  std::map<std::string, uint32_t> namespace_ids;
  // By namespace id: its workloads accepted by SubmitPod and not finished (Workload::submitted; set
  // at acceptance, dropped by MarkFinished), what PoolPolicy quota.maxSubmittedPerNamespace caps.
  // Not saved: Restore counts the live workloads (CountSubmitted).
  std::vector<int64_t> unfinished_by_ns;
  void CountSubmitted(Workload& w);
  // The refusal of one more pod of `ns` under quota.maxSubmittedPerNamespace, or none.
  std::optional<std::string> SubmitLimitReached(const std::string& ns) const;
  std::unordered_map<std::string, uint32_t> class_ids;   // interned shape / preemption classes
  std::map<uint32_t, std::vector<Slot>> borrowed_by_ns;  // namespace id -> running borrowers
  std::vector<Gang> gangs;                               // by gang id
  std::unordered_map<std::string, uint32_t> gang_ids;    // namespace/name -> gang id
  uint64_t cycle = 0;                                    // scheduling cycles run (not in snapshots)
  std::vector<Reservation> reservations;  // this cycle's backfill reservations, in queue order
  std::vector<char> reserved_at;          // by position: how many reservations use the node
  int reservation_tries = 0;              // reservations computed this cycle (bounded)
  // Workloads on a node whose release time is known (ExpectedEnd >= 0: a time limit, or
  // terminating); recomputed on Restore.
  int64_t ends_known = 0;
  static bool EndKnown(const Workload& x) {
    return x.time_limit > 0 || x.phase == Phase::kTerminating;
  }
  std::vector<Slot> pdb_members;  // workloads some PDB selects

  // The queue: pending workloads, one ordered set per preemption class (same shape, priority,
  // selector, namespace, QoS, preemption policy): members of a class succeed or fail alike, so a
  // cycle walks the classes' heads in queue order and stops a class at its first failure.
  std::map<uint32_t, std::set<Slot, QueueOrder>> pending;
  std::set<uint32_t> active_classes;  // classes with pending members, in class order
  // By slot: where a pending workload sits (its class and its place in that class's set), so that
  // leaving the queue and "is it pending?" cost no search through the set (each step of which
  // reads another workload). Kept by PendingInsert / PendingErase only.
  struct QueuePos {
    bool queued = false;
    uint32_t cls = 0;
    std::set<Slot, QueueOrder>::iterator at;
  };
  std::vector<QueuePos> queue_pos;
  // Counts the inserts and erases of PendingInsert / PendingErase: a cycle that finds it unchanged
  // (but for its head leaving) after an attempt knows the head's successor is still the next.
  uint64_t pending_changes = 0;
  size_t nominations = 0;  // workloads nominated to a node
  std::unordered_map<uint32_t, std::string> class_reason;
  std::vector<Slot> fresh;       // submitted or requeued since the last cycle
  std::vector<Slot> completing;  // exited, node held until release_at (spec.latency)
  std::vector<Slot> held;        // requeued, waiting for eligible_at (spec.latency)
  bool freed = true;             // capacity or quota was released since the last cycle
  // Instants when a blocked preemption may become possible (a victim reaches minRuntime).
  std::priority_queue<Millis, std::vector<Millis>, std::greater<Millis>> wakeups;

  // Preemption plans by plan class (preempt_plan.h): a node where a class found no acceptable
  // plan stays so, and a plan found stays the plan, until something on that node changes
  // (NodeLive::epoch) or the global epoch moves (borrowed flags, nodes or policy objects changed).
  // A cache: not part of snapshots (an empty cache decides the same).
  uint64_t global_epoch = 0;
  // No-fit reasons by shape class, valid while nothing in the pool changed (pool_version, bumped
  // with any node's epoch and by node changes). A cache: not part of snapshots.
  uint64_t pool_version = 0;
  mutable std::unordered_map<uint32_t, std::pair<uint64_t, std::string>> no_fit_cache;
  std::unordered_map<uint32_t, PlanCache> preempt_memo;      // by plan class
  std::unordered_map<uint32_t, uint32_t> plan_class_of;      // preemption class -> plan class
  std::unordered_map<std::string, uint32_t> plan_class_ids;  // interned plan class keys
  uint32_t PlanClass(const Workload& w);  // the preemption class without the pod group
};

}  // namespace arbiter::engine
