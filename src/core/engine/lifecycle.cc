// A workload's life: submission and admission (priority, QoS, LimitRange, quota that can never be
// met), quota admission in the cycle, bind, release, exit (requeue / cancel / gone), deletion,
// completion; the events and statuses it produces.
#include <algorithm>

#include "core/engine/admission.h"
#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/gpu_sharing.h"
#include "core/instant_text.h"
#include "core/placement/node_constraints.h"
#include "core/system_priority.h"

namespace arbiter::engine {

namespace {
constexpr Millis kDefaultGrace = 30000;
}  // namespace

// ------------------------------------------------------------------ events and messages

void State::Emit(EventType type, const Workload& w, std::string node, std::string_view reason,
                 std::string message, std::string by, WorkFacts facts, Millis grace) {
  if (!events_sink) return;
  Event e;
  e.time = now;
  e.type = type;
  e.work_facts = facts;
  e.workload = w.id;
  e.node = std::move(node);
  e.by = std::move(by);
  e.reason = reason;
  e.message = std::move(message);
  e.grace = grace;
  events_sink->OnEvent(e);
}

void State::EmitNode(EventType type, const std::string& node, std::string message) {
  if (!events_sink) return;
  Event e;
  e.time = now;
  e.type = type;
  e.workload = kNoWorkload;
  e.node = node;
  e.reason = type == EventType::kNodeAdded ? reason::kNodeAdded : reason::kNodeRemoved;
  e.message = std::move(message);
  events_sink->OnEvent(e);
}

void State::Restated(const Workload& w) {
  if (events_sink) events_sink->OnRestated(w.id);
}

void State::SetMessage(Workload& w, std::string message, std::string_view why, WorkFacts facts) {
  Restated(w);
  w.message = std::move(message);
  w.message_reason = why;
  w.message_facts = facts;
  if (w.rare_block) w.rare_block->reserved_on.clear();
  w.reserved_from = -1;
}

void State::MarkFinished(Workload& w) {
  if (w.submitted) {  // (a workload Submit rejected was never counted)
    --unfinished_by_ns[w.namespace_id];
    w.submitted = false;
  }
  // count/pods counts a terminal pod until it is deleted (Kubernetes' object count quota).
  if (!w.deleted &&
      (w.phase == Phase::kSucceeded || w.phase == Phase::kFailed || w.phase == Phase::kPreempted))
    quota.KeepCounted(w);
  w.finish_time = now;
  finished.push_back(w.slot);
}

void State::Reject(Workload& w, std::string_view why, const std::string& message) {
  quota.Unreserve(w);
  DropNomination(w);
  w.phase = Phase::kRejected;
  SetMessage(w, message, why);
  PendingErase(w.slot);
  Emit(EventType::kRejected, w, "", why, message);
  MarkFinished(w);
}

void State::SetPending(Workload& w, EventType type, std::string_view why,
                       const std::string& message, const std::string& dedupe) {
  if (w.last_event_type == static_cast<int>(type) && w.message == message) return;  // fast path
  SetMessage(w, message, why);
  w.last_event_type = static_cast<int>(type);
  // One event per kind of reason per pending spell (the message always has the current text):
  // reasons that alternate (quota, then nodes, then quota again) do not repeat their events, as
  // Kubernetes aggregates repeated events of an object. The last few kinds are remembered.
  std::string key =
      std::string(ToString(type)) + "|" + StableReason(dedupe.empty() ? message : dedupe);
  auto& seen = w.rare_mut().reason_keys;
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
  constexpr size_t kRemembered = 4;
  if (seen.size() == kRemembered) seen.erase(seen.begin());
  seen.push_back(std::move(key));
  Emit(type, w, "", why, message);
}

// ------------------------------------------------------------------ submission and admission

namespace {
// A pod of namespace `ns` names QoS `q`, whose spec.namespaces leaves `ns` out: Submit's rejection
// and the daemon's refusal (NeverAdmissible), in one wording.
std::string QoSNotAllowed(const QoS& q, const std::string& ns) {
  std::string list;
  for (const auto& n : *q.namespaces) list += (list.empty() ? "" : ", ") + n;
  return "QoS " + q.meta.name + " may not be used in namespace " + ns +
         ": its spec.namespaces is [" + list + "]";
}

const std::string kDefaultNamespace = "default";

// A free slot (or a new one) holding the pod's workload as submitted: identity, the pod's
// scheduling fields, its pod group and disruption budgets.
Workload& NewWorkload(State& s, const SubmitPod& c, const std::string& ns, std::string key) {
  const Pod& pod = c.pod;
  Slot slot;
  if (!s.free_slots.empty()) {
    slot = s.free_slots.back();
    s.free_slots.pop_back();
  } else {
    slot = static_cast<Slot>(s.workloads.size());
    s.workloads.emplace_back();
  }
  Workload& x = s.workloads[slot];  // default-constructed, or reset when its last workload left
  x.id = static_cast<WorkloadId>(s.next_id++);
  x.slot = slot;
  x.namespace_ = ns;
  x.name = pod.meta.name;
  x.key = std::move(key);
  x.labels = pod.meta.labels;
  x.node_selector = pod.node_selector;
  if (!pod.tolerations.empty()) x.rare_mut().tolerations = pod.tolerations;
  if (!pod.node_affinity.Empty()) x.rare_mut().node_affinity = pod.node_affinity;
  x.tolerates_unschedulable = placement::ToleratesUnschedulable(x.rare().tolerations);
  x.topology = PodTopologyRules::Of(pod);
  if (x.topology) s.topology_seen = true;
  x.immediate = c.immediate;
  if (!c.node.empty()) x.rare_mut().bound_node = c.node;
  x.submit_time = s.now;
  x.pending_since = s.now;
  x.grace = pod.termination_grace_period.value_or(kDefaultGrace);
  x.time_limit = pod.active_deadline.value_or(0);
  x.requeue_on_preempt = pod.sim.requeue_on_preempt;
  x.checkpoint_interval = std::max<Millis>(0, pod.sim.checkpoint_interval.value_or(0));
  x.shutdown_time = std::max<Millis>(0, pod.sim.shutdown_time);
  s.slot_of[Value(x.id)] = slot;
  if (pod.pod_group) s.JoinGang(x, *pod.pod_group);
  s.by_key[x.key] = slot;
  s.MatchPdbs(x);
  if (!x.pdbs.empty()) s.pdb_members.push_back(slot);
  return x;
}

// Priority from the PriorityClass (or the global default, or the pod's own), the QoS and the
// preempt mode; false when an unknown class or QoS rejected the workload.
bool AssignPriority(State& s, Workload& x, const Pod& pod) {
  if (pod.priority_class_name) {
    auto it = s.classes.find(*pod.priority_class_name);
    const std::optional<int32_t> system = SystemPriorityClassValue(*pod.priority_class_name);
    if (it != s.classes.end()) {
      x.priority_class = it->first;
      x.priority = it->second.value;
      x.preemption_policy = it->second.preemption_policy;
    } else if (system) {  // a built-in class not defined as an object
      x.priority_class = *pod.priority_class_name;
      x.priority = *system;
      x.preemption_policy = PreemptionPolicy::kPreemptLowerPriority;
    } else {
      s.Reject(x, reason::kUnknownPriorityClass,
               "no PriorityClass with name " + *pod.priority_class_name + " was found");
      return false;
    }
  } else if (const PriorityClass* def = s.GlobalDefault()) {
    x.priority_class = def->meta.name;
    x.priority = def->value;
    x.preemption_policy = def->preemption_policy;
  } else {
    x.priority = pod.priority.value_or(0);
    x.preemption_policy = pod.preemption_policy.value_or(PreemptionPolicy::kPreemptLowerPriority);
  }
  const QoS* qos = nullptr;
  if (pod.sim.qos) {
    auto it = s.qos_ids.find(*pod.sim.qos);
    if (it == s.qos_ids.end() || !s.qos_defs[static_cast<size_t>(it->second)]) {
      s.Reject(x, reason::kUnknownQoS, "no QoS with name " + *pod.sim.qos + " was found");
      return false;
    }
    x.qos = it->second;
    qos = &*s.qos_defs[static_cast<size_t>(it->second)];
    // A pod bound already (`arbiter scheduler` restarting: SubmitPod::node) was admitted under the
    // list of its time and keeps its QoS, as a running job does in Slurm.
    const bool bound = !x.rare().bound_node.empty();
    if (!bound && !qos->AllowsNamespace(x.namespace_)) {
      s.Reject(x, reason::kQoSNotAllowed, QoSNotAllowed(*qos, x.namespace_));
      return false;
    }
    if (s.policy.preemption_type == PreemptionType::kQoS) x.priority = qos->priority;
  }
  x.preempt_mode = pod.sim.preempt_mode         ? *pod.sim.preempt_mode
                   : (qos && qos->preempt_mode) ? *qos->preempt_mode
                                                : s.policy.preempt_mode;
  return true;
}

// LimitRange (defaults from every LimitRange of the namespace, in name order, then checks), the
// requests and limits with the pod overhead, the shape, quota flags, classes and namespace id;
// false when a LimitRange rejected the workload.
// The workload's requests and limits: every LimitRange of its namespace (in name order) first,
// then the pod overhead. The LimitRange's refusal, or "".
std::string LimitedRequests(const State& s, Workload& x, const Pod& pod, AdmittedPod* admitted) {
  std::vector<const LimitRange*> ranges;
  if (auto lrs = s.limit_ranges.find(x.namespace_); lrs != s.limit_ranges.end())
    for (const auto& [name, lr] : lrs->second) ranges.push_back(&lr);
  std::string lr = ApplyLimitRanges(pod, ranges, admitted);
  if (!lr.empty()) return lr;
  x.requests = admitted->requests;
  x.limits = admitted->limits;
  // Pod overhead (RuntimeClass): on top of the requests, and of the limits where the pod sets
  // one (Kubernetes' PodRequests / PodLimits); LimitRange checks the containers without it.
  for (const auto& [r, v] : pod.overhead.entries()) {
    x.requests.Set(r, x.requests.Get(r) + v);
    if (x.limits.Has(r)) x.limits.Set(r, x.limits.Get(r) + v);
  }
  return "";
}

bool AdmitRequests(State& s, Workload& x, SubmitPod& c, AdmittedPod* admitted) {
  const Pod& pod = c.pod;
  if (std::string lr = LimitedRequests(s, x, pod, admitted); !lr.empty()) {
    s.Reject(x, reason::kLimitRange, lr);
    return false;
  }
  x.shape = placement::PodShape::FromRequests(x.requests);
  x.shape.allowed_gpu_models = std::move(c.allowed_gpu_models);
  x.model_mask = s.ModelMask(x.shape);
  x.elastic = s.quota.HasElastic(x.namespace_);
  x.has_quota = s.quota.HasAnyQuota(x.namespace_);
  s.AssignClasses(x);
  if (auto ns = s.namespace_ids.find(x.namespace_); ns != s.namespace_ids.end()) {
    x.namespace_id = ns->second;
  } else {
    x.namespace_id = static_cast<uint32_t>(s.namespace_ids.size());
    s.namespace_ids.emplace(x.namespace_, x.namespace_id);
  }
  return true;
}

}  // namespace

Status State::Submit(SubmitPod&& c) {
  const Pod& pod = c.pod;
  if (pod.meta.name.empty()) return Status::InvalidArgument("SubmitPod: the pod has no name");
  const std::string ns = pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_;
  std::string key = ns + "/" + pod.meta.name;
  if (by_key.count(key)) return Status::AlreadyExists("pod " + key + " already exists");
  Workload& x = NewWorkload(*this, c, ns, std::move(key));
  Emit(EventType::kSubmitted, x, "", reason::kNone, "");
  // 1. Priority (PriorityClass, or QoS under Slurm semantics); 2. LimitRange and requests.
  AdmittedPod admitted;
  if (!AssignPriority(*this, x, pod) || !AdmitRequests(*this, x, c, &admitted)) return Status::Ok();
  // 3. Quota that can never be satisfied.
  if (auto never = quota.NeverAdmissible(x, admitted)) {
    // Kubernetes' words, then (for a request above `hard`) why waiting cannot help.
    if (never->over_hard) never->words += QuotaBook::kNeverAdmitted;
    Reject(x, reason::kQuotaExceeded, never->words);
    return Status::Ok();
  }
  // 4. PoolPolicy quota.maxSubmittedPerNamespace (Slurm's GrpSubmitJobs): a pod bound already
  // (`arbiter scheduler` restarting) was accepted under the limit of its time and is only counted.
  if (x.rare().bound_node.empty())
    if (auto over = SubmitLimitReached(ns)) {
      Reject(x, reason::kSubmitLimit, *over);
      return Status::Ok();
    }
  CountSubmitted(x);
  PendingInsert(x.slot);
  fresh.push_back(x.slot);
  return Status::Ok();
}

void State::CountSubmitted(Workload& w) {
  if (unfinished_by_ns.size() <= w.namespace_id) unfinished_by_ns.resize(w.namespace_id + 1, 0);
  ++unfinished_by_ns[w.namespace_id];
  w.submitted = true;
}

std::optional<std::string> State::SubmitLimitReached(const std::string& ns) const {
  const int64_t cap = policy.max_submitted_per_namespace;
  if (cap <= 0) return std::nullopt;
  auto id = namespace_ids.find(ns);
  const int64_t n = id == namespace_ids.end() || id->second >= unfinished_by_ns.size()
                        ? 0
                        : unfinished_by_ns[id->second];
  if (n < cap) return std::nullopt;
  return "namespace " + ns + " has " + std::to_string(n) +
         " pods pending or running, the PoolPolicy's quota.maxSubmittedPerNamespace (Slurm's "
         "GrpSubmitJobs): another is refused until one of them finishes or is deleted";
}

std::optional<std::string> State::NeverAdmissible(const Pod& pod) const {
  const std::string& ns = pod.meta.namespace_.empty() ? kDefaultNamespace : pod.meta.namespace_;
  Workload x;  // what Submit would make of the pod, as far as quota scopes and charges go
  x.namespace_ = ns;
  x.time_limit = pod.active_deadline.value_or(0);
  x.topology = PodTopologyRules::Of(pod);  // the CrossNamespacePodAffinity scope reads it
  if (pod.priority_class_name) {  // an unknown class or QoS is Submit's refusal, before quota
    if (!classes.count(*pod.priority_class_name) &&
        !SystemPriorityClassValue(*pod.priority_class_name))
      return std::nullopt;
    x.priority_class = *pod.priority_class_name;
  } else if (const PriorityClass* def = GlobalDefault()) {
    x.priority_class = def->meta.name;
  }
  if (pod.sim.qos) {  // a QoS its namespace may not name is Submit's refusal too, before quota
    auto it = qos_ids.find(*pod.sim.qos);
    if (it == qos_ids.end() || !qos_defs[static_cast<size_t>(it->second)]) return std::nullopt;
    const QoS& q = *qos_defs[static_cast<size_t>(it->second)];
    if (!q.AllowsNamespace(ns)) return QoSNotAllowed(q, ns);
  }
  const bool capped = policy.max_submitted_per_namespace > 0;
  if (!quota.HasAnyQuota(ns) && !capped) return std::nullopt;
  AdmittedPod admitted;  // a LimitRange's refusal is Submit's, before quota and the cap
  if (!LimitedRequests(*this, x, pod, &admitted).empty()) return std::nullopt;
  if (quota.HasAnyQuota(ns))
    if (auto never = quota.NeverAdmissible(x, admitted)) return std::move(never->words);
  return SubmitLimitReached(ns);
}

const PriorityClass* State::GlobalDefault() const {
  for (const auto& [name, pc] : classes)
    if (pc.global_default) return &pc;
  return nullptr;
}

bool State::TryAdmitQuota(Workload& w) {
  if (!w.has_quota) return true;  // no ResourceQuota and no ElasticQuota in its namespace
  // The same quota blocking on the same resource is one event, however the numbers move; the
  // workload's message always has the current numbers.
  if (auto rq = quota.ResourceQuotaBlocked(w)) {
    DropNomination(w);  // a held node must not stay reserved while quota blocks
    if (policy.when_quota_exceeded == QuotaExceededAction::kReject) {
      Reject(w, reason::kQuotaExceeded, *rq);
    } else {
      SetPending(w, EventType::kQuotaExceeded, reason::kQuotaExceeded, *rq,
                 rq->substr(0, rq->find(", used")));
    }
    return false;
  }
  auto eq = quota.CheckElastic(w);
  if (eq.ok && eq.borrowing && defer_borrowers && !w.immediate) {
    deferred.push_back(w.slot);  // borrowers come after the workloads within their min
    return false;
  }
  if (!eq.ok) {
    DropNomination(w);
    std::string why, wait;
    if (TryReclaim(w, eq, &why, &wait))
      return false;  // quota preemption (reclaim, withinNamespace)
    if (wait.empty()) HoldUnreclaimable(w, eq);
    if (eq.over_max && policy.when_quota_exceeded == QuotaExceededAction::kReject) {
      Reject(w, reason::kQuotaExceeded, eq.message);
      return false;
    }
    if (!wait.empty())  // the quota is freed once candidates reach minRuntime
      SetPending(w, EventType::kQuotaExceeded, reason::kQuotaExceeded, wait,
                 wait.substr(0, wait.find(':')) + "|minRuntime");
    else
      SetPending(w, EventType::kQuotaExceeded, reason::kQuotaExceeded, eq.message + why,
                 eq.message.substr(0, eq.message.find(':')) + (why.empty() ? "" : "|no room"));
    return false;
  }
  return true;
}

// ------------------------------------------------------------------ bind, release, exit

void State::DropNomination(Workload& w) {
  if (w.nominated_node == kNoNode) return;
  auto& nom = LiveOf(w.nominated_node).nominated;
  const Slot s = w.slot;
  nom.erase(std::remove(nom.begin(), nom.end(), s), nom.end());
  Touch(w.nominated_node);
  w.nominated_node = kNoNode;
  --nominations;
  Restated(w);
}

void State::Nominate(Workload& w, uint32_t pos) {
  DropNomination(w);
  const uint32_t id = node_at[pos];
  w.nominated_node = id;
  ++nominations;
  Restated(w);
  node_live[pos].nominated.push_back(w.slot);
  Touch(id);
}

void State::Bind(Workload& w, uint32_t pos, const placement::GpuAssignment& gpus) {
  DropNomination(w);
  quota.Unreserve(w);
  w.unreclaimable_hold = false;
  const Slot slot = w.slot;
  auto eq = quota.CheckElastic(w);
  w.borrowed = eq.borrowing;
  if (w.borrowed) borrowed_by_ns[w.namespace_id].push_back(slot);
  quota.Charge(w);
  w.quota_charged = true;
  const uint32_t id = node_at[pos];
  nodes[pos].Allocate(w.shape, gpus);
  Touch(id);
  NodeChanged(pos);
  node_live[pos].workloads.push_back(slot);
  CountMinPriority(pos, w.priority);
  TrackPlacedTopology(w, /*bound=*/true);
  if (topology_seen) topology_bound = true;  // Tick: RequeueForTopology
  if (w.time_limit > 0) ++ends_known;
  w.node = id;
  w.last_node = nodes[pos].name;
  w.gpus = gpus;
  w.phase = Phase::kRunning;
  w.immediate = false;  // one attempt at submission only; a requeued run waits like any other
  w.run_start = now;
  if (w.first_start < 0) w.first_start = now;
  w.pending_total += now - w.pending_since;
  SetMessage(w, "", reason::kNone);
  if (w.rare_block) {
    w.rare_block->reason_keys = {};
    if (!w.rare_block->bound_node.empty()) {  // bound where it ran: an ordinary workload now
      w.rare_block->bound_node.clear();
      AssignClasses(w);
    }
  }
  w.DropRareIfEmpty();
  w.last_event_type = -1;
  w.preempted_by.clear();
  PendingErase(slot);
  if (w.borrowed)
    Emit(EventType::kBorrowed, w, nodes[pos].name, reason::kBorrowed,
         "admitted on quota borrowed from cohort " + *quota.CohortOf(w.namespace_));
  Emit(EventType::kScheduled, w, nodes[pos].name, reason::kNone,
       "");  // Event::Message(): "bound to <node>"
  w.taint_evict_at = -1;
  if (fit[pos].tainted) ScheduleTaintEviction(w, pos);  // a NoExecute taint tolerated for a time
}

RunRecord State::MakeRun(const Workload& w) const {
  const NodeInfo& info = node_info[w.node];
  RunRecord r;
  r.workload = w.id;
  r.node = info.name;
  r.gpu_product = nodes[info.pos].gpu_model;
  r.gpu_replicas = GpuReplicasOf(info.labels);
  r.start = w.run_start;
  r.end = now;
  return r;
}

void State::Release(Workload& w) {
  ARB_CHECK(w.node != kNoNode);
  const uint32_t id = w.node;
  const uint32_t pos = node_info[id].pos;
  const Slot slot = w.slot;
  nodes[pos].Release(w.shape, w.gpus);
  Touch(id);
  NodeChanged(pos);
  if (EndKnown(w)) --ends_known;
  if (node_info[id].over_capacity) CheckOverCapacity(pos);
  auto& list = node_live[pos].workloads;
  list.erase(std::find(list.begin(), list.end(), slot));
  if (NodeLive& live = node_live[pos];
      w.priority == live.min_priority && live.at_min_priority-- <= 1)
    RecountMinPriority(pos);  // (the last at the lowest priority gone)
  TrackPlacedTopology(w, /*bound=*/false);
  if (w.quota_charged) quota.Release(w);
  w.quota_charged = false;
  if (auto b = borrowed_by_ns.find(w.namespace_id);
      b != borrowed_by_ns.end() && !b->second.empty()) {
    // When the namespace is back within its min, none of its workloads runs on borrowed quota
    // any more: they become protected from other namespaces' preemption.
    auto& borrowers = b->second;
    borrowers.erase(std::remove(borrowers.begin(), borrowers.end(), slot), borrowers.end());
    if (!quota.IsBorrowing(w.namespace_)) {
      for (Slot s : borrowers) {
        workloads[s].borrowed = false;
        Restated(workloads[s]);
      }
      borrowers.clear();
      ++global_epoch;
    }
  }
  RunRecord run = MakeRun(w);     // close the run record
  if (!w.preempted_by.empty()) {  // stopped by a preemptor or a removed node
    run.stopped_by = w.preempted_by;
    run.stop_time = w.stop_time;
  }
  if (runs_sink) runs_sink->OnRun(run);
  w.node = kNoNode;
  w.gpus = placement::GpuAssignment{};
  w.borrowed = false;
  freed = true;
}

Millis State::GraceOf(const Workload& w) const {
  Millis grace = w.grace;
  if (policy.preemption_type == PreemptionType::kQoS)
    if (const QoS* q = QoSOf(w.qos); q && q->grace_time) grace = *q->grace_time;
  return grace;
}

void State::Signal(Workload& v, Millis grace) {
  if (v.node != kNoNode && !EndKnown(v)) ++ends_known;
  v.phase = Phase::kTerminating;
  if (v.node != kNoNode) Touch(v.node);
  v.stop_time = now;
  v.stop_grace = grace;
}

namespace {

// Why a victim was stopped. A workload lost with its node (preempted_by "node/NAME") meets the
// same fate as a victim. So does one evicted for a NoExecute taint (taint_eviction.cc), also
// stopped by "node/NAME".
struct StopCause {
  bool node_lost;
  std::string text;
  std::string_view why;
};

StopCause StopCauseOf(const Workload& w) {
  const bool node_lost = w.preempted_by.rfind("node/", 0) == 0;
  const bool tainted = node_lost && w.message_reason == reason::kTaintEviction;
  std::string text = tainted ? "eviction for a NoExecute taint of node " + w.preempted_by.substr(5)
                     : node_lost ? "node " + w.preempted_by.substr(5) + " was removed"
                                 : "preemption by " + w.preempted_by;
  const std::string_view why = tainted     ? reason::kTaintEviction
                               : node_lost ? reason::kNodeRemoved
                                           : reason::kPreempted;
  return {node_lost, std::move(text), why};
}

// The victim goes back to the queue, held out of it while Slurm's cred_expire or the requeue
// back-off holds it.
void RequeueVictim(State& s, Workload& w, const std::string& node, const StopCause& c) {
  const PoolPolicy& policy = s.policy;
  w.phase = Phase::kPending;
  w.pending_since = s.now;
  if (w.rare_block) w.rare_block->reason_keys = {};
  w.last_event_type = -1;
  std::string text = c.node_lost ? "requeued: " + c.text : "requeued after " + c.text;
  const Slot slot = w.slot;
  // Slurm resets a requeued job's submit time (batch_requeue_fini): it queues behind the jobs
  // of its priority submitted before now.
  if (policy.preemption_type == PreemptionType::kQoS) w.submit_time = s.now;
  if (policy.latency) {  // Slurm: EligibleTime = requeue + cred_expire + 1 s
    w.held = true;
    w.eligible_at = s.now + policy.latency->cred_expire + 1000;
    text += "; eligible again in " + FormatDuration(w.eligible_at - s.now) +
            " (Slurm: cred_expire " + FormatDuration(policy.latency->cred_expire) + " + 1s)";
  }
  if (policy.requeue_backoff && !c.node_lost) text += s.BackOff(w);
  if (w.held) {
    s.held.push_back(slot);
    s.wakeups.push(w.eligible_at);
  }
  s.SetMessage(w, text, c.why);
  s.Emit(EventType::kRequeued, w, node, c.why, w.message);
  if (!w.held) {
    s.PendingInsert(slot);
    s.fresh.push_back(slot);
  }
}

// A stopped victim's fate once it exited: completed (within its grace time under Slurm's QoS
// preemption), cancelled (PreemptMode CANCEL) or requeued.
void VictimFate(State& s, Workload& w, const std::string& node, bool was_terminating) {
  const StopCause c = StopCauseOf(w);
  // Slurm (preempt/qos): a victim that exits by itself before its GraceTime ends is COMPLETED,
  // whatever its PreemptMode: no requeue, no cancel (a job that wants to be requeued calls
  // `scontrol requeue` itself: arbiter.dev/requeue-on-preempt).
  const bool completed_in_grace = s.policy.preemption_type == PreemptionType::kQoS &&
                                  was_terminating && !c.node_lost && !w.preempted_by.empty() &&
                                  w.exited_at > w.stop_time &&
                                  w.exited_at < w.stop_time + w.stop_grace && !w.requeue_on_preempt;
  if (completed_in_grace) {
    w.phase = Phase::kSucceeded;
    s.SetMessage(w,
                 "exited within its grace time after " + c.text + ": completed (Slurm preempt/qos)",
                 c.why);
    s.Emit(EventType::kCompleted, w, node, c.why, w.message);
    s.MarkFinished(w);
  } else if (w.preempt_mode == PreemptMode::kCancel) {
    w.phase = Phase::kPreempted;
    s.SetMessage(w, c.node_lost ? "cancelled: " + c.text : "cancelled after " + c.text, c.why);
    s.Emit(EventType::kCancelled, w, node, c.why, w.message);
    s.MarkFinished(w);
  } else {
    RequeueVictim(s, w, node, c);
  }
}

}  // namespace

// A terminating victim (or a workload on a removed node) exits: release, then requeue, cancel, or
// gone (deleted).
void State::Exit(Workload& w, bool emit_terminated) {
  if (w.release_at >= 0) {  // Slurm's clean-up is over (or its node left): it exited at exited_at
    completing.erase(std::find(completing.begin(), completing.end(), w.slot));
    w.release_at = -1;
    if (w.exit_kind != kExitVictim) {
      FinishNow(w, w.exit_code, w.exit_kind == kExitFinishedTerminating);
      return;
    }
  } else {
    w.exited_at = now;
  }
  const std::string node = w.node != kNoNode ? node_info[w.node].name : "";
  const bool was_terminating = w.phase == Phase::kTerminating;
  Release(w);
  if (was_terminating && emit_terminated)
    Emit(EventType::kTerminated, w, node, reason::kNone, "exited after SIGTERM");
  if (w.deleted) {
    w.phase = Phase::kDeleted;
    SetMessage(w, "deleted", reason::kDeleted);
    MarkFinished(w);
  } else {
    VictimFate(*this, w, node, was_terminating);
  }
  // The preemptor waiting for this victim.
  if (w.preemptor != kNoSlot) {
    auto& wf = workloads[w.preemptor].waiting_for;
    const Slot slot = w.slot;
    wf.erase(std::remove(wf.begin(), wf.end(), slot), wf.end());
    w.preemptor = kNoSlot;
  }
}

// PoolPolicy preemption.requeuingStrategy (Kueue's back-off): a victim requeued after its n-th
// preemption is held out of the queue for min(base * 2^(n-1), max), or longer when Slurm's
// cred_expire holds it longer; with immediateRequeues k, the first k are requeued at once and n
// counts from preemption k + 1. Returns the message's note.
std::string State::BackOff(Workload& w) {
  const PoolPolicy::RequeueBackoff& b = *policy.requeue_backoff;
  if (w.preemptions <= b.immediate)
    return "; no back-off (preemption " + std::to_string(w.preemptions) + " of immediateRequeues " +
           std::to_string(b.immediate) + ", requeuingStrategy)";
  const Millis delay = RequeueBackoffDelay(b, w.preemptions);
  if (delay <= 0) return "";
  const Millis until = now + delay;
  if (w.held && w.eligible_at >= until) return "";
  w.held = true;
  w.eligible_at = until;
  return "; backing off until " + FormatInstant(until) + " (" + FormatDuration(delay) +
         " after preemption " + std::to_string(w.preemptions) + ", requeuingStrategy)";
}

// ------------------------------------------------------------------ Slurm's latencies
// (spec.latency)

// How long a workload that exits now keeps its node in Slurm: the Epilog after every job; a job
// killed at the end of its grace period is first noticed by slurmctld (grace_end_delay, after a
// preemption), then slurmd sends SIGTERM, waits KillWait, sends SIGKILL, and the node is free
// once its termination round trip is done (MessageTimeout).
Millis State::CleanupDelay(const Workload& w, bool killed) const {
  if (!policy.latency) return 0;
  const auto& l = *policy.latency;
  Millis d = l.epilog;
  if (killed)
    d += (w.preempted_by.empty() ? 0 : GraceEndDelay(w)) + l.kill_wait + l.message_timeout;
  return d;
}

// How long after a victim's GraceTime ends slurmctld kills it (slurmctld/node_scheduler.c,
// select_nodes): the preemptor's scheduling pass that signalled it set preempt_start_time; a
// later pass may cancel or requeue only once KillWait + MessageTimeout have passed since, and
// each such pass that finds the victim still in its grace sets preempt_start_time again. With
// passes every sched_interval S, those passes come every R = ceil((KillWait + MessageTimeout) /
// S) * S after the signal, and the kill is the first at or after the grace's end G:
// ceil(G / R) * R - G (10 s grace, KillWait 2, MessageTimeout 5, S = 2: R = 8, 6 s). Without
// schedInterval, graceEndDelay as given.
Millis State::GraceEndDelay(const Workload& w) const {
  const auto& l = *policy.latency;
  if (l.sched_interval <= 0) return l.grace_end_delay;
  const Millis s = l.sched_interval;
  const Millis r = std::max<Millis>(s, (l.kill_wait + l.message_timeout + s - 1) / s * s);
  const Millis g = std::max<Millis>(0, w.stop_grace);
  return (g + r - 1) / r * r - g;
}

std::string State::CleanupText(const Workload& w, bool killed) const {
  const auto& l = *policy.latency;
  std::string t;
  auto add = [&](const std::string& x) { t += (t.empty() ? "" : ", ") + x; };
  if (killed && !w.preempted_by.empty())
    add("killed " + FormatDuration(GraceEndDelay(w)) + " after GraceTime");
  if (killed)
    add("KillWait " + FormatDuration(l.kill_wait) + ", MessageTimeout " +
        FormatDuration(l.message_timeout));
  if (l.epilog > 0) add("Epilog " + FormatDuration(l.epilog));
  return t;
}

// The workload's processes are gone but its node stays held (Slurm's COMPLETING) until
// now + delay: ReleaseDue finishes the exit then, with the outcome decided now.
void State::DeferRelease(Workload& w, Millis delay, ExitKind kind, std::string message) {
  if (w.phase != Phase::kTerminating) {
    if (!EndKnown(w)) ++ends_known;
    w.phase = Phase::kTerminating;
  }
  Touch(w.node);
  w.exited_at = now;
  w.release_at = now + delay;
  w.exit_kind = kind;
  completing.push_back(w.slot);
  wakeups.push(w.release_at);
  SetMessage(w, std::move(message), w.message_reason);
}

// At a Tick: releases that are due (in time, then id order), then requeued jobs that became
// eligible.
void State::ReleaseDue() {
  auto by_time = [&](Millis Workload::*field) {
    return [this, field](Slot a, Slot b) {
      const Workload &x = workloads[a], &y = workloads[b];
      return x.*field != y.*field ? x.*field < y.*field : Value(x.id) < Value(y.id);
    };
  };
  if (!completing.empty()) {
    std::vector<Slot> due;
    for (Slot s : completing)
      if (workloads[s].release_at <= now) due.push_back(s);
    std::sort(due.begin(), due.end(), by_time(&Workload::release_at));
    for (Slot s : due) Exit(workloads[s]);  // ends the clean-up (a finished job completes)
  }
  if (!held.empty()) {
    std::vector<Slot> due;
    for (Slot s : held)
      if (workloads[s].eligible_at <= now) due.push_back(s);
    std::sort(due.begin(), due.end(), by_time(&Workload::eligible_at));
    for (Slot s : due) {
      held.erase(std::find(held.begin(), held.end(), s));
      workloads[s].held = false;
      workloads[s].held_total += now - workloads[s].pending_since;  // held since its requeue
      PendingInsert(s);
      fresh.push_back(s);
      freed = true;
    }
  }
}

// ------------------------------------------------------------------ driver commands

Status State::Finished(const PodFinished& c) {
  const Slot s = SlotOf(c.id);
  if (s == kNoSlot)
    return Status::NotFound("PodFinished: no live workload with id " + std::to_string(Value(c.id)));
  Workload& w = workloads[s];
  if (w.phase == Phase::kTerminating && c.exit_code != 0) return VictimGone(VictimExited{c.id});
  if (w.phase != Phase::kRunning && w.phase != Phase::kTerminating)
    return Status::FailedPrecondition("PodFinished: " + w.key + " is " + ToString(w.phase) +
                                      ", not running");
  if (w.release_at >= 0)
    return Status::FailedPrecondition("PodFinished: " + w.key +
                                      " has exited already (Slurm clean-up until " +
                                      FormatDuration(w.release_at) + ")");
  const bool was_terminating = w.phase == Phase::kTerminating;
  if (const Millis delay = CleanupDelay(w, false); delay > 0) {
    w.exit_code = c.exit_code;
    DeferRelease(w, delay, was_terminating ? kExitFinishedTerminating : kExitFinishedRunning,
                 "exited with code " + std::to_string(c.exit_code) +
                     "; the Epilog holds its node for " + FormatDuration(delay));
    return Status::Ok();
  }
  FinishNow(w, c.exit_code, was_terminating);
  return Status::Ok();
}

void State::FinishNow(Workload& w, int32_t exit_code, bool was_terminating) {
  const Slot s = w.slot;
  const std::string node = node_info[w.node].name;
  w.exit_code = exit_code;
  Release(w);
  if (exit_code == 0) {
    w.phase = Phase::kSucceeded;
    if (was_terminating) SetMessage(w, "", reason::kNone);
    Emit(EventType::kCompleted, w, node, reason::kNone, "");
  } else {
    w.phase = Phase::kFailed;
    SetMessage(w, "exited with code " + std::to_string(exit_code), reason::kError);
    Emit(EventType::kFailed, w, node, reason::kError, w.message);
  }
  if (w.preemptor != kNoSlot) {  // a victim that finished its work within its grace period
    auto& wf = workloads[w.preemptor].waiting_for;
    wf.erase(std::remove(wf.begin(), wf.end(), s), wf.end());
    w.preemptor = kNoSlot;
  }
  MarkFinished(w);
}

Status State::VictimGone(const VictimExited& c) {
  const Slot s = SlotOf(c.id);
  if (s == kNoSlot)
    return Status::NotFound("VictimExited: no live workload with id " +
                            std::to_string(Value(c.id)));
  Workload& w = workloads[s];
  if (w.phase != Phase::kTerminating)
    return Status::FailedPrecondition("VictimExited: " + w.key + " is not terminating (" +
                                      ToString(w.phase) + ")");
  if (w.release_at >= 0)
    return Status::FailedPrecondition("VictimExited: " + w.key +
                                      " has exited already (Slurm clean-up until " +
                                      FormatDuration(w.release_at) + ")");
  w.exited_at = now;
  const bool killed = now >= w.stop_time + w.stop_grace;
  if (const Millis delay = CleanupDelay(w, killed); delay > 0) {
    DeferRelease(
        w, delay, kExitVictim,
        std::string(killed ? "killed at the end of its grace period" : "exited after SIGTERM") +
            "; Slurm holds its node for " + FormatDuration(delay) + " more (" +
            CleanupText(w, killed) + ")");
    return Status::Ok();
  }
  Exit(w);
  return Status::Ok();
}

Status State::Delete(const DeletePod& c) {
  const Slot s = SlotOf(c.id);
  if (s == kNoSlot &&
      quota.ForgetCounted(Value(c.id))) {  // a terminal pod count/pods still counted
    freed = true;
    return Status::Ok();
  }
  if (s == kNoSlot)
    return Status::NotFound("DeletePod: no live workload with id " + std::to_string(Value(c.id)));
  Workload& w = workloads[s];
  if (c.grace_period && *c.grace_period < 0)
    return Status::InvalidArgument("DeletePod: the grace period must not be negative");
  switch (w.phase) {
    case Phase::kPending: {
      quota.Unreserve(w);
      DropNomination(w);
      PendingErase(s);
      if (w.held) {
        held.erase(std::find(held.begin(), held.end(), s));
        w.held = false;
        w.held_total += now - w.pending_since;
      }
      for (Slot v : w.waiting_for) workloads[v].preemptor = kNoSlot;  // its victims still exit
      w.waiting_for.clear();
      w.deleted = true;
      w.phase = Phase::kDeleted;
      w.pending_total += now - w.pending_since;
      SetMessage(w, "deleted while pending", reason::kDeleted);
      Emit(EventType::kDeleted, w, "", reason::kDeleted, w.message);
      MarkFinished(w);
      return Status::Ok();
    }
    case Phase::kRunning: {
      const Millis grace = c.grace_period.value_or(w.grace);
      w.deleted = true;
      w.preempted_by.clear();
      Signal(w, grace);
      SetMessage(w, "deleted; SIGTERM, grace " + FormatDuration(grace), reason::kDeleted,
                 WorkFacts::kStopPlan);
      Emit(EventType::kDeleted, w, node_info[w.node].name, reason::kDeleted, w.message, "",
           WorkFacts::kStopPlan, grace);
      // Deleting or evicting a running member of a pod group stops the group (same fate as
      // preemption): the others get SIGTERM and are requeued as a group.
      if (w.gang != kNoGang) StopGang(w, w.key);
      freed = true;
      return Status::Ok();
    }
    case Phase::kTerminating:
      w.deleted = true;
      if (c.shorten && c.grace_period && ShortenGrace(w, *c.grace_period)) return Status::Ok();
      Emit(EventType::kDeleted, w, node_info[w.node].name, reason::kDeleted,
           "deleted while shutting down");
      return Status::Ok();
    default:
      return Status::NotFound("DeletePod: " + w.key + " has finished");
  }
}

// A second delete of a terminating workload whose grace ends sooner than its SIGTERM's: that is
// its grace now (it is killed then if it has not exited). False when it ends no sooner, or the
// workload has exited already (held for Slurm's clean-up).
bool State::ShortenGrace(Workload& w, Millis grace) {
  const Millis end = now + grace;
  if (w.release_at >= 0 || end >= w.stop_time + w.stop_grace) return false;
  w.stop_grace = end - w.stop_time;
  if (w.node != kNoNode) Touch(w.node);
  freed = true;  // its expected end moved: backfill plans again
  SetMessage(w, "deleted; SIGTERM, grace shortened to " + FormatDuration(grace) + " from now",
             reason::kDeleted, WorkFacts::kStopPlan);
  Emit(EventType::kDeleted, w, node_info[w.node].name, reason::kDeleted, w.message, "",
       WorkFacts::kStopSooner, grace);
  return true;
}

// ------------------------------------------------------------------ status

WorkloadStatus State::StatusOf(const Workload& w) const {
  WorkloadStatus s;
  s.id = w.id;
  s.key = w.key;
  s.namespace_ = w.namespace_;
  s.name = w.name;
  s.priority = w.priority;
  s.priority_class = w.priority_class;
  if (w.qos >= 0) s.qos = qos_names[static_cast<size_t>(w.qos)];
  s.preemption_policy = w.preemption_policy;
  s.preempt_mode = w.preempt_mode;
  s.phase = w.phase;
  if (w.node != kNoNode) s.node = node_info[w.node].name;
  s.last_node = w.last_node;
  if (w.nominated_node != kNoNode) s.nominated_node = node_info[w.nominated_node].name;
  s.submit_time = w.submit_time;
  s.first_start = w.first_start;
  s.finish_time = w.finish_time;
  s.preemptions = w.preemptions;
  s.exit_code = w.exit_code;
  s.reason = std::string(w.message_reason);
  s.message = w.message;
  s.message_facts = w.message_facts;
  if (w.reserved_from >= 0) {
    s.reservation.emplace();
    s.reservation->from = w.reserved_from;
    for (uint32_t id : w.rare().reserved_on) s.reservation->nodes.push_back(node_info[id].name);
  }
  s.requests = w.requests;
  s.limits = w.limits;
  if (w.held) s.eligible_at = w.eligible_at;
  s.pending_total = w.pending_total + (w.phase == Phase::kPending ? now - w.pending_since : 0);
  s.held_total = w.held_total + (w.held ? now - w.pending_since : 0);
  s.borrowed = w.borrowed;
  s.flavor = w.flavor;
  s.run_start = w.run_start;
  s.grace = w.phase == Phase::kTerminating ? w.stop_grace : GraceOf(w);
  return s;
}

Slot State::SlotOf(WorkloadId id) const {
  auto it = slot_of.find(Value(id));
  return it == slot_of.end() ? kNoSlot : it->second;
}

void State::Flush() {
  if (finished.empty()) return;
  std::vector<Slot> done;
  done.swap(finished);
  for (Slot s : done) {
    Workload& w = workloads[s];
    if (events_sink && events_sink->WantsFinalStatus()) events_sink->OnFinished(StatusOf(w));
    quota.Unreserve(w);
    for (Slot v : w.waiting_for) workloads[v].preemptor = kNoSlot;
    if (!w.pdbs.empty())
      pdb_members.erase(std::remove(pdb_members.begin(), pdb_members.end(), s), pdb_members.end());
    if (w.gang != kNoGang) LeaveGang(w);
    if (!fresh.empty()) fresh.erase(std::remove(fresh.begin(), fresh.end(), s), fresh.end());
    by_key.erase(w.key);
    slot_of.erase(Value(w.id));
    w = Workload{};  // a free slot, ready for the next SubmitPod
    free_slots.push_back(s);
  }
}

}  // namespace arbiter::engine
