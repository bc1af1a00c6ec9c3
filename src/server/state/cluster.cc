#include "server/state/cluster.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

#include "adapters/json/member.h"
#include "adapters/yaml/manifest_loader.h"
#include "core/api_kinds.h"
#include "core/engine/admission.h"
#include "core/engine/fair_share.h"
#include "core/resources.h"
#include "core/validation.h"
#include "driver/object_commands.h"
#include "driver/recorder.h"
#include "server/state/api_status.h"
#include "server/state/cluster_target.h"
#include "server/state/job_controller.h"
#include "server/state/job_pod_tables.h"
#include "server/state/pdb_status.h"
#include "server/state/pod_defaults.h"
#include "server/state/pod_status.h"
#include "server/state/pod_update.h"
#include "server/state/quota_status.h"

namespace arbiter::server {

using engine::EventType;
using engine::WorkloadId;

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
  if (!propagation.empty()) j["propagationPolicy"] = propagation;
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
    m.propagation = j.value("propagationPolicy", "");
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
  explicit Sink(driver::Recorder* rec) : rec_(rec) {}
  void OnEvent(const engine::Event& e) override {
    rec_->OnEvent(e);
    events.push_back(e);
  }
  void OnFinished(const engine::WorkloadStatus& s) override {
    finished.emplace(engine::Value(s.id), s);
  }
  void OnRestated(engine::WorkloadId id) override { restated.push_back(engine::Value(id)); }
  void OnRun(const engine::RunRecord& r) override { rec_->OnRun(r); }

  std::vector<engine::Event> events;
  std::map<uint64_t, engine::WorkloadStatus> finished;
  std::vector<uint64_t> restated;  // ids, repeats possible

 private:
  driver::Recorder* rec_;
};

Cluster::Cluster(std::string uid_prefix)
    : uid_prefix_(std::move(uid_prefix)),
      engine_(std::make_unique<engine::Engine>()),
      recorder_(std::make_unique<driver::Recorder>(&timers_, false)),
      sink_(std::make_unique<Sink>(recorder_.get())) {
  AttachSinks();
  job_pods_ = std::make_unique<JobPodTables>();
  IndexJobs();
  store_.AddIndex("Pod", PodNodeName, false);  // lists of one node's pods (list_pages.h)
  store_.SetCompact({"Pod"}, kHotTrees);
  store_.SetTextKinds({"Event"});
  store_.Observe("Pod", [this](const ObjectStore::Key& key, const Json* was, const Json* now) {
    CountForBudgets(key.first, was, now);
    NoteJobPod(key, was, now);
  });
  store_.Observe("PodDisruptionBudget",
                 [this](const ObjectStore::Key& key, const Json*, const Json*) {
                   pdbs_dirty_.insert(key);  // its status is made again (RefreshPdbs)
                 });
  // However a Job goes (a delete, the last of a Foreground delete's pods, its namespace's
  // delete), what was kept of its pods goes with it.
  store_.Observe("Job", [this](const ObjectStore::Key& key, const Json* was, const Json* now) {
    if (was && !now) DropJobPods(key.first, was->at("metadata").value("uid", ""));
  });
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
  if (auto j = NextJobDeadline()) t = t ? std::min(*t, *j) : *j;
  return t;
}

MutationResult Cluster::Apply(const Mutation& m, const Prepared* prepared) {
  MutationResult r = ApplyShared(m, prepared);
  if (r.stored) r.object = *r.stored;
  return r;
}

MutationResult Cluster::ApplyShared(const Mutation& m, const Prepared* prepared) {
  MutationResult r = ApplySteps(m, prepared);
  store_.Trim();  // no `const Json*` of the store is held between mutations
  return r;
}

MutationResult Cluster::ApplySteps(const Mutation& m, const Prepared* prepared) {
  MutationResult r;
  if (!play_) tape_.Clear();
  // A Job's metadata.generation before this mutation (its spec's changes bump it): -1 if none.
  const KindInfo* kind = FindKind(m.kind);
  const bool job = kind && kind->id == KindId::kJob;
  int64_t generation_was = -1;
  if (job && (m.op == Mutation::Op::kCreate || m.op == Mutation::Op::kUpdate)) {
    const Json meta = m.object.is_object() ? m.object.value("metadata", Json::object()) : Json();
    std::string ns = m.namespace_, name = m.name;
    if (ns.empty() && meta.is_object()) ns = meta.value("namespace", "");
    if (name.empty() && meta.is_object()) name = meta.value("name", "");
    if (const Json* was = store_.Get("Job", ns.empty() ? "default" : ns, name))
      generation_was = was->at("metadata").value("generation", int64_t{1});
  }
  switch (m.op) {
    case Mutation::Op::kCreate:
    case Mutation::Op::kUpdate:
      r = Put(m, prepared);
      break;
    case Mutation::Op::kDelete:
      r = m.eviction ? Evict(m) : Delete(m);
      break;
    case Mutation::Op::kAdvance:
      Advance(m.time);
      break;
  }
  if (!r.ok() || m.dry_run) return r;
  // The Job controller's turn, at the same instant (its own creates and deletes are Put and
  // Delete steps of this mutation: a replay makes them again). A Job filling or retrying is the
  // clock's, or this mutation's if it created, deleted, or changed the spec of that Job (RunJobs;
  // a label or status write leaves it to the clock).
  std::optional<ObjectStore::Key> own;
  if (job) {
    if (!r.stored || m.op == Mutation::Op::kDelete)
      own = ObjectStore::Key{m.namespace_.empty() ? "default" : m.namespace_, m.name};
    else if (r.stored->at("metadata").value("generation", int64_t{1}) != generation_was)
      own = ObjectStore::Key{r.stored->at("metadata").value("namespace", ""),
                             r.stored->at("metadata").value("name", "")};
  }
  RunJobs(m.time, m.op == Mutation::Op::kAdvance, own);
  if (!terminating_namespaces_.empty()) PurgeNamespaces();
  if (const KindInfo* k = FindKind(m.kind); r.stored && k && k->id == KindId::kJob)
    if (auto now = store_.Share(m.kind, r.stored->at("metadata").value("namespace", ""),
                                r.stored->at("metadata").value("name", ""))) {
      r.stored = std::move(now);
      r.stored_object = nullptr;  // the object as of before the Job controller's turn
    }
  return r;
}

// ------------------------------------------------------------------ the engine's commands

Status Cluster::Exec(const engine::Command& c) {
  if (!play_) {
    Status s = engine_->Apply(c);
    tape_.Add(c);
    return s;
  }
  const CommandTape::Entry* e = play_->Next();
  if (!e || e->refused || e->command.op.index() != c.op.index())
    return PlayMismatch(std::string("it has ") +
                        (!e           ? "no more commands"
                         : e->refused ? "a refusal"
                                      : engine::CommandName(e->command)) +
                        " where the replay gives the engine " + engine::CommandName(c));
  return engine_->Apply(e->command);
}

Status Cluster::PlayMismatch(const std::string& what) {
  Status s = Status::Internal("the record's commands do not match the replay: " + what +
                              " (command " + std::to_string(play_->played()) + ")");
  if (play_error_.ok()) play_error_ = s;
  return s;
}

Status Cluster::Replay(const Mutation& m, CommandTape& tape) {
  play_ = &tape;
  play_error_ = Status::Ok();
  const MutationResult r = ApplyShared(m);
  play_ = nullptr;
  if (!play_error_.ok()) return play_error_;
  if (!r.ok())
    return Status::Internal(r.error->message.empty()
                                ? "refused (" + r.error->kind + " " + r.error->name + ")"
                                : r.error->message);
  if (tape.played() != tape.size())
    return Status::Internal("the record's commands do not match the replay: " +
                            std::to_string(tape.size() - tape.played()) + " of " +
                            std::to_string(tape.size()) + " were not given to the engine");
  return Status::Ok();
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

// A delete's preconditions against the stored object, with kube-apiserver's sentences.
std::optional<ApiError> FailedPrecondition(const Mutation& m, const Json& existing) {
  const Json& meta = existing.at("metadata");
  const std::string uid = meta.value("uid", ""), rv = meta.value("resourceVersion", "");
  if (m.precondition_uid && *m.precondition_uid != uid)
    return Error(ApiError::Reason::kConflict, m.kind, m.name,
                 "the UID in the precondition (" + *m.precondition_uid +
                     ") does not match the UID in record (" + uid +
                     "). The object might have been deleted and then recreated");
  if (m.precondition_rv && *m.precondition_rv != rv)
    return Error(ApiError::Reason::kConflict, m.kind, m.name,
                 "the ResourceVersion in the precondition (" + *m.precondition_rv +
                     ") does not match the ResourceVersion in record (" + rv +
                     "). The object might have been modified");
  return std::nullopt;
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

// Stores `status` as the status of `kind` ns/name when it is stored and its status differs.
void Cluster::WriteStatus(const std::string& kind, const std::string& ns, const std::string& name,
                          Json status) {
  const Json* stored = store_.Get(kind, ns, name);
  if (!stored) return;
  if (const auto it = stored->find("status"); it != stored->end() && *it == status) return;
  Json q = *stored;
  q["status"] = std::move(status);
  store_.Put(kind, ns, name, std::move(q));
}

namespace {

// Picks stored policy objects into a validation context.
class ContextPicker {
 public:
  using Policy = std::map<std::string, std::map<ObjectStore::Key, ManifestSet>>;
  explicit ContextPicker(const Policy& policy) : policy_(policy) {}
  // The object named `key` of `kind`, or every one when it is not stored (for "did you mean",
  // and for a namespace that is not declared when others are).
  void Named(const char* kind, const ObjectStore::Key& key) {
    const auto* objs = Objects(kind);
    if (!objs) return;
    if (auto it = objs->find(key); it != objs->end()) return Append(ctx, it->second);
    All(kind);
  }
  // Every object of `kind` in namespace `ns`.
  void InNamespace(const char* kind, const std::string& ns) {
    const auto* objs = Objects(kind);
    if (!objs) return;
    for (auto it = objs->lower_bound({ns, ""}); it != objs->end() && it->first.first == ns; ++it)
      Append(ctx, it->second);
  }
  void All(const char* kind) {
    if (const auto* objs = Objects(kind))
      for (const auto& [k, set] : *objs) Append(ctx, set);
  }
  // Every object of `kind` but `skip` (the stored state of the object being updated).
  void AllBut(const char* kind, const ObjectStore::Key& skip) {
    if (const auto* objs = Objects(kind))
      for (const auto& [k, set] : *objs)
        if (k != skip) Append(ctx, set);
  }
  ManifestSet ctx;

 private:
  const std::map<ObjectStore::Key, ManifestSet>* Objects(const char* kind) const {
    auto it = policy_.find(kind);
    return it == policy_.end() ? nullptr : &it->second;
  }
  const Policy& policy_;
};

}  // namespace

ManifestSet Cluster::PodPolicyContext(const Pod& pod, const std::string& ns) const {
  ContextPicker pick(policy_);
  pick.Named("Namespace", {"", ns});
  if (pod.priority_class_name) pick.Named("PriorityClass", {"", *pod.priority_class_name});
  if (pod.sim.qos) pick.Named("QoS", {"", *pod.sim.qos});
  pick.InNamespace("LimitRange", ns);
  pick.InNamespace("PodGroup", ns);
  pick.All("PoolPolicy");
  return std::move(pick.ctx);
}

ManifestSet Cluster::ObjectPolicyContext(KindId id, const std::string& kind, const std::string& ns,
                                         const std::string& name) const {
  ContextPicker pick(policy_);
  switch (id) {
    // Its one cross-object check, of duplicate names, cannot fire: the store holds one object
    // a name, and the whole context left the stored one out too.
    case KindId::kNamespace:
      return std::move(pick.ctx);
    // Every PriorityClass (its scopeSelector's values are looked up there), and its namespace:
    // the validator warns of one not declared, which the daemon never meets (it refuses an
    // object whose namespace is not stored before validating it), taken all the same.
    case KindId::kResourceQuota:
      pick.Named("Namespace", {"", ns});
      pick.All("PriorityClass");
      return std::move(pick.ctx);
    case KindId::kLimitRange:  // its namespace, as above
      pick.Named("Namespace", {"", ns});
      return std::move(pick.ctx);
    // Its namespace (as above) and that namespace's ResourceQuotas (one capping below its
    // ceiling), the PoolPolicy (the default reclaim), the ResourceFlavors (its flavors' names) and
    // every ElasticQuota (one a namespace; the totals that must fit in 64 bits; its cohort's).
    case KindId::kElasticQuota:
      pick.Named("Namespace", {"", ns});
      pick.InNamespace("ResourceQuota", ns);
      pick.All("PoolPolicy");
      pick.All("ResourceFlavor");
      pick.AllBut("ElasticQuota", {ns, name});
      return std::move(pick.ctx);
    default:
      return PolicyContext(kind, ns, name);
  }
}

// ------------------------------------------------------------------ create / update

yaml::ManifestLoad Cluster::Load(const KindInfo& kind, Json in) {
  // The status is the server's (a Node's is its capacity, read as the manifest's); the node a
  // pod is bound to is not part of what was submitted.
  if (kind.status == StatusWriter::kServer) in.erase("status");
  if (kind.storage == Storage::kWorkload && in.contains("spec") && in["spec"].is_object())
    in["spec"].erase("nodeName");
  yaml::ManifestLoad load;
  yaml::LoadManifestJson(in, kApiRequest, &load);  // the tree, not its text again
  load.ReleaseSources();
  return load;
}

// Whether Prepare's changes (the namespace as Put settles it) and Load's (no server-written
// status, no nodeName of a workload) leave `m.object` as it is (a pod's create names its
// namespace and sets neither): then it is loaded without a copy (issue 27).
bool Cluster::LoadsAsGiven(const KindInfo& kind, const Mutation& m) {
  const Json& obj = m.object;
  const Json& meta = obj["metadata"];
  const auto ns = meta.find("namespace");
  if (kind.namespaced
          ? ns == meta.end() || !ns->is_string() || ns->get_ref<const std::string&>().empty()
          : ns != meta.end())
    return false;
  if (kind.status == StatusWriter::kServer && obj.contains("status")) return false;
  if (kind.storage == Storage::kWorkload) {
    const auto spec = obj.find("spec");
    if (spec != obj.end() && spec->is_object() && spec->contains("nodeName")) return false;
  }
  return true;
}

Cluster::Prepared Cluster::Prepare(const Mutation& m) {
  Prepared p;
  if (m.op != Mutation::Op::kCreate && m.op != Mutation::Op::kUpdate) return p;
  const KindInfo* info = FindKind(m.kind);
  if (!info || !m.object.is_object() || !m.object.contains("metadata") ||
      !m.object["metadata"].is_object())
    return p;
  if (info->storage == Storage::kController) return p;  // the Job rules need no loader
  if (LoadsAsGiven(*info, m)) {  // nothing to change: the request's tree is read, not copied
    yaml::ManifestLoad load;
    yaml::LoadManifestJson(m.object, kApiRequest, &load);
    load.ReleaseSources();
    p.load = std::move(load);
    return p;
  }
  Json obj = m.object;
  Json& meta = obj["metadata"];
  // The namespace as Put settles it.
  if (info->namespaced) {
    if (meta.value("namespace", "").empty())
      meta["namespace"] = m.namespace_.empty() ? "default" : m.namespace_;
  } else {
    meta.erase("namespace");
  }
  p.load = Load(*info, std::move(obj));  // the copy made here, not a second one
  return p;
}

// A refused create or update records a refusal on the tape (only the Job controller's matter:
// a user's refused request is not journaled); replaying, a refusal on the tape refuses again
// without judging, and any other refusal is a mismatch.
MutationResult Cluster::Put(const Mutation& m, const Prepared* prepared) {
  if (play_) {
    if (const CommandTape::Entry* e = play_->Peek(); e && e->refused) {
      play_->Next();
      // (kInternal: its Status says the message as taped, which RefusalText made)
      if (!e->message.empty())
        return Fail(Error(ApiError::Reason::kInternal, m.kind, m.name, e->message));
      return Fail(
          Error(ApiError::Reason::kConflict, m.kind, m.name, "refused when it was first applied"));
    }
    MutationResult r = PutSteps(m, prepared);
    if (!r.ok() && play_error_.ok())
      play_error_ = Status::Internal("the replay refused a " + m.kind + " the record accepted: " +
                                     (r.error->message.empty() ? r.error->name : r.error->message));
    return r;
  }
  const size_t mark = tape_.Mark();
  MutationResult r = PutSteps(m, prepared);
  if (!r.ok()) {
    tape_.Truncate(mark);
    tape_.AddRefusal(RefusalText(m, *r.error));
  }
  return r;
}

MutationResult Cluster::PutSteps(const Mutation& m, const Prepared* prepared) {
  const KindInfo* info = FindKind(m.kind);
  if (!info || info->storage == Storage::kServerWritten)
    return Fail(Error(ApiError::Reason::kMethodNotAllowed, m.kind, m.name,
                      "the server does not allow this method on the requested resource"));
  if (!m.object.is_object())
    return Fail(Error(ApiError::Reason::kBadRequest, m.kind, m.name, "the body is not an object"));
  Target t{*info, m.object};
  if (auto e = Settle(m, t)) return Fail(std::move(*e));
  KeepServerFields(m, t);
  if (info->storage == Storage::kController) return PutJob(m, t);
  if (play_) return PutReplayed(m, t);
  // Validation, exactly as `arbiter validate`: the loader, then the cross-object rules.
  yaml::ManifestLoad loaded;
  if (!prepared || !prepared->load) loaded = Load(*info, t.obj);
  const yaml::ManifestLoad& load = prepared && prepared->load ? *prepared->load : loaded;
  MutationResult result;
  if (auto e = Validate(m, t, load, result.warnings)) return Fail(std::move(*e));
  DefaultPodResources(t);
  t.spec_changed = !t.existing || SpecOf(*t.existing) != SpecOf(t.obj);
  if (auto e = CheckUpdate(t)) return Fail(std::move(*e));
  if (m.dry_run) {  // validated: the object as it would be stored, and nothing changes
    result.object = DryRunObject(m.time, std::move(t));
    return result;
  }
  const Status s = ApplyUpsert(m.time, load.set, t);
  if (!s.ok()) return Fail(Error(FromEngine(s.code()), m.kind, t.name, s.message()));
  Commit(m.time, load.set, t);
  result.stored_object = store_.Stored(m.kind, t.ns, t.name);
  if (result.stored_object) result.stored = result.stored_object->tree();
  return result;
}

MutationResult Cluster::PutReplayed(const Mutation& m, Target& t) {
  DefaultPodResources(t);  // from the LimitRanges stored then, as when it was first applied
  t.spec_changed = !t.existing || SpecOf(*t.existing) != SpecOf(t.obj);
  if (Status s = PlayUpsert(m.time, t); !s.ok())
    return Fail(Error(FromEngine(s.code()), m.kind, t.name, s.message()));
  // The validation context (which the PodDisruptionBudget status reads too): the object as the
  // loader reads it, as at Restore. Reading judges nothing.
  ManifestSet set;
  if (t.kind.storage == Storage::kPolicy) set = Load(t.kind, t.obj).set;
  Commit(m.time, set, t);
  return MutationResult{};  // nobody reads a replayed object (a tree made of it cost half a replay)
}

namespace {
// Whether a create or update of `kind` gives the engine `op` (ApplyUpsert's commands).
bool UpsertGives(KindId kind, const engine::CommandOp& op) {
  auto is = [&](auto alternative) { return std::holds_alternative<decltype(alternative)>(op); };
  switch (kind) {
    case KindId::kPod:
      return is(engine::SubmitPod{}) || is(engine::SetPodDeadline{}) || is(engine::SetPodLabels{});
    case KindId::kElasticQuota:
    case KindId::kResourceFlavor:
      return is(engine::UpsertElasticQuota{});
    case KindId::kNamespace:
      return is(engine::UpsertNamespace{});
    case KindId::kNode:
      return is(engine::UpsertNode{});
    case KindId::kResourceQuota:
      return is(engine::UpsertResourceQuota{});
    case KindId::kLimitRange:
      return is(engine::UpsertLimitRange{});
    case KindId::kPriorityClass:
      return is(engine::UpsertPriorityClass{});
    case KindId::kPodDisruptionBudget:
      return is(engine::UpsertPodDisruptionBudget{});
    case KindId::kPoolPolicy:
      return is(engine::UpsertPoolPolicy{});
    case KindId::kPriceBook:
      return is(engine::UpsertPriceBook{});
    case KindId::kQoS:
      return is(engine::UpsertQoS{});
    case KindId::kEvent:
    case KindId::kPodGroup:
    case KindId::kJob:
      return false;
  }
  return false;
}
}  // namespace

// Replay's ApplyUpsert: the tape's commands up to Commit's Tick, which must be the kind's (a
// SubmitPod: of this pod).
Status Cluster::PlayUpsert(Millis time, Target& t) {
  (void)time;
  while (const CommandTape::Entry* e = play_->Peek()) {
    if (e->refused || std::holds_alternative<engine::Tick>(e->command.op)) break;
    const std::string of = t.ns.empty() ? t.name : t.ns + "/" + t.name;
    if (!UpsertGives(t.kind.id, e->command.op))
      return PlayMismatch(std::string(engine::CommandName(e->command)) + " for a " + t.kind.kind);
    if (const auto* submit = std::get_if<engine::SubmitPod>(&e->command.op);
        submit && (submit->pod.meta.name != t.name || submit->pod.meta.namespace_ != t.ns))
      return PlayMismatch("SubmitPod of " + submit->pod.meta.namespace_ + "/" +
                          submit->pod.meta.name + " for the Pod " + of);
    play_->Next();
    Status s;
    if (std::holds_alternative<engine::SubmitPod>(e->command.op)) {
      s = SubmitWorkload(t, e->command);
    } else {
      s = engine_->Apply(e->command);
      if (std::holds_alternative<engine::SetPodDeadline>(e->command.op)) t.deadline_set = s.ok();
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// The object's name and namespace checked against the request's, and the stored object it
// replaces: what kube-apiserver refuses before validating.
std::optional<ApiError> Cluster::Settle(const Mutation& m, Target& t) const {
  Json& obj = t.obj;
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = Json::object();
  Json& meta = obj["metadata"];
  t.name = meta.value("name", "");
  const std::string& name = t.name;
  if (name.empty() && m.op == Mutation::Op::kCreate && meta.contains("generateName"))
    return Error(ApiError::Reason::kBadRequest, m.kind, "",
                 "metadata.generateName is not supported");
  if (!m.name.empty() && name != m.name)
    return Error(ApiError::Reason::kBadRequest, m.kind, m.name,
                 "the name of the object (" + name + ") does not match the name on the URL (" +
                     m.name + ")");
  if (t.kind.namespaced) {
    t.ns = meta.value("namespace", "");
    if (t.ns.empty()) t.ns = m.namespace_.empty() ? "default" : m.namespace_;
    if (!m.namespace_.empty() && t.ns != m.namespace_)
      return Error(
          ApiError::Reason::kBadRequest, m.kind, name,
          "the namespace of the provided object does not match the namespace sent on the request");
    meta["namespace"] = t.ns;
    if (!store_.Get("Namespace", "", t.ns))
      return Error(ApiError::Reason::kNamespaceNotFound, "Namespace", t.ns,
                   "namespaces \"" + t.ns + "\" not found");
    if (m.op == Mutation::Op::kCreate && terminating_namespaces_.count(t.ns)) {
      // kube-apiserver's NamespaceLifecycle admission
      ApiError e = Error(
          ApiError::Reason::kForbidden, m.kind, name,
          "unable to create new content in namespace " + t.ns + " because it is being terminated");
      e.cause = "namespace " + t.ns + " is being terminated";
      return e;
    }
  } else {
    meta.erase("namespace");
  }
  t.existing = store_.Get(m.kind, t.ns, name);
  const Json* existing = t.existing;
  if (m.op == Mutation::Op::kCreate && existing)
    return Error(ApiError::Reason::kAlreadyExists, m.kind, name, "");
  if (m.op == Mutation::Op::kUpdate && !existing)
    return Error(ApiError::Reason::kNotFound, m.kind, name, "");
  if (existing && meta.contains("resourceVersion") && meta["resourceVersion"].is_string() &&
      !meta["resourceVersion"].get<std::string>().empty() &&
      meta["resourceVersion"] != existing->at("metadata").at("resourceVersion"))
    return Error(ApiError::Reason::kConflict, m.kind, name, "");
  if (existing && existing->at("metadata").contains("deletionTimestamp") &&
      t.kind.storage == Storage::kWorkload)
    return Error(ApiError::Reason::kConflict, m.kind, name, "the pod is being deleted");
  return std::nullopt;
}

// A namespace's server fields as kube-apiserver's namespace strategy keeps them (journal format 6;
// formats 1-5 stored a sent status, finalizers or deletionTimestamp as they were): at its create,
// status.phase Active and the `kubernetes` finalizer in spec.finalizers; at an update, the stored
// spec.finalizers (only /finalize changes them in kube); only the server marks it Terminating.
void Cluster::KeepNamespaceFields(Target& t) const {
  Json& meta = t.obj["metadata"];
  meta.erase("deletionTimestamp");
  if (t.existing && terminating_namespaces_.count(t.name))
    meta["deletionTimestamp"] = t.existing->at("metadata").at("deletionTimestamp");
  if (!t.obj.contains("spec") || !t.obj["spec"].is_object()) t.obj["spec"] = Json::object();
  Json& finalizers = t.obj["spec"]["finalizers"];
  if (t.existing) {
    finalizers = json_member::MemberAt(*t.existing, {"spec", "finalizers"});
    if (finalizers.is_null()) t.obj["spec"].erase("finalizers");
    return;
  }
  t.obj["status"] = {{"phase", "Active"}};
  if (!finalizers.is_array()) finalizers = Json::array();
  if (std::find(finalizers.begin(), finalizers.end(), Json("kubernetes")) == finalizers.end())
    finalizers.push_back("kubernetes");
}

// Server-owned fields: identity and status (unless the client writes it), a pod's node.
void Cluster::KeepServerFields(const Mutation& m, Target& t) const {
  Json& obj = t.obj;
  const bool workload = t.kind.storage == Storage::kWorkload;
  if (workload && m.op == Mutation::Op::kCreate) obj.erase("status");
  if (t.kind.id == KindId::kNamespace && !format5_rules_) KeepNamespaceFields(t);
  if (!t.existing) return;
  const Json& old = t.existing->at("metadata");
  Json& meta = obj["metadata"];
  meta["uid"] = old.at("uid");
  meta["creationTimestamp"] = old.at("creationTimestamp");
  if (old.contains("generation")) meta["generation"] = old["generation"];
  if (t.kind.status == StatusWriter::kServer && t.existing->contains("status"))
    obj["status"] = (*t.existing)["status"];
  if (workload && t.existing->contains("spec") && t.existing->at("spec").contains("nodeName"))
    obj["spec"]["nodeName"] = t.existing->at("spec").at("nodeName");
  // kube's Priority admission at an update: the priority and preemption policy it resolved at the
  // create stay when the update leaves them out (`kubectl replace -f` of the pod's own manifest
  // was a 422 "spec.priority: changed"). (An update that left them out was refused before, so
  // no journal holds one: replays are unchanged.)
  auto spec = obj.find("spec");
  if (t.kind.id == KindId::kPod && spec != obj.end() && spec->is_object())
    for (const char* field : {"priority", "preemptionPolicy"}) {
      const Json& kept = json_member::MemberAt(*t.existing, {"spec", field});
      if (!kept.is_null() && !spec->contains(field)) (*spec)[field] = kept;
    }
}

// LimitRanger admission on a pod's create, as kube-apiserver runs it: a pod the namespace's
// LimitRanges refuse is never created (403, or 422 when a defaulted limit falls below its
// request), where `arbiter validate` and `arbiter sim` warn and reject it at submission.
std::optional<ApiError> Cluster::AdmitLimitRanges(const Target& t, const Pod& pod,
                                                  const ManifestSet& ctx) const {
  std::map<std::string, const LimitRange*> by_name;  // the engine's order: by name
  for (const auto& lr : ctx.limit_ranges)
    if (lr.meta.namespace_ == t.ns) by_name.emplace(lr.meta.name, &lr);
  std::vector<const LimitRange*> ranges;
  for (const auto& [lr_name, lr] : by_name) ranges.push_back(lr);
  engine::AdmittedPod admitted;
  const std::string why = engine::ApplyLimitRanges(pod, ranges, &admitted);
  if (!admitted.invalid.empty()) {  // each cause with its field, as kube-apiserver's validation
    const std::string invalid = "Pod \"" + t.name + "\" is invalid: ";
    ApiError e = Error(ApiError::Reason::kInvalid, t.kind.kind, t.name, why.substr(invalid.size()));
    for (engine::FieldError& f : admitted.invalid)
      e.diagnostics.Add(Diagnostic{Severity::kError, kApiRequest, 1, t.kind.kind,
                                   t.ns + "/" + t.name, std::move(f.field), std::move(f.message)});
    return e;
  }
  if (!why.empty()) return Error(ApiError::Reason::kForbidden, t.kind.kind, t.name, why);
  return std::nullopt;
}

// What kube-apiserver writes into a pod's resources (pod_defaults.h), after the validation (which
// judged the same defaults: engine::ApplyLimitRanges) and before the store; a replay does it from
// the LimitRanges stored then. Records of formats 1-5 stored the pod as sent (SetFormat5Rules).
void Cluster::DefaultPodResources(Target& t) const {
  if (format5_rules_ || t.kind.id != KindId::kPod) return;
  if (t.existing) {
    // A pod stored before format 6, as sent, is updated as it was: defaulting its limits' requests
    // now would change its spec, which an update may not (a label's PATCH refused with 422).
    Json stored = {{"spec", json_member::Member(*t.existing, "spec")}};
    if (DefaultRequestsFromLimits(stored)) return;
    DefaultRequestsFromLimits(t.obj);
    return;  // LimitRanger mutates a pod at its create only
  }
  DefaultRequestsFromLimits(t.obj);
  const std::vector<const Json*> ranges = store_.List("LimitRange", t.ns);  // name order
  ApplyLimitRangeDefaults(t.obj, ranges);
}

StatusRules Cluster::StatusRulesNow() const {
  return format5_rules_ ? StatusRules::kFormat5 : StatusRules::kCurrent;
}

// ResourceQuota admission on a pod's create, as kube-apiserver runs it, for the pods no usage can
// ever admit (engine::Engine::NeverAdmissible: a class the quota's scopeSelector keeps out with 0
// pods, a request above `hard`, a container without the request the quota needs) and those over
// PoolPolicy quota.maxSubmittedPerNamespace: 403 with its words, nothing stored. They used to be
// stored Failed (reason Rejected). A pod over the quota's usage alone is still queued
// (quota.whenExceeded), which is Arbiter's model, not Kubernetes'.
std::optional<ApiError> Cluster::AdmitQuota(const Target& t, const Pod& pod) const {
  if (replaying_requests_) return std::nullopt;  // a format 1 record: stored as it was then
  std::optional<std::string> never = engine_->NeverAdmissible(pod);
  if (!never) return std::nullopt;
  return Error(ApiError::Reason::kForbidden, t.kind.kind, t.name, *never);
}

// The loader's diagnostics, then the cross-object rules against the stored policy objects; the
// warnings go to `warnings`, errors refuse the object.
std::optional<ApiError> Cluster::Validate(const Mutation& m, const Target& t,
                                          const yaml::ManifestLoad& load,
                                          std::vector<std::string>& warnings) const {
  Diagnostics diags = load.diagnostics;
  if (load.ok()) {
    const bool one_pod = t.kind.storage == Storage::kWorkload && load.set.pods.size() == 1;
    ManifestSet ctx = one_pod ? PodPolicyContext(load.set.pods[0], t.ns)
                              : ObjectPolicyContext(t.kind.id, m.kind, t.ns, t.name);
    if (one_pod && m.op == Mutation::Op::kCreate)
      if (auto e = AdmitLimitRanges(t, load.set.pods[0], ctx)) return e;
    ManifestSet only = load.set;
    Append(ctx, only);
    ResolvePodGroups(&ctx);  // a pod's group arrived in an earlier request
    Diagnostics cross;
    ValidateManifestSet(ctx, nullptr, &cross);
    const std::string display = t.kind.namespaced ? t.ns + "/" + t.name : t.name;
    for (auto& d : cross.items) {
      if (d.kind != m.kind || d.name != display) continue;
      // Objects arrive one request at a time (kubectl apply sends them in file order), so a QoS
      // may name in its preempt list a QoS applied after it: that reference is a warning here
      // (the engine reads preempt lists by name at each decision; an absent QoS preempts nothing).
      if (t.kind.id == KindId::kQoS && d.field_path.rfind("spec.preempt", 0) == 0 &&
          d.message.rfind("unknown QoS", 0) == 0)
        d.severity = Severity::kWarning;
      // A PodGroup comes before its pods: "minMember is 3 but 0 pod(s) carry the label" is the
      // normal state of a new group here, not a warning.
      if (t.kind.id == KindId::kPodGroup && d.severity == Severity::kWarning &&
          d.field_path == "spec.minMember" &&
          d.message.find(" pod(s) carry the label ") != std::string::npos)
        continue;
      diags.Add(std::move(d));
    }
  }
  for (const auto& d : diags.items)
    if (d.severity == Severity::kWarning)
      warnings.push_back(d.field_path.empty() ? d.message : d.field_path + ": " + d.message);
  if (!diags.HasErrors()) {  // a valid pod's create: quota admission, the last of kube's
    if (t.kind.storage == Storage::kWorkload && m.op == Mutation::Op::kCreate &&
        load.set.pods.size() == 1)
      return AdmitQuota(t, load.set.pods[0]);
    return std::nullopt;
  }
  ApiError e = Error(ApiError::Reason::kInvalid, m.kind, t.name, "");
  for (auto& d : diags.items)
    if (d.severity == Severity::kError) e.diagnostics.Add(std::move(d));
  return e;
}

// What an update may change, by the kind's rule (kind_table.h UpdateRule).
std::optional<ApiError> Cluster::CheckUpdate(const Target& t) const {
  const std::string& kind = t.kind.kind;
  switch (t.kind.update_rule) {
    case UpdateRule::kAny:
      return std::nullopt;
    case UpdateRule::kPodSpec: {  // only what Kubernetes allows (pod_update.h)
      if (!t.existing) return std::nullopt;
      // A pod's node is the scheduler's to set: an update keeps the stored one (left out, it is
      // kept: KeepServerFields) but may not set one on a pod that has none, which it used to (a
      // pending pod then showed a node it was not on).
      Json new_spec = SpecOf(t.obj);
      const Json& node = json_member::MemberAt(t.obj, {"spec", "nodeName"});
      if (!replaying_requests_ &&
          !json_member::MemberAt(*t.existing, {"spec", "nodeName"}).is_string() &&
          node.is_string() && !node.get<std::string>().empty())
        new_spec["nodeName"] = node;
      else if (!t.spec_changed)
        return std::nullopt;
      const auto errors = ValidatePodSpecUpdate(SpecOf(*t.existing), new_spec);
      if (errors.empty()) return std::nullopt;
      ApiError e = Error(ApiError::Reason::kInvalid, kind, t.name, "");
      for (const auto& pe : errors)
        e.diagnostics.Add(Diagnostic{Severity::kError, kApiRequest, 1, kind, t.ns + "/" + t.name,
                                     pe.field, pe.message});
      return e;
    }
    case UpdateRule::kImmutableValue: {  // Kubernetes' ValidatePriorityClassUpdate
      if (!t.existing) return std::nullopt;
      ApiError e = Error(ApiError::Reason::kInvalid, kind, t.name, "");
      auto refuse = [&](const std::string& field, const std::string& message) {
        e.diagnostics.Add(
            Diagnostic{Severity::kError, kApiRequest, 1, kind, t.name, field, message});
      };
      if (t.existing->value("value", Json()) != t.obj.value("value", Json()))
        refuse("value", "Forbidden: may not be changed in an update.");
      const std::string was = t.existing->value("preemptionPolicy", "PreemptLowerPriority");
      const std::string now = t.obj.value("preemptionPolicy", "PreemptLowerPriority");
      if (was != now)
        refuse("preemptionPolicy", "Invalid value: \"" + now + "\": field is immutable");
      if (e.diagnostics.items.empty()) return std::nullopt;
      return e;
    }
    case UpdateRule::kSingleton:
      if (t.existing || store_.List(kind, "").empty()) return std::nullopt;
      return Error(ApiError::Reason::kConflict, kind, t.name,
                   "a " + kind + " exists already (at most one)");
  }
  return std::nullopt;
}

// A dry run's answer: the object as it would be stored.
Json Cluster::DryRunObject(Millis time, Target&& t) const {
  Json& meta = t.obj["metadata"];
  if (!t.existing) {
    meta.erase("resourceVersion");
    meta["uid"] = PeekUid();
    meta["creationTimestamp"] = KubeTime(time);
    meta["generation"] = 1;
    if (t.kind.storage == Storage::kWorkload) {
      engine::WorkloadStatus pending;
      pending.phase = engine::Phase::kPending;
      SetPodStatus(t.obj, pending, nullptr, time, StatusRulesNow());
    }
  } else {
    meta["resourceVersion"] = t.existing->at("metadata").at("resourceVersion");
    if (t.spec_changed) meta["generation"] = meta.value("generation", 1) + 1;
  }
  return std::move(t.obj);
}

void Cluster::NoteUsage(uint64_t workload, const Pod& pod) {
  if (pod.sim.usage) {
    auto& u = usage_of_[workload];
    if (!u || !(*u == *pod.sim.usage)) u = std::make_shared<const ResourceList>(*pod.sim.usage);
    facts_.SetUsage(workload, u);
  } else {
    usage_of_.erase(workload);
    facts_.SetUsage(workload, nullptr);
  }
}

void Cluster::NoteFacts(const ObjectStore::Key& key, const engine::WorkloadStatus& s) {
  const auto stored = store_.Stored("Pod", key.first, key.second);
  const LiveFact* was = facts_.Find(engine::Value(s.id));
  facts_.Put(s,
             stored ? std::string_view(stored->first_container())
             : was  ? std::string_view(*was->container)
                    : std::string_view(),
             engine_->GpusOf(s.id).value_or(placement::GpuAssignment{}));
  if (!was)
    facts_.SetUsage(engine::Value(s.id), [&]() -> std::shared_ptr<const ResourceList> {
      auto u = usage_of_.find(engine::Value(s.id));
      return u == usage_of_.end() ? nullptr : u->second;
    }());
}

void Cluster::RestoreFacts() {
  facts_.Clear();
  node_labels_ = {};
  for (const auto& [id, key] : pod_of_)
    if (auto st = engine_->Get(engine::WorkloadId{id})) NoteFacts(key, *st);
}

// A Pod's engine command: SubmitPod on create; at an update, SetPodLabels with its labels
// (a PodDisruptionBudget, pod affinity and spread read them: the engine kept the create's, so a
// pod labelled into a budget was preempted as if none protected it), SetPodDeadline when it sets
// or lowers spec.activeDeadlineSeconds (pod_update.h allows nothing else for it).
Status Cluster::ApplyPod(Millis time, const ManifestSet& set, Target& t) {
  if (!t.existing) {
    Pod pod = WithPodGroup(set.pods.at(0), policy_);
    if (CrashLoopRun(t.obj)) {  // restarted in place (pod_status.h): one run that never ends
      pod.sim.duration.reset();
      pod.sim.exit_code = 0;
    }
    return SubmitWorkload(t, engine::At(time, engine::SubmitPod{std::move(pod), false, {}}));
  }
  if (auto w = workload_of_.find({t.ns, t.name}); w != workload_of_.end()) {
    NoteUsage(w->second, set.pods.at(0));  // an update may change the annotation
    // At every update, not only one that changes them: a pod relabelled by a release before
    // SetPodLabels has other labels in the engine than in the store, and its next update mends
    // it (the engine ignores labels it has). A format-1 record (a request, no tape) is replayed
    // as its release ran it: without.
    if (!format5_rules_)
      if (Status s = Exec(engine::At(
              time, engine::SetPodLabels{WorkloadId{w->second}, set.pods.at(0).meta.labels}));
          !s.ok())
        return s;
  }
  const auto deadline = set.pods.at(0).active_deadline;
  if (!deadline || !t.spec_changed) return Status::Ok();
  // Backfill plans with the new limit. A finished pod has no workload any more.
  auto w = workload_of_.find({t.ns, t.name});
  if (w == workload_of_.end()) return Status::Ok();
  Status s = Exec(engine::At(time, engine::SetPodDeadline{WorkloadId{w->second}, *deadline}));
  t.deadline_set = s.ok();
  return s;
}

Status Cluster::SubmitWorkload(Target& t, const engine::Command& c) {
  const Pod& pod = std::get<engine::SubmitPod>(c.op).pod;
  const uint64_t w = engine::Value(engine_->next_workload_id());
  t.new_workload = w;
  pod_of_.insert_or_assign(w, {t.ns, t.name});
  workload_of_[{t.ns, t.name}] = w;
  recorder_->Submitted(driver::WorkSpec::Of(pod), pod.sim.usage);
  Status s = play_ ? engine_->Apply(c) : Exec(c);
  if (!s.ok()) {
    recorder_->works.pop_back();
    pod_of_.erase(w);
    workload_of_.erase({t.ns, t.name});
  } else {
    NoteUsage(w, pod);
  }
  return s;
}

// The engine's command for the object (driver::UpsertCommand; a Pod: ApplyPod; an ElasticQuota:
// with the labels of the stored flavors it names; a ResourceFlavor whose labels changed: the
// ElasticQuotas that name it again; an Event or a PodGroup: none).
Status Cluster::ApplyUpsert(Millis time, const ManifestSet& set, Target& t) {
  auto apply = [&](engine::CommandOp op) { return Exec(engine::Command{time, std::move(op)}); };
  switch (t.kind.id) {
    case KindId::kPod:
      return ApplyPod(time, set, t);
    case KindId::kElasticQuota:
      return apply(engine::UpsertElasticQuota{WithFlavors(set.elastic_quotas.at(0), policy_)});
    case KindId::kResourceFlavor:
      return t.existing && t.spec_changed ? ReapplyFlavor(time, set, t.name) : Status::Ok();
    case KindId::kNamespace:
    case KindId::kNode:
    case KindId::kResourceQuota:
    case KindId::kLimitRange:
    case KindId::kPriorityClass:
    case KindId::kPodDisruptionBudget:
    case KindId::kPoolPolicy:
    case KindId::kPriceBook:
    case KindId::kQoS: {
      std::optional<engine::CommandOp> op = driver::UpsertCommand(t.kind.id, set);
      ARB_CHECK_MSG(op.has_value(), "a validated load without its object");
      return apply(std::move(*op));
    }
    case KindId::kEvent:
    case KindId::kPodGroup:
    case KindId::kJob:  // run by the Job controller (RunJobs), not the engine
      return Status::Ok();
  }
  return Status::Ok();
}

// The ElasticQuotas that name flavor `name` take its new node labels.
Status Cluster::ReapplyFlavor(Millis time, const ManifestSet& set, const std::string& name) {
  ManifestSet now = PolicyContext("", "", "");
  now.resource_flavors.erase(
      std::remove_if(now.resource_flavors.begin(), now.resource_flavors.end(),
                     [&](const ResourceFlavor& f) { return f.meta.name == name; }),
      now.resource_flavors.end());
  Append(now, set);
  ResolveFlavors(&now);
  Status s;
  for (const auto& q : now.elastic_quotas)
    if (s.ok() && NamesFlavor(q, name)) s = Exec(engine::At(time, engine::UpsertElasticQuota{q}));
  return s;
}

// The engine took the command: the object is stored (with the server's fields), the engine runs
// a cycle, and the objects its decisions touched follow.
void Cluster::Commit(Millis time, const ManifestSet& set, Target& t) {
  const std::string& kind = t.kind.kind;
  if (t.kind.storage == Storage::kPolicy) policy_[kind][{t.ns, t.name}] = set;
  if (t.kind.quota_effect != QuotaEffect::kNone) quota_dirty_.insert(t.ns);
  if (t.kind.quota_effect == QuotaEffect::kEveryNamespaceOfKind) SharesMoved(kind);
  Json& meta = t.obj["metadata"];
  if (!t.existing) {
    meta["uid"] = NewUid();
    meta["creationTimestamp"] = KubeTime(time);
    meta["generation"] = 1;
  } else if (t.spec_changed) {
    meta["generation"] = meta.value("generation", 1) + 1;
  }
  if (t.kind.storage == Storage::kNode) {
    Json& st = t.obj["status"];
    if (!st.is_object()) st = Json::object();
    st["conditions"] = Json::array({{{"type", "Ready"},
                                     {"status", "True"},
                                     {"reason", "KubeletReady"},
                                     {"message", "virtual node (arbiter serve)"},
                                     {"lastHeartbeatTime", KubeTime(time)},
                                     {"lastTransitionTime", meta["creationTimestamp"]}}});
  }
  if (t.kind.id == KindId::kJob) DefaultJob(t.obj, meta.value("uid", ""));
  if (t.kind.storage == Storage::kWorkload && !t.existing) {
    AdmitPod(t);
    (void)Exec(engine::At(time, engine::Tick{}));
    StoreNewPod(time, t);
  } else {
    store_.Put(kind, t.ns, t.name, std::move(t.obj));
    (void)Exec(engine::At(time, engine::Tick{}));
  }
  Sync(time);
  if (new_pod_) {  // (not reached: StoreNewPod holds only a pod that SyncPodStatus rewrites)
    store_.Put("Pod", t.ns, t.name, std::move(new_pod_->pod));
    new_pod_.reset();
  }
  // A reservation that moves changes a pending pod's reason text without an event (the engine
  // reports each kind of reason once per pending spell): the walk refreshes every pending pod
  // here (Sync wrote those the engine restated).
  if (t.deadline_set && pending_walk_) RefreshAllPending(time);
}

// A created pod's priority fields. Kubernetes' Priority admission: spec.priority, and the class
// (the global default when none is named) and its preemption policy, as the engine resolved them
// at submission. Its spec.nodeName goes (as its Pending status, written by StoreNewPod, erases it).
void Cluster::AdmitPod(Target& t) const {
  if (auto st = engine_->Get(WorkloadId{*t.new_workload}); st && t.obj["spec"].is_object()) {
    Json& spec = t.obj["spec"];
    spec["priority"] = st->priority;
    if (!st->priority_class.empty()) spec["priorityClassName"] = st->priority_class;
    if (!spec.contains("preemptionPolicy"))
      spec["preemptionPolicy"] =
          st->preemption_policy == PreemptionPolicy::kNever ? "Never" : "PreemptLowerPriority";
  }
  if (t.obj.contains("spec") && t.obj["spec"].is_object()) t.obj["spec"].erase("nodeName");
}

// A created pod (Pending) after the cycle that followed its SubmitPod. It used to be stored
// Pending before the cycle, then again by SyncPodStatus with the status the cycle gave it. Now a
// pod that SyncPodStatus will rewrite is held (new_pod_) with that status and stored once, by
// SyncPodStatus, at the resourceVersion of that second write; the version of the first is used
// up unseen. So a create takes the same resourceVersions as before (a journal of an older
// release replays to the versions it served), and a watcher sees the pod ADDED with its status.
//
// The Pending status is written only when the pod is stored with it: the status its cycle gave it
// is the same whether made from the Pending status or from none (the Pending status's conditions
// change at `time` either way, it has no container statuses), and a status that is not Pending
// changes the pod (ClusterTest.ACreatedPodIsStoredWithTheStatusItAlwaysHad).
void Cluster::StoreNewPod(Millis time, Target& t) {
  const uint64_t id = *t.new_workload;
  // What SyncPodStatus will write, from the outputs Sync reads: the status of a pod the cycle
  // touched, unless the pod was deleted (then it is removed, or marked deleted first).
  bool touched = false;
  std::optional<driver::PodCondition> disruption;
  for (const auto& e : sink_->events) {
    if (e.workload == engine::kNoWorkload || engine::Value(e.workload) != id) continue;
    touched = true;
    if (auto d = driver::DisruptionTarget(e)) disruption = std::move(d);
  }
  auto fin = sink_->finished.find(id);
  const std::optional<engine::WorkloadStatus> st =
      fin != sink_->finished.end() ? std::optional(fin->second) : engine_->Get(WorkloadId{id});
  engine::WorkloadStatus pending;
  pending.phase = engine::Phase::kPending;
  if (touched && st && st->phase != engine::Phase::kDeleted) {
    PodStatusUpdate u =
        PodStatusOf(t.obj, *st, disruption ? &*disruption : nullptr, time, StatusRulesNow());
    const bool moved = json_member::Member(u.status, "phase") != "Pending";
    if (!moved) SetPodStatus(t.obj, pending, nullptr, time, StatusRulesNow());
    if (moved || Changes(t.obj, u)) {
      store_.Skip("Pod");
      ApplyPodStatus(t.obj, std::move(u));
      new_pod_ = NewPod{id, std::move(t.obj)};
      return;
    }
  } else {
    SetPodStatus(t.obj, pending, nullptr, time, StatusRulesNow());
  }
  store_.Put("Pod", t.ns, t.name, std::move(t.obj));
}

void Cluster::RefreshAllPending(Millis time) {
  for (const auto& [id, key] : pod_of_) {
    const Json* stored = store_.Get("Pod", key.first, key.second);
    const std::optional<engine::WorkloadStatus> st = engine_->Get(WorkloadId{id});
    if (!stored || !st || st->phase != engine::Phase::kPending) continue;
    NoteFacts(key, *st);
    PodStatusUpdate u = PodStatusOf(*stored, *st, nullptr, time, StatusRulesNow());
    if (!Changes(*stored, u)) continue;
    Json pod = *stored;
    ApplyPodStatus(pod, std::move(u));
    store_.Put("Pod", key.first, key.second, std::move(pod));
  }
}

// ------------------------------------------------------------------ delete

MutationResult Cluster::Delete(const Mutation& m) {
  const KindInfo* info = FindKind(m.kind);
  if (!info || info->storage == Storage::kServerWritten)
    return Fail(Error(ApiError::Reason::kMethodNotAllowed, m.kind, m.name,
                      "the server does not allow this method on the requested resource"));
  const bool workload = info->storage == Storage::kWorkload;
  const std::string ns = info->namespaced ? (m.namespace_.empty() ? "default" : m.namespace_) : "";
  const Json* existing = store_.Get(m.kind, ns, m.name);
  if (!existing) return Fail(Error(ApiError::Reason::kNotFound, m.kind, m.name, ""));
  if (auto e = FailedPrecondition(m, *existing)) return Fail(std::move(*e));
  const Millis t = m.time;
  MutationResult result;
  if (m.dry_run) {  // found: answered with the object as it is, nothing changes
    result.object = *existing;
    if (workload && workload_of_.count({ns, m.name}) && !PodFinished(*existing) &&
        existing->at("status").value("phase", "") != "Pending" &&
        !existing->at("metadata").contains("deletionTimestamp"))
      MarkDeleting(result.object, t, DeletionGraceSeconds(*existing, m.grace_period));
    return result;
  }
  if (info->id == KindId::kNamespace && terminating_namespaces_.count(m.name)) {
    result.stored = store_.Share(m.kind, ns, m.name);  // terminating already: as it is (kube)
    return result;
  }
  if (info->id == KindId::kResourceFlavor && !play_)  // (replay: it was accepted)
    if (auto e = FlavorInUse(m.name)) return Fail(std::move(*e));
  result.stored = store_.Share(m.kind, ns, m.name);
  if (info->quota_effect != QuotaEffect::kNone) quota_dirty_.insert(ns);
  Status s;
  if (workload)
    s = DeletePodObject(m, ns, *existing);
  else if (info->id == KindId::kNamespace)
    s = DeleteNamespaceObjects(m);
  else if (info->id == KindId::kJob)
    s = DeleteJobObject(m, ns);
  else
    s = DeletePolicyObject(m, *info, ns);
  if (!s.ok()) return Fail(Error(FromEngine(s.code()), m.kind, m.name, s.message()));
  (void)Exec(engine::At(t, engine::Tick{}));
  Sync(t);
  if (auto now = store_.Share(m.kind, ns, m.name)) result.stored = std::move(now);
  return result;
}

// Kueue's resource-in-use finalizer: a ResourceFlavor is not deleted while a quota names it.
std::optional<ApiError> Cluster::FlavorInUse(const std::string& name) const {
  auto it = policy_.find("ElasticQuota");
  if (it == policy_.end()) return std::nullopt;
  for (const auto& [key, set] : it->second)
    for (const auto& q : set.elastic_quotas)
      if (NamesFlavor(q, name))
        return Error(ApiError::Reason::kConflict, "ResourceFlavor", name,
                     "ElasticQuota " + q.meta.namespace_ + "/" + q.meta.name +
                         " names it in spec.flavors; delete or change that first");
  return std::nullopt;
}

// A deleted pod's metadata.deletionGracePeriodSeconds: the delete's gracePeriodSeconds, else its
// spec.terminationGracePeriodSeconds (what the engine waits, as kube), else 30. Formats 1-5 wrote
// 30 whatever the pod's spec said (SetFormat5Rules).
int64_t Cluster::DeletionGraceSeconds(const Json& pod, std::optional<Millis> grace) const {
  if (grace) return *grace / 1000;
  const Json& own = json_member::MemberAt(pod, {"spec", "terminationGracePeriodSeconds"});
  if (!format5_rules_ && own.is_number_integer() && own.get<int64_t>() >= 0)
    return own.get<int64_t>();
  return 30;
}

// A pod with a workload gets DeletePod (SIGTERM) and stays, being deleted, until it exits. A
// finished pod goes at once; the engine is told too (DeletePod), as `count/pods` counts it until
// now.
Status Cluster::DeletePodObject(const Mutation& m, const std::string& ns, const Json& existing) {
  auto w = workload_of_.find({ns, m.name});
  if (w == workload_of_.end() && KeptForJob(existing)) {  // goes once its Job counted it
    if (!existing.at("metadata").contains("deletionTimestamp")) {
      Json pod = existing;
      pod["metadata"]["deletionTimestamp"] = KubeTime(m.time);
      pod["metadata"]["deletionGracePeriodSeconds"] = 0;
      store_.Put("Pod", ns, m.name, std::move(pod));
    }
    return Status::Ok();
  }
  if (w == workload_of_.end()) {
    Status s = ForgetFinished(m.time, {ns, m.name});
    if (!s.ok()) return s;
    store_.Remove("Pod", ns, m.name);
    return Status::Ok();
  }
  const WorkloadId id{w->second};
  if (!format6_rules_ && existing.at("metadata").contains("deletionTimestamp"))
    return DeleteAgain(m, ns, existing, id);
  Status s = Exec(engine::At(m.time, engine::DeletePod{id, m.grace_period, !format6_rules_}));
  if (!s.ok()) return s;
  if (!sink_->finished.count(w->second)) {
    Json pod = existing;
    MarkDeleting(pod, m.time, DeletionGraceSeconds(existing, m.grace_period));
    store_.Put("Pod", ns, m.name, std::move(pod));
  }
  return Status::Ok();
}

// A terminating pod's metadata.deletionTimestamp (when its grace period ends, as kube-apiserver
// writes it; formats 1-6: the delete's instant) and deletionGracePeriodSeconds.
void Cluster::MarkDeleting(Json& pod, Millis time, int64_t grace_seconds) const {
  Json& meta = pod["metadata"];
  meta["deletionTimestamp"] = KubeTime(format6_rules_ ? time : time + grace_seconds * 1000);
  meta["deletionGracePeriodSeconds"] = grace_seconds;
}

// A second delete of a terminating pod: as kube-apiserver's rest.BeforeDelete, it may only
// shorten the grace period; otherwise nothing changes. Shorter: the deletionTimestamp moves back
// by the old period and forward by the new one (never before now: then a period of 1 s, or 0),
// and the engine kills the workload then if it has not exited (DeletePod::shorten). The grace
// counts from the workload's SIGTERM (the work model's), not from the stored timestamp: a pod
// deleted by a format-6 record stored the delete's instant there. A pod whose period is 0
// already (or none) is deleted at once whatever the options (kube): killed now.
Status Cluster::DeleteAgain(const Mutation& m, const std::string& ns, const Json& existing,
                            WorkloadId id) {
  const Json& meta = existing.at("metadata");
  const Json& old_grace = json_member::Member(meta, "deletionGracePeriodSeconds");
  const int64_t old = old_grace.is_number_integer() ? old_grace.get<int64_t>() : 0;
  if (old <= 0) return Exec(engine::At(m.time, engine::DeletePod{id, 0, true}));
  if (!m.grace_period || *m.grace_period / 1000 >= old) return Status::Ok();
  int64_t period = *m.grace_period / 1000;
  const driver::Work& work = recorder_->works[engine::Value(id)];
  Millis end = (work.stopping ? work.stop_time : m.time) + period * 1000;
  if (end < m.time) {
    end = m.time;
    if (period != 0) period = 1;
  }
  Status s = Exec(engine::At(m.time, engine::DeletePod{id, end - m.time, true}));
  if (!s.ok()) return s;
  if (sink_->finished.count(engine::Value(id))) return Status::Ok();
  Json pod = existing;
  pod["metadata"]["deletionTimestamp"] = KubeTime(end);
  pod["metadata"]["deletionGracePeriodSeconds"] = period;
  store_.Put("Pod", ns, m.name, std::move(pod));
  return Status::Ok();
}

// A finished pod's object is going: DeletePod for its workload. NotFound is the engine's answer
// for a terminal pod it does not count (no `count/pods` quota matched it): nothing to forget.
Status Cluster::ForgetFinished(Millis time, const ObjectStore::Key& key) {
  auto f = finished_of_.find(key);
  if (f == finished_of_.end()) return Status::Ok();
  Status s = Exec(engine::At(time, engine::DeletePod{WorkloadId{f->second}, {}}));
  if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  finished_of_.erase(key);
  return Status::Ok();
}

// The namespace controller's work, at once: every namespaced object goes; running pods stay
// (being deleted) until they exit.
Status Cluster::DeleteNamespaceObjects(const Mutation& m) {
  Status s = Exec(engine::At(m.time, engine::DeleteNamespace{m.name}));
  if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  for (const auto& k : ServedKinds()) {
    if (!k.namespaced) continue;
    std::vector<std::string> names;
    for (const Json* o : store_.List(k.kind, m.name)) names.push_back(o->at("metadata").at("name"));
    const bool pods = k.storage == Storage::kWorkload;
    for (const auto& n : names) {
      if (pods && workload_of_.count({m.name, n}) &&
          !sink_->finished.count(workload_of_[{m.name, n}])) {
        Json pod = *store_.Get("Pod", m.name, n);
        if (!format6_rules_ && pod["metadata"].contains("deletionTimestamp"))
          continue;          // deleted already: as it is (formats 1-6 wrote it again)
        if (format5_rules_)  // (formats 1-5 wrote no grace here)
          pod["metadata"]["deletionTimestamp"] = KubeTime(m.time);
        else
          MarkDeleting(pod, m.time, DeletionGraceSeconds(pod, std::nullopt));
        store_.Put("Pod", m.name, n, std::move(pod));
        continue;
      }
      if (pods && workload_of_.count({m.name, n})) continue;  // Sync removes it
      if (pods) {
        Status f = ForgetFinished(m.time, {m.name, n});
        if (!f.ok()) return f;
      }
      store_.Remove(k.kind, m.name, n);
      policy_[k.kind].erase({m.name, n});
      if (k.quota_effect == QuotaEffect::kEveryNamespaceOfKind) SharesMoved(k.kind);
    }
  }
  if (!format5_rules_ && !store_.List("Pod", m.name).empty()) {
    // Terminating until its last pod is gone (PurgeNamespaces), as kube's namespace controller
    // keeps it while content remains; formats 1-5 removed it at once (SetFormat5Rules).
    Json ns = *store_.Get("Namespace", "", m.name);
    ns["metadata"]["deletionTimestamp"] = KubeTime(m.time);
    if (!ns["status"].is_object()) ns["status"] = Json::object();  // (as sent: any JSON)
    ns["status"]["phase"] = "Terminating";
    store_.Put("Namespace", "", m.name, std::move(ns));
    terminating_namespaces_.insert(m.name);
    return Status::Ok();
  }
  store_.Remove("Namespace", "", m.name);
  return Status::Ok();
}

// A terminating namespace whose last pod is gone goes, with what was written in it since its
// delete (the Events of its pods' ends), as kube's namespace controller removes its finalizer.
void Cluster::PurgeNamespaces() {
  for (auto it = terminating_namespaces_.begin(); it != terminating_namespaces_.end();) {
    const std::string ns = *it;
    if (!store_.List("Pod", ns).empty()) {
      ++it;
      continue;
    }
    for (const auto& k : ServedKinds()) {
      if (!k.namespaced) continue;
      std::vector<std::string> names;
      for (const Json* o : store_.List(k.kind, ns)) names.push_back(o->at("metadata").at("name"));
      for (const auto& n : names) store_.Remove(k.kind, ns, n);
    }
    store_.Remove("Namespace", "", ns);
    it = terminating_namespaces_.erase(it);
  }
}

// Any other kind: the engine's Delete command, if it has one.
Status Cluster::DeletePolicyObject(const Mutation& m, const KindInfo& k, const std::string& ns) {
  Status s;
  if (auto op = driver::DeleteCommand(k.id, ns, m.name))
    s = Exec(engine::Command{m.time, std::move(*op)});
  if (!s.ok()) return s;
  store_.Remove(m.kind, ns, m.name);
  if (k.storage == Storage::kPolicy) policy_[m.kind].erase({ns, m.name});
  if (k.quota_effect == QuotaEffect::kEveryNamespaceOfKind) SharesMoved(m.kind);
  return Status::Ok();
}

// ------------------------------------------------------------------ the clock

void Cluster::Advance(Millis t) {
  while (auto due = timers_.PopDue(t)) {
    (void)Exec(driver::DueCommand(*due, recorder_->ExitCode(due->workload)));
  }
  (void)Exec(engine::At(t, engine::Tick{}));
  Sync(t);
}

// ------------------------------------------------------------------ engine outputs -> objects

void Cluster::AddEvent(const engine::Event& e, const Json& involved, Millis t) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(++event_counter_));
  const Json& meta = involved.at("metadata");
  const std::string name = meta.value("name", "") + suffix;
  auto d = driver::PodEventOf(e, meta.value("namespace", "default"), meta.value("name", ""));
  if (!d) return;
  EventText ev = KubeEventText(e.time, *d, involved, name, NewUid(), t);
  store_.PutText("Event", ev.ns, name, ev.text);
  KeepEvent({ev.ns, name}, std::move(ev.preemption));
}

void Cluster::StoreEvent(Json ev) {
  ev["metadata"]["uid"] = NewUid();
  const std::string ns = ev["metadata"]["namespace"];
  const std::string name = ev["metadata"]["name"];
  std::optional<Preemption> p = PreemptionOf(ev);
  store_.Put("Event", ns, name, std::move(ev));
  KeepEvent({ns, name}, std::move(p));
}

void Cluster::KeepEvent(ObjectStore::Key key, std::optional<Preemption> preemption) {
  for (const auto& gone :
       events_.Add(std::move(key), std::move(preemption), kMaxEvents, !format6_rules_))
    store_.Remove("Event", gone.first, gone.second);
}

void Cluster::RestorePreemptions() {
  events_.Assign(events_.Keys(), [&](const ObjectStore::Key& key) -> std::optional<Preemption> {
    if (auto stored = store_.Stored("Event", key.first, key.second))
      return PreemptionOf(*stored->tree());
    return std::nullopt;
  });
}

void Cluster::Sync(Millis t) {
  std::vector<engine::Event> events = std::move(sink_->events);
  sink_->events.clear();
  std::map<uint64_t, engine::WorkloadStatus> finished = std::move(sink_->finished);
  sink_->finished.clear();
  std::vector<uint64_t> restated = std::move(sink_->restated);
  sink_->restated.clear();
  std::map<uint64_t, driver::PodCondition> disruption;
  std::vector<uint64_t> touched;
  for (const auto& e : events) RecordEvent(e, finished, t, &touched, &disruption);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (uint64_t id : touched) SyncPodStatus(id, finished, disruption, t);
  bool refreshed = false;
  if (pending_walk_) {
    // (With a minimum runtime, a wake-up re-runs the queue with no event: look every time.)
    const bool may_move = !events.empty() || engine_->policy().min_runtime > 0;
    refreshed = may_move && !OnlyArrivalsMoved(events, touched);
    if (refreshed) RefreshPending(touched, t);
  }
  SyncRestated(std::move(restated), touched, finished, refreshed, t);
  RefreshPdbs(t);
  RefreshQuotas();
}

// One engine event: into the decision digest and the scheduling statistics, as a core/v1 Event
// on its pod or node; the workloads it touched and the disruption texts are collected.
void Cluster::RecordEvent(const engine::Event& e,
                          const std::map<uint64_t, engine::WorkloadStatus>& finished, Millis t,
                          std::vector<uint64_t>* touched,
                          std::map<uint64_t, driver::PodCondition>* disruption) {
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
    return;
  }
  const uint64_t id = engine::Value(e.workload);
  touched->push_back(id);
  if (auto d = driver::DisruptionTarget(e)) (*disruption)[id] = std::move(*d);
  auto key = pod_of_.find(id);
  if (key == pod_of_.end()) return;
  if (new_pod_ && new_pod_->workload == id) {  // not stored yet (StoreNewPod)
    AddEvent(e, new_pod_->pod, t);
    return;
  }
  if (const Json* pod = store_.Get("Pod", key->second.first, key->second.second))
    AddEvent(e, *pod, t);
}

// A touched workload's pod: its status rewritten from the engine's; a finished one leaves the
// live maps (a deleted one the store too).
void Cluster::SyncPodStatus(uint64_t id, const std::map<uint64_t, engine::WorkloadStatus>& finished,
                            const std::map<uint64_t, driver::PodCondition>& disruption, Millis t) {
  auto key = pod_of_.find(id);
  if (key == pod_of_.end()) return;
  const auto [ns, name] = key->second;
  quota_dirty_.insert(ns);
  // A created pod held since its cycle (StoreNewPod), with the status written below, is stored
  // here: this write's resourceVersion is the one it had when the pod was stored Pending first.
  const bool held = new_pod_ && new_pod_->workload == id;
  if (held) {
    store_.Put("Pod", ns, name, std::move(new_pod_->pod));
    new_pod_.reset();
  }
  const Json* stored = store_.Get("Pod", ns, name);
  auto fin = finished.find(id);
  std::optional<engine::WorkloadStatus> st;
  if (fin != finished.end())
    st = fin->second;
  else
    st = engine_->Get(WorkloadId{id});
  if (!stored || !st) return;
  NotePending(id, *st);
  if (fin == finished.end()) NoteFacts(key->second, *st);
  if (fin != finished.end()) {
    facts_.Erase(id);
    pod_of_.erase(id);
    usage_of_.erase(id);
    workload_of_.erase({ns, name});
    if (st->phase == engine::Phase::kDeleted && !KeptForJob(*stored)) {
      store_.Remove("Pod", ns, name);
      return;
    }
    // A deleted pod of a Job stays, Failed, until the Job controller counted it (its finalizer).
    if (st->phase != engine::Phase::kDeleted) finished_of_.insert_or_assign({ns, name}, id);
    if (st->phase == engine::Phase::kDeleted &&
        !stored->at("metadata").contains("deletionTimestamp")) {
      Json pod = *stored;
      pod["metadata"]["deletionTimestamp"] = KubeTime(t);
      pod["metadata"]["deletionGracePeriodSeconds"] = 0;
      store_.Put("Pod", ns, name, std::move(pod));
      stored = store_.Get("Pod", ns, name);
    }
  }
  if (held) return;  // (its status is the one StoreNewPod gave it)
  auto d = disruption.find(id);
  PodStatusUpdate u =
      PodStatusOf(*stored, *st, d == disruption.end() ? nullptr : &d->second, t, StatusRulesNow());
  if (!Changes(*stored, u)) return;
  Json pod = *stored;
  ApplyPodStatus(pod, std::move(u));
  store_.Put("Pod", ns, name, std::move(pod));
}

// A cycle that only took arrivals (no release, no reservation, no gang) attempted only them: no
// other pending pod's text moved (engine/queue.cc RunCycle).
bool Cluster::OnlyArrivalsMoved(const std::vector<engine::Event>& events,
                                const std::vector<uint64_t>& touched) const {
  if (!reserved_.empty() || engine_->policy().min_runtime != 0) return false;
  bool arrived = false;
  for (const auto& e : events) {
    arrived = arrived || e.type == EventType::kSubmitted;
    if (e.type != EventType::kSubmitted && e.type != EventType::kScheduled &&
        e.type != EventType::kFailedScheduling && e.type != EventType::kQuotaExceeded &&
        e.type != EventType::kBorrowed)
      return false;
  }
  if (!arrived) return false;
  for (uint64_t id : touched) {
    auto key = pod_of_.find(id);
    const Json* pod =
        key == pod_of_.end() ? nullptr : store_.Get("Pod", key->second.first, key->second.second);
    if (pod && pod->contains("metadata") && pod->at("metadata").contains("labels") &&
        pod->at("metadata").at("labels").contains(kPodGroupLabel))
      return false;
  }
  return true;
}

// Workloads whose status moved without an Event (EventSink::OnRestated), not touched by one:
// their facts read again and, while pending, their pod's status rewritten if its message or
// nominated node moved. The walk (SetPendingWalk) writes no status here: a journal of formats 1-3
// replays to the versions its release served, whose RefreshPending skipped the pods a cycle that
// only took arrivals restated; nor does it read again what RefreshPending just read (every pod
// still in pending_).
void Cluster::SyncRestated(std::vector<uint64_t> restated, const std::vector<uint64_t>& touched,
                           const std::map<uint64_t, engine::WorkloadStatus>& finished,
                           bool refreshed, Millis t) {
  std::sort(restated.begin(), restated.end());
  restated.erase(std::unique(restated.begin(), restated.end()), restated.end());
  for (uint64_t id : restated) {
    if (finished.count(id) || std::binary_search(touched.begin(), touched.end(), id) ||
        (refreshed && pending_.count(id)))
      continue;
    auto key = pod_of_.find(id);
    if (key == pod_of_.end()) continue;
    const std::optional<engine::WorkloadStatus> st = engine_->Get(WorkloadId{id});
    if (!st) continue;
    NoteFacts(key->second, *st);
    if (!pending_walk_ && st->phase == engine::Phase::kPending)
      RewritePendingStatus(key->second, *st, t);
  }
}

// A pending pod's status rewritten from the engine's when its message or nominated node moved.
void Cluster::RewritePendingStatus(const ObjectStore::Key& key, const engine::WorkloadStatus& st,
                                   Millis t) {
  const Json* stored = store_.Get("Pod", key.first, key.second);
  if (!stored) return;
  const Json& status = json_member::Member(*stored, "status");
  if (status.is_object() && status.value("message", "") == st.message &&
      status.value("nominatedNodeName", "") == st.nominated_node)
    return;
  PodStatusUpdate u = PodStatusOf(*stored, st, nullptr, t, StatusRulesNow());
  if (!Changes(*stored, u)) return;
  Json pod = *stored;
  ApplyPodStatus(pod, std::move(u));
  store_.Put("Pod", key.first, key.second, std::move(pod));
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
    NoteFacts(key->second, *st);
    RewritePendingStatus(key->second, *st, t);
  }
}

void Cluster::SetRecordFormat(int format) {
  SetPendingWalk(format <= 3);
  SetFormat4Jobs(format <= 4);
  SetFormat5Rules(format <= 5);
  SetFormat6Rules(format <= 6);
  SetFormat7Rules(format <= 7);
  SetFormat8Rules(format <= 8);
  SetFormat9Rules(format <= 9);
  SetFormat10Rules(format <= 10);
}

void Cluster::SetPendingWalk(bool on) {
  if (on == pending_walk_) return;
  pending_walk_ = on;
  pending_.clear();
  reserved_.clear();
  if (on)
    for (const auto& [id, key] : pod_of_)
      if (auto st = engine_->Get(WorkloadId{id})) NotePending(id, *st);
}

void Cluster::NotePending(uint64_t id, const engine::WorkloadStatus& s) {
  if (!pending_walk_) return;
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

void Cluster::SharesMoved(const std::string& kind) {
  for (const auto& [key, entry] : policy_[kind]) shares_dirty_.insert(key.first);
}

void Cluster::RefreshQuotas() {
  // Status from the engine's answers (usage as its quota book charges it), formatted only; those
  // of the namespaces that moved, each O(its quotas): the ElasticQuota of a namespace whose
  // share may have moved (shares_dirty_), every quota of one whose pods or quotas changed.
  shares_dirty_.insert(quota_dirty_.begin(), quota_dirty_.end());
  for (const auto& ns : shares_dirty_) {
    // ElasticQuota status.used: what the namespace's running workloads use of each resource of
    // its min and max; status.fairShare: the weighted dominant-resource share of what the cohort
    // lends (core/engine/fair_share.h), as the dashboard and `arbiter sim`'s report give it.
    if (const auto u = engine_->elastic_quota_usage_without_lent(ns)) {
      Json used = Json::object();
      for (const auto& [r, v] : u->min.entries())
        used[r] = FormatResourceQuantity(r, u->used.Get(r));
      if (u->max)
        for (const auto& [r, v] : u->max->entries())
          used[r] = FormatResourceQuantity(r, u->used.Get(r));
      Json status = {{"used", used}};
      if (!u->cohort.empty()) status["fairShare"] = engine::FormatShare(u->fair_share);
      WriteStatus("ElasticQuota", ns, u->name, std::move(status));
    }
  }
  shares_dirty_.clear();
  for (const auto& ns : quota_dirty_)
    for (const engine::ResourceQuotaUsage& u : engine_->resource_quota_usages(ns))
      WriteStatus("ResourceQuota", ns, u.name, QuotaStatus(u));
  quota_dirty_.clear();
}

}  // namespace arbiter::server
