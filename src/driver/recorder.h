// What a run of the engine produced, as the reports need it: every workload's final status,
// the events with their messages completed by the work model, the run records with the work lost;
// and the sink that collects them while it drives the work model's timers.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/sink.h"
#include "core/engine/slot_table.h"
#include "driver/work_model.h"

namespace arbiter::driver {

// A workload as the reports see it (its final status, or its status at the end of the run).
// SimWorkload and SimEvent view texts kept in their SimResult's `names`: a copy taken out of a
// result must not outlive it (copy the result, which shares the pool, or the texts themselves).
struct SimWorkload {
  // The texts that repeat are views into SimResult::names (the key is the workload's own).
  std::string key;  // namespace/name
  std::string_view namespace_;
  int32_t priority = 0;
  std::string_view priority_class;
  std::string_view qos;
  engine::Phase phase = engine::Phase::kPending;
  std::string_view last_node;
  bool on_node = false;  // holds a node at the end (its run is among the open runs)
  Millis submit_time = 0;
  Millis first_start = -1;
  Millis finish_time = -1;
  int preemptions = 0;
  std::string_view message;
  ResourceList requests;  // effective, after LimitRange defaults
  // Mean actual usage (arbiter.dev/usage; without it, the requests). Held only where it differs
  // from the requests: most pods declare none, and a million copies of their requests were
  // ~130 MB of a million-pod run's peak.
  std::optional<ResourceList> usage_override;
  const ResourceList& Usage() const { return usage_override ? *usage_override : requests; }
  void SetUsage(ResourceList u) {
    if (u == requests)
      usage_override.reset();
    else
      usage_override = std::move(u);
  }
  Millis pending_total = 0;
  Millis held_total = 0;  // of pending_total, held out of the queue (requeue back-off)
  bool borrowed = false;
  std::string_view flavor;  // the ResourceFlavor it was last admitted on, "" none
  Millis progress = 0;      // saved progress (work model)
  int64_t lost_gpu_milli_ms = 0;
  int64_t lost_gpu_milli_ms_node_removed = 0;
};

// The texts that a run's results repeat (nodes, preemptors, namespaces, messages), each stored
// once: events and workloads hold views. A view stays valid while the pool lives (the strings
// are in a deque, never moved).
class NamePool {
 public:
  NamePool() = default;
  NamePool(const NamePool&) = delete;  // a copy's index would view the original's strings
  NamePool& operator=(const NamePool&) = delete;
  std::string_view Intern(std::string_view name);
  size_t size() const { return names_.size(); }

 private:
  std::deque<std::string> names_;
  std::unordered_set<std::string_view> index_;
};

// A stored event: the engine's event with its message completed by the work model. 88 bytes
// (136 with its texts as strings: a million-pod run keeps three million events, most of them
// with an empty message).
struct SimEvent {
  Millis time = 0;
  engine::EventType type = engine::EventType::kSubmitted;
  engine::WorkloadId workload = engine::kNoWorkload;
  std::string_view node;     // SimResult::names
  std::string_view by;       // SimResult::names
  std::string_view reason;   // a constant (engine/reasons.h)
  std::string_view message;  // SimResult::names
  std::string Message() const {
    return type == engine::EventType::kScheduled && message.empty()
               ? "bound to " + std::string(node)
               : std::string(message);
  }
};

struct SimResult {
  // Shared by copies of the result: the events' names point into it.
  std::shared_ptr<NamePool> names = std::make_shared<NamePool>();
  std::vector<SimWorkload> workload_list;    // by WorkloadId: submission order
  std::deque<SimEvent> event_list;           // deques: millions of events are never copied to grow
  std::deque<engine::RunRecord> run_list;    // closed runs, then the open runs closed at the end
  PoolPolicy pool_policy;                    // the effective policy at the end
  std::vector<ElasticQuota> elastic_quotas;  // the engine's at the end (fair shares)
  std::vector<engine::Engine::FlavorUsage> flavor_usage;  // the engine's at the end (flavor quotas)
  Millis end_time = 0;

  const std::vector<SimWorkload>& workloads() const { return workload_list; }
  const std::deque<SimEvent>& events() const { return event_list; }
  const std::deque<engine::RunRecord>& runs() const { return run_list; }
  const PoolPolicy& policy() const { return pool_policy; }
};

// Receives the engine's outputs: events (completed with the work model's facts), run records
// (with the work lost), final statuses; and drives the work model's timers from them: a run that
// starts arms its completion, a SIGTERM arms the exit. Without `keep`, only the work model is
// driven (nothing is stored: trace replay at scale).
class Recorder final : public engine::EventSink, public engine::RunSink {
 public:
  Recorder(WorkTimers* timers, bool keep) : timers_(timers), keep_(keep) {}

  // Before each SubmitPod, in submission order (ids are dense from 0).
  void Submitted(const WorkSpec& spec, std::optional<ResourceList> usage);

  void OnEvent(const engine::Event& e) override;
  void OnRun(const engine::RunRecord& run) override;
  void OnFinished(const engine::WorkloadStatus& s) override { Record(s); }
  bool WantsFinalStatus() const override { return keep_; }
  // Stores a workload's status (final, or at the end of the run).
  void Record(const engine::WorkloadStatus& s);

  SimResult result;
  // By WorkloadId: of every workload submitted. Chunked (engine::SlotTable): grows without moving
  // and a daemon's snapshot takes it in O(chunks) (Freeze).
  engine::SlotTable<Work> works;
  // The code a workload's run exits with when its duration is done (arbiter.dev/exit-code).
  int32_t ExitCode(engine::WorkloadId id) const {
    const uint64_t v = engine::Value(id);
    return v < works.size() ? works[v].spec.exit_code : 0;
  }
  std::vector<std::optional<ResourceList>> usage;  // by WorkloadId: arbiter.dev/usage
  std::map<uint64_t, std::string> stop_text;       // the work model's facts of a pending stop

 private:
  WorkTimers* timers_;
  bool keep_;
};

}  // namespace arbiter::driver
