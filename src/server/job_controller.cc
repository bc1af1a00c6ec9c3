#include "server/job_controller.h"

#include <algorithm>
#include <tuple>

#include "server/pod_status.h"

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

Diagnostic Error(const std::string& name, const std::string& field, const std::string& message) {
  return Diagnostic{Severity::kError, "request", 1, "Job", name, field, message};
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
  if (!mode.is_null() && mode != "NonIndexed")
    d.Add(Error(display_name, "spec.completionMode",
                "Unsupported value: " + mode.dump() + ": supported values: \"NonIndexed\""));
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

Json PodFromTemplate(const Json& job) {
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
  return pod;
}

std::string JobPodName(const Json& job, uint64_t n) {
  // kube's utilrand.String alphabet (no vowels, no look-alikes).
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  const std::string seed = job.at("metadata").value("uid", "") + "/" + std::to_string(n);
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : seed) h = (h ^ c) * 1099511628211ull;
  std::string suffix;
  for (int i = 0; i < 5; ++i, h /= 27) suffix += kAlphabet[h % 27];
  return job.at("metadata").value("name", "") + "-" + suffix;
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
};

bool Tracked(const Json& pod) {
  const Json& f = Field(Field(pod, "metadata"), "finalizers");
  if (!f.is_array()) return false;
  return std::find(f.begin(), f.end(), Json(kJobTrackingFinalizer)) != f.end();
}

Pods Classify(const std::vector<const Json*>& pods) {
  Pods out;
  for (const Json* p : pods) {
    const Json& meta = Field(*p, "metadata");
    const Json& phase = Field(Field(*p, "status"), "phase");
    const bool deleting = meta.contains("deletionTimestamp");
    if (phase == "Succeeded" || phase == "Failed") {
      if (!Tracked(*p) || deleting) continue;
      (phase == "Succeeded" ? out.succeeded : out.failed) += 1;
      out.counted.push_back(meta.value("name", ""));
    } else if (deleting) {
      ++out.terminating;
    } else {
      out.active.push_back(p);
      if (phase == "Running") ++out.ready;
    }
  }
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

std::optional<Millis> JobDeadline(const Json& job) {
  if (JobFinished(job) || Suspended(job)) return std::nullopt;
  const auto seconds = IntField(Field(job, "spec"), "activeDeadlineSeconds");
  const Json& start = Field(Field(job, "status"), "startTime");
  if (!seconds || !start.is_string()) return std::nullopt;
  auto t = ParseRfc3339(start.get<std::string>());
  if (!t.ok()) return std::nullopt;
  return t.value() + *seconds * 1000;
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

}  // namespace

JobPlan PlanJob(const Json& job, const std::vector<const Json*>& pods, Millis now) {
  JobPlan plan;
  plan.status = Field(job, "status").is_object() ? job["status"] : Json::object();
  if (JobFinished(job)) return plan;
  const Json& spec = Field(job, "spec");
  Json& st = plan.status;
  Pods p = Classify(pods);
  plan.counted = p.counted;
  const int64_t succeeded = st.value("succeeded", 0) + p.succeeded;
  const int64_t failed = st.value("failed", 0) + p.failed;
  const int64_t active = static_cast<int64_t>(p.active.size());
  st["succeeded"] = succeeded;
  st["failed"] = failed;
  const auto completions = IntField(spec, "completions");
  const bool complete =
      completions ? succeeded >= *completions && active == 0 : succeeded > 0 && active == 0;
  const auto deadline = JobDeadline(job);
  const char* fail_reason = nullptr;
  const char* fail_message = nullptr;
  if (failed > IntField(spec, "backoffLimit").value_or(6)) {
    fail_reason = "BackoffLimitExceeded";
    fail_message = "Job has reached the specified backoff limit";
  } else if (deadline && now >= *deadline) {
    fail_reason = "DeadlineExceeded";
    fail_message = "Job was active longer than specified deadline";
  }
  int64_t keep = active;
  if (fail_reason) {
    plan.remove = Names(p.active);
    keep = 0;
    SetCondition(st, "Failed", true, fail_reason, fail_message, now);
    plan.events.push_back({true, fail_reason, fail_message});
  } else if (complete) {
    st["completionTime"] = KubeTime(now);
    SetCondition(st, "Complete", true, "CompletionsReached",
                 "Reached expected number of succeeded pods", now);
    plan.events.push_back({false, "Completed", "Job completed"});
  } else if (Suspended(job)) {
    plan.remove = Names(p.active);
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
    const int64_t wanted = Wanted(spec, succeeded, active);
    if (wanted > active) plan.create = static_cast<int>(wanted - active);
    if (wanted < active) plan.remove = Surplus(p.active, static_cast<size_t>(active - wanted));
    keep = std::min(active, wanted);
  }
  st["active"] = keep + plan.create;
  st["terminating"] = p.terminating + static_cast<int64_t>(plan.remove.size());
  st["ready"] = std::min<int64_t>(p.ready, keep);
  for (const char* k : {"active", "succeeded", "failed"})  // omitempty in batch/v1
    if (st.value(k, 0) == 0) st.erase(k);
  return plan;
}

}  // namespace arbiter::server
