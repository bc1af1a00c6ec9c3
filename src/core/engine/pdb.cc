// PodDisruptionBudgets: which workloads a budget selects, how many disruptions it allows now
// (Kubernetes' disruption controller: expected pods, healthy pods, minAvailable/maxUnavailable),
// and how many a set of victims would violate.
#include <algorithm>
#include <map>

#include "core/engine/state.h"

namespace arbiter::engine {

namespace {
std::string NamespaceOf(const PodDisruptionBudget& pdb) {
  return pdb.meta.namespace_.empty() ? "default" : pdb.meta.namespace_;
}
}  // namespace

void State::MatchPdbs(Workload& w) {
  w.pdbs.clear();
  for (uint32_t k = 0; k < pdbs.size(); ++k) {
    const auto& pdb = pdbs[k];
    if (NamespaceOf(pdb) == w.namespace_ && pdb.selector.Matches(w.labels)) w.pdbs.push_back(k);
  }
}

// Budget k (just upserted) matched against every live workload alone: O(workloads), where
// RematchAllPdbs is O(workloads x budgets) (a hostile-tenant trial made each PDB write cost 75 ms
// at 2,000 pods and 2,000 budgets, under the daemon's lock). The state is RematchAllPdbs's: each
// workload's budgets ascending, the members in slot order.
void State::RematchPdb(uint32_t k) {
  const auto& pdb = pdbs[k];
  const std::string ns = NamespaceOf(pdb);
  bool members_changed = false;
  for (Slot s = 0; s < workloads.size(); ++s) {
    Workload& w = workloads[s];
    if (w.slot != s) continue;  // a free slot
    const bool match = ns == w.namespace_ && pdb.selector.Matches(w.labels);
    auto at = std::lower_bound(w.pdbs.begin(), w.pdbs.end(), k);
    const bool has = at != w.pdbs.end() && *at == k;
    if (match == has) continue;
    const bool was_member = !w.pdbs.empty();
    if (match)
      w.pdbs.insert(at, k);
    else
      w.pdbs.erase(at);
    members_changed = members_changed || was_member != !w.pdbs.empty();
  }
  if (members_changed) SortPdbMembers(true);
}

// Budget k is gone: the later ones move down one; members in slot order, as RematchAllPdbs's.
void State::UnmatchPdb(uint32_t k) {
  for (Slot s : pdb_members) {
    auto& ks = workloads[s].pdbs;
    ks.erase(std::remove(ks.begin(), ks.end(), k), ks.end());
    for (uint32_t& x : ks)
      if (x > k) --x;
  }
  SortPdbMembers(false);
}

// pdb_members as RematchAllPdbs makes it: the live workloads some budget selects, in slot
// order (`scan`: found anew among every workload, else the members kept, sorted).
void State::SortPdbMembers(bool scan) {
  if (scan) {
    pdb_members.clear();
    for (Slot s = 0; s < workloads.size(); ++s)
      if (workloads[s].slot == s && !workloads[s].pdbs.empty()) pdb_members.push_back(s);
    return;
  }
  pdb_members.erase(std::remove_if(pdb_members.begin(), pdb_members.end(),
                                   [&](Slot s) { return workloads[s].pdbs.empty(); }),
                    pdb_members.end());
  std::sort(pdb_members.begin(), pdb_members.end());
}

void State::RematchAllPdbs() {
  pdb_members.clear();
  for (Slot s = 0; s < workloads.size(); ++s) {
    Workload& w = workloads[s];
    if (w.slot != s) continue;  // a free slot
    MatchPdbs(w);
    if (!w.pdbs.empty()) pdb_members.push_back(s);
  }
}

void State::ComputePdbState(std::vector<PdbState>* out) const {
  out->assign(pdbs.size(), PdbState{});
  if (pdbs.empty()) return;
  std::vector<int64_t> expected(pdbs.size(), 0), healthy(pdbs.size(), 0);
  for (Slot s : pdb_members) {  // the workloads some PDB selects, not every workload
    const Workload& w = workloads[s];
    if (IsFinal(w.phase)) continue;
    for (uint32_t k : w.pdbs) {
      ++expected[k];
      if (w.phase == Phase::kRunning) ++healthy[k];
    }
  }
  for (size_t k = 0; k < pdbs.size(); ++k) {
    const auto& pdb = pdbs[k];
    int64_t desired = 0;
    if (pdb.min_available)
      desired = pdb.min_available->Resolve(expected[k]);
    else if (pdb.max_unavailable)
      desired = expected[k] - pdb.max_unavailable->Resolve(expected[k]);
    (*out)[k].allowed = std::max<int64_t>(0, healthy[k] - desired);
  }
}

int State::CountViolations(const std::vector<Slot>& victims, const std::vector<PdbState>& state,
                           std::vector<std::string>* names) const {
  if (pdbs.empty()) return 0;
  std::map<uint32_t, int64_t> hits;
  for (Slot s : victims)
    for (uint32_t k : workloads[s].pdbs) hits[k]++;
  int violations = 0;
  for (const auto& [k, hit] : hits) {
    if (hit > state[k].allowed) {
      violations += static_cast<int>(hit - state[k].allowed);
      if (names) names->push_back(NamespaceOf(pdbs[k]) + "/" + pdbs[k].meta.name);
    }
  }
  return violations;
}

std::string State::BudgetList(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + std::string("PodDisruptionBudget ") + n;
  return out;
}

int State::QuotaVictimViolations(const Workload& w, const std::vector<Slot>& quota_victims,
                                 const std::vector<Slot>& node_victims,
                                 const std::vector<PdbState>& state,
                                 std::vector<std::string>* names) const {
  if (pdbs.empty()) return 0;
  std::vector<Slot> counted = node_victims;
  std::vector<PdbState> charged;  // `state` less the borrowed victims' disruptions, when needed
  for (Slot s : quota_victims) {
    if (workloads[s].namespace_id == w.namespace_id) {
      counted.push_back(s);
      continue;
    }
    // Budgets select within one namespace: a borrowed victim shares a budget only with node
    // victims of its own namespace.
    if (node_victims.empty() || workloads[s].pdbs.empty()) continue;
    if (charged.empty()) charged = state;
    for (uint32_t k : workloads[s].pdbs)
      charged[k].allowed = std::max<int64_t>(0, charged[k].allowed - 1);
  }
  return CountViolations(counted, charged.empty() ? state : charged, names);
}

}  // namespace arbiter::engine
