#include "core/engine/engine.h"

#include "core/engine/admission.h"

#include <algorithm>
#include <map>

#include "core/gpu_sharing.h"
#include "core/quantity.h"

namespace arbiter::engine {

using placement::GpuAssignment;
using placement::NodeState;
using placement::PodShape;

namespace {
constexpr Millis kDefaultGrace = 30000;

int64_t MulRatio(int64_t v, int64_t milli) {
  return static_cast<int64_t>(static_cast<__int128>(v) * milli / 1000);
}
}  // namespace

const char* ToString(Phase p) {
  switch (p) {
    case Phase::kPending: return "Pending";
    case Phase::kRunning: return "Running";
    case Phase::kTerminating: return "Running";  // still holds its node until it exits
    case Phase::kSucceeded: return "Succeeded";
    case Phase::kPreempted: return "Preempted";
    case Phase::kRejected: return "Rejected";
  }
  return "?";
}

const char* ToString(EventType t) {
  switch (t) {
    case EventType::kSubmitted: return "Submitted";
    case EventType::kQuotaExceeded: return "QuotaExceeded";
    case EventType::kFailedScheduling: return "FailedScheduling";
    case EventType::kRejected: return "Rejected";
    case EventType::kScheduled: return "Scheduled";
    case EventType::kPreempting: return "Preempting";
    case EventType::kPreempted: return "Preempted";
    case EventType::kTerminated: return "Terminated";
    case EventType::kRequeued: return "Requeued";
    case EventType::kCancelled: return "Cancelled";
    case EventType::kBorrowed: return "Borrowed";
    case EventType::kReclaimed: return "Reclaimed";
    case EventType::kCompleted: return "Completed";
    case EventType::kNodeAdded: return "NodeAdded";
    case EventType::kNodeRemoved: return "NodeRemoved";
  }
  return "?";
}

bool Engine::QueueOrder::operator()(size_t a, size_t b) const {
  const Workload& x = (*w)[a];
  const Workload& y = (*w)[b];
  if (x.priority != y.priority) return x.priority > y.priority;
  if (x.submit_time != y.submit_time) return x.submit_time < y.submit_time;
  if (x.key != y.key) return x.key < y.key;
  return a < b;
}

Engine::Engine(const ManifestSet& m, EngineOptions o)
    : m_(m), options_(o) {}

void Engine::PendingInsert(size_t id) {
  auto it = pending_.find(workloads_[id].preempt_class);
  if (it == pending_.end())
    it = pending_.emplace(workloads_[id].preempt_class, std::set<size_t, QueueOrder>(QueueOrder{&workloads_})).first;
  it->second.insert(id);
}

void Engine::PendingErase(size_t id) {
  auto it = pending_.find(workloads_[id].preempt_class);
  if (it != pending_.end()) it->second.erase(id);
}

bool Engine::IsPending(size_t id) const {
  auto it = pending_.find(workloads_[id].preempt_class);
  return it != pending_.end() && it->second.count(id) > 0;
}

Result<std::unique_ptr<Engine>> Engine::Create(const ManifestSet& manifests, EngineOptions options) {
  std::unique_ptr<Engine> e(new Engine(manifests, options));
  Status s = e->Init();
  if (!s.ok()) return s;
  return e;
}

Status Engine::Init() {
  policy_ = m_.pool_policy.value_or(PoolPolicy{});
  if (options_.placement) policy_.placement = *options_.placement;  // --policy overrides the PoolPolicy
  if (policy_.cpu_overcommit_milli < 1000)
    return Status::Error("PoolPolicy overcommit.cpu must be at least 1.0");
  for (const auto& pc : m_.priority_classes) {
    classes_[pc.meta.name] = &pc;
    if (pc.global_default) {
      if (global_default_) return Status::Error("more than one globalDefault PriorityClass");
      global_default_ = &pc;
    }
  }
  for (const auto& q : m_.qos) qos_[q.meta.name] = &q;
  // LimitRanges per namespace, by name: the order their defaults apply in (earlier wins).
  for (const auto& lr : m_.limit_ranges) limit_ranges_[lr.meta.namespace_].push_back(&lr);
  for (auto& [ns, list] : limit_ranges_)
    std::stable_sort(list.begin(), list.end(),
                     [](const LimitRange* a, const LimitRange* b) { return a->meta.name < b->meta.name; });
  quota_.Configure(m_.resource_quotas, m_.elastic_quotas);
  // Nodes sorted by name: index order is the final placement tie-break.
  std::vector<const Node*> sorted;
  for (const auto& n : m_.nodes) sorted.push_back(&n);
  std::sort(sorted.begin(), sorted.end(),
            [](const Node* a, const Node* b) { return a->meta.name < b->meta.name; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->meta.name == sorted[i - 1]->meta.name)
      return Status::Error("duplicate node " + sorted[i]->meta.name);
  for (const Node* n : sorted) {
    const ResourceList& a = n->allocatable.empty() ? n->capacity : n->allocatable;
    if (a.Get(kGpu) % placement::kMilliPerGpu != 0 || a.Get(kGpu) / placement::kMilliPerGpu > placement::kMaxGpusPerNode)
      return Status::Error("node " + n->meta.name + ": nvidia.com/gpu must be a whole number of devices, at most " +
                           std::to_string(placement::kMaxGpusPerNode));
    // A node with a later arbiter.dev/add-time joins when the driver calls AddNode.
    if (n->sim.add_time <= 0) AddNode(*n, 0);
  }
  placement::WorkloadProfile profile;
  {
    std::map<std::string, size_t> idx;
    for (const auto& p : m_.pods) {
      PodShape s = PodShape::FromRequests(p.EffectiveRequests());
      std::string k = s.ext.ToString() + "|" + std::to_string(s.cpu_milli) + "|" + std::to_string(s.mem_bytes) +
                      "|" + std::to_string(s.gpu_count) + "|" + std::to_string(s.gpu_milli_per_device);
      auto it = idx.find(k);
      if (it == idx.end()) {
        idx[k] = profile.shapes.size();
        profile.shapes.push_back({s, 1});
      } else {
        profile.shapes[it->second].weight++;
      }
    }
  }
  placer_ = placement::MakePlacementPolicy(policy_.placement, options_.seed,
                                           profile);
  placer_->Reset(nodes_);
  return Status::Ok();
}

void Engine::AddNode(const Node& node, Millis now) {
  now_ = std::max(now_, now);
  NodeState s;
  s.name = node.meta.name;
  auto prod = node.meta.labels.find("nvidia.com/gpu.product");
  if (prod != node.meta.labels.end()) s.gpu_model = prod->second;
  // The kubelet labels every node with its hostname; selectors on it work here too.
  node_labels_.push_back(node.meta.labels);
  node_labels_.back().emplace("kubernetes.io/hostname", node.meta.name);
  s.labels = &node_labels_.back();
  s.schedulable = !node.unschedulable;
  const ResourceList& a = node.allocatable.empty() ? node.capacity : node.allocatable;
  s.cpu_capacity_milli = MulRatio(a.Get(kCpu), policy_.cpu_overcommit_milli);
  s.mem_capacity_bytes = MulRatio(a.Get(kMemory), policy_.memory_overcommit_milli);
  s.gpu_used_milli.assign(static_cast<size_t>(a.Get(kGpu) / placement::kMilliPerGpu), 0);
  s.RecountGpus();
  for (const auto& [r, v] : a.entries())
    if (r != kCpu && r != kMemory && r != kGpu) s.ext_capacity.Set(r, v);
  // Keep nodes sorted by name (insertion point), remapping indices held elsewhere.
  auto pos = std::lower_bound(nodes_.begin(), nodes_.end(), s.name,
                              [](const NodeState& n, const std::string& name) { return n.name < name; });
  size_t at = static_cast<size_t>(pos - nodes_.begin());
  nodes_.insert(pos, std::move(s));
  node_workloads_.insert(node_workloads_.begin() + static_cast<long>(at), std::vector<size_t>{});
  nominated_.insert(nominated_.begin() + static_cast<long>(at), std::vector<size_t>{});
  for (auto& w : workloads_) {
    if (w.node && *w.node >= at) ++*w.node;
    if (w.nominated_node && *w.nominated_node >= at) ++*w.nominated_node;
  }
  if (placer_) placer_->Reset(nodes_);
  node_epoch_.assign(nodes_.size(), 0);
  ++global_epoch_;
  freed_ = true;
  if (placer_) EmitNode(EventType::kNodeAdded, node.meta.name, "node " + node.meta.name + " joined the pool");
}

// A removed node takes its workloads with it, like a Kubernetes node deletion (its pods are
// deleted) or a Slurm node failure: no SIGTERM, no grace period, no final save. A running
// workload keeps only its last periodic checkpoint and meets its preemption fate (Requeue or
// Cancel, from the pod, its QoS or the PoolPolicy); the work since that checkpoint is lost and
// recorded on its run (billed as lost work caused by "node/NAME"). A victim already shutting
// down there is cut short: it exits now, and unless its shutdown would have ended now it keeps
// only its last periodic checkpoint too. Preemptors nominated to the node lose the nomination.
Status Engine::RemoveNode(const std::string& name, Millis now) {
  now_ = std::max(now_, now);
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const NodeState& n) { return n.name == name; });
  if (it == nodes_.end()) return Status::Error("no node named " + name);
  size_t at = static_cast<size_t>(it - nodes_.begin());
  EmitNode(EventType::kNodeRemoved, name,
           "node " + name + " left the pool with " + std::to_string(node_workloads_[at].size()) + " workload(s)");
  std::vector<size_t> on = node_workloads_[at];
  std::sort(on.begin(), on.end());  // submission order: deterministic
  for (size_t id : on) {
    Workload& w = workloads_[id];
    const bool running = w.phase == Phase::kRunning;
    // Progress as of the moment the workload was stopped (now, or its SIGTERM if shutting down).
    const Millis stop = running ? now_ : w.stop_time;
    Millis done = w.progress + (stop - w.run_start);
    if (w.duration) done = std::min(done, *w.duration);
    Millis periodic = w.checkpoint_interval ? done / *w.checkpoint_interval * *w.checkpoint_interval : 0;
    if (w.checkpoint_interval) periodic = std::max(periodic, std::min(w.progress, done));
    Millis lost_before = running ? 0 : w.lost_work;
    Millis saved = running ? periodic : (w.exit_time <= now_ ? w.progress_after_exit : periodic);
    if (running) {
      w.preempted_by = "node/" + name;
      w.preemptor_id.reset();
      w.stop_time = now_;
      ++generation_[w.id];  // cancel its completion timer
    }
    w.progress_after_exit = saved;
    w.lost_work = done - saved;
    const Millis extra = w.lost_work - lost_before;
    if (running) w.lost_gpu_milli_ms_node_removed += static_cast<int64_t>(extra) * w.shape.gpu_milli_total();
    else w.lost_gpu_milli_ms += static_cast<int64_t>(extra) * w.shape.gpu_milli_total();
    w.exit_time = now_;
    Emit(EventType::kTerminated, w, name, "NodeRemoved",
         std::string(running ? "node " + name + " was removed; killed without a grace period"
                             : "node " + name + " was removed while it was shutting down") +
             "; progress kept " + FormatDuration(saved) + ", lost " + FormatDuration(w.lost_work));
    Exit(w, /*emit_terminated=*/false);
  }
  for (size_t id : nominated_[at]) workloads_[id].nominated_node.reset();
  nodes_.erase(it);
  node_workloads_.erase(node_workloads_.begin() + static_cast<long>(at));
  nominated_.erase(nominated_.begin() + static_cast<long>(at));
  for (auto& w : workloads_) {
    if (w.node && *w.node > at) --*w.node;
    if (w.nominated_node && *w.nominated_node > at) --*w.nominated_node;
  }
  placer_->Reset(nodes_);
  node_epoch_.assign(nodes_.size(), 0);
  ++global_epoch_;
  freed_ = true;
  return Status::Ok();
}

// ------------------------------------------------------------------ events

void Engine::Emit(EventType type, const Workload& w, std::string node, const char* reason,
                  std::string message, std::string by) {
  events_.push_back(Event{now_, type, w.id, std::move(node), std::move(by), reason, std::move(message)});
}

void Engine::EmitNode(EventType type, const std::string& node, std::string message) {
  events_.push_back(Event{now_, type, kNoWorkload, node, "", type == EventType::kNodeAdded ? "NodeAdded" : "NodeRemoved",
                          std::move(message)});
}

void Engine::Reject(Workload& w, const char* reason, const std::string& message) {
  quota_.Unreserve(w);
  DropNomination(w);
  w.phase = Phase::kRejected;
  w.message = message;
  w.finish_time = now_;
  PendingErase(w.id);
  Emit(EventType::kRejected, w, "", reason, message);
}

namespace {
// A pending workload's reason without its numbers: a new FailedScheduling / QuotaExceeded event
// is worth emitting when the kind of reason changes, not each time a count in it does.
std::string StableReason(const std::string& m) {
  std::string k;
  k.reserve(m.size());
  for (char c : m)
    if (c < '0' || c > '9') k += c;
  return k;
}
}  // namespace

void Engine::SetPending(Workload& w, EventType type, const char* reason, const std::string& message,
                        const std::string& dedupe) {
  if (w.last_event_type == static_cast<int>(type) && w.message == message) return;  // fast path
  w.message = message;
  w.last_event_type = static_cast<int>(type);
  // One event per kind of reason per pending spell (the message always has the current text):
  // reasons that alternate (quota, then nodes, then quota again) do not repeat their events, as
  // Kubernetes aggregates repeated events of an object. The last few kinds are remembered.
  std::string key = std::string(ToString(type)) + "|" + StableReason(dedupe.empty() ? message : dedupe);
  auto& seen = w.reason_keys;
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
  constexpr size_t kRemembered = 4;
  if (seen.size() == kRemembered) seen.erase(seen.begin());
  seen.push_back(std::move(key));
  Emit(type, w, "", reason, message);
}

// ------------------------------------------------------------------ admission

void Engine::Reserve(size_t workloads) {
  workloads_.reserve(workloads);
  generation_.reserve(workloads);
  pdbs_of_.reserve(workloads);
}

size_t Engine::Submit(const Pod& pod, Millis now) {
  now_ = std::max(now_, now);
  Workload w;
  w.id = workloads_.size();
  w.namespace_ = pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_;
  w.name = pod.meta.name;
  w.key = w.namespace_ + "/" + w.name;
  w.pod = &pod;
  w.submit_time = now_;
  w.pending_since = now_;
  w.grace = pod.termination_grace_period.value_or(kDefaultGrace);
  w.shutdown = pod.sim.shutdown_time;
  w.checkpoint_interval = pod.sim.checkpoint_interval;
  w.duration = pod.sim.duration;
  workloads_.push_back(std::move(w));
  generation_.push_back(0);
  Workload& x = workloads_.back();
  pdbs_of_.emplace_back();
  for (size_t k = 0; k < m_.pdbs.size(); ++k) {
    const auto& pdb = m_.pdbs[k];
    const std::string ns = pdb.meta.namespace_.empty() ? "default" : pdb.meta.namespace_;
    if (ns == x.namespace_ && pdb.selector.Matches(pod.meta.labels)) pdbs_of_.back().push_back(k);
  }
  if (!pdbs_of_.back().empty()) pdb_members_.push_back(x.id);
  Emit(EventType::kSubmitted, x, "", "", "");

  // 1. Priority (PriorityClass, or QoS under Slurm semantics).
  if (pod.priority_class_name) {
    auto it = classes_.find(*pod.priority_class_name);
    if (it == classes_.end()) {
      Reject(x, "UnknownPriorityClass", "no PriorityClass with name " + *pod.priority_class_name + " was found");
      return x.id;
    }
    x.priority_class = it->first;
    x.priority = it->second->value;
    x.preemption_policy = it->second->preemption_policy;
  } else if (global_default_) {
    x.priority_class = global_default_->meta.name;
    x.priority = global_default_->value;
    x.preemption_policy = global_default_->preemption_policy;
  } else {
    x.priority = pod.priority.value_or(0);
    x.preemption_policy = pod.preemption_policy.value_or(PreemptionPolicy::kPreemptLowerPriority);
  }
  if (pod.sim.qos) {
    auto it = qos_.find(*pod.sim.qos);
    if (it == qos_.end()) {
      Reject(x, "UnknownQoS", "no QoS with name " + *pod.sim.qos + " was found");
      return x.id;
    }
    x.qos = it->second;
    if (policy_.preemption_type == PreemptionType::kQoS) x.priority = x.qos->priority;
  }
  x.preempt_mode = pod.sim.preempt_mode ? *pod.sim.preempt_mode
                   : (x.qos && x.qos->preempt_mode) ? *x.qos->preempt_mode
                                                    : policy_.preempt_mode;
  // 2. LimitRange (defaults from every LimitRange of the namespace, then their checks).
  AdmittedPod admitted;
  {
    static const std::vector<const LimitRange*> kNone;
    auto lrs = limit_ranges_.find(x.namespace_);
    std::string lr = ApplyLimitRanges(pod, lrs == limit_ranges_.end() ? kNone : lrs->second, &admitted);
    if (!lr.empty()) {
      Reject(x, "LimitRange", lr);
      return x.id;
    }
  }
  x.requests = admitted.requests;
  x.limits = admitted.limits;
  x.usage = pod.sim.usage.value_or(x.requests);
  x.shape = PodShape::FromRequests(x.requests);
  x.elastic = quota_.HasElastic(x.namespace_);
  x.has_quota = quota_.HasAnyQuota(x.namespace_);
  {
    std::string k = ShapeKey(x);
    x.shape_class = class_ids_.emplace(k, static_cast<uint32_t>(class_ids_.size())).first->second;
    k += "|" + x.namespace_ + "|" + (x.qos ? x.qos->meta.name : "") + "|" + ToString(x.preemption_policy);
    x.preempt_class = class_ids_.emplace(k, static_cast<uint32_t>(class_ids_.size())).first->second;
  }
  x.namespace_id = namespace_ids_.emplace(x.namespace_, namespace_ids_.size()).first->second;
  // 3. Quota that can never be satisfied.
  if (auto never = quota_.NeverAdmissible(x, admitted)) {
    Reject(x, "QuotaExceeded", *never);
    return x.id;
  }
  PendingInsert(x.id);
  fresh_.push_back(x.id);
  return x.id;
}

// ------------------------------------------------------------------ timers

void Engine::AddTimer(Millis at, Workload& w) {
  timers_.push(Timer{at, timer_seq_++, w.id, generation_[w.id]});
}

std::optional<Millis> Engine::NextTimer() const {
  // Timers of workloads that moved on (a victim's old completion) are dropped here, so that they
  // never advance the clock.
  while (!timers_.empty() && timers_.top().generation != generation_[timers_.top().workload]) timers_.pop();
  std::optional<Millis> t;
  if (!timers_.empty()) t = timers_.top().time;
  if (!wakeups_.empty()) t = t ? std::min(*t, wakeups_.top()) : wakeups_.top();
  return t;
}

void Engine::AdvanceTo(Millis now) {
  while (!wakeups_.empty() && wakeups_.top() <= now) {
    wakeups_.pop();
    freed_ = true;  // re-run the whole queue: a victim became old enough
  }
  while (!timers_.empty() && timers_.top().time <= now) {
    Timer t = timers_.top();
    timers_.pop();
    if (t.generation != generation_[t.workload]) continue;  // stale
    now_ = std::max(now_, t.time);
    OnTimer(t);
  }
  now_ = std::max(now_, now);
}

void Engine::OnTimer(const Timer& t) {
  Workload& w = workloads_[t.workload];
  if (w.phase == Phase::kRunning) {  // completion
    std::string node = nodes_[*w.node].name;
    w.progress = *w.duration;
    Release(w);
    w.phase = Phase::kSucceeded;
    w.finish_time = now_;
    Emit(EventType::kCompleted, w, node, "", "");
    return;
  }
  if (w.phase == Phase::kTerminating) Exit(w);
}

RunRecord Engine::MakeRun(const Workload& w, size_t node) const {
  RunRecord r;
  r.workload = w.id;
  r.node = nodes_[node].name;
  r.gpu_product = nodes_[node].gpu_model;
  if (nodes_[node].labels) r.gpu_replicas = GpuReplicasOf(*nodes_[node].labels);
  r.start = w.run_start;
  r.end = now_;
  return r;
}

void Engine::Release(Workload& w) {
  ARB_CHECK(w.node.has_value());
  size_t n = *w.node;
  nodes_[n].Release(w.shape, w.gpus);
  Touch(n);
  placer_->OnNodeChanged(nodes_[n], n);
  auto& list = node_workloads_[n];
  list.erase(std::find(list.begin(), list.end(), w.id));
  if (w.quota_charged) quota_.Release(w);
  w.quota_charged = false;
  if (auto b = borrowed_by_ns_.find(w.namespace_id); b != borrowed_by_ns_.end() && !b->second.empty()) {
    // When the namespace is back within its min, none of its workloads runs on borrowed quota
    // any more: they become protected from other namespaces' preemption.
    auto& list = b->second;
    list.erase(std::remove(list.begin(), list.end(), w.id), list.end());
    if (!quota_.IsBorrowing(w.namespace_)) {
      for (size_t id : list) workloads_[id].borrowed = false;
      list.clear();
      ++global_epoch_;
    }
  }
  runs_.push_back(MakeRun(w, n));  // close the run record
  w.node.reset();
  w.gpus = GpuAssignment{};
  w.borrowed = false;
  ++generation_[w.id];
  freed_ = true;
}

// A terminating victim (or a workload on a removed node) exits: release, then requeue or cancel.
void Engine::Exit(Workload& w, bool emit_terminated) {
  std::string node = w.node ? nodes_[*w.node].name : "";
  size_t run_index = runs_.size();
  Release(w);
  if (!w.preempted_by.empty() && w.lost_work > 0 && run_index < runs_.size()) {
    // The lost interval is expressed on the run's wall clock: it ends at the stop.
    RunRecord& r = runs_[run_index];
    r.lost_to = w.stop_time;
    r.lost_from = std::max(r.start, w.stop_time - w.lost_work);
    r.preemptor = w.preempted_by;
  }
  if (w.phase == Phase::kTerminating && emit_terminated)
    Emit(EventType::kTerminated, w, node, "", "exited after SIGTERM");
  w.progress = w.progress_after_exit;
  // A workload lost with its node (preempted_by "node/NAME") meets the same fate as a victim.
  const bool node_lost = w.preempted_by.rfind("node/", 0) == 0;
  const std::string cause = node_lost ? "node " + w.preempted_by.substr(5) + " was removed"
                                      : "preemption by " + w.preempted_by;
  const char* reason = node_lost ? "NodeRemoved" : "Preempted";
  if (w.preempt_mode == PreemptMode::kCancel) {
    w.phase = Phase::kPreempted;
    w.finish_time = now_;
    w.message = node_lost ? "cancelled: " + cause : "cancelled after " + cause;
    Emit(EventType::kCancelled, w, node, reason, w.message);
  } else {
    w.phase = Phase::kPending;
    w.pending_since = now_;
    w.reason_keys = {};
    w.last_event_type = -1;
    w.message = node_lost ? "requeued: " + cause : "requeued after " + cause;
    Emit(EventType::kRequeued, w, node, reason, w.message);
    PendingInsert(w.id);
    fresh_.push_back(w.id);
  }
  // The preemptor waiting for this victim.
  if (w.preemptor_id) {
    auto& wf = workloads_[*w.preemptor_id].waiting_for;
    wf.erase(std::remove(wf.begin(), wf.end(), w.id), wf.end());
    w.preemptor_id.reset();
  }
}

// ------------------------------------------------------------------ placement

bool Engine::NodeSelectable(const NodeState& n, const Workload& w) const {
  if (!n.schedulable) return false;
  for (const auto& [k, v] : w.pod->node_selector) {
    auto it = n.labels->find(k);
    if (it == n.labels->end() || it->second != v) return false;
  }
  return true;
}

bool Engine::FitsRespectingNominated(size_t node, const Workload& w) const {
  const NodeState& n = nodes_[node];
  if (!n.Fits(w.shape)) return false;
  if (nominated_[node].empty()) return true;
  bool others = false;
  for (size_t id : nominated_[node])
    if (id != w.id && workloads_[id].priority >= w.priority) others = true;
  if (!others) return true;
  NodeState copy = n;
  for (size_t id : nominated_[node]) {
    const Workload& p = workloads_[id];
    if (id == w.id || p.priority < w.priority) continue;
    if (!copy.Fits(p.shape)) return false;  // resources it waits for are taken already
    copy.Allocate(p.shape, copy.DefaultGpuChoice(p.shape));
  }
  return copy.Fits(w.shape);
}

std::string Engine::NoFitMessage(const Workload& w) const {
  // Counted with plain integers (this runs for every failed shape in every cycle, over every
  // node); extended resources, rare, by name.
  size_t unschedulable = 0, selector = 0, held = 0, cpu = 0, memory = 0, gpu = 0;
  std::map<std::string, int> ext;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& n = nodes_[i];
    if (!n.schedulable) {
      ++unschedulable;
      continue;
    }
    if (!NodeSelectable(n, w)) {
      ++selector;
      continue;
    }
    const unsigned m = n.ShortOf(w.shape);
    if (m == 0 && !FitsRespectingNominated(i, w)) ++held;
    cpu += (m & NodeState::kShortCpu) != 0;
    memory += (m & NodeState::kShortMemory) != 0;
    gpu += (m & NodeState::kShortGpu) != 0;
    if (m & NodeState::kShortExtended)
      for (const auto& r : n.Insufficient(w.shape))
        if (r != arbiter::kCpu && r != arbiter::kMemory && r != arbiter::kGpu) ++ext[r];
  }
  // Reasons in text order, as Kubernetes prints them.
  std::vector<std::pair<std::string, size_t>> reasons;
  auto add = [&](std::string r, size_t c) {
    if (c) reasons.emplace_back(std::move(r), c);
  };
  add("node(s) were unschedulable", unschedulable);
  add("node(s) didn't match node selector", selector);
  add("node(s) hold resources for a nominated higher-priority workload", held);
  add("Insufficient " + std::string(arbiter::kCpu), cpu);
  add("Insufficient " + std::string(arbiter::kMemory), memory);
  add("Insufficient " + std::string(arbiter::kGpu), gpu);
  for (const auto& [r, c] : ext) add("Insufficient " + r, static_cast<size_t>(c));
  std::sort(reasons.begin(), reasons.end());
  std::string msg = "0/" + std::to_string(nodes_.size()) + " nodes are available";
  bool first = true;
  for (const auto& [r, c] : reasons) {
    msg += first ? ": " : ", ";
    first = false;
    msg += std::to_string(c) + " " + r;
  }
  return msg + ".";
}

// kube-scheduler's numFeasibleNodesToFind: small pools are scored in full; large ones stop after
// an adaptive share of the nodes (50% minus 1% per 125 nodes, at least 5%), never below 100.
size_t Engine::NumFeasibleNodesToFind() const {
  const size_t n = nodes_.size();
  if (n < 100 || policy_.percentage_of_nodes_to_score >= 100) return n;
  int64_t pct = policy_.percentage_of_nodes_to_score;
  if (pct <= 0) pct = std::max<int64_t>(5, 50 - static_cast<int64_t>(n) / 125);
  size_t k = n * static_cast<size_t>(pct) / 100;
  return std::max<size_t>(k, 100);
}

bool Engine::TryPlace(Workload& w) {
  if (w.nominated_node) {
    size_t n = *w.nominated_node;
    if (NodeSelectable(nodes_[n], w) && FitsRespectingNominated(n, w)) {
      Bind(w, n, placer_->Score(nodes_[n], w.shape).gpus);
      return true;
    }
  }
  const size_t n = nodes_.size();
  if (n == 0) return false;
  const size_t want = NumFeasibleNodesToFind();
  std::vector<size_t> feasible;
  feasible.reserve(std::min<size_t>(want, 256));
  size_t start = next_start_node_ % n, processed = 0;
  const bool selector = !w.pod->node_selector.empty();
  for (; processed < n && feasible.size() < want; ++processed) {
    size_t i = start + processed;
    if (i >= n) i -= n;
    const NodeState& node = nodes_[i];
    if (!node.schedulable || !node.Fits(w.shape)) continue;  // cheap checks first
    if ((!selector || NodeSelectable(node, w)) && FitsRespectingNominated(i, w)) feasible.push_back(i);
  }
  next_start_node_ = (start + processed) % n;
  auto choice = placement::ChooseNode(*placer_, nodes_, feasible, w.shape);
  if (!choice) return false;
  Bind(w, choice->node_index, choice->candidate.gpus);
  return true;
}

void Engine::Bind(Workload& w, size_t node, const GpuAssignment& gpus) {
  if (w.nominated_node) {
    auto& nom = nominated_[*w.nominated_node];
    nom.erase(std::remove(nom.begin(), nom.end(), w.id), nom.end());
    Touch(*w.nominated_node);
    w.nominated_node.reset();
  }
  quota_.Unreserve(w);
  auto eq = quota_.CheckElastic(w);
  w.borrowed = eq.borrowing;
  if (w.borrowed) borrowed_by_ns_[w.namespace_id].push_back(w.id);
  quota_.Charge(w);
  w.quota_charged = true;
  nodes_[node].Allocate(w.shape, gpus);
  Touch(node);
  placer_->OnNodeChanged(nodes_[node], node);
  node_workloads_[node].push_back(w.id);
  w.node = node;
  w.last_node = nodes_[node].name;
  w.gpus = gpus;
  w.phase = Phase::kRunning;
  w.run_start = now_;
  if (w.first_start < 0) w.first_start = now_;
  w.pending_total += now_ - w.pending_since;
  w.message.clear();
  w.reason_keys = {};
  w.last_event_type = -1;
  w.preempted_by.clear();
  w.lost_work = 0;
  PendingErase(w.id);
  ++generation_[w.id];
  if (w.borrowed)
    Emit(EventType::kBorrowed, w, nodes_[node].name, "Borrowed",
         "admitted on quota borrowed from cohort " + *quota_.CohortOf(w.namespace_));
  Emit(EventType::kScheduled, w, nodes_[node].name, "", "");  // Event::Message(): "bound to <node>"
  if (w.duration) AddTimer(now_ + std::max<Millis>(0, *w.duration - w.progress), w);
}

// ------------------------------------------------------------------ preemption

// Rule: a victim must have strictly lower priority (Priority) or a QoS in the preemptor's preempt
// list (QoS); must have run at least minRuntime; and when it belongs to another namespace that has
// an ElasticQuota it must run on borrowed quota (guaranteed quota is protected).
bool Engine::MayPreempt(const Workload& p, const Workload& v, bool ignore_min_runtime) const {
  if (v.phase != Phase::kRunning) return false;
  if (policy_.preemption_type == PreemptionType::kQoS) {
    if (!p.qos || !v.qos) return false;
    if (std::find(p.qos->preempt.begin(), p.qos->preempt.end(), v.qos->meta.name) == p.qos->preempt.end())
      return false;
  } else if (v.priority >= p.priority) {
    return false;
  }
  if (!ignore_min_runtime && now_ - v.run_start < policy_.min_runtime) return false;
  if (v.elastic && !v.borrowed && v.namespace_id != p.namespace_id) return false;
  return true;
}

void Engine::ComputePdbState(std::vector<PdbState>* out) const {
  out->assign(m_.pdbs.size(), PdbState{});
  if (m_.pdbs.empty()) return;
  std::vector<int64_t> expected(m_.pdbs.size(), 0), healthy(m_.pdbs.size(), 0);
  for (size_t id : pdb_members_) {  // the workloads some PDB selects, not every workload
    const Workload& w = workloads_[id];
    if (w.phase == Phase::kRejected || w.phase == Phase::kSucceeded || w.phase == Phase::kPreempted) continue;
    for (size_t k : pdbs_of_[w.id]) {
      ++expected[k];
      if (w.phase == Phase::kRunning) ++healthy[k];
    }
  }
  for (size_t k = 0; k < m_.pdbs.size(); ++k) {
    const auto& pdb = m_.pdbs[k];
    int64_t desired = 0;
    if (pdb.min_available) desired = pdb.min_available->Resolve(expected[k]);
    else if (pdb.max_unavailable) desired = expected[k] - pdb.max_unavailable->Resolve(expected[k]);
    (*out)[k].allowed = std::max<int64_t>(0, healthy[k] - desired);
  }
}

int Engine::CountViolations(const std::vector<size_t>& victims, const std::vector<PdbState>& state,
                            std::vector<std::string>* names) const {
  if (m_.pdbs.empty()) return 0;
  std::map<size_t, int64_t> hits;
  for (size_t id : victims)
    for (size_t k : pdbs_of_[id]) hits[k]++;
  int violations = 0;
  for (const auto& [k, hit] : hits) {
    if (hit > state[k].allowed) {
      violations += static_cast<int>(hit - state[k].allowed);
      if (names) {
        const auto& pdb = m_.pdbs[k];
        names->push_back((pdb.meta.namespace_.empty() ? "default" : pdb.meta.namespace_) + "/" + pdb.meta.name);
      }
    }
  }
  return violations;
}

// kube-scheduler's DefaultPreemption dry-runs candidates until it has max(10% of the nodes, 100).
size_t Engine::NumPreemptionCandidates() const {
  return std::max<size_t>(100, nodes_.size() / 10);
}

namespace {
// A compact, allocation-free view of a node's free resources for preemption dry runs.
struct FitState {
  int64_t cpu_free = 0, mem_free = 0;
  int32_t gpu_free[placement::kMaxGpusPerNode];
  int devices = 0;
  // Only the extended resources the preemptor asks for matter.
  std::vector<std::pair<std::string_view, int64_t>> ext_free;

  void Init(const NodeState& n, const PodShape& p) {
    cpu_free = n.cpu_free();
    mem_free = n.mem_free();
    devices = n.gpu_devices();
    for (int d = 0; d < devices; ++d) gpu_free[d] = placement::kMilliPerGpu - n.gpu_used_milli[d];
    ext_free.clear();
    for (const auto& [r, v] : p.ext.entries()) {
      if (r == kPods && !n.ext_capacity.Has(kPods)) continue;
      ext_free.emplace_back(r, n.ext_capacity.Get(r) - n.ext_used.Get(r));
    }
  }
  // sign +1 releases `s` (on devices `g`), -1 takes it.
  void Apply(const PodShape& s, const GpuAssignment& g, int sign) {
    cpu_free += sign * s.cpu_milli;
    mem_free += sign * s.mem_bytes;
    for (int16_t d : g.devices) gpu_free[d] += sign * s.gpu_milli_per_device;
    for (auto& [r, v] : ext_free) v += sign * s.ext.Get(r);
  }
  bool Valid() const {
    if (cpu_free < 0 || mem_free < 0) return false;
    for (int d = 0; d < devices; ++d)
      if (gpu_free[d] < 0) return false;
    for (const auto& e : ext_free)
      if (e.second < 0) return false;
    return true;
  }
  bool Fits(const PodShape& p) const {
    if (p.cpu_milli > cpu_free || p.mem_bytes > mem_free) return false;
    for (const auto& [r, v] : ext_free)
      if (p.ext.Get(r) > v) return false;
    if (p.gpu_count == 0) return true;
    if (p.gpu_milli_per_device >= placement::kMilliPerGpu) {
      int whole = 0;
      for (int d = 0; d < devices; ++d) whole += gpu_free[d] == placement::kMilliPerGpu;
      return whole >= p.gpu_count;
    }
    for (int d = 0; d < devices; ++d)
      if (gpu_free[d] >= p.gpu_milli_per_device) return true;
    return false;
  }
  // Holds room for another pod (a nominated preemptor): same device rule as NodeState.
  void Hold(const PodShape& p) {
    cpu_free -= p.cpu_milli;
    mem_free -= p.mem_bytes;
    for (auto& [r, v] : ext_free) v -= p.ext.Get(r);
    int need = p.gpu_count;
    if (need == 0) return;
    if (p.gpu_milli_per_device >= placement::kMilliPerGpu) {
      for (int d = 0; d < devices && need > 0; ++d)
        if (gpu_free[d] == placement::kMilliPerGpu) gpu_free[d] = 0, --need;
      return;
    }
    int best = -1;
    for (int d = 0; d < devices; ++d)
      if (gpu_free[d] >= p.gpu_milli_per_device && (best < 0 || gpu_free[d] < gpu_free[best])) best = d;
    if (best >= 0) gpu_free[best] -= p.gpu_milli_per_device;
  }
};

struct Plan {
  size_t node = 0;
  std::vector<size_t> victims;
  int pdb_violations = 0;
  std::vector<std::string> pdbs;
  int32_t max_priority = 0;
  int64_t sum_priority = 0;
  Millis earliest_start_of_max = 0;
};
}  // namespace

bool Engine::TryPreempt(Workload& w, std::string* why) {
  if (w.preemption_policy == PreemptionPolicy::kNever) {
    *why = " Preemption is not allowed: its PriorityClass has preemptionPolicy: Never.";
    return false;
  }
  const bool qos_mode = policy_.preemption_type == PreemptionType::kQoS;
  std::optional<Plan> best;
  std::set<std::string> blocking_pdbs;
  bool any_candidate_node = false;
  std::optional<Millis> too_young_until;  // earliest instant a young workload becomes a candidate
  std::vector<PdbState> pdb_state;
  ComputePdbState(&pdb_state);
  const size_t n = nodes_.size();
  const size_t want = NumPreemptionCandidates();
  size_t viable = 0, processed = 0;
  const size_t start = n ? next_preempt_node_ % n : 0;
  const bool memo_on = m_.pdbs.empty() && policy_.min_runtime == 0 && !w.nominated_node;
  Memo* memo = nullptr;
  if (memo_on) {
    memo = &preempt_memo_[w.preempt_class];
    if (memo->global != global_epoch_ || memo->node.size() != n) {
      memo->global = global_epoch_;
      memo->node.assign(n, 0);
    }
  }
  FitState sim;
  std::vector<size_t> cands, idx;
  std::vector<char> violating;
  std::vector<int64_t> allowed;
  Plan scratch;
  for (; processed < n && viable < want; ++processed) {
    size_t i = start + processed;
    if (i >= n) i -= n;
    if (memo && memo->node[i] == node_epoch_[i] + 1) continue;  // nothing changed here since: no plan
    if (memo) memo->node[i] = node_epoch_[i] + 1;  // cleared below if this node yields a plan
    if (!NodeSelectable(nodes_[i], w)) continue;
    if (!w.shape.gpu_model.empty() && w.shape.gpu_count > 0 && w.shape.gpu_model != nodes_[i].gpu_model) continue;
    cands.clear();
    for (size_t id : node_workloads_[i]) {
      if (MayPreempt(w, workloads_[id])) {
        cands.push_back(id);
      } else if (policy_.min_runtime > 0 && MayPreempt(w, workloads_[id], /*ignore_min_runtime=*/true)) {
        Millis at = workloads_[id].run_start + policy_.min_runtime;
        too_young_until = too_young_until ? std::min(*too_young_until, at) : at;
      }
    }
    if (cands.empty()) continue;
    sim.Init(nodes_[i], w.shape);
    for (size_t id : cands) sim.Apply(workloads_[id].shape, workloads_[id].gpus, +1);
    // Resources held for other nominated workloads of higher or equal priority stay held.
    for (size_t id : nominated_[i]) {
      const Workload& p = workloads_[id];
      if (id == w.id || p.priority < w.priority) continue;
      if (sim.Fits(p.shape)) sim.Hold(p.shape);
    }
    if (!sim.Fits(w.shape)) continue;
    any_candidate_node = true;
    // Reprieve order: Kubernetes adds back PDB-violating victims first, then the others, each by
    // priority (high first) then start (earliest first); Slurm removes the lowest QoS priority and
    // youngest first, so it keeps the highest and oldest first. Each is kept if the preemptor
    // still fits without it.
    idx.resize(cands.size());
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
    // Importance order: priority (high first), then start (earliest first), then submission.
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const Workload &x = workloads_[cands[a]], &y = workloads_[cands[b]];
      if (x.priority != y.priority) return x.priority > y.priority;
      if (x.run_start != y.run_start) return x.run_start < y.run_start;
      return x.id < y.id;  // submission order: unique and deterministic
    });
    if (!qos_mode && !m_.pdbs.empty()) {
      // Kubernetes' filterPodsWithPDBViolation: walking in importance order, each pod covered by
      // a PDB uses one of its allowed disruptions; the pods past the allowance are "violating"
      // and are reprieved first (a stable partition keeps the importance order within groups).
      allowed.assign(pdb_state.size(), 0);
      for (size_t k = 0; k < pdb_state.size(); ++k) allowed[k] = pdb_state[k].allowed;
      violating.assign(cands.size(), 0);
      for (size_t k : idx)
        for (size_t pdb : pdbs_of_[cands[k]])
          if (--allowed[pdb] < 0) violating[k] = 1;
      std::stable_partition(idx.begin(), idx.end(), [&](size_t k) { return violating[k] != 0; });
    }
    Plan& plan = scratch;
    plan.node = i;
    plan.victims.clear();
    plan.pdbs.clear();
    for (size_t k : idx) {
      const Workload& v = workloads_[cands[k]];
      sim.Apply(v.shape, v.gpus, -1);
      if (sim.Valid() && sim.Fits(w.shape)) continue;  // reprieved
      sim.Apply(v.shape, v.gpus, +1);
      plan.victims.push_back(v.id);
    }
    std::sort(plan.victims.begin(), plan.victims.end());
    plan.pdb_violations = CountViolations(plan.victims, pdb_state, &plan.pdbs);
    if (plan.pdb_violations > 0 && policy_.disruption_budgets == DisruptionBudgetMode::kStrict) {
      for (const auto& nm : plan.pdbs) blocking_pdbs.insert(nm);
      continue;
    }
    ++viable;  // only plans that may be chosen count towards the candidate budget
    if (memo) memo->node[i] = 0;
    plan.max_priority = INT32_MIN;
    plan.sum_priority = 0;
    plan.earliest_start_of_max = 0;
    for (size_t id : plan.victims) {
      const Workload& v = workloads_[id];
      // Kubernetes adds 2^31 per victim so that negative priorities do not favour more victims.
      plan.sum_priority += int64_t{v.priority} + (int64_t{1} << 31);
      if (v.priority > plan.max_priority) {
        plan.max_priority = v.priority;
        plan.earliest_start_of_max = v.run_start;
      } else if (v.priority == plan.max_priority) {
        plan.earliest_start_of_max = std::min(plan.earliest_start_of_max, v.run_start);
      }
    }
    auto better = [](const Plan& a, const Plan& b) {
      if (a.pdb_violations != b.pdb_violations) return a.pdb_violations < b.pdb_violations;
      if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
      if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
      if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
      // The node whose highest-priority victims started most recently (earliest start, latest).
      if (a.earliest_start_of_max != b.earliest_start_of_max) return a.earliest_start_of_max > b.earliest_start_of_max;
      return a.node < b.node;
    };
    if (!best || better(plan, *best)) {
      if (!best) best.emplace();
      std::swap(*best, plan);
    }
  }
  if (n) next_preempt_node_ = (start + processed) % n;
  if (!best) {
    if (too_young_until) {
      wakeups_.push(*too_young_until);
      *why = " Some workloads are younger than the minimum run time (" + FormatDuration(policy_.min_runtime) +
             ") and cannot be preempted before " + FormatDuration(*too_young_until) + ".";
    }
    if (!blocking_pdbs.empty()) {
      std::string list;
      for (const auto& nm : blocking_pdbs) list += (list.empty() ? "" : ", ") + std::string("PodDisruptionBudget ") + nm;
      *why = " Preemption would violate " + list + " (disruptionBudgets: Strict).";
    } else if (!any_candidate_node && !too_young_until) {
      *why = qos_mode ? " No preemption victims found: no node frees enough by preempting workloads whose QoS is in this workload's preempt list."
                      : " No preemption victims found: no node frees enough by preempting lower-priority workloads.";
    }
    return false;
  }
  // Execute: victims get SIGTERM now; the preemptor is nominated to the node.
  std::string list;
  for (size_t id : best->victims) list += (list.empty() ? "" : ", ") + workloads_[id].key;
  Emit(EventType::kPreempting, w, nodes_[best->node].name, "Preempting",
       "preempting " + list + " on " + nodes_[best->node].name +
           (best->pdb_violations ? " (violates " + std::to_string(best->pdb_violations) + " disruption budget(s))" : ""));
  for (size_t id : best->victims) StopVictim(workloads_[id], w, EventType::kPreempted);
  if (w.nominated_node) {
    auto& nom = nominated_[*w.nominated_node];
    nom.erase(std::remove(nom.begin(), nom.end(), w.id), nom.end());
    Touch(*w.nominated_node);
  }
  w.nominated_node = best->node;
  nominated_[best->node].push_back(w.id);
  Touch(best->node);
  w.waiting_for = best->victims;
  // Hold the preemptor's ElasticQuota share while its victims exit, so that nobody borrows it
  // meanwhile and the preemption is not wasted (or repeated).
  quota_.Reserve(w);
  SetPending(w, EventType::kFailedScheduling, "WaitingForVictims",
             "nominated to " + nodes_[best->node].name + ", waiting for " + std::to_string(best->victims.size()) +
                 " victim(s) to exit");
  return true;
}

void Engine::StopVictim(Workload& v, const Workload& p, EventType kind) {
  Millis grace = v.grace;
  if (policy_.preemption_type == PreemptionType::kQoS && v.qos && v.qos->grace_time) grace = *v.qos->grace_time;
  Millis done = v.progress + (now_ - v.run_start);
  if (v.duration) done = std::min(done, *v.duration);
  Millis saved;
  Millis exit_after;
  if (v.shutdown <= grace) {
    exit_after = v.shutdown;
    saved = v.checkpoint_interval ? done : 0;
  } else {
    exit_after = grace;
    saved = v.checkpoint_interval ? done / *v.checkpoint_interval * *v.checkpoint_interval : 0;
  }
  saved = std::max(saved, std::min(v.progress, done));  // never below what was already saved
  if (!v.checkpoint_interval) saved = 0;
  v.phase = Phase::kTerminating;
  if (v.node) Touch(*v.node);
  v.preempted_by = p.key;
  v.preemptor_id = p.id;
  v.stop_time = now_;
  v.exit_time = now_ + exit_after;
  v.progress_after_exit = saved;
  v.lost_work = done - saved;
  v.lost_gpu_milli_ms += static_cast<int64_t>(v.lost_work) * v.shape.gpu_milli_total();
  v.preemptions++;
  ++generation_[v.id];  // cancel its completion timer
  std::string msg = kind == EventType::kReclaimed
                        ? "reclaimed by " + p.key + " (quota lent by " + p.namespace_ + " is needed back)"
                        : "preempted by " + p.key;
  msg += "; SIGTERM, grace " + FormatDuration(grace) + ", shutdown " + FormatDuration(v.shutdown) +
         (v.shutdown > grace ? " (killed at the end of the grace period)" : "") + ", exits at " +
         FormatDuration(v.exit_time) + "; progress kept " + FormatDuration(saved) + ", lost " +
         FormatDuration(v.lost_work);
  v.message = msg;
  Emit(kind, v, nodes_[*v.node].name, kind == EventType::kReclaimed ? "Reclaimed" : "Preempted", msg, p.key);
  AddTimer(v.exit_time, v);
}

bool Engine::FitsOnceGone(size_t i, const Workload& w, const std::vector<size_t>& gone) const {
  const NodeState& n = nodes_[i];
  if (!NodeSelectable(n, w)) return false;
  NodeState after = n;
  for (size_t id : node_workloads_[i]) {
    const Workload& v = workloads_[id];
    if (v.phase == Phase::kTerminating || std::find(gone.begin(), gone.end(), id) != gone.end())
      after.Release(v.shape, v.gpus);
  }
  // Room held for nominated workloads of equal or higher priority stays held.
  for (size_t id : nominated_[i]) {
    const Workload& p = workloads_[id];
    if (id == w.id || p.priority < w.priority) continue;
    if (!after.Fits(p.shape)) return false;
    after.Allocate(p.shape, after.DefaultGpuChoice(p.shape));
  }
  return after.Fits(w.shape);
}

// ElasticQuota reclaim. Candidates: running borrowers of other namespaces in the cohort (only
// lower-priority ones under reclaim: LowerPriority; none younger than minRuntime; under Strict
// budgets none whose eviction would break a PDB), lowest priority first, then most recently
// started. A victim set is chosen greedily in that order and then made minimal (victims given
// back from the last chosen). The reclaimer must also be placeable once the victims exit:
//   1. the minimal quota-freeing set, if the reclaimer then fits on some node (or fits already);
//   2. else, per node, a minimal set that frees the quota and makes room on that node (victims
//      beyond the quota's needs only from that node); the best by highest victim priority, then
//      fewest victims, then priority sum, then node name; the reclaimer is nominated to it;
//   3. else no reclaim, and `why` says so.
bool Engine::TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why) {
  if (!eq.within_min || eq.over_max) return false;
  const std::string* cohort = quota_.CohortOf(w.namespace_);
  if (!cohort || cohort->empty()) return false;
  std::vector<size_t> cands;
  std::optional<Millis> young_until;  // when the first borrower skipped as too young comes of age
  for (const auto& [ns_id, running] : borrowed_by_ns_) {  // running borrowers only, not every workload
    for (size_t id : running) {
      const Workload& v = workloads_[id];
      if (v.phase != Phase::kRunning || !v.borrowed || v.namespace_ == w.namespace_) continue;
      const std::string* c = quota_.CohortOf(v.namespace_);
      if (!c || *c != *cohort) continue;
      if (policy_.reclaim == ReclaimMode::kLowerPriority && v.priority >= w.priority) continue;
      if (now_ - v.run_start < policy_.min_runtime) {
        const Millis at = v.run_start + policy_.min_runtime;
        young_until = young_until ? std::min(*young_until, at) : at;
        continue;
      }
      cands.push_back(v.id);
    }
  }
  // Like preemption: come back when a protected borrower turns minRuntime old, even if nothing
  // else happens in the pool by then.
  if (young_until) wakeups_.push(*young_until);
  if (cands.empty()) return false;
  // Lowest priority first, then most recently started.
  std::sort(cands.begin(), cands.end(), [&](size_t a, size_t b) {
    const Workload &x = workloads_[a], &y = workloads_[b];
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.run_start != y.run_start) return x.run_start > y.run_start;
    return x.key < y.key;
  });
  // Terminating workloads of the cohort are already on their way out.
  std::vector<const Workload*> base;
  for (const auto& on_node : node_workloads_)  // running and terminating workloads, node by node
    for (size_t id : on_node) {
      const Workload& v = workloads_[id];
      if (v.phase == Phase::kTerminating && quota_.CohortOf(v.namespace_) && *quota_.CohortOf(v.namespace_) == *cohort)
        base.push_back(&v);
    }
  std::sort(base.begin(), base.end(), [](const Workload* a, const Workload* b) { return a->id < b->id; });
  auto quota_ok = [&](const std::vector<size_t>& victims) {
    std::vector<const Workload*> released = base;
    for (size_t id : victims) released.push_back(&workloads_[id]);
    return quota_.CheckElastic(w, released).ok;
  };
  // Under disruptionBudgets: Strict a borrower whose eviction would break a PodDisruptionBudget
  // is skipped (BestEffort ignores budgets here, as Kueue's reclaim does).
  const bool strict = policy_.disruption_budgets == DisruptionBudgetMode::kStrict && !m_.pdbs.empty();
  std::vector<PdbState> pdb_state;
  if (strict) ComputePdbState(&pdb_state);
  // A minimal victim set that frees the quota and, with `node`, makes room there.
  auto build = [&](std::optional<size_t> node) -> std::optional<std::vector<size_t>> {
    std::vector<size_t> chosen;
    bool freed = false, room = !node || FitsOnceGone(*node, w, chosen);
    for (size_t id : cands) {
      if (freed && room) break;
      const bool here = node && workloads_[id].node == *node;
      if (freed && !here) continue;  // quota is free: only victims on the node still help
      chosen.push_back(id);
      if (strict && CountViolations(chosen, pdb_state, nullptr) > 0) {
        chosen.pop_back();
        continue;
      }
      if (!freed) freed = quota_ok(chosen);
      if (!room && here) room = FitsOnceGone(*node, w, chosen);
    }
    if (!freed || !room) return std::nullopt;
    for (size_t k = chosen.size(); k-- > 0;) {
      std::vector<size_t> without = chosen;
      without.erase(without.begin() + static_cast<long>(k));
      if (quota_ok(without) && (!node || FitsOnceGone(*node, w, without))) chosen = std::move(without);
    }
    return chosen;
  };
  auto quota_only = build(std::nullopt);
  if (!quota_only || quota_only->empty()) return false;  // borrowers cannot free enough quota
  std::vector<size_t> victims;
  std::optional<size_t> nominate;
  bool placeable = false;
  for (size_t i = 0; i < nodes_.size() && !placeable; ++i)
    placeable = NodeSelectable(nodes_[i], w) && FitsRespectingNominated(i, w);
  for (size_t i = 0; i < nodes_.size() && !placeable; ++i) placeable = FitsOnceGone(i, w, *quota_only);
  if (placeable) {
    victims = std::move(*quota_only);
  } else {
    struct NodePlan {
      size_t node;
      std::vector<size_t> victims;
      int32_t max_priority;
      int64_t sum_priority;
    };
    std::optional<NodePlan> best;
    std::vector<size_t> here;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      here.clear();
      for (size_t id : cands)
        if (workloads_[id].node == i) here.push_back(id);
      if (!FitsOnceGone(i, w, here)) continue;  // not even with every borrower here gone
      auto set = build(i);
      if (!set) continue;
      NodePlan plan{i, std::move(*set), INT32_MIN, 0};
      for (size_t id : plan.victims) {
        plan.max_priority = std::max(plan.max_priority, workloads_[id].priority);
        plan.sum_priority += workloads_[id].priority;
      }
      auto better = [](const NodePlan& a, const NodePlan& b) {
        if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
        if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
        if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
        return a.node < b.node;
      };
      if (!best || better(plan, *best)) best = std::move(plan);
    }
    if (!best) {
      *why = "; not reclaiming: no node would have room for it even after the borrowing workloads of cohort " +
             *cohort + " exit (" + NoFitMessage(w) + ")";
      return false;
    }
    victims = std::move(best->victims);
    nominate = best->node;
  }
  std::sort(victims.begin(), victims.end());
  for (size_t id : victims) StopVictim(workloads_[id], w, EventType::kReclaimed);
  w.waiting_for = victims;
  if (nominate) {
    // Hold the room the victims leave on that node for the reclaimer.
    DropNomination(w);
    w.nominated_node = *nominate;
    nominated_[*nominate].push_back(w.id);
    Touch(*nominate);
  }
  quota_.Reserve(w);
  SetPending(w, EventType::kQuotaExceeded, "Reclaiming",
             "reclaiming lent quota: waiting for " + std::to_string(victims.size()) + " borrowing workload(s) to exit" +
                 (nominate ? " (nominated to " + nodes_[*nominate].name + ")" : ""));
  return true;
}

// ------------------------------------------------------------------ the cycle

void Engine::DropNomination(Workload& w) {
  if (!w.nominated_node) return;
  auto& nom = nominated_[*w.nominated_node];
  nom.erase(std::remove(nom.begin(), nom.end(), w.id), nom.end());
  Touch(*w.nominated_node);
  w.nominated_node.reset();
}

bool Engine::TryAdmitQuota(Workload& w) {
  if (!w.has_quota) return true;  // no ResourceQuota and no ElasticQuota in its namespace
  // The same quota blocking on the same resource is one event, however the numbers move; the
  // workload's message always has the current numbers.
  if (auto rq = quota_.ResourceQuotaBlocked(w)) {
    DropNomination(w);  // a held node must not stay reserved while quota blocks
    if (policy_.when_quota_exceeded == QuotaExceededAction::kReject) {
      Reject(w, "QuotaExceeded", *rq);
    } else {
      SetPending(w, EventType::kQuotaExceeded, "QuotaExceeded", *rq, rq->substr(0, rq->find(", used")));
    }
    return false;
  }
  auto eq = quota_.CheckElastic(w);
  if (!eq.ok) {
    DropNomination(w);
    if (eq.over_max && policy_.when_quota_exceeded == QuotaExceededAction::kReject) {
      Reject(w, "QuotaExceeded", eq.message);
      return false;
    }
    std::string why;
    if (TryReclaim(w, eq, &why)) return false;
    SetPending(w, EventType::kQuotaExceeded, "QuotaExceeded", eq.message + why,
               eq.message.substr(0, eq.message.find(':')) + (why.empty() ? "" : "|no room"));
    return false;
  }
  return true;
}

std::string Engine::ShapeKey(const Workload& w) const {
  std::string k = std::to_string(w.shape.cpu_milli) + "|" + std::to_string(w.shape.mem_bytes) + "|" +
                  std::to_string(w.shape.gpu_count) + "|" + std::to_string(w.shape.gpu_milli_per_device) + "|" +
                  w.shape.ext.ToString() + "|" + std::to_string(w.priority) + "|";
  for (const auto& [a, b] : w.pod->node_selector)  // length-prefixed: no two selectors collide
    k += std::to_string(a.size()) + ":" + a + std::to_string(b.size()) + ":" + b + ",";
  return k;
}

bool Engine::Attempt(Workload& w, std::unordered_map<uint32_t, std::string>& no_fit,
                     std::unordered_map<uint32_t, std::pair<std::string, std::string>>& no_preempt) {
  if (w.phase != Phase::kPending) return true;
  if (!w.waiting_for.empty()) return true;  // victims still terminating
  if (!TryAdmitQuota(w)) return w.phase != Phase::kPending || !w.waiting_for.empty();  // rejected / reclaiming
  auto nf = no_fit.find(w.shape_class);
  if (nf == no_fit.end() || w.nominated_node) {
    if (TryPlace(w)) return true;
    nf = no_fit.find(w.shape_class);
    if (nf == no_fit.end()) nf = no_fit.emplace(w.shape_class, NoFitMessage(w)).first;
  }
  auto np = no_preempt.find(w.preempt_class);
  if (np == no_preempt.end()) {
    std::string why;
    if (TryPreempt(w, &why)) return true;
    std::string msg = nf->second + why;
    if (!policy_.min_runtime) {
      np = no_preempt.emplace(w.preempt_class, std::make_pair(msg, StableReason(msg))).first;
      SetPending(w, EventType::kFailedScheduling, "Unschedulable", np->second.first, np->second.second);
    } else {
      SetPending(w, EventType::kFailedScheduling, "Unschedulable", msg, StableReason(msg));
    }
    return w.nominated_node.has_value();  // a nominated workload failing is its own case
  }
  SetPending(w, EventType::kFailedScheduling, "Unschedulable", np->second.first, np->second.second);
  return w.nominated_node.has_value();
}

void Engine::Schedule(Millis now) {
  now_ = std::max(now_, now);
  // Within one cycle resources only shrink (binds) or get promised (preemptions), so a shape that
  // found no node, or no preemption plan, finds none later in the cycle either: remember both.
  std::unordered_map<uint32_t, std::string> no_fit;  // shape class -> FailedScheduling reason
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> no_preempt;  // -> message, key
  const bool all = freed_;
  freed_ = false;
  std::vector<size_t> fresh;
  fresh.swap(fresh_);
  if (!all) {
    // Nothing was released since the last cycle: only the new arrivals can change anything.
    std::vector<size_t> order;
    for (size_t id : fresh)
      if (IsPending(id)) order.push_back(id);
    std::sort(order.begin(), order.end(), QueueOrder{&workloads_});
    order.erase(std::unique(order.begin(), order.end()), order.end());
    for (size_t id : order) Attempt(workloads_[id], no_fit, no_preempt);
  } else {
    // Merge the classes' queues in queue order; a class whose head fails is done for this cycle
    // (its other members would fail the same way), so a cycle costs O(classes + progress), not
    // O(pending workloads).
    QueueOrder before{&workloads_};
    auto later = [&](const std::pair<size_t, uint32_t>& a, const std::pair<size_t, uint32_t>& b) {
      return before(b.first, a.first);
    };
    // Nominated preemptors hold resources on their node; they are tried on their own, first.
    std::vector<size_t> nominated;
    for (const auto& list : nominated_)
      for (size_t id : list)
        if (workloads_[id].phase == Phase::kPending) nominated.push_back(id);
    std::sort(nominated.begin(), nominated.end(), before);
    for (size_t id : nominated) Attempt(workloads_[id], no_fit, no_preempt);
    std::priority_queue<std::pair<size_t, uint32_t>, std::vector<std::pair<size_t, uint32_t>>, decltype(later)> heads(later);
    for (auto& [cls, set] : pending_)
      if (!set.empty()) heads.push({*set.begin(), cls});
    while (!heads.empty()) {
      auto [id, cls] = heads.top();
      heads.pop();
      Workload& w = workloads_[id];
      bool go_on = w.nominated_node.has_value() || Attempt(w, no_fit, no_preempt);
      auto& set = pending_[cls];
      auto next = set.upper_bound(id);
      if (go_on) {
        if (next != set.end()) heads.push({*next, cls});
        continue;
      }
      // The class failed: its other members keep waiting for the same reason. They are told
      // when the kind of reason changes (the head always has the current counts); to keep a
      // cycle cheap on long queues only the next kReasonFanout members are updated at once, the
      // rest get the news as they reach the head of their class.
      std::string key = StableReason(w.message);
      auto& last = class_reason_[cls];
      if (key != last) {
        last = key;
        constexpr int kReasonFanout = 64;
        int n = 0;
        for (auto it = next; it != set.end() && n < kReasonFanout; ++it, ++n) {
          Workload& m = workloads_[*it];
          if (m.phase != Phase::kPending || !m.waiting_for.empty() || m.nominated_node) continue;
          SetPending(m, static_cast<EventType>(w.last_event_type),
                     w.last_event_type == static_cast<int>(EventType::kQuotaExceeded) ? "QuotaExceeded" : "Unschedulable",
                     w.message, key);
        }
      }
    }
    // New arrivals behind a failed head still get their own reason.
    for (size_t id : fresh) {
      Workload& w = workloads_[id];
      if (w.phase == Phase::kPending && w.message.empty() && IsPending(id)) Attempt(w, no_fit, no_preempt);
    }
  }
  if (options_.check_invariants) {
    Status s = CheckInvariants();
    ARB_CHECK_MSG(s.ok(), s.message());
  }
}

void Engine::Finish(Millis now) {
  AdvanceTo(now);
  now_ = std::max(now_, now);
  for (auto& w : workloads_) {
    if (w.node) runs_.push_back(MakeRun(w, *w.node));
  }
  for (auto& w : workloads_)
    if (w.phase == Phase::kPending) w.pending_total += now_ - w.pending_since;
}

Status Engine::CheckInvariants() const {
  std::vector<int> seen(workloads_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeState& n = nodes_[i];
    if (n.cpu_used_milli > n.cpu_capacity_milli || n.mem_used_bytes > n.mem_capacity_bytes)
      return Status::Error("node " + n.name + " above capacity × overcommit");
    for (int32_t g : n.gpu_used_milli)
      if (g < 0 || g > placement::kMilliPerGpu) return Status::Error("GPU overcommitted on " + n.name);
    for (const auto& [r, v] : n.ext_used.entries())
      if (n.ext_capacity.Has(r) && v > n.ext_capacity.Get(r))
        return Status::Error("node " + n.name + " above capacity in " + r);
    NodeState rebuilt = n;
    rebuilt.cpu_used_milli = 0;
    rebuilt.mem_used_bytes = 0;
    std::fill(rebuilt.gpu_used_milli.begin(), rebuilt.gpu_used_milli.end(), 0);
    rebuilt.RecountGpus();
    rebuilt.ext_used = ResourceList{};
    for (size_t id : node_workloads_[i]) {
      seen[id]++;
      const Workload& w = workloads_[id];
      if (!w.node || *w.node != i) return Status::Error(w.key + " listed on " + n.name + " but bound elsewhere");
      rebuilt.Allocate(w.shape, w.gpus);
    }
    if (rebuilt.cpu_used_milli != n.cpu_used_milli || rebuilt.mem_used_bytes != n.mem_used_bytes ||
        rebuilt.gpu_used_milli != n.gpu_used_milli)
      return Status::Error("node " + n.name + " accounting differs from its workloads");
    if (!n.gpu_summary_ok || rebuilt.gpu_full_free != n.gpu_full_free || rebuilt.gpu_max_free != n.gpu_max_free ||
        rebuilt.gpu_free_total != n.gpu_free_total)
      return Status::Error("node " + n.name + " GPU summary differs from its devices");
  }
  for (const auto& w : workloads_) {
    bool placed = w.phase == Phase::kRunning || w.phase == Phase::kTerminating;
    if (placed != (seen[w.id] == 1)) return Status::Error(w.key + " is not on exactly one node");
  }
  if (auto q = quota_.CheckInvariants()) return Status::Error(*q);
  return Status::Ok();
}

}  // namespace arbiter::engine
