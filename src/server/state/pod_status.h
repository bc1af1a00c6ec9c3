// Kubernetes views of the engine's outputs: a Pod's `status` from its WorkloadStatus, and core/v1
// Events from engine events. Pure (times are passed in, Unix milliseconds).
//
// Phases: Pending; Running (running or terminating: it holds its node); Succeeded; Failed
// (exit code != 0, Rejected at admission, or Cancelled after preemption, with status.reason
// Rejected / Preempted). Conditions: PodScheduled (False while pending, with the engine's
// reason -- Unschedulable, QuotaExceeded, WaitingForVictims... -- and its text as message; True
// once bound; False again while a requeued pod waits, then with no spec.nodeName), Ready, and
// DisruptionTarget (True, reason PreemptionByScheduler, once the pod was preempted or reclaimed;
// kept afterwards).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/duration.h"
#include "core/engine/types.h"
#include "driver/pod_scheduling.h"

namespace arbiter::server {

using Json = nlohmann::json;

// RFC 3339 in whole seconds, as Kubernetes' metav1.Time ("2026-12-01T10:24:02Z").
std::string KubeTime(Millis unix_ms);

// Kubernetes' QoS class of a pod spec (GetPodQOS): BestEffort without cpu/memory requests or
// limits; Guaranteed when every container (init containers too) limits cpu and memory and the
// requests equal the limits (a missing request is its limit, as API defaulting makes it);
// Burstable otherwise. LimitRange defaults are not in the object and do not count.
std::string QosClass(const Json& spec);

// The pod's new `status` (and spec.nodeName) from the engine's view, as driver::PodSchedulingOf
// says it. `pod` is the stored object (its old status keeps condition transition times and a
// DisruptionTarget); `disruption` is the DisruptionTarget of a Preempted / Reclaimed event seen
// now (driver::DisruptionTarget), null if none.
void SetPodStatus(Json& pod, const engine::WorkloadStatus& s,
                  const driver::PodCondition* disruption, Millis now);

// The core/v1 Event for an engine event about `pod` (kind Pod) or a node (kind Node), as
// driver::PodEventOf says it, or null for engine events Kubernetes has no counterpart of
// (Submitted).
// The engine's reason code rides in annotation arbiter.dev/reason (Event.reason is the event's
// kind, as Kubernetes has it); a preemptor ("NS/NAME") is the Event's `related` object.
Json KubeEvent(const engine::Event& e, const Json& involved, const std::string& name, Millis now);

}  // namespace arbiter::server
