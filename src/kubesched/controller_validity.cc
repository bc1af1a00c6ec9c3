// Status conditions on each of Arbiter's own objects in the cluster (ElasticQuota, PoolPolicy,
// PriceBook, QoS, ResourceFlavor). `Valid`: True, or False with reason Invalid and what
// `arbiter validate` says of the object, in its words ("spec.flavors[0].name: unknown
// ResourceFlavor \"a10\"; did you mean \"a100\"?"). The admission policies of
// deploy/validating-policy.yaml refuse what one object says wrong; what needs other objects (an
// unknown flavor or QoS, two PriceBooks at one instant, a second ElasticQuota in a namespace, a
// second PoolPolicy) only shows here, as a Deployment's Available condition shows what its
// spec could not do. `Warning` (True, reason Warned; absent when there is none): what `arbiter
// validate` warns of that needs the pool's nodes (a cohort whose min adds up to more than the
// pool's allocatable), on every ElasticQuota of that cohort; the policies' Warn bindings say the
// warnings one object shows alone. Checked again when one of these objects or the pool's
// allocatable changes; written (PATCH of the status subresource, the object's other conditions
// kept) only where it differs from what the object has, so several schedulers write it once
// between them.
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

// The condition types written here: Valid, and Warning by a scheduler whose pool is the cluster
// (`warns`).
bool IsManaged(const Json& condition, bool warns) {
  const Json& type = Member(condition, "type");
  return type == "Valid" || (warns && type == "Warning");
}

// The conditions of `conditions` written here, in their order, without their transition times:
// what is compared with what is wanted.
Json Managed(const Json& conditions, bool warns) {
  Json out = Json::array();
  if (!conditions.is_array()) return out;
  for (const auto& c : conditions)
    if (IsManaged(c, warns)) {
      Json bare = c;
      bare.erase("lastTransitionTime");
      out.push_back(std::move(bare));
    }
  return out;
}

// A diagnostic as `arbiter validate` words it: "field: message".
std::string Words(const Diagnostic& d) {
  return (d.field_path.empty() ? "" : d.field_path + ": ") + d.message;
}

// The conditions wanted on an object: Valid (True, or False with the problems), then Warning
// (True with the warnings) while there are any.
Json Wanted(const std::string* problems, const std::string* warnings, const Json& object,
            Millis now) {
  Json valid = {{"type", "Valid"},
                {"status", problems ? "False" : "True"},
                {"reason", problems ? "Invalid" : "Valid"},
                {"message", problems ? *problems : ""},
                {"lastTransitionTime", FormatRfc3339(now - now % 1000)}};
  if (const Json& gen = Member(Member(object, "metadata"), "generation"); gen.is_number_integer())
    valid["observedGeneration"] = gen;
  Json out = Json::array({valid});
  if (warnings) {
    Json warning = valid;
    warning["type"] = "Warning";
    warning["status"] = "True";
    warning["reason"] = "Warned";
    warning["message"] = *warnings;
    out.push_back(std::move(warning));
  }
  return out;
}

// The conditions to write: the object's own, with those written here replaced by `want` (a
// condition's transition time kept when its status does not change; a Warning no longer wanted
// is removed).
Json ConditionsWith(const Json& object, Json want, bool warns) {
  Json out = Json::array();
  const Json& conds = Member(Member(object, "status"), "conditions");
  if (conds.is_array())
    for (const auto& c : conds) {
      if (!IsManaged(c, warns)) {
        out.push_back(c);
        continue;
      }
      for (Json& w : want)
        if (w["type"] == Member(c, "type") && Member(c, "status") == w["status"] &&
            Member(c, "lastTransitionTime").is_string())
          w["lastTransitionTime"] = c["lastTransitionTime"];
    }
  for (Json& w : want) out.push_back(std::move(w));
  return out;
}

using Found = std::map<std::pair<std::string, std::pair<std::string, std::string>>, std::string>;

// `what` said of the object `id` (kind, key), after what is said of it already.
void Add(Found& to, const std::pair<std::string, std::pair<std::string, std::string>>& id,
         const std::string& what) {
  std::string& m = to[id];
  m += (m.empty() ? "" : "; ") + what;
}

// The validator's warnings on ElasticQuotas once the pool is there too (its allocatable as one
// node) that are not among `alone` (those without it): a cohort's min beyond the pool. Each is
// said on the quota named and on every quota of its cohort.
void PoolWarnings(ManifestSet set, const ResourceList& pool_allocatable,
                  const std::set<std::string>& alone, Found* out) {
  if (set.elastic_quotas.empty()) return;
  Node pool;
  pool.meta.name = "pool";
  pool.capacity = pool.allocatable = pool_allocatable;
  set.nodes.push_back(std::move(pool));
  Diagnostics d;
  ValidateManifestSet(set, nullptr, &d);
  for (const Diagnostic& item : d.items) {
    if (item.severity == Severity::kError || item.kind != "ElasticQuota" ||
        alone.count(item.ToString()))
      continue;
    for (const auto& q : set.elastic_quotas)
      if (DiagnosticName({q.meta.namespace_, q.meta.name}) == item.name)
        for (const auto& other : set.elastic_quotas)
          if (&other == &q || (!q.cohort.empty() && other.cohort == q.cohort))
            Add(*out, {"ElasticQuota", {other.meta.namespace_, other.meta.name}}, Words(item));
  }
}

// The loaded objects of one of ValidatedKinds() added to `set`, each said to be "at the cluster"
// in the validator's messages.
void AppendLoaded(ManifestSet& set, ManifestSet s) {
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

}  // namespace controller_validity

const std::vector<std::string>& ValidatedKinds() {
  static const std::vector<std::string> k = {"ElasticQuota", "PoolPolicy", "PriceBook", "QoS",
                                             "ResourceFlavor"};
  return k;
}

// What `arbiter validate` finds wrong with each of the cluster's objects of ValidatedKinds(),
// checked together: the cluster's objects alone, not a --policy file's (every scheduler on the
// cluster then writes the same conditions, whatever file it was given). And what it warns of
// once the pool's nodes are there too (their allocatable summed: one node to the validator) that
// it does not without them: a cohort's min beyond the pool, said on each quota of the cohort.
Controller::Findings Controller::Problems() const {
  using controller_validity::Add;
  Findings out;
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
        Add(out.problems, {kind, key}, loaded.message());
        continue;
      }
      if (kind == "PoolPolicy" && first_policy) {  // the loader's words for a second one
        Add(out.problems, {kind, key},
            "more than one PoolPolicy (the first is " + *first_policy +
                "); a pool has at most one");
        continue;
      }
      if (kind == "PoolPolicy") first_policy = &key.second;
      controller_validity::AppendLoaded(set, std::move(loaded).value());
    }
  }
  Diagnostics d;
  ValidateManifestSet(set, nullptr, &d);
  std::set<std::string> alone;  // the warnings without the nodes
  for (const Diagnostic& item : d.items) {
    if (item.severity != Severity::kError) {
      alone.insert(item.ToString());
      continue;
    }
    auto key = by_name.find({item.kind, item.name});
    if (key == by_name.end()) continue;  // not one of these kinds
    Add(out.problems, {item.kind, key->second}, controller_validity::Words(item));
  }
  if (!pool_nodes_.empty())
    controller_validity::PoolWarnings(std::move(set), pool_allocatable_, alone, &out.warnings);
  return out;
}

void Controller::ReconcileValidity(Millis now, std::vector<Action>* out) {
  if (!validity_due_) return;
  validity_due_ = false;
  const Findings found = Problems();
  // The pool's allocatable is the cluster's only without --node-selector: schedulers of several
  // pools would each want their own Warning on the same quota. One of a pool says it in its log.
  const bool warns = options_.node_selector.empty();
  if (!warns)
    for (const auto& [id, words] : found.warnings) {
      const std::string line =
          id.first + " " + controller_validity::DiagnosticName(id.second) + ": " + words;
      if (warnings_said_.insert(line).second)
        Log(line + " (the pool of --node-selector; not written as its condition Warning)");
    }
  std::set<std::pair<std::string, Key>> present;
  for (const auto& kind : ValidatedKinds()) {
    auto objs = objects_.find(kind);
    if (objs == objects_.end()) continue;
    for (const auto& [key, object] : objs->second) {
      present.insert({kind, key});
      auto problems = found.problems.find({kind, key});
      auto warnings = found.warnings.find({kind, key});
      const Json want = controller_validity::Wanted(
          problems == found.problems.end() ? nullptr : &problems->second,
          !warns || warnings == found.warnings.end() ? nullptr : &warnings->second, object, now);
      const Json sig = controller_validity::Managed(want, warns);  // what is written, but when
      const Json& have =
          controller_validity::Member(controller_validity::Member(object, "status"), "conditions");
      if (controller_validity::Managed(have, warns) == sig) continue;  // the object says so
      if (auto w = validity_written_.find({kind, key});
          w != validity_written_.end() && w->second == sig.dump())
        continue;  // written, the informer has not shown it yet
      const std::string text =
          Json{{"conditions", controller_validity::ConditionsWith(object, want, warns)}}.dump();
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
    validity_written_[key] = controller_validity::Managed(Json::parse(a.message)["conditions"],
                                                          options_.node_selector.empty())
                                 .dump();
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
