#include "adapters/kube/auth.h"

#include <gtest/gtest.h>

#include <fstream>

#include "adapters/kube/kubeconfig.h"
#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

const char* kTokens =
    "admin-token,admin,1,system:masters\n"
    "\n"
    "alice-token,alice,2,\"arbiter:editors:team-a,arbiter:viewers:team-c\"\n"
    "bob-token,bob,3\n"
    ",nobody,4\n"
    "alice-token-2,alice,5,arbiter:viewers:team-a\n";

TokenTable Tokens() {
  auto t = ParseTokenFile(kTokens, "tokens.csv");
  EXPECT_TRUE(t.ok()) << t.message();
  return *t;
}

UserInfo User(const char* token) { return *Authenticate(Tokens(), std::string("Bearer ") + token); }

RequestAttributes Req(const char* verb, const char* resource, const char* ns, const char* name = "",
                      const char* group = "", const char* sub = "") {
  RequestAttributes a;
  a.verb = verb;
  a.resource = resource;
  a.namespace_ = ns;
  a.name = name;
  a.api_group = group;
  a.subresource = sub;
  return a;
}

TEST(KubeTokenFile, ParsesKubeApiserverCsvWithQuotedGroups) {
  TokenTable t = Tokens();
  EXPECT_EQ(t.by_token.size(), 4u);  // the empty token is skipped
  UserInfo alice = t.by_token.at("alice-token");
  EXPECT_EQ(alice.uid, "2");
  EXPECT_EQ(alice.groups,
            (std::vector<std::string>{"arbiter:editors:team-a", "arbiter:viewers:team-c",
                                      "system:authenticated"}));
  EXPECT_EQ(t.by_token.at("bob-token").groups, (std::vector<std::string>{"system:authenticated"}));
  EXPECT_EQ(t.first_token_of_user.at("alice"), "alice-token");
  EXPECT_EQ(ParseTokenFile("tok,user\n", "t.csv").message(),
            "token file 't.csv' must have at least 3 columns (token, user name, user uid), found 2 "
            "(line 1)");
  EXPECT_FALSE(ParseTokenFile("a,b,c,\"g\n", "t.csv").ok());
}

TEST(KubeTokenFile, BearerTokensAuthenticateOthersDoNot) {
  TokenTable t = Tokens();
  EXPECT_EQ(Authenticate(t, "Bearer alice-token")->name, "alice");
  EXPECT_EQ(Authenticate(t, "bearer admin-token")->name, "admin");
  EXPECT_FALSE(Authenticate(t, "Bearer nope").has_value());
  EXPECT_FALSE(Authenticate(t, "Basic YWxpY2U6eA==").has_value());
  EXPECT_FALSE(Authenticate(t, "").has_value());
  EXPECT_FALSE(Authenticate(t, "Bearer ").has_value());
}

// kube-apiserver's bearertoken.AuthenticateRequest: strings.SplitN(header, " ", 3) after
// TrimSpace; extra spaces before the token leave it empty (401), a third part is ignored.
TEST(KubeTokenFile, BearerHeadersAreSplitAsKubeApiserverSplitsThem) {
  TokenTable t = Tokens();
  EXPECT_FALSE(Authenticate(t, "Bearer   alice-token").has_value());
  EXPECT_FALSE(Authenticate(t, "Bearer\talice-token").has_value());
  EXPECT_EQ(Authenticate(t, "  Bearer alice-token \t").value_or(UserInfo{}).name, "alice");
  EXPECT_EQ(Authenticate(t, "Bearer alice-token extra").value_or(UserInfo{}).name, "alice");
  EXPECT_EQ(Authenticate(t, "BEARER alice-token").value_or(UserInfo{}).name, "alice");
}

TEST(KubeAuthorization, AdminsDoEverythingEditorsTheirNamespaceViewersRead) {
  UserInfo admin = User("admin-token"), alice = User("alice-token"), bob = User("bob-token");
  EXPECT_TRUE(Authorize(admin, Req("delete", "nodes", "", "a100-0")).allowed);
  EXPECT_TRUE(Authorize(admin, Req("list", "pods", "")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("create", "pods", "team-a")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("get", "elasticquotas", "team-a", "q", "arbiter.dev")).allowed);
  EXPECT_TRUE(
      Authorize(alice, Req("create", "poddisruptionbudgets", "team-a", "", "policy")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("create", "pods", "team-a", "x", "", "eviction")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("update", "pods", "team-a", "x", "", "status")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("watch", "events", "team-c")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("create", "pods", "team-c")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("list", "pods", "team-b")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("list", "pods", "")).allowed);  // all namespaces
  EXPECT_TRUE(Authorize(bob, Req("list", "nodes", "")).allowed);
  EXPECT_TRUE(Authorize(bob, Req("get", "pricebooks", "", "list-prices", "arbiter.dev")).allowed);
  EXPECT_TRUE(Authorize(bob, Req("list", "resourceflavors", "", "", "arbiter.dev")).allowed);
  EXPECT_FALSE(Authorize(bob, Req("create", "resourceflavors", "", "", "arbiter.dev")).allowed);
  EXPECT_FALSE(
      Authorize(bob, Req("create", "priorityclasses", "", "", "scheduling.k8s.io")).allowed);
  EXPECT_FALSE(Authorize(bob, Req("list", "namespaces", "")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("get", "namespaces", "", "team-a")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("get", "namespaces", "", "team-b")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("delete", "namespaces", "", "team-a")).allowed);
  // As request_info.h gives it: /api/v1/namespaces/team-a is namespace team-a in team-a; no other
  // namespace may hide under it.
  EXPECT_TRUE(Authorize(alice, Req("get", "namespaces", "team-a", "team-a")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("get", "namespaces", "team-a", "team-b")).allowed);
  RequestAttributes metrics;
  metrics.resource_request = false;
  metrics.verb = "get";
  metrics.path = "/metrics";
  EXPECT_FALSE(Authorize(bob, metrics).allowed);
  metrics.path = "/apis";
  EXPECT_TRUE(Authorize(bob, metrics).allowed);
}

// The policy matches a resource by its API group and plural, as RBAC does (hostile-tenant trial:
// SelfSubjectAccessReviews answered "allowed" to create pods in a made-up group, and to create
// Events, which the daemon refuses, 405). Events are read-only to tenants; a resource the kinds
// table does not know is readable in one's namespace (the server answers 404) and writable by
// admins only.
TEST(KubeAuthorization, ResourcesMatchByGroupAndPluralAndEventsAreReadOnly) {
  UserInfo admin = User("admin-token"), alice = User("alice-token");
  EXPECT_TRUE(Authorize(alice, Req("create", "pods", "team-a")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("create", "pods", "team-a", "", "evil.io")).allowed);
  EXPECT_TRUE(Authorize(alice, Req("get", "pods", "team-a", "x", "evil.io")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("create", "jobs", "team-a", "", "")).allowed);  // batch's
  EXPECT_TRUE(Authorize(alice, Req("create", "jobs", "team-a", "", "batch")).allowed);
  EXPECT_FALSE(Authorize(alice, Req("create", "elasticquotas", "team-a", "", "scheduling.x-k8s.io"))
                   .allowed);
  for (const char* verb : {"get", "list", "watch"})
    EXPECT_TRUE(Authorize(alice, Req(verb, "events", "team-a")).allowed) << verb;
  for (const char* verb : {"create", "update", "patch", "delete"})
    EXPECT_FALSE(Authorize(alice, Req(verb, "events", "team-a", "e")).allowed) << verb;
  EXPECT_TRUE(Authorize(admin, Req("create", "pods", "team-a", "", "evil.io")).allowed);
}

// Only discovery, OpenAPI, version and health are public non-resource paths, and only to read.
// Regression (audit B2): an editor could raise its own ElasticQuota min and ResourceQuota, and
// delete its LimitRange. Kubernetes' edit/admin roles only read quotas and limit ranges.
TEST(KubeAuthorization, EditorsReadButDoNotWriteTheirNamespacesQuotasAndLimitRanges) {
  UserInfo admin = User("admin-token"), alice = User("alice-token");
  for (const auto& [resource, group] : std::vector<std::pair<const char*, const char*>>{
           {"resourcequotas", ""}, {"limitranges", ""}, {"elasticquotas", "arbiter.dev"}}) {
    for (const char* verb : {"get", "list", "watch"})
      EXPECT_TRUE(Authorize(alice, Req(verb, resource, "team-a", "", group)).allowed)
          << verb << " " << resource;
    for (const char* verb : {"create", "update", "patch", "delete", "deletecollection"}) {
      EXPECT_FALSE(Authorize(alice, Req(verb, resource, "team-a", "q", group)).allowed)
          << verb << " " << resource;
      EXPECT_TRUE(Authorize(admin, Req(verb, resource, "team-a", "q", group)).allowed)
          << verb << " " << resource;
    }
  }
}

TEST(KubeAuthorization, NonResourcePathsOtherThanDiscoveryOpenApiVersionAndHealthAreAdminsOnly) {
  UserInfo bob = User("bob-token"), admin = User("admin-token");
  RequestAttributes a;
  a.resource_request = false;
  a.verb = "get";
  for (const char* p : {"/api", "/apis/arbiter.dev/v1alpha1", "/openapi/v3",
                        "/openapi/v3/apis/policy/v1", "/version", "/healthz", "/readyz"}) {
    a.path = p;
    EXPECT_TRUE(Authorize(bob, a).allowed) << p;
  }
  for (const char* p : {"/debug/arbiter/state", "/metrics", "/versions", "/apisx", "/"}) {
    a.path = p;
    EXPECT_FALSE(Authorize(bob, a).allowed) << p;
    EXPECT_TRUE(Authorize(admin, a).allowed) << p;
  }
  a.path = "/api";
  a.verb = "post";
  EXPECT_FALSE(Authorize(bob, a).allowed);
}

TEST(KubeAuthorization, ForbiddenMessagesAreKubeApiserverSentences) {
  UserInfo alice = User("alice-token");
  EXPECT_EQ(
      ForbiddenStatus(alice, Req("list", "pods", "team-b")).Message(),
      R"(pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "team-b")");
  EXPECT_EQ(
      ForbiddenStatus(alice, Req("delete", "nodes", "", "a100-0")).Message(),
      R"(nodes "a100-0" is forbidden: User "alice" cannot delete resource "nodes" in API group "" at the cluster scope)");
  EXPECT_EQ(
      ForbiddenStatus(alice, Req("create", "priorityclasses", "", "", "scheduling.k8s.io"))
          .Message(),
      R"(priorityclasses.scheduling.k8s.io is forbidden: User "alice" cannot create resource "priorityclasses" in API group "scheduling.k8s.io" at the cluster scope)");
  EXPECT_EQ(
      ForbiddenStatus(alice, Req("update", "pods", "team-a", "x", "", "status")).Message(),
      R"(pods "x" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "team-a")");
  RequestAttributes metrics;
  metrics.resource_request = false;
  metrics.verb = "get";
  metrics.path = "/metrics";
  EXPECT_EQ(ForbiddenStatus(alice, metrics).Message(),
            R"(forbidden: User "alice" cannot get path "/metrics")");
  EXPECT_EQ(VerbOf("GET", false, true), "watch");
  EXPECT_EQ(VerbOf("GET", true, false), "get");
  EXPECT_EQ(VerbOf("DELETE", false, false), "deletecollection");
}

TEST(KubeKubeconfig, YamlNamesClusterUserContextAndEncodesTheCa) {
  EXPECT_EQ(Base64("M"), "TQ==");
  EXPECT_EQ(Base64("Ma"), "TWE=");
  EXPECT_EQ(Base64("Man"), "TWFu");
  auto y = KubeconfigYaml(
      {"https://127.0.0.1:6443", "alice", "t0k", "-----BEGIN CERTIFICATE-----\n", "team-a"});
  ASSERT_TRUE(y.ok()) << y.message();
  EXPECT_NE(y->find("certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="),
            std::string::npos)
      << *y;
  EXPECT_NE(y->find("current-context: arbiter-alice"), std::string::npos) << *y;
  EXPECT_NE(y->find("namespace: team-a"), std::string::npos) << *y;
  EXPECT_FALSE(KubeconfigYaml({"127.0.0.1:6443", "alice", "t", "", ""}).ok());
  EXPECT_FALSE(KubeconfigYaml({"http://127.0.0.1:6443", "alice", "t", "PEM", ""}).ok());
  EXPECT_FALSE(KubeconfigYaml({"http://127.0.0.1:6443", "", "t", "", ""}).ok());
}

// End to end with the real kubectl: `arbiter kubeconfig` writes the kubeconfig, kubectl sends its
// token, a server authenticating and authorizing with this library answers, and kubectl prints
// kube-apiserver's 401 and 403 messages. Over HTTPS: kubectl 1.32 sends no bearer token to an
// http:// server (seen: the Authorization header is absent), so a daemon with a token file needs
// --tls-cert-file.
TEST(KubeKubeconfig, KubectlWithArbiterKubeconfigIsAuthenticatedAndAuthorized) {
  TokenTable tokens = Tokens();
  auto guard = [&tokens](const httplib::Request& req, httplib::Response& res) {
    // Discovery and OpenAPI stay open; the namespaced pod lists are guarded.
    if (req.path.rfind("/api/v1/namespaces/", 0) != 0)
      return httplib::Server::HandlerResponse::Unhandled;
    auto user = Authenticate(tokens, req.get_header_value("Authorization"));
    KubeStatus st;
    if (!user) {
      st = Unauthorized();
    } else {
      // /api/v1/namespaces/NS/pods
      RequestAttributes a = Req("list", "pods", "");
      const std::string ns_prefix = "/api/v1/namespaces/";
      if (req.path.rfind(ns_prefix, 0) == 0)
        a.namespace_ = req.path.substr(ns_prefix.size(),
                                       req.path.find('/', ns_prefix.size()) - ns_prefix.size());
      if (Authorize(*user, a).allowed) {
        res.set_content(
            R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]})",
            "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      st = ForbiddenStatus(*user, a);
    }
    res.status = st.code;
    res.set_content(st.body.dump(), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  };
  auto scratch = testing::Scratch("kubeconfig");
  const std::string crt = (scratch / "server.crt").string(),
                    key = (scratch / "server.key").string();
  auto cert = arbiter::testing::RunCommandSplit(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext "
      "subjectAltName=IP:127.0.0.1 -keyout " +
          key + " -out " + crt,
      scratch);
  ASSERT_EQ(cert.rc, 0) << cert.err;
  testing::FakeApiServer server([&guard](httplib::Server& s) { s.set_pre_routing_handler(guard); },
                                true, crt, key);
  std::ofstream(scratch / "tokens.csv") << kTokens;
  std::ofstream(scratch / "bad.csv") << "x,ghost,9\n";
  auto kubeconfig = [&](const std::string& user, const std::string& file) {
    auto r = arbiter::testing::RunCommandSplit(
        std::string(ARBITER_BINARY) + " kubeconfig --server " + server.Url() + " --user " + user +
            " --token-file " + (scratch / file).string() + " --certificate-authority " + crt +
            " > " + (scratch / (user + ".kubeconfig")).string(),
        scratch);
    EXPECT_EQ(r.rc, 0) << r.err;
    return (scratch / (user + ".kubeconfig")).string();
  };
  auto kubectl = [&](const std::string& config, const std::string& args) {
    return arbiter::testing::RunBounded("kubectl --kubeconfig=" + config + " --cache-dir=" +
                                            (scratch / "cache").string() + " " + args,
                                        scratch, {60, 2048});
  };
  const std::string alice = kubeconfig("alice", "tokens.csv");
  auto own = kubectl(alice, "get pods -n team-a");
  EXPECT_EQ(own.rc, 0) << own.err;
  EXPECT_EQ(own.err, "No resources found in team-a namespace.\n");
  auto other = kubectl(alice, "get pods -n team-b");
  EXPECT_EQ(other.rc, 1);
  EXPECT_EQ(other.err,
            "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list resource "
            "\"pods\" in API group \"\" in the namespace \"team-b\"\n");
  const std::string ghost = kubeconfig("ghost", "bad.csv");
  auto unknown = kubectl(ghost, "get pods -n team-a");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.err.find("error: You must be logged in to the server (Unauthorized)"),
            std::string::npos)
      << unknown.err;

  auto missing = arbiter::testing::RunCommandSplit(
      std::string(ARBITER_BINARY) + " kubeconfig --server " + server.Url() +
          " --user carol --token-file " + (scratch / "tokens.csv").string(),
      scratch);
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("no token for user \"carol\""), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace arbiter::kube
