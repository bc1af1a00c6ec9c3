// A pod's create is validated against the part of the stored policy its own checks read
// (Cluster::PodPolicyContext), not a copy of every policy object: the validator's answer about
// the pod must be the one the whole set gives (the oracle here: ValidateManifestSet over every
// object applied, as the daemon ran it before), for pods that name known, misspelt and unknown
// classes, QoSes and groups, in namespaces with and without LimitRanges. The same for
// Namespaces, ResourceQuotas and LimitRanges (Cluster::ObjectPolicyContext).
#include <gtest/gtest.h>

#include <random>

#include "adapters/yaml/manifest_loader.h"
#include "cluster_fixtures.h"
#include "core/engine/admission.h"
#include "core/validation.h"

namespace arbiter::server {
namespace {

using namespace fixtures;

Json Object(const std::string& api, const std::string& kind, const std::string& ns,
            const std::string& name, Json body) {
  Json o = std::move(body);
  o["apiVersion"] = api;
  o["kind"] = kind;
  o["metadata"]["name"] = name;
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return o;
}

// The policy of a pool with five tenants; every object is applied to `c` and loaded into `all`.
void Policy(Cluster& c, yaml::ManifestLoad& all) {
  std::vector<Json> objs = {Namespace("default"), Node("gpu-0", 8)};
  for (int t = 0; t < 5; ++t) objs.push_back(Namespace("team-" + std::to_string(t)));
  objs.push_back(PriorityClass("high", 1000));
  Json low = PriorityClass("low", 10);
  low["globalDefault"] = true;
  objs.push_back(low);
  for (const char* q : {"gold", "silver"})
    objs.push_back(Object("arbiter.dev/v1alpha1", "QoS", "", q, {{"spec", {{"priority", 5}}}}));
  for (const char* ns : {"team-1", "team-2"})
    objs.push_back(Object("v1", "LimitRange", ns, "limits",
                          {{"spec",
                            {{"limits",
                              {{{"type", "Container"},
                                {"max", {{"cpu", "4"}}},
                                {"defaultRequest", {{"cpu", "500m"}}}}}}}}}));
  for (const char* ns : {"team-0", "team-3"})
    objs.push_back(Object("scheduling.x-k8s.io/v1alpha1", "PodGroup", ns, "g1",
                          {{"spec", {{"minMember", 2}}}}));
  for (int t = 0; t < 5; ++t) {
    const std::string ns = "team-" + std::to_string(t);
    objs.push_back(Object("v1", "ResourceQuota", ns, "q",
                          {{"spec", {{"hard", {{"requests.cpu", "1k"}, {"pods", "1k"}}}}}}));
    objs.push_back(Object("arbiter.dev/v1alpha1", "ElasticQuota", ns, "e",
                          {{"spec",
                            {{"cohort", "pool"},
                             {"min", {{"cpu", "10"}}},
                             {"max", {{"cpu", "1k"}, {"nvidia.com/gpu", "8"}}}}}}));
    objs.push_back(
        Object("policy/v1", "PodDisruptionBudget", ns, "b",
               {{"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "x"}}}}}}}}));
  }
  objs.push_back(
      Object("arbiter.dev/v1alpha1", "PoolPolicy", "", "pool", {{"spec", Json::object()}}));
  objs.push_back(Object("arbiter.dev/v1alpha1", "ResourceFlavor", "", "h100",
                        {{"spec", {{"nodeLabels", {{"nvidia.com/gpu.product", "H100"}}}}}}));
  objs.push_back(Object("arbiter.dev/v1alpha1", "PriceBook", "", "standard",
                        {{"spec",
                          {{"currency", "USD"},
                           {"effectiveFrom", "2026-01-01T00:00:00Z"},
                           {"mode", "Max"},
                           {"prices", {{"cpu", "0.05"}}}}}}));
  for (const Json& o : objs) {
    Ok(c, Create(kT0, o));
    if (o["kind"] != "Node") yaml::LoadManifestJson(o, "request", &all);
  }
}

// A pod drawn from the cases the pod checks tell apart.
Json RandomPod(std::mt19937& rng) {
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  const std::string ns = pick({"default", "team-0", "team-1", "team-2", "team-3", "team-4"});
  Json p = PodIn(ns, "p", static_cast<int>(rng() % 2));
  Json& c = p["spec"]["containers"][0]["resources"];
  c["requests"]["cpu"] = pick({"1", "250m", "6"});
  if (rng() % 3 == 0) c["limits"]["cpu"] = pick({"500m", "2", "8"});
  if (rng() % 8 == 0) c["limits"]["nvidia.com/gpu"] = "2";
  if (const std::string pc =
          pick({"", "", "", "high", "high", "low", "hgh", "nothing", "system-node-critical"});
      !pc.empty())
    p["spec"]["priorityClassName"] = pc;
  Json& ann = p["metadata"]["annotations"];
  ann = Json::object();
  if (const std::string q = pick({"", "", "", "gold", "silver", "gld", "none"}); !q.empty())
    ann["arbiter.dev/qos"] = q;
  if (rng() % 2 == 0) ann["arbiter.dev/usage"] = pick({"cpu=500m", "cpu=9", "memory=1Gi"});
  if (const std::string g = pick({"", "", "", "g1", "g1", "g2"}); !g.empty())
    p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = g;
  return p;
}

// What validating the pod against every object in `all` says about the pod: the daemon's
// LimitRanger refusal, else its warnings and errors as the daemon words them.
std::vector<std::string> Oracle(const yaml::ManifestLoad& all, const Json& pod) {
  const std::string display =
      pod["metadata"].value("namespace", "") + "/" + pod["metadata"].value("name", "");
  yaml::ManifestLoad one;
  yaml::LoadManifestJson(pod, "request", &one);
  EXPECT_TRUE(one.ok()) << pod;
  if (one.set.pods.empty()) return {"not loaded"};
  const Pod& p = one.set.pods.at(0);
  std::map<std::string, const LimitRange*> by_name;
  for (const auto& lr : all.set.limit_ranges)
    if (lr.meta.namespace_ == p.meta.namespace_) by_name.emplace(lr.meta.name, &lr);
  std::vector<const LimitRange*> ranges;
  for (const auto& [name, lr] : by_name) ranges.push_back(lr);
  engine::AdmittedPod admitted;
  if (std::string why = engine::ApplyLimitRanges(p, ranges, &admitted); !why.empty())
    return {"refused: " + why};
  ManifestSet set = all.set;
  set.pods.push_back(p);
  ResolvePodGroups(&set);
  Diagnostics d;
  ValidateManifestSet(set, nullptr, &d);
  std::vector<std::string> out;
  bool errors = false;
  for (const auto& item : d.items)
    if (item.kind == "Pod" && item.name == display) {
      errors = errors || item.severity == Severity::kError;
      out.push_back((item.severity == Severity::kError ? "error " : "warning ") +
                    (item.field_path.empty() ? "" : item.field_path + ": ") + item.message);
    }
  if (errors)  // a refused pod's answer has its errors alone
    out.erase(std::remove_if(out.begin(), out.end(),
                             [](const std::string& s) { return s.rfind("warning ", 0) == 0; }),
              out.end());
  return out;
}

// The daemon's answer to a dry-run create of the pod, in the oracle's words.
std::vector<std::string> Served(Cluster& c, const Json& pod, bool update = false) {
  Mutation m = update ? Update(kT0 + 1, pod) : Create(kT0 + 1, pod);
  m.dry_run = true;
  MutationResult r = c.Apply(m);
  std::vector<std::string> out;
  // A refusal in one sentence (LimitRanger's "is invalid" has its causes too, each with its
  // field, for kubectl: the sentence is what the whole-policy check says).
  if (r.error && (r.error->diagnostics.items.empty() || !r.error->message.empty())) {
    std::string why = r.error->message;
    if (r.error->reason == ApiError::Reason::kInvalid)
      why = "Pod \"" + m.object["metadata"].value("name", "") + "\" is invalid: " + why;
    return {"refused: " + why};
  }
  for (const auto& w : r.warnings) out.push_back("warning " + w);
  if (r.error)
    for (const auto& item : r.error->diagnostics.items)
      out.push_back("error " + (item.field_path.empty() ? "" : item.field_path + ": ") +
                    item.message);
  return out;
}

// The counts of each kind of answer in `answers`, added to `seen`: the cases were met, the
// comparison is not of empty answers only.
struct Seen {
  int warned = 0, refused = 0, invalid = 0;
  void Add(const std::vector<std::string>& answers) {
    for (const auto& w : answers) {
      warned += w.rfind("warning ", 0) == 0;
      refused += w.rfind("refused: ", 0) == 0;
      invalid += w.rfind("error ", 0) == 0;
    }
  }
};

// A cluster holding Policy's objects, and the same loaded for the oracle.
class PodPolicyContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Policy(c, all);
    ASSERT_TRUE(all.ok());
  }
  Cluster c{"0000abcd"};
  yaml::ManifestLoad all;
};

TEST_F(PodPolicyContextTest, APodsChecksSayWhatTheWholePolicyWouldSay) {
  std::mt19937 rng(27);
  Seen seen;
  for (int i = 0; i < 400; ++i) {
    const Json pod = RandomPod(rng);
    const std::vector<std::string> want = Oracle(all, pod);
    ASSERT_EQ(Served(c, pod), want) << "pod " << i << ": " << pod;  // in the validator's order
    seen.Add(want);
  }
  EXPECT_GT(seen.warned, 10);
  EXPECT_GT(seen.refused, 20);
  EXPECT_GT(seen.invalid, 20);
}

// The same for an update of a stored pod's labels and annotations (its group, QoS, usage).
TEST_F(PodPolicyContextTest, APodsUpdateIsCheckedAsTheWholePolicyWouldCheckIt) {
  std::mt19937 rng(54);
  Seen seen;
  for (int i = 0; i < 300; ++i) {
    const Json drawn = RandomPod(rng);
    const std::string ns = drawn["metadata"]["namespace"];
    if (!c.store().Get("Pod", ns, "u")) {
      Json base = PodIn(ns, "u", 0);
      base["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "250m";
      Ok(c, Create(kT0, base));
    }
    Json pod = *c.store().Get("Pod", ns, "u");
    pod["metadata"]["annotations"] = drawn["metadata"]["annotations"];
    pod["metadata"]["labels"] = drawn["metadata"].value("labels", Json::object());
    Json loaded = pod;  // as the daemon loads it: without the server's status and node
    loaded.erase("status");
    loaded["spec"].erase("nodeName");
    const std::vector<std::string> want = Oracle(all, loaded);
    ASSERT_EQ(Served(c, pod, true), want) << "update " << i << ": " << pod;
    seen.Add(want);
  }
  EXPECT_GT(seen.warned, 10);
  EXPECT_GT(seen.invalid, 20);
}

// The kinds checked against their own part of the policy too (Cluster::ObjectPolicyContext):
// Namespaces, ResourceQuotas (duplicate extended resources, conflicting and unsupported scopes,
// scopeSelector classes known, misspelt, built-in and unknown) and LimitRanges (each order of
// min, defaultRequest, default, max; maxLimitRequestRatio; an extended default unlike its
// defaultRequest), created and updated, in every namespace.
Json RandomOwnObject(std::mt19937& rng) {
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  const std::string ns = pick({"default", "team-0", "team-1", "team-2", "team-3", "team-4"});
  switch (rng() % 4) {
    case 0: {  // (each draw its own statement: the order of a call's arguments is unspecified)
      const std::string name = pick({"team-0", "team-4", "fresh"});
      const std::string tier = pick({"a", "b"});
      return Object("v1", "Namespace", "", name, {{"metadata", {{"labels", {{"tier", tier}}}}}});
    }
    case 1: {
      std::vector<Json> hards = {
          {{"requests.cpu", "1"}, {"pods", "5"}},
          {{"nvidia.com/gpu", "2"}, {"requests.nvidia.com/gpu", "2"}},
          {{"cpu", "1"}, {"requests.cpu", "2"}},
          {{"requests.ephemeral-storage", "1Gi"}, {"requests.memory", "1Gi"}},
          {{"pods", "3"}}};
      Json spec = {{"hard", hards[rng() % hards.size()]}};
      std::vector<Json> scopes = {
          Json(), Json::array({"BestEffort"}), Json::array({"BestEffort", "NotBestEffort"}),
          Json::array({"Terminating", "NotTerminating"}), Json::array({"NotBestEffort"})};
      if (const Json& sc = scopes[rng() % scopes.size()]; !sc.is_null()) spec["scopes"] = sc;
      std::vector<Json> classes = {Json(), Json::array({"high"}), Json::array({"hgh"}),
                                   Json::array({"system-node-critical", "nothing"})};
      if (const Json& v = classes[rng() % classes.size()]; !v.is_null())
        spec["scopeSelector"] = {
            {"matchExpressions",
             {{{"scopeName", "PriorityClass"}, {"operator", "In"}, {"values", v}}}}};
      return Object("v1", "ResourceQuota", ns, pick({"q", "r"}), {{"spec", spec}});
    }
    case 2: {  // a second one in a namespace, min above max or a ResourceQuota, lendingLimit,
               // flavors known and not, preemption rules, fair sharing outside a cohort
      const std::string cohort = pick({"pool", "pool", "", "other"});
      Json spec = {{"min", {{"cpu", pick({"10", "5k"})}}}};
      if (!cohort.empty()) spec["cohort"] = cohort;
      if (rng() % 2) spec["max"] = {{"cpu", pick({"1k", "5"})}};
      if (rng() % 3 == 0) spec["lendingLimit"] = {{pick({"cpu", "memory"}), pick({"5", "20"})}};
      if (rng() % 4 == 0)
        spec["flavors"] = {{{"name", pick({"h100", "h10"})}, {"min", {{"nvidia.com/gpu", "2"}}}}};
      if (rng() % 4 == 0)
        spec["preemption"] = {{"reclaimWithinCohort", pick({"Never", "Any"})},
                              {"borrowWithinCohort", {{"policy", "LowerPriority"}}}};
      if (rng() % 5 == 0) spec["fairSharing"] = {{"weight", "2"}};
      return Object("arbiter.dev/v1alpha1", "ElasticQuota", ns, pick({"e", "e", "f"}),
                    {{"spec", spec}});
    }
    default: {
      Json item = {{"type", "Container"}};
      if (rng() % 2) item["max"]["cpu"] = pick({"1", "4"});
      if (rng() % 2) item["min"]["cpu"] = pick({"500m", "2"});
      if (rng() % 2) item["default"]["cpu"] = pick({"1", "8"});
      if (rng() % 2) item["defaultRequest"]["cpu"] = pick({"250m", "3"});
      if (rng() % 3 == 0) item["maxLimitRequestRatio"]["cpu"] = pick({"2", "10"});
      if (rng() % 4 == 0) {
        item["default"]["nvidia.com/gpu"] = "1";
        item["defaultRequest"]["nvidia.com/gpu"] = pick({"1", "2"});
      }
      return Object("v1", "LimitRange", ns, pick({"limits", "other"}),
                    {{"spec", {{"limits", {item}}}}});
    }
  }
}

// What validating `obj` against every object in `all` says about it (a stored one of its name
// is replaced), as the daemon words it: its loader's diagnostics, then the validator's.
std::vector<std::string> OwnOracle(const yaml::ManifestLoad& all, const Json& obj) {
  const std::string kind = obj["kind"], name = obj["metadata"]["name"];
  const std::string ns = obj["metadata"].value("namespace", "");
  yaml::ManifestLoad whole = all;
  auto replaced = [&](auto& objects) {
    std::erase_if(objects,
                  [&](const auto& o) { return o.meta.name == name && o.meta.namespace_ == ns; });
  };
  if (kind == "Namespace") replaced(whole.set.namespaces);
  if (kind == "ResourceQuota") replaced(whole.set.resource_quotas);
  if (kind == "LimitRange") replaced(whole.set.limit_ranges);
  if (kind == "ElasticQuota") replaced(whole.set.elastic_quotas);
  whole.diagnostics = {};
  yaml::LoadManifestJson(obj, "request", &whole);
  Diagnostics d = whole.diagnostics;
  if (whole.ok()) {
    Diagnostics cross;
    ValidateManifestSet(whole.set, nullptr, &cross);
    for (auto& item : cross.items)
      if (item.kind == kind && item.name == (ns.empty() ? name : ns + "/" + name))
        d.Add(std::move(item));
  }
  std::vector<std::string> out;
  for (const auto& item : d.items)
    out.push_back((item.severity == Severity::kError ? "error " : "warning ") +
                  (item.field_path.empty() ? "" : item.field_path + ": ") + item.message);
  if (d.HasErrors())  // a refused object's answer has its errors alone
    std::erase_if(out, [](const std::string& s) { return s.rfind("warning ", 0) == 0; });
  return out;
}

TEST_F(PodPolicyContextTest, NamespacesQuotasAndLimitRangesAreCheckedAsTheWholePolicyWould) {
  std::mt19937 rng(81);
  Seen seen;
  std::map<std::string, int> kinds;
  for (int i = 0; i < 800; ++i) {
    const Json obj = RandomOwnObject(rng);
    const std::string kind = obj["kind"];
    const bool stored =
        c.store().Get(kind, obj["metadata"].value("namespace", ""), obj["metadata"]["name"]);
    const std::vector<std::string> want = OwnOracle(all, obj);
    ASSERT_EQ(Served(c, obj, stored), want) << i << ": " << obj;  // in the validator's order
    seen.Add(want);
    ++kinds[kind + (stored ? " update" : " create")];
  }
  EXPECT_GT(seen.warned, 10);
  EXPECT_GT(seen.invalid, 30);
  EXPECT_EQ(seen.refused, 0);  // every answer came from the validator
  for (const char* k : {"Namespace", "ResourceQuota", "LimitRange", "ElasticQuota"})
    for (const char* op : {" create", " update"}) EXPECT_GT(kinds[k + std::string(op)], 20) << k;
}

}  // namespace
}  // namespace arbiter::server
