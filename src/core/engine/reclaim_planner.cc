// The quota-reclaim planner shared by a pod (reclaim.cc) and a pod group (gang_reclaim.cc):
// candidates, minimal victim sets, the steps and the execution (reclaim_planner.h).
#include "core/engine/reclaim_planner.h"

#include <algorithm>

#include "core/engine/fair_share.h"
#include "core/engine/reasons.h"

namespace arbiter::engine {

ReclaimPlanner::ReclaimPlanner(State& s, const Workload& preemptor, std::vector<Slot> members,
                               std::string label)
    : s_(s), pre_(preemptor), members_(std::move(members)), label_(std::move(label)) {}

bool ReclaimPlanner::Run(std::string* why, std::string* wait) {
  if (!Collect(why, wait)) return false;
  Plan plan;
  plan.at.assign(members_.size(), std::nullopt);
  if (!Choose(&plan, why, wait)) return false;
  Execute(plan);
  return true;
}

// The candidates (never a member of the preemptor's own pod group: a group's pending members, or
// a pod's running group, are one workload to Kueue), the budgets and the fair-sharing mode.
bool ReclaimPlanner::Collect(std::string* why, std::string* wait) {
  c_ = s_.CollectQuotaCandidates(pre_);
  // Like preemption: come back when a protected candidate turns minRuntime old, even if nothing
  // else happens in the pool by then.
  if (c_.young_until) s_.wakeups.push(*c_.young_until);
  const bool group = !label_.empty();
  if (pre_.gang != kNoGang) DropOwnGroup();
  if (c_.slots.empty()) {
    *wait = s_.YoungCandidatesMessage(pre_, c_);
    if (c_.beyond_min)  // Kueue's NoFit: the request alone is above the nominal quota
      *why = std::string(group ? "; the group's request" : "; its request") +
             " exceeds the min of its ElasticQuota, and only borrowWithinCohort would let it "
             "preempt while borrowing";
    return false;
  }
  strict_ = s_.policy.disruption_budgets == DisruptionBudgetMode::kStrict && !s_.pdbs.empty();
  if (strict_) s_.ComputePdbState(&pdb_state_);
  cohort_ = s_.quota.CohortOf(pre_.namespace_);
  // Under fair sharing (fair_preemption.cc) the strategies choose, for a pod and a group alike;
  // the picks of each plan are kept for the victims' messages.
  fair_ = cohort_ && s_.quota.FairSharing(*cohort_);
  return true;
}

void ReclaimPlanner::DropOwnGroup() {
  State::QuotaCandidates kept = c_;
  kept.slots.clear();
  kept.variant.clear();
  kept.young.clear();
  for (size_t k = 0; k < c_.slots.size(); ++k)
    if (!s_.SameGang(s_.workloads[c_.slots[k]], pre_)) {
      kept.slots.push_back(c_.slots[k]);
      kept.variant.push_back(c_.variant[k]);
    }
  for (Slot v : c_.young)
    if (!s_.SameGang(s_.workloads[v], pre_)) kept.young.push_back(v);
  c_ = std::move(kept);
}

bool ReclaimPlanner::RoomOk(const Room& room, const std::vector<Slot>& gone) {
  switch (room.kind) {
    case Room::Kind::kNone:
      return true;
    case Room::Kind::kNode:
      return s_.FitsOnceGone(room.node, pre_, gone);
    case Room::Kind::kMembers: {
      Plan scratch;
      scratch.at.assign(members_.size(), std::nullopt);
      return StepPlaceable(gone, &scratch);
    }
  }
  return false;
}

std::optional<std::vector<Slot>> ReclaimPlanner::MinimalSet(const std::vector<bool>& attempts,
                                                            Room room) {
  if (fair_) return FairSet(room);
  for (const bool allow : attempts)
    if (auto set = ClassicSet(allow, room)) return set;
  return std::nullopt;
}

std::optional<std::vector<Slot>> ReclaimPlanner::FairSet(const Room& room) {
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

std::span<const uint32_t> ReclaimPlanner::CandidatesOn(uint32_t pos) {
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

const ReclaimPlanner::Prefix& ReclaimPlanner::GreedyPrefix(bool allow) {
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
std::optional<std::vector<Slot>> ReclaimPlanner::ClassicSet(bool allow, const Room& room) {
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
bool ReclaimPlanner::TakeForRoom(bool allow, const Room& room, std::vector<Slot>& chosen,
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

// The steps, per unit of attempts: a pod's one unit holds all of Kueue's attempts, a group has a
// unit per attempt.
bool ReclaimPlanner::Choose(Plan* plan, std::string* why, std::string* wait) {
  std::vector<std::vector<bool>> units;
  if (label_.empty() || fair_)  // the fair-sharing strategies have no attempts
    units.push_back(c_.attempts);
  else
    for (const bool allow : c_.attempts) units.push_back({allow});
  bool freeable = false;
  for (const std::vector<bool>& unit : units) {
    auto quota_only = MinimalSet(unit, Room{});
    if (!quota_only || quota_only->empty()) continue;
    freeable = true;
    plan->victims = std::move(*quota_only);
    if (StepPlaceable(plan->victims, plan) || StepRoom(unit, plan) ||
        StepCombined(plan->victims, plan))
      return true;
  }
  if (!freeable) {  // the candidates cannot free enough quota
    *wait = s_.YoungCandidatesMessage(pre_, c_);
    if (!blocking_.empty())
      *why = "; not preempting within namespace " + pre_.namespace_ + ": " +
             State::BudgetList(std::move(blocking_)) +
             " protects the workloads that would free it (disruptionBudgets: Strict)";
    return false;
  }
  *why = (cohort_ && !cohort_->empty()
              ? "; not reclaiming: " + NoRoomSubject() + " even after the borrowing workloads of " +
                    "cohort " + *cohort_ + " exit"
              : "; not preempting: " + NoRoomSubject() + " even after lower-priority workloads " +
                    "of namespace " + pre_.namespace_ + " exit") +
         NoRoomDetail() + ", nor by preempting for room (" + room_why_ + ")";
  return false;
}

// Every victim gets SIGTERM (from the member placed on its node, else the first) and is waited
// for; the victims preempted for room are announced per member.
void ReclaimPlanner::Execute(const Plan& plan) {
  std::vector<Slot> victims = plan.victims;
  std::sort(victims.begin(), victims.end(),
            [&](Slot a, Slot b) { return Value(s_.workloads[a].id) < Value(s_.workloads[b].id); });
  const std::vector<State::FairPick>* picks = nullptr;
  for (const auto& [at, fair_plan] : fair_plans_)
    if (at == plan.picks_at) picks = &fair_plan;
  for (Slot m : members_) s_.workloads[m].waiting_for.clear();
  size_t own = 0, toward_fair = 0;
  for (Slot v : victims) {
    Workload& victim = s_.workloads[v];
    const uint32_t pos = s_.node_info[victim.node].pos;
    size_t by = 0;
    for (size_t k = 0; k < members_.size(); ++k)
      if (plan.at[k] == pos) {
        by = k;
        break;
      }
    Workload& p = s_.workloads[members_[by]];
    const State::FairPick* pick = nullptr;
    if (picks)
      for (const State::FairPick& f : *picks)
        if (f.slot == v) pick = &f;
    if (victim.namespace_id == p.namespace_id) {
      ++own;
      s_.StopWithinNamespace(victim, p);
    } else if (pick) {
      const std::string msg = s_.FairWhy(p, *pick);
      const bool reclaim = pick->rule == State::FairRule::kWithinNominal;
      toward_fair += reclaim ? 0 : 1;
      s_.StopVictim(victim, p, reclaim ? EventType::kReclaimed : EventType::kPreempted, &msg);
    } else {
      s_.StopVictim(victim, p, EventType::kReclaimed);
    }
    if (victim.preemptor == p.slot) p.waiting_for.push_back(v);
  }
  for (size_t k = 0; k < plan.for_room.size(); ++k) {
    Workload& m = s_.workloads[members_[k]];
    const std::vector<Slot>& for_room = plan.for_room[k].victims;
    if (for_room.empty()) continue;
    const std::string& node_name = s_.nodes[plan.for_room[k].pos].name;
    std::string list;
    for (Slot v : for_room) list += (list.empty() ? "" : ", ") + s_.workloads[v].key;
    s_.Emit(EventType::kPreempting, m, node_name, reason::kPreempting,
            "preempting " + list + " on " + node_name +
                (label_.empty() ? " (the quota victims alone leave no node with room)"
                                : " for " + label_));
    for (Slot v : for_room) {
      s_.StopVictim(s_.workloads[v], m, EventType::kPreempted);
      if (s_.workloads[v].preemptor == m.slot) m.waiting_for.push_back(v);
    }
  }
  Announce(plan, own, toward_fair, picks);
}

// Each member nominated where the plan put it (holding the room the victims leave) and holding
// its quota; one pending message for all.
void ReclaimPlanner::Announce(const Plan& plan, size_t own, size_t toward_fair,
                              const std::vector<State::FairPick>* picks) {
  std::vector<uint32_t> where;
  for (size_t k = 0; k < members_.size(); ++k) {
    Workload& m = s_.workloads[members_[k]];
    if (plan.at[k]) {
      s_.Nominate(m, *plan.at[k]);
      if (std::find(where.begin(), where.end(), *plan.at[k]) == where.end())
        where.push_back(*plan.at[k]);
    }
    s_.quota.Reserve(m);
  }
  size_t for_room = 0;
  for (const PreemptDryRun& r : plan.for_room) for_room += r.victims.size();
  std::string nodes_list;
  for (uint32_t pos : where) nodes_list += (nodes_list.empty() ? "" : ",") + s_.nodes[pos].name;
  const std::string n = std::to_string(plan.victims.size());
  const std::string tail = (for_room == 0 ? ""
                                          : " and " + std::to_string(for_room) +
                                                " lower-priority workload(s) preempted for room") +
                           " to exit" +
                           (nodes_list.empty() ? "" : " (nominated to " + nodes_list + ")");
  std::string msg = label_.empty() ? "" : label_ + ": ";
  if (toward_fair > 0)
    msg += "preempting toward fair shares in cohort " + *cohort_ + " (namespace " +
           pre_.namespace_ +
           "'s share once admitted: " + FormatShare(picks->front().preemptor_share) +
           "): waiting for " + n + " workload(s)";
  else if (own == 0)
    msg += "reclaiming lent quota: waiting for " + n + " borrowing workload(s)";
  else
    msg += "preempting within the quota of namespace " + pre_.namespace_ + ": waiting for " + n +
           " workload(s)";
  for (Slot m : members_)
    s_.SetPending(s_.workloads[m], EventType::kQuotaExceeded, reason::kReclaiming, msg + tail);
}

}  // namespace arbiter::engine
