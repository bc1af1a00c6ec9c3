// The hook at the entry of every API request (server/http/api_auth.h), on requests built in memory.
#include "server/http/api_auth.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace arbiter::server {
namespace {

kube::TokenTable Tokens() {
  auto t = kube::ParseTokenFile(
      "admin-token,admin,1,system:masters\nalice-token,alice,2,arbiter:editors:team-a\n", "t.csv");
  EXPECT_TRUE(t.ok()) << t.message();
  return t.value();
}

httplib::Request Req(const std::string& method, const std::string& path, const std::string& token,
                     const std::string& watch = "") {
  httplib::Request r;
  r.method = method;
  r.path = path;
  if (!token.empty()) r.headers.emplace("Authorization", "Bearer " + token);
  if (!watch.empty()) r.params.emplace("watch", watch);
  return r;
}

TEST(ApiAuth, ProbesAndTheDashboardPassTheRestNeedsAKnownToken) {
  const kube::TokenTable t = Tokens();
  EXPECT_EQ(AuthorizeRequest(t, Req("GET", "/healthz", "")).code, 0);
  EXPECT_EQ(AuthorizeRequest(t, Req("GET", "/ui/api/pool", "")).code, 0);  // checks itself
  AuthOutcome none = AuthorizeRequest(t, Req("GET", "/api", ""));
  EXPECT_EQ(none.code, 401);
  EXPECT_EQ(none.refusal.body["reason"], "Unauthorized");
  EXPECT_EQ(AuthorizeRequest(t, Req("GET", "/api", "nope")).code, 401);
  AuthOutcome ok = AuthorizeRequest(t, Req("GET", "/api", "alice-token"));
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(ok.user, "alice");
}

TEST(ApiAuth, ATenantIsRefusedOtherNamespacesListsAndWatchesWithKubeApiserversSentence) {
  const kube::TokenTable t = Tokens();
  EXPECT_EQ(AuthorizeRequest(t, Req("POST", "/api/v1/namespaces/team-a/pods", "alice-token")).code,
            0);
  AuthOutcome list =
      AuthorizeRequest(t, Req("GET", "/api/v1/namespaces/team-b/pods", "alice-token"));
  EXPECT_EQ(list.code, 403);
  EXPECT_EQ(
      list.refusal.Message(),
      R"(pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b")");
  AuthOutcome watch = AuthorizeRequest(t, Req("GET", "/api/v1/pods", "alice-token", "true"));
  EXPECT_EQ(watch.code, 403);
  EXPECT_EQ(
      watch.refusal.Message(),
      R"(pods is forbidden: User "alice" cannot watch resource "pods" in API group "" at the cluster scope)");
  EXPECT_EQ(AuthorizeRequest(t, Req("GET", "/api/v1/pods", "admin-token", "true")).code, 0);
  EXPECT_EQ(AuthorizeRequest(t, Req("GET", "/debug/arbiter/state", "alice-token")).code, 403);
}

}  // namespace
}  // namespace arbiter::server
