#include "server/state/job_controller.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>

#include "server/state/job_controller_detail.h"
#include "server/state/pod_status.h"

namespace arbiter::server {

void DefaultJob(Json& job, const std::string& uid) {
  Json& spec = job["spec"];
  if (!spec.is_object()) spec = Json::object();
  if (!spec.contains("parallelism") && !spec.contains("completions")) spec["completions"] = 1;
  if (!spec.contains("parallelism")) spec["parallelism"] = 1;
  if (!spec.contains("backoffLimit"))  // kube: MaxInt32 when failures are counted per index
    spec["backoffLimit"] = spec.contains("backoffLimitPerIndex") ? 2147483647 : 6;
  if (!spec.contains("completionMode")) spec["completionMode"] = "NonIndexed";
  if (!spec.contains("suspend")) spec["suspend"] = false;
  if (!spec.contains("podReplacementPolicy"))  // kube: Failed under a podFailurePolicy
    spec["podReplacementPolicy"] =
        spec.contains("podFailurePolicy") ? "Failed" : "TerminatingOrFailed";
  const std::string name = job["metadata"].value("name", "");
  if (!spec.contains("selector"))
    spec["selector"] = {{"matchLabels", {{kControllerUidLabel, uid}}}};
  Json& labels = spec["template"]["metadata"]["labels"];
  if (!labels.is_object()) labels = Json::object();
  labels[kControllerUidLabel] = uid;
  labels[kJobNameLabel] = name;
  labels["controller-uid"] = uid;
  labels["job-name"] = name;
  Json& own = job["metadata"]["labels"];
  if (!own.is_object() || own.empty()) own = labels;
}

namespace {

// kube's addCompletionIndexEnvVariable: JOB_COMPLETION_INDEX from the pod's index label.
void AddIndexEnv(Json& pod_spec) {
  Json& containers = pod_spec["containers"];
  if (!containers.is_array()) return;
  for (Json& c : containers) {
    if (!c.is_object()) continue;
    Json& env = c["env"];
    if (!env.is_array()) env = Json::array();
    bool has = false;
    for (const Json& v : env) has = has || job_detail::Member(v, "name") == "JOB_COMPLETION_INDEX";
    if (!has)
      env.push_back(
          {{"name", "JOB_COMPLETION_INDEX"},
           {"valueFrom",
            {{"fieldRef",
              {{"fieldPath", std::string("metadata.labels['") + kJobCompletionIndex + "']"}}}}}});
  }
}

}  // namespace

Json PodFromTemplate(const Json& job, int64_t index) {
  const Json& meta = job.at("metadata");
  const Json& tmpl = job.at("spec").at("template");
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  Json m =
      tmpl.contains("metadata") && tmpl["metadata"].is_object() ? tmpl["metadata"] : Json::object();
  for (const char* k : {"name", "generateName", "uid", "resourceVersion", "creationTimestamp"})
    m.erase(k);
  m["namespace"] = meta.value("namespace", "default");
  m["ownerReferences"] = Json::array({{{"apiVersion", "batch/v1"},
                                       {"kind", "Job"},
                                       {"name", meta.value("name", "")},
                                       {"uid", meta.value("uid", "")},
                                       {"controller", true},
                                       {"blockOwnerDeletion", true}}});
  m["finalizers"] = Json::array({kJobTrackingFinalizer});
  pod["metadata"] = std::move(m);
  pod["spec"] = tmpl.contains("spec") ? tmpl["spec"] : Json::object();
  if (index >= 0) {
    Json& m2 = pod["metadata"];
    if (!m2["annotations"].is_object()) m2["annotations"] = Json::object();
    if (!m2["labels"].is_object()) m2["labels"] = Json::object();
    m2["annotations"][kJobCompletionIndex] = std::to_string(index);
    m2["labels"][kJobCompletionIndex] = std::to_string(index);
    if (pod["spec"].is_object()) {
      pod["spec"]["hostname"] = meta.value("name", "") + "-" + std::to_string(index);
      AddIndexEnv(pod["spec"]);
    }
  }
  return pod;
}

std::string JobPodName(const Json& job, std::string_view salt, int64_t index) {
  // kube's utilrand.String alphabet (no vowels, no look-alikes).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  const std::string seed = job.at("metadata").value("uid", "") + "/" + std::string(salt);
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : seed) h = (h ^ c) * 1099511628211ull;
  std::string suffix;
  for (int i = 0; i < 5; ++i, h /= 27) suffix += kAlphabet[h % 27];
  std::string prefix = job.at("metadata").value("name", "") + "-";
  if (index >= 0) prefix += std::to_string(index) + "-";
  return prefix + suffix;
}

std::string FormatIndexes(const std::vector<int64_t>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int64_t> ParseIndexes(const std::string& text) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t dash = part.find('-');
    try {
      const int64_t first = std::stoll(part.substr(0, dash));
      const int64_t last = dash == std::string::npos ? first : std::stoll(part.substr(dash + 1));
      for (int64_t i = first; i <= last && last - first <= job_detail::kMaxIndexedParallelism * 10;
           ++i)
        out.push_back(i);
    } catch (const std::exception&) {
      continue;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// The condition of `type` if it is True.
const Json* TrueCondition(const Json& status, const char* type) {
  const Json& conds = job_detail::Member(status, "conditions");
  if (!conds.is_array()) return nullptr;
  for (const auto& c : conds)
    if (job_detail::Member(c, "type") == type && job_detail::Member(c, "status") == "True")
      return &c;
  return nullptr;
}

bool HasCondition(const Json& status, const char* type) {
  return TrueCondition(status, type) != nullptr;
}

// Sets condition `type` (kube's: a transition rewrites the times, the same status keeps them);
// true if it changed.
bool SetCondition(Json& status, const char* type, bool value, const std::string& reason,
                  const std::string& message, Millis now) {
  Json& conds = status["conditions"];
  if (!conds.is_array()) conds = Json::array();
  const char* text = value ? "True" : "False";
  Json cond = {{"type", type},
               {"status", text},
               {"reason", reason},
               {"message", message},
               {"lastProbeTime", KubeTime(now)},
               {"lastTransitionTime", KubeTime(now)}};
  for (auto& c : conds) {
    if (job_detail::Member(c, "type") != type) continue;
    if (job_detail::Member(c, "status") == text) return false;
    c = std::move(cond);
    return true;
  }
  conds.push_back(std::move(cond));
  return true;
}

bool Suspended(const Json& job) {
  return job_detail::Member(job_detail::Member(job, "spec"), "suspend") == true;
}

// kube's onlyReplaceFailedPods: podReplacementPolicy Failed (the default under a
// podFailurePolicy): a terminating pod is neither failed nor replaced until it has failed.
bool OnlyReplaceFailed(const Json& spec) {
  return job_detail::Member(spec, "podReplacementPolicy") == "Failed" ||
         !job_detail::Member(spec, "podFailurePolicy").is_null();
}

struct Pods {
  int succeeded = 0, failed = 0, terminating = 0;
  int64_t ready = 0;
  int64_t active_count = 0;  // of `active`, listed or not
  // The active pods, in name order: listed (ListPods) only by an Indexed Job's plan, which drops
  // the pods of repeated and completed indexes from them (TrackIndexes); the others read the
  // table's (JobPodTable::active_pods).
  bool listed = false;
  std::vector<const JobPodFacts*> active;
  // The tracked unfinished pods (neither succeeded nor failed yet) an ending Job counts now, in
  // name order (CountUnfinished).
  std::vector<const JobPodFacts*> unfinished;
  std::vector<const JobPodFacts*> counted;  // finished, tracked: their finalizer comes off
  bool only_failed = false;                 // OnlyReplaceFailed
  int64_t unplanned = 0;                    // active pods to delete at a later sync (RemoveActive)
  std::set<int64_t> terminating_indexes;    // Indexed: of the terminating pods
  std::vector<int64_t> succeeded_indexes;   // Indexed: of the counted Succeeded pods
  // The back-off's record, from every finished pod (counted or not): the last success, and the
  // failures after it with the last one's time.
  std::optional<Millis> last_success, last_failure;
  std::string fail_job;  // a FailJob rule of spec.podFailurePolicy matched: its message
  JobFinishes finishes;  // of the pods counted now
  int64_t failures_after_success = 0;
  int64_t restarts = 0;  // the restartCounts of the Running and Pending pods' containers
  const JobPodView* view = nullptr;  // the pods classified (a rule may read one whole)
};

// Folds the finished pods' times into the back-off record (kube's newBackoffRecord, over all of
// them at once: the failures that finished after the last success).
void BackoffRecord(std::vector<std::pair<Millis, bool>> finished, Pods& out) {
  std::sort(finished.begin(), finished.end());
  for (const auto& [t, ok] : finished) {
    if (ok) {
      out.last_success = t;
      out.failures_after_success = 0;
      out.last_failure.reset();
    } else if (!out.last_success || t > *out.last_success) {
      ++out.failures_after_success;
      out.last_failure = t;
    }
  }
}

// The active pods, listed (Pods::active) if they are not yet: a walk of all of the Job's pods.
void ListPods(Pods& p) {
  if (p.listed) return;
  p.listed = true;
  p.active.reserve(static_cast<size_t>(p.active_count));
  for (const JobPodFacts& f : p.view->table.pods())
    if (!f.terminal() && !f.deleting) p.active.push_back(&f);
}

// The pods as kube's syncJob sees them: active (neither finished nor being deleted), terminating
// (being deleted, not finished), and finished: Succeeded, or failed (kube's isPodFailed: Failed,
// or under TerminatingOrFailed being deleted and not Succeeded). A finished pod still carrying
// the tracking finalizer is counted now. Of the active pods only the table's counts are read
// (RemoveActive and CountUnfinished take the first of its lists; an Indexed Job's, ListPods).
Pods Classify(const JobPodView& pods, const Json& spec, const JobFinishes& remembered,
              JobRules rules) {
  using Phase = JobPodFacts::Phase;
  const Json& policy = job_detail::Member(spec, "podFailurePolicy");
  const JobPodTable& table = pods.table;
  Pods out;
  out.view = &pods;
  out.only_failed = OnlyReplaceFailed(spec);
  out.active_count = table.active();
  out.ready = table.ready();
  out.restarts = table.restarts();
  std::vector<std::pair<Millis, bool>> finished;  // (finish time, succeeded)
  for (const auto& [name, f] : remembered)        // of the pods since gone
    if (!table.pods().contains(std::string_view(name))) finished.push_back(f);
  for (const JobPodFacts* p : table.others()) {
    if (!p->terminal()) {  // being deleted
      ++out.terminating;
      if (p->index >= 0) out.terminating_indexes.insert(p->index);
    }
    const bool ok = p->phase == Phase::kSucceeded;
    if (!ok && p->phase != Phase::kFailed && (out.only_failed || !p->deleting))
      continue;  // unfinished (CountUnfinished)
    if (rules != JobRules::kFormat4 && !p->tracked && !p->terminal() && !remembered.count(p->name))
      continue;  // deleted, never counted (JobRules)
    auto [action, message] =
        ok ? std::pair<std::string, std::string>() : job_detail::MatchPolicy(policy, pods, *p);
    if (action == "FailJob" && out.fail_job.empty()) out.fail_job = message;
    if (action != "Ignore") finished.emplace_back(p->finished, ok);
    if (!p->tracked) continue;
    out.counted.push_back(p);
    if (action == "Ignore") continue;  // not a failure: neither counted nor backed off
    out.finishes[p->name] = {p->finished, ok};
    (ok ? out.succeeded : out.failed) += 1;
    if (ok && p->index >= 0) out.succeeded_indexes.push_back(p->index);
  }
  BackoffRecord(std::move(finished), out);
  return out;
}

// The `n` active pods to delete first, of `active` (JobPodTable::BySurplus order).
std::vector<std::string> Surplus(std::vector<const JobPodFacts*> active, size_t n) {
  const size_t take = std::min(n, active.size());
  std::partial_sort(active.begin(), active.begin() + static_cast<std::ptrdiff_t>(take),
                    active.end(), JobPodTable::BySurplus());
  std::vector<std::string> out;
  for (size_t i = 0; i < take; ++i) out.push_back(active[i]->name);
  return out;
}

// `n` active pods deleted (surplus; all of them, an ending or suspended Job), in BySurplus order:
// at most what is left of `cap` after the ones planned already, the rest counted in `unplanned`
// (a later sync's, JobPlan::more), so that a sync of a big Job ranks none of its pods (the
// table's are ranked; an Indexed Job's listed ones partly sorted).
void RemoveActive(Pods& p, int64_t n, int64_t cap, JobPlan& plan) {
  const int64_t room = std::max<int64_t>(0, cap - std::ssize(plan.remove));
  const int64_t take = std::min({n, room, p.active_count});
  if (p.listed) {
    for (const std::string& name : Surplus(p.active, static_cast<size_t>(take)))
      plan.remove.push_back(name);
  } else {
    auto it = p.view->table.active_pods().begin();
    for (int64_t i = 0; i < take; ++i, ++it) plan.remove.push_back((*it)->name);
  }
  p.unplanned += n - take;
}
void RemoveActive(Pods& p, int64_t cap, JobPlan& plan) {
  RemoveActive(p, p.active_count, cap, plan);
}

}  // namespace

bool JobManagedHere(const Json& job) {
  const Json& by = job_detail::Member(job_detail::Member(job, "spec"), "managedBy");
  return !by.is_string() || by == kJobControllerName;
}

bool JobFinished(const Json& job) {
  const Json& st = job_detail::Member(job, "status");
  return HasCondition(st, "Complete") || HasCondition(st, "Failed");
}

bool JobFailing(const Json& job) {
  const Json& st = job_detail::Member(job, "status");
  return JobManagedHere(job) && HasCondition(st, "FailureTarget") && !JobFinished(job);
}

namespace {
// startTime + activeDeadlineSeconds, if both are there.
std::optional<Millis> Deadline(const Json& spec, const Json& status) {
  const auto seconds = job_detail::IntField(spec, "activeDeadlineSeconds");
  const Json& start = job_detail::Member(status, "startTime");
  if (!seconds || !start.is_string()) return std::nullopt;
  auto t = ParseRfc3339(start.get<std::string>());
  if (!t.ok()) return std::nullopt;
  return t.value() + *seconds * 1000;
}
}  // namespace

std::optional<Millis> JobExpiry(const Json& job) {
  const auto ttl = job_detail::IntField(job_detail::Member(job, "spec"), "ttlSecondsAfterFinished");
  if (!ttl) return std::nullopt;
  const Json& st = job_detail::Member(job, "status");
  for (const char* type : {"Complete", "Failed"})
    if (const Json* c = TrueCondition(st, type)) {
      const Json& at = job_detail::Member(*c, "lastTransitionTime");
      auto t = at.is_string() ? ParseRfc3339(at.get<std::string>()) : Result<Millis>::Error("");
      if (t.ok()) return t.value() + *ttl * 1000;
    }
  return std::nullopt;
}

std::optional<Millis> JobDeadline(const Json& job) {
  if (JobFinished(job) || Suspended(job)) return std::nullopt;
  return Deadline(job_detail::Member(job, "spec"), job_detail::Member(job, "status"));
}

namespace {

// How many pods should be active: parallelism, at most the completions left; with completions
// unset, no new ones once one succeeded.
int64_t Wanted(const Json& spec, int64_t succeeded, int64_t active) {
  const int64_t parallelism = job_detail::IntField(spec, "parallelism").value_or(1);
  if (auto completions = job_detail::IntField(spec, "completions"))
    return std::max<int64_t>(0, std::min(parallelism, *completions - succeeded));
  return succeeded > 0 ? std::min(parallelism, active) : parallelism;
}

// An Indexed Job's completed indexes (status.completedIndexes and the newly counted successes,
// below completions) written back to the status; pods of a completed, repeated or bad index leave
// `p.active` for `remove`. Returns the running indexes.
std::set<int64_t> TrackIndexes(const Json& spec, Pods& p, Json& st,
                               std::vector<std::string>& remove, std::set<int64_t>& completed) {
  const int64_t completions = job_detail::IntField(spec, "completions").value_or(0);
  for (int64_t i : ParseIndexes(st.value("completedIndexes", "")))
    if (i < completions) completed.insert(i);
  for (int64_t i : p.succeeded_indexes)
    if (i < completions) completed.insert(i);
  std::vector<int64_t> sorted(completed.begin(), completed.end());
  if (sorted.empty())
    st.erase("completedIndexes");
  else
    st["completedIndexes"] = FormatIndexes(sorted);
  std::set<int64_t> running;
  std::vector<const JobPodFacts*> keep, extra;
  ListPods(p);
  for (const JobPodFacts* pod : p.active) {  // of a repeated index, the first by name keeps it
    const int64_t i = pod->index;
    const bool ok = i >= 0 && i < completions && !completed.count(i) && running.insert(i).second;
    (ok ? keep : extra).push_back(pod);
  }
  for (const std::string& name : Surplus(extra, extra.size())) remove.push_back(name);
  p.active = std::move(keep);
  p.active_count = std::ssize(p.active);
  return running;
}

// The lowest `n` indexes neither completed, running nor failed (kube's firstPendingIndexes).
std::vector<int64_t> PendingIndexes(int64_t n, int64_t completions,
                                    const std::set<int64_t>& completed,
                                    const std::set<int64_t>& running,
                                    const std::set<int64_t>& failed) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < completions && static_cast<int64_t>(out.size()) < n; ++i)
    if (!completed.count(i) && !running.count(i) && !failed.count(i)) out.push_back(i);
  return out;
}

std::optional<Millis> Earliest(std::optional<Millis> a, std::optional<Millis> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// What the controller knows of an Indexed Job's indexes at this sync.
struct Indexes {
  std::set<int64_t> completed, running;
  std::set<int64_t> terminating;       // podReplacementPolicy Failed: not pending while terminating
  job_detail::IndexFailures failures;  // backoffLimitPerIndex
};

// An Indexed Job's new pods: the lowest pending indexes, with backoffLimitPerIndex only those
// whose own back-off is over (the others wake the clock), each with its failure count.
void PlanIndexes(const Json& spec, const JobPodView& pods, const Indexes& ix, Millis now,
                 JobPlan& plan) {
  const bool per_index = job_detail::HasBackoffLimitPerIndex(spec);
  std::set<int64_t> busy = ix.running;
  busy.insert(ix.terminating.begin(), ix.terminating.end());
  for (int64_t i :
       PendingIndexes(plan.create, job_detail::IntField(spec, "completions").value_or(0),
                      ix.completed, busy, ix.failures.failed)) {
    const auto end = per_index ? job_detail::IndexBackoffEnd(ix.failures, i) : std::nullopt;
    if (end && now < *end) {
      plan.due = Earliest(plan.due, end);
      continue;
    }
    plan.indexes.push_back(i);
    if (per_index)
      plan.annotations.push_back(job_detail::IndexFailureAnnotations(spec, pods, ix.failures, i));
  }
  plan.create = static_cast<int>(plan.indexes.size());
}

// The running Job's pods: made up to the wanted number (after the back-off; at most `cap`, the
// rest at the next sync), or the surplus deleted. Returns how many of the active ones stay.
int64_t PlanActive(const Json& spec, Pods& p, int64_t succeeded, Millis now, const Indexes& ix,
                   int64_t cap, JobPlan& plan) {
  const int64_t active = p.active_count;
  const int64_t wanted = Wanted(spec, succeeded, active);
  if (wanted < active) {
    RemoveActive(p, active - wanted, cap, plan);
    return wanted;
  }
  // podReplacementPolicy Failed: a terminating pod still holds its place.
  const int64_t terminating = OnlyReplaceFailed(spec) ? p.terminating : 0;
  if (wanted <= active + terminating) return active;
  if (!job_detail::HasBackoffLimitPerIndex(spec) && p.failures_after_success > 0 &&
      p.last_failure) {
    const Millis end = job_detail::BackoffEnd(p.failures_after_success, *p.last_failure);
    if (now < end) {
      plan.due = end;
      return active;
    }
  }
  const int64_t missing = wanted - active - terminating;
  plan.create = static_cast<int>(std::min(missing, cap));
  if (job_detail::IsIndexed(spec)) PlanIndexes(spec, *p.view, ix, now, plan);
  // kube's MaxPodCreateDeletePerSync: the rest at the next sync, if this one makes some (an
  // Indexed Job whose lowest pending indexes all back off waits for them, plan.due).
  plan.more = missing > cap && plan.create > 0;
  return active;
}

// kube's pastBackoffLimitOnFailure: under restartPolicy OnFailure, the restarts of the Running
// and Pending pods reach backoffLimit (any restart with a limit of 0).
bool PastBackoffLimitOnFailure(const Json& spec, int64_t restarts, int64_t limit) {
  const Json& tmpl = job_detail::Member(job_detail::Member(spec, "template"), "spec");
  if (job_detail::Member(tmpl, "restartPolicy") != "OnFailure") return false;
  return limit == 0 ? restarts > 0 : restarts >= limit;
}

// The outcome that ends the Job, in kube's order: a SuccessCriteriaMet or FailureTarget already
// there, a FailJob rule, backoffLimit, the deadline, maxFailedIndexes, failed indexes,
// spec.successPolicy.
struct Outcome {
  bool success = false;
  std::string reason, message;
};
// The first two: the outcome the Job's status already says (FailureTarget, SuccessCriteriaMet).
std::optional<Outcome> Ending(const Json& job) {
  if (const Json* met = TrueCondition(job_detail::Member(job, "status"), "SuccessCriteriaMet"))
    return Outcome{true, met->value("reason", ""), met->value("message", "")};
  if (const Json* target = TrueCondition(job_detail::Member(job, "status"), "FailureTarget"))
    return Outcome{false, target->value("reason", ""), target->value("message", "")};
  return std::nullopt;
}
std::optional<Outcome> Finish(const Json& job, const Pods& p, int64_t failed, const Indexes& ix,
                              Millis now) {
  const Json& spec = job_detail::Member(job, "spec");
  if (auto ending = Ending(job)) return ending;
  if (!p.fail_job.empty()) return Outcome{false, "PodFailurePolicy", p.fail_job};
  const int64_t limit = job_detail::IntField(spec, "backoffLimit").value_or(6);
  if (failed > limit || PastBackoffLimitOnFailure(spec, p.restarts, limit))
    return Outcome{false, "BackoffLimitExceeded", "Job has reached the specified backoff limit"};
  const auto deadline = JobDeadline(job);
  if (deadline && now >= *deadline)
    return Outcome{false, "DeadlineExceeded", "Job was active longer than specified deadline"};
  const int64_t failed_indexes = static_cast<int64_t>(ix.failures.failed.size());
  if (job_detail::HasBackoffLimitPerIndex(spec)) {
    const auto max = job_detail::IntField(spec, "maxFailedIndexes");
    if (max && failed_indexes > *max)
      return Outcome{false, "MaxFailedIndexesExceeded",
                     "Job has exceeded the specified maximal number of failed indexes"};
    if (failed_indexes > 0 && failed_indexes + static_cast<int64_t>(ix.completed.size()) >=
                                  job_detail::IntField(spec, "completions").value_or(0))
      return Outcome{false, "FailedIndexes", "Job has failed indexes"};
  }
  if (job_detail::IsIndexed(spec))
    if (auto message = job_detail::MatchSuccessPolicy(spec, ix.completed))
      return Outcome{true, "SuccessPolicy", *message};
  return std::nullopt;
}

// kube's canRemoveFinalizer under backoffLimitPerIndex: the last failed pod of an index still to
// run keeps its finalizer (and is not counted yet) until its replacement carries its count.
void KeepLastFailed(const Json& spec, const Indexes& ix, Pods& p) {
  std::set<const JobPodFacts*> keep;
  for (const auto& [i, pod] : ix.failures.last_failed) keep.insert(pod);
  const Json& policy = job_detail::Member(spec, "podFailurePolicy");
  auto kept = [&](const JobPodFacts* pod) {
    if (!keep.count(pod)) return false;
    if (job_detail::MatchPolicy(policy, *p.view, *pod).first != "Ignore") --p.failed;
    return true;
  };
  p.counted.erase(std::remove_if(p.counted.begin(), p.counted.end(), kept), p.counted.end());
}

// The Job met its success criteria (a rule of spec.successPolicy, or all completions):
// SuccessCriteriaMet, its pods deleted, then Complete with the same reason once none is left.
void Succeed(const Outcome& o, Pods& p, int64_t cap, Millis now, JobPlan& plan) {
  RemoveActive(p, cap, plan);
  Json& st = plan.status;
  SetCondition(st, "SuccessCriteriaMet", true, o.reason, o.message, now);
  if (p.terminating + plan.remove.size() > 0) return;
  st["completionTime"] = KubeTime(now);
  SetCondition(st, "Complete", true, o.reason, o.message, now);
  plan.events.push_back({false, "Completed", "Job completed"});
}

// kube's trackJobStatusAndRemoveFinalizers once the Job is failing: "every non-terminated pod is
// considered failed" (unless a podFailurePolicy rule ignores it).
void CountUnfinishedAsFailed(const Json& spec, Pods& p) {
  const Json& policy = job_detail::Member(spec, "podFailurePolicy");
  const auto completions = job_detail::IntField(spec, "completions");
  for (const JobPodFacts* pod : p.unfinished) {
    const int64_t i = pod->index;
    if (job_detail::IsIndexed(spec) && (i < 0 || !completions || i >= *completions)) continue;
    if (job_detail::MatchPolicy(policy, *p.view, *pod).first != "Ignore") ++p.failed;
  }
}

// The tracked unfinished pods (neither succeeded nor failed yet): the active ones, and under
// podReplacementPolicy Failed the terminating ones too (not failed until they have), in name
// order, from the table's lists (no walk of the Job's other pods).
class UnfinishedPods {
 public:
  explicit UnfinishedPods(const Pods& p)
      : active_(p.view->table.tracked_active()),
        terminating_(p.only_failed ? &p.view->table.tracked_terminating() : nullptr) {}
  int64_t size() const {
    return std::ssize(active_) + (terminating_ ? std::ssize(*terminating_) : 0);
  }
  bool contains(const JobPodFacts& f) const {
    return f.tracked && !f.terminal() && (terminating_ || !f.deleting);
  }
  // `f(pod)` for each, in name order, while it returns true.
  template <class F>
  void ForEach(F f) const {
    static const JobPodTable::Others kNone;
    const auto& more = terminating_ ? *terminating_ : kNone;
    auto a = active_.begin(), b = more.begin();
    while (a != active_.end() || b != more.end()) {
      const bool from_a = b == more.end() || (a != active_.end() && (*a)->name < (*b)->name);
      if (!f(*(from_a ? a++ : b++))) return;
    }
  }

 private:
  const JobPodTable::Others& active_;
  const JobPodTable::Others* terminating_;
};

// The Job ends (`outcome`) or is being deleted: its unfinished pods lose the tracking finalizer
// (kube's canRemoveFinalizer), and a failing Job counts them as failed. kCurrent: at most `cap`
// of them in one sync, the ones it deletes now first, then the others in name order; the rest keep
// it, uncounted, for the next syncs (JobPlan::more: kube counts a Job's pods in batches through
// status.uncountedTerminatedPods). Those are active or terminating, so the plan that ends the Job
// (Failed, Complete) comes after them. Being deleted (Foreground) with no ending (`outcome`):
// kCurrent and kFormat10 take none here (the garbage collector takes a pod's off as it deletes
// it), older rules every one.
void CountUnfinished(const Json& spec, const std::optional<Outcome>& outcome, bool deleting,
                     JobRules rules, int64_t cap, Pods& p, JobPlan& plan) {
  const bool gc_takes = rules == JobRules::kCurrent || rules == JobRules::kFormat10;
  if (!outcome && !(deleting && !gc_takes)) return;
  const UnfinishedPods unfinished(p);
  if (outcome && rules == JobRules::kCurrent && unfinished.size() > cap) {
    // The ones deleted now, then the first others by name, `cap` in all, in name order.
    std::vector<const JobPodFacts*> now;
    for (const std::string& name : plan.remove)
      if (auto it = p.view->table.pods().find(name); it != p.view->table.pods().end())
        if (unfinished.contains(*it)) now.push_back(&*it);
    std::sort(now.begin(), now.end(), JobPodTable::ByName());
    now.erase(std::unique(now.begin(), now.end()), now.end());
    int64_t others = cap - std::ssize(now);
    p.unfinished = now;
    unfinished.ForEach([&](const JobPodFacts* pod) {
      if (others <= 0) return false;
      if (!std::binary_search(now.begin(), now.end(), pod, JobPodTable::ByName())) {
        p.unfinished.push_back(pod);
        --others;
      }
      return true;
    });
    std::inplace_merge(p.unfinished.begin(), p.unfinished.begin() + std::ssize(now),
                       p.unfinished.end(), JobPodTable::ByName());
    plan.more = true;
  } else {
    unfinished.ForEach([&](const JobPodFacts* pod) {
      p.unfinished.push_back(pod);
      return true;
    });
  }
  if (outcome && !outcome->success) CountUnfinishedAsFailed(spec, p);
  p.counted.insert(p.counted.end(), p.unfinished.begin(), p.unfinished.end());
}

// The Job met a failure criterion: condition FailureTarget (kube's interim one, reason and
// message of the failure), its active pods deleted, then Failed with the same reason once no pod
// of it is left terminating.
void Fail(const Outcome& o, Pods& p, int64_t cap, Millis now, JobPlan& plan) {
  RemoveActive(p, cap, plan);
  Json& st = plan.status;
  SetCondition(st, "FailureTarget", true, o.reason, o.message, now);
  if (p.terminating + plan.remove.size() > 0) return;
  SetCondition(st, "Failed", true, o.reason, o.message, now);
  plan.events.push_back({true, o.reason, o.message});
}

// Suspended or running: the Suspended condition, startTime, and the pods to make or delete.
int64_t Run(const Json& job, Pods& p, int64_t succeeded, Millis now, const Indexes& ix, int64_t cap,
            JobPlan& plan) {
  Json& st = plan.status;
  if (Suspended(job)) {
    RemoveActive(p, cap, plan);
    st.erase("startTime");
    if (SetCondition(st, "Suspended", true, "JobSuspended", "Job suspended", now))
      plan.events.push_back({false, "Suspended", "Job suspended"});
    return 0;
  }
  if (HasCondition(st, "Suspended")) {
    SetCondition(st, "Suspended", false, "JobResumed", "Job resumed", now);
    plan.events.push_back({false, "Resumed", "Job resumed"});
  }
  if (!st.contains("startTime")) st["startTime"] = KubeTime(now);
  const int64_t keep =
      PlanActive(job_detail::Member(job, "spec"), p, succeeded, now, ix, cap, plan);
  plan.due = Earliest(plan.due, Deadline(job_detail::Member(job, "spec"), st));
  return keep;
}

}  // namespace

JobPlan PlanJob(const Json& job, const JobPodView& pods, Millis now, const JobFinishes& remembered,
                JobRules rules, int64_t limit) {
  JobPlan plan;
  plan.status = job_detail::Member(job, "status").is_object() ? job["status"] : Json::object();
  if (JobFinished(job)) return plan;
  // Journal formats 1-7 made and deleted every pod in one sync (JobRules).
  const int64_t cap =
      rules == JobRules::kCurrent || rules == JobRules::kFormat10 || rules == JobRules::kFormat9
          ? std::clamp<int64_t>(limit, 1, kMaxPodCreateDeletePerSync)
          : std::numeric_limits<int64_t>::max();
  const Json& spec = job_detail::Member(job, "spec");
  Json& st = plan.status;
  Pods p = Classify(pods, spec, remembered, rules);
  Indexes ix;
  if (job_detail::IsIndexed(spec))
    ix.running = TrackIndexes(spec, p, st, plan.remove, ix.completed);
  if (OnlyReplaceFailed(spec)) ix.terminating = p.terminating_indexes;
  if (job_detail::HasBackoffLimitPerIndex(spec)) {
    ix.failures = job_detail::TrackFailedIndexes(spec, st, pods, ix.completed, ix.running);
    st["failedIndexes"] =
        FormatIndexes(std::vector<int64_t>(ix.failures.failed.begin(), ix.failures.failed.end()));
  }
  const int64_t succeeded = job_detail::IsIndexed(spec) ? static_cast<int64_t>(ix.completed.size())
                                                        : st.value("succeeded", 0) + p.succeeded;
  const bool deleting = job_detail::Member(job, "metadata").contains("deletionTimestamp");
  // (Being deleted, kCurrent: the ending it had, whose pods it still counts.)
  const auto outcome = !deleting ? Finish(job, p, st.value("failed", 0) + p.failed, ix, now)
                       : rules == JobRules::kCurrent ? Ending(job)
                                                     : std::nullopt;
  if (!outcome && !deleting) KeepLastFailed(spec, ix, p);
  plan.finishes = std::move(p.finishes);
  st["succeeded"] = succeeded;
  st["uncountedTerminatedPods"] = Json::object();  // counted as the finalizers come off
  const int64_t active = p.active_count;
  const auto completions = job_detail::IntField(spec, "completions");
  int64_t keep = 0;
  if (deleting) {  // foreground deletion: no pod is made, the Job goes with the last one
    keep = active;
  } else if (outcome && !outcome->success) {
    Fail(*outcome, p, cap, now, plan);
  } else if (outcome) {
    Succeed(*outcome, p, cap, now, plan);
  } else if (completions ? succeeded >= *completions && active == 0
                         : succeeded > 0 && active == 0) {
    Succeed({true, "CompletionsReached", "Reached expected number of succeeded pods"}, p, cap, now,
            plan);
  } else {
    keep = Run(job, p, succeeded, now, ix, cap, plan);
  }
  // At most `cap` pods deleted (kube's MaxPodCreateDeletePerSync), the first ones planned; the
  // others stay active until a later sync, due at once, deletes them.
  const int64_t later = std::max<int64_t>(0, std::ssize(plan.remove) - cap) + p.unplanned;
  if (later > 0) {
    keep += later;
    plan.remove.resize(std::min(plan.remove.size(), static_cast<size_t>(cap)));
    plan.more = true;
  }
  CountUnfinished(spec, outcome, deleting, rules, cap, p, plan);  // (after the deletes are known)
  for (const JobPodFacts* pod : p.counted) plan.counted.push_back(pod->name);
  st["failed"] = st.value("failed", 0) + p.failed;
  st["active"] = keep + plan.create;
  st["terminating"] = p.terminating + static_cast<int64_t>(plan.remove.size());
  st["ready"] = std::min<int64_t>(p.ready, keep);
  for (const char* k : {"active", "succeeded", "failed"})  // omitempty in batch/v1
    if (st.value(k, 0) == 0) st.erase(k);
  return plan;
}

JobPlan PlanJob(const Json& job, const std::vector<const Json*>& pods, Millis now,
                const JobFinishes& remembered, JobRules rules, int64_t limit) {
  JobPodTable table;
  std::map<std::string, const Json*, std::less<>> trees;  // (of a name, the first)
  for (const Json* p : pods) {
    JobPodFacts f = JobPodFacts::Of(*p);
    trees.try_emplace(f.name, p);
    table.Add(std::move(f));
  }
  JobPodView view{table, [&](const JobPodFacts& f) -> const Json& { return *trees.at(f.name); }};
  return PlanJob(job, view, now, remembered, rules, limit);
}

}  // namespace arbiter::server
