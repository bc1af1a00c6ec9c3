#include "driver/pod_scheduling.h"

namespace arbiter::driver {

using engine::EventType;
using engine::Phase;

PodScheduling PodSchedulingOf(const engine::WorkloadStatus& s) {
  PodScheduling p;
  p.on_node = !s.node.empty();
  const bool ran = s.first_start >= 0;
  p.bound = p.on_node || (engine::IsFinal(s.phase) && ran);
  p.requeued = !p.bound && ran && s.phase == Phase::kPending;
  if (p.bound) p.node = s.last_node;
  p.scheduled.status = p.bound;
  if (!p.bound) {
    // While pending, the engine's reason code; a pod not yet tried has none: Unschedulable.
    // Rejected at admission: the code of its rejection (QuotaExceeded, LimitRange, ...), as
    // `arbiter sim` reports it.
    if (s.phase == Phase::kPending || s.phase == Phase::kRejected)
      p.scheduled.reason = s.reason.empty() ? kUnschedulable : s.reason;
    p.scheduled.message = s.message;
  }
  p.nominated_node = s.nominated_node;
  if (s.phase == Phase::kRejected) p.reason = "Rejected";
  if (s.phase == Phase::kPreempted) p.reason = "Preempted";
  if (s.phase != Phase::kRunning) p.message = s.message;
  return p;
}

std::optional<PodCondition> DisruptionTarget(const engine::Event& e) {
  if (e.type != EventType::kPreempted && e.type != EventType::kReclaimed) return std::nullopt;
  return PodCondition{true, "PreemptionByScheduler", e.Message()};
}

namespace pod_scheduling {

// events.k8s.io/v1's action: what the scheduler was doing (kube-scheduler's verbs where it has
// the event: Scheduling, Binding, Preempting).
const char* Action(EventType t) {
  switch (t) {
    case EventType::kScheduled:
      return "Binding";
    case EventType::kPreempting:
    case EventType::kPreempted:
    case EventType::kReclaimed:
      return "Preempting";
    case EventType::kTerminated:
    case EventType::kDeleted:
      return "Terminating";
    case EventType::kCompleted:
    case EventType::kFailed:
      return "Finishing";
    case EventType::kNodeAdded:
    case EventType::kNodeRemoved:
      return "Registering";
    default:  // Submitted, FailedScheduling, QuotaExceeded, Rejected, Requeued, Cancelled, Borrowed
      return "Scheduling";
  }
}

bool Warning(EventType t) {
  return t == EventType::kFailedScheduling || t == EventType::kQuotaExceeded ||
         t == EventType::kRejected || t == EventType::kFailed;
}

}  // namespace pod_scheduling

std::optional<PodEvent> PodEventOf(const engine::Event& e, const std::string& ns,
                                   const std::string& name) {
  if (e.type == EventType::kSubmitted) return std::nullopt;
  PodEvent ev;
  ev.regarding =
      e.workload == engine::kNoWorkload ? PodEvent::Regarding::kNode : PodEvent::Regarding::kPod;
  ev.warning = pod_scheduling::Warning(e.type);
  ev.reason = engine::ToString(e.type);
  ev.action = pod_scheduling::Action(e.type);
  ev.note = e.type == EventType::kScheduled
                ? "Successfully assigned " + ns + "/" + name + " to " + e.node
                : e.Message();
  ev.engine_reason = std::string(e.reason);
  // The preemptor, when it is a pod ("NS/NAME"; not "node/NAME", a NoExecute taint's eviction).
  if (const size_t slash = e.by.find('/');
      slash != std::string::npos && e.by.compare(0, slash, "node") != 0)
    ev.related = e.by;
  return ev;
}

}  // namespace arbiter::driver
