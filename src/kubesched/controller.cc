#include "kubesched/controller.h"

#include <algorithm>
#include <tuple>

#include "adapters/json/member.h"
#include "adapters/yaml/manifest_loader.h"
#include "adapters/yaml/manifest_rules.h"
#include "core/resources.h"
#include "driver/object_commands.h"
#include "driver/pod_scheduling.h"

namespace arbiter::kubesched {

using engine::Phase;
using engine::WorkloadId;

// ------------------------------------------------------------------ helpers

namespace {

using json_member::Member;
std::string Str(const Json& o, const char* a, const char* b) {
  const Json& v = Member(Member(o, a), b);
  return v.is_string() ? v.get<std::string>() : "";
}
std::pair<std::string, std::string> KeyOf(const Json& o) {
  return {Str(o, "metadata", "namespace"), Str(o, "metadata", "name")};
}
std::string Display(const std::pair<std::string, std::string>& k) {
  return k.first.empty() ? k.second : k.first + "/" + k.second;
}

bool Terminal(const Json& pod) {
  const std::string phase = Str(pod, "status", "phase");
  return phase == "Succeeded" || phase == "Failed";
}
bool Deleting(const Json& pod) {
  return !Member(Member(pod, "metadata"), "deletionTimestamp").is_null();
}

bool Listed(const std::vector<std::string_view>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A container without the fields the loader ignores without a word (yaml/manifest_rules.h).
Json LoadableContainer(const Json& c) {
  if (!c.is_object()) return c;
  Json out = Json::object();
  for (const auto& [k, v] : c.items())
    if (!Listed(yaml::kIgnoredContainerFields, k)) out[k] = v;
  return out;
}

// A Pod's spec without spec.nodeName and without the fields, of the spec and of its containers,
// that the loader ignores without a word: what it reads is the same, and the API server's
// additions (the service account's volume, whose name differs from pod to pod, the mounts,
// image pull policy, termination message path) are neither copied nor converted.
Json LoadablePodSpec(const Json& spec) {
  if (!spec.is_object()) return spec;
  Json out = Json::object();
  for (const auto& [k, v] : spec.items()) {
    if (k == "nodeName" || Listed(yaml::kIgnoredPodSpecFields, k)) continue;
    if ((k == "containers" || k == "initContainers") && v.is_array()) {
      Json list = Json::array();
      for (const auto& c : v) list.push_back(LoadableContainer(c));
      out[k] = std::move(list);
    } else {
      out[k] = v;
    }
  }
  return out;
}

// What the manifest loader reads of an object the API server sent: the fields a user writes
// (the server's own metadata, status and managed fields left out, never copied; a Node keeps its
// status, its capacity; a Pod its spec as LoadablePodSpec, the loader's business being the
// request).
Json Loadable(const std::string& kind, const Json& o) {
  if (!o.is_object()) return o;
  Json out = Json::object();
  for (const auto& [k, v] : o.items())
    if (k != "metadata" && k != "status" && k != "spec") out[k] = v;
  Json meta = Json::object();
  const Json& m = Member(o, "metadata");
  for (const char* f : {"name", "namespace", "labels", "annotations"})
    if (m.contains(f)) meta[f] = m[f];
  out["metadata"] = std::move(meta);
  if (kind == "Node") {
    Json st = Json::object();
    for (const char* f : {"capacity", "allocatable"})
      if (Member(o, "status").contains(f)) st[f] = o["status"][f];
    out["status"] = std::move(st);
  }
  if (auto spec = o.find("spec"); spec != o.end())
    out["spec"] = kind == "Pod" ? LoadablePodSpec(*spec) : *spec;
  return out;
}

// The loaded set, or the loader's errors.
Result<ManifestSet> LoadOutcome(yaml::ManifestLoad&& load) {
  if (!load.ok()) {
    std::string why;
    for (const auto& d : load.diagnostics.items)
      if (d.severity == Severity::kError) {
        if (!why.empty()) why += "; ";
        why += (d.field_path.empty() ? "" : d.field_path + ": ") + d.message;
      }
    return Status::InvalidArgument(why);
  }
  return std::move(load.set);
}

Result<ManifestSet> LoadOne(const std::string& kind, const Json& o) {
  yaml::ManifestLoad load;
  yaml::LoadManifestJson(Loadable(kind, o), kind, &load);  // the tree, not its text again
  load.ReleaseSources();
  return LoadOutcome(std::move(load));
}

ResourceList ListOf(const Json& l) {
  ResourceList out;
  if (!l.is_object()) return out;
  for (const auto& [r, v] : l.items()) {
    const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    auto q = ParseResourceQuantity(r, text);
    if (q.ok()) out.Set(r, *q);
  }
  return out;
}

}  // namespace

Result<ManifestSet> LoadObject(const std::string& kind, const Json& object) {
  return LoadOne(kind, object);
}

ResourceList PodRequests(const Json& pod) {
  const Json& spec = Member(pod, "spec");
  ResourceList sum, init_max;
  if (Member(spec, "containers").is_array())
    for (const auto& c : spec["containers"])
      sum += ListOf(Member(Member(c, "resources"), "requests"));
  if (Member(spec, "initContainers").is_array())
    for (const auto& c : spec["initContainers"])
      init_max = ResourceList::Max(init_max, ListOf(Member(Member(c, "resources"), "requests")));
  ResourceList r = ResourceList::Max(sum, init_max);
  r += ListOf(Member(spec, "overhead"));
  return r;
}

// ------------------------------------------------------------------ the engine's outputs

class Controller::Sink final : public engine::EventSink {
 public:
  explicit Sink(Controller* c) : c_(c) {}
  void OnEvent(const engine::Event& e) override {
    if (e.workload != engine::kNoWorkload) c_->settled_.erase(engine::Value(e.workload));
    if (e.type == engine::EventType::kPreempted || e.type == engine::EventType::kReclaimed)
      c_->stop_of_[engine::Value(e.workload)] = e;
    if (e.type == engine::EventType::kFailedScheduling ||
        e.type == engine::EventType::kQuotaExceeded)
      c_->pending_kind_[engine::Value(e.workload)] = e.type;
    if (e.type == engine::EventType::kRejected) c_->rejected_[engine::Value(e.workload)].event = e;
    if (e.type == engine::EventType::kScheduled) c_->Placed(e);
  }
  // The final status of a rejected workload: its PodScheduled reason (driver::PodSchedulingOf).
  void OnFinished(const engine::WorkloadStatus& s) override {
    if (s.phase == Phase::kRejected) c_->rejected_[engine::Value(s.id)].status = s;
  }

 private:
  Controller* c_;
};

Controller::Controller(ControllerOptions options)
    : options_(std::move(options)),
      engine_(std::make_unique<engine::Engine>()),
      sink_(std::make_unique<Sink>(this)) {
  engine_->SetSinks(sink_.get(), nullptr);
}

Controller::~Controller() = default;

std::vector<EventRequest> Controller::TakeEvents() {
  std::vector<EventRequest> out = std::move(events_);
  events_.clear();
  return out;
}

std::vector<std::string> Controller::TakeLog() {
  std::vector<std::string> out = std::move(log_);
  log_.clear();
  return out;
}

Status Controller::Apply(engine::Command c) {
  const char* name = engine::CommandName(c);
  Status s = engine_->Apply(std::move(c));
  if (!s.ok()) Log(std::string("engine refused ") + name + ": " + s.message());
  return s;
}

bool Controller::Ours(const Json& pod) const {
  return Str(pod, "spec", "schedulerName") == options_.scheduler_name;
}

// ------------------------------------------------------------------ deliveries

void Controller::Synced(const std::string& kind, std::vector<Json> items) {
  auto& objs = objects_[kind];
  std::map<Key, Json> now;
  for (auto& o : items) {
    Key key = KeyOf(o);  // before the move: json's operator= takes its argument by value
    now[std::move(key)] = std::move(o);
  }
  for (const auto& [key, o] : objs)
    if (!now.count(key)) dirty_[kind].insert(key);
  for (const auto& [key, o] : now) {
    auto it = objs.find(key);
    if (it == objs.end() || it->second != o) dirty_[kind].insert(key);
  }
  objs = std::move(now);
}

void Controller::Upsert(const std::string& kind, Json object) {
  const Key key = KeyOf(object);
  objects_[kind][key] = std::move(object);
  dirty_[kind].insert(key);
}

void Controller::Remove(const std::string& kind, const Json& object) {
  const Key key = KeyOf(object);
  objects_[kind].erase(key);
  dirty_[kind].insert(key);
}

std::vector<PriceBook> Controller::PriceBooks() const {
  std::vector<PriceBook> out = options_.policy.price_books;
  if (auto it = objects_.find("PriceBook"); it != objects_.end())
    for (const auto& [key, o] : it->second)
      if (auto load = LoadOne("PriceBook", o); load.ok())
        for (auto& b : load->price_books) out.push_back(std::move(b));
  return out;
}

// ------------------------------------------------------------------ objects to commands

namespace {

// The kinds that become policy commands, in the order a pool is built.
const std::vector<std::string>& PolicyKinds() {
  static const std::vector<std::string> k = {
      "PoolPolicy",    "PriorityClass",  "QoS",          "Namespace",           "LimitRange",
      "ResourceQuota", "ResourceFlavor", "ElasticQuota", "PodDisruptionBudget", "PriceBook"};
  return k;
}

void AppendPolicy(ManifestSet& dst, ManifestSet&& src) {
  auto cat = [](auto& a, auto& b) {
    a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
  };
  cat(dst.namespaces, src.namespaces);
  cat(dst.resource_quotas, src.resource_quotas);
  cat(dst.limit_ranges, src.limit_ranges);
  cat(dst.priority_classes, src.priority_classes);
  cat(dst.pdbs, src.pdbs);
  if (src.pool_policy) dst.pool_policy = std::move(src.pool_policy);
  cat(dst.elastic_quotas, src.elastic_quotas);
  cat(dst.resource_flavors, src.resource_flavors);
  cat(dst.price_books, src.price_books);
  cat(dst.qos, src.qos);
}

}  // namespace

// PoolPolicy quota.maxSubmittedPerNamespace bounds what `arbiter serve` stores and what `arbiter
// sim` queues. Here the pods are kube-apiserver's, created already: refusing one would leave it
// Pending for good (a rejection is final to the engine) and a restart would pick other pods to
// refuse. It is left out (said once a load); a count/pods ResourceQuota bounds pods here.
void Controller::DropSubmitLimit(ManifestSet& set) {
  if (!set.pool_policy || set.pool_policy->max_submitted_per_namespace == 0) return;
  Log("PoolPolicy " + set.pool_policy->meta.name +
      ": spec.quota.maxSubmittedPerNamespace is not applied by arbiter scheduler (pods exist in "
      "kube-apiserver already; a count/pods ResourceQuota limits them)");
  set.pool_policy->max_submitted_per_namespace = 0;
}

void Controller::Start(Millis now) {
  ManifestSet all = options_.policy;
  all.nodes.clear();
  all.pods.clear();
  for (const auto& kind : PolicyKinds())
    for (const auto& [key, o] : objects_[kind]) {
      auto set = LoadOne(kind, o);
      if (!set.ok()) {
        Log(kind + " " + Display(key) + " ignored: " + set.message());
        continue;
      }
      AppendPolicy(all, std::move(set).value());
    }
  ResolveFlavors(&all);  // an ElasticQuota's spec.flavors: the cluster's ResourceFlavors
  DropSubmitLimit(all);
  for (engine::CommandOp& op : driver::PolicyUpsertCommands(all))
    (void)Apply(engine::Command{now, std::move(op)});
  // Arbiter's pods bound before this process started are placed where they are (so they are not
  // taken off their nodes' allocatable), in a cycle of their own; then the pending ones.
  std::vector<std::pair<std::string, Key>> order;
  for (const auto& [key, o] : objects_["Pod"])
    order.push_back({Str(o, "metadata", "creationTimestamp"), key});
  std::sort(order.begin(), order.end());
  for (const auto& [key, o] : objects_["Job"]) ApplyJob(key, now);  // tracked, no slots yet
  std::vector<Key> pinned;
  for (const auto& [created, key] : order) {
    const Json& pod = objects_["Pod"][key];
    if (Ours(pod) && !Terminal(pod) && !Deleting(pod) && !Str(pod, "spec", "nodeName").empty()) {
      const Key* job = JobOfPod(pod);  // a Job's pods: its slots are pinned there
      if (job && Member(Member(objects_["Job"][*job], "spec"), "suspend") == true) continue;
      pods_[key].pinning = true;
      if (!job) pinned.push_back(key);
    }
  }
  for (const auto& [key, pod] : objects_["Pod"]) {
    PodTrack& t = pods_[key];
    t.seen_node = Str(pod, "spec", "nodeName");
    t.seen_terminal = Terminal(pod);
    CountForeign(key, t, true);
  }
  foreign_moved_.clear();
  for (const auto& [key, o] : objects_["Node"]) ApplyNode(key.second, now);
  (void)Apply(engine::At(now, engine::Tick{}));
  started_ = true;
  validity_due_ = true;
  for (const auto& [key, o] : objects_["Job"])  // admitted Jobs: slots where their pods run
    if (Member(Member(o, "spec"), "suspend") == false) ApplyJob(key, now);
  for (const Key& key : pinned) SubmitPod(key, objects_["Pod"][key], pods_[key], now, true);
  (void)Apply(engine::At(now, engine::Tick{}));
  for (auto& [key, t] : pods_) {
    t.pinning = false;
    if (!t.workload) continue;
    auto st = engine_->Get(WorkloadId{*t.workload});
    if (st && st->phase == Phase::kRunning) continue;
    Log("pod " + Display(key) + " runs on " + t.bound + " but the engine cannot place it there (" +
        PinRefusal(*t.workload) + "): counted as foreign");
    Forget(t, now);
    CountForeign(key, t, false);  // off its node's allocatable before the pending pods come
  }
  for (const auto& name : foreign_moved_) ApplyNode(name, now);
  foreign_moved_.clear();
  // Then the pending pods and the Jobs waiting for admission, in creation order.
  std::vector<std::tuple<std::string, bool, Key>> rest;
  for (const auto& [created, key] : order) rest.emplace_back(created, false, key);
  for (const auto& [key, o] : objects_["Job"])
    rest.emplace_back(Str(o, "metadata", "creationTimestamp"), true, key);
  std::sort(rest.begin(), rest.end());
  for (const auto& [created, job, key] : rest) job ? ApplyJob(key, now) : ApplyPod(key, now);
  dirty_.clear();
}

// Why the engine did not bind a pinned workload: its reason and text, pending (its status) or
// rejected at admission (its Rejected event).
std::string Controller::PinRefusal(uint64_t workload) const {
  if (auto st = engine_->Get(WorkloadId{workload}))
    return st->reason.empty() ? engine::ToString(st->phase) : st->reason + ": " + st->message;
  if (auto r = rejected_.find(workload); r != rejected_.end())
    return std::string(r->second.event.reason) + ": " + r->second.event.message;
  return "gone";
}

void Controller::ApplyPolicy(const std::string& kind, const Key& key, Millis now) {
  auto it = objects_[kind].find(key);
  if (it == objects_[kind].end()) {
    if (auto op = driver::DeleteCommand(kind, key.first, key.second))
      if (Status s = engine_->Apply(engine::Command{now, std::move(*op)});
          !s.ok() && s.code() != StatusCode::kNotFound)
        Log("deleting " + kind + " " + Display(key) + ": " + s.message());
    return;
  }
  auto set = LoadOne(kind, it->second);
  if (!set.ok()) {
    Log(kind + " " + Display(key) + " ignored: " + set.message());
    return;
  }
  ManifestSet loaded = std::move(set).value();
  if (!loaded.elastic_quotas.empty()) {  // with the node labels of the flavors it names
    AppendPolicy(loaded, ManifestSet(LoadedFlavors()));
    ResolveFlavors(&loaded);
  }
  DropSubmitLimit(loaded);
  for (engine::CommandOp& op : driver::PolicyUpsertCommands(loaded))
    (void)Apply(engine::Command{now, std::move(op)});
}

const ManifestSet& Controller::LoadedFlavors() {
  if (!flavors_) {
    flavors_.emplace();
    for (const auto& [fkey, flavor] : objects_["ResourceFlavor"])
      if (auto f = LoadOne("ResourceFlavor", flavor); f.ok())
        AppendPolicy(*flavors_, std::move(f).value());
  }
  return *flavors_;
}

bool Controller::InPool(const Json& node) const {
  const Json& labels = Member(Member(node, "metadata"), "labels");
  for (const auto& [k, v] : options_.node_selector) {
    const Json& have = Member(labels, k.c_str());
    if (!have.is_string() || have.get<std::string>() != v) return false;
  }
  return true;
}

void Controller::ApplyNode(const std::string& name, Millis now) {
  auto it = objects_["Node"].find({"", name});
  if (it == objects_["Node"].end() || !InPool(it->second)) {
    CountPoolNode(name, {});
    if (node_sig_.erase(name)) (void)Apply(engine::At(now, engine::RemoveNode{name}));
    return;
  }
  const auto f = foreign_.find(name);
  const ResourceList foreign = f == foreign_.end() ? ResourceList() : f->second;
  const std::string sig = Loadable("Node", it->second).dump() + "|" + foreign.ToString();
  if (node_sig_[name] == sig) return;
  auto set = LoadOne("Node", it->second);
  if (!set.ok() || set->nodes.size() != 1) {
    Log("node " + name + " ignored: " + set.message());
    node_sig_[name] = sig;  // reported once
    CountPoolNode(name, {});
    return;
  }
  Node n = std::move(set->nodes.front());
  CountPoolNode(name, n.unschedulable ? ResourceList() : n.allocatable);
  if (!n.meta.labels.count("kubernetes.io/hostname"))
    n.meta.labels["kubernetes.io/hostname"] = name;
  for (const auto& [r, v] : foreign.entries())
    n.allocatable.Set(r, std::max<int64_t>(0, n.allocatable.Get(r) - v));
  if (Apply(engine::At(now, engine::UpsertNode{std::move(n), 0})).ok()) node_sig_[name] = sig;
}

void Controller::CountPoolNode(const std::string& name, ResourceList allocatable) {
  auto it = pool_nodes_.find(name);
  if (it == pool_nodes_.end() ? allocatable.empty() : it->second == allocatable) return;
  if (it != pool_nodes_.end()) {
    pool_allocatable_ -= it->second;
    pool_nodes_.erase(it);
  }
  pool_allocatable_ += allocatable;
  pool_allocatable_.Compact();
  if (!allocatable.empty()) pool_nodes_.emplace(name, std::move(allocatable));
  validity_due_ = true;  // a cohort's min against the pool: checked again
}

void Controller::CountForeign(const Key& key, PodTrack& t, bool reread) {
  bool held = t.workload || t.pinning;
  if (!held && t.slot)  // a Job's pod in a slot that holds its node
    if (auto st = engine_->Get(WorkloadId{*t.slot});
        st && (st->phase == Phase::kRunning || st->phase == Phase::kTerminating))
      held = true;
  const bool counted = !t.seen_node.empty() && !t.seen_terminal && !held;
  static const std::string kNowhere;
  const std::string& node = counted ? t.seen_node : kNowhere;
  if (node == t.foreign_node && !reread) return;
  ResourceList requests;
  if (counted)
    if (auto obj = objects_["Pod"].find(key); obj != objects_["Pod"].end())
      requests = PodRequests(obj->second);
  if (node == t.foreign_node && requests == t.foreign_requests) return;
  if (!t.foreign_node.empty()) {
    auto f = foreign_.find(t.foreign_node);
    if (f != foreign_.end()) {
      f->second -= t.foreign_requests;
      f->second.Compact();
      if (f->second.empty()) foreign_.erase(f);
    }
    foreign_moved_.insert(t.foreign_node);
  }
  if (counted) {
    foreign_[node] += requests;
    foreign_moved_.insert(node);
  }
  t.foreign_node = node;
  t.foreign_requests = std::move(requests);
}

// ------------------------------------------------------------------ pods

// A pod whose shape (what the loader reads, but its name) was loaded before takes that Pod with
// its own name, when the loader would accept the name (the one check of the name it makes).
Result<Pod> Controller::LoadPod(const Json& pod) {
  Json loadable = Loadable("Pod", pod);
  std::string key;
  const std::string name = Str(pod, "metadata", "name");
  if (!name.empty() && yaml::IsDns1123Subdomain(name)) {
    loadable["metadata"].erase("name");
    key = loadable.dump();
    if (auto hit = pod_loads_.find(key); hit != pod_loads_.end()) {
      Pod p = hit->second;
      p.meta.name = name;
      return p;
    }
    loadable["metadata"]["name"] = name;
  }
  yaml::ManifestLoad load;
  yaml::LoadManifestJson(loadable, "Pod", &load);
  load.ReleaseSources();
  auto set = LoadOutcome(std::move(load));
  if (!set.ok()) return set.status();
  if (set->pods.size() != 1) return Status::InvalidArgument("not one pod");
  if (!key.empty()) {
    if (pod_loads_.size() >= kPodLoads) pod_loads_.clear();
    pod_loads_.emplace(std::move(key), set->pods.front());
  }
  return std::move(set->pods.front());
}

void Controller::SubmitPod(const Key& key, const Json& pod, PodTrack& t, Millis now, bool pinned) {
  auto loaded = LoadPod(pod);
  if (!loaded.ok()) {
    t.invalid = true;
    t.invalid_message = "Arbiter cannot schedule this pod: " + loaded.message();
    Log("pod " + Display(key) + ": " + t.invalid_message);
    return;
  }
  Pod p = std::move(loaded).value();
  if (!ResolveGroup(key, p, t) && !pinned) return;     // its PodGroup first
  if (pinned) t.bound = Str(pod, "spec", "nodeName");  // it runs there: SubmitPod::node
  const uint64_t id = engine::Value(engine_->next_workload_id());
  std::string group = p.pod_group ? p.pod_group->name : "";
  if (!Apply(engine::At(now, engine::SubmitPod{std::move(p), false, {}, pinned ? t.bound : ""}))
           .ok())
    return;
  t.workload = id;
  pod_of_[id] = key;
  SetGroupMember(key, t, std::move(group));
}

// The pod's PodGroupRef from the cluster's PodGroup its label names (scheduling.x-k8s.io/
// pod-group, in its namespace). False when that PodGroup does not exist (yet): the pod waits for
// it, as with the coscheduling plugin, and says so in its PodScheduled condition.
bool Controller::ResolveGroup(const Key& key, Pod& p, PodTrack& t) {
  SetGroupWait(key, t, "");
  const auto label = p.meta.labels.find(kPodGroupLabel);
  if (label == p.meta.labels.end()) return true;
  ManifestSet s;
  const auto& groups = objects_["PodGroup"];
  if (auto g = groups.find({key.first, label->second}); g != groups.end())
    if (auto loaded = LoadOne("PodGroup", g->second); loaded.ok()) s = std::move(loaded).value();
  s.pods.push_back(std::move(p));
  ResolvePodGroups(&s);
  p = std::move(s.pods.back());
  if (p.pod_group) return true;
  SetGroupWait(key, t, label->second);
  return false;
}

void Controller::SetGroupWait(const Key& key, PodTrack& t, std::string group) {
  if (!t.group_wait.empty())
    if (auto w = group_waiters_.find({key.first, t.group_wait}); w != group_waiters_.end()) {
      w->second.erase(key);
      if (w->second.empty()) group_waiters_.erase(w);
    }
  t.group_wait = std::move(group);
  if (!t.group_wait.empty()) group_waiters_[{key.first, t.group_wait}].insert(key);
}

void Controller::SetGroupMember(const Key& key, PodTrack& t, std::string group) {
  if (!t.group.empty())
    if (auto m = group_members_.find({key.first, t.group}); m != group_members_.end()) {
      m->second.pods.erase(key);
      if (m->second.pods.empty()) group_members_.erase(m);
    }
  t.group = std::move(group);
  if (t.group.empty()) return;
  GroupMembers& m = group_members_[{key.first, t.group}];
  m.spec = GroupSpec({key.first, t.group});  // the PodGroup it was submitted with
  m.pods.insert(key);
}

void Controller::Forget(PodTrack& t, Millis now) {
  if (!t.workload) return;
  const WorkloadId id{*t.workload};
  if (auto st = engine_->Get(id)) {
    if (st->phase != Phase::kTerminating || !t.delete_told)
      (void)Apply(engine::At(now, engine::DeletePod{id, 0, false}));  // (forgotten: no kill)
    if (auto again = engine_->Get(id); again && again->phase == Phase::kTerminating)
      (void)Apply(engine::At(now, engine::VictimExited{id}));
  }
  pod_of_.erase(*t.workload);
  pending_kind_.erase(*t.workload);
  t.workload.reset();
}

void Controller::ApplyPod(const Key& key, Millis now) {
  auto it = objects_["Pod"].find(key);
  if (it == objects_["Pod"].end()) {  // gone from the cluster
    auto t = pods_.find(key);
    if (t != pods_.end()) {
      t->second.seen_node.clear();
      CountForeign(key, t->second, false);  // no longer counted anywhere
      Forget(t->second, now);
      ReleaseSlot(key, t->second, false, now);
      SetGroupWait(key, t->second, "");
      SetGroupMember(key, t->second, "");
      pods_.erase(t);
    }
    return;
  }
  const Json& pod = it->second;
  PodTrack& t = pods_[key];
  const std::string node = Str(pod, "spec", "nodeName");
  t.seen_node = node;
  t.seen_terminal = Terminal(pod);
  if (t.workload) settled_.erase(*t.workload);  // looked at again by Reconcile
  // A pending, unbound member of a PodGroup that changed (Regroup): submitted again with the
  // PodGroup as it is now. Never a member that runs or is bound.
  if (regroup_.erase(key) && t.workload && t.bound.empty() && node.empty())
    if (auto st = engine_->Get(WorkloadId{*t.workload}); st && st->phase == Phase::kPending)
      Forget(t, now);
  if (!t.workload) {
    if (t.slot && leaving_slots_.count(*t.slot)) {  // its Job released: held until it ends
      if (Terminal(pod)) ReleaseSlot(key, t, false, now);
      return;
    }
    if (const Key* job = JobOfPod(pod)) return ApplyJobPod(*job, key, pod, t, now);
    if (!node.empty()) t.bound = node;
    if (Ours(pod) && node.empty() && !Terminal(pod) && !Deleting(pod) && !t.invalid)
      SubmitPod(key, pod, t, now, false);
    return;
  }
  const WorkloadId id{*t.workload};
  const auto st = engine_->Get(id);
  if (!st) {
    pod_of_.erase(*t.workload);
    t.workload.reset();
    return;
  }
  if (Terminal(pod)) {
    if (st->phase == Phase::kRunning) {
      (void)Apply(engine::At(
          now, engine::PodFinished{id, Str(pod, "status", "phase") == "Succeeded" ? 0 : 1}));
      pod_of_.erase(*t.workload);
      t.workload.reset();
    } else {
      Forget(t, now);
    }
  } else if (!node.empty() && node != st->node) {
    Log("pod " + Display(key) + " was bound to " + node + " by someone else (Arbiter had " +
        (st->node.empty() ? std::string("not placed it") : "placed it on " + st->node) +
        "): counted as foreign");
    Forget(t, now);
    t.bound = node;
  } else if (Deleting(pod) && !t.delete_told) {  // a user's delete: nothing to evict
    t.delete_told = true;
    t.evicted = true;
    (void)Apply(engine::At(now, engine::DeletePod{id, std::nullopt}));
    if (st->phase == Phase::kPending) {
      pod_of_.erase(*t.workload);
      t.workload.reset();
    }
  }
  if (!node.empty()) t.bound = node;
}

// ------------------------------------------------------------------ the cycle

// What a change of one object means for others: a ResourceFlavor changed or gone, every
// ElasticQuota again (those naming it take its node labels); a PodGroup that arrived or changed,
// the pods of its namespace that carry its label and wait for it, and, its spec changed or it
// gone, its members still pending (Regroup).
void Controller::Propagate() {
  if (!dirty_["ResourceFlavor"].empty())
    for (const auto& [key, q] : objects_["ElasticQuota"]) dirty_["ElasticQuota"].insert(key);
  for (const auto& group : dirty_["PodGroup"]) {
    if (auto w = group_waiters_.find(group); w != group_waiters_.end())
      dirty_["Pod"].insert(w->second.begin(), w->second.end());
    Regroup(group);
  }
}

std::string Controller::GroupSpec(const Key& group) const {
  const auto kind = objects_.find("PodGroup");
  if (kind == objects_.end()) return "";
  const auto g = kind->second.find(group);
  if (g == kind->second.end()) return "";
  return g->second.contains("spec") ? g->second["spec"].dump() : "{}";
}

// A PodGroup whose spec changed (or that is gone) since its members were submitted: its pending,
// unbound members again (ApplyPod), with the PodGroup as it is now (or waiting for it). Only the
// group's own members are looked at (group_members_), those the engine no longer holds dropped.
void Controller::Regroup(const Key& group) {
  auto m = group_members_.find(group);
  if (m == group_members_.end()) return;
  const std::string spec = GroupSpec(group);
  if (spec == m->second.spec) return;  // its status, or nothing, changed
  m->second.spec = spec;
  auto& pods = m->second.pods;
  for (auto it = pods.begin(); it != pods.end();) {
    auto t = pods_.find(*it);
    if (t == pods_.end() || !t->second.workload || t->second.group != group.second) {
      if (t != pods_.end() && t->second.group == group.second) t->second.group.clear();
      it = pods.erase(it);  // no longer held as its member
      continue;
    }
    const auto st = engine_->Get(WorkloadId{*t->second.workload});
    if (st && st->phase == Phase::kPending && t->second.bound.empty()) {
      regroup_.insert(*it);
      dirty_["Pod"].insert(*it);
    }
    ++it;
  }
  if (pods.empty()) group_members_.erase(m);
}

void Controller::Placed(const engine::Event& e) {
  if (!placed_ || !*placed_) return;
  auto k = pod_of_.find(engine::Value(e.workload));
  if (k == pod_of_.end()) return;  // a Job's slot, not a pod
  auto t = pods_.find(k->second);
  const auto obj = objects_["Pod"].find(k->second);
  if (t == pods_.end() || obj == objects_["Pod"].end()) return;
  if (!t->second.bound.empty() || e.time < t->second.retry_at) return;  // as Reconcile
  placed_now_.insert(engine::Value(e.workload));
  (*placed_)(Action{Action::Type::kBind, k->second.first, k->second.second,
                    Str(obj->second, "metadata", "uid"), e.node, ""});
}

std::vector<Action> Controller::Step(Millis now, const std::function<void(Action)>& placed) {
  placed_now_.clear();
  placed_ = &placed;
  if (!started_) {
    Start(now);
  } else {
    Propagate();
    flavors_.reset();  // loaded again if an ElasticQuota is applied: a flavor may have changed
    for (const auto& kind : PolicyKinds())
      for (const auto& key : dirty_[kind]) ApplyPolicy(kind, key, now);
    flavors_.reset();
    for (const auto& key : dirty_["Job"]) ApplyJob(key, now);
    const std::set<Key>& pods = dirty_["Pod"];
    for (const auto& key : pods) ApplyPod(key, now);
    regroup_.clear();
    // Foreign usage: the changed pods read again, the others looked at for a change of who holds
    // them (the engine let go of one, or took one).
    for (const auto& key : pods)
      if (auto t = pods_.find(key); t != pods_.end()) CountForeign(key, t->second, true);
    for (auto& [key, t] : pods_) CountForeign(key, t, false);
    std::set<std::string> nodes = std::move(foreign_moved_);
    foreign_moved_.clear();
    for (const auto& key : dirty_["Node"]) nodes.insert(key.second);
    for (const auto& name : nodes) ApplyNode(name, now);
    for (const auto& kind : ValidatedKinds())
      if (auto d = dirty_.find(kind); d != dirty_.end() && !d->second.empty()) validity_due_ = true;
    dirty_.clear();
  }
  (void)Apply(engine::At(now, engine::Tick{}));
  std::vector<Action> out;
  for (auto& [key, j] : jobs_) ReconcileJob(key, j, now, &out);
  Reconcile(now, &out);
  ReconcileQuotaStatus(now, &out);
  ReconcileValidity(now, &out);
  placed_ = nullptr;
  return out;
}

std::optional<Millis> Controller::NextDue() const { return engine_->NextWakeup(); }

void Controller::Reconcile(Millis now, std::vector<Action>* out) {
  TakeRejected();
  const std::map<std::string, std::string> refused = RefusedEvictions();
  std::vector<uint64_t> look;  // in id order, as Engine::Workloads
  look.reserve(pod_of_.size());
  for (const auto& [id, key] : pod_of_)
    if (!settled_.count(id)) look.push_back(id);
  for (uint64_t id : look)
    if (auto st = engine_->Get(WorkloadId{id})) ReconcileWorkload(*st, refused, now, out);
  ReconcileUnheld(now, out);
  if (settled_.size() > 2 * pod_of_.size() + 1024)  // the ids of pods since let go
    for (auto it = settled_.begin(); it != settled_.end();)
      it = pod_of_.count(*it) ? std::next(it) : settled_.erase(it);
}

// Refused at admission: the engine let go of the workload; the pod says why (the engine's reason
// code and text, as `arbiter serve` and `arbiter sim` give them), once, by ReconcileUnheld.
void Controller::TakeRejected() {
  for (const auto& [id, rejection] : rejected_) {
    auto k = pod_of_.find(id);
    if (k == pod_of_.end()) continue;
    PodTrack& t = pods_[k->second];
    t.invalid = true;
    t.invalid_message = rejection.event.message;
    t.invalid_reason = rejection.status
                           ? driver::PodSchedulingOf(*rejection.status).scheduled.reason
                           : std::string(rejection.event.reason);
    t.rejection = rejection.event;
    t.workload.reset();
    pod_of_.erase(k);
  }
  rejected_.clear();
}

// Preemptors whose victims' evictions the API server refused: the refusal, said on them.
std::map<std::string, std::string> Controller::RefusedEvictions() const {
  std::map<std::string, std::string> refused;
  for (const auto& [key, t] : pods_) {
    if (t.refusal.empty() || !t.workload) continue;
    auto by = stop_of_.find(*t.workload);
    if (by == stop_of_.end()) continue;
    std::string& r = refused[by->second.by];
    r += (r.empty() ? "" : "; ") + std::string("the API server refused to evict ") + Display(key) +
         ": " + t.refusal;
  }
  return refused;
}

void Controller::ReconcileWorkload(const engine::WorkloadStatus& st,
                                   const std::map<std::string, std::string>& refused, Millis now,
                                   std::vector<Action>* out) {
  // Its binding is in flight since the engine placed it (Placed): nothing more until its Done
  // (should the cycle have stopped it since, it is evicted once bound, or let go if refused).
  if (placed_now_.count(engine::Value(st.id))) return;
  auto k = pod_of_.find(engine::Value(st.id));
  if (k == pod_of_.end()) return;
  PodTrack& t = pods_[k->second];
  const auto obj = objects_["Pod"].find(k->second);
  if (obj == objects_["Pod"].end() || now < t.retry_at) return;
  Action a{Action::Type::kBind,
           k->second.first,
           k->second.second,
           Str(obj->second, "metadata", "uid"),
           "",
           ""};
  if (st.phase == Phase::kRunning && !t.bound.empty()) {
    settled_.insert(engine::Value(st.id));
  } else if (st.phase == Phase::kRunning) {
    a.node = st.node;
    out->push_back(std::move(a));
  } else if (st.phase == Phase::kTerminating && !t.evicted) {
    if (t.bound.empty()) {  // never bound: nothing runs in the cluster
      (void)Apply(engine::At(now, engine::VictimExited{st.id}));
      return;
    }
    a.type = Action::Type::kEvict;
    out->push_back(std::move(a));
  } else if (st.phase == Phase::kPending) {
    const driver::PodScheduling p = driver::PodSchedulingOf(st);
    std::string message = p.scheduled.message;
    if (auto r = refused.find(st.key); r != refused.end())
      message += (message.empty() ? "" : " (") + r->second + (message.empty() ? "" : ")");
    if (t.status_written && p.scheduled.reason == t.written_reason &&
        message == t.written_message && p.nominated_node == t.written_nominated)
      return;
    a.type = Action::Type::kStatus;
    a.node = p.nominated_node;
    a.message = std::move(message);
    a.reason = p.scheduled.reason;
    out->push_back(std::move(a));
  }
}

// Pods the engine does not hold: refused by the loader or rejected by the engine, or waiting for
// their PodGroup. Said once.
void Controller::ReconcileUnheld(Millis now, std::vector<Action>* out) {
  for (auto& [key, t] : pods_) {
    if (t.workload || now < t.retry_at) continue;
    std::string message = t.invalid ? t.invalid_message : "";
    if (!t.invalid && !t.group_wait.empty())
      message = "waiting for PodGroup " + key.first + "/" + t.group_wait + " (the pod's label " +
                kPodGroupLabel + "), which does not exist";
    if (message.empty() || (t.status_written && t.written_message == message)) continue;
    const auto obj = objects_["Pod"].find(key);
    if (obj == objects_["Pod"].end()) continue;
    Action a{Action::Type::kStatus,
             key.first,
             key.second,
             Str(obj->second, "metadata", "uid"),
             "",
             message};
    // The engine's code for a pod it rejected; otherwise the engine has none (the loader refused
    // the pod, or it waits for its group).
    a.reason = t.invalid && !t.invalid_reason.empty() ? t.invalid_reason : driver::kUnschedulable;
    out->push_back(std::move(a));
  }
}

EventRequest Controller::PodEventRequest(const Action& a, const engine::Event& e) const {
  const std::optional<driver::PodEvent> d = driver::PodEventOf(e, a.namespace_, a.name);
  EventRequest r{{"v1", "Pod", a.namespace_, a.name, a.uid}, std::nullopt, false, "", "", ""};
  if (!d) return r;
  r.warning = d->warning;
  r.reason = d->reason;
  r.action = d->action;
  r.note = d->note;
  // The preemptor is one of Arbiter's pods: related, with its uid.
  const size_t slash = d->related.find('/');
  if (slash == std::string::npos) return r;
  auto id = engine_->Find(std::string_view(d->related).substr(0, slash),
                          std::string_view(d->related).substr(slash + 1));
  auto key = id ? pod_of_.find(engine::Value(*id)) : pod_of_.end();
  if (key == pod_of_.end()) return r;
  auto pods = objects_.find("Pod");
  if (pods == objects_.end()) return r;
  if (auto p = pods->second.find(key->second); p != pods->second.end())
    r.related = EventObject{"v1", "Pod", key->second.first, key->second.second,
                            Str(p->second, "metadata", "uid")};
  return r;
}

// Preempted (or Reclaimed), on the victim: the engine's event that stopped it.
EventRequest Controller::PreemptedEvent(const Action& a, const PodTrack& t) const {
  auto stop = t.workload ? stop_of_.find(*t.workload) : stop_of_.end();
  if (stop != stop_of_.end()) return PodEventRequest(a, stop->second);
  engine::Event e;  // every stop of the engine has its event: not expected
  e.type = engine::EventType::kPreempted;
  e.node = t.bound;
  e.message = "preempted on node " + t.bound;
  return PodEventRequest(a, e);
}

void Controller::Done(const Action& a, const ActionResult& r, Millis now) {
  if (a.type == Action::Type::kJob) return JobDone(a, r, now);
  if (a.type == Action::Type::kQuotaStatus) return QuotaStatusDone(a, r);
  if (a.type == Action::Type::kCondition) return ConditionDone(a, r);
  auto it = pods_.find({a.namespace_, a.name});
  if (it == pods_.end()) return;
  switch (a.type) {
    case Action::Type::kBind:
      return BindDone(a, r, it->first, it->second, now);
    case Action::Type::kEvict:
      return EvictDone(a, r, it->second, now);
    case Action::Type::kStatus:
      return StatusDone(a, r, it->second, now);
    case Action::Type::kJob:          // JobDone
    case Action::Type::kQuotaStatus:  // QuotaStatusDone
    case Action::Type::kCondition:    // ConditionDone
      return;
  }
}

void Controller::BindDone(const Action& a, const ActionResult& r, const Key& key, PodTrack& t,
                          Millis now) {
  const std::string who = a.namespace_ + "/" + a.name;
  if (r.http_status >= 200 && r.http_status < 300) {
    t.bound = a.node;
    ++binds_;
    Log("bound " + who + " to " + a.node);
    engine::Event e;
    e.type = engine::EventType::kScheduled;
    e.node = a.node;
    events_.push_back(PodEventRequest(a, e));
  } else if (r.http_status == 409 && r.bound_node == a.node) {
    t.bound = a.node;  // an earlier attempt of ours went through
    Log("bound " + who + " to " + a.node + " (already: an earlier attempt went through)");
  } else if (r.http_status == 409 && !r.bound_node.empty()) {
    Log("binding " + who + " to " + a.node + " refused: already bound to " + r.bound_node +
        " by someone else; counted as foreign there");
    Forget(t, now);
    ReleaseSlot(key, t, false, now);
    t.bound = r.bound_node;
  } else {
    t.retry_at = now + options_.bind_retry;
    if (t.slot) ReleaseSlot(key, t, true, now);
    Log("binding " + who + " to " + a.node + " failed (HTTP " + std::to_string(r.http_status) +
        "): " + r.message + "; retried");
  }
}

void Controller::EvictDone(const Action& a, const ActionResult& r, PodTrack& t, Millis now) {
  const std::string who = a.namespace_ + "/" + a.name;
  if ((r.http_status >= 200 && r.http_status < 300) || r.http_status == 404) {
    t.evicted = true;
    t.refusal.clear();
    ++evictions_;
    Log("evicted " + who + (r.http_status == 404 ? " (already gone)" : ""));
    if (r.http_status != 404) events_.push_back(PreemptedEvent(a, t));
    if (t.workload && !t.delete_told) {  // gone for good: never requeued as this pod
      t.delete_told = true;
      (void)Apply(engine::At(now, engine::DeletePod{WorkloadId{*t.workload}, std::nullopt}));
    }
  } else {
    if (r.http_status == 429) t.refusal = r.message;
    t.retry_at = now + options_.evict_retry;
    Log("eviction of " + who + " refused (HTTP " + std::to_string(r.http_status) +
        "): " + r.message + "; retried in " + std::to_string(options_.evict_retry / 1000) + " s");
  }
}

void Controller::StatusDone(const Action& a, const ActionResult& r, PodTrack& t, Millis now) {
  if (r.http_status < 200 || r.http_status >= 300) {
    t.retry_at = now + options_.bind_retry;
    if (r.http_status != 404)
      Log("writing the status of " + a.namespace_ + "/" + a.name + " failed (HTTP " +
          std::to_string(r.http_status) + "): " + r.message);
    return;
  }
  if (!t.workload && t.rejection) {  // rejected by the engine: its Rejected event
    events_.push_back(PodEventRequest(a, *t.rejection));
  } else if (!a.message.empty()) {  // the engine's kind of pending event, the message written
    engine::Event e;
    e.type = engine::EventType::kFailedScheduling;
    if (auto k = t.workload ? pending_kind_.find(*t.workload) : pending_kind_.end();
        k != pending_kind_.end())
      e.type = k->second;
    e.message = a.message;
    events_.push_back(PodEventRequest(a, e));
  }
  t.status_written = true;
  t.written_reason = a.reason;
  t.written_message = a.message;
  t.written_nominated = a.node;
}

}  // namespace arbiter::kubesched
