// A pod's create is validated against the part of the stored policy its own checks read
// (Cluster::PodPolicyContext), not a copy of every policy object: the validator's answer about
// the pod must be the one the whole set gives (the oracle here: ValidateManifestSet over every
// object applied, as the daemon ran it before), for pods that name known, misspelt and unknown
// classes, QoSes and groups, in namespaces with and without LimitRanges.
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
  if (r.error && r.error->diagnostics.items.empty()) {
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

}  // namespace
}  // namespace arbiter::server
