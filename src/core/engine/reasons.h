// Why a workload waits, as values, and the text users read (events, status messages).
//
// The engine decides with the values and renders their text once, when it reports them. The
// text keeps kube-scheduler's wording ("0/3 nodes are available: 2 Insufficient cpu, ...") so
// that it reads like what Kubernetes users know.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"

namespace arbiter::engine {

// Machine-readable reasons (Event::reason, WorkloadStatus::reason).
namespace reason {
inline constexpr std::string_view kUnschedulable = "Unschedulable";
inline constexpr std::string_view kQuotaExceeded = "QuotaExceeded";
inline constexpr std::string_view kReclaiming = "Reclaiming";
inline constexpr std::string_view kWaitingForVictims = "WaitingForVictims";
inline constexpr std::string_view kPreempting = "Preempting";
inline constexpr std::string_view kPreempted = "Preempted";
inline constexpr std::string_view kReclaimed = "Reclaimed";
inline constexpr std::string_view kBorrowed = "Borrowed";
inline constexpr std::string_view kNodeRemoved = "NodeRemoved";
inline constexpr std::string_view kNodeAdded = "NodeAdded";
inline constexpr std::string_view kTaintEviction = "TaintManagerEviction";
inline constexpr std::string_view kUnknownPriorityClass = "UnknownPriorityClass";
inline constexpr std::string_view kUnknownQoS = "UnknownQoS";
inline constexpr std::string_view kQoSNotAllowed = "QoSNotAllowed";
inline constexpr std::string_view kSubmitLimit = "SubmitLimit";
inline constexpr std::string_view kLimitRange = "LimitRange";
inline constexpr std::string_view kDeleted = "Deleted";
inline constexpr std::string_view kError = "Error";
inline constexpr std::string_view kNone = "";
}  // namespace reason

// kube-scheduler's no-fit summary: per filter, how many nodes it excluded.
struct NoFit {
  size_t nodes = 0;
  size_t unschedulable = 0;  // node(s) were unschedulable
  // node(s) had untolerated taint {key: value}, by "{key: value}" (TaintToleration)
  std::vector<std::pair<std::string, size_t>> taints;
  size_t selector = 0;  // node(s) didn't match Pod's node affinity/selector (NodeAffinity)
  size_t model = 0;     // node(s) have no GPU model the pod allows
  size_t held = 0;      // node(s) hold resources for a nominated higher-priority workload
  size_t reserved = 0;  // node(s) are reserved for a higher-priority workload (backfill)
  size_t cpu = 0, memory = 0, gpu = 0;
  std::vector<std::pair<std::string, size_t>> extended;  // Insufficient <resource>, by name
  // PodTopologySpread and InterPodAffinity (nodes with room that they reject).
  size_t spread_label = 0;  // node(s) didn't match pod topology spread constraints (missing ...)
  size_t spread = 0;        // node(s) didn't match pod topology spread constraints
  size_t pod_affinity = 0;  // node(s) didn't match pod affinity rules
  size_t pod_anti_affinity = 0;       // node(s) didn't match pod anti-affinity rules
  size_t existing_anti_affinity = 0;  // node(s) didn't satisfy existing pods anti-affinity rules
};
// "0/N nodes are available: <count> <reason>, ... ." (reasons sorted as Kubernetes prints them).
std::string Render(const NoFit& f);

// Why no preemption plan was taken, appended to the no-fit text.
struct PreemptionBlocked {
  enum class Kind : uint8_t {
    kNone,          // nothing to add
    kPolicyNever,   // the PriorityClass says preemptionPolicy: Never
    kBound,         // it runs on its node already (SubmitPod::node): it never preempts
    kTooYoung,      // candidates are younger than minRuntime until `until`
    kBudgets,       // every plan would violate these PodDisruptionBudgets (Strict)
    kNoVictims,     // no node frees enough by preempting lower-priority workloads
    kNoQoSVictims,  // same, with QoS preempt lists
  };
  Kind kind = Kind::kNone;
  Millis min_runtime = 0;
  Millis until = 0;
  std::vector<std::string> budgets;  // namespace/name, sorted
};
// " Preemption is not allowed: ...", " Some workloads are younger ...", "" for kNone.
std::string Render(const PreemptionBlocked& b);

// The constant of `reason::` spelled `text` (a reason read back from a snapshot), or nothing.
std::optional<std::string_view> KnownReason(std::string_view text);

// A pending reason without its numbers: a new FailedScheduling / QuotaExceeded event is worth
// emitting when the kind of reason changes, not each time a count in it does.
std::string StableReason(const std::string& message);

}  // namespace arbiter::engine
