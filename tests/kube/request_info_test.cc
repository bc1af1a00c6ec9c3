// Request attributes from method and path, as kube-apiserver's RequestInfoFactory derives them:
// what the authorizer is asked, and so what a 403 names.
#include "adapters/kube/request_info.h"

#include <gtest/gtest.h>

namespace arbiter::kube {
namespace {

TEST(KubeRequestInfo, NamespacedPathsNameResourceNamespaceNameAndSubresource) {
  RequestAttributes a = RequestAttributesOf("GET", "/api/v1/namespaces/team-b/pods", "");
  EXPECT_TRUE(a.resource_request);
  EXPECT_EQ(a.verb, "list");
  EXPECT_EQ(a.resource, "pods");
  EXPECT_EQ(a.namespace_, "team-b");
  EXPECT_EQ(a.name, "");
  a = RequestAttributesOf("PUT", "/api/v1/namespaces/team-a/pods/x/status", "");
  EXPECT_EQ(a.verb, "update");
  EXPECT_EQ(a.name, "x");
  EXPECT_EQ(a.subresource, "status");
  a = RequestAttributesOf("POST", "/apis/arbiter.dev/v1alpha1/namespaces/team-a/elasticquotas", "");
  EXPECT_EQ(a.verb, "create");
  EXPECT_EQ(a.api_group, "arbiter.dev");
  EXPECT_EQ(a.resource, "elasticquotas");
  EXPECT_EQ(RequestAttributesOf("DELETE", "/api/v1/namespaces/a/pods", "").verb,
            "deletecollection");
  EXPECT_EQ(RequestAttributesOf("PATCH", "/api/v1/namespaces/a/pods/p", "").verb, "patch");
}

TEST(KubeRequestInfo, WatchByParameterOrPathAndAllNamespacesListsAreClusterScoped) {
  RequestAttributes a = RequestAttributesOf("GET", "/api/v1/namespaces/team-a/events", "true");
  EXPECT_EQ(a.verb, "watch");
  a = RequestAttributesOf("GET", "/api/v1/watch/namespaces/team-a/pods", "");
  EXPECT_EQ(a.verb, "watch");
  EXPECT_EQ(a.namespace_, "team-a");
  EXPECT_EQ(a.resource, "pods");
  a = RequestAttributesOf("GET", "/api/v1/pods", "1");
  EXPECT_EQ(a.verb, "watch");
  EXPECT_EQ(a.namespace_, "");  // kubectl get pods -A --watch
  EXPECT_EQ(RequestAttributesOf("GET", "/api/v1/pods", "false").verb, "list");
}

TEST(KubeRequestInfo, ANamespaceIsItsOwnNamespaceAndDiscoveryIsNotAResource) {
  RequestAttributes a = RequestAttributesOf("GET", "/api/v1/namespaces/team-a", "");
  EXPECT_EQ(a.resource, "namespaces");
  EXPECT_EQ(a.name, "team-a");
  EXPECT_EQ(a.namespace_, "team-a");
  EXPECT_EQ(RequestAttributesOf("GET", "/api/v1/namespaces", "").namespace_, "");
  a = RequestAttributesOf("PUT", "/api/v1/namespaces/team-a/finalize", "");
  EXPECT_EQ(a.resource, "namespaces");
  EXPECT_EQ(a.subresource, "finalize");
  for (const char* p : {"/api", "/api/v1", "/apis", "/apis/arbiter.dev", "/apis/policy/v1",
                        "/version", "/openapi/v3", "/metrics"}) {
    a = RequestAttributesOf("GET", p, "");
    EXPECT_FALSE(a.resource_request) << p;
    EXPECT_EQ(a.path, p);
    EXPECT_EQ(a.verb, "get");
  }
  EXPECT_EQ(RequestAttributesOf("POST", "/metrics", "").verb, "post");
}

}  // namespace
}  // namespace arbiter::kube
