// ElasticQuota status written back, as kube-apiserver's quota controller writes ResourceQuota
// status: per resource the quota names (min or max), what the namespace uses, borrows from its
// cohort and lends to it, from the engine's facts (server/dashboard/quota_state.h, the numbers
// `arbiter serve`'s dashboard and metrics show). Computed at most every quota_status_every; a
// PATCH of the status subresource only when it differs from what the object has and from what
// was last written.
#include <set>

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

}  // namespace controller_quota_status

void Controller::ReconcileQuotaStatus(Millis now, std::vector<Action>* out) {
  auto quotas = objects_.find("ElasticQuota");
  if (quotas == objects_.end() || quotas->second.empty() || now < quota_due_) return;
  quota_due_ = now + options_.quota_status_every;
  const auto states = server::dashboard::QuotaStates(*engine_);
  for (const auto& [key, object] : quotas->second) {
    auto s = states.find(key.first);
    if (s == states.end() || s->second.quota != key.second) continue;  // not the engine's quota
    const Json status = controller_quota_status::StatusOf(s->second);
    if (status == controller_quota_status::Written(object)) continue;  // the object has it
    const std::string text = status.dump();
    if (auto w = quota_written_.find(key); w != quota_written_.end() && w->second == text)
      continue;  // written, the informer has not shown it yet
    out->push_back(Action{Action::Type::kQuotaStatus, key.first, key.second, "", "", text, false});
  }
  for (auto w = quota_written_.begin(); w != quota_written_.end();)  // deleted quotas
    w = quotas->second.count(w->first) ? std::next(w) : quota_written_.erase(w);
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
