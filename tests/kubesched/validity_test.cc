// The status condition Valid of Arbiter's objects in a cluster (src/kubesched/
// controller_validity.cc): what `arbiter validate` finds wrong with an object given the others
// (which deploy/validating-policy.yaml cannot see), in its words; True otherwise; written only
// when it differs from what the object has. Against a real kube-apiserver:
// tests/integration/kube_scheduler_test.cc.
#include <gtest/gtest.h>

#include "kubesched/controller.h"

namespace arbiter::kubesched {
namespace validity_test {

constexpr Millis kT0 = 1764000000000;

Json Object(const std::string& kind, const std::string& ns, const std::string& name, Json spec) {
  Json meta = {{"name", name}, {"generation", 1}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", kind},
          {"metadata", meta},
          {"spec", std::move(spec)}};
}

// kind/ns/name -> the Valid condition written.
std::map<std::string, Json> Conditions(const std::vector<Action>& a) {
  std::map<std::string, Json> out;
  for (const auto& x : a)
    if (x.type == Action::Type::kCondition) {
      const Json conds = Json::parse(x.message)["conditions"];
      for (const auto& c : conds)
        if (c["type"] == "Valid") out[x.kind + "/" + x.namespace_ + "/" + x.name] = c;
    }
  return out;
}

TEST(KubeschedValidity, CrossObjectProblemsAreWrittenInArbiterValidatesWords) {
  Controller c({});
  c.Synced("ResourceFlavor", {Object("ResourceFlavor", "", "a100",
                                     {{"nodeLabels", {{"nvidia.com/gpu.product", "A100"}}}})});
  c.Synced("ElasticQuota",
           {Object("ElasticQuota", "team-a", "quota",
                   {{"flavors", {{{"name", "a10"}, {"min", {{"nvidia.com/gpu", "4"}}}}}}}),
            Object("ElasticQuota", "team-b", "quota", {{"min", {{"nvidia.com/gpu", "2"}}}})});
  c.Synced("QoS", {Object("QoS", "", "high", {{"priority", 100}, {"preempt", {"lwo"}}})});
  c.Synced("PoolPolicy", {Object("PoolPolicy", "", "a", Json::object()),
                          Object("PoolPolicy", "", "b", Json::object())});
  c.Synced("Node", {});
  c.Synced("Pod", {});
  std::vector<Action> a = c.Step(kT0);
  auto cond = Conditions(a);
  ASSERT_EQ(cond.size(), 6u);
  EXPECT_EQ(cond["ElasticQuota/team-a/quota"]["status"], "False");
  EXPECT_EQ(cond["ElasticQuota/team-a/quota"]["reason"], "Invalid");
  EXPECT_EQ(cond["ElasticQuota/team-a/quota"]["message"],
            "spec.flavors[0].name: unknown ResourceFlavor \"a10\"; did you mean \"a100\"?");
  EXPECT_EQ(cond["ElasticQuota/team-a/quota"]["observedGeneration"], 1);
  EXPECT_EQ(cond["QoS//high"]["message"], "spec.preempt[0]: unknown QoS \"lwo\"");
  EXPECT_EQ(cond["PoolPolicy//b"]["message"],
            "more than one PoolPolicy (the first is a); a pool has at most one");
  for (const char* ok : {"ElasticQuota/team-b/quota", "ResourceFlavor//a100", "PoolPolicy//a"}) {
    EXPECT_EQ(cond[ok]["status"], "True") << ok;
    EXPECT_EQ(cond[ok]["reason"], "Valid") << ok;
    EXPECT_EQ(cond[ok]["message"], "") << ok;
  }
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  // Nothing new: nothing written again.
  EXPECT_TRUE(Conditions(c.Step(kT0 + 1000)).empty());
  // The flavor it names appears: the quota is valid; the informer's copy, with the condition
  // written, is not written again.
  c.Upsert("ResourceFlavor", Object("ResourceFlavor", "", "a10", Json::object()));
  a = c.Step(kT0 + 2000);
  cond = Conditions(a);
  ASSERT_EQ(cond.size(), 2u);  // the quota, and the new flavor
  EXPECT_EQ(cond["ElasticQuota/team-a/quota"]["status"], "True");
  EXPECT_EQ(cond["ResourceFlavor//a10"]["status"], "True");
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0 + 2000);
  Json quota = Object("ElasticQuota", "team-a", "quota",
                      {{"flavors", {{{"name", "a10"}, {"min", {{"nvidia.com/gpu", "4"}}}}}}});
  quota["status"]["conditions"] = {cond["ElasticQuota/team-a/quota"]};
  c.Upsert("ElasticQuota", quota);
  EXPECT_TRUE(Conditions(c.Step(kT0 + 3000)).empty());
}

TEST(KubeschedValidity, OtherConditionsAndTheTransitionTimeAreKept) {
  Controller c({});
  Json q = Object("ElasticQuota", "team-a", "quota", {{"min", {{"nvidia.com/gpu", "2"}}}});
  q["status"]["conditions"] = {
      {{"type", "Other"}, {"status", "True"}, {"reason", "X"}, {"message", "kept"}},
      {{"type", "Valid"},
       {"status", "True"},
       {"reason", "Valid"},
       {"message", "stale"},
       {"lastTransitionTime", "2025-01-01T00:00:00Z"}}};
  c.Synced("ElasticQuota", {q});
  c.Synced("Node", {});
  c.Synced("Pod", {});
  std::vector<Action> a = c.Step(kT0);
  ASSERT_EQ(a.size(), 2u);  // its status (used 0), and its conditions
  const Action& w = a[0].type == Action::Type::kCondition ? a[0] : a[1];
  ASSERT_EQ(w.type, Action::Type::kCondition);
  const Json conds = Json::parse(w.message)["conditions"];
  ASSERT_EQ(conds.size(), 2u);
  EXPECT_EQ(conds[0]["type"], "Other");
  EXPECT_EQ(conds[1]["message"], "");
  EXPECT_EQ(conds[1]["lastTransitionTime"], "2025-01-01T00:00:00Z");  // still True since then
  // A refusal (RBAC not applied) is said once and not retried until something changes.
  c.Done(w, ActionResult{403, "forbidden", ""}, kT0);
  EXPECT_EQ(c.TakeLog().size(), 1u);
  EXPECT_TRUE(Conditions(c.Step(kT0 + 1000)).empty());
}

Json GpuNode(const std::string& name, int gpus) {
  const Json alloc = {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status", {{"capacity", alloc}, {"allocatable", alloc}}}};
}

// kind/ns/name -> the conditions written (all of them).
std::map<std::string, Json> Written(const std::vector<Action>& a) {
  std::map<std::string, Json> out;
  for (const auto& x : a)
    if (x.type == Action::Type::kCondition)
      out[x.kind + "/" + x.namespace_ + "/" + x.name] = Json::parse(x.message)["conditions"];
  return out;
}

// Issue 26: what `arbiter validate` warns of once it has the nodes (a cohort whose min adds up
// to more than the pool's allocatable) is the condition Warning of every ElasticQuota of that
// cohort, in its words, and goes when the pool grows; Valid stays True (it is no error).
TEST(KubeschedValidity, ACohortsMinBeyondThePoolIsAWarningOnEachOfItsQuotas) {
  Controller c({});
  auto quota = [](const std::string& ns, const std::string& cohort, int gpus) {
    Json spec = {{"min", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
    if (!cohort.empty()) spec["cohort"] = cohort;
    return Object("ElasticQuota", ns, "quota", spec);
  };
  c.Synced("ElasticQuota",
           {quota("team-a", "c", 6), quota("team-b", "c", 4), quota("solo", "", 9)});
  c.Synced("Node", {GpuNode("n1", 8)});
  c.Synced("Pod", {});
  std::vector<Action> a = c.Step(kT0);
  auto conds = Written(a);
  ASSERT_EQ(conds.size(), 3u);
  const std::string words =
      "spec.min[nvidia.com/gpu]: the min of cohort \"c\" adds up to 10 of nvidia.com/gpu, more "
      "than the pool's 8: guarantees cannot all be honoured";
  for (const char* q : {"ElasticQuota/team-a/quota", "ElasticQuota/team-b/quota"}) {
    ASSERT_EQ(conds[q].size(), 2u) << conds[q];
    EXPECT_EQ(conds[q][0]["type"], "Valid");
    EXPECT_EQ(conds[q][0]["status"], "True");
    EXPECT_EQ(conds[q][1]["type"], "Warning");
    EXPECT_EQ(conds[q][1]["status"], "True");
    EXPECT_EQ(conds[q][1]["reason"], "Warned");
    EXPECT_EQ(conds[q][1]["message"], words) << q;
    EXPECT_EQ(conds[q][1]["observedGeneration"], 1);
  }
  // Not in a cohort: its min above the pool guarantees nothing to others (the validator says
  // nothing of it).
  ASSERT_EQ(conds["ElasticQuota/solo/quota"].size(), 1u);
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  EXPECT_TRUE(Written(c.Step(kT0 + 1000)).empty());  // said once
  // The informer shows what was written: nothing again.
  Json written = quota("team-a", "c", 6);
  written["status"]["conditions"] = conds["ElasticQuota/team-a/quota"];
  c.Upsert("ElasticQuota", written);
  EXPECT_TRUE(Written(c.Step(kT0 + 2000)).empty());
  // A second node: the pool has 16 GPUs, the cohort's 10 fit. The warnings go, Valid stays.
  c.Upsert("Node", GpuNode("n2", 8));
  a = c.Step(kT0 + 3000);
  conds = Written(a);
  ASSERT_EQ(conds.size(), 2u);
  for (const char* q : {"ElasticQuota/team-a/quota", "ElasticQuota/team-b/quota"}) {
    ASSERT_EQ(conds[q].size(), 1u) << conds[q];
    EXPECT_EQ(conds[q][0]["type"], "Valid");
    EXPECT_EQ(conds[q][0]["status"], "True");
  }
  EXPECT_EQ(conds["ElasticQuota/team-a/quota"][0]["lastTransitionTime"],
            written["status"]["conditions"][0]["lastTransitionTime"]);  // still True since then
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0 + 3000);
  // A node's heartbeat (its allocatable unchanged) checks nothing again.
  Json beat = GpuNode("n2", 8);
  beat["status"]["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
  c.Upsert("Node", beat);
  EXPECT_TRUE(Written(c.Step(kT0 + 4000)).empty());
}

}  // namespace validity_test
}  // namespace arbiter::kubesched
