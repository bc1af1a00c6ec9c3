// Values the engine exposes: workload state and the event log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/objects.h"
#include "core/placement/node_state.h"

namespace arbiter::engine {

enum class Phase { kPending, kRunning, kTerminating, kSucceeded, kPreempted, kRejected };
const char* ToString(Phase p);

enum class EventType {
  kSubmitted,
  kQuotaExceeded,
  kFailedScheduling,
  kRejected,
  kScheduled,
  kPreempting,
  kPreempted,
  kTerminated,
  kRequeued,
  kCancelled,
  kBorrowed,
  kReclaimed,
  kCompleted,
  kNodeAdded,    // pool events: `workload` is empty, `node` names the node
  kNodeRemoved,
};
const char* ToString(EventType t);

// Event::workload of pool events (NodeAdded, NodeRemoved): no workload.
inline constexpr size_t kNoWorkload = static_cast<size_t>(-1);

// Kept small: a simulation of a million workloads holds several million of these.
struct Event {
  Millis time = 0;
  EventType type = EventType::kSubmitted;
  size_t workload = 0;  // index into Engine::workloads() (its `key` is namespace/name)
  std::string node;
  std::string by;           // the preemptor, on Preempted / Reclaimed
  std::string_view reason;  // machine-readable reason (a constant: "Unschedulable", "PDB", ...)
  std::string message;      // empty on Scheduled: Message() gives "bound to <node>"
  std::string Message() const { return type == EventType::kScheduled && message.empty() ? "bound to " + node : message; }
};

// One placement of a workload, from bind to exit (what billing meters on the request track).
// Its workload's name, namespace, priority, requests and usage (which a run never changes) are in
// Engine::workloads()[workload]: a million runs do not copy them.
struct RunRecord {
  size_t workload = 0;  // index into Engine::workloads()
  std::string node;
  std::string gpu_product;
  int64_t gpu_replicas = 1;  // node label nvidia.com/gpu.replicas: a GPU is 1/N of a card
  Millis start = 0;
  Millis end = 0;
  // Work lost when this run was preempted: progress between `lost_from` and `lost_to` (run-time
  // instants) was not saved. Empty when nothing was lost.
  std::optional<Millis> lost_from;
  Millis lost_to = 0;
  std::string preemptor;
};

// A workload as the engine tracks it. Read-only for callers.
struct Workload {
  // Hot fields first: preemption dry runs read these for thousands of workloads per decision.
  size_t id = 0;
  int32_t priority = 0;
  Phase phase = Phase::kPending;
  Millis run_start = 0;  // current run's start
  size_t namespace_id = 0;
  const QoS* qos = nullptr;
  bool elastic = false;   // its namespace has an ElasticQuota
  bool has_quota = false;  // its namespace has a ResourceQuota or an ElasticQuota
  bool borrowed = false;  // admitted on quota borrowed from the cohort
  bool quota_charged = false;
  placement::GpuAssignment gpus;
  placement::PodShape shape;
  std::optional<size_t> node;

  std::string key;  // namespace/name
  std::string namespace_;
  std::string name;
  const Pod* pod = nullptr;
  std::string priority_class;  // resolved name, "" if none
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  ResourceList requests;  // effective, after LimitRange defaults
  ResourceList limits;
  ResourceList usage;  // mean actual usage
  Millis grace = 30000;
  Millis shutdown = 0;
  std::optional<Millis> checkpoint_interval;
  std::optional<Millis> duration;  // total work needed
  PreemptMode preempt_mode = PreemptMode::kRequeue;

  Millis submit_time = 0;
  Millis progress = 0;      // saved progress (work done that survives a requeue)
  Millis first_start = -1;  // first time it ever started
  Millis finish_time = -1;
  Millis pending_since = 0;
  Millis pending_total = 0;  // accumulated time spent Pending
  std::string last_node;     // where it runs or last ran
  int preemptions = 0;
  std::optional<size_t> nominated_node;
  std::vector<size_t> waiting_for;  // victims still terminating for this preemptor
  std::string message;              // last reason, verbatim
  std::vector<std::string> reason_keys;  // kinds of pending reason already reported this spell
  int last_event_type = -1;
  uint32_t shape_class = 0;    // interned (shape, priority, nodeSelector)
  uint32_t preempt_class = 0;  // interned (shape class, namespace, QoS, preemption policy)
  // Set while terminating.
  Millis stop_time = 0;  // SIGTERM
  Millis exit_time = 0;
  Millis progress_after_exit = 0;
  std::string preempted_by;
  std::optional<size_t> preemptor_id;  // who waits for this victim to exit
  Millis lost_work = 0;  // run time lost to the last preemption
  int64_t lost_gpu_milli_ms = 0;
  int64_t lost_gpu_milli_ms_node_removed = 0;  // run time lost when its node was removed
};

}  // namespace arbiter::engine
