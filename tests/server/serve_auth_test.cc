// `arbiter serve --token-file F --tls-cert-file C --tls-private-key-file K` under the real kubectl
// 1.32: a CA and a server certificate made by the `openssl` CLI, kubeconfigs from `arbiter
// kubeconfig`; a tenant works in its namespace and gets kube-apiserver's 403 sentences elsewhere,
// an admin does everything, no token is 401; the dashboard takes the same tokens; the daemon
// refuses bad TLS files and open non-loopback addresses before it touches its data.
#include <gtest/gtest.h>

#include <fstream>

#include "apps/test_pki.h"
#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_auth_test {

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";
const std::string kArbiter = ARBITER_BINARY;

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* kTokens =
    "admin-token,admin,1,\"system:masters\"\n"
    "alice-token,alice,2,\"arbiter:editors:team-a\"\n"
    "bob-token,bob,3,\"arbiter:viewers:team-b\"\n";

class ServeAuthTest : public ::testing::Test {
 protected:
  void StartServe(const std::string& name) {
    dir_ = ScratchDir(name);
    MakeTestPki(dir_);
    Write(dir_ / "tokens.csv", kTokens);
    Write(dir_ / "ghost.csv", "ghost-token,ghost,9\n");
    serve_ = std::make_unique<ServeProcess>(
        dir_, std::vector<std::string>{"--token-file", (dir_ / "tokens.csv").string(),
                                       "--tls-cert-file", (dir_ / "server.pem").string(),
                                       "--tls-private-key-file", (dir_ / "server.key").string()});
    ASSERT_TRUE(serve_->Start()) << serve_->log();
    EXPECT_TRUE(Has(serve_->log(), "\"scheme\":\"https\"")) << serve_->log();
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(serve_->port()); }
  // `arbiter kubeconfig` for `user` (its first token in `tokens`), trusting the test CA.
  std::string Kubeconfig(const std::string& user, const std::string& tokens = "tokens.csv") {
    const std::string out = (dir_ / (user + ".kubeconfig")).string();
    CommandOutput r =
        RunCommand(kArbiter + " kubeconfig --server " + Url() + " --user " + user +
                   " --token-file " + (dir_ / tokens).string() + " --certificate-authority " +
                   (dir_ / "ca.pem").string() + " > " + out + " 2>&1");
    EXPECT_EQ(r.rc, 0) << ReadWhole(out);
    return out;
  }
  CommandOutput Kubectl(const std::string& kubeconfig, const std::string& args) const {
    return RunCommand("kubectl --kubeconfig " + kubeconfig + " --cache-dir " +
                      (dir_ / "kcache").string() + " " + args + " 2>&1");
  }
  // curl's body and, on the last line, the HTTP status.
  CommandOutput Curl(const std::string& path, const std::string& token) const {
    std::string auth = token.empty() ? "" : " -H 'Authorization: Bearer " + token + "'";
    return RunCommand("curl -sS --cacert " + (dir_ / "ca.pem").string() + auth +
                      " -w '\\n%{http_code}' '" + Url() + path + "' 2>&1");
  }
  std::filesystem::path dir_;
  std::unique_ptr<ServeProcess> serve_;
};

std::string PodYaml(const std::string& ns, const std::string& name) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns +
         "}\nspec:\n  containers:\n  - name: main\n    image: busybox\n    resources:\n"
         "      requests: {cpu: \"1\"}\n";
}

TEST_F(ServeAuthTest, TenantWorksInItsNamespaceAndIsForbiddenElsewhereAdminDoesAll) {
  StartServe("auth-kubectl");
  const std::string admin = Kubeconfig("admin"), alice = Kubeconfig("alice");
  CommandOutput pool = Kubectl(admin, "apply -f " + kPool);
  ASSERT_EQ(pool.rc, 0) << pool.out << serve_->log();

  // alice edits team-a: apply, get, watch.
  Write(dir_ / "a.yaml", PodYaml("team-a", "alice-job"));
  CommandOutput own = Kubectl(alice, "apply -f " + (dir_ / "a.yaml").string());
  EXPECT_EQ(own.rc, 0) << own.out;
  EXPECT_TRUE(Has(own.out, "pod/alice-job created")) << own.out;
  CommandOutput get = Kubectl(alice, "get pod -n team-a alice-job -o name");
  EXPECT_EQ(get.rc, 0) << get.out;
  EXPECT_EQ(get.out, "pod/alice-job\n");
  CommandOutput watch = Kubectl(alice, "get pods -n team-a --watch --request-timeout=2s");
  EXPECT_TRUE(Has(watch.out, "alice-job")) << watch.out;
  // The pool's shape is public: nodes read.
  EXPECT_EQ(Kubectl(alice, "get nodes").rc, 0);

  // ... and nothing else.
  CommandOutput other = Kubectl(alice, "get pods -n team-b");
  EXPECT_EQ(other.rc, 1);
  EXPECT_TRUE(Has(other.out,
                  "Error from server (Forbidden): pods is forbidden: User \"alice\" cannot list "
                  "resource \"pods\" in API group \"\" in the namespace \"team-b\""))
      << other.out;
  Write(dir_ / "b.yaml", PodYaml("team-b", "intruder"));
  CommandOutput write_b = Kubectl(alice, "apply -f " + (dir_ / "b.yaml").string());
  EXPECT_EQ(write_b.rc, 1);
  EXPECT_TRUE(Has(write_b.out,
                  "pods \"intruder\" is forbidden: User \"alice\" cannot get resource \"pods\" in "
                  "API group \"\" in the namespace \"team-b\""))
      << write_b.out;
  CommandOutput all = Kubectl(alice, "get pods -A");
  EXPECT_EQ(all.rc, 1);
  EXPECT_TRUE(Has(all.out,
                  "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group "
                  "\"\" at the cluster scope"))
      << all.out;
  CommandOutput node = Kubectl(alice, "label node a100-0 team=a");
  EXPECT_EQ(node.rc, 1);
  EXPECT_TRUE(Has(node.out,
                  "nodes \"a100-0\" is forbidden: User \"alice\" cannot patch resource \"nodes\" "
                  "in API group \"\" at the cluster scope"))
      << node.out;
  CommandOutput del = Kubectl(alice, "delete node a100-1");
  EXPECT_EQ(del.rc, 1);
  EXPECT_TRUE(Has(del.out, "cannot delete resource \"nodes\"")) << del.out;
  CommandOutput watch_b = Curl("/api/v1/namespaces/team-b/pods?watch=true", "alice-token");
  EXPECT_TRUE(Has(watch_b.out,
                  "cannot watch resource \\\"pods\\\" in API group \\\"\\\" in the "
                  "namespace \\\"team-b\\\""))
      << watch_b.out;
  EXPECT_TRUE(Has(watch_b.out, "\n403")) << watch_b.out;
  EXPECT_EQ(Kubectl(alice, "get namespace team-a -o name").out, "namespace/team-a\n");
  CommandOutput ns_b = Kubectl(alice, "get namespace team-b");
  EXPECT_TRUE(Has(ns_b.out,
                  "namespaces \"team-b\" is forbidden: User \"alice\" cannot get "
                  "resource \"namespaces\" in API group \"\" in the namespace \"team-b\""))
      << ns_b.out;
  // A cluster-scoped resource under her namespace's path is no way around the policy: the router
  // serves nothing there.
  CommandOutput nodes_in_ns = Curl("/api/v1/namespaces/team-a/nodes", "alice-token");
  EXPECT_TRUE(Has(nodes_in_ns.out, "\n404")) << nodes_in_ns.out;
  EXPECT_FALSE(Has(nodes_in_ns.out, "a100-0")) << nodes_in_ns.out;
  CommandOutput metrics = Curl("/metrics", "alice-token");
  EXPECT_TRUE(Has(metrics.out, "\n403")) << metrics.out;

  // bob views team-b: reads, never writes.
  const std::string bob = Kubeconfig("bob");
  EXPECT_EQ(Kubectl(bob, "get pods -n team-b").rc, 0);
  CommandOutput bob_write = Kubectl(bob, "delete pods -n team-b --all");
  EXPECT_EQ(bob_write.rc, 1) << bob_write.out;
  EXPECT_TRUE(Has(bob_write.out, "forbidden: User \"bob\" cannot delete")) << bob_write.out;
  CommandOutput discovery = Kubectl(bob, "api-resources -o name");
  EXPECT_EQ(discovery.rc, 0) << discovery.out;
  EXPECT_TRUE(Has(discovery.out, "elasticquotas.arbiter.dev")) << discovery.out;

  // The admin does everything.
  EXPECT_EQ(Kubectl(admin, "get pods -A").rc, 0);
  CommandOutput label = Kubectl(admin, "label node a100-0 team=a");
  EXPECT_EQ(label.rc, 0) << label.out;
  EXPECT_TRUE(Has(Curl("/metrics", "admin-token").out, "\n200"));
  // A node's own metrics endpoints (metrics.h): nodes/proxy, the admin's as on a real cluster.
  for (const char* path : {"cadvisor", "dcgm"}) {
    const std::string url = std::string("/api/v1/nodes/a100-0/proxy/metrics/") + path;
    CommandOutput own = Curl(url, "admin-token");
    EXPECT_TRUE(Has(own.out, "\n200")) << own.out;
    EXPECT_TRUE(Has(own.out, "# TYPE ")) << own.out;
    CommandOutput tenant = Curl(url, "alice-token");
    EXPECT_TRUE(Has(tenant.out, "\n403")) << tenant.out;
  }
  CommandOutput no_node = Curl("/api/v1/nodes/nope/proxy/metrics/cadvisor", "admin-token");
  EXPECT_TRUE(Has(no_node.out, "\"reason\":\"NotFound\"") && Has(no_node.out, "\n404"))
      << no_node.out;
  EXPECT_TRUE(Has(Curl("/api/v1/nodes/a100-0/proxy/healthz", "admin-token").out, "\n404"));

  // No token, or an unknown one: 401.
  const std::string ghost = Kubeconfig("ghost", "ghost.csv");
  CommandOutput unknown = Kubectl(ghost, "get pods -n team-a");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_TRUE(Has(unknown.out, "error: You must be logged in to the server (Unauthorized)"))
      << unknown.out;
  CommandOutput anonymous = Curl("/api/v1/namespaces/team-a/pods", "");
  EXPECT_TRUE(Has(anonymous.out, "\"reason\":\"Unauthorized\"")) << anonymous.out;
  EXPECT_TRUE(Has(anonymous.out, "\n401")) << anonymous.out;
  EXPECT_TRUE(Has(Curl("/healthz", "").out, "ok\n200"));  // probes stay open
  EXPECT_EQ(serve_->Stop(), 0) << serve_->log();
}

TEST_F(ServeAuthTest, TheDashboardTakesTheSameTokenFile) {
  StartServe("auth-dashboard");
  ASSERT_EQ(Kubectl(Kubeconfig("admin"), "apply -f " + kPool).rc, 0);
  CommandOutput page = Curl("/ui/", "");
  EXPECT_TRUE(Has(page.out, "<title>Arbiter dashboard</title>")) << page.out;
  EXPECT_TRUE(Has(Curl("/ui/api/tenants", "").out, "\n401"));
  CommandOutput bob = Curl("/ui/api/tenants", "bob-token");
  EXPECT_TRUE(Has(bob.out, "\n200")) << bob.out;
  EXPECT_TRUE(Has(bob.out, "\"namespace\":\"team-b\"")) << bob.out;
  EXPECT_FALSE(Has(bob.out, "\"namespace\":\"team-a\"")) << bob.out;
  // The page's live updates watch pods through the API with the same token.
  EXPECT_TRUE(
      Has(Curl("/api/v1/namespaces/team-b/pods?watch=true&timeoutSeconds=1", "bob-token").out,
          "\n200"));
  EXPECT_EQ(serve_->Stop(), 0) << serve_->log();
}

// Refusals come before the daemon opens its data directory.
TEST(ServeAuthRefusals, BadTlsFilesAndOpenNonLoopbackAddressesAreRefused) {
  const auto dir = ScratchDir("auth-refusals");
  MakeTestPki(dir);
  Write(dir / "tokens.csv", kTokens);
  CommandOutput other_key =
      RunCommand("openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 -out " +
                 (dir / "other.key").string() + " 2>&1");
  ASSERT_EQ(other_key.rc, 0) << other_key.out;
  const std::string data = (dir / "data").string();
  auto serve = [&](const std::string& args) {
    return RunCommand(kArbiter + " serve --data " + data + " " + args + " 2>&1 </dev/null");
  };
  const std::string cert = " --tls-cert-file " + (dir / "server.pem").string();
  CommandOutput mismatch = serve("--listen 127.0.0.1:0" + cert + " --tls-private-key-file " +
                                 (dir / "other.key").string());
  EXPECT_EQ(mismatch.rc, 1);
  EXPECT_TRUE(Has(mismatch.out, "other.key' does not match the certificate in --tls-cert-file"))
      << mismatch.out;
  CommandOutput missing =
      serve("--listen 127.0.0.1:0 --tls-cert-file " + (dir / "absent.pem").string() +
            " --tls-private-key-file " + (dir / "server.key").string());
  EXPECT_EQ(missing.rc, 1);
  EXPECT_TRUE(
      Has(missing.out, "--tls-cert-file: " + (dir / "absent.pem").string() + ": no such file"))
      << missing.out;
  CommandOutput not_pem =
      serve("--listen 127.0.0.1:0 --tls-cert-file " + (dir / "tokens.csv").string() +
            " --tls-private-key-file " + (dir / "server.key").string());
  EXPECT_EQ(not_pem.rc, 1);
  EXPECT_TRUE(Has(not_pem.out, "holds no PEM certificate")) << not_pem.out;
  CommandOutput half = serve("--listen 127.0.0.1:0" + cert);
  EXPECT_EQ(half.rc, 2);
  EXPECT_TRUE(Has(half.out, "--tls-cert-file and --tls-private-key-file go together")) << half.out;
  CommandOutput open = serve("--listen 0.0.0.0:0");
  EXPECT_EQ(open.rc, 2);
  EXPECT_TRUE(Has(open.out, "'0.0.0.0' is not a loopback address, and without --token-file"))
      << open.out;
  CommandOutput clear = serve("--listen 0.0.0.0:0 --token-file " + (dir / "tokens.csv").string());
  EXPECT_EQ(clear.rc, 2);
  EXPECT_TRUE(Has(clear.out, "needs --tls-cert-file and --tls-private-key-file")) << clear.out;
  EXPECT_FALSE(std::filesystem::exists(data));
}

}  // namespace serve_auth_test
}  // namespace arbiter::testing
