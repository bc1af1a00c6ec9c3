// Facts the Job controller reads off its pods (JobPodFacts in job_controller.h, and
// job_controller_detail.h): the tracking finalizer, the completion index, the finish time, the
// podFailurePolicy rule a failed pod matches.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>

#include "server/state/job_controller_detail.h"
#include "server/state/pod_status.h"

namespace arbiter::server::job_detail {

bool Tracked(const Json& pod) {
  const Json& f = Member(Member(pod, "metadata"), "finalizers");
  if (!f.is_array()) return false;
  return std::find(f.begin(), f.end(), Json(kJobTrackingFinalizer)) != f.end();
}

// kube's getFinishedTime: the containers' latest finishedAt, else when Ready turned False, else
// the deletion, else the creation time.
Millis FinishedTime(const Json& pod) {
  std::optional<Millis> latest;
  const Json& statuses = Member(Member(pod, "status"), "containerStatuses");
  if (statuses.is_array())
    for (const Json& cs : statuses) {
      const Json& at = Member(Member(Member(cs, "state"), "terminated"), "finishedAt");
      if (!at.is_string()) continue;
      if (auto t = ParseRfc3339(at.get<std::string>()); t.ok())
        latest = latest ? std::max(*latest, t.value()) : t.value();
    }
  if (latest) return *latest;
  const Json& conds = Member(Member(pod, "status"), "conditions");  // Ready False, then deletion
  if (conds.is_array())
    for (const Json& c : conds)
      if (Member(c, "type") == "Ready" && Member(c, "status") == "False" &&
          Member(c, "lastTransitionTime").is_string())
        if (auto t = ParseRfc3339(c["lastTransitionTime"].get<std::string>()); t.ok())
          return t.value();
  const Json& deleted = Member(Member(pod, "metadata"), "deletionTimestamp");
  if (deleted.is_string())
    if (auto t = ParseRfc3339(deleted.get<std::string>()); t.ok()) return t.value();
  const Json& created = Member(Member(pod, "metadata"), "creationTimestamp");
  if (created.is_string())
    if (auto t = ParseRfc3339(created.get<std::string>()); t.ok()) return t.value();
  return 0;
}

// The completion index of an Indexed Job's pod (its annotation), -1 if none or not a number.
int64_t PodIndex(const Json& pod) {
  const Json& v = Member(Member(Member(pod, "metadata"), "annotations"), kJobCompletionIndex);
  if (!v.is_string() || v.get<std::string>().empty()) return -1;
  const std::string& text = v.get_ref<const std::string&>();
  if (text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(text);
}

// The first rule of spec.podFailurePolicy a failed pod matches (kube's matchPodFailurePolicy):
// its action ("" for none) and, for FailJob, the Job's failure message.
std::pair<std::string, std::string> MatchPolicy(const Json& policy, const Json& pod) {
  const Json& rules = Member(policy, "rules");
  if (!rules.is_array()) return {};
  const Json& status = Member(pod, "status");
  const std::string ns = Member(pod, "metadata").value("namespace", "");
  const std::string name = Member(pod, "metadata").value("name", "");
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string action = Member(rules[i], "action").is_string() ? rules[i]["action"] : "";
    const std::string at = " matching " + action + " rule at index " + std::to_string(i);
    if (const Json& req = Member(rules[i], "onExitCodes"); req.is_object()) {
      const Json& statuses = Member(status, "containerStatuses");
      for (const Json& cs : statuses.is_array() ? statuses : Json::array()) {
        const Json& code = Member(Member(Member(cs, "state"), "terminated"), "exitCode");
        if (!code.is_number_integer() || code == 0) continue;
        if (req.contains("containerName") && Member(req, "containerName") != Member(cs, "name"))
          continue;
        const Json& values = Member(req, "values");
        const bool in =
            values.is_array() && std::find(values.begin(), values.end(), code) != values.end();
        if (in != (Member(req, "operator") == "In")) continue;
        return {action, "Container " + cs.value("name", "") + " for pod " + ns + "/" + name +
                            " failed with exit code " + code.dump() + at};
      }
    } else if (const Json& pats = Member(rules[i], "onPodConditions"); pats.is_array()) {
      const Json& conds = Member(status, "conditions");
      for (const Json& c : conds.is_array() ? conds : Json::array())
        for (const Json& pat : pats)
          if (Member(c, "type") == Member(pat, "type") &&
              Member(c, "status") == Member(pat, "status"))
            return {action,
                    "Pod " + ns + "/" + name + " has condition " + c.value("type", "") + at};
    }
  }
  return {};
}

std::pair<std::string, std::string> MatchPolicy(const Json& policy, const JobPodView& pods,
                                                const JobPodFacts& pod) {
  if (!Member(policy, "rules").is_array()) return {};
  return MatchPolicy(policy, pods.tree(pod));
}

// kube's getRemainingTimeForFailuresCount: the end of the back-off after `failures` failures,
// the last at `last`.
Millis BackoffEnd(int64_t failures, Millis last) {
  Millis delay = kPodFailureBackOff;
  for (int64_t i = 1; i < failures && delay < kMaxPodFailureBackOff; ++i) delay *= 2;
  return last + std::min(delay, kMaxPodFailureBackOff);
}

}  // namespace arbiter::server::job_detail

namespace arbiter::server {

namespace {

using job_detail::Member;

// A pod's containers' (and init containers') restartCount, summed.
int64_t Restarts(const Json& status) {
  int64_t n = 0;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const Json& cs = Member(status, list);
    if (!cs.is_array()) continue;
    for (const auto& c : cs) {
      const Json& r = Member(c, "restartCount");
      if (r.is_number_integer()) n += r.get<int64_t>();
    }
  }
  return n;
}

// kube's podutil.IsPodReady: condition Ready True.
bool Ready(const Json& status) {
  const Json& conds = Member(status, "conditions");
  if (!conds.is_array()) return false;
  for (const auto& c : conds)
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "") == "True";
  return false;
}

JobPodFacts::Phase PhaseOf(const Json& phase) {
  using P = JobPodFacts::Phase;
  if (!phase.is_string()) return P::kOther;
  const std::string& p = phase.get_ref<const std::string&>();
  if (p == "Pending") return P::kPending;
  if (p == "Running") return P::kRunning;
  if (p == "Succeeded") return P::kSucceeded;
  if (p == "Failed") return P::kFailed;
  return P::kOther;
}

int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}

}  // namespace

JobPodFacts JobPodFacts::Of(const Json& pod) {
  JobPodFacts f;
  const Json& meta = Member(pod, "metadata");
  const Json& status = Member(pod, "status");
  f.name = meta.value("name", "");
  if (const Json& c = Member(meta, "creationTimestamp"); c.is_string())
    if (auto t = ParseRfc3339(c.get<std::string>()); t.ok()) f.created = t.value();
  f.phase = PhaseOf(Member(status, "phase"));
  f.deleting = meta.contains("deletionTimestamp");
  if (f.terminal() || f.deleting) f.finished = job_detail::FinishedTime(pod);
  f.restarts = Clamp32(Restarts(status));
  f.index = static_cast<int32_t>(job_detail::PodIndex(pod));  // at most 9 digits
  f.failures =
      static_cast<int32_t>(job_detail::CountAnnotation(pod, job_detail::kIndexFailureCount));
  f.ignored_failures =
      static_cast<int32_t>(job_detail::CountAnnotation(pod, job_detail::kIndexIgnoredFailureCount));
  f.tracked = job_detail::Tracked(pod);
  f.ready = Ready(status);
  f.bound = Member(Member(pod, "spec"), "nodeName").is_string();
  f.crash_loop = CrashLoopRun(pod).has_value();
  return f;
}

bool JobPodTable::BySurplus::operator()(const JobPodFacts* a, const JobPodFacts* b) const {
  if (a->bound != b->bound) return !a->bound;
  return std::tie(a->created, a->name) > std::tie(b->created, b->name);
}

template <class F>
void JobPodTable::ForListsOf(const JobPodFacts& p, F f) {
  if (p.terminal() || p.deleting)
    f(others_);
  else
    f(active_pods_);
  if (p.tracked && !p.terminal()) f(p.deleting ? tracked_terminating_ : tracked_active_);
}

void JobPodTable::Add(JobPodFacts f) {
  auto [it, added] = pods_.insert(std::move(f));
  if (!added) return;
  Count(*it, 1);
  ForListsOf(*it, [&](auto& list) { list.insert(&*it); });
}

void JobPodTable::Erase(std::string_view name) {
  auto it = pods_.find(name);
  if (it == pods_.end()) return;
  Count(*it, -1);
  ForListsOf(*it, [&](auto& list) { list.erase(&*it); });
  pods_.erase(it);
}

void JobPodTable::Count(const JobPodFacts& f, int64_t d) {
  const bool active = !f.terminal() && !f.deleting;
  ready_ += d * (active && f.ready);
  using P = JobPodFacts::Phase;
  restarts_ += d * (f.phase == P::kRunning || f.phase == P::kPending ? f.restarts : 0);
  crash_loops_ += d * f.crash_loop;
}

namespace {
template <class Set>
bool SameNames(const Set& a, const Set& b) {
  auto same = [](const JobPodFacts* x, const JobPodFacts* y) { return x->name == y->name; };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}
}  // namespace

bool JobPodTable::operator==(const JobPodTable& o) const {
  return pods_ == o.pods_ && SameNames(others_, o.others_) &&
         SameNames(active_pods_, o.active_pods_) && SameNames(tracked_active_, o.tracked_active_) &&
         SameNames(tracked_terminating_, o.tracked_terminating_) &&
         std::tie(ready_, restarts_, crash_loops_) ==
             std::tie(o.ready_, o.restarts_, o.crash_loops_);
}

}  // namespace arbiter::server
