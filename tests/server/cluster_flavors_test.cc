// ResourceFlavors through the daemon: a ResourceFlavor and an ElasticQuota with spec.flavors,
// applied one object per request as kubectl apply sends them, load as `arbiter validate` loads
// the same file (regression: the daemon refused the ElasticQuota with "unknown ResourceFlavor"),
// the quota's flavors take the stored flavors' node labels, and the ElasticQuota's status gives
// the namespace's fair share.
#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace {

using namespace fixtures;

Json Ok(Cluster& c, const Mutation& m) {
  MutationResult r = c.Apply(m);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
  return r.object;
}

Json LabelledNode(const std::string& name, const std::string& product, int gpus) {
  Json n = Node(name, gpus);
  n["metadata"]["labels"] = {{"nvidia.com/gpu.product", product}};
  return n;
}

Json Flavor(const std::string& name, const std::string& product) {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ResourceFlavor"},
          {"metadata", {{"name", name}}},
          {"spec", {{"nodeLabels", {{"nvidia.com/gpu.product", product}}}}}};
}

Json FlavoredQuota() {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", "q"}, {"namespace", "default"}}},
          {"spec",
           {{"flavors",
             {{{"name", "h100"}, {"min", {{"nvidia.com/gpu", "4"}}}},
              {{"name", "a100"}, {"min", {{"nvidia.com/gpu", "4"}}}}}}}}};
}

void FlavoredPool(Cluster& c) {
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, LabelledNode("h100-0", "H100", 4)));
  Ok(c, Create(kT0, LabelledNode("a100-0", "A100", 4)));
  Ok(c, Create(kT0, Flavor("h100", "H100")));
  Ok(c, Create(kT0, Flavor("a100", "A100")));
}

TEST(ClusterFlavorsTest, AnElasticQuotaNamingStoredResourceFlavorsIsAccepted) {
  Cluster c("0000abcd");
  FlavoredPool(c);
  MutationResult r = c.Apply(Create(kT0, FlavoredQuota()));
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "");
}

TEST(ClusterFlavorsTest, AnUnknownFlavorIsStillRefused) {
  Cluster c("0000abcd");
  FlavoredPool(c);
  Json q = FlavoredQuota();
  q["spec"]["flavors"][1]["name"] = "b200";
  MutationResult r = c.Apply(Create(kT0, q));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid);
}

TEST(ClusterFlavorsTest, WorkloadsFallBackFromTheFirstFlavorToTheNextOnItsNodes) {
  Cluster c("0000abcd");
  FlavoredPool(c);
  Ok(c, Create(kT0, FlavoredQuota()));
  Json first = Ok(c, Create(kT0 + 1000, PodIn("default", "first", 4)));
  Json second = Ok(c, Create(kT0 + 2000, PodIn("default", "second", 4)));
  EXPECT_EQ(first["spec"]["nodeName"], "h100-0");
  EXPECT_EQ(second["spec"]["nodeName"], "a100-0");  // h100's quota is used: the a100 flavor
  Json third = Ok(c, Create(kT0 + 3000, PodIn("default", "third", 1)));
  EXPECT_EQ(third["status"]["phase"], "Pending");
}

TEST(ClusterFlavorsTest, AFlavorAQuotaNamesCannotBeDeleted) {
  Cluster c("0000abcd");
  FlavoredPool(c);
  Ok(c, Create(kT0, FlavoredQuota()));
  MutationResult r = c.Apply(Delete(kT0 + 1000, "ResourceFlavor", "", "a100"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kConflict);
  Ok(c, Delete(kT0 + 2000, "ElasticQuota", "default", "q"));
  Ok(c, Delete(kT0 + 3000, "ResourceFlavor", "", "a100"));
}

TEST(ClusterFlavorsTest, ElasticQuotaStatusGivesTheFairShare) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Namespace("team-b")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  for (const std::string ns : {"team-a", "team-b"})
    Ok(c, Create(kT0, {{"apiVersion", "arbiter.dev/v1alpha1"},
                       {"kind", "ElasticQuota"},
                       {"metadata", {{"name", "q"}, {"namespace", ns}}},
                       {"spec",
                        {{"cohort", "pool"},
                         {"min", {{"nvidia.com/gpu", "4"}}},
                         {"fairSharing", {{"weight", ns == "team-a" ? "1" : "2"}}}}}}));
  Ok(c, Create(kT0 + 1000, PodIn("team-a", "big", 6)));
  const Json* a = c.store().Get("ElasticQuota", "team-a", "q");
  const Json* b = c.store().Get("ElasticQuota", "team-b", "q");
  ASSERT_TRUE(a && b);
  EXPECT_EQ((*a)["status"]["fairShare"], "0.25");  // borrows 2 of the 8 the cohort lends
  EXPECT_EQ((*b)["status"]["fairShare"], "0");
}

TEST(ClusterFlavorsTest, TheFairShareCountsQuotaPerFlavor) {
  Cluster c("0000abcd");
  FlavoredPool(c);
  Ok(c, Create(kT0, Namespace("team-b")));
  Json a = FlavoredQuota();
  a["spec"]["cohort"] = "pool";
  a["spec"]["fairSharing"] = {{"weight", "1"}};
  Ok(c, Create(kT0, a));
  Json b = FlavoredQuota();
  b["metadata"]["namespace"] = "team-b";
  b["spec"]["cohort"] = "pool";
  b["spec"]["flavors"][0]["min"]["nvidia.com/gpu"] = "0";
  b["spec"]["flavors"][1]["min"]["nvidia.com/gpu"] = "0";
  Ok(c, Create(kT0, b));
  // team-b borrows 2 of h100's 4 (the cohort lends 4 per flavor): share 0.5, not 2/8.
  Ok(c, Create(kT0 + 1000, PodIn("team-b", "borrower", 2)));
  const Json* q = c.store().Get("ElasticQuota", "team-b", "q");
  ASSERT_TRUE(q);
  EXPECT_EQ((*q)["status"]["fairShare"], "0.5");
}

}  // namespace
}  // namespace arbiter::server
