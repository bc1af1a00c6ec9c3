// Quota preemption (ElasticQuota spec.preemption: Kueue's reclaimWithinCohort, withinNamespace,
// borrowWithinCohort) for one preemptor, planned whole before anything is evicted
// (engine-internal). One planner serves a single pod (PodReclaim, reclaim.cc) and a pod group
// (GroupReclaim, gang_reclaim.cc): the preemptor is the pod itself, or the group's pending members
// as one (the sum of their requests, their lowest priority and latest submission). What they share:
//   - the candidates, their order, validity and Kueue's attempts (quota_preemption.cc); the
//     preemptor's own pod group's members are never candidates (a group's, or a pod's running
//     group's);
//   - under fair sharing in the cohort, the fair-sharing strategies' victims (fair_preemption.cc),
//     for a pod and a group alike;
//   - the victim sets (victim_sets.h, shared with the minRuntime wait of quota_wait.cc): greedy in
//     candidate order until the quota is free (and, when asked, room is made), then victims given
//     back from the last chosen while that still holds;
//   - the steps: (1) the minimal quota-freeing set, if the preemptor is then placeable; (2) else a
//     set that also makes room; (3) else the quota set combined with priority preemption for room
//     (Kubernetes' rules); else nothing is evicted and `why` says so;
//   - the execution: SIGTERM to every victim, each member nominated where the plan put it and
//     holding its quota, one pending message.
// What differs is what "placeable" and "room" mean for each (the three Step* hooks), and the order
// of the attempts and the steps: a pod runs each step over all of Kueue's attempts (steps outer),
// a group runs all steps per attempt (attempts outer).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/state.h"
#include "core/engine/victim_sets.h"

namespace arbiter::engine {

class ReclaimPlanner {
 public:
  // False with nothing evicted (`why`: a suffix for the quota reason, or ""; `wait`: the
  // YoungCandidatesMessage when the quota waits only for candidates to reach minRuntime).
  bool Run(std::string* why, std::string* wait);

 protected:
  // `members`: the pending workloads in queue order (a pod: itself); `preemptor`: the workload the
  // quota is planned for (a pod: itself; a group: the sum of its members); `label`: "pod group
  // ns/name" for a group, "" for a pod. `preemptor` must outlive the planner.
  ReclaimPlanner(State& s, const Workload& preemptor, std::vector<Slot> members, std::string label);
  virtual ~ReclaimPlanner() = default;
  ReclaimPlanner(const ReclaimPlanner&) = delete;
  ReclaimPlanner& operator=(const ReclaimPlanner&) = delete;

  // What a plan evicts and where its members go.
  struct Plan {
    std::vector<Slot> victims;                // the quota victims
    std::vector<PreemptDryRun> for_room;      // per member: priority preemption for room (step 3)
    std::vector<std::optional<uint32_t>> at;  // per member: the node it is nominated to, if any
    std::optional<uint32_t> picks_at;         // the fair plan (by its node) explaining the victims
  };
  using Room = VictimSets::Room;

  // Step 1: is the preemptor placeable once `gone` exit? (fills `plan->at` when it nominates)
  virtual bool StepPlaceable(const std::vector<Slot>& gone, Plan* plan) = 0;
  // Step 2: a victim set that frees the quota and makes room, over `attempts`.
  virtual bool StepRoom(const std::vector<bool>& attempts, Plan* plan) = 0;
  // Step 3: the quota victims `gone` plus priority preemption for room (`room_why_` on failure).
  virtual bool StepCombined(const std::vector<Slot>& gone, Plan* plan) = 0;
  // "no node would have room for it" / "the group would not have room for every member", and
  // what follows the "... exit" of the failure reason.
  virtual std::string NoRoomSubject() const = 0;
  virtual std::string NoRoomDetail() const { return ""; }

  // VictimSets::MinimalSet (Room::Kind::kMembers: StepPlaceable) and CandidatesOn (indices into
  // c_.slots), over the candidates Collect kept.
  std::optional<std::vector<Slot>> MinimalSet(const std::vector<bool>& attempts, Room room) {
    return sets_->MinimalSet(attempts, room);
  }
  std::span<const uint32_t> CandidatesOn(uint32_t pos) { return sets_->CandidatesOn(pos); }
  VictimSets& sets() { return *sets_; }

  State& s_;
  const Workload& pre_;
  const std::vector<Slot> members_;
  const std::string label_;
  State::QuotaCandidates c_;
  std::string room_why_;  // why step 3 failed (set by StepCombined)

 private:
  bool Collect(std::string* why, std::string* wait);
  bool Choose(Plan* plan, std::string* why, std::string* wait);
  void Execute(const Plan& plan);
  void Announce(const Plan& plan, size_t own, size_t toward_fair,
                const std::vector<State::FairPick>* picks);

  std::optional<VictimSets> sets_;  // over c_, once Collect found candidates
};

}  // namespace arbiter::engine
