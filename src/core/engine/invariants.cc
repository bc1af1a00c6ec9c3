// Engine::CheckInvariants: what must hold after every command.
#include <algorithm>

#include "core/engine/state.h"

namespace arbiter::engine {

using placement::NodeState;

namespace {

// The node's index entry, and its use within capacity (× overcommit; a node a capacity change
// left above it may only shrink).
Status CheckNodeLimits(const NodeState& n, const NodeInfo& info, uint32_t i) {
  if (!info.present || info.pos != i)
    return Status::Internal("node " + n.name + " is not where the index says");
  const bool over_ok = info.over_capacity;
  if (!over_ok &&
      (n.cpu_used_milli > n.cpu_capacity_milli || n.mem_used_bytes > n.mem_capacity_bytes))
    return Status::Internal("node " + n.name + " above capacity × overcommit");
  for (int32_t g : n.gpu_used_milli)
    if (g < 0 || g > placement::kMilliPerGpu)
      return Status::Internal("GPU overcommitted on " + n.name);
  if (!over_ok)
    for (const auto& [r, v] : n.ext_used.entries())
      if (n.ext_capacity.Has(r) && v > n.ext_capacity.Get(r))
        return Status::Internal("node " + n.name + " above capacity in " + r);
  return Status::Ok();
}

// The node's accounting, GPU summary and fit entry equal what its workloads add up to; `seen`
// counts the nodes each workload is listed on.
Status CheckNodeAccounting(const State& s, uint32_t i, std::vector<int>& seen) {
  const NodeState& n = s.nodes[i];
  NodeState rebuilt = n;
  rebuilt.cpu_used_milli = 0;
  rebuilt.mem_used_bytes = 0;
  std::fill(rebuilt.gpu_used_milli.begin(), rebuilt.gpu_used_milli.end(), 0);
  rebuilt.RecountGpus();
  rebuilt.ext_used = ResourceList{};
  int32_t min_priority = INT32_MAX;
  uint32_t at_min = 0;
  for (Slot x : s.node_live[i].workloads) {
    seen[x]++;
    const Workload& w = s.workloads[x];
    if (w.priority < min_priority) {
      min_priority = w.priority;
      at_min = 0;
    }
    at_min += w.priority == min_priority;
    if (w.node != s.node_at[i])
      return Status::Internal(w.key + " listed on " + n.name + " but bound elsewhere");
    rebuilt.Allocate(w.shape, w.gpus);
  }
  if (min_priority != s.node_live[i].min_priority || at_min != s.node_live[i].at_min_priority)
    return Status::Internal("node " + n.name + " lowest priority differs from its workloads");
  if (rebuilt.cpu_used_milli != n.cpu_used_milli || rebuilt.mem_used_bytes != n.mem_used_bytes ||
      rebuilt.gpu_used_milli != n.gpu_used_milli)
    return Status::Internal("node " + n.name + " accounting differs from its workloads");
  if (!n.gpu_summary_ok || rebuilt.gpu_full_free != n.gpu_full_free ||
      rebuilt.gpu_max_free != n.gpu_max_free || rebuilt.gpu_free_total != n.gpu_free_total)
    return Status::Internal("node " + n.name + " GPU summary differs from its devices");
  const FitEntry& f = s.fit[i];
  if (f.cpu_free != n.cpu_free() || f.mem_free != n.mem_free() ||
      f.full_free != n.full_free_gpus() || f.max_free != n.max_device_free() ||
      f.gpu_free != n.gpu_free_milli() || f.schedulable != n.schedulable)
    return Status::Internal("node " + n.name + " fit index differs from the node");
  return Status::Ok();
}

// Each block of the fit index holds the maxima of its nodes' entries.
Status CheckFitBlocks(const std::vector<FitEntry>& fit, const std::vector<FitEntry>& fit_block) {
  constexpr size_t kFitBlock = State::kFitBlock;
  for (size_t b = 0; b * kFitBlock < fit.size(); ++b) {
    FitEntry m = fit[b * kFitBlock];
    for (size_t i = b * kFitBlock + 1; i < std::min(fit.size(), (b + 1) * kFitBlock); ++i) {
      m.cpu_free = std::max(m.cpu_free, fit[i].cpu_free);
      m.mem_free = std::max(m.mem_free, fit[i].mem_free);
      m.full_free = std::max(m.full_free, fit[i].full_free);
      m.max_free = std::max(m.max_free, fit[i].max_free);
    }
    if (b >= fit_block.size() || fit_block[b].cpu_free != m.cpu_free ||
        fit_block[b].mem_free != m.mem_free || fit_block[b].full_free != m.full_free ||
        fit_block[b].max_free != m.max_free)
      return Status::Internal("fit index block " + std::to_string(b) + " differs from its nodes");
  }
  return Status::Ok();
}

// The workload table: its indexes, each placed workload on exactly one node (`seen`), the queue,
// and the count of known ends.
Status CheckWorkloadTable(const State& st, const std::vector<int>& seen) {
  int64_t known = 0;
  std::vector<int64_t> unfinished(st.unfinished_by_ns.size(), 0);
  for (const auto& [id, s] : st.slot_of) {
    const Workload& w = st.workloads[s];
    if (Value(w.id) != id)
      return Status::Internal("workload table: slot " + std::to_string(s) + " mislabelled");
    if (!w.submitted || w.namespace_id >= unfinished.size())
      return Status::Internal(w.key + " is live but not counted in its namespace");
    ++unfinished[w.namespace_id];
    const bool placed = w.phase == Phase::kRunning || w.phase == Phase::kTerminating;
    known += placed && st.EndKnown(w);
    if (placed != (seen[s] == 1)) return Status::Internal(w.key + " is not on exactly one node");
    if ((w.phase == Phase::kPending && !w.held) != st.IsPending(s))
      return Status::Internal(w.key + " is " + ToString(w.phase) + " but " +
                              (st.IsPending(s) ? "" : "not ") + "in the queue");
    if (IsFinal(w.phase))
      return Status::Internal(w.key + " has finished but is still in the engine");
  }
  if (st.by_key.size() != st.slot_of.size())
    return Status::Internal("workload name index differs from the table");
  if (known != st.ends_known)
    return Status::Internal("the count of workloads with a known end differs from them");
  if (unfinished != st.unfinished_by_ns)
    return Status::Internal("the count of unfinished workloads of a namespace differs from them");
  return Status::Ok();
}

// Each live workload's budgets are those that select it (ascending), and the members are the
// workloads some budget selects (RematchPdb and UnmatchPdb keep what RematchAllPdbs would make).
Status CheckPdbMembers(const State& st) {
  std::vector<Slot> members;
  for (Slot s = 0; s < st.workloads.size(); ++s) {
    const Workload& w = st.workloads[s];
    if (w.slot != s) continue;
    std::vector<uint32_t> want;
    for (uint32_t k = 0; k < st.pdbs.size(); ++k) {
      const auto& p = st.pdbs[k];
      if ((p.meta.namespace_.empty() ? "default" : p.meta.namespace_) == w.namespace_ &&
          p.selector.Matches(w.labels))
        want.push_back(k);
    }
    if (want != w.pdbs)
      return Status::Internal(w.key + "'s budgets differ from those selecting it");
    if (!want.empty()) members.push_back(s);
  }
  std::vector<Slot> kept = st.pdb_members;
  std::sort(kept.begin(), kept.end());
  if (kept != members) return Status::Internal("the budgets' members differ from the workloads");
  return Status::Ok();
}

}  // namespace

Status State::CheckInvariants() const {
  std::vector<int> seen(workloads.size(), 0);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (Status st = CheckNodeLimits(nodes[i], node_info[node_at[i]], i); !st.ok()) return st;
    if (Status st = CheckNodeAccounting(*this, i, seen); !st.ok()) return st;
  }
  if (Status st = CheckFitBlocks(fit, fit_block); !st.ok()) return st;
  if (Status st = CheckWorkloadTable(*this, seen); !st.ok()) return st;
  if (Status st = CheckPdbMembers(*this); !st.ok()) return st;
  if (auto q = quota.CheckInvariants()) return Status::Internal(*q);
  return Status::Ok();
}

}  // namespace arbiter::engine
