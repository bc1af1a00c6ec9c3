// The Cluster's side of batch/v1 Jobs (job_controller.h): their create / update / delete, and
// the Job controller's decisions carried out as the Cluster's own Put and Delete steps.
#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "adapters/json/member.h"
#include "server/state/api_status.h"
#include "server/state/cluster.h"
#include "server/state/cluster_target.h"
#include "server/state/job_controller.h"
#include "server/state/job_pod_tables.h"
#include "server/state/pod_status.h"
#include "server/state/priority_admission.h"

namespace arbiter::server {

namespace {

ApiError Invalid(const std::string& name, Diagnostics d) {
  ApiError e;
  e.reason = ApiError::Reason::kInvalid;
  e.kind = "Job";
  e.name = name;
  for (auto& x : d.items)
    if (x.severity == Severity::kError) e.diagnostics.Add(std::move(x));
  return e;
}

// The pod template's diagnostics under spec.template (the loader names a Pod's fields).
void AddTemplateDiagnostics(const Diagnostics& pod, const std::string& display, Diagnostics& out) {
  for (Diagnostic d : pod.items) {
    if (d.severity != Severity::kError) continue;
    d.kind = "Job";
    d.name = display;
    d.field_path = d.field_path.empty() ? "spec.template" : "spec.template." + d.field_path;
    out.Add(std::move(d));
  }
}

// kube's ValidateJobSpecUpdate, the parts that apply here: completions, completionMode,
// podFailurePolicy, backoffLimitPerIndex, managedBy, successPolicy, selector and template are
// immutable (kube
// lets an Indexed Job's completions move with parallelism: not here).
void CheckJobUpdate(const Json& was, const Json& now, const std::string& display,
                    Diagnostics& out) {
  for (const char* key :
       {"completions", "completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy",
        "successPolicy", "selector", "template"}) {
    const Json a = was.at("spec").value(key, Json());
    const Json b = now.at("spec").value(key, Json());
    if (a != b)
      out.Add(Diagnostic{Severity::kError, kApiRequest, 1, "Job", display,
                         std::string("spec.") + key,
                         "Invalid value: " + b.dump() + ": field is immutable"});
  }
}

// The back-off record: the new finishes added; what finished before the last success no longer
// counts (kube's newBackoffRecord resets at a success) and is dropped.
void RememberFinishes(const std::map<std::string, std::pair<Millis, bool>>& fresh,
                      std::map<std::string, std::pair<Millis, bool>>& record) {
  if (fresh.empty()) return;
  record.insert(fresh.begin(), fresh.end());
  std::optional<Millis> success;
  for (const auto& [name, f] : record)
    if (f.second && (!success || f.first > *success)) success = f.first;
  if (!success) return;
  for (auto it = record.begin(); it != record.end();)
    it = it->second.first < *success ? record.erase(it) : std::next(it);
}

// The uid of the Job a pod is labelled with ("" if none).
std::string PodJobUid(const Json& pod) {
  const Json& meta = pod.at("metadata");
  auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) return "";
  auto it = labels->find(kControllerUidLabel);
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

Mutation PodDelete(Millis t, const std::string& ns, const std::string& name) {
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.time = t;
  m.kind = "Pod";
  m.namespace_ = ns;
  m.name = name;
  return m;
}

}  // namespace

std::optional<ApiError> Cluster::ValidateJobObject(const Target& t,
                                                   std::vector<std::string>& warnings) const {
  const std::string display = t.ns + "/" + t.name;
  Diagnostics d = ValidateJob(t.obj, display);
  const Json& spec = t.obj.contains("spec") ? t.obj["spec"] : Json();
  if (spec.is_object() && spec.contains("template") && spec["template"].is_object()) {
    Json pod = PodFromTemplate(t.obj);
    pod["metadata"]["name"] = t.name;
    AddTemplateDiagnostics(Load(*FindKind("Pod"), pod).diagnostics, display, d);
    const Json& annotations = pod["metadata"].value("annotations", Json::object());
    if (!t.existing && !annotations.contains("arbiter.dev/duration"))
      warnings.push_back(
          "spec.template.metadata.annotations[arbiter.dev/duration]: not set: on arbiter's "
          "virtual nodes the containers' commands are not run, and the Job's pods run until "
          "deleted; set it to how long each pod runs (e.g. 5s)");
  }
  if (t.existing && !d.HasErrors()) {
    Json now = t.obj;
    DefaultJob(now, t.existing->at("metadata").value("uid", ""));
    CheckJobUpdate(*t.existing, now, display, d);
  }
  for (const auto& w : d.items)
    if (w.severity == Severity::kWarning)
      warnings.push_back(w.field_path.empty() ? w.message : w.field_path + ": " + w.message);
  if (!d.HasErrors()) return std::nullopt;
  return Invalid(t.name, std::move(d));
}

MutationResult Cluster::PutJob(const Mutation& m, Target& t) {
  MutationResult result;
  if (!t.existing) t.obj["status"] = Json::object();  // the controller's (kube: `status: {}`)
  if (auto e = play_ ? std::nullopt : ValidateJobObject(t, result.warnings)) {  // (replay: no)
    result.error = std::move(*e);
    return result;
  }
  t.spec_changed = !t.existing || t.existing->value("spec", Json()) != t.obj.value("spec", Json());
  if (m.dry_run) {
    result.object = DryRunObject(m.time, std::move(t));
    return result;
  }
  Commit(m.time, ManifestSet{}, t);
  result.stored = store_.Share("Job", t.ns, t.name);
  return result;
}

// DeleteOptions.propagationPolicy, as the garbage collector carries it out (the HTTP layer makes
// batch/v1's default, Orphan, explicit; kubectl sends Background; "" here, as older journals
// have it, is Background):
//   Orphan      the Job goes; its pods stay, without the ownerReference to it and (the Job
//               controller's orphan-pod handling) without the tracking finalizer;
//   Background  the Job goes, its pods are deleted (running ones get SIGTERM and stay, being
//               deleted, until they exit);
//   Foreground  the Job stays, being deleted (deletionTimestamp, finalizer foregroundDeletion),
//               its pods are deleted, and it goes with the last of them (SyncJob).
// The pods are the garbage collector's (journal format 10): this delete acts on a sync's worth
// of them (SyncBudget()), the clock's advances on the rest (CollectJobPods), as
// kube's collector works through a big Job's pods after its DELETE has answered. Formats 1-9
// acted on every pod here (SetFormat9Rules).
Status Cluster::DeleteJobObject(const Mutation& m, const std::string& ns) {
  const Json* job = store_.Get("Job", ns, m.name);
  const std::string uid = job ? job->at("metadata").value("uid", "") : "";
  const std::string policy = m.propagation.empty() ? "Background" : m.propagation;
  const bool foreground = policy == "Foreground" && job;
  if (foreground && !job->at("metadata").contains("deletionTimestamp")) {
    Json deleting = *job;
    deleting["metadata"]["deletionTimestamp"] = KubeTime(m.time);
    deleting["metadata"]["deletionGracePeriodSeconds"] = 0;
    deleting["metadata"]["finalizers"] = Json::array({"foregroundDeletion"});
    store_.Put("Job", ns, m.name, std::move(deleting));
  }
  if (foreground) {
    jobs_dirty_.insert({ns, m.name});
  } else {
    store_.Remove("Job", ns, m.name);  // (its pods' facts go: the store's observer of Jobs)
    ForgetJob({ns, m.name});
  }
  if (uid.empty()) return Status::Ok();
  if (!format9_rules_) {
    // (A Job deleted again while its pods are collected, Foreground: the collection goes on
    // where it was, not from its first pod again.)
    const ObjectStore::Key key{ns, uid};
    auto [c, fresh] =
        job_collections_.try_emplace(key, JobCollection{m.name, policy == "Orphan", m.time, ""});
    if (!fresh && !foreground && !format10_rules_) {
      // The Foreground-deleted Job goes now (journal format 11): its collection walks its pods
      // again, by this delete's policy, for the ones it deleted and left to the Job's count.
      c->second.orphan = policy == "Orphan";
      c->second.after.clear();
    }
    (void)CollectJobPods(m.time, key, expiring_ ? 0 : SyncBudget());
    return Status::Ok();
  }
  std::vector<std::string> names;
  for (const Json* p : JobPods(ns, uid)) names.push_back(p->at("metadata").value("name", ""));
  for (const auto& name : names) {
    if (foreground) {
      if (const Json* p = store_.Get("Pod", ns, name))
        if (!p->at("metadata").contains("deletionTimestamp"))
          (void)Delete(PodDelete(m.time, ns, name));
    } else if (policy != "Orphan") {
      RemoveJobFinalizer(m.time, ns, name);
      if (store_.Get("Pod", ns, name)) (void)Delete(PodDelete(m.time, ns, name));
    } else {
      ReleaseJobPod(m.time, ns, name, uid, true);
    }
  }
  return Status::Ok();
}

int64_t Cluster::CollectJobPods(Millis t, const ObjectStore::Key& job_uid, int64_t limit) {
  const auto it = job_collections_.find(job_uid);
  if (it == job_collections_.end()) return 0;
  JobCollection& c = it->second;
  const auto& [ns, uid] = job_uid;
  // A Foreground-deleted Job that was failing (journal format 11: FailureTarget, not yet Failed,
  // its own controller's) counts its pods as failed as it takes their finalizers off: the
  // collector deletes them and leaves the finalizers to its syncs. (A succeeding one counts none
  // of them: the collector takes the finalizers off, as before.)
  const Json* job = store_.Get("Job", ns, c.job);
  const bool job_counts = !format10_rules_ && !c.orphan && job && JobFailing(*job) &&
                          job->at("metadata").value("uid", "") == uid;
  // Done: a pod no longer owned by the Job (Orphan), or deleted and without the tracking finalizer
  // (one a user deleted first keeps its grace period; the finalizer comes off), or deleted (the
  // Job counts it).
  const auto done = [&](const Json& meta) {
    if (c.orphan) {
      auto refs = meta.find("ownerReferences");
      return refs == meta.end() || !refs->is_array() ||
             std::none_of(refs->begin(), refs->end(), [&](const Json& r) {
               return r.is_object() && r.value("uid", "") == uid;
             });
    }
    auto fin = meta.find("finalizers");
    return meta.contains("deletionTimestamp") &&
           (job_counts || fin == meta.end() || !fin->is_array() ||
            std::find(fin->begin(), fin->end(), Json(kJobTrackingFinalizer)) == fin->end());
  };
  // Each pod taken costs 1 of `limit`; one deleted while it runs 2: its exit (SIGTERM's end) is
  // the clock's next work too, as long as its delete (~0.1 ms each, measured).
  const size_t n = static_cast<size_t>(std::max<int64_t>(limit, 0));
  const auto keys = store_.IndexedKeysAfter("Pod", uid, {ns, c.after}, n + 1);
  int64_t used = 0;
  size_t i = 0;
  for (; i < keys.size() && used < limit; ++i) {
    const std::string& name = keys[i].second;
    c.after = name;
    ++used;
    const Json* pod = store_.Get("Pod", ns, name);
    if (!pod || done(pod->at("metadata"))) continue;
    if (c.orphan) {
      ReleaseJobPod(t, ns, name, uid, true);
      continue;
    }
    if (!job_counts) RemoveJobFinalizer(t, ns, name);
    if (const Json* p = store_.Get("Pod", ns, name);
        p && !p->at("metadata").contains("deletionTimestamp")) {
      used += workload_of_.count({ns, name}) ? 1 : 0;
      (void)Delete(PodDelete(t, ns, name));
    }
  }
  if (i < keys.size()) {
    c.since = t;  // (to the end of the clock's round)
  } else {
    jobs_dirty_.insert({ns, c.job});  // (being deleted: it goes with its last pod)
    job_collections_.erase(it);
  }
  return used;
}

void Cluster::ReleaseJobPod(Millis t, const std::string& ns, const std::string& name,
                            const std::string& uid, bool finalizer) {
  const Json* stored = store_.Get("Pod", ns, name);
  if (!stored) return;
  Json pod = *stored;
  Json& refs = pod["metadata"]["ownerReferences"];
  if (refs.is_array())
    refs.erase(std::remove_if(refs.begin(), refs.end(),
                              [&](const Json& r) { return r.value("uid", "") == uid; }),
               refs.end());
  if (refs.empty()) pod["metadata"].erase("ownerReferences");
  store_.Put("Pod", ns, name, std::move(pod));
  if (finalizer) RemoveJobFinalizer(t, ns, name);
}

// A pod relabelled out of the Job that owns it (NoteJobPod) is released as kube's ClaimPods
// releases a pod its Job's selector no longer matches: the ownerReference to the Job goes, and
// (the controller's orphan-pod handling) the tracking finalizer, unless the pod is now labelled
// into another Job. Journal format 4's rules left both.
void Cluster::ReleaseJobPods(Millis t) {
  std::map<ObjectStore::Key, std::string> released;
  released.swap(released_job_pods_);
  if (format4_jobs_) return;
  for (const auto& [key, uid] : released) {
    const Json* pod = store_.Get("Pod", key.first, key.second);
    if (!pod) continue;
    const std::string now = PodJobUid(*pod);
    const Json refs = pod->at("metadata").value("ownerReferences", Json::array());
    const bool owned = std::any_of(refs.begin(), refs.end(), [&](const Json& r) {
      return r.is_object() && r.value("uid", "") == uid && r.value("controller", false) == true;
    });
    if (now == uid || !owned) continue;
    ReleaseJobPod(t, key.first, key.second, uid, now.empty() || store_.ByIndex("Job", now).empty());
  }
}

bool Cluster::KeptForJob(const Json& pod) const {
  const Json& meta = pod.at("metadata");
  auto fin = meta.find("finalizers");
  if (fin == meta.end() || !fin->is_array() ||
      std::find(fin->begin(), fin->end(), Json(kJobTrackingFinalizer)) == fin->end())
    return false;
  auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) return false;
  auto uid = labels->find(kControllerUidLabel);
  return uid != labels->end() && uid->is_string() &&
         !store_.ByIndex("Job", uid->get<std::string>()).empty();
}

bool Cluster::RemoveJobFinalizer(Millis t, const std::string& ns, const std::string& name) {
  const Json* stored = store_.Get("Pod", ns, name);
  if (!stored) return false;
  const Json& meta = stored->at("metadata");
  if (!meta.contains("finalizers")) return false;
  Json pod = *stored;
  Json& fin = pod["metadata"]["finalizers"];
  const auto before = fin.size();
  fin.erase(std::remove(fin.begin(), fin.end(), Json(kJobTrackingFinalizer)), fin.end());
  if (fin.size() == before) return false;
  const bool none_left = fin.empty();
  if (none_left) pod["metadata"].erase("finalizers");
  const bool gone = meta.contains("deletionTimestamp") && !workload_of_.count({ns, name});
  if (gone && none_left) {  // it exited while being deleted: the API server removes it now
    (void)ForgetFinished(t, {ns, name});
    store_.Remove("Pod", ns, name);
    return true;
  }
  store_.Put("Pod", ns, name, std::move(pod));
  return false;
}

std::vector<const Json*> Cluster::JobPods(const std::string& ns, const std::string& uid) const {
  std::vector<const Json*> out;
  if (uid.empty()) return out;
  for (const Json* p : store_.ByIndex("Pod", uid))
    if (p->at("metadata").value("namespace", "") == ns) out.push_back(p);
  return out;
}

JobPodTable& Cluster::JobPodTableOf(const std::string& ns, const std::string& uid) {
  auto [table, fresh] = job_pods_->by_job.try_emplace({ns, uid});
  if (fresh)
    for (const Json* p : JobPods(ns, uid)) table->second.Add(JobPodFacts::Of(*p));
  return table->second;
}

JobPodView Cluster::JobPodsOf(const std::string& ns, const std::string& uid) {
  static const JobPodTable kNone;
  return {uid.empty() ? kNone : JobPodTableOf(ns, uid),
          [this, ns](const JobPodFacts& f) -> const Json& {
            static const Json kGone;  // (kept facts are never stale: CheckJobPodFacts)
            const Json* pod = store_.Get("Pod", ns, f.name);
            return pod ? *pod : kGone;
          }};
}

void Cluster::NoteJobPod(const ObjectStore::Key& key, const Json* was, const Json* now) {
  const std::string before = was ? PodJobUid(*was) : "";
  const std::string after = now ? PodJobUid(*now) : "";
  if (now && !before.empty() && before != after) released_job_pods_[key] = before;
  auto& tables = job_pods_->by_job;
  if (tables.empty()) return;
  if (!before.empty())
    if (auto t = tables.find({key.first, before}); t != tables.end()) t->second.Erase(key.second);
  if (after.empty()) return;
  auto t = tables.find({key.first, after});
  if (t == tables.end()) return;
  JobPodFacts f = JobPodFacts::Of(*now);
  t->second.Erase(f.name);
  t->second.Add(std::move(f));
}

void Cluster::DropJobPods(const std::string& ns, const std::string& uid) {
  job_pods_->by_job.erase({ns, uid});
  job_events_.Forget(uid);
}

Status Cluster::CheckJobPodFacts() const {
  for (const auto& [key, kept] : job_pods_->by_job) {
    const auto jobs = store_.ByIndex("Job", key.second);
    if (std::none_of(jobs.begin(), jobs.end(), [&](const Json* j) {
          return j->at("metadata").value("namespace", "") == key.first;
        }))
      return Status::Internal("the facts of the pods of Job uid " + key.second + " in " +
                              key.first + " are kept, but no such Job is stored");
    JobPodTable fresh;
    for (const Json* p : JobPods(key.first, key.second)) fresh.Add(JobPodFacts::Of(*p));
    const auto [a, b] = std::mismatch(kept.pods().begin(), kept.pods().end(), fresh.pods().begin(),
                                      fresh.pods().end());
    if (a != kept.pods().end() || b != fresh.pods().end())
      return Status::Internal("the kept facts of Job uid " + key.second + "'s pod " + key.first +
                              "/" + (a != kept.pods().end() ? a->name : b->name) + " are stale");
    if (!(kept == fresh))
      return Status::Internal("the kept counts of Job uid " + key.second + "'s pods are stale");
  }
  return Status::Ok();
}

void Cluster::NoteTouchedJobs() {
  for (const char* kind : {"Pod", "Job"})
    for (const std::string& uid : store_.TakeTouched(kind))
      for (const Json* job : store_.ByIndex("Job", uid))
        jobs_dirty_.insert(
            {job->at("metadata").value("namespace", ""), job->at("metadata").value("name", "")});
}

bool Cluster::JobHeld(const ObjectStore::Key& key) const {
  return !format8_rules_ && (jobs_more_.count(key) || jobs_retry_.count(key));
}

void Cluster::RunJobs(Millis t, bool advance, const std::optional<ObjectStore::Key>& own) {
  ReleaseJobPods(t);
  NoteTouchedJobs();
  // A Job being filled (more pods to make or delete than one sync may, jobs_more_) or whose
  // create was refused (jobs_retry_) is the clock's (journal format 9): its next pods are made by
  // an advance, a record of its own, once due (a fill at once, a retry after its back-off), not
  // inside another tenant's request that came first, nor by its pods' changes (a preemption in
  // another tenant's request, a place freed). One advance makes or deletes at most
  // AdvanceBudget() pods across all of them, the longest waiting first (the due
  // queue's order: a Job synced goes to its end), the rest at the next advances. A write of the
  // Job that changed its spec or deletes it (`own`) syncs it at once, a sync's worth. Format 8
  // synced every Job refused or due after any mutation. The garbage collector's turns on deleted
  // Jobs' pods (format 10, CollectJobPods) share the advance's budget and its order.
  const auto held = [&](const ObjectStore::Key& key) {
    return JobHeld(key) && (!own || *own != key);
  };
  if (format8_rules_) jobs_dirty_.insert(jobs_retry_.begin(), jobs_retry_.end());
  // The clock's turns: the fills and retries due, and the deleted Jobs' pods the garbage
  // collector has left (a collection first at the same instant), the longest waiting first.
  struct Turn {
    Millis at;
    bool fill;
    ObjectStore::Key key;  // a Job's (a fill), or its namespace and uid (a collection)
    bool operator<(const Turn& o) const {
      return std::tie(at, fill, key) < std::tie(o.at, o.fill, o.key);
    }
  };
  std::vector<Turn> turns;
  for (auto it = job_due_queue_.begin(); it != job_due_queue_.end() && it->first <= t; ++it) {
    if (!held(it->second))
      jobs_dirty_.insert(it->second);
    else if (advance)
      turns.push_back({it->first, true, it->second});
  }
  if (advance)
    for (const auto& [key, c] : job_collections_) turns.push_back({c.since, false, key});
  std::sort(turns.begin(), turns.end());
  int64_t ops = 0;  // pods made or deleted, creates refused, by this mutation's syncs
  // A sync; one that deleted pods again at once (a few times at most): pods that exit at once are
  // gone, and its FailureTarget becomes Failed, its SuccessCriteriaMet Complete, as kube's next
  // sync would. `budget`: the clock's turns, within what is left of the advance's.
  const auto sync = [&](const ObjectStore::Key& key, bool budget) {
    for (int again = 0; again <= 3; ++again) {
      const int64_t left = budget ? AdvanceBudget() - ops : SyncBudget();
      if (left <= 0 || !SyncJob(t, key, std::min(left, SyncBudget()), &ops)) break;
      NoteTouchedJobs();
    }
    NoteTouchedJobs();
  };
  // The Jobs whose object or pods changed, or due, once each, in name order; a Job that an earlier
  // sync changed (its pods preempted, say) is synced in this turn if it comes later, else at the
  // next mutation.
  const auto sync_dirty = [&] {
    std::optional<ObjectStore::Key> last;
    while (true) {
      auto it = last ? jobs_dirty_.upper_bound(*last) : jobs_dirty_.begin();
      if (it == jobs_dirty_.end()) break;
      last = *it;
      jobs_dirty_.erase(it);
      if (held(*last)) continue;  // (the clock's: its turn comes when it is due)
      sync(*last, false);
    }
  };
  sync_dirty();
  if (turns.empty()) return;
  for (const Turn& turn : turns) {
    if (ops >= AdvanceBudget()) break;  // (still due: the next advance's)
    const ObjectStore::Key& key = turn.key;
    if (!turn.fill) {
      ops += CollectJobPods(t, key, AdvanceBudget() - ops);
      NoteTouchedJobs();
      continue;
    }
    const auto due = job_due_.find(key);
    if (!held(key) || due == job_due_.end() || due->second > t) continue;  // (synced already)
    sync(key, true);
  }
  sync_dirty();  // (the Jobs the turns changed: their pods preempted)
}

void Cluster::SetJobDue(const ObjectStore::Key& key, std::optional<Millis> due) {
  auto it = job_due_.find(key);
  if (it != job_due_.end()) {
    job_due_queue_.erase({it->second, key});
    job_due_.erase(it);
  }
  if (!due) return;
  job_due_[key] = *due;
  job_due_queue_.insert({*due, key});
}

// When a Job whose creates were refused `refused` times in a row, the last at `at`, tries again
// with no mutation to prompt it (kube's DefaultJobApiBackOff 1 s doubling to MaxJobApiBackOff).
Millis Cluster::RetryAt(int64_t refused, Millis at) {
  return at + std::min<Millis>(60000, Millis{1000} << std::clamp<int64_t>(refused - 1, 0, 6));
}

void Cluster::ForgetJob(const ObjectStore::Key& key) {
  job_finishes_.erase(key);
  job_refusals_.erase(key);
  SetJobDue(key, std::nullopt);
  jobs_retry_.erase(key);
  jobs_dirty_.erase(key);
  jobs_more_.erase(key);
}

// kube's TTL-after-finished controller: a finished Job whose spec.ttlSecondsAfterFinished ran out
// is deleted as it deletes it (Foreground: its pods first, then the Job); until then the clock
// wakes at its expiry. Journal format 4's rules kept finished Jobs.
bool Cluster::ExpireJob(Millis t, const ObjectStore::Key& key, const Json& job) {
  if (format4_jobs_ || !JobFinished(job) || job.at("metadata").contains("deletionTimestamp"))
    return false;
  const auto expiry = JobExpiry(job);
  if (!expiry) return false;
  if (*expiry > t) {
    SetJobDue(key, expiry);
    return false;
  }
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.time = t;
  m.kind = "Job";
  m.namespace_ = key.first;
  m.name = key.second;
  m.propagation = "Foreground";
  // Its pods are all the clock's (journal format 10): the expiry runs in whichever mutation finds
  // the Job due, another tenant's request too, and many Jobs may expire at one instant.
  expiring_ = true;
  const bool deleted = Delete(m).ok();
  expiring_ = false;
  return deleted;
}

void Cluster::SetFormat4Jobs(bool on) {
  if (format4_jobs_ && !on)
    for (const auto& [key, job] : store_.All("Job")) jobs_dirty_.insert(key);
  format4_jobs_ = on;
}

int64_t Cluster::SyncBudget() const {
  return format10_rules_ ? kMaxPodCreateDeletePerSync : kMaxPodCreateDeletePerAdvance;
}

JobRules Cluster::JobRulesNow() const {
  return format4_jobs_     ? JobRules::kFormat4
         : format7_rules_  ? JobRules::kFormat7
         : format9_rules_  ? JobRules::kFormat9
         : format10_rules_ ? JobRules::kFormat10
                           : JobRules::kCurrent;
}

void Cluster::RestoreJobs(const Json& header) {
  job_pods_->by_job.clear();  // (the store was loaded: made again as syncs read them)
  jobs_dirty_.clear();
  jobs_retry_.clear();
  released_job_pods_.clear();
  job_finishes_.clear();
  job_events_.Load(header.value("jobEvents", Json::array()));
  job_refusals_.clear();
  for (const Json& r : header.value("jobRefusals", Json::array()))
    job_refusals_[{r.at(0).get<std::string>(), r.at(1).get<std::string>()}] = {
        r.at(2).get<int64_t>(), r.at(3).get<Millis>()};
  if (auto rows = header.find("jobFinishes"); rows != header.end())
    for (const Json& r : *rows)
      job_finishes_[{r.at(0).get<std::string>(), r.at(1).get<std::string>()}]
                   [r.at(2).get<std::string>()] = {r.at(3).get<Millis>(), r.at(4).get<bool>()};
  job_due_.clear();
  job_due_queue_.clear();
  // The Jobs being filled (since journal format 9); an older header has none: derived below, as
  // their last syncs left them.
  jobs_more_.clear();
  const auto more = header.find("jobsMore");
  if (more != header.end())
    for (const Json& r : *more) {
      // [[namespace, job], instant]; [namespace, job] as the first builds of format 9 wrote
      const bool timed = r.at(0).is_array();
      const Json& k = timed ? r.at(0) : r;
      if (ObjectStore::Key key{k.at(0).get<std::string>(), k.at(1).get<std::string>()};
          store_.Get("Job", key.first, key.second))  // (a Job gone with its namespace: no more)
        jobs_more_[std::move(key)] = timed ? r.at(1).get<Millis>() : now();
    }
  // The deleted Jobs' pods the garbage collector has left (since journal format 10; before it,
  // a delete acted on all of them at once: none).
  job_collections_.clear();
  for (const Json& r : header.value("jobCollections", Json::array()))
    job_collections_[{r.at(0).get<std::string>(), r.at(1).get<std::string>()}] = {
        r.at(2).get<std::string>(), r.at(3).get<bool>(), r.at(4).get<Millis>(),
        r.at(5).get<std::string>()};
  (void)store_.TakeTouched("Pod");
  (void)store_.TakeTouched("Job");
  for (const auto& [key, job] : store_.All("Job")) {
    jobs_dirty_.insert(key);
    const std::string uid = job->at("metadata").value("uid", "");
    if (auto expiry = format4_jobs_ ? std::nullopt : JobExpiry(*job);
        expiry && !job->at("metadata").contains("deletionTimestamp"))
      SetJobDue(key, expiry);
    if (!JobManagedHere(*job) || JobFinished(*job)) {
      jobs_more_.erase(key);
      continue;
    }
    const JobPodView pods = JobPodsOf(key.first, uid);
    const JobPlan plan = PlanJob(*job, pods, now(), job_finishes_[key], JobRulesNow());
    // More pods than a sync makes, not refused (a refused create waits for its retry, below): due
    // since its last sync (an older header: now), the clock's (RunJobs; every Job is marked dirty,
    // but a Job being filled is synced only by an advance or a mutation of its own).
    if (more == header.end() && plan.more && !job_refusals_.count(key)) jobs_more_[key] = now();
    const auto filling = jobs_more_.find(key);
    auto due = filling != jobs_more_.end() ? std::optional<Millis>(filling->second) : plan.due;
    for (const JobPodFacts& p : pods.table.pods()) {  // the next in-place restart
      if (!p.crash_loop) continue;
      auto w = workload_of_.find({key.first, p.name});
      auto st =
          w == workload_of_.end() ? std::nullopt : engine_->Get(engine::WorkloadId{w->second});
      auto next = st ? NextContainerChange(pods.tree(p), *st, now()) : std::nullopt;
      if (next && (!due || *next < *due)) due = next;
    }
    if (auto r = job_refusals_.find(key); r != job_refusals_.end()) {  // a refused create's retry
      jobs_retry_.insert(key);
      const Millis retry = RetryAt(r->second.first, r->second.second);
      if (!due || retry < *due) due = retry;
    }
    SetJobDue(key, due);
  }
}

std::optional<Millis> Cluster::RefreshRestarts(Millis t, const std::string& ns,
                                               const std::string& uid) {
  std::vector<std::string> names;
  if (!uid.empty() && JobPodTableOf(ns, uid).crash_loops() > 0)
    for (const JobPodFacts& p : JobPodTableOf(ns, uid).pods())
      if (p.crash_loop) names.push_back(p.name);
  std::optional<Millis> next;
  for (const auto& name : names) {
    auto w = workload_of_.find({ns, name});
    const Json* stored = store_.Get("Pod", ns, name);
    if (w == workload_of_.end() || !stored) continue;
    auto st = engine_->Get(engine::WorkloadId{w->second});
    if (!st) continue;
    if (auto n = NextContainerChange(*stored, *st, t); n && (!next || *n < *next)) next = n;
    PodStatusUpdate u = PodStatusOf(*stored, *st, nullptr, t, StatusRulesNow());
    if (!Changes(*stored, u)) continue;
    Json pod = *stored;
    ApplyPodStatus(pod, std::move(u));
    store_.Put("Pod", ns, name, std::move(pod));
  }
  return next;
}

// One Job's plan (job_controller.h) carried out: counted pods lose the tracking finalizer,
// surplus pods are deleted (without it: kube's deleteJobPods), missing ones made, and the status
// written if it moved. A Job being deleted (Foreground) goes once none of its pods is left.
bool Cluster::SyncJob(Millis t, const ObjectStore::Key& key, int64_t limit, int64_t* ops) {
  const auto& [ns, name] = key;
  const Json* stored = store_.Get("Job", ns, name);
  const std::string uid = stored ? stored->at("metadata").value("uid", "") : "";
  if (stored && stored->at("metadata").contains("deletionTimestamp") &&
      store_.IndexedKeysAfter("Pod", uid, {ns, ""}, 1).empty()) {  // (no pod read)
    store_.Remove("Job", ns, name);
    stored = nullptr;
  }
  // Gone, finished, or spec.managedBy names another controller: left alone (a finished one to
  // the TTL-after-finished controller).
  if (!stored || JobFinished(*stored) || !JobManagedHere(*stored)) {
    ForgetJob(key);
    DropJobPods(ns, uid);
    return stored && ExpireJob(t, key, *stored);
  }
  Json job = *stored;
  const auto restart = RefreshRestarts(t, ns, uid);
  auto& finishes = job_finishes_[key];
  JobPlan plan = PlanJob(job, JobPodsOf(ns, uid), t, finishes, JobRulesNow(), limit);
  if (restart && (!plan.due || *restart < *plan.due)) plan.due = restart;
  RememberFinishes(plan.finishes, finishes);
  bool acted = !plan.remove.empty();
  for (const auto& pod_name : plan.counted) acted = RemoveJobFinalizer(t, ns, pod_name) || acted;
  for (const auto& pod_name : plan.remove) {
    RemoveJobFinalizer(t, ns, pod_name);
    if (Delete(PodDelete(t, ns, pod_name)).ok())
      AddJobEvent(job, false, "SuccessfulDelete", "Deleted pod: " + pod_name, t);
  }
  const int made = CreateJobPods(t, job, plan);
  *ops += made + static_cast<int64_t>(plan.remove.size()) + (made < plan.create ? 1 : 0);
  if (!format10_rules_) {  // a finalizer taken off but no delete: 1 (journal format 11)
    const std::set<std::string> removed(plan.remove.begin(), plan.remove.end());
    for (const auto& pod_name : plan.counted) *ops += removed.count(pod_name) ? 0 : 1;
  }
  // The pods just made, placed at once, fail (and restart) on their own clock: their first
  // change is due now, not at the next mutation (the daemon sleeps until NextDue).
  if (made > 0)
    if (auto r = RefreshRestarts(t, ns, uid); r && (!plan.due || *r < *plan.due)) plan.due = r;
  for (const auto& e : plan.events) AddJobEvent(job, e.warning, e.reason, e.message, t);
  jobs_more_.erase(key);
  if (made < plan.create) {   // refused (quota, LimitRanger): tried again after kube's back-off
    jobs_retry_.insert(key);  // (1 s doubling to 60 s; format 8: at the next mutation too)
    auto& [refused, at] = job_refusals_[key];
    refused = std::min<int64_t>(refused + 1, 7);
    at = t;
    if (const Millis retry = RetryAt(refused, at); !plan.due || retry < *plan.due) plan.due = retry;
    const int64_t active = plan.status.value("active", 0) - (plan.create - made);
    if (active > 0)
      plan.status["active"] = active;
    else
      plan.status.erase("active");
  } else {
    jobs_retry_.erase(key);
    job_refusals_.erase(key);
    // More pods to make or delete (or count) than one sync may (SyncBudget): the Job is due
    // now, and the clock's next advance (a record of its own, the daemon's lock let go between
    // them) syncs it again (format 8: or any mutation before it, RunJobs). A refused create backs
    // off instead (above).
    if (plan.more) {
      plan.due = t;
      jobs_more_[key] = t;
    }
  }
  // Pods made now are bound and Ready at once on the virtual nodes: status.ready counts the active
  // pods as this sync leaves them (kube's, counted before its creates, reaches the same at its
  // next sync); without creates, the plan's count (as kube's) stands.
  if (made > 0)
    plan.status["ready"] =
        std::min<int64_t>(JobPodTableOf(ns, uid).ready(), plan.status.value("active", 0));
  SetJobDue(key, plan.due);
  acted = acted && !plan.more;  // (not synced again in this mutation: the rest at the next one)
  if (job.contains("status") && job["status"] == plan.status) return acted;
  job["status"] = std::move(plan.status);
  // Finished now: the clock wakes at its TTL's end (ExpireJob), if it has one.
  if (JobFinished(job)) jobs_more_.erase(key);  // (nothing more to make: forgotten next sync)
  if (auto expiry = format4_jobs_ || !JobFinished(job) ? std::nullopt : JobExpiry(job))
    SetJobDue(key, expiry);
  store_.Put("Job", ns, name, std::move(job));
  return acted;
}

// The plan's pods from the Job's template (with their completion indexes), each a create as a
// user's (validated, admitted, submitted); returns how many were made (the first refusal stops it,
// reported as a FailedCreate Warning).
int Cluster::CreateJobPods(Millis t, const Json& job, const JobPlan& plan) {
  const std::string ns = job.at("metadata").value("namespace", "default");
  int made = 0;
  uint64_t seq = 0;  // formats 1-4: counted from 0 at each sync (SetFormat4Jobs)
  for (int i = 0; i < plan.create; ++i) {
    const int64_t index = i < static_cast<int>(plan.indexes.size()) ? plan.indexes[i] : -1;
    // Salted with the store's resourceVersion, which grows with every write: no earlier create had
    // this salt, so no earlier pod of the Job (deleted since, or replaced) gets its name back.
    const std::string rv = std::to_string(store_.resource_version() + 1) + ".";
    auto salt = [&] { return (format4_jobs_ ? "" : rv) + std::to_string(seq++); };
    std::string name = JobPodName(job, salt(), index);
    while (store_.Get("Pod", ns, name)) name = JobPodName(job, salt(), index);
    Mutation c;
    c.op = Mutation::Op::kCreate;
    c.time = t;
    c.kind = "Pod";
    c.namespace_ = ns;
    c.object = PodFromTemplate(job, index);
    if (i < static_cast<int>(plan.annotations.size()))
      c.object["metadata"]["annotations"].update(plan.annotations[i]);
    c.object["metadata"]["name"] = name;
    std::optional<ApiError> refused = AdmitJobPodPriority(c);
    if (!refused)
      if (MutationResult r = Put(c, nullptr); !r.ok()) refused = std::move(r.error);
    if (refused) {
      // kube's FailedCreate; retried at each mutation under a new name, combined from the 10th
      // on (AddJobEvent)
      if (!format4_jobs_)
        AddJobEvent(job, true, "FailedCreate", "Error creating: " + RefusalText(c, *refused), t);
      break;
    }
    AddJobEvent(job, false, "SuccessfulCreate", "Created pod: " + name, t);
    ++made;
  }
  return made;
}

// The Priority admission of a pod the Job controller creates, as of a user's (the API's creates
// pass it before the daemon sees them): a template's spec.priority other than its class's is 403
// (journal format 7; formats 1-6 stored such pods with the template's priority).
std::optional<ApiError> Cluster::AdmitJobPodPriority(const Mutation& c) const {
  if (format6_rules_ || !json_member::Member(c.object, "spec").contains("priority"))
    return std::nullopt;
  auto why = PriorityAdmissionRefusal(c.object, store_.ListShared("PriorityClass", ""));
  if (!why) return std::nullopt;
  ApiError e;
  e.reason = ApiError::Reason::kForbidden;
  e.kind = "Pod";
  e.name = c.object["metadata"].value("name", "");
  e.message = std::move(*why);
  return e;
}

// A Job's event as client-go's recorder writes the job-controller's (EventCorrelator: similar ones
// combined, repeats counted on one event, a spam filter); journal format 4 wrote each one.
void Cluster::AddJobEvent(const Json& job, bool warning, const std::string& reason,
                          const std::string& message, Millis t) {
  const Json& meta = job.at("metadata");
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(++event_counter_));
  const std::string ns = meta.value("namespace", "default");
  const std::string type = warning ? "Warning" : "Normal";
  EventCorrelator::Result r{false, message, 1, meta.value("name", "") + suffix, t};
  if (!format4_jobs_) {
    r = job_events_.Correlate({meta.value("uid", ""), type, reason, message, t, r.name});
    if (r.skip) return;
  }
  if (r.count > 1)
    if (const Json* stored = store_.Get("Event", ns, r.name)) {  // (else gone: written again)
      Json ev = *stored;
      ev["count"] = r.count;
      ev["message"] = r.message;
      ev["lastTimestamp"] = KubeTime(t);
      store_.Put("Event", ns, r.name, std::move(ev));
      return;
    }
  StoreEvent(
      {{"apiVersion", "v1"},
       {"kind", "Event"},
       {"metadata", {{"name", r.name}, {"namespace", ns}, {"creationTimestamp", KubeTime(t)}}},
       {"involvedObject",
        {{"apiVersion", "batch/v1"},
         {"kind", "Job"},
         {"namespace", ns},
         {"name", meta.value("name", "")},
         {"uid", meta.value("uid", "")}}},
       {"reason", reason},
       {"message", r.message},
       {"type", type},
       {"source", {{"component", "job-controller"}}},
       {"reportingComponent", "job-controller"},
       {"reportingInstance", "arbiter"},
       {"firstTimestamp", KubeTime(r.first)},
       {"lastTimestamp", KubeTime(t)},
       {"count", r.count}});
}

std::optional<Millis> Cluster::NextJobDeadline() const {
  std::optional<Millis> next;
  if (!job_due_queue_.empty()) next = job_due_queue_.begin()->first;
  for (const auto& [key, c] : job_collections_)  // (a few: big Jobs being deleted)
    if (!next || c.since < *next) next = c.since;
  return next;
}

namespace {
std::string JobUid(const Json& job) { return job.at("metadata").value("uid", ""); }
}  // namespace

void Cluster::IndexJobs() {
  store_.AddIndex("Pod", PodJobUid);
  store_.AddIndex("Job", JobUid);
}

}  // namespace arbiter::server
