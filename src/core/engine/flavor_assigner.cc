// Flavor assignment (Kueue's flavorassigner with its default fungibility, whenCanBorrow:
// MayStopSearch, whenCanPreempt: TryNextFlavor) for a namespace whose ElasticQuota lists
// spec.flavors, for a workload that requests one of the resources the flavors cover (the others
// are admitted as without flavors). The flavors the pod may use are those whose node labels agree
// with its nodeSelector (on the keys the flavor sets) and, for nvidia.com/gpu.product, with the GPU
// models it allows. They are tried in the quota's order:
//   1. a flavor whose quota admits the workload (within its min, or by borrowing in the cohort)
//      and on whose nodes (all of the flavor's labels) it fits: bound there, done;
//   2. none: preemption, flavor by flavor in the same order: quota preemption (reclaim,
//      withinNamespace; only workloads holding that flavor are candidates) where the flavor's
//      quota is short, priority preemption on the flavor's nodes where the quota admits it;
//   3. nothing: it waits, and its reason lists every flavor tried and why.
// Kueue ranks preemption modes (reclaim before priority preemption) across flavors; Arbiter takes
// the first flavor in order where a preemption plan exists. Kueue does not look at nodes (the
// kube-scheduler does, after admission); Arbiter falls back to the next flavor when no node of
// the flavor fits, so that "H100 quota free but no H100 node fits" tries A100.
#include <algorithm>

#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

namespace {
constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
}  // namespace

std::vector<const QuotaFlavor*> State::CompatibleFlavors(const Workload& w) const {
  std::vector<const QuotaFlavor*> out;
  const std::vector<QuotaFlavor>* flavors = quota.FlavorsOf(w.namespace_);
  if (!flavors) return out;
  for (const QuotaFlavor& f : *flavors) {
    bool ok = true;
    for (const auto& [k, v] : f.node_labels) {
      auto sel = w.node_selector.find(k);
      if (sel != w.node_selector.end() && sel->second != v) ok = false;
      if (k == kGpuProductLabel && w.shape.gpu_count > 0 && !placement::ModelAccepts(v, w.shape))
        ok = false;
    }
    if (ok) out.push_back(&f);
  }
  return out;
}

void State::SetFlavor(Workload& w, const QuotaFlavor* f) {
  if (!f) {
    w.flavor.clear();
    if (w.rare_block) w.rare_block->flavor_labels.clear();
    return;
  }
  if (w.flavor == f->name && w.rare().flavor_labels == f->node_labels) return;
  w.flavor = f->name;
  if (w.rare_block || !f->node_labels.empty()) w.rare_mut().flavor_labels = f->node_labels;
}

void State::DefaultFlavor(Workload& w) {
  if (!w.flavor.empty() || !w.elastic) return;
  const std::vector<QuotaFlavor>* flavors = quota.FlavorsOf(w.namespace_);
  if (!flavors) return;
  const ElasticQuota* q = quota.ElasticOf(w.namespace_);
  bool covered = false;
  for (const auto& [r, v] : w.requests.entries())
    covered = covered || (v > 0 && FlavorCovers(*q, r));
  if (!covered) return;  // it requests nothing the flavors cover: no flavor, any node
  const auto compatible = CompatibleFlavors(w);
  SetFlavor(w, compatible.empty() ? &flavors->front() : compatible.front());
}

bool State::AttemptFlavors(Workload& w) {
  const std::vector<const QuotaFlavor*> candidates = CompatibleFlavors(w);
  const ElasticQuota* q = quota.ElasticOf(w.namespace_);
  if (candidates.empty()) {
    SetFlavor(w, nullptr);
    DropNomination(w);
    std::string names;
    for (const auto& f : q->flavors) names += (names.empty() ? "" : ", ") + f.name;
    SetPending(w, EventType::kQuotaExceeded, reason::kQuotaExceeded,
               "no flavor of ElasticQuota " + q->meta.namespace_ + "/" + q->meta.name +
                   " matches the pod's node selector or GPU models (flavors: " + names + ")");
    return false;
  }
  if (quota.ResourceQuotaBlocked(w)) {  // ResourceQuotas do not depend on the flavor
    SetFlavor(w, candidates.front());
    TryAdmitQuota(w);  // reports it (or rejects, under whenQuotaExceeded: Reject)
    return w.phase != Phase::kPending || !w.waiting_for.empty();
  }
  struct Tried {
    const QuotaFlavor* flavor;
    bool quota_ok;
    std::string why;
  };
  std::vector<Tried> tried;
  for (const QuotaFlavor* f : candidates) {
    SetFlavor(w, f);
    const auto eq = quota.CheckElastic(w);
    if (!eq.ok) {
      tried.push_back({f, false, eq.message});
      continue;
    }
    if (eq.borrowing && defer_borrowers && !w.immediate) {  // borrowers after the nominal ones
      deferred.push_back(w.slot);
      return false;
    }
    if (TryPlace(w)) return true;
    tried.push_back({f, true, NoFitMessage(w)});
  }
  // No flavor admits it now: preemption on each flavor, in order.
  for (Tried& t : tried) {
    SetFlavor(w, t.flavor);
    std::string why, wait;
    if (!t.quota_ok) {
      if (TryReclaim(w, QuotaBook::ElasticResult{}, &why, &wait))
        return false;  // waits for its victims
    } else if (TryPreempt(w, &why)) {
      return true;  // nominated, waits for its victims
    }
    t.why = wait.empty() ? t.why + why : wait;
  }
  bool all_quota = true;
  std::string msg;
  for (const Tried& t : tried) {
    all_quota = all_quota && !t.quota_ok;
    msg += (msg.empty() ? "" : "; ") + std::string("flavor ") + t.flavor->name + ": " + t.why;
  }
  if (w.nominated_node == kNoNode) SetFlavor(w, nullptr);
  if (all_quota)
    SetPending(w, EventType::kQuotaExceeded, reason::kQuotaExceeded, msg, StableReason(msg));
  else
    SetPending(w, EventType::kFailedScheduling, reason::kUnschedulable, msg, StableReason(msg));
  return w.nominated_node != kNoNode;
}

}  // namespace arbiter::engine
