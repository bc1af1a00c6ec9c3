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
//
// restartPolicy OnFailure (a Job's pod whose run fails: CrashLoopRun): the virtual kubelet
// restarts the containers in place, as kubelet's kuberuntime does: the first restart at once, then
// after a back-off from each failure of 10 s doubling up to 5 min (flowcontrol.Backoff, no
// jitter), reset when a run lasted over 10 min (its 2 x max expiry). The engine sees one run that
// never ends (the daemon submits such a pod without its duration); the pod stays Running on its
// node, and its containers' status follows CrashLoopAt: restartCount, state running or waiting
// (CrashLoopBackOff, kubelet's message), lastState terminated with the exit code; Ready False
// while waiting.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
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
// Burstable otherwise. LimitRange defaults count where they were written into the object
// (pod_defaults.h, journal format 6 on).
std::string QosClass(const Json& spec);

// The pod's new `status` (and spec.nodeName) from the engine's view, as driver::PodSchedulingOf
// says it. `pod` is the stored object (its old status keeps condition transition times and a
// DisruptionTarget); `disruption` is the DisruptionTarget of a Preempted / Reclaimed event seen
// now (driver::DisruptionTarget), null if none.
// What is written of a finished container: since journal format 6 (kCurrent) its
// `state.terminated.startedAt` (its last run's start, as the kubelet writes it); the releases of
// formats 1-5 left it out (kFormat5, Cluster::SetFormat5Rules), and their records replay so.
enum class StatusRules { kCurrent, kFormat5 };
void SetPodStatus(Json& pod, const engine::WorkloadStatus& s,
                  const driver::PodCondition* disruption, Millis now,
                  StatusRules rules = StatusRules::kCurrent);
// SetPodStatus in two steps, so that a pod whose status does not move is not copied: what it
// writes (PodStatusOf: the new `status` and spec.nodeName), whether that changes the pod
// (Changes), and the writing (ApplyPodStatus).
struct PodStatusUpdate {
  Json status;
  enum class Node { kKeep, kSet, kErase } node = Node::kKeep;  // spec.nodeName
  std::string node_name;                                       // kSet: to this
};
PodStatusUpdate PodStatusOf(const Json& pod, const engine::WorkloadStatus& s,
                            const driver::PodCondition* disruption, Millis now,
                            StatusRules rules = StatusRules::kCurrent);
bool Changes(const Json& pod, const PodStatusUpdate& u);
void ApplyPodStatus(Json& pod, PodStatusUpdate u);

// A pod whose containers crash-loop on a virtual node: a Job's pod (label
// batch.kubernetes.io/controller-uid) with spec.restartPolicy OnFailure, a non-zero
// arbiter.dev/exit-code and an arbiter.dev/duration: each run's length and exit code. nullopt for
// any other pod.
// A Job's pod (label batch.kubernetes.io/controller-uid) under restartPolicy OnFailure: its
// restartCount is its in-place restarts only (not its preemptions: the Job counts them).
bool OnFailureJobPod(const Json& pod);
struct CrashLoopSpec {
  Millis run = 0;
  int32_t exit_code = 0;
};
std::optional<CrashLoopSpec> CrashLoopRun(const Json& pod);

// Where a crash loop stands at `now`: runs of `run` ms, the first started at `run_start`.
struct CrashLoop {
  int64_t restarts = 0;       // containers started again so far (restartCount)
  bool running = true;        // false: waiting out a back-off (CrashLoopBackOff)
  Millis started = 0;         // the running container's start
  Millis last_started = -1;   // the last failed run (-1: none has failed yet)
  Millis last_finished = -1;  //
  Millis backoff = 0;         // the back-off being waited out (kubelet's message)
  Millis next = 0;            // when it changes: the run fails, or the back-off ends
};
CrashLoop CrashLoopAt(Millis run_start, Millis run, Millis now);

// When the pod's container status changes next without the engine (its crash loop), if it
// crash-loops on a node now.
std::optional<Millis> NextContainerChange(const Json& pod, const engine::WorkloadStatus& s,
                                          Millis now);

// The core/v1 Event for an engine event about `pod` (kind Pod) or a node (kind Node), as
// driver::PodEventOf says it, or null for engine events Kubernetes has no counterpart of
// (Submitted).
// The engine's reason code rides in annotation arbiter.dev/reason (Event.reason is the event's
// kind, as Kubernetes has it); a preemptor ("NS/NAME") is the Event's `related` object.
// The daemon writes this tree's text directly (event_text.h KubeEventText, held to it by tests).
Json KubeEvent(const engine::Event& e, const Json& involved, const std::string& name, Millis now);

}  // namespace arbiter::server
