#include "core/engine/reasons.h"

#include <algorithm>

#include "core/instant_text.h"
#include "core/resources.h"

namespace arbiter::engine {

std::string Render(const NoFit& f) {
  // Reasons in text order, as Kubernetes prints them.
  std::vector<std::pair<std::string, size_t>> reasons;
  auto add = [&](std::string r, size_t c) {
    if (c) reasons.emplace_back(std::move(r), c);
  };
  add("node(s) were unschedulable", f.unschedulable);
  for (const auto& [t, c] : f.taints) add("node(s) had untolerated taint " + t, c);
  add("node(s) didn't match Pod's node affinity/selector", f.selector);
  add("node(s) didn't have a GPU model the pod allows", f.model);
  add("node(s) hold resources for a nominated higher-priority workload", f.held);
  add("node(s) are reserved for a higher-priority workload (backfill)", f.reserved);
  add("Insufficient " + std::string(kCpu), f.cpu);
  add("Insufficient " + std::string(kMemory), f.memory);
  add("Insufficient " + std::string(kGpu), f.gpu);
  for (const auto& [r, c] : f.extended)  // kube-scheduler's words for a full node
    add(r == kPods ? std::string("Too many pods") : "Insufficient " + r, c);
  add("node(s) didn't match pod topology spread constraints (missing required label)",
      f.spread_label);
  add("node(s) didn't match pod topology spread constraints", f.spread);
  add("node(s) didn't match pod affinity rules", f.pod_affinity);
  add("node(s) didn't match pod anti-affinity rules", f.pod_anti_affinity);
  add("node(s) didn't satisfy existing pods anti-affinity rules", f.existing_anti_affinity);
  std::sort(reasons.begin(), reasons.end());
  std::string msg = "0/" + std::to_string(f.nodes) + " nodes are available";
  bool first = true;
  for (const auto& [r, c] : reasons) {
    msg += first ? ": " : ", ";
    first = false;
    msg += std::to_string(c) + " " + r;
  }
  return msg + ".";
}

std::string Render(const PreemptionBlocked& b) {
  using K = PreemptionBlocked::Kind;
  switch (b.kind) {
    case K::kNone:
      return "";
    case K::kPolicyNever:
      return " Preemption is not allowed: its PriorityClass has preemptionPolicy: Never.";
    case K::kBound:
      return " It runs on that node already: nothing is preempted for it.";
    case K::kTooYoung:
      return " Some workloads are younger than the minimum run time (" +
             FormatDuration(b.min_runtime) + ") and cannot be preempted before " +
             FormatInstant(b.until) + ".";
    case K::kBudgets: {
      std::string list;
      for (const auto& nm : b.budgets)
        list += (list.empty() ? "" : ", ") + std::string("PodDisruptionBudget ") + nm;
      return " Preemption would violate " + list + " (disruptionBudgets: Strict).";
    }
    case K::kNoVictims:
      return " No preemption victims found: no node frees enough by preempting lower-priority "
             "workloads.";
    case K::kNoQoSVictims:
      return " No preemption victims found: no node frees enough by preempting workloads whose QoS "
             "is in this "
             "workload's preempt list.";
  }
  return "";
}

std::optional<std::string_view> KnownReason(std::string_view text) {
  static constexpr std::string_view kAll[] = {
      reason::kUnschedulable,     reason::kQuotaExceeded, reason::kReclaiming,
      reason::kWaitingForVictims, reason::kPreempting,    reason::kPreempted,
      reason::kReclaimed,         reason::kBorrowed,      reason::kNodeRemoved,
      reason::kNodeAdded,         reason::kTaintEviction, reason::kUnknownPriorityClass,
      reason::kUnknownQoS,        reason::kQoSNotAllowed, reason::kLimitRange,
      reason::kDeleted,           reason::kError,         reason::kNone,
      reason::kSubmitLimit,
  };
  for (std::string_view r : kAll)
    if (r == text) return r;
  return std::nullopt;
}

std::string StableReason(const std::string& m) {
  std::string k;
  k.reserve(m.size());
  for (char c : m)
    if (c < '0' || c > '9') k += c;
  return k;
}

}  // namespace arbiter::engine
