// ElasticQuota status written back by the controller of `arbiter scheduler`
// (src/kubesched/controller_quota_status.cc): used, borrowed and lent from the engine's facts,
// written only when they change. Against a real kube-apiserver:
// tests/integration/kube_jobs_test.cc.
#include <gtest/gtest.h>

#include "kubesched/controller.h"

namespace arbiter::kubesched {
namespace quota_status_test {

constexpr Millis kT0 = 1764000000000;

Json Node(const std::string& name, int gpus) {
  const std::string g = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"capacity", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", g}}},
            {"allocatable", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", g}}}}}};
}

Json Pod(const std::string& ns, const std::string& name, int gpus,
         const std::string& phase = "Pending", const std::string& node = "") {
  const std::string g = std::to_string(gpus);
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}}},
            {"spec",
             {{"schedulerName", "arbiter"},
              {"containers",
               {{{"name", "main"},
                 {"resources",
                  {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", g}}},
                   {"limits", {{"nvidia.com/gpu", g}}}}}}}}}},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

Json Quota(const std::string& ns, int min_gpus) {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", "quota"}, {"namespace", ns}}},
          {"spec", {{"cohort", "pool"}, {"min", {{"nvidia.com/gpu", std::to_string(min_gpus)}}}}}};
}

std::map<std::string, Json> Statuses(const std::vector<Action>& a) {
  std::map<std::string, Json> out;
  for (const auto& x : a)
    if (x.type == Action::Type::kQuotaStatus) out[x.namespace_] = Json::parse(x.message);
  return out;
}

TEST(KubeschedQuotaStatus, UsedBorrowedAndLentWrittenOnlyWhenTheyChange) {
  Controller c({});
  c.Synced("Node", {Node("n1", 8)});
  c.Synced("Pod", {Pod("team-a", "big", 6)});
  c.Synced("ElasticQuota", {Quota("team-a", 4), Quota("team-b", 4)});
  std::vector<Action> a = c.Step(kT0);
  auto st = Statuses(a);
  ASSERT_EQ(st.size(), 2u);
  // team-a runs 6 GPUs on a min of 4: borrows 2, which team-b (idle) lends.
  EXPECT_EQ(st["team-a"], Json::parse(R"({"used":{"nvidia.com/gpu":"6"},
      "borrowed":{"nvidia.com/gpu":"2"},"lent":{"nvidia.com/gpu":"0"}})"));
  EXPECT_EQ(st["team-b"], Json::parse(R"({"used":{"nvidia.com/gpu":"0"},
      "borrowed":{"nvidia.com/gpu":"0"},"lent":{"nvidia.com/gpu":"2"}})"));
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  // Unchanged: nothing written again (written, or read back from the object).
  EXPECT_TRUE(Statuses(c.Step(kT0 + 1000)).empty());
  Json with_status = Quota("team-a", 4);
  with_status["status"] = st["team-a"];
  c.Upsert("ElasticQuota", with_status);
  EXPECT_TRUE(Statuses(c.Step(kT0 + 2000)).empty());
  // At most every quota_status_every: a change inside the interval waits for its end.
  c.Upsert("Pod", Pod("team-a", "big", 6, "Succeeded", "n1"));
  EXPECT_TRUE(Statuses(c.Step(kT0 + 2500)).empty());
  st = Statuses(c.Step(kT0 + 3000));
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st["team-a"]["used"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(st["team-a"]["borrowed"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(st["team-b"]["lent"]["nvidia.com/gpu"], "0");
}

TEST(KubeschedQuotaStatus, AFailedWriteIsRetried) {
  Controller c({});
  c.Synced("Node", {Node("n1", 8)});
  c.Synced("ElasticQuota", {Quota("team-a", 4)});
  std::vector<Action> a = c.Step(kT0);
  ASSERT_EQ(Statuses(a).size(), 1u);
  for (const auto& x : a) c.Done(x, ActionResult{500, "etcd timeout", ""}, kT0);
  EXPECT_EQ(Statuses(c.Step(kT0 + 1000)).size(), 1u);
  size_t said = 0;
  for (const auto& l : c.TakeLog())
    said += l.find("writing the status of ElasticQuota team-a/quota failed") != std::string::npos;
  EXPECT_EQ(said, 1u);
}

// A scheduler writes only what its engine holds in full: team-a's pods are another scheduler's,
// so neither team-a's status nor team-b's (its lent is team-a's borrowing) is written by this
// one; a namespace of its own outside that cohort is. (Each scheduler on a shared cluster wrote
// every quota's status from its own engine: used 0 where another scheduler ran the pods.)
TEST(KubeschedQuotaStatus, QuotasOfAnotherSchedulersNamespaceOrCohortAreNotWritten) {
  ControllerOptions o;
  o.scheduler_name = "arbiter-b";
  Controller c(o);
  Json mine = Pod("team-c", "mine", 2);
  mine["spec"]["schedulerName"] = "arbiter-b";
  Json solo = Quota("team-c", 4);
  solo["spec"].erase("cohort");
  c.Synced("Node", {Node("n1", 8)});
  c.Synced("Pod", {Pod("team-a", "big", 6, "Running", "n1"), mine});
  c.Synced("ElasticQuota", {Quota("team-a", 4), Quota("team-b", 4), solo});
  std::vector<Action> a = c.Step(kT0);
  auto st = Statuses(a);
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st["team-c"]["used"]["nvidia.com/gpu"], "2");
  auto log = c.TakeLog();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_NE(log[0].find("ElasticQuota team-a/quota: status not written: namespace team-a has"),
            std::string::npos)
      << log[0];
  EXPECT_NE(log[1].find("ElasticQuota team-b/quota: status not written: cohort pool has"),
            std::string::npos)
      << log[1];
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  // The other scheduler's pod ends: the cohort is this engine's alone again, written.
  c.Upsert("Pod", Pod("team-a", "big", 6, "Succeeded", "n1"));
  st = Statuses(c.Step(kT0 + 1000));
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st["team-a"]["used"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(st["team-b"]["lent"]["nvidia.com/gpu"], "0");
  for (const auto& l : c.TakeLog()) EXPECT_EQ(l.find("status not written"), std::string::npos) << l;
}

}  // namespace quota_status_test
}  // namespace arbiter::kubesched
