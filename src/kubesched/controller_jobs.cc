// batch/v1 Jobs admitted as a unit, the way Kueue admits them (docs/kubernetes.md, "Jobs"):
//
// A Job is Arbiter's when its pod template names Arbiter's scheduler and it is suspended when
// Arbiter first sees it (created `suspend: true`, as Kueue asks), or it carries the annotation
// arbiter.dev/admission (written by Arbiter: an admitted Job after a restart).
//
// The engine sees the Job as min(parallelism, completions) placeholder workloads ("slots"), built
// from the pod template and grouped in one pod group of that many members (the engine's gangs:
// admitted to quota and placed all together or not at all). While a slot is pending the Job stays
// suspended and the annotation carries the engine's pending message. When every slot runs, the
// Job is unsuspended (PATCH spec.suspend=false); the pods its controller then makes are bound,
// each to the node of a free slot (the slots keep holding the quota and the nodes: the pods are
// not counted again). A pod that ends frees its slot for the next pod of the Job (completions
// above parallelism). When the engine stops the slots (preemption, reclaim: a stopped member
// stops its group), the Job is suspended again; its controller deletes the pods, and once none is
// left the slots are told VictimExited and requeued. A Job that completes or fails, or is deleted,
// releases its slots.
#include <algorithm>

#include "adapters/json/member.h"
#include "kubesched/controller.h"

namespace arbiter::kubesched {

using engine::Phase;
using engine::WorkloadId;

namespace controller_jobs {

// A Job whose parallelism is above this is not admitted (hostile input bounded).
constexpr int64_t kMaxJobPods = 10000;

using json_member::Member;
std::string JStr(const Json& o, const char* a, const char* b) {
  const Json& v = Member(Member(o, a), b);
  return v.is_string() ? v.get<std::string>() : "";
}
bool Suspended(const Json& job) {
  const Json& s = Member(Member(job, "spec"), "suspend");
  return s.is_boolean() && s.get<bool>();
}
bool Annotated(const Json& job) {
  return Member(Member(job, "metadata"), "annotations").contains(kAdmissionAnnotation);
}
// "Complete" or "Failed" when the Job has that condition True, else "".
std::string Finish(const Json& job) {
  const Json& conds = Member(Member(job, "status"), "conditions");
  if (!conds.is_array()) return "";
  for (const auto& c : conds) {
    const std::string type = JStr(Json{{"c", c}}, "c", "type");
    if ((type == "Complete" || type == "Failed") && JStr(Json{{"c", c}}, "c", "status") == "True")
      return type;
  }
  return "";
}
int64_t IntOr(const Json& v, int64_t dflt) {
  return v.is_number_integer() ? v.get<int64_t>() : dflt;
}
// Kueue's podsCount: parallelism (default 1), capped by completions.
int64_t PodsCount(const Json& job) {
  const Json& spec = Member(job, "spec");
  int64_t n = IntOr(Member(spec, "parallelism"), 1);
  const Json& completions = Member(spec, "completions");
  if (completions.is_number_integer()) n = std::min(n, completions.get<int64_t>());
  return std::max<int64_t>(0, n);
}
// The uid and name of the Job controlling a pod (ownerReferences, controller: true), if any.
std::pair<std::string, std::string> OwnerJob(const Json& pod) {
  const Json& refs = Member(Member(pod, "metadata"), "ownerReferences");
  if (!refs.is_array()) return {};
  for (const auto& r : refs) {
    const Json& controller = Member(r, "controller");
    if (!controller.is_boolean() || !controller.get<bool>()) continue;
    if (Member(r, "kind") != "Job" || Member(r, "apiVersion") != "batch/v1") continue;
    const Json& uid = Member(r, "uid");
    const Json& name = Member(r, "name");
    if (uid.is_string() && name.is_string())
      return {uid.get<std::string>(), name.get<std::string>()};
  }
  return {};
}
// What kube-apiserver's DefaultTolerationSeconds admission adds to every pod the Job controller
// makes: not-ready and unreachable NoExecute tolerated for 300 s, unless the template says
// otherwise. The slots stand for those pods, so a node's lost heartbeat stops them when it would
// stop the pods, not at once.
void AddDefaultTolerations(Json& spec) {
  Json& tol = spec["tolerations"];
  if (!tol.is_array()) tol = Json::array();
  for (const char* key : {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
    bool has = false;
    for (const auto& t : tol) {
      const Json& effect = Member(t, "effect");
      if (Member(t, "key") == key && (effect.is_null() || effect == "" || effect == "NoExecute"))
        has = true;
    }
    if (!has)
      tol.push_back({{"key", key},
                     {"operator", "Exists"},
                     {"effect", "NoExecute"},
                     {"tolerationSeconds", 300}});
  }
}
bool Live(const Json& pod) {
  const std::string phase = JStr(pod, "status", "phase");
  return phase != "Succeeded" && phase != "Failed";
}

}  // namespace controller_jobs

namespace cj = controller_jobs;

bool Controller::JobIsOurs(const Json& job) const {
  const Json& tspec = cj::Member(cj::Member(cj::Member(job, "spec"), "template"), "spec");
  return cj::Member(tspec, "schedulerName") == options_.scheduler_name &&
         (cj::Suspended(job) || cj::Annotated(job));
}

const std::pair<std::string, std::string>* Controller::JobOfPod(const Json& pod) const {
  const auto [uid, name] = cj::OwnerJob(pod);
  if (uid.empty()) return nullptr;
  auto it = jobs_.find({cj::JStr(pod, "metadata", "namespace"), name});
  if (it == jobs_.end() || it->second.uid != uid) return nullptr;
  return &it->first;
}

void Controller::ApplyJob(const Key& key, Millis now) {
  const auto& objs = objects_["Job"];
  auto it = objs.find(key);
  auto jt = jobs_.find(key);
  const std::string uid = it == objs.end() ? "" : cj::JStr(it->second, "metadata", "uid");
  if (jt != jobs_.end() && (it == objs.end() || jt->second.uid != uid)) {  // gone or replaced
    ReleaseSlots(jt->second, 1, now);
    jobs_.erase(jt);
    jt = jobs_.end();
  }
  if (it == objs.end()) return;
  const Json& job = it->second;
  if (jt == jobs_.end()) {
    if (!JobIsOurs(job)) return;
    JobTrack fresh;
    fresh.uid = uid;
    fresh.written_suspend = cj::Suspended(job);
    const Json& written =
        cj::Member(cj::Member(cj::Member(job, "metadata"), "annotations"), kAdmissionAnnotation);
    if (written.is_string()) {  // what an earlier process wrote
      fresh.wrote = true;
      fresh.written_message = written.get<std::string>();
    }
    jt = jobs_.emplace(key, std::move(fresh)).first;
  }
  JobTrack& j = jt->second;
  if (j.finished || !started_) return;
  if (const std::string fin = cj::Finish(job); !fin.empty()) {
    j.finished = true;
    ReleaseSlots(j, fin == "Complete" ? 0 : 1, now);
    Log("job " + key.first + "/" + key.second + " " + (fin == "Complete" ? "completed" : "failed") +
        ": its quota is released");
    return;
  }
  const int64_t count = cj::PodsCount(job);
  if (count == j.count) return;
  for (uint64_t id : j.slots)
    if (auto st = engine_->Get(WorkloadId{id}); st && st->phase != Phase::kPending) {
      Log("job " + key.first + "/" + key.second + ": parallelism changed while admitted: kept " +
          std::to_string(j.count) + " pods");
      return;
    }
  ReleaseSlots(j, 0, now);
  j.dead.clear();
  j.count = static_cast<int32_t>(std::min(count, cj::kMaxJobPods + 1));
  if (count > cj::kMaxJobPods) {
    j.dead = "Arbiter admits at most " + std::to_string(cj::kMaxJobPods) +
             " pods of a Job as a unit; this one asks " + std::to_string(count);
    return;
  }
  // Pods of the Job already bound (an admitted Job, the process restarted): slots pinned there.
  // (A suspended Job's pods still bound are on their way out: foreign until gone.)
  std::vector<std::pair<Key, std::string>> pins;
  for (const auto& [pk, pod] : objects_["Pod"]) {
    if (cj::Suspended(job)) break;
    if (pk.first != key.first || cj::OwnerJob(pod).first != uid || !cj::Live(pod)) continue;
    const std::string node = cj::JStr(pod, "spec", "nodeName");
    if (!node.empty() && static_cast<int64_t>(pins.size()) < count) pins.push_back({pk, node});
  }
  SubmitSlots(key, j, job, std::move(pins), now);
}

void Controller::SubmitSlots(const Key& key, JobTrack& j, const Json& job,
                             std::vector<std::pair<Key, std::string>> pins, Millis now) {
  const Json& tmpl = cj::Member(cj::Member(job, "spec"), "template");
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", key.second}, {"namespace", key.first}}},
              {"spec", cj::Member(tmpl, "spec")}};
  cj::AddDefaultTolerations(pod["spec"]);
  for (const char* f : {"labels", "annotations"})
    if (cj::Member(cj::Member(tmpl, "metadata"), f).is_object())
      pod["metadata"][f] = tmpl["metadata"][f];
  if (pod["metadata"].contains("labels")) pod["metadata"]["labels"].erase(kPodGroupLabel);
  auto set = LoadObject("Pod", pod);
  if (!set.ok() || set->pods.size() != 1) {
    j.dead = "Arbiter cannot schedule this Job's pods: " + set.message();
    Log("job " + key.first + "/" + key.second + ": " + j.dead);
    return;
  }
  const PodGroupRef group{"job#" + key.second, j.count, 0};
  for (int32_t i = 0; i < j.count; ++i) {
    Pod p = set->pods.front();
    p.meta.name = key.second + "#" + std::to_string(i);
    p.pod_group = group;
    const std::string node = i < static_cast<int32_t>(pins.size()) ? pins[i].second : "";
    const uint64_t id = engine::Value(engine_->next_workload_id());  // a pinned slot: where it runs
    if (!Apply(engine::At(now, engine::SubmitPod{std::move(p), false, {}, node})).ok()) {
      j.dead = "the engine refused the Job's pods (see the log)";
      return;
    }
    j.slots.push_back(id);
    if (i < static_cast<int32_t>(pins.size())) {
      j.occupant[id] = pins[i].first;
      pods_[pins[i].first].slot = id;
    }
  }
}

void Controller::EndSlot(uint64_t slot, int exit_code, Millis now) {
  const WorkloadId w{slot};
  auto st = engine_->Get(w);
  if (!st) return;
  if (st->phase == Phase::kRunning) {
    (void)Apply(engine::At(now, engine::PodFinished{w, exit_code}));
    return;
  }
  // Terminating (stopped with its group): deleted first, so that it is not requeued on exit.
  (void)Apply(engine::At(now, engine::DeletePod{w, 0, false}));  // (its exit follows)
  if (auto again = engine_->Get(w); again && again->phase == Phase::kTerminating)
    (void)Apply(engine::At(now, engine::VictimExited{w}));
}

void Controller::ReleaseSlots(JobTrack& j, int exit_code, Millis now) {
  for (uint64_t id : j.slots) {
    if (auto o = j.occupant.find(id); o != j.occupant.end())
      if (auto pod = objects_["Pod"].find(o->second);
          pod != objects_["Pod"].end() && cj::Live(pod->second)) {
        leaving_slots_[id] = exit_code;  // ends with its pod (ReleaseSlot)
        continue;
      }
    EndSlot(id, exit_code, now);
  }
  for (const auto& [slot, pod] : j.occupant)
    if (auto t = pods_.find(pod); t != pods_.end() && !leaving_slots_.count(slot))
      t->second.slot.reset();
  j.slots.clear();
  j.occupant.clear();
  j.waiting.clear();
}

void Controller::ReleaseSlot(const Key& pod, PodTrack& t, bool rewait, Millis now) {
  if (t.slot)
    if (auto l = leaving_slots_.find(*t.slot); l != leaving_slots_.end()) {
      EndSlot(l->first, l->second, now);
      leaving_slots_.erase(l);
    }
  for (auto& [key, j] : jobs_) {
    j.waiting.erase(pod);
    if (t.slot) {
      auto o = j.occupant.find(*t.slot);
      if (o != j.occupant.end() && o->second == pod) j.occupant.erase(o);
    }
  }
  t.slot.reset();
  if (!rewait) return;
  auto obj = objects_["Pod"].find(pod);
  if (obj == objects_["Pod"].end()) return;
  if (const Key* job = JobOfPod(obj->second)) ApplyJobPod(*job, pod, obj->second, t, now);
}

void Controller::ApplyJobPod(const Key& job, const Key& key, const Json& pod, PodTrack& t,
                             Millis now) {
  JobTrack& j = jobs_[job];
  const std::string node = cj::JStr(pod, "spec", "nodeName");
  if (!node.empty()) t.bound = node;
  if (!cj::Live(pod)) {  // ended: its slot is free for the Job's next pod
    if (t.slot) ReleaseSlot(key, t, false, now);
    j.waiting.erase(key);
    return;
  }
  if (t.slot) return;   // bound (or being bound) to its slot; a deleted pod keeps it until gone
  if (!node.empty()) {  // bound by someone else: a free slot there takes it, else it is foreign
    j.waiting.erase(key);
    for (uint64_t id : j.slots)
      if (!j.occupant.count(id))
        if (auto st = engine_->Get(WorkloadId{id}); st && st->node == node) {
          j.occupant[id] = key;
          t.slot = id;
          return;
        }
    return;
  }
  if (cj::Member(cj::Member(pod, "metadata"), "deletionTimestamp").is_null())
    j.waiting.insert(key);
  else
    j.waiting.erase(key);
}

void Controller::BindJobPods(const Key& key, JobTrack& j, Millis now, std::vector<Action>* out) {
  (void)key;
  std::vector<uint64_t> free;
  for (uint64_t id : j.slots)
    if (!j.occupant.count(id)) free.push_back(id);
  size_t next = 0;
  for (auto w = j.waiting.begin(); w != j.waiting.end() && next < free.size();) {
    auto obj = objects_["Pod"].find(*w);
    PodTrack& t = pods_[*w];
    if (obj == objects_["Pod"].end() || now < t.retry_at) {
      ++w;
      continue;
    }
    auto st = engine_->Get(WorkloadId{free[next]});
    if (!st || st->phase != Phase::kRunning) break;
    j.occupant[free[next]] = *w;
    t.slot = free[next];
    out->push_back(Action{Action::Type::kBind, w->first, w->second,
                          cj::JStr(obj->second, "metadata", "uid"), st->node, "", false});
    ++next;
    w = j.waiting.erase(w);
  }
}

void Controller::ReconcileJob(const Key& key, JobTrack& j, Millis now, std::vector<Action>* out) {
  auto obj = objects_["Job"].find(key);
  if (j.finished || obj == objects_["Job"].end()) return;
  int running = 0, stopping = 0;
  std::string why, stop_why;
  std::set<std::string> nodes;
  for (uint64_t id : j.slots) {
    auto st = engine_->Get(WorkloadId{id});
    if (!st || engine::IsFinal(st->phase)) {
      if (j.dead.empty()) {
        auto r = rejected_.find(id);
        j.dead = r != rejected_.end() ? r->second.event.message
                                      : "stopped by Arbiter and not requeued (preempt mode Cancel)";
      }
      continue;
    }
    if (st->phase == Phase::kRunning) {
      ++running;
      nodes.insert(st->node);
    } else if (st->phase == Phase::kTerminating) {
      ++stopping;
      if (stop_why.empty()) stop_why = st->message;
    } else if (why.empty()) {
      why = st->message;
    }
  }
  bool suspend = true;
  std::string message;
  if (!j.dead.empty()) {
    message = j.dead;
  } else if (j.slots.empty()) {
    message = "parallelism 0: nothing to admit";
  } else if (stopping > 0) {
    message = "stopped: " + stop_why;
    // Suspended in the cluster and none of its pods left: the slots have exited (requeued).
    bool left = false;
    for (const auto& [pk, pod] : objects_["Pod"])
      if (pk.first == key.first && cj::OwnerJob(pod).first == j.uid && cj::Live(pod)) {
        left = true;
        break;
      }
    if (cj::Suspended(obj->second) && !left)
      for (uint64_t id : j.slots)
        if (auto st = engine_->Get(WorkloadId{id}); st && st->phase == Phase::kTerminating)
          (void)Apply(engine::At(now, engine::VictimExited{WorkloadId{id}}));
  } else if (running == static_cast<int>(j.slots.size())) {
    suspend = false;
    message = "admitted: " + std::to_string(running) + " pods on ";
    for (auto n = nodes.begin(); n != nodes.end(); ++n)
      message += (n == nodes.begin() ? "" : ", ") + *n;
    BindJobPods(key, j, now, out);
  } else {
    message = why.empty() ? "waiting for admission" : why;
  }
  if (now < j.retry_at) return;
  if (j.wrote && suspend == j.written_suspend && message == j.written_message) return;
  Action a{Action::Type::kJob, key.first, key.second, j.uid, "", std::move(message), suspend};
  out->push_back(std::move(a));
}

void Controller::JobDone(const Action& a, const ActionResult& r, Millis now) {
  auto it = jobs_.find({a.namespace_, a.name});
  if (it == jobs_.end()) return;
  JobTrack& j = it->second;
  const std::string who = a.namespace_ + "/" + a.name;
  if (r.http_status >= 200 && r.http_status < 300) {
    if (a.suspend != j.written_suspend)
      Log(std::string(a.suspend ? "suspended" : "unsuspended") + " job " + who + ": " + a.message);
    else if (!j.wrote)
      Log("job " + who + (a.suspend ? " waits: " : ": ") + a.message);
    j.wrote = true;
    j.written_suspend = a.suspend;
    j.written_message = a.message;
    return;
  }
  j.retry_at = now + options_.bind_retry;
  if (r.http_status != 404)
    Log("patching job " + who + " failed (HTTP " + std::to_string(r.http_status) +
        "): " + r.message);
}

}  // namespace arbiter::kubesched
