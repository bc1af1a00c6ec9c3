// The quota-reclaim planner shared by a pod (reclaim.cc) and a pod group (gang_reclaim.cc):
// candidates, the steps over the victim sets (victim_sets.h) and the execution
// (reclaim_planner.h).
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
// a pod's running group, are one workload to Kueue), then the victim sets over them (the budgets
// and the fair-sharing mode).
bool ReclaimPlanner::Collect(std::string* why, std::string* wait) {
  c_ = s_.CollectQuotaCandidates(pre_);
  // Like preemption: come back when a protected candidate turns minRuntime old, even if nothing
  // else happens in the pool by then.
  if (c_.young_until) s_.wakeups.push(*c_.young_until);
  const bool group = !label_.empty();
  s_.DropOwnGroup(&c_, pre_);
  if (c_.slots.empty()) {
    *wait = s_.YoungCandidatesMessage(pre_, c_);
    if (c_.beyond_min)  // Kueue's NoFit: the request alone is above the nominal quota
      *why = std::string(group ? "; the group's request" : "; its request") +
             " exceeds the min of its ElasticQuota, and only borrowWithinCohort would let it "
             "preempt while borrowing";
    return false;
  }
  // Room for the members: step 1's dry run, its nominations dropped.
  sets_.emplace(s_, pre_, c_, [this](const std::vector<Slot>& gone) {
    Plan scratch;
    scratch.at.assign(members_.size(), std::nullopt);
    return StepPlaceable(gone, &scratch);
  });
  return true;
}

// The steps, per unit of attempts: a pod's one unit holds all of Kueue's attempts, a group has a
// unit per attempt.
bool ReclaimPlanner::Choose(Plan* plan, std::string* why, std::string* wait) {
  std::vector<std::vector<bool>> units;
  if (label_.empty() || sets_->fair())  // the fair-sharing strategies have no attempts
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
    if (!sets_->blocking().empty())
      *why = "; not preempting within namespace " + pre_.namespace_ + ": " +
             State::BudgetList(std::move(sets_->blocking())) +
             " protects the workloads that would free it (disruptionBudgets: Strict)";
    return false;
  }
  const std::string* cohort = sets_->cohort();
  *why = (cohort && !cohort->empty()
              ? "; not reclaiming: " + NoRoomSubject() + " even after the borrowing workloads of " +
                    "cohort " + *cohort + " exit"
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
  const std::vector<State::FairPick>* picks = sets_->FairPicks(plan.picks_at);
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
    msg += "preempting toward fair shares in cohort " + *sets_->cohort() + " (namespace " +
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
