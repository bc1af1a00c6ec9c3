// Engine::Snapshot (Engine::Capture, then Engine::EncodeCapture) / Engine::Restore (format:
// docs/snapshot.md).
//
// What is saved is the state that decides: options, clock, policy objects, quota books, nodes
// and their usage, the placement policy's own state (Random's stream), every live workload, the
// queue's bookkeeping (fresh arrivals, class reasons, wake-ups, rotating start indices, interned
// class and namespace ids). What is rebuilt: indexes (names, slots, PDB membership, pending sets,
// the dense fit index) and caches (the preemption memo, no-fit reasons, FGD's fragmentation), which
// decide nothing by themselves. A restored engine checks its invariants before it is returned.
#include <algorithm>

#include "core/engine/engine.h"
#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/object_serial.h"
#include "core/placement/node_constraints.h"

namespace arbiter::serial {

ARB_SERIAL_ENUM(engine::Phase, engine::Phase::kDeleted)
ARB_SERIAL_ENUM(engine::WorkFacts, engine::WorkFacts::kStopSooner)

template <typename A>
void Io(A& a, engine::QuotaBook::Counted& c) {
  Io(a, c.namespace_);
  Io(a, c.priority_class);
  Io(a, c.requests);
  Io(a, c.limits);
  Io(a, c.terminating);
}

template <typename A>
void Io(A& a, engine::QuotaBook::RqHold& h) {
  Io(a, h.rq);
  Io(a, h.key);
  Io(a, h.amount);
}

}  // namespace arbiter::serial

namespace arbiter::engine {

using serial::Io;
using serial::Reader;
using serial::Write;
using serial::Writer;

namespace {

constexpr char kKind[] = "engine";

// The fields of a live workload, in id order; slot references as WorkloadIds.
template <typename A>
void IoWorkload(A& a, Workload& w, std::vector<uint64_t>& waiting_for, uint64_t& preemptor,
                std::string& message_reason) {
  uint64_t id = Value(w.id);
  Io(a, id);
  if constexpr (A::kReading) w.id = static_cast<WorkloadId>(id);
  Io(a, w.priority);
  Io(a, w.phase);
  Io(a, w.run_start);
  Io(a, w.namespace_id);
  Io(a, w.qos);
  Io(a, w.elastic);
  Io(a, w.has_quota);
  Io(a, w.borrowed);
  Io(a, w.quota_charged);
  Io(a, w.immediate);
  Io(a, w.deleted);
  Io(a, w.node);
  Io(a, w.nominated_node);
  Io(a, w.model_mask);
  // As a GpuAssignment (the format before WorkloadGpus): strictly ascending devices.
  placement::GpuAssignment gpus = w.gpus;
  Io(a, gpus);
  if constexpr (A::kReading) {
    for (size_t i = 1; i < gpus.devices.size(); ++i)
      if (gpus.devices[i - 1] >= gpus.devices[i]) a.Fail("GPU devices not in ascending order");
    w.gpus = gpus;
  }
  Io(a, w.shape);
  Io(a, w.key);
  Io(a, w.namespace_);
  Io(a, w.name);
  Io(a, w.labels);
  Io(a, w.node_selector);
  Io(a, w.priority_class);
  Io(a, w.preemption_policy);
  Io(a, w.preempt_mode);
  Io(a, w.requests);
  Io(a, w.limits);
  Io(a, w.grace);
  Io(a, w.submit_time);
  Io(a, w.first_start);
  Io(a, w.finish_time);
  Io(a, w.pending_since);
  Io(a, w.pending_total);
  Io(a, w.last_node);
  Io(a, w.preemptions);
  Io(a, w.exit_code);
  Io(a, waiting_for);
  Io(a, w.message);
  Io(a, message_reason);
  Io(a, w.message_facts);
  // The rare fields: read into `rare`, kept if any is set; written from the workload's (or none).
  WorkloadRare none;
  WorkloadRare& rare = A::kReading || !w.rare_block ? none : *w.rare_block;
  Io(a, rare.reason_keys);
  Io(a, w.last_event_type);
  Io(a, w.shape_class);
  Io(a, w.preempt_class);
  Io(a, w.stop_time);
  Io(a, w.stop_grace);
  Io(a, w.preempted_by);
  Io(a, preemptor);
  Io(a, w.gang);
  Io(a, w.time_limit);
  Io(a, w.requeue_on_preempt);
  if (!a.flavorless) {  // version 3
    Io(a, w.flavor);
    Io(a, rare.flavor_labels);
  }
  if (!a.latencyless) {  // version 4
    Io(a, w.release_at);
    Io(a, w.exited_at);
    Io(a, w.exit_kind);
    Io(a, w.held);
    Io(a, w.eligible_at);
  }
  if (!a.constraintless) {  // version 6
    Io(a, rare.tolerations);
    Io(a, rare.node_affinity);
    Io(a, w.taint_evict_at);
    if constexpr (A::kReading)
      w.tolerates_unschedulable = placement::ToleratesUnschedulable(rare.tolerations);
  }
  if (!a.topologyless) {  // version 7
    Pod rules;            // the rules' fields, carried in a Pod
    if constexpr (!A::kReading)
      if (w.topology) {
        rules.pod_affinity = w.topology->affinity;
        rules.pod_anti_affinity = w.topology->anti_affinity;
        rules.topology_spread = w.topology->spread;
      }
    Io(a, rules.pod_affinity);
    Io(a, rules.pod_anti_affinity);
    Io(a, rules.topology_spread);
    if constexpr (A::kReading) w.topology = PodTopologyRules::Of(rules);
    Io(a, w.unreclaimable_hold);
  }
  if (!a.reservationless) {  // version 8
    Io(a, rare.reserved_on);
    Io(a, w.reserved_from);
  }
  if (!a.lostworkless) {  // version 9
    Io(a, w.checkpoint_interval);
    Io(a, w.shutdown_time);
  }
  if (!a.heldless) Io(a, w.held_total);      // version 11
  if (!a.boundless) Io(a, rare.bound_node);  // version 12
  if constexpr (A::kReading)
    if (!none.Empty()) w.rare_block = std::make_unique<WorkloadRare>(std::move(none));
}

template <typename A>
void IoOptions(A& a, EngineOptions& o) {
  Io(a, o.seed);
  Io(a, o.check_invariants);
  Io(a, o.placement);
  Io(a, o.placement_profile);
  Io(a, o.fgd_popularity_percent);
  Io(a, o.random_rescore_winner);
}

}  // namespace

// What Engine::Snapshot saves (Engine::Capture), shared or copied as plain values: nothing in it
// points into anything the engine changes later (the workload table is frozen: its chunks are
// never written again, slot_table.h; a workload's topology rules are shared, but immutable), so
// it is encoded on any thread while the engine goes on. Slot references stay slots; the frozen
// table turns them into ids when encoded.
struct EngineCapture {
  // The usage of a present node, its workloads and nominations as slots.
  struct NodeUse {
    int64_t cpu_used_milli = 0;
    int64_t mem_used_bytes = 0;
    std::vector<int32_t> gpu_used_milli;
    ResourceList ext_used;
    std::vector<Slot> workloads, nominated;
  };
  // 1. Options and clock; 2. policy objects; 3. quota books.
  EngineOptions options;
  Millis now = 0;
  bool started = false;
  std::optional<PoolPolicy> pool_policy;
  std::map<std::string, Namespace> namespaces;
  std::map<std::string, PriorityClass> classes;
  std::map<std::string, std::map<std::string, LimitRange>> limit_ranges;
  std::vector<PodDisruptionBudget> pdbs;
  std::vector<std::string> qos_names;
  std::vector<std::optional<QoS>> qos_defs;
  std::vector<PriceBook> price_books;
  QuotaBook quota;
  // 4. Nodes.
  std::vector<NodeInfo> node_info;
  bool nodes_dirty = false;
  std::vector<uint32_t> node_at;
  std::vector<NodeUse> nodes;  // by position
  std::unordered_map<std::string, uint32_t> model_ids;
  size_t next_start_node = 0;
  size_t next_preempt_node = 0;
  // 5. The placement policy's own state.
  PlacementPolicyName placer_name = PlacementPolicyName::kBestFit;
  std::vector<uint64_t> placer_state;
  // 6. Live workloads: the table by slot, and its free slots (between commands: every other slot
  // holds a live workload) or, for a capture taken in a command, its live slots.
  uint64_t next_id = 0;
  WorkloadTable::Frozen table;
  bool slots_are_live = false;
  std::vector<Slot> slots;
  // 7. The queue's bookkeeping; 8. pod groups.
  std::map<std::string, uint32_t> namespace_ids;
  std::unordered_map<std::string, uint32_t> class_ids;
  std::unordered_map<uint32_t, std::string> class_reason;
  std::vector<Slot> fresh;
  bool freed = true;
  std::priority_queue<Millis, std::vector<Millis>, std::greater<Millis>> wakeups;
  std::map<uint32_t, std::vector<Slot>> borrowed_by_ns;
  uint64_t global_epoch = 0;
  std::vector<Gang> gangs;
};

namespace {

// Engine::Capture's steps (under a daemon's lock): O(chunks) for the workloads, O(nodes) and the
// slot lists of nodes and queue (4 bytes a running workload) for the rest; no encoding.

void CaptureWorkloads(const State& s, EngineCapture& c) {
  c.next_id = s.next_id;
  if (!s.applying) {  // between commands: every slot that is not free holds a live workload
    c.table = s.workloads.Freeze();
    c.slots = s.free_slots;
    return;
  }
  // In a command (a sink's callback): the engine holds references into its table that it will
  // write through, so the table is copied, and the index says which slots are live.
  c.table = s.workloads.Copy();
  c.slots_are_live = true;
  c.slots.reserve(s.slot_of.size());
  for (const auto& [id, slot] : s.slot_of) c.slots.push_back(slot);
}

void CaptureNodes(const State& s, EngineCapture& c) {
  c.node_info.assign(s.node_info.begin(), s.node_info.end());
  c.nodes_dirty = s.nodes_dirty;
  c.node_at = s.node_at;
  c.nodes.resize(s.nodes.size());
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    const placement::NodeState& n = s.nodes[pos];
    EngineCapture::NodeUse& u = c.nodes[pos];
    u.cpu_used_milli = n.cpu_used_milli;
    u.mem_used_bytes = n.mem_used_bytes;
    u.gpu_used_milli = n.gpu_used_milli;
    u.ext_used = n.ext_used;
    u.workloads = s.node_live[pos].workloads;
    u.nominated = s.node_live[pos].nominated;
  }
  c.model_ids = s.model_ids;
  c.next_start_node = s.next_start_node;
  c.next_preempt_node = s.next_preempt_node;
  c.placer_name = s.placer_name;
  c.placer_state = s.placer->SaveState();
}

void CaptureQueue(const State& s, EngineCapture& c) {
  c.namespace_ids = s.namespace_ids;
  c.class_ids = s.class_ids;
  c.class_reason = s.class_reason;
  c.fresh = s.fresh;
  c.freed = s.freed;
  c.wakeups = s.wakeups;
  c.borrowed_by_ns = s.borrowed_by_ns;
  c.global_epoch = s.global_epoch;
  c.gangs = s.gangs;
}

// The ids of the captured table's slots (its workloads' ids as of the capture).
std::vector<uint64_t> IdOf(const EngineCapture& c) {
  std::vector<uint64_t> id_of(c.table.size());
  for (size_t slot = 0; slot < id_of.size(); ++slot) id_of[slot] = Value(c.table[slot].id);
  return id_of;
}

std::vector<uint64_t> IdsOf(const std::vector<uint64_t>& id_of, const std::vector<Slot>& slots) {
  std::vector<uint64_t> out;
  out.reserve(slots.size());
  for (Slot slot : slots) out.push_back(id_of[slot]);
  return out;
}

// Engine::EncodeCapture's steps, in the snapshot's order (Restore reads them back in that order).

// 3. Quota books.
void WriteQuota(Writer& w, const QuotaBook& book) {
  QuotaBook& q = const_cast<QuotaBook&>(book);  // read only: the accessors are not const
  w.U64(q.rqs().size());
  for (auto& rq : q.rqs()) {
    Io(w, rq.q);
    Io(w, rq.used);
    Io(w, rq.reserved);
    Io(w, rq.allowance);
  }
  w.U64(q.eqs().size());
  for (auto& eq : q.eqs()) {
    Io(w, eq.q);
    Io(w, eq.used);
    Io(w, eq.reserved);
    Io(w, eq.allowance);
  }
  Io(w, q.reservations());
  Io(w, q.rq_reservations());
  Io(w, q.cohort_allowance());
  Io(w, q.counted());
}

// 4. Nodes: every name ever seen (ids), the present ones in node order with their usage.
void WriteNodes(Writer& w, const EngineCapture& c, const std::vector<uint64_t>& id_of) {
  w.U64(c.node_info.size());
  for (const NodeInfo& info : c.node_info) {
    Write(w, info.name);
    Write(w, info.present);
    Write(w, info.spec);
    Write(w, info.order);
    Write(w, info.over_capacity);
  }
  Write(w, c.nodes_dirty);
  Write(w, c.node_at);
  for (const EngineCapture::NodeUse& n : c.nodes) {
    Write(w, n.cpu_used_milli);
    Write(w, n.mem_used_bytes);
    Write(w, n.gpu_used_milli);
    Write(w, n.ext_used);
    Write(w, IdsOf(id_of, n.workloads));
    Write(w, IdsOf(id_of, n.nominated));
  }
  Write(w, std::map<std::string, uint32_t>(c.model_ids.begin(), c.model_ids.end()));
  Write(w, static_cast<uint64_t>(c.next_start_node));
  Write(w, c.next_preempt_node);
}

// 6. Live workloads, in id order.
void WriteWorkloads(Writer& w, const EngineCapture& c, const std::vector<uint64_t>& id_of) {
  Write(w, c.next_id);
  std::vector<Slot> live;
  if (c.slots_are_live) {
    live = c.slots;
  } else {
    std::vector<char> is_free(c.table.size(), 0);
    for (Slot slot : c.slots) is_free[slot] = 1;
    live.reserve(c.table.size() - c.slots.size());
    for (Slot slot = 0; slot < c.table.size(); ++slot)
      if (!is_free[slot]) live.push_back(slot);
  }
  std::sort(live.begin(), live.end(), [&](Slot x, Slot y) { return id_of[x] < id_of[y]; });
  w.U64(live.size());
  for (Slot slot : live) {
    const Workload& x = c.table[slot];
    std::vector<uint64_t> waiting = IdsOf(id_of, x.waiting_for);
    uint64_t preemptor = x.preemptor == kNoSlot ? ~uint64_t{0} : id_of[x.preemptor];
    std::string reason(x.message_reason);
    // Writing only reads the workload (IoWorkload assigns it only when reading).
    IoWorkload(w, const_cast<Workload&>(x), waiting, preemptor, reason);
  }
}

// 7. The queue's bookkeeping and interned ids; 8. pod groups (members follow from the workloads).
void WriteQueue(Writer& w, const EngineCapture& c, const std::vector<uint64_t>& id_of) {
  Write(w, c.namespace_ids);
  Write(w, std::map<std::string, uint32_t>(c.class_ids.begin(), c.class_ids.end()));
  Write(w, std::map<uint32_t, std::string>(c.class_reason.begin(), c.class_reason.end()));
  Write(w, IdsOf(id_of, c.fresh));
  Write(w, c.freed);
  {
    auto heap = c.wakeups;
    std::vector<Millis> wake;
    while (!heap.empty()) {
      wake.push_back(heap.top());
      heap.pop();
    }
    Write(w, wake);
  }
  std::map<uint32_t, std::vector<uint64_t>> borrowed;
  for (const auto& [ns, list] : c.borrowed_by_ns) borrowed[ns] = IdsOf(id_of, list);
  Write(w, borrowed);
  Write(w, c.global_epoch);
  w.U64(c.gangs.size());
  for (const Gang& g : c.gangs) {
    Write(w, g.key);
    Write(w, g.min_member);
    Write(w, g.timeout);
    Write(w, g.window_start);
  }
}

}  // namespace

std::shared_ptr<const EngineCapture> Engine::Capture() const {
  const State& s = *s_;
  auto c = std::make_shared<EngineCapture>();
  c->options = s.options;
  c->now = s.now;
  c->started = s.started;
  c->pool_policy = s.pool_policy;
  c->namespaces = s.namespaces;
  c->classes = s.classes;
  c->limit_ranges = s.limit_ranges;
  c->pdbs = s.pdbs;
  c->qos_names = s.qos_names;
  c->qos_defs = s.qos_defs;
  c->price_books = s.price_books;
  c->quota = s.quota;
  CaptureWorkloads(s, *c);
  CaptureNodes(s, *c);
  CaptureQueue(s, *c);
  return c;
}

std::string Engine::EncodeCapture(const EngineCapture& c) {
  Writer w;
  // 1. Options and clock.
  Write(w, c.options.seed);
  Write(w, c.options.check_invariants);
  Write(w, c.options.placement);
  Write(w, c.options.placement_profile);
  Write(w, c.options.fgd_popularity_percent);
  Write(w, c.options.random_rescore_winner);
  Write(w, c.now);
  Write(w, c.started);
  // 2. Policy objects.
  Write(w, c.pool_policy);
  Write(w, c.namespaces);
  Write(w, c.classes);
  Write(w, c.limit_ranges);
  Write(w, c.pdbs);
  Write(w, c.qos_names);
  Write(w, c.qos_defs);
  Write(w, c.price_books);
  WriteQuota(w, c.quota);
  const std::vector<uint64_t> id_of = IdOf(c);  // by slot
  WriteNodes(w, c, id_of);
  // 5. The placement policy's own state.
  Write(w, c.placer_name);
  Write(w, c.placer_state);
  WriteWorkloads(w, c, id_of);
  WriteQueue(w, c, id_of);
  return serial::Seal(kKind, kSnapshotVersion, std::move(w.bytes()));
}

std::string Engine::Snapshot() const { return EncodeCapture(*Capture()); }

namespace {

// Engine::Restore's steps, in the snapshot's order (after the options and the clock). Each
// returns why the snapshot is corrupt, or nothing; slot references are read as WorkloadIds and
// resolved once the workloads are known.
class SnapshotRestorer {
 public:
  using Error = std::optional<std::string>;

  SnapshotRestorer(Reader& r, State& s) : r_(r), s_(s) {}

  // 2. Policy objects, and the QoS ids and preempt lists they imply.
  Error Policy() {
    Io(r_, s_.pool_policy);
    Io(r_, s_.namespaces);
    Io(r_, s_.classes);
    Io(r_, s_.limit_ranges);
    Io(r_, s_.pdbs);
    Io(r_, s_.qos_names);
    Io(r_, s_.qos_defs);
    Io(r_, s_.price_books);
    if (!r_.ok()) return r_.error();
    if (s_.qos_defs.size() != s_.qos_names.size())
      return "QoS names and definitions differ in number";
    s_.qos_ids.clear();
    s_.qos_preempt.assign(s_.qos_names.size(), {});
    for (size_t i = 0; i < s_.qos_names.size(); ++i)
      s_.qos_ids[s_.qos_names[i]] = static_cast<int32_t>(i);
    for (size_t i = 0; i < s_.qos_defs.size(); ++i)
      if (s_.qos_defs[i])
        for (const auto& n : s_.qos_defs[i]->preempt) {
          auto it = s_.qos_ids.find(n);
          if (it == s_.qos_ids.end()) return "a QoS preempts an unknown QoS " + n;
          s_.qos_preempt[i].push_back(it->second);
        }
    s_.RecomputePolicy();
    return std::nullopt;
  }

  // 3. Quota books.
  Error Quota() {
    QuotaBook& q = s_.quota;
    const uint64_t nrq = r_.Count();
    q.rqs().clear();
    for (uint64_t i = 0; i < nrq && r_.ok(); ++i) {
      QuotaBook::RQ rq;
      Io(r_, rq.q);
      Io(r_, rq.used);
      Io(r_, rq.reserved);
      Io(r_, rq.allowance);
      q.rqs().push_back(std::move(rq));
    }
    const uint64_t neq = r_.Count();
    q.eqs().clear();
    for (uint64_t i = 0; i < neq && r_.ok(); ++i) {
      QuotaBook::EQ eq;
      Io(r_, eq.q);
      Io(r_, eq.used);
      Io(r_, eq.reserved);
      Io(r_, eq.allowance);
      q.eqs().push_back(std::move(eq));
    }
    Io(r_, q.reservations());
    Io(r_, q.rq_reservations());
    Io(r_, q.cohort_allowance());
    Io(r_, q.counted());
    for (const auto& [id, holds] : q.rq_reservations())
      for (const auto& h : holds)
        if (h.rq >= q.rqs().size()) return "a quota hold on an unknown ResourceQuota";
    q.Reindex();
    if (!r_.ok()) return r_.error();
    return std::nullopt;
  }

  // 4. Nodes: every name ever seen, then the present ones in node order with their usage.
  Error Nodes() {
    const uint64_t nn = r_.Count();
    for (uint64_t i = 0; i < nn && r_.ok(); ++i) {
      NodeInfo info;
      Io(r_, info.name);
      Io(r_, info.present);
      Io(r_, info.spec);
      Io(r_, info.order);
      Io(r_, info.over_capacity);
      info.labels = info.spec.meta.labels;
      info.labels.emplace("kubernetes.io/hostname", info.spec.meta.name);
      if (!s_.node_ids.emplace(info.name, static_cast<uint32_t>(i)).second)
        return "node " + info.name + " twice";
      s_.node_info.push_back(std::move(info));
    }
    Io(r_, s_.nodes_dirty);
    Io(r_, s_.node_at);
    if (!r_.ok()) return r_.error();
    on_node_.resize(s_.node_at.size());
    nominated_.resize(s_.node_at.size());
    for (uint32_t pos = 0; pos < s_.node_at.size(); ++pos)
      if (Error e = NodeAt(pos)) return e;
    size_t present = 0;
    for (const NodeInfo& info : s_.node_info) present += info.present;
    if (present != s_.node_at.size()) return "present nodes and node positions differ";
    std::map<std::string, uint32_t> models;
    Io(r_, models);
    s_.model_ids.clear();
    for (const auto& [m, bit] : models) {
      if (bit > 31) return "a GPU model bit out of range";
      s_.model_ids.emplace(m, bit);
    }
    uint64_t next_start = 0;
    Io(r_, next_start);
    Io(r_, s_.next_preempt_node);
    s_.next_start_node = static_cast<size_t>(next_start);
    s_.RebuildFitIndex();
    return std::nullopt;
  }

  // 5. The placement policy's own state (only for the same policy: a branch starts afresh).
  Error Placer(bool same_policy) {
    PlacementPolicyName saved_placer = PlacementPolicyName::kBestFit;
    std::vector<uint64_t> placer_state;
    Io(r_, saved_placer);
    Io(r_, placer_state);
    if (!r_.ok()) return r_.error();
    s_.placer->Reset(s_.nodes);
    if (saved_placer == s_.placer_name && same_policy && !s_.placer->LoadState(placer_state))
      return "the placement policy's state does not fit the policy";
    return std::nullopt;
  }

  // 6. Live workloads, then the slot references of workloads and nodes.
  Error Workloads() {
    Io(r_, s_.next_id);
    const uint64_t nw = r_.Count();
    waiting_.assign(nw, {});
    preemptor_.assign(nw, 0);
    for (uint64_t i = 0; i < nw && r_.ok(); ++i) {
      Workload x;
      std::string why;
      IoWorkload(r_, x, waiting_[i], preemptor_[i], why);
      if (!r_.ok()) break;
      if (Error e = CheckWorkload(x, why)) return e;
      x.slot = static_cast<Slot>(i);
      if (!s_.slot_of.emplace(Value(x.id), x.slot).second ||
          !s_.by_key.emplace(x.key, x.slot).second)
        return "workload " + x.key + " twice";
      if (Value(x.id) >= s_.next_id) return x.key + " has an id not yet given out";
      s_.workloads.push_back(std::move(x));
    }
    if (!r_.ok()) return r_.error();
    for (size_t i = 0; i < s_.workloads.size(); ++i) {
      if (!SlotsOf(waiting_[i], &s_.workloads[i].waiting_for) ||
          !SlotOf(preemptor_[i], &s_.workloads[i].preemptor))
        return "a reference to an unknown workload";
    }
    for (uint32_t pos = 0; pos < s_.node_at.size(); ++pos) {
      if (!SlotsOf(on_node_[pos], &s_.node_live[pos].workloads) ||
          !SlotsOf(nominated_[pos], &s_.node_live[pos].nominated))
        return "a node lists an unknown workload";
      s_.RecountMinPriority(pos);
    }
    return std::nullopt;
  }

  // 7. The queue's bookkeeping, and 8. pod groups (members follow from the workloads); then the
  // end of the snapshot.
  Error Queue() {
    Io(r_, s_.namespace_ids);
    for (Workload& x : s_.workloads) {  // every live workload counts (maxSubmittedPerNamespace)
      if (x.namespace_id >= s_.namespace_ids.size()) return x.key + " has an unknown namespace";
      s_.CountSubmitted(x);
    }
    {
      std::map<std::string, uint32_t> classes;
      std::map<uint32_t, std::string> reasons;
      Io(r_, classes);
      Io(r_, reasons);
      s_.class_ids = std::unordered_map<std::string, uint32_t>(classes.begin(), classes.end());
      s_.class_reason = std::unordered_map<uint32_t, std::string>(reasons.begin(), reasons.end());
    }
    std::vector<uint64_t> fresh;
    Io(r_, fresh);
    Io(r_, s_.freed);
    std::vector<Millis> wake;
    Io(r_, wake);
    std::map<uint32_t, std::vector<uint64_t>> borrowed;
    Io(r_, borrowed);
    Io(r_, s_.global_epoch);
    if (Error e = Gangs()) return e;
    if (!r_.AtEnd()) return "bytes after the end";
    if (!SlotsOf(fresh, &s_.fresh)) return "a fresh arrival that is not a workload";
    for (Millis t : wake) s_.wakeups.push(t);
    for (const auto& [ns, ids] : borrowed)
      if (!SlotsOf(ids, &s_.borrowed_by_ns[ns])) return "a borrower that is not a workload";
    return std::nullopt;
  }

  // Indexes (rebuilt, not saved).
  void RebuildIndexes() {
    s_.nominations = 0;
    s_.ends_known = 0;
    for (const Workload& x : s_.workloads) {
      if (x.nominated_node != kNoNode) ++s_.nominations;
      if (x.node != kNoNode && State::EndKnown(x)) ++s_.ends_known;
      if (x.phase == Phase::kPending && !x.held) s_.PendingInsert(x.slot);
      if (x.held) s_.held.push_back(x.slot);
      if (x.release_at >= 0) s_.completing.push_back(x.slot);
      if (x.taint_evict_at >= 0) s_.taint_timed.push_back(x.slot);
      if (x.topology) s_.topology_seen = true;
      if (x.unreclaimable_hold) s_.cycle_holds.push_back(x.slot);
      if (x.node != kNoNode) s_.TrackPlacedTopology(x, /*bound=*/true);
    }
    s_.RematchAllPdbs();
  }

 private:
  // The node at `pos`: its usage, and the ids of its workloads and nominations.
  Error NodeAt(uint32_t pos) {
    const uint32_t id = s_.node_at[pos];
    if (id >= s_.node_info.size() || !s_.node_info[id].present)
      return "a node position names an absent node";
    NodeInfo& info = s_.node_info[id];
    info.pos = pos;
    placement::NodeState n;
    n.name = info.name;
    if (auto prod = info.spec.meta.labels.find("nvidia.com/gpu.product");
        prod != info.spec.meta.labels.end())
      n.gpu_model = prod->second;
    n.labels = &info.labels;
    n.schedulable = !info.spec.unschedulable;
    s_.ApplyCapacity(info, n);
    Io(r_, n.cpu_used_milli);
    Io(r_, n.mem_used_bytes);
    Io(r_, n.gpu_used_milli);
    Io(r_, n.ext_used);
    Io(r_, on_node_[pos]);
    Io(r_, nominated_[pos]);
    if (!r_.ok()) return r_.error();
    if (n.gpu_used_milli.size() > static_cast<size_t>(placement::kMaxGpusPerNode))
      return "too many GPU devices";
    n.RecountGpus();
    s_.nodes.push_back(std::move(n));
    s_.node_live.emplace_back();
    return std::nullopt;
  }

  // A workload as read: its reason known, its nodes present, its QoS known, not finished.
  Error CheckWorkload(Workload& x, const std::string& why) const {
    auto known = KnownReason(why);
    if (!known) return "an unknown reason " + why;
    x.message_reason = *known;
    if (x.node != kNoNode && (x.node >= s_.node_info.size() || !s_.node_info[x.node].present))
      return x.key + " is on an absent node";
    if (x.nominated_node != kNoNode &&
        (x.nominated_node >= s_.node_info.size() || !s_.node_info[x.nominated_node].present))
      return x.key + " is nominated to an absent node";
    if (x.qos >= static_cast<int32_t>(s_.qos_names.size())) return x.key + " has an unknown QoS";
    if (IsFinal(x.phase)) return x.key + " has finished";
    return std::nullopt;
  }

  // 8. Pod groups; each workload joins its group's members.
  Error Gangs() {
    const uint64_t ng = r_.Count();
    for (uint64_t i = 0; i < ng && r_.ok(); ++i) {
      Gang g;
      Io(r_, g.key);
      Io(r_, g.min_member);
      Io(r_, g.timeout);
      Io(r_, g.window_start);
      if (!s_.gang_ids.emplace(g.key, static_cast<uint32_t>(i)).second)
        return "pod group " + g.key + " twice";
      s_.gangs.push_back(std::move(g));
    }
    if (!r_.ok()) return r_.error();
    for (const Workload& x : s_.workloads) {
      if (x.gang == kNoGang) continue;
      if (x.gang >= s_.gangs.size()) return x.key + " names an unknown pod group";
      s_.gangs[x.gang].members.push_back(x.slot);
    }
    return std::nullopt;
  }

  // A saved WorkloadId as a slot (~0: none); false if no live workload has it.
  bool SlotOf(uint64_t id, Slot* out) const {
    if (id == ~uint64_t{0}) {
      *out = kNoSlot;
      return true;
    }
    auto it = s_.slot_of.find(id);
    if (it == s_.slot_of.end()) return false;
    *out = it->second;
    return true;
  }

  bool SlotsOf(const std::vector<uint64_t>& ids, std::vector<Slot>* out) const {
    out->clear();
    for (uint64_t id : ids) {
      Slot x;
      if (!SlotOf(id, &x) || x == kNoSlot) return false;
      out->push_back(x);
    }
    return true;
  }

  Reader& r_;
  State& s_;
  std::vector<std::vector<uint64_t>> on_node_, nominated_;  // by node position
  std::vector<std::vector<uint64_t>> waiting_;              // by workload slot
  std::vector<uint64_t> preemptor_;                         // by workload slot
};

// Snapshots before version 13 were written when the ResourceQuota scope CrossNamespacePodAffinity
// was skipped: such a quota counted every pod. Now it counts only the pods with a cross-namespace
// pod (anti-)affinity term, so a pod without one leaving takes nothing off it, and the usage saved
// would never come down. It is recounted as a new quota counts what already runs
// (State::QuotaChanged): the workloads charged and the terminal pods count/pods still counts.
// The other quotas, and the holds of preemptors waiting (taken off as they were put on), are
// kept as saved; an allowance above hard shrinks to the usage recounted, as when pods leave.
void RecountCrossNamespaceQuotas(State& s) {
  std::vector<QuotaBook::RQ>& rqs = s.quota.rqs();
  QuotaBook fresh;  // those quotas alone, counted from nothing
  std::vector<size_t> recounted;
  for (size_t i = 0; i < rqs.size(); ++i)
    for (const ScopeRequirement& scope : rqs[i].q.scope_selector)
      if (scope.scope_name == "CrossNamespacePodAffinity") {
        fresh.SetResourceQuota(rqs[i].q);
        recounted.push_back(i);
        break;
      }
  if (recounted.empty()) return;
  fresh.counted() = s.quota.counted();
  std::vector<const Workload*> charged;
  const WorkloadTable& table = s.workloads;
  for (const auto& [id, slot] : s.slot_of)
    if (table[slot].quota_charged) charged.push_back(&table[slot]);
  fresh.Recount(charged);
  for (size_t j = 0; j < recounted.size(); ++j) {
    QuotaBook::RQ& rq = rqs[recounted[j]];
    for (auto& [key, used] : rq.used) used = 0;
    for (const auto& [key, used] : fresh.rqs()[j].used) rq.used[key] = used;
    for (auto a = rq.allowance.begin(); a != rq.allowance.end();) {
      int64_t hard = 0;
      for (const QuotaItem& item : rq.q.hard)
        if (item.key == a->first) hard = item.hard;
      const auto u = rq.used.find(a->first);
      a->second = std::min(a->second, u == rq.used.end() ? int64_t{0} : u->second);
      a = a->second <= hard ? rq.allowance.erase(a) : std::next(a);
    }
  }
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Restore(std::string_view snapshot,
                                                const RestoreOptions& ro) {
  using R = Result<std::unique_ptr<Engine>>;
  uint32_t version = 0;
  auto body = serial::Unseal(snapshot, kKind, 2, kSnapshotVersion, &version);
  if (!body.ok()) return body.status();
  Reader r(*body);
  r.flavorless = version < 3;
  r.latencyless = version < 4;
  r.depthless = version < 5;
  r.constraintless = version < 6;
  r.schedless = version < 7;
  r.topologyless = version < 7;
  r.reservationless = version < 8;
  r.lostworkless = version < 9;
  r.backoffless = version < 10;
  r.heldless = version < 11;
  r.boundless = version < 12;
  r.namespaceless = version < 14;
  r.submitless = version < 15;
  auto fail = [&](const std::string& why) {
    return R::Error(StatusCode::kInvalidArgument, "corrupt engine snapshot: " + why);
  };

  // 1. Options and clock.
  EngineOptions eo;
  IoOptions(r, eo);
  if (!r.ok()) return fail(r.error());
  std::optional<PlacementPolicyName> saved_placement = eo.placement;
  if (ro.placement) eo.placement = ro.placement;
  if (ro.check_invariants) eo.check_invariants = *ro.check_invariants;
  auto engine = std::make_unique<Engine>(eo);
  State& s = *engine->s_;
  Io(r, s.now);
  Io(r, s.started);
  SnapshotRestorer restore(r, s);
  SnapshotRestorer::Error e = restore.Policy();
  if (!e) e = restore.Quota();
  if (!e) e = restore.Nodes();
  if (!e) e = restore.Placer(/*same_policy=*/!ro.placement || ro.placement == saved_placement);
  if (!e) e = restore.Workloads();
  if (!e) e = restore.Queue();
  if (e) return fail(*e);
  restore.RebuildIndexes();
  if (version < 13) RecountCrossNamespaceQuotas(s);
  // A pool appended before the first Tick stays as it was: the next command puts it in order, as
  // it would have in the saved engine.
  if (!s.nodes_dirty) s.placer->Reset(s.nodes);
  if (Status inv = s.CheckInvariants(); !inv.ok())
    return fail("its state is inconsistent: " + inv.message());
  return engine;
}

}  // namespace arbiter::engine
