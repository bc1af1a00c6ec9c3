// Quota preemption for a pod group (ElasticQuota spec.preemption: reclaimWithinCohort,
// withinNamespace, borrowWithinCohort), all or nothing.
//
// A group whose members do not all fit their namespace's ElasticQuota is planned as one
// preemptor: the sum of the requests of its members that hold no quota yet, at the lowest
// priority and the latest submission among them (a victim must be a valid victim for every
// member). Candidates, their order, validity and the attempts are Kueue's, as for a single
// workload (quota_preemption.cc); members of the group itself are never candidates. The victim set
// is the minimal one freeing the quota for the whole group (greedy in candidate order, then victims
// given back from the last chosen while the group still fits). Then the placement dry run: with
// the victims' room given back, every pending member must find room in queue order (each one's
// room taken before the next is tried); if the minimal set leaves a member without room, every
// valid candidate is tried as gone and, if the group then fits, victims are given back from the
// last while the quota and the room still suffice. If even that leaves a member without room, the
// minimal quota set is combined with priority preemption for room (Kubernetes' rules, as for a
// group that fits its quota but not the nodes: each member in queue order takes free room or a
// plan of its own, the quota victims and earlier members' victims counted as gone). Otherwise
// nothing is evicted. On success every victim gets SIGTERM, every member is nominated to its
// node and holds its quota, and the group binds together once the victims have exited.
#include <algorithm>
#include <optional>

#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

bool State::TryReclaimGang(Gang& g, const std::vector<Slot>& pend, std::string* why,
                           std::string* wait) {
  // The group as one preemptor.
  const Workload* first = nullptr;
  Workload agg;
  for (Slot s : pend) {
    const Workload& m = workloads[s];
    if (!m.has_quota || quota.Holds(m)) continue;
    if (!first) {
      first = &m;
      agg = m;
      agg.requests = ResourceList{};
    } else if (m.flavor != first->flavor) {
      return false;  // members on different flavors: no single quota plan
    }
    agg.requests += m.requests;
    agg.priority = std::min(agg.priority, m.priority);
    agg.submit_time = std::max(agg.submit_time, m.submit_time);
  }
  if (!first || !quota.HasElastic(agg.namespace_)) return false;
  QuotaCandidates c = CollectQuotaCandidates(agg);
  if (c.young_until) wakeups.push(*c.young_until);
  {  // never a member of the group itself
    QuotaCandidates kept = c;
    kept.slots.clear();
    kept.variant.clear();
    kept.young.clear();
    for (size_t k = 0; k < c.slots.size(); ++k)
      if (!SameGang(workloads[c.slots[k]], agg)) {
        kept.slots.push_back(c.slots[k]);
        kept.variant.push_back(c.variant[k]);
      }
    for (Slot s : c.young)
      if (!SameGang(workloads[s], agg)) kept.young.push_back(s);
    c = std::move(kept);
  }
  if (c.slots.empty()) {
    *wait = YoungCandidatesMessage(agg, c);
    return false;
  }
  const bool strict = policy.disruption_budgets == DisruptionBudgetMode::kStrict && !pdbs.empty();
  std::vector<PdbState> pdb_state;
  if (strict) ComputePdbState(&pdb_state);
  auto released_of = [&](const std::vector<Slot>& victims) {
    std::vector<const Workload*> released = c.base;
    for (Slot s : victims) released.push_back(&workloads[s]);
    return released;
  };

  // The placement dry run: the victims' room given back, then every member placed in turn.
  std::vector<PlaceChoice> choice(pend.size());
  auto placeable = [&](const std::vector<Slot>& gone) {
    std::vector<Tentative> log;
    ++pool_version;
    for (Slot s : gone) ReleaseTentative(log, s, nullptr);
    bool ok = true;
    for (size_t k = 0; k < pend.size() && ok; ++k) {
      Workload& m = workloads[pend[k]];
      ok = TryPlace(m, &choice[k]);
      if (ok) ApplyTentative(log, choice[k].pos, m.shape, choice[k].gpus, true);
    }
    UndoTentative(log);
    ++pool_version;  // no-fit reasons seen during the dry run are not kept
    return ok;
  };

  std::vector<std::string> blocking;  // budgets that protected a candidate (Strict)
  // Victims in candidate order until the quota is free (and, with `room`, the group placeable),
  // then given back from the last while that still holds.
  auto build = [&](bool allow, bool room) -> std::optional<std::vector<Slot>> {
    std::vector<Slot> chosen;
    std::vector<const Workload*> released = c.base;
    bool freed = false;
    for (size_t k = 0; k < c.slots.size() && (!freed || room); ++k) {
      if (!QuotaCandidateValid(c, k, released, allow)) continue;
      chosen.push_back(c.slots[k]);
      if (strict && QuotaVictimViolations(agg, chosen, {}, pdb_state, &blocking) > 0) {
        chosen.pop_back();
        continue;
      }
      released.push_back(&workloads[c.slots[k]]);
      if (!freed) freed = QuotaFitsOnceGone(agg, released, allow);
    }
    if (!freed || (room && !placeable(chosen))) return std::nullopt;
    for (size_t k = chosen.size(); k-- > 0;) {
      std::vector<Slot> without = chosen;
      without.erase(without.begin() + static_cast<long>(k));
      if (QuotaFitsOnceGone(agg, released_of(without), allow) && (!room || placeable(without)))
        chosen = std::move(without);
    }
    return chosen;
  };
  // The combined plan: `gone` (quota victims) given back, then each member in queue order takes
  // free room or a priority preemption plan of its own (TryPreempt's dry run; victims of the
  // plan so far are excluded). Fills `node_plans` (each member's node and its victims).
  std::vector<PreemptDryRun> node_plans;
  std::string room_why;  // why the combined plan failed
  auto preempt_for_room = [&](const std::vector<Slot>& gone) {
    for (Slot s : pend)
      if (workloads[s].preemption_policy == PreemptionPolicy::kNever) {
        room_why = "a member's preemptionPolicy is Never";
        return false;
      }
    std::vector<char> excluded(workloads.size(), 0), touched(nodes.size(), 0);
    std::vector<Tentative> log;
    ++pool_version;
    for (Slot s : gone) {
      excluded[s] = 1;
      ReleaseTentative(log, s, &touched);
    }
    bool ok = PlanRoomForMembers(pend, log, excluded, touched, node_plans, &room_why);
    UndoTentative(log);
    ++pool_version;
    if (ok && strict) {  // each plan respected the budgets alone; all victims together must too
      std::vector<Slot> all;
      for (const PreemptDryRun& plan : node_plans)
        all.insert(all.end(), plan.victims.begin(), plan.victims.end());
      std::vector<std::string> names;
      if (QuotaVictimViolations(agg, gone, all, pdb_state, &names) > 0) {
        room_why = "its victims together would violate " + BudgetList(std::move(names)) +
                   " (disruptionBudgets: Strict)";
        ok = false;
      }
    }
    return ok;
  };

  std::optional<std::vector<Slot>> victims;
  bool freeable = false, combined = false;
  for (const bool allow : c.attempts) {
    victims = build(allow, false);
    if (!victims || victims->empty()) continue;
    freeable = true;
    if (placeable(*victims)) break;
    auto more = build(allow, true);
    if (more && !more->empty()) {
      victims = std::move(more);
      break;
    }
    if (preempt_for_room(*victims)) {
      combined = true;
      break;
    }
    victims.reset();
  }
  if (!victims || victims->empty()) {
    if (freeable) {
      const std::string* cohort = quota.CohortOf(agg.namespace_);
      *why =
          cohort && !cohort->empty()
              ? "; not reclaiming: the group would not have room for every member even after the "
                "borrowing workloads of cohort " +
                    *cohort + " exit"
              : "; not preempting: the group would not have room for every member even after "
                "lower-priority workloads of namespace " +
                    agg.namespace_ + " exit";
      if (!room_why.empty()) *why += ", nor by preempting for room (" + room_why + ")";
    } else {
      *wait = YoungCandidatesMessage(agg, c);
      if (!blocking.empty())
        *why = "; not preempting within namespace " + agg.namespace_ + ": " +
               BudgetList(std::move(blocking)) +
               " protects the workloads that would free it (disruptionBudgets: Strict)";
    }
    return false;
  }
  if (combined) {  // the members' nodes are those of the combined plan
    for (size_t k = 0; k < pend.size(); ++k) choice[k].pos = node_plans[k].pos;
  } else {
    placeable(*victims);  // the members' nodes (`choice`) for this victim set
  }

  // Execute. A victim waits under the member placed on its node (or the first member).
  std::sort(victims->begin(), victims->end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  const std::string group = "pod group " + g.key;
  size_t own = 0;
  for (Slot s : *victims) {
    Workload& v = workloads[s];
    const uint32_t pos = node_info[v.node].pos;
    Slot by = pend.front();
    for (size_t k = 0; k < pend.size(); ++k)
      if (choice[k].pos == pos) {
        by = pend[k];
        break;
      }
    Workload& p = workloads[by];
    if (v.namespace_id == p.namespace_id) {
      ++own;
      StopWithinNamespace(v, p);
    } else {
      StopVictim(v, p, EventType::kReclaimed);
    }
    if (v.preemptor == by) p.waiting_for.push_back(s);
  }
  size_t for_room = 0;  // victims preempted for room (combined plan)
  for (size_t k = 0; combined && k < pend.size(); ++k) {
    Workload& m = workloads[pend[k]];
    const std::vector<Slot>& plan_victims = node_plans[k].victims;
    if (plan_victims.empty()) continue;
    const std::string& node_name = nodes[node_plans[k].pos].name;
    std::string list;
    for (Slot s : plan_victims) list += (list.empty() ? "" : ", ") + workloads[s].key;
    Emit(EventType::kPreempting, m, node_name, reason::kPreempting,
         "preempting " + list + " on " + node_name + " for " + group);
    for (Slot s : plan_victims) {
      StopVictim(workloads[s], m, EventType::kPreempted);
      if (workloads[s].preemptor == m.slot) m.waiting_for.push_back(s);
    }
    for_room += plan_victims.size();
  }
  std::vector<uint32_t> where;
  for (size_t k = 0; k < pend.size(); ++k) {
    Workload& m = workloads[pend[k]];
    Nominate(m, choice[k].pos);
    quota.Reserve(m);
    if (std::find(where.begin(), where.end(), choice[k].pos) == where.end())
      where.push_back(choice[k].pos);
  }
  std::string nodes_list;
  for (uint32_t pos : where) nodes_list += (nodes_list.empty() ? "" : ",") + nodes[pos].name;
  const std::string n = std::to_string(victims->size());
  const std::string msg =
      group + ": " +
      (own == 0 ? "reclaiming lent quota: waiting for " + n + " borrowing workload(s)"
                : "preempting within the quota of namespace " + agg.namespace_ + ": waiting for " +
                      n + " workload(s)") +
      (for_room
           ? " and " + std::to_string(for_room) + " lower-priority workload(s) preempted for room"
           : "") +
      " to exit (nominated to " + nodes_list + ")";
  for (Slot s : pend) SetPending(workloads[s], EventType::kQuotaExceeded, reason::kReclaiming, msg);
  return true;
}

}  // namespace arbiter::engine
