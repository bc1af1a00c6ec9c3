// The queue (kube-scheduler's QueueSort and scheduling cycle): pending workloads in queue order,
// kept in one ordered set per preemption class, and the cycle that merges the classes' heads.
//
// Queue order: priority (high first), then submit time (early first), then namespace/name, then
// WorkloadId (submission order).
#include <algorithm>
#include <optional>

#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

bool QueueOrder::operator()(Slot a, Slot b) const {
  const Workload& x = (*w)[a];
  const Workload& y = (*w)[b];
  if (x.priority != y.priority) return x.priority > y.priority;
  if (x.submit_time != y.submit_time) return x.submit_time < y.submit_time;
  if (const int c = x.key.compare(y.key); c != 0) return c < 0;
  return Value(x.id) < Value(y.id);
}

void State::PendingInsert(Slot s) {
  if (queue_pos.size() <= s) queue_pos.resize(static_cast<size_t>(s) + 1);
  QueuePos& q = queue_pos[s];
  if (q.queued) return;
  const uint32_t cls = workloads[s].preempt_class;
  auto it = pending.find(cls);
  if (it == pending.end())
    it = pending.emplace(cls, std::set<Slot, QueueOrder>(QueueOrder{&workloads})).first;
  q.at = it->second.insert(s).first;
  ++pending_changes;
  q.cls = cls;
  q.queued = true;
  if (it->second.size() == 1) active_classes.insert(cls);
}

void State::PendingErase(Slot s) {
  if (s >= queue_pos.size() || !queue_pos[s].queued) return;
  QueuePos& q = queue_pos[s];
  auto it = pending.find(q.cls);
  it->second.erase(q.at);
  ++pending_changes;
  q.queued = false;
  if (it->second.empty()) active_classes.erase(it->first);
}

bool State::IsPending(Slot s) const { return s < queue_pos.size() && queue_pos[s].queued; }

namespace {

void AppendText(const std::string& s, std::string& k) { k += std::to_string(s.size()) + ":" + s; }

void AppendTerm(const NodeSelectorTerm& t, std::string& k) {
  for (const auto* list : {&t.match_expressions, &t.match_fields}) {
    k += "[";
    for (const auto& r : *list) {
      AppendText(r.key, k);
      k += std::to_string(static_cast<int>(r.op));
      for (const auto& v : r.values) AppendText(v, k);
      k += ";";
    }
    k += "]";
  }
}

// Tolerations and node affinity decide where a workload may go and which node it prefers: part
// of its class (length-prefixed, so no two differ in the key alone).
void AppendConstraintsKey(const Workload& w, std::string& k) {
  if (!w.rare().tolerations.empty()) {
    k += "|tol";
    for (const auto& t : w.rare().tolerations) {
      AppendText(t.key, k);
      AppendText(t.value, k);
      k += std::to_string(static_cast<int>(t.op)) +
           (t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*") + ";";
    }
  }
  if (w.rare().node_affinity.required) {
    k += "|req";
    for (const auto& t : *w.rare().node_affinity.required) AppendTerm(t, k);
  }
  if (!w.rare().node_affinity.preferred.empty()) {
    k += "|pref";
    for (const auto& t : w.rare().node_affinity.preferred) {
      k += std::to_string(t.weight);
      AppendTerm(t.preference, k);
    }
  }
}

}  // namespace

std::string State::ShapeKey(const Workload& w) const {
  std::string k = std::to_string(w.shape.cpu_milli) + "|" + std::to_string(w.shape.mem_bytes) +
                  "|" + std::to_string(w.shape.gpu_count) + "|" +
                  std::to_string(w.shape.gpu_milli_per_device) + "|" + w.shape.ext.ToString() +
                  "|" + std::to_string(w.priority) + "|";
  for (const auto& [a, b] : w.node_selector)  // length-prefixed: no two selectors collide
    k += std::to_string(a.size()) + ":" + a + std::to_string(b.size()) + ":" + b + ",";
  AppendConstraintsKey(w, k);
  AppendTopologyKey(w, topology_seen, k);
  if (!w.shape.allowed_gpu_models.empty()) {
    k += "|models";
    for (const auto& m : w.shape.allowed_gpu_models) k += std::to_string(m.size()) + ":" + m;
  }
  // Backfill lets a workload with a short enough time limit use a reserved node where another of
  // the same shape may not: the time limit is part of the class.
  if (w.time_limit > 0) k += "|limit" + std::to_string(w.time_limit);
  if (!w.bound_node().empty())
    k += "|bound" + std::to_string(w.bound_node().size()) + ":" + w.bound_node();
  return k;
}

bool State::Attempt(Workload& w, std::unordered_map<uint32_t, std::string>& no_fit,
                    std::unordered_map<uint32_t, std::pair<std::string, std::string>>& no_preempt) {
  if (w.phase != Phase::kPending) return true;
  if (!w.waiting_for.empty()) return true;  // victims still terminating
  if (w.gang != kNoGang && NeedsGang(w)) return AttemptGang(w);
  // Quota per flavor (flavor_assigner.cc) for a workload requesting a resource its flavors cover.
  if (w.elastic)
    if (const ElasticQuota* q = quota.ElasticOf(w.namespace_); q && !q->flavors.empty())
      for (const auto& [r, v] : w.requests.entries())
        if (v > 0 && FlavorCovers(*q, r)) return AttemptFlavors(w);
  if (!TryAdmitQuota(w))
    return w.phase != Phase::kPending || !w.waiting_for.empty();  // rejected / reclaiming
  auto nf = no_fit.find(w.shape_class);
  if (nf == no_fit.end() || w.nominated_node != kNoNode) {
    if (TryPlace(w)) return true;
    nf = no_fit.find(w.shape_class);
    if (nf == no_fit.end()) nf = no_fit.emplace(w.shape_class, NoFitMessage(w)).first;
  }
  auto np = no_preempt.find(w.preempt_class);
  if (np == no_preempt.end()) {
    std::string why;
    if (TryPreempt(w, &why)) return true;
    std::string msg = nf->second + why;
    if (!policy.min_runtime) {
      np = no_preempt.emplace(w.preempt_class, std::make_pair(msg, StableReason(msg))).first;
      SetPending(w, EventType::kFailedScheduling, reason::kUnschedulable, np->second.first,
                 np->second.second);
    } else {
      SetPending(w, EventType::kFailedScheduling, reason::kUnschedulable, msg, StableReason(msg));
    }
    return w.nominated_node != kNoNode;  // a nominated workload failing is its own case
  }
  SetPending(w, EventType::kFailedScheduling, reason::kUnschedulable, np->second.first,
             np->second.second);
  return w.nominated_node != kNoNode;
}

namespace {

// Its victims gone, it can bind on its nominated node now (the node selectable, the room held for
// other nominees left).
bool ReadyWhereNominated(const State& s, const Workload& w) {
  if (!w.waiting_for.empty() || w.nominated_node == kNoNode) return false;
  const uint32_t pos = s.node_info[w.nominated_node].pos;
  return s.NodeSelectable(pos, w) && s.FitsRespectingNominated(pos, w);
}

// The pending nominated workloads in queue order, except that among equal priorities those ready
// to bind where they are nominated go first. One tried before them that must preempt again (its
// node turned unschedulable: a NotReady taint) could otherwise plan on a node whose nominee has
// its room free but is still to bind: the newcomer's nomination would hold that room against it,
// and it would preempt once more (bench/kubesched.sh's extra evictions, docs/kubernetes.md). A
// higher priority still goes first (it may take a lower nominee's room).
std::vector<Slot> PendingNominated(const State& s) {
  std::vector<Slot> nominated;
  if (s.nominations > 0)
    for (const NodeLive& live : s.node_live)
      for (Slot x : live.nominated)
        if (s.workloads[x].phase == Phase::kPending) nominated.push_back(x);
  std::sort(nominated.begin(), nominated.end(), QueueOrder{&s.workloads});
  for (auto from = nominated.begin(); from != nominated.end();) {
    const int32_t priority = s.workloads[*from].priority;
    const auto to = std::find_if(from, nominated.end(),
                                 [&](Slot x) { return s.workloads[x].priority != priority; });
    std::stable_partition(from, to, [&](Slot x) { return ReadyWhereNominated(s, s.workloads[x]); });
    from = to;
  }
  return nominated;
}

// The class failed: its other members keep waiting for the same reason. They are told when the
// kind of reason changes (the head always has the current counts); to keep a cycle cheap on long
// queues only the next kReasonFanout members are updated at once, the rest get the news as they
// reach the head of their class.
void TellClassReason(State& s, const Workload& head, uint32_t cls,
                     std::set<Slot, QueueOrder>::iterator next) {
  std::string key = StableReason(head.message);
  auto& last = s.class_reason[cls];
  if (key == last) return;
  last = key;
  constexpr int kReasonFanout = 64;
  const auto& set = s.pending[cls];
  int n = 0;
  for (auto it = next; it != set.end() && n < kReasonFanout; ++it, ++n) {
    Workload& m = s.workloads[*it];
    if (m.phase != Phase::kPending || !m.waiting_for.empty() || m.nominated_node != kNoNode)
      continue;
    s.SetPending(m, static_cast<EventType>(head.last_event_type),
                 head.last_event_type == static_cast<int>(EventType::kQuotaExceeded)
                     ? reason::kQuotaExceeded
                     : reason::kUnschedulable,
                 head.message, key);
  }
}

// SubmitPod::immediate: one attempt only. Whatever did not bind or start a preemption or a
// reclaim in this cycle is Rejected with the reason of its attempt.
void RejectUnplacedImmediate(State& s, const std::vector<Slot>& arrived) {
  for (Slot x : arrived) {
    Workload& w = s.workloads[x];
    if (!w.immediate || w.phase != Phase::kPending || !w.waiting_for.empty() ||
        w.nominated_node != kNoNode)
      continue;
    const std::string msg = w.message;
    s.Reject(w, w.message_reason.empty() ? reason::kUnschedulable : w.message_reason, msg);
  }
}

// Within one cycle resources only shrink (binds) or get promised (preemptions), so a shape that
// found no node, or no preemption plan, finds none later in the cycle either: remember both.
struct CycleMemo {
  std::unordered_map<uint32_t, std::string> no_fit;  // shape class -> FailedScheduling reason
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> no_preempt;  // -> message, key
};

// A workload that failed may get a backfill reservation (in queue order: later workloads must
// not delay it).
bool AttemptOrReserve(State& s, Workload& w, CycleMemo& memo) {
  const bool ok = s.Attempt(w, memo.no_fit, memo.no_preempt);
  if (!ok && s.policy.backfill) s.TryReserve(w);
  return ok;
}

// Nothing was released since the last cycle: only the new arrivals can change anything.
void AttemptArrivals(State& s, const std::vector<Slot>& arrived, CycleMemo& memo) {
  std::vector<Slot> order;
  for (Slot x : arrived)
    if (s.IsPending(x)) order.push_back(x);
  std::sort(order.begin(), order.end(), QueueOrder{&s.workloads});
  order.erase(std::unique(order.begin(), order.end()), order.end());
  for (Slot x : order) AttemptOrReserve(s, s.workloads[x], memo);
}

// Merges the classes' queues in queue order; a class whose head fails is done for this cycle
// (its other members would fail the same way), so a cycle costs O(classes + progress), not
// O(pending workloads).
void MergeClassQueues(State& st, CycleMemo& memo) {
  QueueOrder before{&st.workloads};
  auto later = [&](const std::pair<Slot, uint32_t>& a, const std::pair<Slot, uint32_t>& b) {
    return before(b.first, a.first);
  };
  std::priority_queue<std::pair<Slot, uint32_t>, std::vector<std::pair<Slot, uint32_t>>,
                      decltype(later)>
      heads(later);
  for (uint32_t cls : st.active_classes) heads.push({*st.pending.find(cls)->second.begin(), cls});
  // A class whose next member still comes first in queue order goes on without a trip
  // through the heap (`carry`).
  // (A flag beside a plain pair: GCC at -O1, the demo's build, warns that an optional's pair
  // may be used uninitialized.)
  bool has_carry = false;
  std::pair<Slot, uint32_t> carry{};
  while (has_carry || !heads.empty()) {
    std::pair<Slot, uint32_t> head;
    if (has_carry) {
      head = carry;
      has_carry = false;
    } else {
      head = heads.top();
      heads.pop();
    }
    const auto [s, cls] = head;
    Workload& w = st.workloads[s];
    // The head's successor, found before the attempt: still the next one after it when the
    // queue changed no more than by the head leaving (no search through the set then).
    const bool in_set = st.IsPending(s) && st.queue_pos[s].cls == cls;
    const auto succ =
        in_set ? std::next(st.queue_pos[s].at) : std::set<Slot, QueueOrder>::iterator{};
    const uint64_t changes = st.pending_changes;
    bool go_on = w.nominated_node != kNoNode || AttemptOrReserve(st, w, memo);
    auto& set = st.pending[cls];
    const bool unchanged = in_set && (st.pending_changes == changes ||
                                      (st.pending_changes == changes + 1 && !st.IsPending(s)));
    auto next = unchanged ? succ : set.upper_bound(s);
    if (go_on) {
      if (next == set.end()) continue;
      if (heads.empty() || before(*next, heads.top().first)) {
        carry = std::make_pair(*next, cls);
        has_carry = true;
      } else {
        heads.push({*next, cls});
      }
      continue;
    }
    TellClassReason(st, w, cls, next);  // the class failed
  }
}

}  // namespace

void State::RunCycle() {
  CycleMemo memo;
  const bool all = freed;
  freed = false;
  ++cycle;
  if (all) DropUnreclaimableHolds();  // their workloads are retried below
  ClearReservations();
  std::vector<Slot> arrived;
  arrived.swap(fresh);
  if (!all) {
    AttemptArrivals(*this, arrived, memo);
  } else {
    // Nominated preemptors hold resources on their node; they are tried on their own, first.
    for (Slot s : PendingNominated(*this)) Attempt(workloads[s], memo.no_fit, memo.no_preempt);
    MergeClassQueues(*this, memo);
    // New arrivals behind a failed head still get their own reason.
    for (Slot s : arrived) {
      Workload& w = workloads[s];
      if (w.phase == Phase::kPending && w.message.empty() && IsPending(s))
        AttemptOrReserve(*this, w, memo);
    }
  }
  // Reservations hold for this cycle only: the next one recomputes them over the whole queue.
  if (!reservations.empty()) freed = true;
  if (options.check_invariants && !reservations.empty()) CheckReservations();
  RejectUnplacedImmediate(*this, arrived);
}

}  // namespace arbiter::engine
