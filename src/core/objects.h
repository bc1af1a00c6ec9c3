// Core object model: plain values for the Kubernetes and Arbiter kinds, after loading.
// Quantities are already canonical integers (see resources.h), durations milliseconds,
// money Decimal. Every object remembers where it came from (file, line) for messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/decimal.h"
#include "core/duration.h"
#include "core/resources.h"

namespace arbiter {

struct SourceRef {
  std::string file;  // kApiRequest: an object `arbiter serve` was sent, not read from a file
  int line = 0;      // 1-based; 0 = unknown
};
inline constexpr char kApiRequest[] = "request";

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // empty for cluster-scoped kinds; Pods etc. default to "default"
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  SourceRef source;
};

enum class PreemptionPolicy { kPreemptLowerPriority, kNever };
enum class PreemptMode { kRequeue, kCancel };

// ------------------------------------------------------------------ Kubernetes kinds

struct Namespace {
  ObjectMeta meta;
};

// Simulation inputs carried by Node annotations: when the node joins and leaves the pool on the
// virtual clock (arbiter.dev/add-time, arbiter.dev/remove-time).
struct NodeSimSpec {
  Millis add_time = 0;                // 0: in the pool from the start
  std::optional<Millis> remove_time;  // none: stays until the end; else > add_time
};

// ------------------------------------------------------------------ node constraints
// Taints and tolerations, node affinity (Kubernetes core/v1), as kube-scheduler's TaintToleration,
// NodeUnschedulable and NodeAffinity plugins read them. The matching rules live in
// placement/node_constraints.h.

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };
struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

enum class TolerationOperator : uint8_t { kEqual, kExists };
struct Toleration {
  std::string key;  // empty (with Exists): every key
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;         // none: every effect
  std::optional<Millis> toleration_seconds;  // NoExecute only: how long the pod stays
};

enum class NodeSelectorOperator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
struct NodeSelectorRequirement {
  std::string key;
  NodeSelectorOperator op = NodeSelectorOperator::kIn;
  std::vector<std::string> values;
};
// Its requirements are ANDed; a term with none matches no node.
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // on the node's labels
  std::vector<NodeSelectorRequirement> match_fields;       // metadata.name, In / NotIn
};
struct PreferredSchedulingTerm {
  int32_t weight = 1;  // 1..100
  NodeSelectorTerm preference;
};
// spec.affinity.nodeAffinity.
struct NodeAffinity {
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms (ORed); none: no constraint.
  std::optional<std::vector<NodeSelectorTerm>> required;
  std::vector<PreferredSchedulingTerm> preferred;  // preferredDuringScheduling...
  bool Empty() const { return !required && preferred.empty(); }
};

enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist };
// Whether a requirement with operator `op` holds for an object that `has` the key (label, scope
// value) and whose value is `in` the requirement's values: Kubernetes' selector semantics.
bool SelectorOperatorHolds(SelectorOperator op, bool has, bool in);
struct LabelRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
};
struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelRequirement> match_expressions;
  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool Empty() const { return match_labels.empty() && match_expressions.empty(); }
};

// ------------------------------------------------------------------ pod topology
// Inter-pod affinity and anti-affinity, topology spread constraints (Kubernetes core/v1), as
// kube-scheduler's InterPodAffinity and PodTopologySpread plugins read them. The matching rules
// live in placement/pod_topology.h.

// A PodAffinityTerm: the pods `label_selector` selects (none: no pod; empty: every pod) in the
// namespaces named (or selected by `namespace_selector`; neither: the pod's own namespace), in
// the same domain of `topology_key` (the value of that node label) as the node.
struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;  // empty: every namespace
  std::string topology_key;
};
struct WeightedPodAffinityTerm {
  int32_t weight = 1;  // 1..100
  PodAffinityTerm term;
};
// spec.affinity.podAffinity and spec.affinity.podAntiAffinity.
struct PodAffinity {
  std::vector<PodAffinityTerm> required;           // requiredDuringSchedulingIgnoredDuringExecution
  std::vector<WeightedPodAffinityTerm> preferred;  // preferredDuringScheduling...
  bool Empty() const { return required.empty() && preferred.empty(); }
};
// spec.topologySpreadConstraints[*].
struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  bool do_not_schedule = true;  // whenUnsatisfiable: DoNotSchedule (else ScheduleAnyway)
  std::optional<LabelSelector> label_selector;  // none: matches no pod
  std::optional<int32_t> min_domains;           // DoNotSchedule only
};

struct Node {
  ObjectMeta meta;
  ResourceList capacity;
  ResourceList allocatable;  // if absent in the manifest, equal to capacity
  bool unschedulable = false;
  std::vector<Taint> taints;  // spec.taints
  NodeSimSpec sim;
  // The schedulable amount: allocatable.
  const ResourceList& Schedulable() const { return allocatable; }
};

struct Container {
  std::string name;
  ResourceList requests;
  ResourceList limits;
};

// Simulation inputs carried by Pod annotations (arbiter.dev/...). See BRIEF.md §5.
struct SimSpec {
  Millis submit_time = 0;
  std::optional<Millis> duration;             // none: runs until the end of the simulation
  std::optional<ResourceList> usage;          // none: equal to requests
  std::optional<Millis> checkpoint_interval;  // none: no checkpoints
  Millis shutdown_time = 0;
  std::optional<PreemptMode> preempt_mode;
  std::optional<std::string> qos;
  // arbiter.dev/requeue-on-preempt: "true": under QoS preemption, a victim that exits within its
  // GraceTime is requeued (a Slurm job that calls `scontrol requeue` itself) instead of COMPLETED.
  bool requeue_on_preempt = false;
  // arbiter.dev/exit-code: the code the workload exits with when its duration is done (0..255;
  // non-zero: the pod ends Failed, as a container that exits with it).
  int32_t exit_code = 0;
};

// The pod group a pod belongs to (scheduler-plugins coscheduling: the label
// scheduling.x-k8s.io/pod-group names a PodGroup of the pod's namespace), resolved from the
// PodGroup when the manifests are loaded (ResolvePodGroups) so that the pod carries what the
// engine needs: the group's name and minMember.
struct PodGroupRef {
  std::string name;
  int32_t min_member = 1;
  Millis schedule_timeout = 0;  // spec.scheduleTimeoutSeconds, 0 none
};

struct Pod {
  ObjectMeta meta;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::optional<std::string> priority_class_name;
  std::optional<int32_t> priority;
  std::optional<PreemptionPolicy> preemption_policy;
  std::optional<Millis> termination_grace_period;  // default 30s when absent
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;                    // spec.tolerations
  NodeAffinity node_affinity;                             // spec.affinity.nodeAffinity
  PodAffinity pod_affinity;                               // spec.affinity.podAffinity
  PodAffinity pod_anti_affinity;                          // spec.affinity.podAntiAffinity
  std::vector<TopologySpreadConstraint> topology_spread;  // spec.topologySpreadConstraints
  // spec.overhead (what its RuntimeClass adds, as RuntimeClass admission fills it in): counted in
  // quota and node fit on top of EffectiveRequests (and of the limits it sets).
  ResourceList overhead;
  SimSpec sim;
  // spec.activeDeadlineSeconds: the run's time limit (Slurm's --time). Backfill plans with it.
  std::optional<Millis> active_deadline;
  std::optional<PodGroupRef> pod_group;  // from the pod-group label (ResolvePodGroups)

  // Kubernetes effective request: per resource, max(sum over containers, max over init
  // containers). Same rule for limits (only resources some container limits).
  ResourceList EffectiveRequests() const;
  ResourceList EffectiveLimits() const;
};

// A ResourceQuota hard entry: `requests.cpu`, `limits.memory`, bare `cpu` (= requests),
// `pods` / `count/pods`, `requests.nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`.
enum class QuotaTrack { kRequests, kLimits, kCount };
struct QuotaItem {
  std::string key;  // as written, e.g. "requests.cpu"
  QuotaTrack track;
  std::string resource;  // "cpu", "nvidia.com/gpu", or "pods" for counts
  int64_t hard = 0;      // canonical unit of `resource`
};

struct ScopeRequirement {
  std::string scope_name;  // PriorityClass, BestEffort, NotBestEffort (enforced), Terminating,
                           // NotTerminating
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;
};

struct ResourceQuota {
  ObjectMeta meta;
  std::vector<QuotaItem> hard;
  std::vector<ScopeRequirement> scope_selector;  // all must match
};

enum class LimitType { kContainer, kPod };
struct LimitRangeItem {
  LimitType type = LimitType::kContainer;
  ResourceList min, max, default_limit, default_request;
  // Ratio limit/request allowed, in thousandths (2 -> 2000; 1.5 -> 1500).
  ResourceList max_limit_request_ratio_milli;
};
struct LimitRange {
  ObjectMeta meta;
  std::vector<LimitRangeItem> limits;
};

struct PriorityClass {
  ObjectMeta meta;
  int32_t value = 0;
  bool global_default = false;
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  std::string description;
};

struct IntOrPercent {
  bool is_percent = false;
  int32_t value = 0;
  // Kubernetes rounding: minAvailable percentages round up, maxUnavailable round up too
  // (GetScaledValueFromIntOrPercent with roundUp=true for both in the disruption controller).
  int64_t Resolve(int64_t total) const;
};

struct PodDisruptionBudget {
  ObjectMeta meta;
  std::optional<IntOrPercent> min_available;
  std::optional<IntOrPercent> max_unavailable;
  LabelSelector selector;
};

// ------------------------------------------------------------------ Arbiter kinds

enum class QuotaExceededAction { kQueue, kReject };
enum class PlacementPolicyName { kBestFit, kLeastAllocated, kFGD, kPacking, kDotProduct, kRandom };
enum class PreemptionType { kPriority, kQoS };
enum class DisruptionBudgetMode { kStrict, kBestEffort };
// PoolPolicy preemption.victimOrder: among victims of equal priority (equal QoS priority under
// type QoS), which go first. kDefault is each type's own order: Kubernetes' (the latest start
// first) under Priority, Slurm's (the oldest first, YAML `OldestFirst`) under QoS. kYoungestFirst
// is Slurm's preempt_youngest_first (type QoS). kLeastLostWork (issue 29; both types): the victim
// that loses the least work first, GPU-seconds since its last checkpoint (engine/lost_work.h).
// Serialised as one byte: 0 and 1 are the boolean preempt_youngest_first of older files.
enum class VictimOrder : uint8_t { kDefault = 0, kYoungestFirst = 1, kLeastLostWork = 2 };
// Which workloads of other namespaces in the cohort a namespace may reclaim its quota from
// (Kueue's reclaimWithinCohort; PoolPolicy preemption.reclaim is the pool-wide default).
enum class ReclaimMode { kAny, kLowerPriority, kNever };
// Kueue's withinClusterQueue: preemption among the workloads of one namespace's ElasticQuota.
enum class WithinNamespacePolicy { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
// Kueue's borrowWithinCohort.policy: may a preemptor that will borrow reclaim from others.
enum class BorrowWithinCohortPolicy { kNever, kLowerPriority };
// Kueue's fairSharing.preemptionStrategies: when preemption toward fair shares may take a workload
// of another namespace (preemptor's share once admitted P, the target's before T0 / after T1).
enum class FairShareStrategy {
  kLessThanOrEqualToFinalShare,  // P <= T1
  kLessThanInitialShare,         // P < T0
};

inline constexpr int64_t kMaxBackfillDepth = 16;  // PoolPolicy scheduling.backfillDepth
// PoolPolicy quota.maxSubmittedPerNamespace: 1 .. this.
inline constexpr int64_t kMaxSubmittedPerNamespace = 1000000000;

struct PoolPolicy {
  ObjectMeta meta;
  int64_t cpu_overcommit_milli = 1000;     // 1.0 .. 1.2 -> 1000 .. 1200
  int64_t memory_overcommit_milli = 1000;  // 1.0 by default
  QuotaExceededAction when_quota_exceeded = QuotaExceededAction::kQueue;
  PlacementPolicyName placement = PlacementPolicyName::kBestFit;
  // kube-scheduler's percentageOfNodesToScore: 0 = adaptive (50% minus 1% per 125 nodes, at
  // least 5%, and never fewer than 100 feasible nodes); 100 = score every feasible node.
  int32_t percentage_of_nodes_to_score = 0;
  PreemptionType preemption_type = PreemptionType::kPriority;
  PreemptMode preempt_mode = PreemptMode::kRequeue;
  DisruptionBudgetMode disruption_budgets = DisruptionBudgetMode::kStrict;
  Millis min_runtime = 0;
  ReclaimMode reclaim = ReclaimMode::kAny;
  Millis scrape_interval = 30000;
  // scheduling.backfill (Slurm sched/backfill): blocked workloads at the head of the queue get a
  // reservation at their earliest start; lower ones start only if they do not delay it.
  bool backfill = true;
  // preemption.victimOrder (VictimOrder above).
  VictimOrder victim_order = VictimOrder::kDefault;

  // ---- spec.latency (slurm4): Slurm's latencies, modelled only when the block is present
  // (docs/slurm.md "Latency model"). Defaults are Slurm 22.05's.
  struct SlurmLatency {
    // How long after a victim's GraceTime ends slurmctld kills it: its next scheduling pass that
    // retries the preemptor, at the latest the 30 s time-limit sweep (PERIODIC_TIMEOUT).
    Millis grace_end_delay = 15000;
    Millis kill_wait = 30000;        // KillWait: SIGTERM -> SIGKILL when slurmd kills a job
    Millis message_timeout = 10000;  // MessageTimeout: slurmd's termination round trip after it
    Millis epilog = 0;               // the Epilog's run time, after every job (job clean-up)
    Millis cred_expire = 120000;     // AuthInfo cred_expire: a requeued job waits this + 1 s
    // SchedulerParameters=sched_interval (issue 29; engine snapshot / command version 7): when
    // set, the kill's delay after a GraceTime ends follows from it (State::GraceEndDelay) instead
    // of grace_end_delay: the preemptor's scheduling passes may kill only once KillWait +
    // MessageTimeout have passed since the last pass that could, so kills come on that cadence.
    Millis sched_interval = 0;
  };
  std::optional<SlurmLatency> latency;

  // ---- policy5 (issue 10; engine snapshot / command version 5)
  // scheduling.backfillDepth: how many of a cycle's reservations one node may carry, one after
  // another in time (1: each reservation on nodes no other reservation of the cycle uses).
  int32_t backfill_depth = 1;  // 1 .. kMaxBackfillDepth
  // fairSharing.preemptionStrategies (Kueue's Configuration field): tried in this order; Kueue
  // accepts [F], [I] and [F, I] (its default).
  std::vector<FairShareStrategy> fair_preemption_strategies = {
      FairShareStrategy::kLessThanOrEqualToFinalShare, FairShareStrategy::kLessThanInitialShare};

  // ---- preemption.requeuingStrategy (issue 29; engine snapshot 10, command 9, simulation state
  // 7): Kueue's waitForPodsReady.requeuingStrategy back-off, applied to victims of preemption and
  // reclaim. A workload requeued after its n-th preemption is held out of the queue for
  // min(base * 2^(n-1), max) (Kueue's jitter, 0.01 %, left out: deterministic). Absent: requeued
  // at once, as before.
  // immediateRequeues (Arbiter's; engine snapshot 11, command 10, simulation state 8): the first
  // k preemptions of a workload are requeued at once, as Kueue requeues a preempted workload; the
  // back-off counts from preemption k + 1 (base after it, then doubling): it holds repeat victims
  // only. 0 (the default): from the first preemption.
  struct RequeueBackoff {
    Millis base = 60000;    // backoffBaseSeconds (Kueue's default 60)
    Millis max = 3600000;   // backoffMaxSeconds (Kueue's default 3600); 0: no cap, as in Kueue
    int32_t immediate = 0;  // immediateRequeues
  };
  std::optional<RequeueBackoff> requeue_backoff;

  // ---- quota.maxSubmittedPerNamespace (issue 27; engine snapshot 15, command 14): at most this
  // many pods of one namespace not finished at once (pending, held, running or terminating), as
  // Slurm's GrpSubmitJobs on the namespace's account. A pod submitted beyond it is Rejected
  // (SubmitLimit) and a daemon refuses its create (403); a pod bound already (SubmitPod::node) is
  // counted but never refused. 0: no cap (the default).
  int64_t max_submitted_per_namespace = 0;
};

// How long a workload requeued after its n-th preemption (n >= 1) waits under `b` (0 for the first
// `b.immediate` ones).
Millis RequeueBackoffDelay(const PoolPolicy::RequeueBackoff& b, int n);

// arbiter.dev/v1alpha1 ResourceFlavor (Kueue's ResourceFlavor): a kind of node, by its labels
// (e.g. nvidia.com/gpu.product: H100). Quota is bought per flavor (ElasticQuota spec.flavors) and
// a workload admitted on a flavor runs only on nodes with all of the flavor's labels.
struct ResourceFlavor {
  ObjectMeta meta;
  std::map<std::string, std::string> node_labels;
};

// One entry of ElasticQuota spec.flavors (Kueue's resourceGroups[].flavors[]): the quota of the
// covered resources on that flavor. `node_labels` is the ResourceFlavor's, copied in when the
// manifests are loaded (ResolveFlavors) so that the engine needs no other object.
struct QuotaFlavor {
  std::string name;
  ResourceList min;
  std::optional<ResourceList> max;
  ResourceList lending_limit;
  std::map<std::string, std::string> node_labels;
};

struct ElasticQuota {
  ObjectMeta meta;  // namespace_ is the tenant namespace
  std::string cohort;
  ResourceList min;
  std::optional<ResourceList> max;             // none: no ceiling beyond the cohort
  ResourceList lending_limit;                  // resources absent: all of min may be lent
  std::vector<std::string> lending_limit_set;  // names that have a lending limit
  // spec.preemption (Kueue's ClusterQueue preemption fields); absent fields default from the
  // PoolPolicy (reclaimWithinCohort <- preemption.reclaim) or to Never.
  struct Preemption {
    std::optional<WithinNamespacePolicy> within_namespace;
    std::optional<ReclaimMode> reclaim_within_cohort;
    std::optional<BorrowWithinCohortPolicy> borrow_within_cohort;
    std::optional<int32_t> max_priority_threshold;  // borrowWithinCohort.maxPriorityThreshold
  } preemption;
  // spec.fairSharing.weight in thousandths (Kueue's default weight 1 -> 1000); set only when the
  // manifest names spec.fairSharing (a cohort with one orders its borrowers by weighted share).
  std::optional<int64_t> fair_weight_milli;
  // spec.flavors, in fallback order: the resources they name (covered resources) are quota per
  // flavor; spec.min/max keep constraining the other resources.
  std::vector<QuotaFlavor> flavors;
};

enum class BillingMode { kRequest, kUsage, kMax, kBlended };
enum class MigRule { kCompute, kMemory, kMax };
enum class CreditPolicy { kNone, kLostWork };
// How the pool's idle capacity cost is spread to tenants (OpenCost's "share idle"): not at all,
// in proportion to each tenant's billed cost of the resource, or evenly.
enum class IdleSharing { kNone, kWeighted, kEven };

struct PriceBook {
  ObjectMeta meta;
  std::string currency = "USD";
  Millis effective_from = 0;  // Unix ms
  BillingMode mode = BillingMode::kMax;
  Decimal blended_request_weight = Decimal::FromUnits(Decimal::kOne / 2);
  std::map<std::string, Decimal> prices;      // resource -> price per unit-hour
  std::map<std::string, Decimal> gpu_models;  // nvidia.com/gpu.product -> price per GPU-hour
  MigRule mig_rule = MigRule::kMax;
  CreditPolicy preemption_credit = CreditPolicy::kLostWork;
  std::map<std::string, BillingMode> namespace_modes;
  IdleSharing share_idle = IdleSharing::kNone;
};

// scheduling.x-k8s.io/v1alpha1 PodGroup (scheduler-plugins coscheduling): its pods are placed
// all together or not at all.
inline constexpr const char* kPodGroupLabel = "scheduling.x-k8s.io/pod-group";
struct PodGroup {
  ObjectMeta meta;
  int32_t min_member = 1;
  std::optional<Millis> schedule_timeout;  // spec.scheduleTimeoutSeconds
};

struct QoS {
  ObjectMeta meta;
  int32_t priority = 0;
  std::vector<std::string> preempt;
  std::optional<PreemptMode> preempt_mode;
  std::optional<Millis> grace_time;
  // spec.namespaces: the namespaces whose pods may name this QoS (Slurm's per-association QOS
  // list); none: every namespace; an empty list: none.
  std::optional<std::vector<std::string>> namespaces;
  bool AllowsNamespace(const std::string& ns) const;
};

// Everything loaded from a set of manifest files, in file order.
struct ManifestSet {
  std::vector<Namespace> namespaces;
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<ResourceQuota> resource_quotas;
  std::vector<LimitRange> limit_ranges;
  std::vector<PriorityClass> priority_classes;
  std::vector<PodDisruptionBudget> pdbs;
  std::optional<PoolPolicy> pool_policy;
  std::vector<ElasticQuota> elastic_quotas;
  std::vector<PriceBook> price_books;
  std::vector<QoS> qos;
  std::vector<PodGroup> pod_groups;
  std::vector<ResourceFlavor> resource_flavors;
};

// Fills every Pod's pod_group from its scheduling.x-k8s.io/pod-group label and the PodGroup of
// that name in the pod's namespace (left empty when there is none: validation reports it).
void ResolvePodGroups(ManifestSet* set);
// Copies each ResourceFlavor's nodeLabels into the ElasticQuota flavors that name it (unknown
// names keep no labels: validation reports them).
void ResolveFlavors(ManifestSet* set);

// Enum <-> text, in the Kubernetes PascalCase spelling used in manifests.
const char* ToString(PreemptionPolicy v);
const char* ToString(PreemptMode v);
const char* ToString(QuotaExceededAction v);
const char* ToString(PlacementPolicyName v);
const char* ToString(PreemptionType v);
const char* ToString(DisruptionBudgetMode v);
const char* ToString(ReclaimMode v);
const char* ToString(VictimOrder v);
const char* ToString(WithinNamespacePolicy v);
const char* ToString(BorrowWithinCohortPolicy v);
const char* ToString(BillingMode v);
const char* ToString(MigRule v);
const char* ToString(CreditPolicy v);
const char* ToString(IdleSharing v);
const char* ToString(SelectorOperator v);

}  // namespace arbiter
