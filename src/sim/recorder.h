// What a run of the engine produced, as the reports need it: every workload's final status,
// the events with their messages completed by the work model, the run records with the work lost;
// and the sink that collects them while it drives the work model's timers.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/sink.h"
#include "sim/work_model.h"

namespace arbiter::sim {

// A workload as the reports see it (its final status, or its status at the end of the run).
struct SimWorkload {
  std::string key;  // namespace/name
  std::string namespace_;
  int32_t priority = 0;
  std::string priority_class;
  std::string qos;
  engine::Phase phase = engine::Phase::kPending;
  std::string last_node;
  bool on_node = false;  // holds a node at the end (its run is among the open runs)
  Millis submit_time = 0;
  Millis first_start = -1;
  Millis finish_time = -1;
  int preemptions = 0;
  std::string message;
  ResourceList requests;  // effective, after LimitRange defaults
  ResourceList usage;     // mean actual usage (arbiter.dev/usage, default: requests)
  Millis pending_total = 0;
  bool borrowed = false;
  std::string flavor;   // the ResourceFlavor it was last admitted on, "" none
  Millis progress = 0;  // saved progress (work model)
  int64_t lost_gpu_milli_ms = 0;
  int64_t lost_gpu_milli_ms_node_removed = 0;
};

// A stored event: the engine's event with its message completed by the work model.
struct SimEvent {
  Millis time = 0;
  engine::EventType type = engine::EventType::kSubmitted;
  engine::WorkloadId workload = engine::kNoWorkload;
  std::string node;
  std::string by;
  std::string_view reason;  // a constant (engine/reasons.h)
  std::string message;
  std::string Message() const {
    return type == engine::EventType::kScheduled && message.empty() ? "bound to " + node : message;
  }
};

struct SimResult {
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
  std::vector<Work> works;                         // by WorkloadId
  std::vector<std::optional<ResourceList>> usage;  // by WorkloadId: arbiter.dev/usage
  std::map<uint64_t, std::string> stop_text;       // the work model's facts of a pending stop

 private:
  WorkTimers* timers_;
  bool keep_;
};

}  // namespace arbiter::sim
