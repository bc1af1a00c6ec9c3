// Issue 27: the self reviews answer from the authorization policy (auth.h) that guards every
// request; kubectl's end-to-end use is tests/server/serve_self_review_test.cc.
#include "adapters/kube/auth_review.h"

#include <gtest/gtest.h>

namespace arbiter::kube {
namespace auth_review_test {

using json = nlohmann::json;

json Review(const json& spec) {
  return json{{"kind", "SelfSubjectAccessReview"},
              {"apiVersion", "authorization.k8s.io/v1"},
              {"spec", spec}};
}

const UserInfo kAlice{"alice", "2", {"arbiter:editors:team-a", "system:authenticated"}};

TEST(AuthReviewTest, AnswersAsTheAuthorizerDecides) {
  auto own = AccessReviewAttributes(
      Review({{"resourceAttributes",
               {{"namespace", "team-a"}, {"verb", "create"}, {"resource", "pods"}}}}));
  ASSERT_TRUE(own.ok()) << own.status().message();
  const Decision yes = Authorize(kAlice, *own);
  EXPECT_TRUE(yes.allowed);
  json a = AccessReviewResponse(Review({}), yes, "");
  EXPECT_EQ(a["status"]["allowed"], true);
  EXPECT_EQ(a["apiVersion"], "authorization.k8s.io/v1");

  auto other = AccessReviewAttributes(Review(
      {{"resourceAttributes", {{"namespace", "team-b"}, {"verb", "list"}, {"resource", "pods"}}}}));
  ASSERT_TRUE(other.ok());
  const Decision no = Authorize(kAlice, *other);
  EXPECT_FALSE(no.allowed);
  json b = AccessReviewResponse(Review({}), no, ForbiddenReason(kAlice, *other));
  EXPECT_EQ(b["status"]["allowed"], false);
  EXPECT_EQ(b["status"]["reason"],
            "User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace "
            "\"team-b\"");

  // Cluster-scoped resources lose kubectl's context namespace; the policy reads them publicly.
  auto nodes = AccessReviewAttributes(
      Review({{"resourceAttributes",
               {{"namespace", "default"}, {"verb", "get"}, {"resource", "nodes"}}}}));
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->namespace_, "");
  EXPECT_TRUE(Authorize(kAlice, *nodes).allowed);

  auto metrics = AccessReviewAttributes(
      Review({{"nonResourceAttributes", {{"path", "/metrics"}, {"verb", "get"}}}}));
  ASSERT_TRUE(metrics.ok());
  EXPECT_FALSE(metrics->resource_request);
  EXPECT_FALSE(Authorize(kAlice, *metrics).allowed);
}

TEST(AuthReviewTest, EveryUserMayAskButTheSpecMustBeOneKindOfAttributes) {
  RequestAttributes ask;
  ask.verb = "create";
  ask.api_group = "authorization.k8s.io";
  ask.resource = "selfsubjectaccessreviews";
  const UserInfo nobody{"carol", "9", {"system:authenticated"}};
  EXPECT_TRUE(Authorize(nobody, ask).allowed);
  ask.api_group = "authentication.k8s.io";
  ask.resource = "selfsubjectreviews";
  EXPECT_TRUE(Authorize(nobody, ask).allowed);
  ask.resource = "tokenreviews";
  EXPECT_FALSE(Authorize(nobody, ask).allowed);

  EXPECT_FALSE(AccessReviewAttributes(Review(json::object())).ok());
  EXPECT_FALSE(AccessReviewAttributes(Review({{"resourceAttributes", json::object()},
                                              {"nonResourceAttributes", json::object()}}))
                   .ok());
  EXPECT_FALSE(AccessReviewAttributes(json{{"kind", "Pod"}, {"apiVersion", "v1"}}).ok());
  EXPECT_FALSE(AccessReviewAttributes(Review({{"resourceAttributes", {{"verb", 3}}}})).ok());

  json who = SelfSubjectReviewResponse(kAlice);
  EXPECT_EQ(who["status"]["userInfo"], json::parse(R"({"username":"alice","uid":"2",
                "groups":["arbiter:editors:team-a","system:authenticated"]})"));
}

}  // namespace auth_review_test
}  // namespace arbiter::kube
