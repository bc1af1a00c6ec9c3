// A pod's scheduling status and its Events, from the engine's facts: the one derivation that
// `arbiter serve` (server/state/pod_status.cc: the object in memory, core/v1 Events) and
// `arbiter scheduler` (kubesched: a strategic-merge patch of pods/status, events.k8s.io/v1
// Events) share; each keeps only its wire format. Pure and JSON-free: WorkloadStatus fields,
// event kinds and reason codes in, plain values out. The engine's text is carried, never parsed.
//
// The PodScheduled reason of a pending pod is the engine's reason code (docs/kubernetes.md,
// "Why a pod waits"): Unschedulable when no node fits -- what kube-scheduler writes, and what
// cluster-autoscaler and Karpenter scale up for -- and QuotaExceeded, Reclaiming,
// WaitingForVictims, ... when more nodes would not help; the same reasons `arbiter sim` reports.
// The engine's text is the message.
#pragma once

#include <optional>
#include <string>

#include "core/engine/types.h"

namespace arbiter::driver {

// The PodScheduled reason of a pod that waits with no engine reason: one the front end did not
// give the engine (refused by the loader, waiting for its PodGroup), or one not yet tried.
inline constexpr const char* kUnschedulable = "Unschedulable";

// A pod condition without its times (the front end keeps the transition time).
struct PodCondition {
  bool status = false;  // True / False
  std::string reason;   // "" none
  std::string message;  // "" none
  bool operator==(const PodCondition&) const = default;
};

// What a pod's scheduling status is.
struct PodScheduling {
  // spec.nodeName is `node`: while it holds a node, and once it finished after running. A
  // requeued pod (its run preempted or reclaimed, waiting again) is unbound.
  bool bound = false;
  std::string node;            // spec.nodeName while bound ("" unbound)
  bool on_node = false;        // holds a node now (running, or terminating)
  bool requeued = false;       // ran, was stopped, waits again
  PodCondition scheduled;      // PodScheduled: True once bound; False with the pending reason
                               // (rejected: the rejection's reason code)
  std::string nominated_node;  // status.nominatedNodeName, "" none
  std::string reason;          // status.reason: Preempted, Rejected, "" none
  std::string message;         // status.message: the engine's text unless running, "" none
  bool operator==(const PodScheduling&) const = default;
};

PodScheduling PodSchedulingOf(const engine::WorkloadStatus& s);

// DisruptionTarget of a pod whose run the event stops for another workload (Preempted,
// Reclaimed): True, reason PreemptionByScheduler, the engine's message. None for other events.
std::optional<PodCondition> DisruptionTarget(const engine::Event& e);

// An engine event as a Kubernetes Event.
struct PodEvent {
  enum class Regarding { kPod, kNode };
  Regarding regarding = Regarding::kPod;  // the workload's pod, or (pool events) the node
  bool warning = false;                   // type Warning, else Normal
  std::string reason;  // the engine event's kind: Scheduled, FailedScheduling, QuotaExceeded, ...
  std::string action;  // events.k8s.io/v1 action: Scheduling, Binding, Preempting, ...
  std::string note;    // the engine's text; Scheduled: "Successfully assigned NS/NAME to NODE"
  std::string engine_reason;  // the engine's reason code (Unschedulable, PDB, ...), "" none
  std::string related;        // the preemptor pod "NS/NAME" (Preempted, Reclaimed), "" none
  bool operator==(const PodEvent&) const = default;
};

// The Event for an engine event about the pod `ns`/`name` (or a node, for pool events); none for
// kinds Kubernetes has no counterpart of (Submitted).
std::optional<PodEvent> PodEventOf(const engine::Event& e, const std::string& ns,
                                   const std::string& name);

}  // namespace arbiter::driver
