// Trace replay through the engine (the same engine `arbiter sim -f` runs): the trace's nodes join
// the pool in a seeded order (UpsertNode::order: score ties are broken at random but
// reproducibly, like the FGD paper's random tie-break), its pods arrive one scheduling cycle each.
//
// Without a policy file it is the FGD paper's simulator: no queue, no preemption, no quota, every
// feasible node scored; a pod that fits nowhere when it arrives fails (SubmitPod::immediate).
// With a policy file (--policy-file: PoolPolicy, PriorityClasses, QoS, quotas, LimitRanges,
// budgets, PriceBooks for the namespaces tenant-0 .. tenant-N-1) the replay runs under it: pods
// wait in the queue (unless --unschedulable drop), quotas admit, preemption and reclaim happen,
// and the run's events, workloads and invoices come out as a SimulationReport (PolicyRun).
//
// Two modes:
//  saturate  The FGD paper's protocol. The trace's pods are shuffled with the seed; while their
//            GPU demand is below target x the cluster's GPU capacity, pods sampled with
//            replacement from the trace (seeded) are appended until the next one would pass the
//            target (above the target, seeded random pods are dropped instead). Pods are then
//            submitted one by one at virtual time 0, with no departures; the GPU allocation is
//            recorded against the arrived GPU demand (in 1 % steps of capacity).
//  timeline  creation_time is the arrival, deletion_time - scheduled_time the run time
//            (deletion - creation when the pod was never scheduled); departures at a time are
//            processed before arrivals at the same time.
//
// Pods are named after the trace (a pod sampled again in saturate mode gets "-2", "-3", ...) in
// namespace tenant-K, K from the seeded --tenants rule (TenantOf, openb_reader.h); their priority
// is their qos tier (LS 10000, Burstable/Guaranteed 5000, BE 1000); with a policy file a pod names
// the PriorityClass of that value when there is one; GPU pods with a gpu_spec are constrained to
// those models (SubmitPod::allowed_gpu_models).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/int128.h"
#include "core/objects.h"
#include "core/placement/policy.h"
#include "core/status.h"
#include "driver/recorder.h"
#include "sim/trace/openb_reader.h"

namespace arbiter::sim::trace {

struct TraceRunOptions {
  // The placement policy; with a policy file whose PoolPolicy names one, nullopt keeps that.
  std::optional<PlacementPolicyName> policy = PlacementPolicyName::kBestFit;
  uint64_t seed = 42;
  int64_t target_permille = 1300;  // saturate: arrived GPU demand target, per mille of capacity
  bool shuffle_nodes = true;
  int typical_popularity_percent = 95;  // FGD typical pods
  // --policy-file: the objects the replay runs under (its pods and nodes are ignored). Must outlive
  // the run.
  const ManifestSet* policy_file = nullptr;
  // A pod that cannot start (or start a preemption) when it arrives: fails (kDrop, the paper's
  // protocol) or waits in the queue (kWait). Default: kDrop without a policy file, kWait with one.
  enum class Unschedulable { kDefault, kDrop, kWait };
  Unschedulable unschedulable = Unschedulable::kDefault;
  // Timeline mode: give each pod spec.activeDeadlineSeconds = its duration x this percentage
  // (rounded up to a second): the time limit backfill plans with; 0 none.
  int64_t time_limit_percent = 0;
  // Timeline mode: a pod whose run time is longer than checkpoint_interval (0 none) saves its
  // progress every checkpoint_interval (arbiter.dev/checkpoint-interval) and needs
  // checkpoint_shutdown after SIGTERM to save (arbiter.dev/shutdown-time); other pods have no
  // checkpoints. Deterministic: the same pods checkpoint in every run of the trace.
  Millis checkpoint_interval = 0;
  Millis checkpoint_shutdown = 0;
  bool check_invariants = false;
  // Called for every arrival once the engine has decided it (trace pod index, node name, "" when
  // it did not start), in arrival order: the differential test compares decisions with it.
  std::function<void(size_t pod, const std::string& node)> on_decision;
};

// What a replay under a policy file produced, for the SimulationReport (report.h): the pool as
// manifests (the trace's nodes, the policy file's objects) and what the engine did.
struct PolicyRun {
  ManifestSet manifests;
  driver::SimResult result;
};

struct AllocationPoint {
  int64_t arrived_gpu_milli = 0;    // GPU demand arrived so far
  int64_t allocated_gpu_milli = 0;  // GPU milli allocated at that moment
};

struct SaturateResult {
  std::string policy;
  uint64_t seed = 0;
  int64_t cluster_gpu_milli = 0;
  int64_t cluster_cpu_milli = 0;
  int64_t pods_submitted = 0;
  int64_t pods_placed = 0;
  int64_t pods_failed = 0;
  int64_t gpu_pods_failed = 0;
  int64_t arrived_gpu_milli = 0;
  int64_t allocated_gpu_milli = 0;  // at the end (arrived = target)
  int64_t allocated_cpu_milli = 0;
  int64_t allocated_gpu_milli_at_100 = 0;  // when arrived demand first reached capacity
  std::vector<AllocationPoint> curve;      // one point per whole percent of capacity arrived
  std::shared_ptr<PolicyRun> policy_run;   // with a policy file
  double gpu_allocation_at_100() const;
  double unallocated_gpu_share_at_end() const;
};

Result<SaturateResult> RunSaturate(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& options);

struct TimelinePoint {
  int64_t time_s = 0;
  int64_t allocated_gpu_milli = 0;
  int64_t allocated_cpu_milli = 0;
  int64_t running_pods = 0;
};

struct TimelineResult {
  std::string policy;
  uint64_t seed = 0;
  int64_t cluster_gpu_milli = 0;
  int64_t cluster_cpu_milli = 0;
  int64_t pods_submitted = 0;
  int64_t pods_placed = 0;
  int64_t pods_failed = 0;
  int64_t start_s = 0, end_s = 0;
  int64_t peak_allocated_gpu_milli = 0;
  // GPU milli-seconds allocated over the run, for average utilisation.
  int128 gpu_milli_seconds = 0;
  std::vector<int64_t> failed_by_priority_tier;  // index: 0 = 1000, 1 = 5000, 2 = 10000, 3 other
  std::vector<TimelinePoint> points;             // at most ~1000, evenly spaced in events
  struct Tenant {                                // by TracePod::tenant (the seeded --tenants rule)
    int64_t pods_placed = 0;
    int64_t pods_failed = 0;
    int128 gpu_milli_seconds = 0;  // requested GPU x run time of its placed pods
    int128 cpu_milli_seconds = 0;
  };
  std::vector<Tenant> tenants;
  std::shared_ptr<PolicyRun> policy_run;  // with a policy file
  double average_gpu_allocation() const;
};

Result<TimelineResult> RunTimeline(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& options);

// Averages of saturate runs over seeds for each policy.
struct PolicySummary {
  std::string policy;  // canonical lower-case name, as given to ParsePolicyName
  std::vector<uint64_t> seeds;
  double gpu_allocation_at_100 = 0;         // mean over seeds, 0..1
  double unallocated_gpu_share_at_end = 0;  // mean over seeds, 0..1 (at target, 130 % default)
  double unallocated_gpu_share_min = 0, unallocated_gpu_share_max = 0;
  double pods_failed = 0;  // mean
  std::vector<SaturateResult> runs;
};

// Aggregates saturate runs of one policy (means, min and max over the runs).
PolicySummary SummariseRuns(std::string policy, std::vector<uint64_t> seeds,
                            std::vector<SaturateResult> runs);

using ProgressFn =
    std::function<void(const std::string& policy, uint64_t seed, size_t done, size_t total)>;
Result<std::vector<PolicySummary>> ComparePolicies(const std::vector<TraceNode>& nodes,
                                                   const PodTrace& trace,
                                                   const std::vector<PlacementPolicyName>& policies,
                                                   const std::vector<uint64_t>& seeds,
                                                   const TraceRunOptions& base,
                                                   const ProgressFn& progress = nullptr);

// "bestfit", "fgd", "leastallocated", "packing", "dotproduct", "random" (case and '-'/'_'
// insensitive; PascalCase names work too).
Result<PlacementPolicyName> ParsePolicyName(std::string_view text);
std::string PolicyKey(PlacementPolicyName p);  // canonical lower-case name
// Seeds: "7", a range FIRST-LAST ("42-51", both ends included, FIRST <= LAST), or a comma list of
// both ("1,5,10-12"); each seed once, at most kMaxSeeds in all. Errors say which part is wrong.
inline constexpr size_t kMaxSeeds = 100000;
Result<std::vector<uint64_t>> ParseSeeds(std::string_view text);
// The saturate target (arrived GPU demand / cluster GPUs) in per mille: a ratio "1.3", "0.5", "2"
// (at most three decimals) or a percentage "130%", "50%", "12.5%" (at most one decimal); above 0
// and at most kMaxTargetPermille (10, i.e. 1000 %). A bare number above 10 is refused, not read as
// a ratio: "--target 50" is far more likely meant as 50 % than as 5000 %.
inline constexpr int64_t kMaxTargetPermille = 10000;
Result<int64_t> ParseTargetPermille(std::string_view text);
// Bound of --checkpoint-interval and --shutdown-time (a year).
inline constexpr Millis kMaxTraceCheckpoint = Millis{365} * 24 * 3600 * 1000;

}  // namespace arbiter::sim::trace
