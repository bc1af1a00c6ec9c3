// The pool and its policy objects: nodes joining, changing and leaving, and the Upsert/Delete
// commands of namespaces, quotas, limit ranges, priority classes, budgets, QoS, the PoolPolicy
// and price books (runtime semantics in command.h).
#include <algorithm>
#include <numeric>

#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/int128.h"
#include "core/placement/policies.h"

namespace arbiter::engine {

namespace {
int64_t MulRatio(int64_t v, int64_t milli) {
  return static_cast<int64_t>(static_cast<int128>(v) * milli / 1000);
}

const ResourceList& AllocatableOf(const Node& n) {
  return n.allocatable.empty() ? n.capacity : n.allocatable;
}

Status CheckNodeSpec(const Node& n) {
  if (n.meta.name.empty()) return Status::InvalidArgument("UpsertNode: the node has no name");
  const ResourceList& a = AllocatableOf(n);
  if (a.Get(kGpu) < 0 || a.Get(kGpu) % placement::kMilliPerGpu != 0 ||
      a.Get(kGpu) / placement::kMilliPerGpu > placement::kMaxGpusPerNode)
    return Status::InvalidArgument("node " + n.meta.name +
                                   ": nvidia.com/gpu must be a whole number of devices, at most " +
                                   std::to_string(placement::kMaxGpusPerNode));
  return Status::Ok();
}
}  // namespace

State::State(EngineOptions o) : options(std::move(o)) { RecomputePolicy(); }

// ------------------------------------------------------------------ nodes

void State::ApplyCapacity(NodeInfo& info, placement::NodeState& s) {
  const ResourceList& a = AllocatableOf(info.spec);
  s.cpu_capacity_milli = MulRatio(a.Get(kCpu), policy.cpu_overcommit_milli);
  s.mem_capacity_bytes = MulRatio(a.Get(kMemory), policy.memory_overcommit_milli);
  s.ext_capacity = ResourceList{};
  for (const auto& [r, v] : a.entries())
    if (r != kCpu && r != kMemory && r != kGpu) s.ext_capacity.Set(r, v);
}

void State::CheckOverCapacity(uint32_t pos) {
  const placement::NodeState& n = nodes[pos];
  bool over = n.cpu_used_milli > n.cpu_capacity_milli || n.mem_used_bytes > n.mem_capacity_bytes;
  for (const auto& [r, v] : n.ext_used.entries())
    if (n.ext_capacity.Has(r) && v > n.ext_capacity.Get(r)) over = true;
  node_info[node_at[pos]].over_capacity = over;
}

Status State::AddNode(const Node& node, int64_t order) {
  uint32_t id;
  if (auto it = node_ids.find(node.meta.name); it != node_ids.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(node_info.size());
    node_info.emplace_back();
    node_ids.emplace(node.meta.name, id);
  }
  NodeInfo& info = node_info[id];
  info.name = node.meta.name;
  info.present = true;
  info.spec = node;
  info.order = order;
  info.over_capacity = false;
  // The kubelet labels every node with its hostname; selectors on it work here too.
  info.labels = node.meta.labels;
  info.labels.emplace("kubernetes.io/hostname", node.meta.name);
  placement::NodeState s;
  s.name = node.meta.name;
  if (auto prod = node.meta.labels.find("nvidia.com/gpu.product"); prod != node.meta.labels.end())
    s.gpu_model = prod->second;
  s.labels = &info.labels;
  s.schedulable = !node.unschedulable;
  ApplyCapacity(info, s);
  s.gpu_used_milli.assign(
      static_cast<size_t>(AllocatableOf(node).Get(kGpu) / placement::kMilliPerGpu), 0);
  s.RecountGpus();
  // Appended now, put in node order by EnsureNodes (once for a whole initial pool).
  info.pos = static_cast<uint32_t>(nodes.size());
  nodes.push_back(std::move(s));
  node_at.push_back(id);
  node_live.emplace_back();
  fit.emplace_back();
  fit.back().model_bit = ModelBit(nodes.back().gpu_model);
  RefreshFit(info.pos);
  nodes_dirty = true;
  freed = true;
  if (started) {
    EmitNode(EventType::kNodeAdded, node.meta.name, "node " + node.meta.name + " joined the pool");
    EnsureNodes();
  }
  return Status::Ok();
}

void State::EnsureNodes() {
  if (!nodes_dirty) return;
  nodes_dirty = false;
  std::vector<uint32_t> perm(nodes.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](uint32_t a, uint32_t b) {
    const NodeInfo& x = node_info[node_at[a]];
    const NodeInfo& y = node_info[node_at[b]];
    if (x.order != y.order) return x.order < y.order;
    return x.name < y.name;
  });
  std::vector<placement::NodeState> sorted;
  std::vector<uint32_t> ids;
  std::vector<NodeLive> live;
  sorted.reserve(nodes.size());
  ids.reserve(nodes.size());
  live.reserve(nodes.size());
  for (uint32_t p : perm) {
    sorted.push_back(std::move(nodes[p]));
    ids.push_back(node_at[p]);
    live.push_back(std::move(node_live[p]));
  }
  nodes = std::move(sorted);
  node_at = std::move(ids);
  node_live = std::move(live);
  NodesReordered();
}

void State::NodesReordered() {
  ++pool_version;
  for (uint32_t pos = 0; pos < node_at.size(); ++pos) node_info[node_at[pos]].pos = pos;
  RebuildFitIndex();
  placer->Reset(nodes);
  ++global_epoch;
}

Status State::UpdateNode(uint32_t id, const Node& node, int64_t order) {
  NodeInfo& info = node_info[id];
  placement::NodeState& s = nodes[info.pos];
  const size_t devices =
      static_cast<size_t>(AllocatableOf(node).Get(kGpu) / placement::kMilliPerGpu);
  for (size_t d = devices; d < s.gpu_used_milli.size(); ++d)
    if (s.gpu_used_milli[d] != 0)
      return Status::FailedPrecondition(
          "node " + node.meta.name + ": GPU device " + std::to_string(d) +
          " is in use; a node's GPUs can only be removed when unused");
  CountTaints(info.spec, -1);
  CountTaints(node, +1);
  info.spec = node;
  info.labels = node.meta.labels;
  info.labels.emplace("kubernetes.io/hostname", node.meta.name);
  s.gpu_model.clear();
  if (auto prod = node.meta.labels.find("nvidia.com/gpu.product"); prod != node.meta.labels.end())
    s.gpu_model = prod->second;
  s.schedulable = !node.unschedulable;
  ApplyCapacity(info, s);
  s.gpu_used_milli.resize(devices, 0);
  s.RecountGpus();
  CheckOverCapacity(info.pos);
  fit[info.pos].model_bit = ModelBit(s.gpu_model);
  RefreshFit(info.pos);
  Touch(id);
  freed = true;
  NoExecuteTaintsChanged(info.pos);  // evictions for NoExecute taints that appeared
  if (info.order != order) {
    info.order = order;
    nodes_dirty = true;
    EnsureNodes();
  } else {
    placer->Reset(nodes);
    ++global_epoch;
  }
  return Status::Ok();
}

Status State::UpsertNodeCmd(UpsertNode&& c) {
  if (Status s = CheckNodeSpec(c.node); !s.ok()) return s;
  auto it = node_ids.find(c.node.meta.name);
  if (it != node_ids.end() && node_info[it->second].present) {
    EnsureNodes();
    return UpdateNode(it->second, c.node, c.order);
  }
  return AddNode(c.node, c.order);
}

// A removed node takes its workloads with it, like a Kubernetes node deletion (its pods are
// deleted) or a Slurm node failure: no SIGTERM, no grace period, no final save. A running
// workload keeps only what its work model saved and meets its preemption fate (Requeue or
// Cancel, from the pod, its QoS or the PoolPolicy); the driver accounts the work lost (billed as
// lost work caused by "node/NAME"). A victim already shutting down there is cut short: it exits
// now. Preemptors nominated to the node lose the nomination.
Status State::RemoveNodeCmd(const RemoveNode& c) {
  auto it = node_ids.find(c.name);
  if (it == node_ids.end() || !node_info[it->second].present)
    return Status::NotFound("no node named " + c.name);
  const uint32_t id = it->second;
  NodeInfo& info = node_info[id];
  EmitNode(EventType::kNodeRemoved, c.name,
           "node " + c.name + " left the pool with " +
               std::to_string(node_live[info.pos].workloads.size()) + " workload(s)");
  std::vector<Slot> on = node_live[info.pos].workloads;
  std::sort(on.begin(), on.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  std::vector<Slot> gang_lost;  // running members lost here: their pod groups stop with them
  for (Slot s : on) {
    Workload& w = workloads[s];
    const bool running = w.phase == Phase::kRunning;
    if (running && w.gang != kNoGang) gang_lost.push_back(s);
    if (running) {
      w.preempted_by = "node/" + c.name;
      w.preemptor = kNoSlot;
      w.stop_time = now;
      w.stop_grace = 0;
    }
    Emit(EventType::kTerminated, w, c.name, reason::kNodeRemoved,
         running ? "node " + c.name + " was removed; killed without a grace period"
                 : "node " + c.name + " was removed while it was shutting down",
         "", WorkFacts::kProgressLost);
    Exit(w, /*emit_terminated=*/false);
  }
  for (Slot s : gang_lost) StopGang(workloads[s], "node/" + c.name);
  const uint32_t pos = info.pos;
  for (Slot s : node_live[pos].nominated) {
    workloads[s].nominated_node = kNoNode;
    Restated(workloads[s]);
  }
  nominations -= node_live[pos].nominated.size();
  info.present = false;
  nodes.erase(nodes.begin() + pos);
  node_at.erase(node_at.begin() + pos);
  node_live.erase(node_live.begin() + pos);
  NodesReordered();
  freed = true;
  return Status::Ok();
}

// ------------------------------------------------------------------ the PoolPolicy and placement

void State::ResetPlacer() {
  if (policy.placement == PlacementPolicyName::kFGD)
    placer = std::make_unique<placement::FgdPolicy>(options.placement_profile,
                                                    options.fgd_popularity_percent);
  else
    placer = placement::MakePlacementPolicy(
        policy.placement, options.seed, options.placement_profile, options.random_rescore_winner);
  placer_name = policy.placement;
  placer->Reset(nodes);
}

void State::RecomputePolicy() {
  const PoolPolicy old = policy;
  policy = pool_policy.value_or(PoolPolicy{});
  if (options.placement)
    policy.placement = *options.placement;  // --policy overrides the PoolPolicy
  if (!placer || placer_name != policy.placement) ResetPlacer();
  ++pool_version;
  if (old.cpu_overcommit_milli != policy.cpu_overcommit_milli ||
      old.memory_overcommit_milli != policy.memory_overcommit_milli) {
    for (uint32_t pos = 0; pos < nodes.size(); ++pos) {
      ApplyCapacity(node_info[node_at[pos]], nodes[pos]);
      CheckOverCapacity(pos);
      RefreshFit(pos);
    }
    placer->Reset(nodes);
  }
  ++global_epoch;
  freed = true;
}

Status State::UpsertPoolPolicyCmd(std::optional<PoolPolicy> p) {
  if (p && p->cpu_overcommit_milli < 1000)
    return Status::InvalidArgument("PoolPolicy overcommit.cpu must be at least 1.0");
  if (p && p->memory_overcommit_milli <= 0)
    return Status::InvalidArgument("PoolPolicy overcommit.memory must be above 0");
  if (p && p->max_submitted_per_namespace < 0)
    return Status::InvalidArgument(
        "PoolPolicy quota.maxSubmittedPerNamespace must not be negative");
  pool_policy = std::move(p);
  RecomputePolicy();
  return Status::Ok();
}

// ------------------------------------------------------------------ quotas

void State::QuotaChanged() {
  std::vector<const Workload*> charged;
  std::vector<Workload*> live;
  for (auto& [id, s] : slot_of) live.push_back(&workloads[s]);
  std::sort(live.begin(), live.end(),
            [](const Workload* a, const Workload* b) { return Value(a->id) < Value(b->id); });
  for (Workload* w : live)
    if (w->quota_charged) charged.push_back(w);
  quota.Recount(charged);
  for (Workload* w : held_quota) quota.Reserve(*w);
  held_quota.clear();
  for (Workload* w : live) {
    w->elastic = quota.HasElastic(w->namespace_);
    w->has_quota = quota.HasAnyQuota(w->namespace_);
  }
  // A namespace back within its min (or without an ElasticQuota) runs nothing on borrowed quota.
  for (auto& [ns_id, borrowers] : borrowed_by_ns) {
    if (borrowers.empty()) continue;
    const std::string& ns = workloads[borrowers.front()].namespace_;
    if (quota.HasElastic(ns) && quota.IsBorrowing(ns)) continue;
    for (Slot s : borrowers) {
      workloads[s].borrowed = false;
      Restated(workloads[s]);
    }
    borrowers.clear();
  }
  ++global_epoch;
  freed = true;
}

void State::DropQuotaHolds() {
  held_quota.clear();
  for (auto& [id, s] : slot_of)
    if (quota.Holds(workloads[s])) held_quota.push_back(&workloads[s]);
  std::sort(held_quota.begin(), held_quota.end(),
            [](const Workload* a, const Workload* b) { return Value(a->id) < Value(b->id); });
  for (Workload* w : held_quota) quota.Unreserve(*w);
}

Status State::UpsertResourceQuotaCmd(UpsertResourceQuota&& c) {
  if (c.quota.meta.name.empty())
    return Status::InvalidArgument("UpsertResourceQuota: the quota has no name");
  DropQuotaHolds();
  quota.SetResourceQuota(c.quota);
  QuotaChanged();
  return Status::Ok();
}

Status State::DeleteResourceQuotaCmd(const DeleteResourceQuota& c) {
  DropQuotaHolds();
  Status s = quota.DeleteResourceQuota(c.ref.namespace_, c.ref.name);
  QuotaChanged();
  return s;
}

Status State::UpsertElasticQuotaCmd(UpsertElasticQuota&& c) {
  if (c.quota.meta.name.empty())
    return Status::InvalidArgument("UpsertElasticQuota: the quota has no name");
  for (const auto& e : quota.elastic_quotas())
    if (e.meta.namespace_ == c.quota.meta.namespace_ && e.meta.name != c.quota.meta.name)
      return Status::AlreadyExists("namespace " + c.quota.meta.namespace_ +
                                   " already has ElasticQuota " + e.meta.name +
                                   " (one per namespace)");
  DropQuotaHolds();
  Status s = quota.SetElasticQuota(c.quota);
  QuotaChanged();
  return s;
}

Status State::DeleteElasticQuotaCmd(const DeleteElasticQuota& c) {
  DropQuotaHolds();
  Status s = quota.DeleteElasticQuota(c.ref.namespace_, c.ref.name);
  QuotaChanged();
  return s;
}

// ------------------------------------------------------------------ other policy objects

Status State::UpsertNamespaceCmd(UpsertNamespace&& c) {
  if (c.ns.meta.name.empty())
    return Status::InvalidArgument("UpsertNamespace: the namespace has no name");
  namespaces[c.ns.meta.name] = std::move(c.ns);
  return Status::Ok();
}

Status State::DeleteNamespaceCmd(const DeleteNamespace& c) {
  if (!namespaces.count(c.name)) return Status::NotFound("no Namespace " + c.name);
  // Its pods first (graceful deletion), in submission order; then its namespaced objects.
  std::vector<WorkloadId> in;
  for (const auto& [id, s] : slot_of)
    if (workloads[s].namespace_ == c.name) in.push_back(workloads[s].id);
  std::sort(in.begin(), in.end(), [](WorkloadId a, WorkloadId b) { return Value(a) < Value(b); });
  for (WorkloadId id : in) {
    Status s = Delete(DeletePod{id, std::nullopt});
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  }
  DropQuotaHolds();
  for (const auto& q : quota.resource_quotas())
    if (q.meta.namespace_ == c.name)
      (void)quota.DeleteResourceQuota(q.meta.namespace_, q.meta.name);
  for (const auto& q : quota.elastic_quotas())
    if (q.meta.namespace_ == c.name) (void)quota.DeleteElasticQuota(q.meta.namespace_, q.meta.name);
  QuotaChanged();
  limit_ranges.erase(c.name);
  const size_t before = pdbs.size();
  pdbs.erase(std::remove_if(pdbs.begin(), pdbs.end(),
                            [&](const PodDisruptionBudget& p) {
                              return (p.meta.namespace_.empty() ? "default" : p.meta.namespace_) ==
                                     c.name;
                            }),
             pdbs.end());
  if (pdbs.size() != before) RematchAllPdbs();
  namespaces.erase(c.name);
  return Status::Ok();
}

Status State::UpsertLimitRangeCmd(UpsertLimitRange&& c) {
  if (c.limit_range.meta.name.empty())
    return Status::InvalidArgument("UpsertLimitRange: the LimitRange has no name");
  limit_ranges[c.limit_range.meta.namespace_][c.limit_range.meta.name] = std::move(c.limit_range);
  return Status::Ok();
}

Status State::DeleteLimitRangeCmd(const DeleteLimitRange& c) {
  auto ns = limit_ranges.find(c.ref.namespace_);
  if (ns == limit_ranges.end() || !ns->second.erase(c.ref.name))
    return Status::NotFound("no LimitRange " + c.ref.namespace_ + "/" + c.ref.name);
  if (ns->second.empty()) limit_ranges.erase(ns);
  return Status::Ok();
}

Status State::UpsertPriorityClassCmd(UpsertPriorityClass&& c) {
  const PriorityClass& pc = c.priority_class;
  if (pc.meta.name.empty())
    return Status::InvalidArgument("UpsertPriorityClass: the PriorityClass has no name");
  if (auto it = classes.find(pc.meta.name); it != classes.end() && it->second.value != pc.value)
    return Status::InvalidArgument(
        "PriorityClass " + pc.meta.name + ": value may not be changed in an update (" +
        std::to_string(it->second.value) + " -> " + std::to_string(pc.value) + ")");
  if (pc.global_default)
    if (const PriorityClass* def = GlobalDefault(); def && def->meta.name != pc.meta.name)
      return Status::Conflict("more than one globalDefault PriorityClass: " + def->meta.name +
                              " is already the default");
  classes[pc.meta.name] = pc;
  return Status::Ok();
}

Status State::DeletePriorityClassCmd(const DeletePriorityClass& c) {
  if (!classes.erase(c.name)) return Status::NotFound("no PriorityClass " + c.name);
  return Status::Ok();
}

Status State::UpsertPdbCmd(UpsertPodDisruptionBudget&& c) {
  if (c.pdb.meta.name.empty())
    return Status::InvalidArgument("UpsertPodDisruptionBudget: the budget has no name");
  uint32_t k = 0;  // (a name is kept once: the same key replaces)
  while (k < pdbs.size() && !(pdbs[k].meta.namespace_ == c.pdb.meta.namespace_ &&
                              pdbs[k].meta.name == c.pdb.meta.name))
    ++k;
  if (k < pdbs.size())
    pdbs[k] = std::move(c.pdb);
  else
    pdbs.push_back(std::move(c.pdb));
  RematchPdb(k);
  ++global_epoch;
  return Status::Ok();
}

Status State::DeletePdbCmd(const DeletePodDisruptionBudget& c) {
  uint32_t k = 0;
  while (k < pdbs.size() &&
         !(pdbs[k].meta.namespace_ == c.ref.namespace_ && pdbs[k].meta.name == c.ref.name))
    ++k;
  if (k == pdbs.size())
    return Status::NotFound("no PodDisruptionBudget " + c.ref.namespace_ + "/" + c.ref.name);
  pdbs.erase(pdbs.begin() + k);
  UnmatchPdb(k);
  ++global_epoch;
  return Status::Ok();
}

int32_t State::QoSId(const std::string& name) {
  auto it = qos_ids.find(name);
  if (it != qos_ids.end()) return it->second;
  const int32_t id = static_cast<int32_t>(qos_names.size());
  qos_names.push_back(name);
  qos_ids.emplace(name, id);
  qos_defs.emplace_back();
  qos_preempt.emplace_back();
  return id;
}

Status State::UpsertQoSCmd(UpsertQoS&& c) {
  if (c.qos.meta.name.empty()) return Status::InvalidArgument("UpsertQoS: the QoS has no name");
  const int32_t id = QoSId(c.qos.meta.name);
  std::vector<int32_t> preempt;
  for (const auto& n : c.qos.preempt) preempt.push_back(QoSId(n));
  qos_preempt[static_cast<size_t>(id)] = std::move(preempt);
  qos_defs[static_cast<size_t>(id)] = std::move(c.qos);
  ++global_epoch;
  return Status::Ok();
}

Status State::DeleteQoSCmd(const DeleteQoS& c) {
  auto it = qos_ids.find(c.name);
  if (it == qos_ids.end() || !qos_defs[static_cast<size_t>(it->second)])
    return Status::NotFound("no QoS " + c.name);
  qos_defs[static_cast<size_t>(it->second)].reset();
  qos_preempt[static_cast<size_t>(it->second)].clear();
  ++global_epoch;
  return Status::Ok();
}

Status State::UpsertPriceBookCmd(UpsertPriceBook&& c) {
  if (c.price_book.meta.name.empty())
    return Status::InvalidArgument("UpsertPriceBook: the PriceBook has no name");
  for (auto& b : price_books)
    if (b.meta.name == c.price_book.meta.name) {
      b = std::move(c.price_book);
      return Status::Ok();
    }
  price_books.push_back(std::move(c.price_book));
  return Status::Ok();
}

Status State::DeletePriceBookCmd(const DeletePriceBook& c) {
  for (size_t i = 0; i < price_books.size(); ++i)
    if (price_books[i].meta.name == c.name) {
      price_books.erase(price_books.begin() + static_cast<long>(i));
      return Status::Ok();
    }
  return Status::NotFound("no PriceBook " + c.name);
}

}  // namespace arbiter::engine
