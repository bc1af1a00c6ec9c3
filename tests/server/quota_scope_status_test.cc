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

// A quota of `pods: 0` scoped to CrossNamespacePodAffinity keeps out the pods whose affinity or
// anti-affinity terms reach other namespaces (Kubernetes' way to forbid them), as the other scopes
// keep out theirs: 403 "exceeded quota", nothing stored. It used to hold every pod (the scope
// was loaded but not read). A pod with terms in its own namespace, and a plain pod, are admitted.
TEST(QuotaScopeStatus, CrossNamespacePodAffinityScopeRefusesOnlyCrossNamespacePods) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Ok(c, Create(kT0,
               {{"apiVersion", "v1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "no-cross-ns"}, {"namespace", "default"}}},
                {"spec",
                 {{"hard", {{"pods", "0"}}},
                  {"scopeSelector",
                   {{"matchExpressions",
                     {{{"scopeName", "CrossNamespacePodAffinity"}, {"operator", "Exists"}}}}}}}}}));
  Ok(c, Create(kT0 + 1, PodIn("default", "plain", 1)));
  Json local = PodIn("default", "local", 1);
  local["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {{"labelSelector", {{"matchLabels", {{"app", "x"}}}}},
       {"topologyKey", "kubernetes.io/hostname"}}};
  Ok(c, Create(kT0 + 2, local));
  const int64_t rv = c.store().resource_version();
  const Json term = {{"labelSelector", {{"matchLabels", {{"app", "x"}}}}},
                     {"topologyKey", "kubernetes.io/hostname"}};
  Json named = term;
  named["namespaces"] = {"other"};
  Json selected = term;
  selected["namespaceSelector"] = Json::object();  // every namespace
  const std::vector<std::pair<std::string, Json>> cross = {
      {"anti-required",
       {{"podAntiAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {named}}}}}},
      {"anti-preferred",
       {{"podAntiAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           {{{"weight", 1}, {"podAffinityTerm", selected}}}}}}}},
      {"affinity-preferred",
       {{"podAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           {{{"weight", 1}, {"podAffinityTerm", named}}}}}}}}};
  for (const auto& [name, affinity] : cross) {
    Json pod = PodIn("default", name, 1);
    pod["spec"]["affinity"] = affinity;
    MutationResult r = c.Apply(Create(kT0 + 3, pod));
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error->reason, ApiError::Reason::kForbidden) << name;
    EXPECT_EQ(r.error->message,
              "exceeded quota: no-cross-ns, requested: pods=1, used: pods=0, limited: pods=0")
        << name;
    EXPECT_EQ(c.store().Get("Pod", "default", name), nullptr) << name;
  }
  EXPECT_EQ(c.store().resource_version(), rv);
  for (const char* pod : {"plain", "local"})
    EXPECT_EQ(c.store().Get("Pod", "default", pod)->at("status").at("phase"), "Running") << pod;
  EXPECT_EQ(Used(c, "no-cross-ns", "pods"), "0");
}

// A scope the engine does not know is refused (422, kube-apiserver's "unsupported scope"), not
// loaded to hold every pod.
TEST(QuotaScopeStatus, AnUnknownScopeIsRefused) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("default")));
  for (const Json& spec :
       {Json{{"hard", {{"pods", "0"}}}, {"scopes", {"CrossNamespaceAffinity"}}},
        Json{{"hard", {{"pods", "0"}}},
             {"scopeSelector",
              {{"matchExpressions", {{{"scopeName", "Bogus"}, {"operator", "Exists"}}}}}}}}) {
    MutationResult r = c.Apply(Create(kT0, {{"apiVersion", "v1"},
                                            {"kind", "ResourceQuota"},
                                            {"metadata", {{"name", "q"}, {"namespace", "default"}}},
                                            {"spec", spec}}));
    ASSERT_FALSE(r.ok()) << spec.dump();
    EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid) << spec.dump();
    ASSERT_FALSE(r.error->diagnostics.items.empty()) << r.error->message;
    EXPECT_NE(r.error->diagnostics.items[0].message.find("unsupported scope"), std::string::npos)
        << r.error->diagnostics.items[0].message;
  }
  EXPECT_EQ(c.store().Get("ResourceQuota", "default", "q"), nullptr);
}

}  // namespace quota_scope_status_test
}  // namespace arbiter::server
