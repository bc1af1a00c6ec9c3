// The victim sets of quota preemption for one preemptor (engine-internal): Kueue's rule over the
// candidates (quota_preemption.cc: their order, validity and attempts), the same for a pod and a
// pod group and whether victims are planned now (the reclaim planner, reclaim_planner.h) or ahead
// (the minRuntime wait, quota_wait.cc's State::QuotaOnlyVictims):
//   - outside fair sharing, per attempt (allowBorrowing): greedy in candidate order until the
//     quota is free (and, when asked, room is made), then victims given back from the last chosen
//     while that still holds; under disruptionBudgets: Strict a candidate whose eviction would
//     break a budget is skipped;
//   - under fair sharing in the preemptor's cohort: the fair-sharing strategies' victims
//     (fair_preemption.cc), which have no attempts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/state.h"

namespace arbiter::engine {

class VictimSets {
 public:
  // Where the victims must make room besides freeing the quota.
  struct Room {
    enum class Kind : uint8_t {
      kNone,     // the quota only
      kNode,     // the preemptor on `node`: beyond the quota's needs, only victims there help
      kMembers,  // every member (the planner's members_fit): tested once every valid candidate is
                 // gone
    };
    Kind kind = Kind::kNone;
    uint32_t node = 0;
  };
  // Whether every member of the preemptor has room once `gone` exit (Room::Kind::kMembers).
  using MembersFit = std::function<bool(const std::vector<Slot>& gone)>;

  // `c` (the preemptor's candidates, its own pod group's members left out) must outlive the sets
  // and stay unchanged. Reads the budgets (Strict) and the cohort's fair-sharing mode once.
  VictimSets(const State& s, const Workload& preemptor, const State::QuotaCandidates& c,
             MembersFit members_fit = {});
  VictimSets(const VictimSets&) = delete;
  VictimSets& operator=(const VictimSets&) = delete;

  // The first of `attempts` (Kueue's allowBorrowing values) with a minimal set that frees the
  // quota and makes `room`; under fair sharing, the fair-sharing strategies' set instead.
  std::optional<std::vector<Slot>> MinimalSet(const std::vector<bool>& attempts, const Room& room);
  bool RoomOk(const Room& room, const std::vector<Slot>& gone);
  // The candidates (indices into c.slots, in candidate order) on the node at `pos`.
  std::span<const uint32_t> CandidatesOn(uint32_t pos);

  bool strict() const { return strict_; }  // disruptionBudgets: Strict, with budgets
  const std::vector<State::PdbState>& pdb_state() const { return pdb_state_; }
  const std::string* cohort() const { return cohort_; }
  bool fair() const { return fair_; }  // fair sharing in the cohort
  // The budgets that protected a candidate (Strict), over every set searched so far.
  std::vector<std::string>& blocking() { return blocking_; }
  // The fair-sharing picks of the set found for a room on `node` (none: the quota only or the
  // members), for the victims' messages; null when no fair set was found for it.
  const std::vector<State::FairPick>* FairPicks(std::optional<uint32_t> node) const;

 private:
  // Kueue's greedy pass until the quota is free, the same for every room (computed once per
  // attempt): the victims in the order taken, `next` the first candidate index after them.
  struct Prefix {
    bool computed = false, freed = false;
    size_t next = 0;
    std::vector<Slot> chosen;
    std::vector<const Workload*> released;  // c.base and `chosen`
  };
  const Prefix& GreedyPrefix(bool allow);
  std::optional<std::vector<Slot>> ClassicSet(bool allow, const Room& room);
  bool TakeForRoom(bool allow, const Room& room, std::vector<Slot>& chosen,
                   std::vector<const Workload*>& released);
  std::optional<std::vector<Slot>> FairSet(const Room& room);

  const State& s_;
  const Workload& pre_;
  const State::QuotaCandidates& c_;
  const MembersFit members_fit_;
  bool strict_ = false;
  std::vector<State::PdbState> pdb_state_;
  const std::string* cohort_ = nullptr;
  bool fair_ = false;
  std::vector<std::string> blocking_;
  std::vector<std::pair<std::optional<uint32_t>, std::vector<State::FairPick>>> fair_plans_;
  Prefix prefix_[2];  // by allowBorrowing
  // CandidatesOn (built on first use): those on the node at `pos` are
  // by_node_[node_start_[pos] .. node_start_[pos + 1]).
  std::vector<uint32_t> node_start_, by_node_;
};

}  // namespace arbiter::engine
