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
      if (!view.Fits(*r.shapes[k])) return false;
      view.Hold(*r.shapes[k]);
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
  if (w.gang != kNoGang && NeedsGang(w)) {
    for (Slot s : gangs[w.gang].members)
      if (workloads[s].phase == Phase::kPending) members.push_back(s);
    std::sort(members.begin(), members.end(), QueueOrder{&workloads});
    int32_t running = 0;
    for (Slot s : gangs[w.gang].members) running += workloads[s].phase == Phase::kRunning;
    if (static_cast<int32_t>(members.size()) + running < gangs[w.gang].min_member)
      return;  // incomplete
  } else {
    members.push_back(w.slot);
  }
  ++reservation_tries;
  // The nodes it may use, carrying fewer than `depth` reservations of this cycle.
  std::vector<uint32_t> usable;
  for (uint32_t pos = 0; pos < nodes.size(); ++pos) {
    if (reserved_at[pos] >= depth) continue;
    bool ok = true;
    for (Slot s : members)
      ok = ok && NodeSelectable(pos, workloads[s]) &&
           placement::ModelAccepts(nodes[pos].gpu_model, workloads[s].shape);
    if (ok) usable.push_back(pos);
  }
  // Candidate start instants: the known ends on those nodes (running workloads', earlier
  // reservations'), earliest first.
  std::vector<Millis> instants;
  for (uint32_t pos : usable)
    for (Slot s : node_live[pos].workloads)
      if (const Millis e = ExpectedEnd(workloads[s]); e >= 0) instants.push_back(e);
  for (const Reservation& r : reservations)
    for (size_t k = 0; k < r.pos.size(); ++k)
      if (r.ends[k] >= 0 && reserved_at[r.pos[k]] < depth) instants.push_back(r.ends[k]);
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  if (instants.size() > kMaxGangInstants) instants.resize(kMaxGangInstants);
  // At each instant t, the nodes with what has ended by then given back; members first-fit in
  // node order, each holding its room. On a node with reservations (depth > 1) also at the later
  // starts of those reservations, with the reservations active at each instant held: a member
  // must fit at every one of them it would still be running at.
  struct Check {
    Millis at;
    placement::FitView view;
  };
  std::vector<placement::FitView> views(usable.size());
  std::vector<std::vector<Check>> later(usable.size());  // per node: the later instants
  auto ready = [&](placement::FitView& v, uint32_t pos, Millis t) {
    v.Reset(nodes[pos]);
    for (Slot s : node_live[pos].workloads) {
      const Workload& x = workloads[s];
      const Millis end = ExpectedEnd(x);
      if (end >= 0 && end <= t) v.Give(x.shape, x.gpus);
    }
    // Room held for nominated workloads stays held.
    for (Slot s : node_live[pos].nominated) {
      const Workload& p = workloads[s];
      if (SameGang(p, w) || p.slot == w.slot) continue;
      if (v.Fits(p.shape)) v.Hold(p.shape);
    }
    return reserved_at[pos] == 0 || HoldReservedAt(pos, t, nullptr, v);
  };
  Reservation found;
  std::vector<char> open(usable.size());
  for (Millis t : instants) {
    for (size_t k = 0; k < usable.size(); ++k) {
      const uint32_t pos = usable[k];
      open[k] = ready(views[k], pos, t);
      later[k].clear();
      if (reserved_at[pos] == 0 || !open[k]) continue;
      for (const Reservation& r : reservations)
        if (r.start > t && std::find(r.pos.begin(), r.pos.end(), pos) != r.pos.end()) {
          later[k].push_back(Check{r.start, {}});
          open[k] = open[k] && ready(later[k].back().view, pos, r.start);
        }
    }
    found.pos.clear();
    found.shapes.clear();
    found.ends.clear();
    for (Slot s : members) {
      const Workload& m = workloads[s];
      const Millis end = m.time_limit > 0 ? t + m.time_limit : -1;
      auto fits = [&](size_t k) {
        if (!open[k] || !views[k].Fits(m.shape)) return false;
        for (const Check& c : later[k])
          if ((end < 0 || c.at < end) && !c.view.Fits(m.shape)) return false;
        return true;
      };
      size_t k = 0;
      while (k < usable.size() && !fits(k)) ++k;
      if (k == usable.size()) break;
      views[k].Hold(m.shape);
      for (Check& c : later[k])
        if (end < 0 || c.at < end) c.view.Hold(m.shape);
      found.pos.push_back(usable[k]);
      found.shapes.push_back(&m.shape);
      found.ends.push_back(end);
    }
    if (found.pos.size() == members.size()) {
      found.holder = w.slot;
      found.start = t;
      break;
    }
  }
  if (found.holder == kNoSlot) return;  // needs room whose release time is unknown
  std::vector<uint32_t> distinct = found.pos;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::string on;
  std::vector<uint32_t> on_ids;
  for (uint32_t pos : distinct) {
    ++reserved_at[pos];
    on += (on.empty() ? "" : ",") + nodes[pos].name;
    on_ids.push_back(node_at[pos]);
  }
  const std::string note = "; reserved on " + on + " from " + FormatInstant(found.start);
  for (Slot s : members) {
    Workload& m = workloads[s];
    std::string msg = m.message.substr(0, m.message.find("; reserved on "));
    SetPending(m, EventType::kFailedScheduling, reason::kUnschedulable, msg + note, msg + note);
    m.reserved_on = on_ids;  // the same facts as the note, structured (WorkloadStatus)
    m.reserved_from = found.start;
  }
  reservations.push_back(std::move(found));
}

}  // namespace arbiter::engine
