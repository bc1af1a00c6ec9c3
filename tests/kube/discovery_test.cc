#include "adapters/kube/discovery.h"

#include <gtest/gtest.h>

#include "adapters/kube/resources.h"
#include "core/api_kinds.h"
#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

TEST(KubeResources, EveryManifestKindIsServedOnceByKindAndByPlural) {
  const char* kinds[][2] = {{"v1", "Namespace"},
                            {"v1", "Node"},
                            {"v1", "Pod"},
                            {"v1", "ResourceQuota"},
                            {"v1", "LimitRange"},
                            {"v1", "Event"},
                            {"batch/v1", "Job"},
                            {"scheduling.k8s.io/v1", "PriorityClass"},
                            {"policy/v1", "PodDisruptionBudget"},
                            {"arbiter.dev/v1alpha1", "PoolPolicy"},
                            {"arbiter.dev/v1alpha1", "ElasticQuota"},
                            {"arbiter.dev/v1alpha1", "PriceBook"},
                            {"arbiter.dev/v1alpha1", "QoS"},
                            {"arbiter.dev/v1alpha1", "ResourceFlavor"},
                            {"scheduling.x-k8s.io/v1alpha1", "PodGroup"}};
  for (auto& k : kinds) {
    const ResourceInfo* r = FindResourceByKind(k[0], k[1]);
    ASSERT_NE(r, nullptr) << k[1];
    EXPECT_EQ(r->ApiVersion(), k[0]);
    EXPECT_EQ(FindResource(r->group, r->version, r->plural), r);
  }
  EXPECT_EQ(ServedResources().size(), std::size(kinds));
  // The one kinds table (core/api_kinds.h) is what is served, name for name.
  ASSERT_EQ(ApiKinds().size(), ServedResources().size());
  for (const ApiKind& k : ApiKinds()) {
    const ResourceInfo* r = FindResourceByKind(k.ApiVersion(), k.kind);
    ASSERT_NE(r, nullptr) << k.kind;
    EXPECT_EQ(r->plural, k.plural);
    EXPECT_EQ(r->namespaced, k.namespaced);
  }
  EXPECT_EQ(FindResourceByKind("v1", "Deployment"), nullptr);
  EXPECT_EQ(FindResourceByKind("policy/v1beta1", "PodDisruptionBudget"), nullptr);
  EXPECT_EQ(FindResource("", "v1", "pod"), nullptr);  // the URL segment is the plural
}

TEST(KubeResources, KubectlNamesResolveLikeKubeApiserverShortNames) {
  EXPECT_EQ(FindResourceByName("po")->plural, "pods");
  EXPECT_EQ(FindResourceByName("quota")->plural, "resourcequotas");
  EXPECT_EQ(FindResourceByName("pg")->kind, "PodGroup");
  EXPECT_EQ(FindResourceByName("podgroup")->group, "scheduling.x-k8s.io");
  EXPECT_EQ(FindResourceByName("pdb")->QualifiedResource(), "poddisruptionbudgets.policy");
  EXPECT_EQ(FindResourceByName("PriorityClass")->QualifiedKind(),
            "PriorityClass.scheduling.k8s.io");
  EXPECT_EQ(FindResourceByName("qos")->plural, "qoses");
  EXPECT_EQ(FindResourceByName("nope"), nullptr);
  const ResourceInfo* pods = FindResource("", "v1", "pods");
  ASSERT_NE(pods->FindSubresource("eviction"), nullptr);
  EXPECT_EQ(pods->FindSubresource("eviction")->kind, "Eviction");
  EXPECT_EQ(pods->FindSubresource("eviction")->group, "policy");
  EXPECT_NE(pods->FindSubresource("status"), nullptr);
  EXPECT_NE(FindResource("", "v1", "resourcequotas")->FindSubresource("status"), nullptr);
  EXPECT_EQ(pods->FindSubresource("log"), nullptr);
}

TEST(KubeDiscovery, CoreResourceListHasNoApiVersionGroupListsDo) {
  json core = *ApiResourceList("", "v1");
  EXPECT_EQ(core["kind"], "APIResourceList");
  EXPECT_FALSE(core.contains("apiVersion"));
  EXPECT_EQ(core["groupVersion"], "v1");
  json pods;
  for (const auto& r : core["resources"])
    if (r["name"] == "pods/eviction") pods = r;
  EXPECT_EQ(pods["group"], "policy");
  EXPECT_EQ(pods["kind"], "Eviction");
  EXPECT_EQ(pods["verbs"], json({"create"}));
  // What the daemon allows: status is read-only there, Events are the server's to write.
  json status, events;
  for (const auto& r : core["resources"]) {
    if (r["name"] == "pods/status") status = r;
    if (r["name"] == "events") events = r;
  }
  EXPECT_EQ(status["verbs"], json({"get"}));
  EXPECT_EQ(events["verbs"], json({"get", "list", "watch"}));
  json policy = *ApiResourceList("policy", "v1");
  EXPECT_EQ(policy["apiVersion"], "v1");
  EXPECT_EQ(policy["groupVersion"], "policy/v1");
  EXPECT_FALSE(ApiResourceList("apps", "v1").has_value());
}

TEST(KubeDiscovery, ApiGroupListOmitsCoreAndPrefersTheOnlyVersion) {
  json groups = ApiGroupList();
  EXPECT_EQ(groups["kind"], "APIGroupList");
  ASSERT_EQ(groups["groups"].size(), 5u);
  EXPECT_EQ(groups["groups"][0]["name"], "batch");
  EXPECT_EQ(groups["groups"][1]["name"], "policy");
  EXPECT_EQ(groups["groups"][3]["name"], "arbiter.dev");
  EXPECT_EQ(groups["groups"][3]["preferredVersion"]["groupVersion"], "arbiter.dev/v1alpha1");
  EXPECT_EQ(groups["groups"][4]["name"], "scheduling.x-k8s.io");
  EXPECT_EQ(CoreApiVersions()["versions"], json({"v1"}));
  EXPECT_EQ((*ApiGroup("policy"))["kind"], "APIGroup");
  EXPECT_FALSE(ApiGroup("apps").has_value());
}

TEST(KubeDiscovery, AcceptHeaderOfKubectlNegotiatesAggregatedV2) {
  EXPECT_EQ(NegotiateDiscovery(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/"
                "json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"),
            DiscoveryShape::kAggregatedV2);
  EXPECT_EQ(NegotiateDiscovery(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            DiscoveryShape::kAggregatedV2Beta1);
  EXPECT_EQ(NegotiateDiscovery("application/json, */*"), DiscoveryShape::kLegacy);
  EXPECT_EQ(NegotiateDiscovery(""), DiscoveryShape::kLegacy);
  EXPECT_EQ(
      NegotiateDiscovery("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"),
      DiscoveryShape::kLegacy);
  json agg = AggregatedDiscovery(false);
  EXPECT_EQ(agg["apiVersion"], "apidiscovery.k8s.io/v2");
  EXPECT_EQ(agg["items"].size(), 5u);
  EXPECT_EQ(AggregatedDiscovery(true)["items"][0]["versions"][0]["resources"].size(), 6u);
}

// The reference is kubectl itself: `kubectl api-resources` against a server answering with these
// bodies lists every resource, with its short names, group and scope, in both discovery shapes.
void ExpectApiResources(bool aggregated) {
  testing::FakeApiServer server;
  server.aggregated = aggregated;
  auto scratch = testing::Scratch(aggregated ? "apires-agg" : "apires-legacy");
  auto run = server.Kubectl("api-resources --no-headers", scratch);
  ASSERT_EQ(run.rc, 0) << run.err;
  for (const auto& r : ServedResources()) {
    std::string needle = r.plural;
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
  }
  EXPECT_NE(run.out.find("eq,eqs"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("pg,pgs"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("scheduling.k8s.io/v1"), std::string::npos);
  bool saw_aggregated_accept = false, saw_group_list = false;
  for (const auto& q : server.Requests()) {
    if (q.path == "/api" && q.accept.find("apidiscovery.k8s.io") != std::string::npos)
      saw_aggregated_accept = true;
    if (q.path == "/apis/policy/v1") saw_group_list = true;
  }
  EXPECT_TRUE(saw_aggregated_accept);
  EXPECT_EQ(saw_group_list, !aggregated);  // aggregated discovery needs no per-group request
}

TEST(KubeDiscovery, KubectlApiResourcesListsEveryResourceFromAggregatedDiscovery) {
  ExpectApiResources(true);
}

TEST(KubeDiscovery, KubectlApiResourcesListsEveryResourceFromLegacyDiscovery) {
  ExpectApiResources(false);
}

TEST(KubeDiscovery, KubectlVersionReadsTheServerVersion) {
  testing::FakeApiServer server;
  auto scratch = testing::Scratch("version");
  auto run = server.Kubectl("version -o json", scratch);
  ASSERT_EQ(run.rc, 0) << run.err;
  json v = json::parse(run.out);
  EXPECT_EQ(v["serverVersion"]["gitVersion"], "v1.32.0+arbiter-0.1.0");
  EXPECT_EQ(run.err.find("WARNING"), std::string::npos) << run.err;  // no version skew warning
}

}  // namespace
}  // namespace arbiter::kube
