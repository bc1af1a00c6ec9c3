// The scheduling engine: one deterministic, event-driven state machine.
//
// It admits workloads (PriorityClass / QoS resolution, LimitRange defaults and checks,
// ResourceQuota, ElasticQuota with borrowing and reclaim), places them on nodes through a
// placement policy, and preempts in an orderly way (Kubernetes reprieve or Slurm QoS order,
// PodDisruptionBudgets, grace and shutdown times, checkpoints, requeue or cancel).
//
// It never reads a clock: every entry point takes `now`, which must not go backwards. The driver
// (simulator or daemon) calls, for each instant t in order:
//   AdvanceTo(t);  Submit(...) for arrivals at t;  Schedule(t);
// and repeats while NextTimer() is due. Same calls, same events, byte for byte.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/quota_book.h"
#include "core/engine/types.h"
#include "core/objects.h"
#include "core/placement/policy.h"

namespace arbiter::engine {

struct EngineOptions {
  uint64_t seed = 0;
  bool check_invariants = false;  // check after every step; a violation aborts (CHECK)
  // Placement override (the trace simulator's --policy); PoolPolicy otherwise.
  std::optional<PlacementPolicyName> placement;
};

class Engine {
 public:
  // Builds the engine from the cluster part of the manifests (nodes, classes, quotas, limit
  // ranges, PDBs, policies). The ManifestSet must outlive the engine. Pods are not submitted.
  static Result<std::unique_ptr<Engine>> Create(const ManifestSet& manifests, EngineOptions options);

  // Admits a pod (resolution, defaults, quota pre-checks). It joins the queue or is Rejected.
  size_t Submit(const Pod& pod, Millis now);
  // Processes timers (completions, victim exits) due at or before `now`.
  void AdvanceTo(Millis now);
  // One scheduling cycle over the queue at `now`.
  void Schedule(Millis now);
  // When the next timer is due, if any.
  std::optional<Millis> NextTimer() const;
  // Closes the books at the end of a simulation: running workloads get a run record ending now.
  void Finish(Millis now);

  // Room for this many workloads in total (a simulation knows its pod count): avoids growing,
  // and so copying, the workload table while a million pods arrive.
  void Reserve(size_t workloads);

  // Adds a node to the pool (a NodeAdded event once the engine runs). Nodes with
  // sim.add_time > 0 are not added by Create: the driver adds them at that time.
  void AddNode(const Node& node, Millis now);
  // Removes a node (a NodeRemoved event). Its workloads stop at once, without a grace period,
  // keep their last periodic checkpoint and meet their preemption fate (Requeue or Cancel).
  Status RemoveNode(const std::string& name, Millis now);

  // Deques: a run with millions of events never copies them to grow.
  const std::deque<Event>& events() const { return events_; }
  const std::vector<Workload>& workloads() const { return workloads_; }
  const std::vector<placement::NodeState>& nodes() const { return nodes_; }
  const std::deque<RunRecord>& runs() const { return runs_; }
  const PoolPolicy& policy() const { return policy_; }
  Millis now() const { return now_; }

  // Checks every invariant: nodes within capacity × overcommit, GPUs never overcommitted,
  // quotas within hard limits, cohorts within their total min, each running workload on exactly
  // one node. Returns the first violation.
  Status CheckInvariants() const;

 private:
  Engine(const ManifestSet& m, EngineOptions o);
  Status Init();

  struct Timer {
    Millis time;
    uint64_t seq;
    size_t workload;
    uint64_t generation;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct QueueOrder {
    const std::vector<Workload>* w;
    bool operator()(size_t a, size_t b) const;
  };

  // `reason` is a string constant (events keep a view of it).
  void Emit(EventType type, const Workload& w, std::string node, const char* reason, std::string message,
            std::string by = "");
  void Reject(Workload& w, const char* reason, const std::string& message);
  void SetPending(Workload& w, EventType type, const char* reason, const std::string& message,
                  const std::string& dedupe = "");
  void DropNomination(Workload& w);
  bool TryAdmitQuota(Workload& w);
  bool TryPlace(Workload& w);
  bool TryPreempt(Workload& w, std::string* why);
  bool TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why);
  // Whether `w` would fit on node `i` once `gone` and the node's terminating workloads have
  // exited (room held for nominated workloads of equal or higher priority stays held).
  bool FitsOnceGone(size_t i, const Workload& w, const std::vector<size_t>& gone) const;
  void Bind(Workload& w, size_t node, const placement::GpuAssignment& gpus);
  void StopVictim(Workload& victim, const Workload& preemptor, EventType kind);
  void OnTimer(const Timer& t);
  void Exit(Workload& w, bool emit_terminated = true);
  void EmitNode(EventType type, const std::string& node, std::string message);
  void Release(Workload& w);
  RunRecord MakeRun(const Workload& w, size_t node) const;  // run record ending now
  void AddTimer(Millis at, Workload& w);
  bool NodeSelectable(const placement::NodeState& n, const Workload& w) const;
  bool FitsRespectingNominated(size_t node, const Workload& w) const;
  std::string NoFitMessage(const Workload& w) const;
  bool MayPreempt(const Workload& preemptor, const Workload& victim, bool ignore_min_runtime = false) const;
  std::string ShapeKey(const Workload& w) const;
  size_t NumFeasibleNodesToFind() const;
  size_t NumPreemptionCandidates() const;
  struct PdbState {
    int64_t allowed = 0;  // disruptions still allowed now
  };
  void ComputePdbState(std::vector<PdbState>* out) const;
  // Extra violations caused by taking `victims` down, given `state` (and names of the PDBs).
  int CountViolations(const std::vector<size_t>& victims, const std::vector<PdbState>& state,
                      std::vector<std::string>* names) const;

  const ManifestSet& m_;
  EngineOptions options_;
  PoolPolicy policy_;
  std::unique_ptr<placement::PlacementPolicy> placer_;
  std::vector<placement::NodeState> nodes_;
  std::deque<std::map<std::string, std::string>> node_labels_;  // with kubernetes.io/hostname
  std::vector<std::vector<size_t>> node_workloads_;  // running + terminating per node
  std::vector<std::vector<size_t>> nominated_;       // preemptors nominated per node
  std::vector<Workload> workloads_;
  std::deque<Event> events_;
  std::deque<RunRecord> runs_;
  std::vector<uint64_t> generation_;
  mutable std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t timer_seq_ = 0;
  // Instants when a blocked preemption may become possible (a victim reaches minRuntime).
  std::priority_queue<Millis, std::vector<Millis>, std::greater<Millis>> wakeups_;
  // Pending workloads, one ordered set per preemption class (same shape, priority, selector,
  // namespace, QoS, preemption policy): members of a class succeed or fail alike, so a cycle
  // walks the classes' heads in queue order and stops a class at its first failure.
  std::map<uint32_t, std::set<size_t, QueueOrder>> pending_;
  void PendingInsert(size_t id);
  void PendingErase(size_t id);
  bool IsPending(size_t id) const;
  // Outcome of one attempt in a cycle: true when the class may go on (placed, preempting,
  // reclaiming, rejected, skipped), false when every member of its class would fail too.
  bool Attempt(Workload& w, std::unordered_map<uint32_t, std::string>& no_fit,
               std::unordered_map<uint32_t, std::pair<std::string, std::string>>& no_preempt);
  std::unordered_map<uint32_t, std::string> class_reason_;
  // Preemption memo: a node where a class found no acceptable plan stays so until something on
  // that node changes (bind, release, a victim stopping, a nomination) or the global epoch moves
  // (borrowed flags, nodes added/removed). Not used with PDBs or minRuntime (time/PDB dependent).
  std::vector<uint64_t> node_epoch_;
  uint64_t global_epoch_ = 0;
  struct Memo {
    uint64_t global = 0;
    std::vector<uint64_t> node;  // node_epoch_ + 1 when the node had no plan
  };
  std::unordered_map<uint32_t, Memo> preempt_memo_;
  void Touch(size_t node) { if (node < node_epoch_.size()) ++node_epoch_[node]; }  // class -> stable key of last failure
  std::vector<size_t> fresh_;  // submitted since the last cycle
  bool freed_ = true;          // capacity or quota was released since the last cycle
  QuotaBook quota_;
  std::map<std::string, size_t> namespace_ids_;
  std::unordered_map<std::string, uint32_t> class_ids_;  // interned shape / preemption classes
  std::map<size_t, std::vector<size_t>> borrowed_by_ns_;  // namespace id -> running borrowers
  size_t next_start_node_ = 0;     // kube-scheduler's rotating start index
  size_t next_preempt_node_ = 0;   // same, for preemption dry runs
  std::vector<std::vector<size_t>> pdbs_of_;  // workload id -> matching PDB indices
  std::vector<size_t> pdb_members_;          // workloads with any matching PDB
  std::map<std::string, const PriorityClass*> classes_;
  const PriorityClass* global_default_ = nullptr;
  std::map<std::string, const QoS*> qos_;
  std::map<std::string, std::vector<const LimitRange*>> limit_ranges_;  // namespace -> by name
  Millis now_ = 0;
};

}  // namespace arbiter::engine
