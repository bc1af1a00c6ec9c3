// The scheduling engine: one deterministic state machine driven by commands.
//
// It admits workloads (PriorityClass / QoS resolution, LimitRange defaults and checks,
// ResourceQuota, ElasticQuota with borrowing and reclaim), places them on nodes through a
// placement policy, and preempts in an orderly way (Kubernetes reprieve or Slurm QoS order,
// PodDisruptionBudgets, grace periods, requeue or cancel). It does not model the work itself:
// how long a workload runs, how long it takes to shut down and what it saves are the driver's
// (driver/work_model.h), which reports PodFinished and VictimExited like a real runtime would.
//
// Apply(command) is the only way to change it (command.h states every command's semantics); its
// outputs go to the sinks (sink.h). It never reads a clock: commands carry their time. Same
// commands, same outputs, byte for byte; Snapshot() and Restore() let a run stop and continue
// (or branch) with the same outputs as an uninterrupted run.
//
// Memory is bounded by what is live: finished workloads leave the engine once the sinks have
// their final status; events and run records are not kept.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine/command.h"
#include "core/engine/engine_options.h"
#include "core/engine/sink.h"
#include "core/engine/types.h"
#include "core/placement/node_state.h"

namespace arbiter::engine {

class State;
struct EngineCapture;  // snapshot.cc

// A node as drivers see it.
struct NodeStatus {
  NodeId id{};
  std::string name;
  int64_t order = 0;
  bool schedulable = true;
  std::string gpu_model;
  int64_t cpu_capacity_milli = 0;  // allocatable × overcommit
  int64_t cpu_used_milli = 0;
  int64_t mem_capacity_bytes = 0;
  int64_t mem_used_bytes = 0;
  std::vector<int32_t> gpu_used_milli;                  // per device
  std::vector<WorkloadId> workloads;                    // running and terminating, in bind order
  std::vector<placement::GpuAssignment> workload_gpus;  // each one's devices (as `workloads`)
  Node spec;                                            // as last upserted
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The only mutator. OK, or why the command was refused (nothing changed then).
  Status Apply(const Command& command);
  Status Apply(Command&& command);  // the same, moving the command's objects in

  // Where outputs go (not owned; nullptr drops them). Not part of snapshots.
  void SetSinks(EventSink* events, RunSink* runs);

  // ------------------------------------------------------------ queries (never change anything)
  Millis now() const;
  bool started() const;  // a Tick has run
  // When a Tick is due although no command arrives (a workload protected by minRuntime comes of
  // age and a blocked preemption may become possible).
  std::optional<Millis> NextWakeup() const;
  // The id the next accepted SubmitPod gets.
  WorkloadId next_workload_id() const;
  std::optional<WorkloadId> Find(std::string_view namespace_, std::string_view name) const;
  // Why SubmitPod of `pod` would reject it now for quota or QoS alone: a QoS whose
  // spec.namespaces leaves the pod's namespace out, a ResourceQuota of its namespace that it can
  // never fit (a container without a request or limit the quota needs, or a request above
  // `hard`; in Kubernetes' words alone), or its namespace at PoolPolicy
  // quota.maxSubmittedPerNamespace. None otherwise, or when SubmitPod would reject it first for
  // another reason (an unknown class or QoS, a LimitRange). A daemon refuses such a create as
  // kube-apiserver's quota admission does (403).
  std::optional<std::string> NeverAdmissible(const Pod& pod) const;
  // A live workload's status now (Workloads: as of `as_of` >= now(), its pending spell counted up
  // to then).
  std::optional<WorkloadStatus> Get(WorkloadId id) const;
  std::vector<WorkloadStatus> Workloads(
      std::optional<Millis> as_of = std::nullopt) const;  // live, by id
  // The workloads holding node `node` (running and terminating), in bind order, with their status
  // as Workloads gives it; none for a node that is not present. O(the node's workloads): what a
  // per-node endpoint (the virtual kubelet's metrics) asks for.
  std::vector<WorkloadStatus> WorkloadsOn(std::string_view node) const;
  // The GPU devices a live workload holds on its node (NodeStatus::workload_gpus' entry for it):
  // empty devices when it holds none or no node; nullopt for an id that is not live. O(1).
  std::optional<placement::GpuAssignment> GpusOf(WorkloadId id) const;
  size_t live_workloads() const;
  bool has_pending() const;  // some workload waits in the queue
  // The runs of the workloads holding a node, as if they ended at `until` (>= now()), by id: what
  // a simulation bills at its end.
  std::vector<RunRecord> OpenRuns(Millis until) const;
  std::vector<NodeStatus> Nodes() const;  // present nodes in node order
  // The same without their workloads (`workloads`, `workload_gpus` left empty): O(nodes), not
  // O(the workloads they hold); what a sample of the pool's totals asks for (the dashboard's).
  std::vector<NodeStatus> NodeTotals() const;
  const PoolPolicy& policy() const;  // effective: PoolPolicy (or defaults) with the override
  const std::vector<PriceBook>& price_books() const;
  std::vector<ElasticQuota> elastic_quotas() const;  // as upserted, in upsert order
  // Usage of every flavor of every ElasticQuota with spec.flavors (charged plus held).
  struct FlavorUsage {
    std::string namespace_, flavor;
    ResourceList used, min;
    std::optional<ResourceList> max;
  };
  std::vector<FlavorUsage> flavor_usages() const;
  // Quota usage as the engine charges it (types.h): every ResourceQuota, in the order of its first
  // upsert; every ElasticQuota, by namespace; and what the workloads holding resources (running
  // and terminating) request, by namespace. Adapters show these; they never re-derive them.
  std::vector<ResourceQuotaUsage> resource_quota_usages() const;
  std::vector<ElasticQuotaUsage> elastic_quota_usages() const;
  std::map<std::string, ResourceList> namespace_usages() const;
  // The same for namespace `ns` alone, O(its quotas) where the lists above are O(every quota):
  // its ResourceQuotas (in that order), and its ElasticQuota (nullopt: none) with `lent` left
  // empty, since that is the cohort's borrowing attributed across its members (O(cohort)). What
  // a status written at each create needs (the daemon's quota statuses).
  std::vector<ResourceQuotaUsage> resource_quota_usages(const std::string& ns) const;
  std::optional<ElasticQuotaUsage> elastic_quota_usage_without_lent(const std::string& ns) const;
  const EngineOptions& options() const;

  // Checks every invariant: nodes within capacity × overcommit, GPUs never overcommitted, node
  // accounting equal to its workloads, quotas within their hard limits (or, after a runtime
  // change lowered one, never above what they were then), cohorts within their total min, each
  // running workload on exactly one node, the queue holding exactly the pending workloads.
  // Returns the first violation.
  Status CheckInvariants() const;

  // ------------------------------------------------------------ snapshots (docs/snapshot.md)
  // The full state as bytes (versioned, deterministic: the same state gives the same bytes):
  // EncodeCapture(*Capture()).
  std::string Snapshot() const;
  // A snapshot in two steps, so that a daemon holds its lock only for the cheap one (issue 27).
  // Capture() takes what a snapshot saves, sharing nothing the engine changes later: the workload
  // table frozen (its chunks shared, O(live / 1,024) pointers; the engine copies a chunk before it
  // next touches it, slot_table.h), policy objects, quota books and nodes' usage copied, and the
  // slot lists of nodes and queue (4 bytes a running workload); no record is copied, nothing is
  // encoded. Taken inside Apply (from a sink's callback) it copies the table instead.
  // EncodeCapture() makes the snapshot's bytes from it (a pure function of the capture,
  // thread-safe: the capture is immutable) while the engine goes on; they are the bytes
  // Snapshot() would have given when the capture was taken.
  std::shared_ptr<const EngineCapture> Capture() const;
  static std::string EncodeCapture(const EngineCapture& capture);
  // An engine in the snapshot's state. Fails with a clear message on bytes that are not an engine
  // snapshot, are corrupt, or come from another format version. `placement` branches the run
  // under another placement policy (EngineOptions::placement; Random starts its stream from the
  // seed); `check_invariants` replaces the snapshot's setting.
  struct RestoreOptions {
    std::optional<PlacementPolicyName> placement;
    std::optional<bool> check_invariants;
  };
  static Result<std::unique_ptr<Engine>> Restore(std::string_view snapshot,
                                                 const RestoreOptions& options);
  static Result<std::unique_ptr<Engine>> Restore(std::string_view snapshot) {
    return Restore(snapshot, {});
  }
  // 2: ElasticQuota preemption, fairSharing, gangs, reservations; 3: resource flavors, the
  // Terminating scope of counted pods, pod group timeouts; 4: PoolPolicy spec.latency and the
  // workloads' Slurm clean-up and eligibility times; 5: PoolPolicy scheduling.backfillDepth and
  // fairSharing.preemptionStrategies; 6: node taints, pod tolerations and node affinity; 7: pod
  // affinity, anti-affinity and topology spread constraints, PoolPolicy spec.latency.schedInterval
  // 8: the workloads' backfill reservation as fields (WorkloadStatus::reservation); 9: PoolPolicy
  // preemption.victimOrder LeastLostWork, the workloads' checkpoint interval and shutdown time
  // 10: PoolPolicy preemption.requeuingStrategy; 11: its immediateRequeues, the workloads' time
  // held out of the queue (WorkloadStatus::held_total); 12: a pending workload's bound node
  // (SubmitPod::node); 13: no new field, the usage of a ResourceQuota scoped to
  // CrossNamespacePodAffinity counts only the pods with a cross-namespace pod (anti-)affinity term
  // (an older file's counted every pod: recounted at Restore); 14: QoS spec.namespaces; 15:
  // PoolPolicy quota.maxSubmittedPerNamespace (2 to 14 are still read)
  static constexpr uint32_t kSnapshotVersion = 15;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace arbiter::engine
