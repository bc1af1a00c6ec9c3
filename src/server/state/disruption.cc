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

void Cluster::RefreshPdbs(Millis t) {
  auto pdbs = policy_.find("PodDisruptionBudget");
  for (const auto& ns : quota_dirty_) {
    // Counts of budgets gone (a name is not counted twice: the next one of the name is another
    // uid, counted again).
    for (auto c = budget_counts_.lower_bound({ns, ""});
         c != budget_counts_.end() && c->first.first == ns;)
      c = pdbs != policy_.end() && pdbs->second.count(c->first) ? std::next(c)
                                                                : budget_counts_.erase(c);
    if (pdbs == policy_.end()) continue;
    for (auto it = pdbs->second.lower_bound({ns, ""});
         it != pdbs->second.end() && it->first.first == ns; ++it) {
      const Json* stored = store_.Get("PodDisruptionBudget", ns, it->first.second);
      if (!stored || it->second.pdbs.empty()) continue;
      const PdbCount pods = BudgetPods(it->first, it->second.pdbs[0], *stored);
      Json status = PdbStatus(it->second.pdbs[0], *stored, pods, t);
      if (stored->contains("status") && (*stored)["status"] == status) continue;
      Json o = *stored;
      o["status"] = std::move(status);
      store_.Put("PodDisruptionBudget", ns, it->first.second, std::move(o));
    }
  }
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
    if (was) {
      const PdbCount one = PdbCountOf(pdb, *was);
      c->second.pods.expected -= one.expected;
      c->second.pods.healthy -= one.healthy;
    }
    if (now) {
      const PdbCount one = PdbCountOf(pdb, *now);
      c->second.pods.expected += one.expected;
      c->second.pods.healthy += one.healthy;
    }
  }
}

}  // namespace arbiter::server
