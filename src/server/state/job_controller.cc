#include "server/state/job_controller.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "server/state/pod_status.h"

namespace arbiter::server {

namespace {

const Json kNull;

const Json& Field(const Json& o, const char* key) {
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::optional<int64_t> IntField(const Json& spec, const char* key) {
  const Json& v = Field(spec, key);
  if (!v.is_number_integer()) return std::nullopt;
  return v.get<int64_t>();
}

constexpr int64_t kMaxIndexedParallelism = 100000;  // kube's maxParallelismForIndexedJob
constexpr Millis kPodFailureBackOff = 10000;        // DefaultJobPodFailureBackOff
constexpr Millis kMaxPodFailureBackOff = 600000;    // MaxJobPodFailureBackOff

Diagnostic Error(const std::string& name, const std::string& field, const std::string& message) {
  return Diagnostic{Severity::kError, "request", 1, "Job", name, field, message};
}

// kube's validatePodFailurePolicyRule, the parts modelled here (no FailIndex: no
// backoffLimitPerIndex).
void ValidatePodFailurePolicy(const std::string& name, const Json& policy, Diagnostics& d) {
  if (policy.is_null()) return;
  const Json& rules = Field(policy, "rules");
  if (!rules.is_array()) return;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string path = "spec.podFailurePolicy.rules[" + std::to_string(i) + "]";
    const Json& action = Field(rules[i], "action");
    if (action.is_null())
      d.Add(
          Error(name, path + ".action",
                "Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"));
    else if (action == "FailIndex")
      d.Add(Error(name, path + ".action",
                  "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"));
    else if (action != "Count" && action != "FailJob" && action != "Ignore")
      d.Add(Error(name, path + ".action",
                  "Unsupported value: " + action.dump() +
                      ": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""));
    const Json& codes = Field(rules[i], "onExitCodes");
    const Json& conds = Field(rules[i], "onPodConditions");
    if (!codes.is_null() && !conds.is_null())
      d.Add(
          Error(name, path,
                "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"));
    if (codes.is_null() && conds.is_null())
      d.Add(Error(name, path,
                  "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"));
    const Json& op = Field(codes, "operator");
    if (!codes.is_null() && op != "In" && op != "NotIn")
      d.Add(Error(name, path + ".onExitCodes.operator",
                  "Unsupported value: " + op.dump() + ": supported values: \"In\", \"NotIn\""));
  }
}

}  // namespace

Diagnostics ValidateJob(const Json& job, const std::string& display_name) {
  Diagnostics d;
  const Json& spec = Field(job, "spec");
  for (const char* key : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"}) {
    const Json& v = Field(spec, key);
    const std::string field = std::string("spec.") + key;
    if (v.is_null()) continue;
    if (!v.is_number_integer())
      d.Add(Error(display_name, field, "Invalid value: " + v.dump() + ": must be an integer"));
    else if (v.get<int64_t>() < 0)
      d.Add(Error(display_name, field,
                  "Invalid value: " + v.dump() + ": must be greater than or equal to 0"));
  }
  const Json& mode = Field(spec, "completionMode");
  if (!mode.is_null() && mode != "NonIndexed" && mode != "Indexed")
    d.Add(Error(
        display_name, "spec.completionMode",
        "Unsupported value: " + mode.dump() + ": supported values: \"NonIndexed\", \"Indexed\""));
  if (mode == "Indexed") {
    if (Field(spec, "completions").is_null())
      d.Add(Error(display_name, "spec.completions",
                  "Required value: when completion mode is Indexed"));
    const auto parallelism = IntField(spec, "parallelism");
    if (parallelism && *parallelism > kMaxIndexedParallelism)
      d.Add(Error(display_name, "spec.parallelism",
                  "Invalid value: " + std::to_string(*parallelism) +
                      ": must be less than or equal to 100000 when completion mode is Indexed"));
  }
  const Json& suspend = Field(spec, "suspend");
  if (!suspend.is_null() && !suspend.is_boolean())
    d.Add(Error(display_name, "spec.suspend", "Invalid value: " + suspend.dump() + ": not a bool"));
  const Json& tmpl = Field(spec, "template");
  if (!tmpl.is_object()) {
    d.Add(Error(display_name, "spec.template", "Required value"));
    return d;
  }
  const Json& policy = Field(Field(tmpl, "spec"), "restartPolicy");
  const std::string restart = policy.is_string() ? policy.get<std::string>() : "Always";
  if (restart != "OnFailure" && restart != "Never")
    d.Add(Error(
        display_name, "spec.template.spec.restartPolicy",
        "Unsupported value: \"" + restart + "\": supported values: \"OnFailure\", \"Never\""));
  else if (!Field(spec, "podFailurePolicy").is_null() && restart != "Never")
    d.Add(Error(display_name, "spec.template.spec.restartPolicy",
                "Invalid value: \"" + restart +
                    "\": only \"Never\" is supported when podFailurePolicy is specified"));
  ValidatePodFailurePolicy(display_name, Field(spec, "podFailurePolicy"), d);
  return d;
}

void DefaultJob(Json& job, const std::string& uid) {
  Json& spec = job["spec"];
  if (!spec.is_object()) spec = Json::object();
  if (!spec.contains("parallelism") && !spec.contains("completions")) spec["completions"] = 1;
  if (!spec.contains("parallelism")) spec["parallelism"] = 1;
  if (!spec.contains("backoffLimit")) spec["backoffLimit"] = 6;
  if (!spec.contains("completionMode")) spec["completionMode"] = "NonIndexed";
  if (!spec.contains("suspend")) spec["suspend"] = false;
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
    for (const Json& v : env) has = has || Field(v, "name") == "JOB_COMPLETION_INDEX";
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

std::string JobPodName(const Json& job, uint64_t n, int64_t index) {
  // kube's utilrand.String alphabet (no vowels, no look-alikes).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  const std::string seed = job.at("metadata").value("uid", "") + "/" + std::to_string(n);
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
      for (int64_t i = first; i <= last && last - first <= kMaxIndexedParallelism * 10; ++i)
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

bool HasCondition(const Json& status, const char* type) {
  const Json& conds = Field(status, "conditions");
  if (!conds.is_array()) return false;
  for (const auto& c : conds)
    if (Field(c, "type") == type && Field(c, "status") == "True") return true;
  return false;
}

// Sets condition `type` (kube's: a transition rewrites the times, the same status keeps them);
// true if it changed.
bool SetCondition(Json& status, const char* type, bool value, const char* reason,
                  const char* message, Millis now) {
  Json& conds = status["conditions"];
  if (!conds.is_array()) conds = Json::array();
  const char* text = value ? "True" : "False";
  for (auto& c : conds) {
    if (Field(c, "type") != type) continue;
    if (Field(c, "status") == text) return false;
    c = {{"type", type},
         {"status", text},
         {"reason", reason},
         {"message", message},
         {"lastProbeTime", KubeTime(now)},
         {"lastTransitionTime", KubeTime(now)}};
    return true;
  }
  conds.push_back({{"type", type},
                   {"status", text},
                   {"reason", reason},
                   {"message", message},
                   {"lastProbeTime", KubeTime(now)},
                   {"lastTransitionTime", KubeTime(now)}});
  return true;
}

bool Suspended(const Json& job) { return Field(Field(job, "spec"), "suspend") == true; }

struct Pods {
  int succeeded = 0, failed = 0, terminating = 0, ready = 0;
  std::vector<const Json*> active;
  std::vector<std::string> counted;
  std::vector<int64_t> succeeded_indexes;  // Indexed: of the counted Succeeded pods
  // The back-off's record, from every finished pod (counted or not): the last success, and the
  // failures after it with the last one's time.
  std::optional<Millis> last_success, last_failure;
  std::string fail_job;  // a FailJob rule of spec.podFailurePolicy matched: its message
  int64_t failures_after_success = 0;
};

bool Tracked(const Json& pod) {
  const Json& f = Field(Field(pod, "metadata"), "finalizers");
  if (!f.is_array()) return false;
  return std::find(f.begin(), f.end(), Json(kJobTrackingFinalizer)) != f.end();
}

// kube's getFinishedTime: the containers' latest finishedAt, else the creation time.
Millis FinishedTime(const Json& pod) {
  std::optional<Millis> latest;
  const Json& statuses = Field(Field(pod, "status"), "containerStatuses");
  if (statuses.is_array())
    for (const Json& cs : statuses) {
      const Json& at = Field(Field(Field(cs, "state"), "terminated"), "finishedAt");
      if (!at.is_string()) continue;
      if (auto t = ParseRfc3339(at.get<std::string>()); t.ok())
        latest = latest ? std::max(*latest, t.value()) : t.value();
    }
  if (latest) return *latest;
  const Json& created = Field(Field(pod, "metadata"), "creationTimestamp");
  if (created.is_string())
    if (auto t = ParseRfc3339(created.get<std::string>()); t.ok()) return t.value();
  return 0;
}

// The completion index of an Indexed Job's pod (its annotation), -1 if none or not a number.
int64_t PodIndex(const Json& pod) {
  const Json& v = Field(Field(Field(pod, "metadata"), "annotations"), kJobCompletionIndex);
  if (!v.is_string() || v.get<std::string>().empty()) return -1;
  const std::string& text = v.get_ref<const std::string&>();
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(text);
}

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

// The first rule of spec.podFailurePolicy a failed pod matches (kube's matchPodFailurePolicy):
// its action ("" for none) and, for FailJob, the Job's failure message.
std::pair<std::string, std::string> MatchPolicy(const Json& policy, const Json& pod) {
  const Json& rules = Field(policy, "rules");
  if (!rules.is_array()) return {};
  const Json& status = Field(pod, "status");
  const std::string ns = Field(pod, "metadata").value("namespace", "");
  const std::string name = Field(pod, "metadata").value("name", "");
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string action = Field(rules[i], "action").is_string() ? rules[i]["action"] : "";
    const std::string at = " matching " + action + " rule at index " + std::to_string(i);
    if (const Json& req = Field(rules[i], "onExitCodes"); req.is_object()) {
      const Json& statuses = Field(status, "containerStatuses");
      for (const Json& cs : statuses.is_array() ? statuses : Json::array()) {
        const Json& code = Field(Field(Field(cs, "state"), "terminated"), "exitCode");
        if (!code.is_number_integer() || code == 0) continue;
        if (req.contains("containerName") && Field(req, "containerName") != Field(cs, "name"))
          continue;
        const Json& values = Field(req, "values");
        const bool in =
            values.is_array() && std::find(values.begin(), values.end(), code) != values.end();
        if (in != (Field(req, "operator") == "In")) continue;
        return {action, "Container " + cs.value("name", "") + " for pod " + ns + "/" + name +
                            " failed with exit code " + code.dump() + at};
      }
    } else if (const Json& pats = Field(rules[i], "onPodConditions"); pats.is_array()) {
      const Json& conds = Field(status, "conditions");
      for (const Json& c : conds.is_array() ? conds : Json::array())
        for (const Json& pat : pats)
          if (Field(c, "type") == Field(pat, "type") && Field(c, "status") == Field(pat, "status"))
            return {action,
                    "Pod " + ns + "/" + name + " has condition " + c.value("type", "") + at};
    }
  }
  return {};
}

Pods Classify(const std::vector<const Json*>& pods, const Json& policy) {
  Pods out;
  std::vector<std::pair<Millis, bool>> finished;  // (finish time, succeeded)
  for (const Json* p : pods) {
    const Json& meta = Field(*p, "metadata");
    const Json& phase = Field(Field(*p, "status"), "phase");
    const bool deleting = meta.contains("deletionTimestamp");
    if (phase == "Succeeded" || phase == "Failed") {
      const bool ok = phase == "Succeeded";
      auto [action, message] =
          ok || deleting ? std::pair<std::string, std::string>() : MatchPolicy(policy, *p);
      if (action == "FailJob" && out.fail_job.empty()) out.fail_job = message;
      if (!deleting && action != "Ignore") finished.emplace_back(FinishedTime(*p), ok);
      if (!Tracked(*p) || deleting) continue;
      out.counted.push_back(meta.value("name", ""));
      if (action == "Ignore") continue;  // not a failure: neither counted nor backed off
      (ok ? out.succeeded : out.failed) += 1;
      if (ok && PodIndex(*p) >= 0) out.succeeded_indexes.push_back(PodIndex(*p));
    } else if (deleting) {
      ++out.terminating;
    } else {
      out.active.push_back(p);
      if (phase == "Running") ++out.ready;
    }
  }
  BackoffRecord(std::move(finished), out);
  return out;
}

// The active pods to delete first: pending (unbound) before bound, then the newest, then by
// name (kube's controller.ActivePods ranking, shortened).
std::vector<std::string> Surplus(std::vector<const Json*> active, size_t n) {
  auto rank = [](const Json* p) {
    const bool bound = Field(Field(*p, "spec"), "nodeName").is_string();
    const Json& meta = Field(*p, "metadata");
    return std::make_tuple(bound, meta.value("creationTimestamp", ""), meta.value("name", ""));
  };
  std::sort(active.begin(), active.end(), [&](const Json* a, const Json* b) {
    auto ra = rank(a), rb = rank(b);
    if (std::get<0>(ra) != std::get<0>(rb)) return !std::get<0>(ra);
    return std::make_pair(std::get<1>(ra), std::get<2>(ra)) >
           std::make_pair(std::get<1>(rb), std::get<2>(rb));
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < n && i < active.size(); ++i)
    out.push_back(Field(*active[i], "metadata").value("name", ""));
  return out;
}

std::vector<std::string> Names(const std::vector<const Json*>& pods) {
  return Surplus(pods, pods.size());
}

}  // namespace

bool JobFinished(const Json& job) {
  const Json& st = Field(job, "status");
  return HasCondition(st, "Complete") || HasCondition(st, "Failed");
}

namespace {
// startTime + activeDeadlineSeconds, if both are there.
std::optional<Millis> Deadline(const Json& spec, const Json& status) {
  const auto seconds = IntField(spec, "activeDeadlineSeconds");
  const Json& start = Field(status, "startTime");
  if (!seconds || !start.is_string()) return std::nullopt;
  auto t = ParseRfc3339(start.get<std::string>());
  if (!t.ok()) return std::nullopt;
  return t.value() + *seconds * 1000;
}
}  // namespace

std::optional<Millis> JobDeadline(const Json& job) {
  if (JobFinished(job) || Suspended(job)) return std::nullopt;
  return Deadline(Field(job, "spec"), Field(job, "status"));
}

namespace {

// How many pods should be active: parallelism, at most the completions left; with completions
// unset, no new ones once one succeeded.
int64_t Wanted(const Json& spec, int64_t succeeded, int64_t active) {
  const int64_t parallelism = IntField(spec, "parallelism").value_or(1);
  if (auto completions = IntField(spec, "completions"))
    return std::max<int64_t>(0, std::min(parallelism, *completions - succeeded));
  return succeeded > 0 ? std::min(parallelism, active) : parallelism;
}

// kube's getRemainingTimeForFailuresCount: the end of the back-off after `failures` failures,
// the last at `last`.
Millis BackoffEnd(int64_t failures, Millis last) {
  Millis delay = kPodFailureBackOff;
  for (int64_t i = 1; i < failures && delay < kMaxPodFailureBackOff; ++i) delay *= 2;
  return last + std::min(delay, kMaxPodFailureBackOff);
}

bool IsIndexed(const Json& spec) { return Field(spec, "completionMode") == "Indexed"; }

// An Indexed Job's completed indexes (status.completedIndexes and the newly counted successes,
// below completions) written back to the status; pods of a completed, repeated or bad index leave
// `p.active` for `remove`. Returns the running indexes.
std::set<int64_t> TrackIndexes(const Json& spec, Pods& p, Json& st,
                               std::vector<std::string>& remove, std::set<int64_t>& completed) {
  const int64_t completions = IntField(spec, "completions").value_or(0);
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
  std::vector<const Json*> keep, extra;
  for (const Json* pod : p.active) {  // of a repeated index, the first by name keeps it
    const int64_t i = PodIndex(*pod);
    const bool ok = i >= 0 && i < completions && !completed.count(i) && running.insert(i).second;
    (ok ? keep : extra).push_back(pod);
  }
  for (const std::string& name : Surplus(extra, extra.size())) remove.push_back(name);
  p.active = std::move(keep);
  return running;
}

// The lowest `n` indexes neither completed nor running (kube's firstPendingIndexes).
std::vector<int64_t> PendingIndexes(int64_t n, int64_t completions,
                                    const std::set<int64_t>& completed,
                                    const std::set<int64_t>& running) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < completions && static_cast<int64_t>(out.size()) < n; ++i)
    if (!completed.count(i) && !running.count(i)) out.push_back(i);
  return out;
}

std::optional<Millis> Earliest(std::optional<Millis> a, std::optional<Millis> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// The running Job's pods: made up to the wanted number (after the back-off), or the surplus
// deleted. Returns how many of the active ones stay.
int64_t PlanActive(const Json& spec, const Pods& p, int64_t succeeded, Millis now,
                   const std::set<int64_t>& completed, const std::set<int64_t>& running,
                   JobPlan& plan) {
  const int64_t active = static_cast<int64_t>(p.active.size());
  const int64_t wanted = Wanted(spec, succeeded, active);
  if (wanted < active) {
    for (const std::string& name : Surplus(p.active, static_cast<size_t>(active - wanted)))
      plan.remove.push_back(name);
    return wanted;
  }
  if (wanted == active) return active;
  if (p.failures_after_success > 0 && p.last_failure) {
    const Millis end = BackoffEnd(p.failures_after_success, *p.last_failure);
    if (now < end) {
      plan.due = end;
      return active;
    }
  }
  plan.create = static_cast<int>(wanted - active);
  if (IsIndexed(spec)) {
    plan.indexes =
        PendingIndexes(plan.create, IntField(spec, "completions").value_or(0), completed, running);
    plan.create = static_cast<int>(plan.indexes.size());
  }
  return active;
}

// The condition that fails the Job now, if any: [reason, message].
std::optional<std::pair<std::string, std::string>> FailReason(const Json& job, const Pods& p,
                                                              int64_t failed, Millis now) {
  if (!p.fail_job.empty()) return std::make_pair("PodFailurePolicy", p.fail_job);
  if (failed > IntField(Field(job, "spec"), "backoffLimit").value_or(6))
    return std::make_pair("BackoffLimitExceeded", "Job has reached the specified backoff limit");
  const auto deadline = JobDeadline(job);
  if (deadline && now >= *deadline)
    return std::make_pair("DeadlineExceeded", "Job was active longer than specified deadline");
  return std::nullopt;
}

}  // namespace

JobPlan PlanJob(const Json& job, const std::vector<const Json*>& pods, Millis now) {
  JobPlan plan;
  plan.status = Field(job, "status").is_object() ? job["status"] : Json::object();
  if (JobFinished(job)) return plan;
  const Json& spec = Field(job, "spec");
  Json& st = plan.status;
  Pods p = Classify(pods, Field(spec, "podFailurePolicy"));
  plan.counted = p.counted;
  std::set<int64_t> completed, running;
  if (IsIndexed(spec)) running = TrackIndexes(spec, p, st, plan.remove, completed);
  const int64_t succeeded = IsIndexed(spec) ? static_cast<int64_t>(completed.size())
                                            : st.value("succeeded", 0) + p.succeeded;
  const int64_t failed = st.value("failed", 0) + p.failed;
  const int64_t active = static_cast<int64_t>(p.active.size());
  st["succeeded"] = succeeded;
  st["failed"] = failed;
  const auto completions = IntField(spec, "completions");
  const bool complete =
      completions ? succeeded >= *completions && active == 0 : succeeded > 0 && active == 0;
  int64_t keep = active;
  if (auto fail = FailReason(job, p, failed, now)) {
    for (const std::string& name : Names(p.active)) plan.remove.push_back(name);
    keep = 0;
    SetCondition(st, "Failed", true, fail->first.c_str(), fail->second.c_str(), now);
    plan.events.push_back({true, fail->first, fail->second});
  } else if (complete) {
    st["completionTime"] = KubeTime(now);
    SetCondition(st, "Complete", true, "CompletionsReached",
                 "Reached expected number of succeeded pods", now);
    plan.events.push_back({false, "Completed", "Job completed"});
  } else if (Suspended(job)) {
    for (const std::string& name : Names(p.active)) plan.remove.push_back(name);
    keep = 0;
    st.erase("startTime");
    if (SetCondition(st, "Suspended", true, "JobSuspended", "Job suspended", now))
      plan.events.push_back({false, "Suspended", "Job suspended"});
  } else {
    if (HasCondition(st, "Suspended")) {
      SetCondition(st, "Suspended", false, "JobResumed", "Job resumed", now);
      plan.events.push_back({false, "Resumed", "Job resumed"});
    }
    if (!st.contains("startTime")) st["startTime"] = KubeTime(now);
    keep = PlanActive(spec, p, succeeded, now, completed, running, plan);
    plan.due = Earliest(plan.due, Deadline(spec, st));
  }
  st["active"] = keep + plan.create;
  st["terminating"] = p.terminating + static_cast<int64_t>(plan.remove.size());
  st["ready"] = std::min<int64_t>(p.ready, keep);
  for (const char* k : {"active", "succeeded", "failed"})  // omitempty in batch/v1
    if (st.value(k, 0) == 0) st.erase(k);
  return plan;
}

}  // namespace arbiter::server
