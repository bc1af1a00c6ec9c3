// Slurm's victim choice under preempt/qos: see qos_victims.h.
#include "core/engine/qos_victims.h"

#include <algorithm>

#include "core/engine/lost_work.h"
#include "core/engine/state.h"

namespace arbiter::engine {

// preempt/qos's job priority: QoS priority, then node count (a pod group's minMember: `sbatch -N`),
// then the job list's order (submission); preempt_youngest_first: the latest start, then the list;
// victimOrder LeastLostWork (not Slurm's): QoS priority, then the least GPU work lost, then the
// list.
QoSRank SlurmRemovalRank(const State& s, const Workload& v) {
  const auto id = static_cast<int64_t>(Value(v.id));
  if (s.policy.victim_order == VictimOrder::kYoungestFirst) return {-v.run_start, id, 0};
  if (s.policy.victim_order == VictimOrder::kLeastLostWork)  // QoS first, then the least GPU work
    return {v.priority, LostWorkIfStopped(v, s.GraceOf(v), s.now).gpu_milli_ms, id};
  const int64_t nodes = v.gang != kNoGang ? std::max<int64_t>(1, s.gangs[v.gang].min_member) : 1;
  return {v.priority, nodes, id};
}

namespace {

// Removes the candidates in `order` (indices into cands) from a node where all are present, until
// `w` fits; returns how many were removed. Afterwards every candidate is removed again (the state
// the caller gave).
size_t RemoveUntilFit(const State& s, const Workload& w, const std::vector<Slot>& cands,
                      const std::vector<size_t>& order, placement::FitView& sim) {
  const auto& ws = s.workloads;
  for (Slot c : cands) sim.Take(ws[c].shape, ws[c].gpus);  // all back on the node
  size_t k = 0;
  while (k < order.size()) {
    const Workload& v = ws[cands[order[k]]];
    sim.Give(v.shape, v.gpus);
    ++k;
    if (sim.Valid() && sim.Fits(w.shape)) break;
  }
  for (size_t j = k; j < order.size(); ++j) {
    const Workload& v = ws[cands[order[j]]];
    sim.Give(v.shape, v.gpus);
  }
  return k;
}

}  // namespace

void SlurmVictimsOnNode(const State& s, const Workload& w, const std::vector<Slot>& cands,
                        placement::FitView& sim, std::vector<size_t>& order,
                        std::vector<Slot>* victims, QoSRank* key) {
  order.resize(cands.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto rank = [&](size_t k) { return SlurmRemovalRank(s, s.workloads[cands[k]]); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(a) < rank(b); });
  size_t removed = RemoveUntilFit(s, w, cands, order, sim);
  *key = rank(order[removed - 1]);
  // Slurm's reorders: the last job removed goes to the front, the others keep their order.
  for (int reorder = 0; reorder < 2 && removed > 1; ++reorder) {
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(removed - 1),
                order.begin() + static_cast<std::ptrdiff_t>(removed));
    const size_t again = RemoveUntilFit(s, w, cands, order, sim);
    if (again == removed) break;  // the same jobs: nothing changes any more
    removed = again;
  }
  victims->assign(removed, kNoSlot);
  for (size_t k = 0; k < removed; ++k) (*victims)[k] = cands[order[k]];
}

}  // namespace arbiter::engine
