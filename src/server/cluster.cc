#include "server/cluster.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

#include "adapters/yaml/manifest_loader.h"
#include "core/api_kinds.h"
#include "core/engine/admission.h"
#include "core/engine/fair_share.h"
#include "core/engine/object_commands.h"
#include "core/resources.h"
#include "core/validation.h"
#include "server/pdb_status.h"
#include "server/pod_status.h"
#include "server/pod_update.h"
#include "server/quota_status.h"
#include "sim/recorder.h"

namespace arbiter::server {

using engine::EventType;
using engine::WorkloadId;

// Every kind of the one kinds table (core/api_kinds.h).
const std::vector<KindInfo>& ServedKinds() {
  static const std::vector<KindInfo> kKinds = [] {
    static std::vector<std::string> api_versions;  // owns the strings KindInfo points to
    api_versions.reserve(ApiKinds().size());
    std::vector<KindInfo> v;
    for (const ApiKind& k : ApiKinds()) {
      api_versions.push_back(k.ApiVersion());
      v.push_back({k.kind, api_versions.back().c_str(), k.namespaced});
    }
    return v;
  }();
  return kKinds;
}

const KindInfo* FindKind(const std::string& kind) {
  for (const auto& k : ServedKinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

// ------------------------------------------------------------------ Mutation encoding

namespace {
const char* OpName(Mutation::Op op) {
  switch (op) {
    case Mutation::Op::kCreate:
      return "create";
    case Mutation::Op::kUpdate:
      return "update";
    case Mutation::Op::kDelete:
      return "delete";
    case Mutation::Op::kAdvance:
      return "advance";
  }
  return "?";
}
}  // namespace

std::string Mutation::Encode() const { return WithTime(EncodeBody(), time); }

std::string Mutation::EncodeBody() const {
  Json j = {{"op", OpName(op)}};
  if (op != Op::kAdvance) {
    j["kind"] = kind;
    j["namespace"] = namespace_;
    j["name"] = name;
  }
  if (grace_period) j["gracePeriodMs"] = *grace_period;
  if (force_status) j["status"] = true;
  if (eviction) j["eviction"] = true;
  std::string out = j.dump();
  if (op == Op::kCreate || op == Op::kUpdate) {
    // The object is written after the other fields without being copied into `j`.
    out.pop_back();
    out += ",\"object\":";
    out += object.dump();
    out += '}';
  }
  return out;
}

std::string Mutation::WithTime(const std::string& body, Millis time) {
  // body is a JSON object with at least "op": {"time":T,"op":...}
  return "{\"time\":" + std::to_string(time) + "," + body.substr(1);
}

Result<Mutation> Mutation::Decode(const std::string& text) {
  try {
    Json j = Json::parse(text);
    Mutation m;
    const std::string op = j.at("op").get<std::string>();
    if (op == "create")
      m.op = Op::kCreate;
    else if (op == "update")
      m.op = Op::kUpdate;
    else if (op == "delete")
      m.op = Op::kDelete;
    else if (op == "advance")
      m.op = Op::kAdvance;
    else
      return Result<Mutation>::Error("unknown journal op \"" + op + "\"");
    m.time = j.at("time").get<Millis>();
    m.kind = j.value("kind", "");
    m.namespace_ = j.value("namespace", "");
    m.name = j.value("name", "");
    if (j.contains("object")) m.object = j["object"];
    if (j.contains("gracePeriodMs")) m.grace_period = j["gracePeriodMs"].get<Millis>();
    m.force_status = j.value("status", false);
    m.eviction = j.value("eviction", false);
    return m;
  } catch (const std::exception& e) {
    return Result<Mutation>::Error(std::string("corrupt journal record: ") + e.what());
  }
}

// ------------------------------------------------------------------ the sink

class Cluster::Sink final : public engine::EventSink, public engine::RunSink {
 public:
  explicit Sink(sim::Recorder* rec) : rec_(rec) {}
  void OnEvent(const engine::Event& e) override {
    rec_->OnEvent(e);
    events.push_back(e);
  }
  void OnFinished(const engine::WorkloadStatus& s) override {
    finished.emplace(engine::Value(s.id), s);
  }
  void OnRun(const engine::RunRecord& r) override { rec_->OnRun(r); }

  std::vector<engine::Event> events;
  std::map<uint64_t, engine::WorkloadStatus> finished;

 private:
  sim::Recorder* rec_;
};

Cluster::Cluster(std::string uid_prefix)
    : uid_prefix_(std::move(uid_prefix)),
      engine_(std::make_unique<engine::Engine>()),
      recorder_(std::make_unique<sim::Recorder>(&timers_, false)),
      sink_(std::make_unique<Sink>(recorder_.get())) {
  AttachSinks();
}

Cluster::~Cluster() = default;

void Cluster::AttachSinks() { engine_->SetSinks(sink_.get(), sink_.get()); }

namespace {
std::string FormatUid(const std::string& prefix, uint64_t counter) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%04llx-4%03llx-8000-%012llx", prefix.c_str(),
                static_cast<unsigned long long>((counter >> 48) & 0xffff),
                static_cast<unsigned long long>((counter >> 36) & 0xfff),
                static_cast<unsigned long long>(counter & 0xffffffffffffull));
  return buf;
}
}  // namespace

std::string Cluster::NewUid() { return FormatUid(uid_prefix_, ++uid_counter_); }

std::string Cluster::PeekUid() const { return FormatUid(uid_prefix_, uid_counter_ + 1); }

std::optional<Millis> Cluster::NextDue() {
  std::optional<Millis> t = timers_.Next();
  if (auto w = engine_->NextWakeup()) t = t ? std::min(*t, *w) : *w;
  return t;
}

MutationResult Cluster::Apply(const Mutation& m, const Prepared* prepared) {
  MutationResult r = ApplyShared(m, prepared);
  if (r.stored) r.object = *r.stored;
  return r;
}

MutationResult Cluster::ApplyShared(const Mutation& m, const Prepared* prepared) {
  switch (m.op) {
    case Mutation::Op::kCreate:
    case Mutation::Op::kUpdate:
      return Put(m, prepared);
    case Mutation::Op::kDelete:
      return m.eviction ? Evict(m) : Delete(m);
    case Mutation::Op::kAdvance:
      Advance(m.time);
      return {};
  }
  return {};
}

// ------------------------------------------------------------------ validation

namespace {

void Append(ManifestSet& dst, const ManifestSet& src) {
  auto cat = [](auto& a, const auto& b) { a.insert(a.end(), b.begin(), b.end()); };
  cat(dst.namespaces, src.namespaces);
  cat(dst.nodes, src.nodes);
  cat(dst.pods, src.pods);
  cat(dst.resource_quotas, src.resource_quotas);
  cat(dst.limit_ranges, src.limit_ranges);
  cat(dst.priority_classes, src.priority_classes);
  cat(dst.pdbs, src.pdbs);
  if (src.pool_policy) dst.pool_policy = src.pool_policy;
  cat(dst.elastic_quotas, src.elastic_quotas);
  cat(dst.price_books, src.price_books);
  cat(dst.qos, src.qos);
  cat(dst.pod_groups, src.pod_groups);
  cat(dst.resource_flavors, src.resource_flavors);
}

ApiError Error(ApiError::Reason r, const std::string& kind, const std::string& name,
               std::string message) {
  ApiError e;
  e.reason = r;
  e.kind = kind;
  e.name = name;
  e.message = std::move(message);
  return e;
}

MutationResult Fail(ApiError e) {
  MutationResult r;
  r.error = std::move(e);
  return r;
}

ApiError::Reason FromEngine(StatusCode c) {
  switch (c) {
    case StatusCode::kNotFound:
      return ApiError::Reason::kNotFound;
    case StatusCode::kAlreadyExists:
      return ApiError::Reason::kAlreadyExists;
    case StatusCode::kConflict:
      return ApiError::Reason::kConflict;
    default:
      return ApiError::Reason::kInvalid;
  }
}

bool IsPolicyKind(const std::string& kind) {
  return kind != "Pod" && kind != "Node" && kind != "Event";
}

Json SpecOf(const Json& obj) {
  Json s = obj.contains("spec") ? obj["spec"] : Json::object();
  if (s.is_object()) s.erase("nodeName");
  return s;
}

// The ElasticQuota with the node labels of the stored ResourceFlavors its spec.flavors name (the
// loader resolves flavors within one request, as `arbiter validate` does for a file; here a
// flavor arrived in an earlier request).
ElasticQuota WithFlavors(
    const ElasticQuota& q,
    const std::map<std::string, std::map<ObjectStore::Key, ManifestSet>>& policy) {
  ManifestSet set;
  if (auto it = policy.find("ResourceFlavor"); it != policy.end())
    for (const auto& [key, s] : it->second) Append(set, s);
  set.elastic_quotas.push_back(q);
  ResolveFlavors(&set);
  return set.elastic_quotas.front();
}

bool NamesFlavor(const ElasticQuota& q, const std::string& flavor) {
  for (const auto& f : q.flavors)
    if (f.name == flavor) return true;
  return false;
}

// The pod with its PodGroupRef from the stored PodGroups (the loader resolves groups within one
// request; a pod's group arrived in an earlier one).
Pod WithPodGroup(Pod pod,
                 const std::map<std::string, std::map<ObjectStore::Key, ManifestSet>>& policy) {
  ManifestSet s;
  s.pods.push_back(std::move(pod));
  if (auto groups = policy.find("PodGroup"); groups != policy.end())
    for (const auto& [key, set] : groups->second) Append(s, set);
  ResolvePodGroups(&s);
  return std::move(s.pods.front());
}

}  // namespace

ManifestSet Cluster::PolicyContext(const std::string& skip_kind, const std::string& skip_ns,
                                   const std::string& skip_name) const {
  ManifestSet ctx;
  for (const auto& [kind, objs] : policy_)
    for (const auto& [key, set] : objs)
      if (!(kind == skip_kind && key.first == skip_ns && key.second == skip_name)) Append(ctx, set);
  return ctx;
}

// ------------------------------------------------------------------ create / update

yaml::ManifestLoad Cluster::Load(const std::string& kind, const Json& obj) {
  // The status is the server's (a Node's is its capacity, read as the manifest's); the node a
  // pod is bound to is not part of what was submitted.
  Json in = obj;
  if (kind != "Node") in.erase("status");
  if (kind == "Pod" && in.contains("spec") && in["spec"].is_object()) in["spec"].erase("nodeName");
  yaml::ManifestLoad load;
  yaml::LoadManifestText(in.dump(), "request", &load);
  load.ReleaseSources();
  return load;
}

Cluster::Prepared Cluster::Prepare(const Mutation& m) {
  Prepared p;
  if (m.op != Mutation::Op::kCreate && m.op != Mutation::Op::kUpdate) return p;
  const KindInfo* info = FindKind(m.kind);
  if (!info || !m.object.is_object() || !m.object.contains("metadata") ||
      !m.object["metadata"].is_object())
    return p;
  Json obj = m.object;
  Json& meta = obj["metadata"];
  // The namespace as Put settles it.
  if (info->namespaced) {
    if (meta.value("namespace", "").empty())
      meta["namespace"] = m.namespace_.empty() ? "default" : m.namespace_;
  } else {
    meta.erase("namespace");
  }
  p.load = Load(m.kind, obj);
  return p;
}

MutationResult Cluster::Put(const Mutation& m, const Prepared* prepared) {
  const KindInfo* info = FindKind(m.kind);
  if (!info || m.kind == "Event")
    return Fail(Error(ApiError::Reason::kMethodNotAllowed, m.kind, m.name,
                      "the server does not allow this method on the requested resource"));
  Json obj = m.object;
  if (!obj.is_object())
    return Fail(Error(ApiError::Reason::kBadRequest, m.kind, m.name, "the body is not an object"));
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = Json::object();
  Json& meta = obj["metadata"];
  const std::string name = meta.value("name", "");
  if (name.empty() && m.op == Mutation::Op::kCreate && meta.contains("generateName"))
    return Fail(
        Error(ApiError::Reason::kBadRequest, m.kind, "", "metadata.generateName is not supported"));
  if (!m.name.empty() && name != m.name)
    return Fail(Error(ApiError::Reason::kBadRequest, m.kind, m.name,
                      "the name of the object (" + name + ") does not match the name on the URL (" +
                          m.name + ")"));
  std::string ns;
  if (info->namespaced) {
    ns = meta.value("namespace", "");
    if (ns.empty()) ns = m.namespace_.empty() ? "default" : m.namespace_;
    if (!m.namespace_.empty() && ns != m.namespace_)
      return Fail(Error(
          ApiError::Reason::kBadRequest, m.kind, name,
          "the namespace of the provided object does not match the namespace sent on the request"));
    meta["namespace"] = ns;
    if (!store_.Get("Namespace", "", ns))
      return Fail(Error(ApiError::Reason::kNotFound, "Namespace", ns,
                        "namespaces \"" + ns + "\" not found"));
  } else {
    meta.erase("namespace");
  }
  const Json* existing = store_.Get(m.kind, ns, name);
  if (m.op == Mutation::Op::kCreate && existing)
    return Fail(Error(ApiError::Reason::kAlreadyExists, m.kind, name, ""));
  if (m.op == Mutation::Op::kUpdate && !existing)
    return Fail(Error(ApiError::Reason::kNotFound, m.kind, name, ""));
  if (existing && meta.contains("resourceVersion") && meta["resourceVersion"].is_string() &&
      !meta["resourceVersion"].get<std::string>().empty() &&
      meta["resourceVersion"] != existing->at("metadata").at("resourceVersion"))
    return Fail(Error(ApiError::Reason::kConflict, m.kind, name, ""));
  if (existing && existing->at("metadata").contains("deletionTimestamp") && m.kind == "Pod")
    return Fail(Error(ApiError::Reason::kConflict, m.kind, name, "the pod is being deleted"));

  // Server-owned fields.
  if (m.kind == "Pod" && m.op == Mutation::Op::kCreate) obj.erase("status");
  if (existing) {
    const Json& old = existing->at("metadata");
    meta["uid"] = old.at("uid");
    meta["creationTimestamp"] = old.at("creationTimestamp");
    if (old.contains("generation")) meta["generation"] = old["generation"];
    if (m.kind != "Node" && existing->contains("status")) obj["status"] = (*existing)["status"];
    if (m.kind == "Pod" && existing->contains("spec") && existing->at("spec").contains("nodeName"))
      obj["spec"]["nodeName"] = existing->at("spec").at("nodeName");
  }

  // Validation, exactly as `arbiter validate`: the loader, then the cross-object rules.
  yaml::ManifestLoad loaded;
  if (!prepared || !prepared->load) loaded = Load(m.kind, obj);
  const yaml::ManifestLoad& load = prepared && prepared->load ? *prepared->load : loaded;
  Diagnostics diags = load.diagnostics;
  if (load.ok()) {
    ManifestSet ctx = PolicyContext(m.kind, ns, name);
    // LimitRanger admission on a pod's create, as kube-apiserver runs it: a pod the namespace's
    // LimitRanges refuse is never created (403, or 422 when a defaulted limit falls below its
    // request), where `arbiter validate` and `arbiter sim` warn and reject it at submission.
    if (m.kind == "Pod" && m.op == Mutation::Op::kCreate && load.set.pods.size() == 1) {
      std::map<std::string, const LimitRange*> by_name;  // the engine's order: by name
      for (const auto& lr : ctx.limit_ranges)
        if (lr.meta.namespace_ == ns) by_name.emplace(lr.meta.name, &lr);
      std::vector<const LimitRange*> ranges;
      for (const auto& [lr_name, lr] : by_name) ranges.push_back(lr);
      engine::AdmittedPod admitted;
      const std::string why = engine::ApplyLimitRanges(load.set.pods[0], ranges, &admitted);
      const std::string invalid = "Pod \"" + name + "\" is invalid: ";
      if (why.rfind(invalid, 0) == 0)
        return Fail(Error(ApiError::Reason::kInvalid, m.kind, name, why.substr(invalid.size())));
      if (!why.empty()) return Fail(Error(ApiError::Reason::kForbidden, m.kind, name, why));
    }
    ManifestSet only = load.set;
    Append(ctx, only);
    ResolvePodGroups(&ctx);  // a pod's group arrived in an earlier request
    Diagnostics cross;
    ValidateManifestSet(ctx, nullptr, &cross);
    const std::string display = info->namespaced ? ns + "/" + name : name;
    for (auto& d : cross.items) {
      if (d.kind != m.kind || d.name != display) continue;
      // Objects arrive one request at a time (kubectl apply sends them in file order), so a QoS
      // may name in its preempt list a QoS applied after it: that reference is a warning here
      // (the engine reads preempt lists by name at each decision; an absent QoS preempts nothing).
      if (m.kind == "QoS" && d.field_path.rfind("spec.preempt", 0) == 0 &&
          d.message.rfind("unknown QoS", 0) == 0)
        d.severity = Severity::kWarning;
      // A PodGroup comes before its pods: "minMember is 3 but 0 pod(s) carry the label" is the
      // normal state of a new group here, not a warning.
      if (m.kind == "PodGroup" && d.severity == Severity::kWarning &&
          d.field_path == "spec.minMember")
        continue;
      diags.Add(std::move(d));
    }
  }
  MutationResult result;
  for (const auto& d : diags.items)
    if (d.severity == Severity::kWarning)
      result.warnings.push_back(d.field_path.empty() ? d.message : d.field_path + ": " + d.message);
  if (diags.HasErrors()) {
    ApiError e = Error(ApiError::Reason::kInvalid, m.kind, name, "");
    for (auto& d : diags.items)
      if (d.severity == Severity::kError) e.diagnostics.Add(std::move(d));
    return Fail(std::move(e));
  }

  // The engine's command.
  const Millis t = m.time;
  const ManifestSet& set = load.set;
  Status s;
  bool spec_changed = !existing || SpecOf(*existing) != SpecOf(obj);
  std::optional<uint64_t> new_workload;
  bool deadline_set = false;  // SetPodDeadline applied: backfill reservations may move
  if (m.kind == "Pod" && existing && spec_changed) {  // only what Kubernetes allows (pod_update.h)
    const auto errors = ValidatePodSpecUpdate(SpecOf(*existing), SpecOf(obj));
    if (!errors.empty()) {
      ApiError e = Error(ApiError::Reason::kInvalid, m.kind, name, "");
      for (const auto& pe : errors)
        e.diagnostics.Add(Diagnostic{Severity::kError, "request", 1, "Pod", ns + "/" + name,
                                     pe.field, pe.message});
      return Fail(std::move(e));
    }
  }
  if (m.kind == "PriorityClass" && existing) {  // Kubernetes' ValidatePriorityClassUpdate
    ApiError e = Error(ApiError::Reason::kInvalid, m.kind, name, "");
    auto refuse = [&](const std::string& field, const std::string& message) {
      e.diagnostics.Add(
          Diagnostic{Severity::kError, "request", 1, "PriorityClass", name, field, message});
    };
    if (existing->value("value", Json()) != obj.value("value", Json()))
      refuse("value", "Forbidden: may not be changed in an update.");
    const std::string was = existing->value("preemptionPolicy", "PreemptLowerPriority");
    const std::string now = obj.value("preemptionPolicy", "PreemptLowerPriority");
    if (was != now)
      refuse("preemptionPolicy", "Invalid value: \"" + now + "\": field is immutable");
    if (!e.diagnostics.items.empty()) return Fail(std::move(e));
  }
  if (m.kind == "PoolPolicy" && !existing && !store_.List("PoolPolicy", "").empty())
    return Fail(Error(ApiError::Reason::kConflict, m.kind, name,
                      "a PoolPolicy exists already (at most one)"));
  if (m.dry_run) {  // validated: the object as it would be stored, and nothing changes
    if (!existing) {
      meta.erase("resourceVersion");
      meta["uid"] = PeekUid();
      meta["creationTimestamp"] = KubeTime(t);
      meta["generation"] = 1;
      if (m.kind == "Pod") {
        engine::WorkloadStatus pending;
        pending.phase = engine::Phase::kPending;
        SetPodStatus(obj, pending, "", t);
      }
    } else {
      meta["resourceVersion"] = existing->at("metadata").at("resourceVersion");
      if (spec_changed) meta["generation"] = meta.value("generation", 1) + 1;
    }
    result.object = std::move(obj);
    return result;
  }
  if (m.kind == "Pod") {
    if (!existing) {
      const Pod pod = WithPodGroup(set.pods.at(0), policy_);
      const WorkloadId id = engine_->next_workload_id();
      new_workload = engine::Value(id);
      pod_of_[*new_workload] = {ns, name};
      workload_of_[{ns, name}] = *new_workload;
      recorder_->Submitted(sim::WorkSpec::Of(pod), pod.sim.usage);
      s = engine_->Apply(engine::At(t, engine::SubmitPod{pod, false, {}}));
      if (!s.ok()) {
        recorder_->works.pop_back();
        pod_of_.erase(*new_workload);
        workload_of_.erase({ns, name});
      }
    } else if (const auto deadline = set.pods.at(0).active_deadline; deadline && spec_changed) {
      // spec.activeDeadlineSeconds set or lowered (pod_update.h allows nothing else for it):
      // backfill plans with the new limit. A finished pod has no workload any more.
      if (auto w = workload_of_.find({ns, name}); w != workload_of_.end()) {
        s = engine_->Apply(engine::At(t, engine::SetPodDeadline{WorkloadId{w->second}, *deadline}));
        deadline_set = s.ok();
      }
    }
  } else if (m.kind == "Namespace") {
    s = engine_->Apply(engine::At(t, engine::UpsertNamespace{set.namespaces.at(0)}));
  } else if (m.kind == "Node") {
    s = engine_->Apply(engine::At(t, engine::UpsertNode{set.nodes.at(0), 0}));
  } else if (m.kind == "ResourceQuota") {
    s = engine_->Apply(engine::At(t, engine::UpsertResourceQuota{set.resource_quotas.at(0)}));
  } else if (m.kind == "LimitRange") {
    s = engine_->Apply(engine::At(t, engine::UpsertLimitRange{set.limit_ranges.at(0)}));
  } else if (m.kind == "PriorityClass") {
    s = engine_->Apply(engine::At(t, engine::UpsertPriorityClass{set.priority_classes.at(0)}));
  } else if (m.kind == "PodDisruptionBudget") {
    s = engine_->Apply(engine::At(t, engine::UpsertPodDisruptionBudget{set.pdbs.at(0)}));
  } else if (m.kind == "PoolPolicy") {
    s = engine_->Apply(engine::At(t, engine::UpsertPoolPolicy{*set.pool_policy}));
  } else if (m.kind == "ElasticQuota") {
    s = engine_->Apply(
        engine::At(t, engine::UpsertElasticQuota{WithFlavors(set.elastic_quotas.at(0), policy_)}));
  } else if (m.kind == "ResourceFlavor" && existing && spec_changed) {
    // The ElasticQuotas that name it take its new node labels.
    ManifestSet now = PolicyContext("", "", "");
    now.resource_flavors.erase(
        std::remove_if(now.resource_flavors.begin(), now.resource_flavors.end(),
                       [&](const ResourceFlavor& f) { return f.meta.name == name; }),
        now.resource_flavors.end());
    Append(now, set);
    ResolveFlavors(&now);
    for (const auto& q : now.elastic_quotas)
      if (s.ok() && NamesFlavor(q, name))
        s = engine_->Apply(engine::At(t, engine::UpsertElasticQuota{q}));
  } else if (m.kind == "PriceBook") {
    s = engine_->Apply(engine::At(t, engine::UpsertPriceBook{set.price_books.at(0)}));
  } else if (m.kind == "QoS") {
    s = engine_->Apply(engine::At(t, engine::UpsertQoS{set.qos.at(0)}));
  }
  if (!s.ok()) return Fail(Error(FromEngine(s.code()), m.kind, name, s.message()));

  if (IsPolicyKind(m.kind)) policy_[m.kind][{ns, name}] = set;
  if (m.kind == "ElasticQuota")  // the others' shares have new denominators
    for (const auto& [key, entry] : policy_[m.kind]) quota_dirty_.insert(key.first);
  if (m.kind == "ResourceQuota" || m.kind == "ElasticQuota" || m.kind == "PodDisruptionBudget" ||
      m.kind == "Pod")
    quota_dirty_.insert(ns);
  if (!existing) {
    meta["uid"] = NewUid();
    meta["creationTimestamp"] = KubeTime(t);
    meta["generation"] = 1;
  } else if (spec_changed) {
    meta["generation"] = meta.value("generation", 1) + 1;
  }
  if (m.kind == "Node") {
    Json& st = obj["status"];
    if (!st.is_object()) st = Json::object();
    st["conditions"] = Json::array({{{"type", "Ready"},
                                     {"status", "True"},
                                     {"reason", "KubeletReady"},
                                     {"message", "virtual node (arbiter serve)"},
                                     {"lastHeartbeatTime", KubeTime(t)},
                                     {"lastTransitionTime", meta["creationTimestamp"]}}});
  }
  if (m.kind == "Pod" && !existing) {
    engine::WorkloadStatus pending;
    pending.phase = engine::Phase::kPending;
    // Kubernetes' Priority admission: spec.priority, and the class (the global default when
    // none is named) and its preemption policy, as the engine resolved them at submission.
    if (auto st = engine_->Get(WorkloadId{*new_workload}); st && obj["spec"].is_object()) {
      Json& spec = obj["spec"];
      spec["priority"] = st->priority;
      if (!st->priority_class.empty()) spec["priorityClassName"] = st->priority_class;
      if (!spec.contains("preemptionPolicy"))
        spec["preemptionPolicy"] =
            st->preemption_policy == PreemptionPolicy::kNever ? "Never" : "PreemptLowerPriority";
    }
    SetPodStatus(obj, pending, "", t);
  }
  store_.Put(m.kind, ns, name, std::move(obj));
  (void)engine_->Apply(engine::At(t, engine::Tick{}));
  Sync(t);
  if (deadline_set) {
    // A reservation that moves changes a pending pod's reason text without an event (the engine
    // reports each kind of reason once per pending spell): pending pods are refreshed here.
    for (const auto& [id, key] : pod_of_) {
      const Json* stored = store_.Get("Pod", key.first, key.second);
      const std::optional<engine::WorkloadStatus> st = engine_->Get(WorkloadId{id});
      if (!stored || !st || st->phase != engine::Phase::kPending) continue;
      Json pod = *stored;
      SetPodStatus(pod, *st, "", t);
      if (pod != *stored) store_.Put("Pod", key.first, key.second, std::move(pod));
    }
  }
  result.stored = store_.Share(m.kind, ns, name);
  return result;
}

// ------------------------------------------------------------------ delete

MutationResult Cluster::Delete(const Mutation& m) {
  const KindInfo* info = FindKind(m.kind);
  if (!info || m.kind == "Event")
    return Fail(Error(ApiError::Reason::kMethodNotAllowed, m.kind, m.name,
                      "the server does not allow this method on the requested resource"));
  const std::string ns = info->namespaced ? (m.namespace_.empty() ? "default" : m.namespace_) : "";
  const Json* existing = store_.Get(m.kind, ns, m.name);
  if (!existing) return Fail(Error(ApiError::Reason::kNotFound, m.kind, m.name, ""));
  const Millis t = m.time;
  MutationResult result;
  if (m.dry_run) {  // found: answered with the object as it is, nothing changes
    result.object = *existing;
    if (m.kind == "Pod" && workload_of_.count({ns, m.name}) && !PodFinished(*existing) &&
        existing->at("status").value("phase", "") != "Pending")
      result.object["metadata"]["deletionTimestamp"] = KubeTime(t);
    return result;
  }
  if (m.kind == "ResourceFlavor")  // Kueue's resource-in-use finalizer: not while a quota names it
    if (auto it = policy_.find("ElasticQuota"); it != policy_.end())
      for (const auto& [key, set] : it->second)
        for (const auto& q : set.elastic_quotas)
          if (NamesFlavor(q, m.name))
            return Fail(Error(ApiError::Reason::kConflict, m.kind, m.name,
                              "ElasticQuota " + q.meta.namespace_ + "/" + q.meta.name +
                                  " names it in spec.flavors; delete or change that first"));
  result.stored = store_.Share(m.kind, ns, m.name);
  Status s;
  if (m.kind == "Pod" || m.kind == "PodDisruptionBudget") quota_dirty_.insert(ns);
  if (m.kind == "Pod") {
    auto w = workload_of_.find({ns, m.name});
    if (w == workload_of_.end()) {
      store_.Remove("Pod", ns, m.name);
    } else {
      s = engine_->Apply(engine::At(t, engine::DeletePod{WorkloadId{w->second}, m.grace_period}));
      if (!s.ok()) return Fail(Error(FromEngine(s.code()), m.kind, m.name, s.message()));
      if (!sink_->finished.count(w->second)) {
        Json pod = *existing;
        pod["metadata"]["deletionTimestamp"] = KubeTime(t);
        pod["metadata"]["deletionGracePeriodSeconds"] =
            m.grace_period ? *m.grace_period / 1000 : 30;
        store_.Put("Pod", ns, m.name, std::move(pod));
      }
    }
  } else if (m.kind == "Namespace") {
    s = engine_->Apply(engine::At(t, engine::DeleteNamespace{m.name}));
    if (!s.ok() && s.code() != StatusCode::kNotFound)
      return Fail(Error(FromEngine(s.code()), m.kind, m.name, s.message()));
    // The namespace controller's work, at once: every namespaced object goes; running pods stay
    // (being deleted) until they exit.
    for (const auto& k : ServedKinds()) {
      if (!k.namespaced) continue;
      std::vector<std::string> names;
      for (const Json* o : store_.List(k.kind, m.name))
        names.push_back(o->at("metadata").at("name"));
      for (const auto& n : names) {
        if (k.kind == std::string("Pod") && workload_of_.count({m.name, n}) &&
            !sink_->finished.count(workload_of_[{m.name, n}])) {
          Json pod = *store_.Get("Pod", m.name, n);
          pod["metadata"]["deletionTimestamp"] = KubeTime(t);
          store_.Put("Pod", m.name, n, std::move(pod));
          continue;
        }
        if (k.kind == std::string("Pod") && workload_of_.count({m.name, n}))
          continue;  // Sync removes it
        store_.Remove(k.kind, m.name, n);
        policy_[k.kind].erase({m.name, n});
      }
    }
    store_.Remove("Namespace", "", m.name);
  } else {
    if (auto op = engine::DeleteCommand(m.kind, ns, m.name))
      s = engine_->Apply(engine::Command{t, std::move(*op)});
    if (!s.ok()) return Fail(Error(FromEngine(s.code()), m.kind, m.name, s.message()));
    store_.Remove(m.kind, ns, m.name);
    if (IsPolicyKind(m.kind)) policy_[m.kind].erase({ns, m.name});
    if (m.kind == "ElasticQuota")
      for (const auto& [key, set] : policy_[m.kind]) quota_dirty_.insert(key.first);
  }
  (void)engine_->Apply(engine::At(t, engine::Tick{}));
  Sync(t);
  if (auto now = store_.Share(m.kind, ns, m.name)) result.stored = std::move(now);
  return result;
}

// ------------------------------------------------------------------ the clock

void Cluster::Advance(Millis t) {
  while (auto due = timers_.PopDue(t)) {
    engine::CommandOp op = due->kind == sim::WorkTimers::Kind::kComplete
                               ? engine::CommandOp(engine::PodFinished{due->workload, 0})
                               : engine::CommandOp(engine::VictimExited{due->workload});
    (void)engine_->Apply(engine::Command{due->time, std::move(op)});
  }
  (void)engine_->Apply(engine::At(t, engine::Tick{}));
  Sync(t);
}

// ------------------------------------------------------------------ engine outputs -> objects

void Cluster::AddEvent(const engine::Event& e, const Json& involved, Millis t) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(++event_counter_));
  const std::string name = involved.at("metadata").value("name", "") + suffix;
  Json ev = KubeEvent(e, involved, name, t);
  if (ev.is_null()) return;
  ev["metadata"]["uid"] = NewUid();
  const std::string ns = ev["metadata"]["namespace"];
  store_.Put("Event", ns, name, std::move(ev));
  events_.push_back({ns, name});
  while (events_.size() > kMaxEvents) {
    store_.Remove("Event", events_.front().first, events_.front().second);
    events_.pop_front();
  }
}

void Cluster::Sync(Millis t) {
  std::vector<engine::Event> events = std::move(sink_->events);
  sink_->events.clear();
  std::map<uint64_t, engine::WorkloadStatus> finished = std::move(sink_->finished);
  sink_->finished.clear();
  std::map<uint64_t, std::string> disruption;
  std::vector<uint64_t> touched;
  for (const auto& e : events) {
    // The decision digest: FNV-1a over the event's identity.
    const std::string line = std::to_string(e.time) + " " + engine::ToString(e.type) + " " +
                             std::to_string(engine::Value(e.workload)) + " " + e.node + " " + e.by;
    for (unsigned char c : line) decision_digest_ = (decision_digest_ ^ c) * 1099511628211ull;
    decision_digest_ = (decision_digest_ ^ '\n') * 1099511628211ull;
    ++decision_count_;
    {
      std::optional<engine::WorkloadStatus> st;  // a bind's workload, for the wait histogram
      if (e.type == EventType::kScheduled) {
        auto fin = finished.find(engine::Value(e.workload));
        st = fin != finished.end() ? std::optional(fin->second) : engine_->Get(e.workload);
      }
      stats_.Record(e, st ? &*st : nullptr);
    }
    if (e.workload == engine::kNoWorkload) {
      if (const Json* node = store_.Get("Node", "", e.node)) AddEvent(e, *node, t);
      continue;
    }
    const uint64_t id = engine::Value(e.workload);
    touched.push_back(id);
    if (e.type == EventType::kPreempted || e.type == EventType::kReclaimed)
      disruption[id] = e.Message();
    auto key = pod_of_.find(id);
    if (key == pod_of_.end()) continue;
    if (const Json* pod = store_.Get("Pod", key->second.first, key->second.second))
      AddEvent(e, *pod, t);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (uint64_t id : touched) {
    auto key = pod_of_.find(id);
    if (key == pod_of_.end()) continue;
    const auto [ns, name] = key->second;
    quota_dirty_.insert(ns);
    const Json* stored = store_.Get("Pod", ns, name);
    auto fin = finished.find(id);
    std::optional<engine::WorkloadStatus> st;
    if (fin != finished.end())
      st = fin->second;
    else
      st = engine_->Get(WorkloadId{id});
    if (!stored || !st) continue;
    NotePending(id, *st);
    if (fin != finished.end()) {
      pod_of_.erase(id);
      workload_of_.erase({ns, name});
      if (st->phase == engine::Phase::kDeleted) {
        store_.Remove("Pod", ns, name);
        continue;
      }
    }
    Json pod = *stored;
    auto d = disruption.find(id);
    SetPodStatus(pod, *st, d == disruption.end() ? "" : d->second, t);
    if (pod != *stored) store_.Put("Pod", ns, name, std::move(pod));
  }
  // A cycle that only took arrivals (no release, no reservation, no gang) attempted only them:
  // no other pending pod's text moved (engine/queue.cc RunCycle).
  bool arrivals_only = reserved_.empty() && engine_->policy().min_runtime == 0;
  bool arrived = false;
  for (const auto& e : events) {
    arrived = arrived || e.type == EventType::kSubmitted;
    if (e.type != EventType::kSubmitted && e.type != EventType::kScheduled &&
        e.type != EventType::kFailedScheduling && e.type != EventType::kQuotaExceeded &&
        e.type != EventType::kBorrowed)
      arrivals_only = false;
  }
  for (uint64_t id : touched) {
    if (!arrivals_only) break;
    auto key = pod_of_.find(id);
    const Json* pod =
        key == pod_of_.end() ? nullptr : store_.Get("Pod", key->second.first, key->second.second);
    if (pod && pod->contains("metadata") && pod->at("metadata").contains("labels") &&
        pod->at("metadata").at("labels").contains(kPodGroupLabel))
      arrivals_only = false;
  }
  // (With a minimum runtime, a wake-up re-runs the queue with no event: look every time.)
  const bool may_move = !events.empty() || engine_->policy().min_runtime > 0;
  if (may_move && !(arrived && arrivals_only)) RefreshPending(touched, t);
  RefreshPdbs(t);
  RefreshQuotas();
}

// The engine emits one event per kind of reason per pending spell, but the text of a pending
// workload's reason moves without one (gang member counts, cohort amounts, node counts): after a
// cycle that decided anything, every other pending pod whose message or reason differs from the
// engine's is rewritten. O(pending) engine look-ups per such cycle; a cycle with no events, or
// one that only took arrivals (Sync), costs nothing (bench_serve BM_ClusterCreatePodBehindQueue).
void Cluster::RefreshPending(const std::vector<uint64_t>& touched, Millis t) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    const uint64_t id = *it;
    if (std::binary_search(touched.begin(), touched.end(), id)) {
      ++it;
      continue;
    }
    auto key = pod_of_.find(id);
    const Json* stored =
        key == pod_of_.end() ? nullptr : store_.Get("Pod", key->second.first, key->second.second);
    std::optional<engine::WorkloadStatus> st = engine_->Get(WorkloadId{id});
    if (!stored || !st || st->phase != engine::Phase::kPending) {
      reserved_.erase(id);
      it = pending_.erase(it);  // its next event brings it up to date
      continue;
    }
    ++it;
    NotePending(id, *st);
    static const Json kNone;
    const Json& status = stored->contains("status") ? stored->at("status") : kNone;
    if (status.is_object() && status.value("message", "") == st->message &&
        status.value("nominatedNodeName", "") == st->nominated_node)
      continue;
    Json pod = *stored;
    SetPodStatus(pod, *st, "", t);
    if (pod != *stored) store_.Put("Pod", key->second.first, key->second.second, std::move(pod));
  }
}

void Cluster::NotePending(uint64_t id, const engine::WorkloadStatus& s) {
  const bool pending = s.phase == engine::Phase::kPending;
  if (pending)
    pending_.insert(id);
  else
    pending_.erase(id);
  if (pending && s.reservation)
    reserved_.insert(id);
  else
    reserved_.erase(id);
}

void Cluster::RefreshQuotas() {
  if (quota_dirty_.empty()) return;
  // Status from the engine's answers (usage as its quota book charges it), formatted only.
  const std::vector<engine::ElasticQuotaUsage> elastic = engine_->elastic_quota_usages();
  const std::vector<engine::ResourceQuotaUsage> quotas = engine_->resource_quota_usages();
  std::multimap<std::string_view, size_t> elastic_of, quotas_of;  // by namespace
  for (size_t i = 0; i < elastic.size(); ++i) elastic_of.emplace(elastic[i].namespace_, i);
  for (size_t i = 0; i < quotas.size(); ++i) quotas_of.emplace(quotas[i].namespace_, i);
  for (const auto& ns : quota_dirty_) {
    // ElasticQuota status.used: what the namespace's running workloads use of each resource of
    // its min and max; status.fairShare: the weighted dominant-resource share of what the cohort
    // lends (core/engine/fair_share.h), as the dashboard and `arbiter sim`'s report give it.
    for (auto [at, end] = elastic_of.equal_range(ns); at != end; ++at) {
      const engine::ElasticQuotaUsage& u = elastic[at->second];
      const Json* stored = store_.Get("ElasticQuota", ns, u.name);
      if (!stored) continue;
      Json used = Json::object();
      for (const auto& [r, v] : u.min.entries()) used[r] = FormatResourceQuantity(r, u.used.Get(r));
      if (u.max)
        for (const auto& [r, v] : u.max->entries())
          used[r] = FormatResourceQuantity(r, u.used.Get(r));
      Json status = {{"used", used}};
      if (!u.cohort.empty()) status["fairShare"] = engine::FormatShare(u.fair_share);
      if (stored->contains("status") && (*stored)["status"] == status) continue;
      Json q = *stored;
      q["status"] = std::move(status);
      store_.Put("ElasticQuota", ns, u.name, std::move(q));
    }
    for (auto [at, end] = quotas_of.equal_range(ns); at != end; ++at) {
      const engine::ResourceQuotaUsage& u = quotas[at->second];
      const Json* stored = store_.Get("ResourceQuota", ns, u.name);
      if (!stored) continue;
      Json status = QuotaStatus(u);
      if (stored->contains("status") && (*stored)["status"] == status) continue;
      Json q = *stored;
      q["status"] = std::move(status);
      store_.Put("ResourceQuota", ns, u.name, std::move(q));
    }
  }
  quota_dirty_.clear();
}

}  // namespace arbiter::server
