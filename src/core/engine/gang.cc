// Pod groups (scheduler-plugins coscheduling: PodGroup spec.minMember, pods labelled
// scheduling.x-k8s.io/pod-group): until minMember members run, a group is admitted to quota and
// placed in one step, all its pending members or none; when its ElasticQuota blocks it, one quota
// preemption plan (with priority preemption for room if the quota victims leave too little) frees
// quota and room for every member (gang_reclaim.cc); when no placement
// exists, one preemption plan frees room for every member; otherwise nothing is evicted. A running
// member that is stopped (preemption, reclaim, node loss, deletion or eviction) takes the others
// with it.
//
// The all-or-nothing step is a dry run on the real node and quota state: each member in queue
// order is charged and allocated tentatively (so the next member sees it), then everything is
// given back; only when every member found room are they bound, in the same order (the same
// choices are valid again). Once minMember members run, further members schedule one by one,
// as coscheduling's Permit lets them through.
//
// spec.scheduleTimeoutSeconds: coscheduling lets members wait at Permit that long for the rest
// of the group, then rejects every waiting member (what they hold is released) and the group is
// retried. Here the wait starts when the group first needs placing (its first member's
// arrival, or a group stopped whole); an attempt that fails once the timeout has passed says so
// ("rejected due to timeout ..."), drops the nominations and quota held by members not waiting
// for victims, and starts a new wait.
#include <algorithm>

#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

void State::JoinGang(Workload& w, const PodGroupRef& group) {
  std::string key = w.namespace_ + "/" + group.name;
  auto it = gang_ids.find(key);
  if (it == gang_ids.end()) {
    it = gang_ids.emplace(key, static_cast<uint32_t>(gangs.size())).first;
    gangs.emplace_back();
    gangs.back().key = std::move(key);
  }
  Gang& g = gangs[it->second];
  g.min_member = std::max<int32_t>(1, group.min_member);  // the PodGroup as last submitted
  g.timeout = group.schedule_timeout;
  g.members.push_back(w.slot);
  w.gang = it->second;
}

void State::LeaveGang(Workload& w) {
  auto& m = gangs[w.gang].members;
  m.erase(std::remove(m.begin(), m.end(), w.slot), m.end());
  w.gang = kNoGang;
}

bool State::NeedsGang(const Workload& w) const {
  const Gang& g = gangs[w.gang];
  int32_t running = 0;
  for (Slot s : g.members) running += workloads[s].phase == Phase::kRunning;
  return running < g.min_member;
}

void State::ApplyTentative(std::vector<Tentative>& log, uint32_t pos,
                           const placement::PodShape& shape, const placement::GpuAssignment& gpus,
                           bool allocate, std::vector<char>* touched, Slot member) {
  if (touched && !touched->empty()) (*touched)[pos] = 1;
  if (allocate)
    nodes[pos].Allocate(shape, gpus);
  else
    nodes[pos].Release(shape, gpus);
  NodeChanged(pos);
  log.push_back({pos, &shape, gpus, allocate, member});
  if (member != kNoSlot) {
    placing.emplace_back(member, pos);
    if (workloads[member].topology) ++placing_with_topology;
    ++pool_version;  // pod topology counted before this member is stale
  }
}

void State::ReleaseTentative(std::vector<Tentative>& log, Slot victim, std::vector<char>* touched) {
  const Workload& v = workloads[victim];
  ApplyTentative(log, node_info[v.node].pos, v.shape, v.gpus, false, touched);
}

void State::UndoTentative(std::vector<Tentative>& log) {
  for (auto it = log.rbegin(); it != log.rend(); ++it) {
    if (it->allocated)
      nodes[it->pos].Release(*it->shape, it->gpus);
    else
      nodes[it->pos].Allocate(*it->shape, it->gpus);
    NodeChanged(it->pos);
    if (it->member != kNoSlot) {
      if (workloads[it->member].topology) --placing_with_topology;
      placing.pop_back();  // the members were placed in log order
      ++pool_version;
    }
  }
  log.clear();
}

bool State::PlanRoomForMembers(const std::vector<Slot>& pend, std::vector<Tentative>& log,
                               std::vector<char>& excluded, std::vector<char>& touched,
                               std::vector<PreemptDryRun>& plans, std::string* why) {
  plans.assign(pend.size(), PreemptDryRun{});
  for (size_t k = 0; k < pend.size(); ++k) {
    Workload& m = workloads[pend[k]];
    PreemptDryRun& plan = plans[k];
    PlaceChoice free_room;
    if (TryPlace(m, &free_room)) {
      plan.pos = free_room.pos;
      ApplyTentative(log, free_room.pos, m.shape, free_room.gpus, true, &touched, m.slot);
      continue;
    }
    plan.excluded = &excluded;
    plan.touched = &touched;
    std::string member_why;
    if (!TryPreempt(m, &member_why, &plan)) {
      *why = m.key + ":" + member_why;
      return false;
    }
    for (Slot v : plan.victims) {
      excluded[v] = 1;
      ReleaseTentative(log, v, &touched);
    }
    ApplyTentative(log, plan.pos, m.shape, placer->Score(nodes[plan.pos], m.shape).gpus, true,
                   &touched, m.slot);
  }
  return true;
}

// One attempt per cycle for the whole group: fewer than minMember present, it waits; else a dry
// run of its quota and room (DryRunGang) binds every member at once, or quota preemption for the
// group (TryReclaimGang) when an ElasticQuota blocks it, or priority preemption for room
// (PlanGangPreemption); else the group waits whole (GangWaitAll).
bool State::AttemptGang(Workload& w) {
  Gang& g = gangs[w.gang];
  if (defer_borrowers && g.deferred_cycle == cycle) return false;  // tried after the first pass
  if (g.tried_cycle == cycle) return g.tried_ok;  // one attempt per cycle for the whole group
  g.tried_cycle = cycle;
  g.tried_ok = false;
  std::vector<Slot> pend;
  int32_t running = 0, stopping = 0;
  for (Slot s : g.members) {
    const Workload& m = workloads[s];
    if (m.phase == Phase::kRunning) ++running;
    if (m.phase == Phase::kTerminating) ++stopping;
    if (m.phase != Phase::kPending) continue;
    if (!m.waiting_for.empty()) return g.tried_ok = true;  // a member waits for its victims
    pend.push_back(s);
  }
  std::sort(pend.begin(), pend.end(), QueueOrder{&workloads});
  const std::string group = "pod group " + g.key;
  if (g.window_start < 0) {  // the group starts waiting now
    g.window_start = now;
    if (g.timeout > 0) wakeups.push(now + g.timeout);
  }
  const int32_t have = static_cast<int32_t>(pend.size()) + running;
  if (have < g.min_member) {
    std::string msg = group + ": " + std::to_string(have) + " of minMember " +
                      std::to_string(g.min_member) + " pods present";
    if (stopping) msg += " (" + std::to_string(stopping) + " still shutting down)";
    msg += "; waiting for the rest";
    GangWaitAll(g, pend, EventType::kFailedScheduling, reason::kUnschedulable, msg,
                group + ": waiting for members");
    return false;
  }
  const GangDryRun dry = DryRunGang(pend, group);
  if (dry.borrowing && defer_borrowers && !workloads[pend.front()].immediate) {
    // As a single workload that borrows (TryAdmitQuota): the groups within their namespaces'
    // min go first, this one after the cycle's first pass (CycleNominalFirst), as Kueue admits
    // the entries that do not borrow before those that do.
    g.deferred_cycle = cycle;
    g.tried_cycle = 0;
    deferred.push_back(pend.front());
    return false;
  }
  if (dry.placed) {  // every member has room: bind them all, same choices, same order
    for (size_t k = 0; k < pend.size(); ++k)
      Bind(workloads[pend[k]], dry.choice[k].pos, dry.choice[k].gpus);
    g.window_start = -1;  // placed whole: no longer waiting
    return g.tried_ok = true;
  }
  if (dry.quota_failure) {
    // Blocked by its ElasticQuota: quota preemption for the whole group (gang_reclaim.cc), or
    // the group waits whole.
    std::string why, wait;
    if (!dry.rq_failure && TryReclaimGang(g, pend, &why, &wait)) return g.tried_ok = true;
    if (!wait.empty())  // the quota is freed once candidates reach minRuntime
      GangWaitAll(g, pend, EventType::kQuotaExceeded, reason::kQuotaExceeded, group + ": " + wait,
                  group + ": quota|minRuntime");
    else
      GangWaitAll(g, pend, EventType::kQuotaExceeded, reason::kQuotaExceeded, dry.failure + why,
                  group + (why.empty() ? ": quota" : ": quota|no room"));
    return false;
  }
  std::vector<PreemptDryRun> plans;
  std::string why;
  if (!PlanGangPreemption(pend, plans, &why)) {
    GangWaitAll(g, pend, EventType::kFailedScheduling, reason::kUnschedulable, dry.failure + why,
                group + ": no room");
    return false;
  }
  ExecuteGangPreemption(pend, plans, group);
  return g.tried_ok = true;
}

void State::GangWaitAll(Gang& g, const std::vector<Slot>& pend, EventType type,
                        std::string_view why, const std::string& msg, const std::string& key) {
  const std::string group = "pod group " + g.key;
  if (g.timeout > 0 && now >= g.window_start + g.timeout) {
    // Coscheduling's Permit timeout: the waiting members are rejected and retried.
    for (Slot s : pend) {
      Workload& m = workloads[s];
      if (m.nominated_node != kNoNode) DropNomination(m);
      if (quota.Holds(m)) quota.Unreserve(m);
    }
    const std::string prefix = group + ": ";
    const std::string detail = msg.rfind(prefix, 0) == 0 ? msg.substr(prefix.size()) : msg;
    const std::string timeout_msg = prefix + "rejected due to timeout after waiting " +
                                    FormatDuration(g.timeout) +
                                    " at plugin Coscheduling, retried (" + detail + ")";
    for (Slot s : pend) SetPending(workloads[s], type, why, timeout_msg, group + ": timeout");
    g.window_start = now;
    wakeups.push(now + g.timeout);
    return;
  }
  for (Slot s : pend) SetPending(workloads[s], type, why, msg, key);
}

// Every pending member charged and placed tentatively, in queue order; everything given back.
State::GangDryRun State::DryRunGang(const std::vector<Slot>& pend, const std::string& group) {
  GangDryRun out;
  out.choice.resize(pend.size());
  std::vector<Tentative> log;
  std::vector<Slot> charged;
  ++pool_version;
  // Quota first, for every member (each charged before the next is checked). After an
  // ElasticQuota failure the rest are still checked against their ResourceQuotas: quota
  // preemption can help only if none of those blocks.
  for (Slot s : pend) {
    Workload& m = workloads[s];
    DefaultFlavor(m);  // a gang takes its first compatible flavor (no fallback across flavors)
    if (!m.has_quota || quota.Holds(m))
      continue;  // a member holding quota from its preemption was checked then
    if (auto rq = quota.ResourceQuotaBlocked(m)) {
      if (!out.quota_failure) out.failure = group + ": " + m.key + ": " + *rq;
      out.quota_failure = out.rq_failure = true;
      break;
    }
    if (!out.quota_failure) {
      auto eq = quota.CheckElastic(m);
      if (!eq.ok) {
        out.failure = group + ": " + m.key + ": " + eq.message;
        out.quota_failure = true;
      }
      out.borrowing |= eq.ok && eq.borrowing;
    }
    quota.Charge(m);
    charged.push_back(m.slot);
  }
  out.borrowing &= !out.quota_failure;
  size_t placed = 0;
  for (; !out.quota_failure && placed < pend.size(); ++placed) {
    Workload& m = workloads[pend[placed]];
    if (!TryPlace(m, &out.choice[placed])) {
      out.failure = group + ": " + std::to_string(placed) + " of " + std::to_string(pend.size()) +
                    " pending members fit; " + m.key + ": " + NoFitMessage(m);
      break;
    }
    ApplyTentative(log, out.choice[placed].pos, m.shape, out.choice[placed].gpus, true, nullptr,
                   m.slot);
  }
  UndoTentative(log);
  for (auto it = charged.rbegin(); it != charged.rend(); ++it) quota.Release(workloads[*it]);
  ++pool_version;  // no-fit reasons seen during the dry run are not kept
  out.placed = placed == pend.size();
  return out;
}

// Preemption for the whole group: each member in queue order takes room that is free or a plan
// of its own (victims of earlier members are gone already); any member without either and
// nothing is evicted. Under disruptionBudgets: Strict all the group's victims together must
// respect the budgets.
bool State::PlanGangPreemption(const std::vector<Slot>& pend, std::vector<PreemptDryRun>& plans,
                               std::string* why) {
  bool never = false, bound = false;  // a member bound already (SubmitPod::node) preempts nothing
  for (Slot s : pend) {
    never |= workloads[s].preemption_policy == PreemptionPolicy::kNever;
    bound |= !workloads[s].bound_node().empty();
  }
  std::vector<char> excluded(workloads.size(), 0);
  std::vector<Tentative> log;
  bool planned = false;
  ++pool_version;
  std::vector<char> touched(nodes.size(), 0);  // by position: nodes the plan changed
  if (!never && !bound) {
    std::string member_why;
    planned = PlanRoomForMembers(pend, log, excluded, touched, plans, &member_why);
    if (!planned) *why = " No preemption plan frees room for every member (" + member_why + ")";
  } else {
    *why = never ? " Preemption is not allowed: a member's preemptionPolicy is Never"
                 : " Preemption is not allowed: a member runs on its node already";
  }
  UndoTentative(log);
  ++pool_version;  // no-fit reasons seen during the dry run are not kept
  if (planned && policy.disruption_budgets == DisruptionBudgetMode::kStrict && !pdbs.empty()) {
    // Each member's plan respected the budgets alone; all the group's victims together must too.
    std::vector<Slot> all;
    for (const PreemptDryRun& plan : plans)
      all.insert(all.end(), plan.victims.begin(), plan.victims.end());
    std::vector<PdbState> pdb_state;
    ComputePdbState(&pdb_state);
    if (CountViolations(all, pdb_state, nullptr) > 0) {
      *why =
          " No preemption plan frees room for every member: their victims together would "
          "violate a PodDisruptionBudget (disruptionBudgets: Strict).";
      planned = false;
    }
  }
  return planned;
}

// Every victim gets SIGTERM; every member is nominated to its node (holding its room).
void State::ExecuteGangPreemption(const std::vector<Slot>& pend,
                                  const std::vector<PreemptDryRun>& plans,
                                  const std::string& group) {
  size_t victims = 0;
  for (size_t k = 0; k < pend.size(); ++k) {
    Workload& m = workloads[pend[k]];
    const PreemptDryRun& plan = plans[k];
    const std::string& node_name = nodes[plan.pos].name;
    if (!plan.victims.empty()) {
      std::string list;
      for (Slot s : plan.victims) list += (list.empty() ? "" : ", ") + workloads[s].key;
      Emit(EventType::kPreempting, m, node_name, reason::kPreempting,
           "preempting " + list + " on " + node_name + " for " + group);
      for (Slot s : plan.victims) StopVictim(workloads[s], m, EventType::kPreempted);
      m.waiting_for = plan.victims;
      victims += plan.victims.size();
    }
    Nominate(m, plan.pos);
    quota.Reserve(m);
  }
  for (Slot s : pend) {
    Workload& m = workloads[s];
    SetPending(m, EventType::kFailedScheduling, reason::kWaitingForVictims,
               group + ": nominated to " + nodes[node_info[m.nominated_node].pos].name +
                   ", waiting for " + std::to_string(victims) + " victim(s) of the group to exit");
  }
}

void State::StopGang(const Workload& stopped, const std::string& by) {
  const Gang& g = gangs[stopped.gang];
  std::vector<Slot> others;
  for (Slot s : g.members)
    if (s != stopped.slot && workloads[s].phase == Phase::kRunning) others.push_back(s);
  std::sort(others.begin(), others.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  for (Slot s : others) {
    Workload& v = workloads[s];
    const Millis grace = GraceOf(v);
    Signal(v, grace);
    v.preempted_by = by;
    v.preemptor = kNoSlot;
    v.preemptions++;
    std::string msg = "stopped with pod group " + g.key + " (member " + stopped.key +
                      (stopped.deleted ? " was deleted" : " was stopped by " + by) +
                      "); SIGTERM, grace " + FormatDuration(grace);
    SetMessage(v, msg, reason::kPreempted, WorkFacts::kStopPlan);
    Emit(EventType::kPreempted, v, node_info[v.node].name, reason::kPreempted, msg, by,
         WorkFacts::kStopPlan, grace);
  }
}

}  // namespace arbiter::engine
