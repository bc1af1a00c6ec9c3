// A status condition `Valid` on each of Arbiter's own objects in the cluster (ElasticQuota,
// PoolPolicy, PriceBook, QoS, ResourceFlavor): True, or False with reason Invalid and what
// `arbiter validate` says of the object, in its words ("spec.flavors[0].name: unknown
// ResourceFlavor \"a10\"; did you mean \"a100\"?"). The admission policies of
// deploy/validating-policy.yaml refuse what one object says wrong; what needs other objects (an
// unknown flavor or QoS, two PriceBooks at one instant, a second ElasticQuota in a namespace, a
// second PoolPolicy) only shows here, as a Deployment's Available condition shows what its
// spec could not do. Checked again when one of these objects changes; written (PATCH of the
// status subresource, the object's other conditions kept) only where it differs from what the
// object has, so several schedulers write it once between them.
#include <set>

#include "adapters/json/member.h"
#include "core/duration.h"
#include "core/validation.h"
#include "kubesched/controller.h"

namespace arbiter::kubesched {

namespace controller_validity {

using json_member::Member;

// "ns/name" as diagnostics name a namespaced object, "name" otherwise.
std::string DiagnosticName(const std::pair<std::string, std::string>& key) {
  return key.first.empty() ? key.second : key.first + "/" + key.second;
}

// The object's condition of type Valid, if it has one.
const Json* ValidCondition(const Json& object) {
  const Json& conds = Member(Member(object, "status"), "conditions");
  if (!conds.is_array()) return nullptr;
  for (const auto& c : conds)
    if (Member(c, "type") == "Valid") return &c;
  return nullptr;
}

// The conditions to write: the object's own, with Valid replaced (its transition time kept when
// its status does not change).
Json ConditionsWith(const Json& object, Json valid) {
  Json out = Json::array();
  const Json& conds = Member(Member(object, "status"), "conditions");
  if (conds.is_array())
    for (const auto& c : conds) {
      if (Member(c, "type") != "Valid") {
        out.push_back(c);
      } else if (Member(c, "status") == valid["status"] &&
                 Member(c, "lastTransitionTime").is_string()) {
        valid["lastTransitionTime"] = c["lastTransitionTime"];
      }
    }
  out.push_back(std::move(valid));
  return out;
}

}  // namespace controller_validity

const std::vector<std::string>& ValidatedKinds() {
  static const std::vector<std::string> k = {"ElasticQuota", "PoolPolicy", "PriceBook", "QoS",
                                             "ResourceFlavor"};
  return k;
}

// What `arbiter validate` finds wrong with each of the cluster's objects of ValidatedKinds(),
// checked together: the cluster's objects alone, not a --policy file's (every scheduler on the
// cluster then writes the same conditions, whatever file it was given).
std::map<std::pair<std::string, Controller::Key>, std::string> Controller::Problems() const {
  std::map<std::pair<std::string, Key>, std::string> out;
  auto add = [&](const std::string& kind, const Key& key, const std::string& what) {
    std::string& m = out[{kind, key}];
    m += (m.empty() ? "" : "; ") + what;
  };
  ManifestSet set;
  std::map<std::pair<std::string, std::string>, Key> by_name;  // kind, diagnostic name
  const std::string* first_policy = nullptr;
  for (const auto& kind : ValidatedKinds()) {
    auto objs = objects_.find(kind);
    if (objs == objects_.end()) continue;
    for (const auto& [key, o] : objs->second) {
      by_name[{kind, controller_validity::DiagnosticName(key)}] = key;
      auto loaded = LoadObject(kind, o);
      if (!loaded.ok()) {
        add(kind, key, loaded.message());
        continue;
      }
      if (kind == "PoolPolicy" && first_policy) {  // the loader's words for a second one
        add(kind, key,
            "more than one PoolPolicy (the first is " + *first_policy +
                "); a pool has at most one");
        continue;
      }
      if (kind == "PoolPolicy") first_policy = &key.second;
      ManifestSet& s = loaded.value();
      for (auto* meta : {s.elastic_quotas.empty() ? nullptr : &s.elastic_quotas.front().meta,
                         s.resource_flavors.empty() ? nullptr : &s.resource_flavors.front().meta,
                         s.price_books.empty() ? nullptr : &s.price_books.front().meta,
                         s.qos.empty() ? nullptr : &s.qos.front().meta,
                         s.pool_policy ? &s.pool_policy->meta : nullptr})
        if (meta) meta->source = SourceRef{"the cluster", 0};  // "(at the cluster)" in messages
      set.elastic_quotas.insert(set.elastic_quotas.end(), s.elastic_quotas.begin(),
                                s.elastic_quotas.end());
      set.resource_flavors.insert(set.resource_flavors.end(), s.resource_flavors.begin(),
                                  s.resource_flavors.end());
      set.price_books.insert(set.price_books.end(), s.price_books.begin(), s.price_books.end());
      set.qos.insert(set.qos.end(), s.qos.begin(), s.qos.end());
      if (s.pool_policy) set.pool_policy = std::move(s.pool_policy);
    }
  }
  Diagnostics d;
  ValidateManifestSet(set, nullptr, &d);
  for (const Diagnostic& item : d.items) {
    if (item.severity != Severity::kError) continue;
    auto key = by_name.find({item.kind, item.name});
    if (key == by_name.end()) continue;  // not one of these kinds
    add(item.kind, key->second,
        (item.field_path.empty() ? "" : item.field_path + ": ") + item.message);
  }
  return out;
}

void Controller::ReconcileValidity(Millis now, std::vector<Action>* out) {
  if (!validity_due_) return;
  validity_due_ = false;
  const auto problems = Problems();
  std::set<std::pair<std::string, Key>> present;
  for (const auto& kind : ValidatedKinds()) {
    auto objs = objects_.find(kind);
    if (objs == objects_.end()) continue;
    for (const auto& [key, object] : objs->second) {
      present.insert({kind, key});
      auto p = problems.find({kind, key});
      Json valid = {{"type", "Valid"},
                    {"status", p == problems.end() ? "True" : "False"},
                    {"reason", p == problems.end() ? "Valid" : "Invalid"},
                    {"message", p == problems.end() ? "" : p->second},
                    {"lastTransitionTime", FormatRfc3339(now - now % 1000)}};
      if (const Json* m = &controller_validity::Member(object, "metadata");
          controller_validity::Member(*m, "generation").is_number_integer())
        valid["observedGeneration"] = (*m)["generation"];
      if (const Json* have = controller_validity::ValidCondition(object);
          have && controller_validity::Member(*have, "status") == valid["status"] &&
          controller_validity::Member(*have, "reason") == valid["reason"] &&
          controller_validity::Member(*have, "message") == valid["message"] &&
          controller_validity::Member(*have, "observedGeneration") == valid["observedGeneration"])
        continue;        // the object says so already
      Json sig = valid;  // what was written, but when
      sig.erase("lastTransitionTime");
      if (auto w = validity_written_.find({kind, key});
          w != validity_written_.end() && w->second == sig.dump())
        continue;  // written, the informer has not shown it yet
      const std::string text =
          Json{{"conditions", controller_validity::ConditionsWith(object, std::move(valid))}}
              .dump();
      out->push_back(
          Action{Action::Type::kCondition, key.first, key.second, "", "", text, false, kind});
    }
  }
  for (auto w = validity_written_.begin(); w != validity_written_.end();)  // deleted objects
    w = present.count(w->first) ? std::next(w) : validity_written_.erase(w);
}

void Controller::ConditionDone(const Action& a, const ActionResult& r) {
  const std::pair<std::string, Key> key{a.kind, {a.namespace_, a.name}};
  if (r.http_status >= 200 && r.http_status < 300) {
    Json written = Json::parse(a.message);
    for (Json& c : written["conditions"])
      if (c["type"] == "Valid") {
        c.erase("lastTransitionTime");
        validity_written_[key] = c.dump();
      }
    return;
  }
  validity_written_.erase(key);
  if (r.http_status == 404) return;  // deleted meanwhile
  // Not reached, a conflict or the server's trouble: again at the next step. A refusal (403: the
  // RBAC of deploy/scheduler.yaml not applied) is said once, until the objects change.
  if (r.http_status == 0 || r.http_status == 409 || r.http_status >= 500) validity_due_ = true;
  Log("writing the Valid condition of " + a.kind + " " +
      controller_validity::DiagnosticName({a.namespace_, a.name}) + " failed (HTTP " +
      std::to_string(r.http_status) + "): " + r.message);
}

}  // namespace arbiter::kubesched
