// The victim sets of quota preemption (victim_sets.h): greedy, then given back; or the
// fair-sharing strategies'.
#include "core/engine/victim_sets.h"

#include <algorithm>

namespace arbiter::engine {

VictimSets::VictimSets(const State& s, const Workload& preemptor, const State::QuotaCandidates& c,
                       MembersFit members_fit)
    : s_(s), pre_(preemptor), c_(c), members_fit_(std::move(members_fit)) {
  strict_ = s_.policy.disruption_budgets == DisruptionBudgetMode::kStrict && !s_.pdbs.empty();
  if (strict_) s_.ComputePdbState(&pdb_state_);
  cohort_ = s_.quota.CohortOf(pre_.namespace_);
  fair_ = cohort_ && s_.quota.FairSharing(*cohort_);
}

bool VictimSets::RoomOk(const Room& room, const std::vector<Slot>& gone) {
  switch (room.kind) {
    case Room::Kind::kNone:
      return true;
    case Room::Kind::kNode:
      return s_.FitsOnceGone(room.node, pre_, gone);
    case Room::Kind::kMembers:
      return members_fit_(gone);
  }
  return false;
}

std::optional<std::vector<Slot>> VictimSets::MinimalSet(const std::vector<bool>& attempts,
                                                        const Room& room) {
  if (fair_) return FairSet(room);
  for (const bool allow : attempts)
    if (auto set = ClassicSet(allow, room)) return set;
  return std::nullopt;
}

const std::vector<State::FairPick>* VictimSets::FairPicks(std::optional<uint32_t> node) const {
  const std::vector<State::FairPick>* picks = nullptr;
  for (const auto& [at, fair_plan] : fair_plans_)  // the latest set found for `node`
    if (at == node) picks = &fair_plan;
  return picks;
}

std::optional<std::vector<Slot>> VictimSets::FairSet(const Room& room) {
  std::optional<uint32_t> node;
  if (room.kind == Room::Kind::kNode) node = room.node;
  std::vector<std::string> names;
  auto picks = s_.FairVictims(pre_, c_, node, strict_ ? &pdb_state_ : nullptr, &names);
  blocking_.insert(blocking_.end(), names.begin(), names.end());
  if (!picks) return std::nullopt;
  std::vector<Slot> out;
  for (const State::FairPick& p : *picks) out.push_back(p.slot);
  // The strategies free the quota (and room on `node`); a group's members must also fit.
  if (room.kind == Room::Kind::kMembers && !RoomOk(room, out)) return std::nullopt;
  fair_plans_.emplace_back(node, std::move(*picks));
  return out;
}

std::span<const uint32_t> VictimSets::CandidatesOn(uint32_t pos) {
  if (node_start_.empty()) {  // a counting sort by node position, stable: candidate order kept
    std::vector<uint32_t> at(c_.slots.size());
    node_start_.assign(s_.nodes.size() + 1, 0);
    for (size_t k = 0; k < c_.slots.size(); ++k) {
      at[k] = s_.node_info[s_.workloads[c_.slots[k]].node].pos;
      ++node_start_[at[k] + 1];
    }
    for (size_t i = 1; i < node_start_.size(); ++i) node_start_[i] += node_start_[i - 1];
    std::vector<uint32_t> fill(node_start_.begin(), node_start_.end() - 1);
    by_node_.resize(c_.slots.size());
    for (size_t k = 0; k < c_.slots.size(); ++k) by_node_[fill[at[k]]++] = static_cast<uint32_t>(k);
  }
  return {by_node_.data() + node_start_[pos], node_start_[pos + 1] - node_start_[pos]};
}

const VictimSets::Prefix& VictimSets::GreedyPrefix(bool allow) {
  Prefix& p = prefix_[allow ? 1 : 0];
  if (p.computed) return p;
  p.computed = true;
  p.released = c_.base;
  for (; p.next < c_.slots.size() && !p.freed; ++p.next) {
    if (!s_.QuotaCandidateValid(c_, p.next, p.released, allow)) continue;
    p.chosen.push_back(c_.slots[p.next]);
    if (strict_ && s_.QuotaVictimViolations(pre_, p.chosen, {}, pdb_state_, &blocking_) > 0) {
      p.chosen.pop_back();
      continue;
    }
    p.released.push_back(&s_.workloads[c_.slots[p.next]]);
    p.freed = s_.QuotaFitsOnceGone(pre_, p.released, allow);
  }
  return p;
}

// Kueue's greedy pass in candidate order (GreedyPrefix, until the quota is free), then the victims
// that make room (TakeForRoom), then victims given back from the last chosen while the quota (and
// the room) still suffice.
std::optional<std::vector<Slot>> VictimSets::ClassicSet(bool allow, const Room& room) {
  const Prefix& p = GreedyPrefix(allow);
  if (!p.freed) return std::nullopt;
  std::vector<Slot> chosen = p.chosen;
  std::vector<const Workload*> released = p.released;
  if (!TakeForRoom(allow, room, chosen, released)) return std::nullopt;
  std::vector<const Workload*> rest;
  for (size_t k = chosen.size(); k-- > 0;) {
    std::vector<Slot> without = chosen;
    without.erase(without.begin() + static_cast<long>(k));
    rest.assign(c_.base.begin(), c_.base.end());
    for (Slot v : without) rest.push_back(&s_.workloads[v]);
    if (s_.QuotaFitsOnceGone(pre_, rest, allow) && RoomOk(room, without))
      chosen = std::move(without);
  }
  return chosen;
}

// With the quota free: for a node, the candidates there after the prefix are taken until the
// preemptor fits there (whether it fits is checked after each victim there, prefix included, as
// the pass takes them); for a group's members, every further valid candidate is taken and the room
// tested at the end. False without room.
bool VictimSets::TakeForRoom(bool allow, const Room& room, std::vector<Slot>& chosen,
                             std::vector<const Workload*>& released) {
  if (room.kind == Room::Kind::kNone) return true;
  const bool on_node = room.kind == Room::Kind::kNode;
  const size_t next = GreedyPrefix(allow).next;
  bool fits = !on_node;
  if (on_node) {
    std::vector<Slot> so_far;
    fits = RoomOk(room, so_far);
    for (size_t j = 0; j < chosen.size() && !fits; ++j) {
      so_far.push_back(chosen[j]);
      if (s_.workloads[chosen[j]].node == s_.node_at[room.node]) fits = RoomOk(room, so_far);
    }
  }
  auto take = [&](size_t k) {
    if (!s_.QuotaCandidateValid(c_, k, released, allow)) return;
    chosen.push_back(c_.slots[k]);
    if (strict_ && s_.QuotaVictimViolations(pre_, chosen, {}, pdb_state_, &blocking_) > 0) {
      chosen.pop_back();
      return;
    }
    released.push_back(&s_.workloads[c_.slots[k]]);
    if (!fits) fits = RoomOk(room, chosen);
  };
  if (on_node) {
    for (uint32_t k : CandidatesOn(room.node))
      if (fits)
        break;
      else if (k >= next)
        take(k);
    return fits;
  }
  for (size_t k = next; k < c_.slots.size(); ++k) take(k);  // `fits` stays true until the end
  return RoomOk(room, chosen);
}

}  // namespace arbiter::engine
