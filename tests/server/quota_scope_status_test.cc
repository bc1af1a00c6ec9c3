// Regression (issue 25): a ResourceQuota's status showed usage re-derived by the daemon, which
// applied only PriorityClass scopes: a BestEffort, NotBestEffort, Terminating or NotTerminating
// quota showed every running pod as used while the engine charged only the pods its scope selects.
// The status now shows the engine's own charge.
#include <gtest/gtest.h>

#include <cctype>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace quota_scope_status_test {

using namespace fixtures;

Json Ok(Cluster& c, const Mutation& m) {
  MutationResult r = c.Apply(m);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
  return r.object;
}

// Named after its scope in lower case ("besteffort"). A BestEffort quota tracks only pods
// (Kubernetes' rule).
Json ScopedQuota(const std::string& scope) {
  std::string name = scope;
  for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return {
      {"apiVersion", "v1"},
      {"kind", "ResourceQuota"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"hard", scope == "BestEffort" ? Json{{"pods", "10"}}
                                       : Json{{"pods", "10"}, {"requests.nvidia.com/gpu", "8"}}},
        {"scopes", Json::array({scope})}}}};
}

// A pod with no cpu or memory request or limit: QoS class BestEffort.
Json BestEffortPod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
}

std::string Used(const Cluster& c, const std::string& quota, const std::string& key) {
  const Json* q = c.store().Get("ResourceQuota", "default", quota);
  if (!q) return "<no quota>";
  return q->value("/status/used"_json_pointer, Json::object()).value(key, "<none>");
}

TEST(QuotaScopeStatus, BestEffortAndTerminatingScopesCountOnlyTheirPods) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  for (const char* scope : {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating"})
    Ok(c, Create(kT0, ScopedQuota(scope)));
  Ok(c, Create(kT0 + 1, BestEffortPod("idle")));
  Ok(c, Create(kT0 + 2, PodIn("default", "train", 2)));
  Json deadline = PodIn("default", "batch", 1);
  deadline["spec"]["activeDeadlineSeconds"] = 3600;
  Ok(c, Create(kT0 + 3, deadline));
  for (const char* pod : {"idle", "train", "batch"})
    ASSERT_EQ(c.store().Get("Pod", "default", pod)->at("status").at("phase"), "Running") << pod;

  EXPECT_EQ(Used(c, "besteffort", "pods"), "1");
  EXPECT_EQ(Used(c, "notbesteffort", "pods"), "2");
  EXPECT_EQ(Used(c, "notbesteffort", "requests.nvidia.com/gpu"), "3");
  EXPECT_EQ(Used(c, "terminating", "pods"), "1");
  EXPECT_EQ(Used(c, "terminating", "requests.nvidia.com/gpu"), "1");
  EXPECT_EQ(Used(c, "notterminating", "pods"), "2");
  EXPECT_EQ(Used(c, "notterminating", "requests.nvidia.com/gpu"), "2");

  // The status follows the pods: the deadline pod goes, the Terminating quota is empty again.
  Ok(c, Delete(kT0 + 4, "Pod", "default", "batch"));
  Ok(c, Advance(kT0 + 60000));
  EXPECT_EQ(Used(c, "terminating", "pods"), "0");
  EXPECT_EQ(Used(c, "terminating", "requests.nvidia.com/gpu"), "0");
  EXPECT_EQ(Used(c, "notterminating", "pods"), "2");
}

}  // namespace quota_scope_status_test
}  // namespace arbiter::server
