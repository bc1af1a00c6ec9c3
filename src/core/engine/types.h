// Values the engine gives out: events, run records and workload status (see sink.h for how
// drivers receive them). They are plain copies: nothing in them points into the engine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/engine/ids.h"
#include "core/objects.h"
#include "core/resources.h"

namespace arbiter::engine {

// kTerminating reads "Running" (it holds its node until it exits). kFailed (PodFinished with a
// non-zero exit code) and kDeleted (DeletePod) only arise from drivers that send those commands.
enum class Phase {
  kPending,
  kRunning,
  kTerminating,
  kSucceeded,
  kPreempted,
  kRejected,
  kFailed,
  kDeleted
};
const char* ToString(Phase p);
// Whether a workload in this phase has left the engine for good.
inline bool IsFinal(Phase p) {
  return p == Phase::kSucceeded || p == Phase::kPreempted || p == Phase::kRejected ||
         p == Phase::kFailed || p == Phase::kDeleted;
}

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
  kNodeAdded,  // pool events: `workload` is kNoWorkload, `node` names the node
  kNodeRemoved,
  kFailed,   // PodFinished with a non-zero exit code
  kDeleted,  // DeletePod
};
const char* ToString(EventType t);

// Facts only the driver's work model knows, which it may append to an event's message (the engine
// does not model progress; see driver/work_model.h):
//   kStopPlan      Preempted / Reclaimed: ", shutdown S, exits at T; progress kept K, lost L"
//                  after the engine's "...; SIGTERM, grace G" (G is Event::grace).
//   kProgressLost  Terminated with reason NodeRemoved: "; progress kept K, lost L".
//   kStopSooner    Deleted, a second delete's shorter grace (Event::grace from now): the stop
//                  plan made again (kStopPlan's text), the exit no later than that.
enum class WorkFacts : uint8_t { kNone, kStopPlan, kProgressLost, kStopSooner };

// One thing that happened. Kept small: a simulation of a million workloads stores millions.
struct Event {
  Millis time = 0;
  EventType type = EventType::kSubmitted;
  WorkFacts work_facts = WorkFacts::kNone;
  WorkloadId workload = kNoWorkload;
  std::string node;
  std::string by;           // the preemptor ("namespace/name") on Preempted / Reclaimed
  std::string_view reason;  // machine-readable reason, a constant: "Unschedulable", "PDB", ...
  std::string message;      // the engine's text; empty on Scheduled (Message(): "bound to <node>")
  Millis grace = 0;         // Preempted / Reclaimed / Deleted: the grace period the SIGTERM gives
  std::string Message() const {
    return type == EventType::kScheduled && message.empty() ? "bound to " + node : message;
  }
};

// One placement of a workload, from bind to exit (what billing meters on the request track).
// The workload's name, namespace, priority and requests are in its WorkloadStatus.
struct RunRecord {
  WorkloadId workload{};
  std::string node;
  std::string gpu_product;
  int64_t gpu_replicas = 1;  // node label nvidia.com/gpu.replicas: a GPU is 1/N of a card
  Millis start = 0;
  Millis end = 0;
  // Why the run ended before the workload did: its preemptor ("namespace/name") or "node/NAME" for
  // a removed node, and when it was stopped (SIGTERM, or the removal). Empty when the run ended by
  // itself or its user deleted it.
  std::string stopped_by;
  Millis stop_time = 0;
  // Work lost when the run was stopped: progress between the run-time instants `lost_from` and
  // `lost_to` was not saved. The engine does not know progress: a driver with a work model fills
  // these (driver::WorkModel) before billing; empty otherwise.
  std::optional<Millis> lost_from;
  Millis lost_to = 0;
  std::string preemptor;  // stopped_by when work was lost
};

// A backfill reservation (backfill.cc): the nodes held for a blocked workload (or its pod group)
// from its expected start, as its message's "; reserved on N1,N2 from T" says.
struct BackfillReservation {
  std::vector<std::string> nodes;  // in node order
  Millis from = 0;
  bool operator==(const BackfillReservation&) const = default;
};

// A workload as drivers and reports see it. For live workloads, a snapshot as of the query; for
// finished ones, their final state (EventSink::OnFinished).
struct WorkloadStatus {
  WorkloadId id{};
  std::string key;  // namespace/name
  std::string namespace_;
  std::string name;
  int32_t priority = 0;
  std::string priority_class;  // resolved name, "" if none
  std::string qos;             // "" if none
  PreemptionPolicy preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
  PreemptMode preempt_mode = PreemptMode::kRequeue;
  Phase phase = Phase::kPending;
  std::string node;            // where it runs now, "" if nowhere
  std::string last_node;       // where it runs or last ran
  std::string nominated_node;  // the node whose room it holds while its victims exit, "" none
  // Pending with a backfill reservation (the facts of the message's "; reserved on ..." note).
  std::optional<BackfillReservation> reservation;
  // Pending but held out of the queue until then (PoolPolicy preemption.requeuingStrategy's
  // back-off, Slurm's cred_expire after a requeue), -1 when not held.
  Millis eligible_at = -1;
  Millis submit_time = 0;
  Millis first_start = -1;  // first time it ever started, -1 never
  Millis finish_time = -1;  // when it reached a final phase, -1 not yet
  int preemptions = 0;
  int32_t exit_code = 0;
  std::string reason;   // machine-readable reason of `message` ("Unschedulable", ...), "" if none
  std::string message;  // last reason, verbatim (the engine's text)
  WorkFacts message_facts = WorkFacts::kNone;  // as Event::work_facts, for `message`
  ResourceList requests;                       // effective, after LimitRange defaults
  ResourceList limits;
  Millis pending_total = 0;  // time spent Pending, the current spell included
  // Of pending_total, the time held out of the queue (`eligible_at`: the requeue back-off,
  // Slurm's cred_expire after a requeue), the current hold included.
  Millis held_total = 0;
  bool borrowed = false;  // runs on quota borrowed from its cohort
  std::string flavor;     // the ResourceFlavor it is admitted on (or was last tried on), "" none
  Millis run_start = 0;   // current run's start
  Millis grace = 0;       // termination grace period (QoS GraceTime under QoS preemption)
};

// One ResourceQuota's usage as the engine charges it (quota_book.h): every scope applied
// (PriorityClass, BestEffort / NotBestEffort, Terminating / NotTerminating), count/pods keeping
// terminal pods until they are deleted; holds for preemptors waiting for victims not included.
struct ResourceQuotaUsage {
  std::string namespace_, name;
  struct Item {
    std::string key;  // as written: "requests.cpu", "pods", "count/pods"
    QuotaTrack track = QuotaTrack::kRequests;
    std::string resource;  // "cpu", "nvidia.com/gpu", "pods" for counts
    int64_t hard = 0;      // canonical units of `resource`
    int64_t used = 0;
    bool operator==(const Item&) const = default;
  };
  std::vector<Item> items;  // in spec.hard order
  bool operator==(const ResourceQuotaUsage&) const = default;
};

// One ElasticQuota's state as the engine charges it: what its namespace's running and terminating
// workloads use of the resources it tracks (those named in min or max; quota per flavor summed
// back to the plain resource), what it borrows from its cohort and lends to it, and its fair share.
//   borrowed  per tracked resource, max(0, used - min)
//   lent      the cohort's borrowed amount of a resource, attributed to the members with idle
//             lendable min (min - used, capped by lendingLimit) in proportion to that idle amount
//             (largest remainder, ties by namespace name); at most their idle amount
//   fair_share the weighted dominant-resource share (fair_share.h) in millionths, kInfiniteShare
//             possible; 0 outside a cohort
struct ElasticQuotaUsage {
  std::string namespace_, name, cohort;
  ResourceList min;
  std::optional<ResourceList> max;
  ResourceList used, borrowed, lent;
  int64_t fair_share = 0;
  bool operator==(const ElasticQuotaUsage&) const = default;
};

}  // namespace arbiter::engine
