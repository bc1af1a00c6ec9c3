// ElasticQuota status written back, as kube-apiserver's quota controller writes ResourceQuota
// status: per resource the quota names (min or max), what the namespace uses, borrows from its
// cohort and lends to it, from the engine's facts (server/dashboard/quota_state.h, the numbers
// `arbiter serve`'s dashboard and metrics show). Computed at most every quota_status_every; a
// PATCH of the status subresource only when it differs from what the object has and from what
// was last written.
//
// Only from a complete state: the informers list every ElasticQuota of the cluster, but this
// engine charges only this scheduler's pods and Jobs. A namespace where another scheduler's pods
// or Jobs live (another `arbiter scheduler` of another --scheduler-name, or kube-scheduler) has
// usage this engine does not hold; its quota's status, and that of every quota in its cohort
// (their borrowed and lent depend on it), is left alone. (Several schedulers on one cluster each
// wrote every quota's status from their own engine: a scheduler with none of a namespace's pods
// wrote it as used 0 while the namespace's own scheduler wrote what ran.)
#include <set>

#include "adapters/json/member.h"
#include "core/resources.h"
#include "kubesched/controller.h"
#include "server/dashboard/quota_state.h"

namespace arbiter::kubesched {

namespace controller_quota_status {

// {used, borrowed, lent}: every resource of the quota's min and max, quantities as Kubernetes
// writes them.
Json StatusOf(const server::dashboard::QuotaState& q) {
  std::set<std::string> tracked;
  for (const auto& [r, v] : q.min.entries()) tracked.insert(r);
  if (q.max)
    for (const auto& [r, v] : q.max->entries()) tracked.insert(r);
  Json used = Json::object(), borrowed = Json::object(), lent = Json::object();
  for (const auto& r : tracked) {
    used[r] = FormatResourceQuantity(r, q.used.Get(r));
    borrowed[r] = FormatResourceQuantity(r, q.borrowed.Get(r));
    lent[r] = FormatResourceQuantity(r, q.lent.Get(r));
  }
  return {{"used", used}, {"borrowed", borrowed}, {"lent", lent}};
}

// The part of an object's status Arbiter writes.
Json Written(const Json& object) {
  Json out = Json::object();
  auto st = object.find("status");
  if (st == object.end() || !st->is_object()) return out;
  for (const char* f : {"used", "borrowed", "lent"})
    if (st->contains(f)) out[f] = (*st)[f];
  return out;
}

using json_member::Member;
std::string SchedulerOf(const Json& pod_spec) {
  const Json& s = Member(pod_spec, "schedulerName");
  return s.is_string() ? s.get<std::string>() : "default-scheduler";
}
bool PodEnded(const Json& pod) {
  const Json& phase = Member(Member(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}
bool JobEnded(const Json& job) {
  const Json& conds = Member(Member(job, "status"), "conditions");
  if (!conds.is_array()) return false;
  for (const auto& c : conds)
    if ((Member(c, "type") == "Complete" || Member(c, "type") == "Failed") &&
        Member(c, "status") == "True")
      return true;
  return false;
}
std::string NamespaceOf(const Json& o) {
  const Json& ns = Member(Member(o, "metadata"), "namespace");
  return ns.is_string() ? ns.get<std::string>() : "";
}

}  // namespace controller_quota_status

std::set<std::string> Controller::ForeignNamespaces() const {
  namespace cq = controller_quota_status;
  std::set<std::string> out;
  if (auto pods = objects_.find("Pod"); pods != objects_.end())
    for (const auto& [key, pod] : pods->second)
      if (!cq::PodEnded(pod) && cq::SchedulerOf(cq::Member(pod, "spec")) != options_.scheduler_name)
        out.insert(key.first);
  if (auto jobs = objects_.find("Job"); jobs != objects_.end())
    for (const auto& [key, job] : jobs->second)
      if (!cq::JobEnded(job) &&
          cq::SchedulerOf(cq::Member(cq::Member(cq::Member(job, "spec"), "template"), "spec")) !=
              options_.scheduler_name)
        out.insert(cq::NamespaceOf(job));
  return out;
}

void Controller::ReconcileQuotaStatus(Millis now, std::vector<Action>* out) {
  auto quotas = objects_.find("ElasticQuota");
  if (quotas == objects_.end() || quotas->second.empty() || now < quota_due_) return;
  quota_due_ = now + options_.quota_status_every;
  const auto states = server::dashboard::QuotaStates(*engine_);
  const std::set<std::string> foreign = ForeignNamespaces();
  std::set<std::string> foreign_cohorts;
  for (const auto& ns : foreign)
    if (auto s = states.find(ns); s != states.end() && !s->second.cohort.empty())
      foreign_cohorts.insert(s->second.cohort);
  for (const auto& [key, object] : quotas->second) {
    auto s = states.find(key.first);
    if (s == states.end() || s->second.quota != key.second) continue;  // not the engine's quota
    const std::string& cohort = s->second.cohort;
    if (foreign.count(key.first) || (!cohort.empty() && foreign_cohorts.count(cohort))) {
      if (quota_skipped_.insert(key).second)
        Log("ElasticQuota " + key.first + "/" + key.second + ": status not written: " +
            (foreign.count(key.first) ? "namespace " + key.first : "cohort " + cohort) +
            " has pods or Jobs of another scheduler, whose usage this one does not hold");
      continue;
    }
    quota_skipped_.erase(key);
    const Json status = controller_quota_status::StatusOf(s->second);
    if (status == controller_quota_status::Written(object)) continue;  // the object has it
    const std::string text = status.dump();
    if (auto w = quota_written_.find(key); w != quota_written_.end() && w->second == text)
      continue;  // written, the informer has not shown it yet
    out->push_back(Action{Action::Type::kQuotaStatus, key.first, key.second, "", "", text, false});
  }
  for (auto w = quota_written_.begin(); w != quota_written_.end();)  // deleted quotas
    w = quotas->second.count(w->first) ? std::next(w) : quota_written_.erase(w);
  for (auto k = quota_skipped_.begin(); k != quota_skipped_.end();)
    k = quotas->second.count(*k) ? std::next(k) : quota_skipped_.erase(k);
}

void Controller::QuotaStatusDone(const Action& a, const ActionResult& r) {
  const Key key{a.namespace_, a.name};
  if (r.http_status >= 200 && r.http_status < 300) {
    quota_written_[key] = a.message;
    return;
  }
  quota_written_.erase(key);
  if (r.http_status != 404)
    Log("writing the status of ElasticQuota " + a.namespace_ + "/" + a.name + " failed (HTTP " +
        std::to_string(r.http_status) + "): " + r.message);
}

}  // namespace arbiter::kubesched
