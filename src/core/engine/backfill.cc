// Backfill with reservations (Slurm sched/backfill; PoolPolicy scheduling.backfill, default on).
//
// Walking the queue in order, a workload (or pod group) that can neither be placed nor preempt
// gets a reservation: the earliest instant its members fit, computed from when the workloads
// running now are expected to release their nodes (run start + spec.activeDeadlineSeconds,
// Slurm's time limit; a terminating one at the end of its grace period). A workload without a
// deadline has an unknown end: its room is never counted on, as Slurm counts a job without a
// time limit as running for the partition's (here infinite) MaxTime, so a reservation that needs
// it cannot be computed and no reservation is made. Workloads later in the queue may then use a
// reserved node only if they do not delay the reservation: they end (deadline) before it starts,
// or the holder still fits there at its start with them still running. They cannot preempt on a
// reserved node. Reservations are recomputed every cycle (a cycle with reservations makes the
// next one consider the whole queue), at most kMaxReservations per cycle (backfillDepth if more)
// from at most kMaxReservationTries attempts (Slurm's bf_max_job_test).
//
// PoolPolicy scheduling.backfillDepth K: a node carries at most K of a cycle's reservations. With
// K = 1 each reservation uses nodes no earlier one uses. With K > 1 reservations stack in time
// on a node, as on Slurm's per-node availability timeline: a later one must fit, at its start and
// at the start of every earlier reservation there that begins while it would still run, beside
// what is expected to run then and the earlier reservations active then; a lower workload must
// not delay any of them.
//
// Shared (fractional) GPUs: the delay check counts per device, as placement does. A whole-GPU pod
// takes fully free devices, and any of them leaves the same free amounts; a shared-GPU pod takes
// part of the device its placement policy chooses on the node now (Random: whichever it draws, so
// every device it fits on must keep the reservations), and that device stays taken at the
// reservation's start even where another would then be freer.
#include <algorithm>

#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/instant_text.h"
#include "core/placement/policies.h"

namespace arbiter::engine {

namespace {
constexpr size_t kMaxReservations = 4;
constexpr int kMaxReservationTries = 16;
constexpr size_t kMaxGangInstants = 256;  // candidate start instants tried for a pod group
}  // namespace

Millis State::ExpectedEnd(const Workload& x) const {
  if (x.release_at >= 0) return std::max(now, x.release_at);  // exited; Slurm's clean-up
  if (x.phase == Phase::kTerminating)
    return std::max(now, x.stop_time + x.stop_grace + CleanupDelay(x, true));
  if (x.phase == Phase::kRunning && x.time_limit > 0)
    return std::max(now, x.run_start + x.time_limit);
  return -1;
}

void State::ClearReservations() {
  // Cheap when there were none (every cycle calls this): only the flags that were set are reset.
  for (const Reservation& r : reservations)
    for (uint32_t pos : r.pos)
      if (pos < reserved_at.size()) reserved_at[pos] = 0;
  reservations.clear();
  if (reserved_at.size() != nodes.size()) reserved_at.assign(nodes.size(), 0);
  reservation_tries = 0;
}

bool State::HoldsReservation(uint32_t pos, const Workload& w) const {
  for (const Reservation& r : reservations)
    if (r.holder == w.slot || SameGang(workloads[r.holder], w))
      if (std::find(r.pos.begin(), r.pos.end(), pos) != r.pos.end()) return true;
  return false;
}

bool State::HoldReservedAt(uint32_t pos, Millis t, const Workload* w,
                           placement::FitView& view) const {
  for (const Reservation& r : reservations) {
    if (r.start > t || (w && (r.holder == w->slot || SameGang(workloads[r.holder], *w)))) continue;
    for (size_t k = 0; k < r.pos.size(); ++k) {
      if (r.pos[k] != pos || (r.ends[k] >= 0 && r.ends[k] <= t)) continue;
      const placement::PodShape& shape = workloads[r.members[k]].shape;
      if (!view.Fits(shape)) return false;
      view.Hold(shape);
    }
  }
  return true;
}

namespace {
bool SharesGpu(const placement::PodShape& p) {
  return p.gpu_count > 0 && p.gpu_milli_per_device < placement::kMilliPerGpu;
}
}  // namespace

bool State::DelaysReservation(uint32_t pos, const Workload& w) const {
  if (!SharesGpu(w.shape)) return DelaysReservationOn(pos, w, nullptr);
  // The device placement would give it here now: the policy's choice, or every device for Random.
  const placement::NodeState& node = nodes[pos];
  if (!dynamic_cast<const placement::RandomPolicy*>(placer.get())) {
    const placement::GpuAssignment gpus = placer->Score(node, w.shape).gpus;
    return DelaysReservationOn(pos, w, &gpus);
  }
  placement::GpuAssignment gpus;
  gpus.milli_per_device = w.shape.gpu_milli_per_device;
  for (int d = 0; d < node.gpu_devices(); ++d) {
    if (placement::kMilliPerGpu - node.gpu_used_milli[d] < w.shape.gpu_milli_per_device) continue;
    gpus.devices.clear();
    gpus.devices.push_back(static_cast<int16_t>(d));
    if (DelaysReservationOn(pos, w, &gpus)) return true;
  }
  return false;
}

bool State::DelaysReservationOn(uint32_t pos, const Workload& w,
                                const placement::GpuAssignment* gpus) const {
  placement::FitView view;
  for (const Reservation& r : reservations) {
    if (r.holder == w.slot || SameGang(workloads[r.holder], w)) continue;
    if (std::find(r.pos.begin(), r.pos.end(), pos) == r.pos.end()) continue;
    if (w.time_limit > 0 && now + w.time_limit <= r.start) continue;  // gone before it starts
    // The node at the reservation's start, `w` still on it: do the reservations active then (this
    // one's members among them) fit?
    view.Reset(nodes[pos]);
    for (Slot s : node_live[pos].workloads) {
      const Workload& x = workloads[s];
      const Millis end = ExpectedEnd(x);
      if (end >= 0 && end <= r.start) view.Give(x.shape, x.gpus);
    }
    if (!view.Fits(w.shape)) return true;
    if (gpus)  // its device now only gets freer by then: it fits there
      view.Take(w.shape, *gpus);
    else
      view.Hold(w.shape);
    if (!HoldReservedAt(pos, r.start, &w, view)) return true;
  }
  return false;
}

void State::CheckReservations() const {
  placement::FitView view;
  for (const Reservation& r : reservations)
    for (uint32_t pos : r.pos) {
      if (node_info[node_at[pos]].over_capacity) continue;
      view.Reset(nodes[pos]);
      for (Slot s : node_live[pos].workloads) {
        const Workload& x = workloads[s];
        const Millis end = ExpectedEnd(x);
        if (end >= 0 && end <= r.start) view.Give(x.shape, x.gpus);
      }
      ARB_CHECK_MSG(HoldReservedAt(pos, r.start, nullptr, view),
                    "backfill: the reservation of " + workloads[r.holder].key + " on " +
                        nodes[pos].name + " from " + FormatInstant(r.start) +
                        " no longer fits there");
    }
}

namespace {

// The pending members of `w`'s pod group in queue order (`w` alone without one); false when the
// group cannot start yet (fewer than minMember pending or running).
bool ReservationMembers(const State& s, const Workload& w, std::vector<Slot>* members) {
  if (w.gang == kNoGang || !s.NeedsGang(w)) {
    members->push_back(w.slot);
    return true;
  }
  const Gang& g = s.gangs[w.gang];
  for (Slot m : g.members)
    if (s.workloads[m].phase == Phase::kPending) members->push_back(m);
  std::sort(members->begin(), members->end(), QueueOrder{&s.workloads});
  int32_t running = 0;
  for (Slot m : g.members) running += s.workloads[m].phase == Phase::kRunning;
  return static_cast<int32_t>(members->size()) + running >= g.min_member;
}

// The nodes the members may use, carrying fewer than `depth` reservations of this cycle.
std::vector<uint32_t> ReservableNodes(const State& s, const std::vector<Slot>& members, int depth) {
  std::vector<uint32_t> usable;
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    if (s.reserved_at[pos] >= depth) continue;
    bool ok = true;
    for (Slot m : members)
      ok = ok && s.NodeSelectable(pos, s.workloads[m]) &&
           placement::ModelAccepts(s.nodes[pos].gpu_model, s.workloads[m].shape);
    if (ok) usable.push_back(pos);
  }
  return usable;
}

// Candidate start instants: the known ends on those nodes (running workloads', earlier
// reservations'), earliest first, at most kMaxGangInstants.
std::vector<Millis> ReservationInstants(const State& s, const std::vector<uint32_t>& usable,
                                        int depth) {
  std::vector<Millis> instants;
  for (uint32_t pos : usable)
    for (Slot x : s.node_live[pos].workloads)
      if (const Millis e = s.ExpectedEnd(s.workloads[x]); e >= 0) instants.push_back(e);
  for (const Reservation& r : s.reservations)
    for (size_t k = 0; k < r.pos.size(); ++k)
      if (r.ends[k] >= 0 && s.reserved_at[r.pos[k]] < depth) instants.push_back(r.ends[k]);
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  if (instants.size() > kMaxGangInstants) instants.resize(kMaxGangInstants);
  return instants;
}

// At each instant t, the nodes with what has ended by then given back; members first-fit in
// node order, each holding its room. On a node with reservations (depth > 1) also at the later
// starts of those reservations, with the reservations active at each instant held: a member
// must fit at every one of them it would still be running at.
class ReservationSearch {
 public:
  ReservationSearch(const State& s, const Workload& w, const std::vector<Slot>& members,
                    std::vector<uint32_t> usable)
      : s_(s),
        w_(w),
        members_(members),
        usable_(std::move(usable)),
        views_(usable_.size()),
        later_(usable_.size()),
        open_(usable_.size()) {}

  // The reservation at the earliest instant all members fit (holder kNoSlot: at none).
  Reservation Find(const std::vector<Millis>& instants) {
    Reservation found;
    for (Millis t : instants) {
      Prepare(t);
      found.pos.clear();
      found.members.clear();
      found.ends.clear();
      for (Slot m : members_)
        if (!Place(s_.workloads[m], t, &found)) break;
      if (found.pos.size() == members_.size()) {
        found.holder = w_.slot;
        found.start = t;
        break;
      }
    }
    return found;
  }

 private:
  struct Check {
    Millis at;
    placement::FitView view;
  };

  // The node at `pos` as of `t` in `v`; false when the reservations active then do not fit.
  bool Ready(placement::FitView& v, uint32_t pos, Millis t) const {
    v.Reset(s_.nodes[pos]);
    for (Slot x : s_.node_live[pos].workloads) {
      const Workload& r = s_.workloads[x];
      const Millis end = s_.ExpectedEnd(r);
      if (end >= 0 && end <= t) v.Give(r.shape, r.gpus);
    }
    // Room held for nominated workloads stays held.
    for (Slot x : s_.node_live[pos].nominated) {
      const Workload& p = s_.workloads[x];
      if (s_.SameGang(p, w_) || p.slot == w_.slot) continue;
      if (v.Fits(p.shape)) v.Hold(p.shape);
    }
    return s_.reserved_at[pos] == 0 || s_.HoldReservedAt(pos, t, nullptr, v);
  }

  // Every usable node as of `t`, and at the later starts of its reservations.
  void Prepare(Millis t) {
    for (size_t k = 0; k < usable_.size(); ++k) {
      const uint32_t pos = usable_[k];
      open_[k] = Ready(views_[k], pos, t);
      later_[k].clear();
      if (s_.reserved_at[pos] == 0 || !open_[k]) continue;
      for (const Reservation& r : s_.reservations)
        if (r.start > t && std::find(r.pos.begin(), r.pos.end(), pos) != r.pos.end()) {
          later_[k].push_back(Check{r.start, {}});
          open_[k] = open_[k] && Ready(later_[k].back().view, pos, r.start);
        }
    }
  }

  // Member `m` first-fit from `t` (its room held, added to `found`); false if no node fits it.
  bool Place(const Workload& m, Millis t, Reservation* found) {
    const Millis end = m.time_limit > 0 ? t + m.time_limit : -1;
    auto fits = [&](size_t k) {
      if (!open_[k] || !views_[k].Fits(m.shape)) return false;
      for (const Check& c : later_[k])
        if ((end < 0 || c.at < end) && !c.view.Fits(m.shape)) return false;
      return true;
    };
    size_t k = 0;
    while (k < usable_.size() && !fits(k)) ++k;
    if (k == usable_.size()) return false;
    views_[k].Hold(m.shape);
    for (Check& c : later_[k])
      if (end < 0 || c.at < end) c.view.Hold(m.shape);
    found->pos.push_back(usable_[k]);
    found->members.push_back(m.slot);
    found->ends.push_back(end);
    return true;
  }

  const State& s_;
  const Workload& w_;
  const std::vector<Slot>& members_;
  const std::vector<uint32_t> usable_;
  std::vector<placement::FitView> views_;
  std::vector<std::vector<Check>> later_;  // per node: the later instants
  std::vector<char> open_;
};

// The reservation made: its nodes count it, its members say where and from when.
void MakeReservation(State& st, Reservation found, const std::vector<Slot>& members) {
  std::vector<uint32_t> distinct = found.pos;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::string on;
  std::vector<uint32_t> on_ids;
  for (uint32_t pos : distinct) {
    ++st.reserved_at[pos];
    on += (on.empty() ? "" : ",") + st.nodes[pos].name;
    on_ids.push_back(st.node_at[pos]);
  }
  const std::string note = "; reserved on " + on + " from " + FormatInstant(found.start);
  for (Slot s : members) {
    Workload& m = st.workloads[s];
    std::string msg = m.message.substr(0, m.message.find("; reserved on "));
    st.SetPending(m, EventType::kFailedScheduling, reason::kUnschedulable, msg + note, msg + note);
    m.rare_mut().reserved_on = on_ids;  // the same facts as the note, structured (WorkloadStatus)
    m.reserved_from = found.start;
    st.Restated(m);
  }
  st.reservations.push_back(std::move(found));
}

}  // namespace

void State::TryReserve(Workload& w) {
  const int depth = std::clamp<int>(policy.backfill_depth, 1, 255);
  if (!policy.backfill ||
      reservations.size() >= std::max<size_t>(kMaxReservations, static_cast<size_t>(depth)) ||
      reservation_tries >= kMaxReservationTries)
    return;
  if (w.immediate || w.phase != Phase::kPending || !w.waiting_for.empty() ||
      w.nominated_node != kNoNode)
    return;
  if (w.message_reason != reason::kUnschedulable) return;  // quota, not room, is what it waits for
  if (ends_known == 0) return;  // no node's release time is known: nothing to plan with
  for (const Reservation& r : reservations)
    if (r.holder == w.slot || SameGang(workloads[r.holder], w)) return;
  std::vector<Slot> members;
  if (!ReservationMembers(*this, w, &members)) return;  // an incomplete pod group
  ++reservation_tries;
  std::vector<uint32_t> usable = ReservableNodes(*this, members, depth);
  const std::vector<Millis> instants = ReservationInstants(*this, usable, depth);
  Reservation found = ReservationSearch(*this, w, members, std::move(usable)).Find(instants);
  if (found.holder == kNoSlot) return;  // needs room whose release time is unknown
  MakeReservation(*this, std::move(found), members);
}

}  // namespace arbiter::engine
