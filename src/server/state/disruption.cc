// pods/eviction and PodDisruptionBudget status: the Cluster's part (cluster.h), as kube-apiserver's
// eviction subresource (pkg/registry/core/pod/storage/eviction.go) and the disruption controller
// do it, with the budget's status always current (pdb_status.h).
#include <string>
#include <vector>

#include "adapters/json/member.h"
#include "server/state/cluster.h"
#include "server/state/pdb_status.h"
#include "server/state/pod_status.h"

namespace arbiter::server {

namespace {

MutationResult Refuse(ApiError::Reason reason, const std::string& name, std::string message,
                      std::string cause = "") {
  MutationResult r;
  ApiError e;
  e.reason = reason;
  e.kind = "Pod";
  e.name = name;
  e.message = std::move(message);
  e.cause = std::move(cause);
  r.error = std::move(e);
  return r;
}

// Kubernetes' canIgnorePDB: finished, pending or terminating pods are deleted without a budget.
bool CanIgnorePdb(const Json& pod) {
  if (pod.at("metadata").contains("deletionTimestamp")) return true;
  const std::string phase =
      pod.contains("status") && pod["status"].is_object() ? pod["status"].value("phase", "") : "";
  return phase == "Succeeded" || phase == "Failed" || phase == "Pending";
}

int64_t StatusInt(const Json& pdb, const char* field) {
  if (!pdb.contains("status") || !pdb["status"].is_object()) return 0;
  const Json& v = pdb["status"].value(field, Json());
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

}  // namespace

MutationResult Cluster::Evict(const Mutation& m) {
  const std::string ns = m.namespace_.empty() ? "default" : m.namespace_;
  const Json* pod = store_.Get("Pod", ns, m.name);
  if (!pod) return Refuse(ApiError::Reason::kNotFound, m.name, "");
  if (!play_ && !CanIgnorePdb(*pod)) {  // (replay: the budget allowed it)
    std::vector<const Json*> budgets;   // the stored PDB objects that select the pod
    auto pdbs = policy_.find("PodDisruptionBudget");
    if (pdbs != policy_.end())
      for (auto it = pdbs->second.lower_bound({ns, ""});
           it != pdbs->second.end() && it->first.first == ns; ++it)
        if (!it->second.pdbs.empty() && PdbSelects(it->second.pdbs[0], *pod))
          if (const Json* o = store_.Get("PodDisruptionBudget", ns, it->first.second))
            budgets.push_back(o);
    if (budgets.size() > 1)
      return Refuse(
          ApiError::Reason::kInternal, m.name,
          "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
          "not support.");
    if (budgets.size() == 1) {
      const Json& pdb = *budgets[0];
      const int64_t healthy = StatusInt(pdb, "currentHealthy");
      const int64_t desired = StatusInt(pdb, "desiredHealthy");
      // An unready pod goes when the application is not disrupted now (IfHealthyBudget, the
      // default unhealthyPodEvictionPolicy); otherwise a disruption must be allowed.
      const bool unready_ok = !PodHealthy(*pod) && healthy >= desired && desired > 0;
      if (!unready_ok && StatusInt(pdb, "disruptionsAllowed") <= 0)
        return Refuse(ApiError::Reason::kTooManyRequests, m.name,
                      "Cannot evict pod as it would violate the pod's disruption budget.",
                      "The disruption budget " + pdb["metadata"].value("name", "") + " needs " +
                          std::to_string(desired) + " healthy pods and has " +
                          std::to_string(healthy) + " currently");
    }
  }
  if (m.dry_run) {
    MutationResult r;
    r.object = *pod;
    return r;
  }
  // The DisruptionTarget condition first, then the delete (the pod's status keeps it).
  Json marked = *pod;
  Json& st = marked["status"];
  if (!st.is_object()) st = Json::object();
  if (!st.contains("conditions") || !st["conditions"].is_array()) st["conditions"] = Json::array();
  Json condition = {{"type", "DisruptionTarget"},        {"status", "True"},
                    {"lastProbeTime", nullptr},          {"lastTransitionTime", KubeTime(m.time)},
                    {"reason", "EvictionByEvictionAPI"}, {"message", "Eviction API: evicting"}};
  bool replaced = false;
  for (auto& c : st["conditions"])
    if (c.is_object() && c.value("type", "") == "DisruptionTarget") {
      c = condition;
      replaced = true;
    }
  if (!replaced) st["conditions"].push_back(std::move(condition));
  store_.Put("Pod", ns, m.name, std::move(marked));
  Mutation del = m;
  del.eviction = false;
  return Delete(del);
}

// Only the budgets of the dirty namespaces whose status may have moved since it was last made
// (pdbs_dirty_): a budget's status reads nothing but its object (spec, generation, the old
// condition's transition time) and its pods' counts, and is a fixpoint (made again from the same
// inputs at any later instant it is the same), so the others would be made as they are stored.
// The budgets are written in name order, as the walk of every budget of the namespace did, and
// those of a namespace not refreshed stay marked until it is (as the walk left them).
void Cluster::RefreshPdbs(Millis t) {
  auto pdbs = policy_.find("PodDisruptionBudget");
  for (const auto& ns : quota_dirty_) {
    if (pdb_walk_ && pdbs != policy_.end())  // (tests: the walk, every budget of the namespace)
      for (auto it = pdbs->second.lower_bound({ns, ""});
           it != pdbs->second.end() && it->first.first == ns; ++it)
        pdbs_dirty_.insert(it->first);
    for (auto d = pdbs_dirty_.lower_bound({ns, ""}); d != pdbs_dirty_.end() && d->first == ns;
         d = pdbs_dirty_.erase(d)) {
      const ManifestSet* set = PdbSet(*d);
      if (!set) {
        // Its count goes with the budget (a name is not counted twice: the next one of the name
        // is another uid, counted again).
        budget_counts_.erase(*d);
        continue;
      }
      const Json* stored = store_.Get("PodDisruptionBudget", ns, d->second);
      if (!stored || set->pdbs.empty()) continue;
      const PdbCount pods = BudgetPods(*d, set->pdbs[0], *stored);
      Json status = PdbStatus(set->pdbs[0], *stored, pods, t);
      if (stored->contains("status") && (*stored)["status"] == status) continue;
      Json o = *stored;
      o["status"] = std::move(status);
      // (its observer marks it again: that mark is the one erased here)
      store_.Put("PodDisruptionBudget", ns, d->second, std::move(o));
    }
  }
}

const ManifestSet* Cluster::PdbSet(const ObjectStore::Key& key) const {
  auto pdbs = policy_.find("PodDisruptionBudget");
  if (pdbs == policy_.end()) return nullptr;
  auto it = pdbs->second.find(key);
  return it == pdbs->second.end() ? nullptr : &it->second;
}

void Cluster::RestorePdbs() {
  budget_counts_.clear();  // (counted again when a refresh needs them)
  pdbs_dirty_.clear();
  for (const auto& [key, obj] : store_.All("PodDisruptionBudget")) pdbs_dirty_.insert(key);
}

Status Cluster::CheckPdbStatuses() const {
  std::string stale;
  for (const auto& [key, obj] : store_.All("PodDisruptionBudget")) {
    if (pdbs_dirty_.count(key)) continue;  // its namespace not refreshed since it moved
    const Json* stored = store_.Get("PodDisruptionBudget", key.first, key.second);
    const ManifestSet* set = PdbSet(key);
    if (!stored || !set || set->pdbs.empty()) continue;  // (as RefreshPdbs: no status made)
    const PodDisruptionBudget& pdb = set->pdbs[0];
    PdbCount pods;
    for (const Json* p : store_.List("Pod", key.first)) {
      const PdbCount one = PdbCountOf(pdb, *p);
      pods.expected += one.expected;
      pods.healthy += one.healthy;
    }
    // (a status made from the same inputs is the same at any instant: `now` only dates a
    // condition that changed)
    const Json want = PdbStatus(pdb, *stored, pods, now());
    const Json& has = json_member::Member(*stored, "status");
    if (has != want)
      stale += " " + key.first + "/" + key.second + " (stored " + has.dump() + ", made " +
               want.dump() + ")";
  }
  if (stale.empty()) return Status::Ok();
  return Status::Internal("PodDisruptionBudget status not what its inputs make:" + stale);
}

PdbCount Cluster::BudgetPods(const ObjectStore::Key& key, const PodDisruptionBudget& pdb,
                             const Json& stored) {
  const Json& meta = json_member::Member(stored, "metadata");
  const std::string uid = meta.is_object() ? meta.value("uid", "") : "";
  const int64_t generation = meta.is_object() ? meta.value("generation", int64_t{1}) : 1;
  auto c = budget_counts_.find(key);
  if (c != budget_counts_.end() && c->second.uid == uid && c->second.generation == generation)
    return c->second.pods;
  BudgetCount fresh{uid, generation, {}};
  for (const Json* p : store_.List("Pod", key.first)) {
    const PdbCount one = PdbCountOf(pdb, *p);
    fresh.pods.expected += one.expected;
    fresh.pods.healthy += one.healthy;
  }
  budget_counts_.insert_or_assign(key, fresh);
  return fresh.pods;
}

// A pod written (the store's observer): what it counted in its namespace's budgets before is
// taken off, what it counts now added. Budgets not counted yet are left for BudgetPods; those
// whose object changed since their count are counted again there, whatever is added here.
void Cluster::CountForBudgets(const std::string& ns, const Json* was, const Json* now) {
  auto c = budget_counts_.lower_bound({ns, ""});
  if (c == budget_counts_.end() || c->first.first != ns) return;
  auto pdbs = policy_.find("PodDisruptionBudget");
  if (pdbs == policy_.end()) return;
  for (; c != budget_counts_.end() && c->first.first == ns; ++c) {
    auto p = pdbs->second.find(c->first);
    if (p == pdbs->second.end() || p->second.pdbs.empty()) continue;
    const PodDisruptionBudget& pdb = p->second.pdbs[0];
    const PdbCount before = was ? PdbCountOf(pdb, *was) : PdbCount{};
    const PdbCount after = now ? PdbCountOf(pdb, *now) : PdbCount{};
    if (before.expected == after.expected && before.healthy == after.healthy) continue;
    c->second.pods.expected += after.expected - before.expected;
    c->second.pods.healthy += after.healthy - before.healthy;
    pdbs_dirty_.insert(c->first);  // its status moves (at its namespace's next refresh)
  }
}

}  // namespace arbiter::server
