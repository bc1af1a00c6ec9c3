// Regression (issue 27): `kubectl auth can-i` (SelfSubjectAccessReview) and `kubectl auth whoami`
// (SelfSubjectReview) against the real `arbiter serve --token-file`, answered from the policy its
// authorizer applies to every request; and `kubectl logs` / `kubectl exec` on a pod answer that
// pods are virtual in this mode instead of NotFound. Real kubectl 1.32, real daemon.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <tuple>

#include "apps/test_pki.h"
#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_self_review_test {

const std::string kArbiter = ARBITER_BINARY;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The value of `attribute` in `kubectl auth whoami`'s table ("" when absent).
std::string Field(const std::string& table, const std::string& attribute) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(attribute + " ", 0) == 0) {
      const size_t v = line.find_first_not_of(' ', attribute.size());
      return v == std::string::npos ? "" : line.substr(v);
    }
  return "";
}

class ServeSelfReviewTest : public ::testing::Test {
 protected:
  void StartServe(const std::string& name, bool tokens) {
    dir_ = ScratchDir(name);
    std::ofstream(dir_ / "tokens.csv") << "admin-token,admin,1,\"system:masters\"\n"
                                          "alice-token,alice,2,\"arbiter:editors:team-a\"\n"
                                          "bob-token,bob,3,\"arbiter:viewers:team-b\"\n";
    std::vector<std::string> extra;
    if (tokens) {
      MakeTestPki(dir_);
      extra = {"--token-file",           (dir_ / "tokens.csv").string(),
               "--tls-cert-file",        (dir_ / "server.pem").string(),
               "--tls-private-key-file", (dir_ / "server.key").string()};
    }
    serve_ = std::make_unique<ServeProcess>(dir_, extra);
    ASSERT_TRUE(serve_->Start()) << serve_->log();
  }
  std::string Kubeconfig(const std::string& user) {
    const std::string out = (dir_ / (user + ".kubeconfig")).string();
    CommandOutput r = RunCommand(
        kArbiter + " kubeconfig --server https://127.0.0.1:" + std::to_string(serve_->port()) +
        " --user " + user + " --token-file " + (dir_ / "tokens.csv").string() +
        " --certificate-authority " + (dir_ / "ca.pem").string() + " > " + out + " 2>&1");
    EXPECT_EQ(r.rc, 0) << ReadWhole(out);
    return out;
  }
  CommandOutput Kubectl(const std::string& kubeconfig, const std::string& args) const {
    return RunCommand("kubectl --kubeconfig " + kubeconfig + " --cache-dir " +
                      (dir_ / "kcache").string() + " " + args + " 2>&1");
  }
  std::filesystem::path dir_;
  std::unique_ptr<ServeProcess> serve_;
};

TEST_F(ServeSelfReviewTest, CanIAndWhoAmIAnswerFromThePolicy) {
  StartServe("self-review", true);
  const std::string admin = Kubeconfig("admin"), alice = Kubeconfig("alice"),
                    bob = Kubeconfig("bob");
  ASSERT_EQ(Kubectl(admin, "create namespace team-a").rc, 0);

  CommandOutput who = Kubectl(alice, "auth whoami");
  EXPECT_EQ(who.rc, 0) << who.out;
  EXPECT_EQ(Field(who.out, "Username"), "alice") << who.out;
  EXPECT_EQ(Field(who.out, "UID"), "2") << who.out;
  EXPECT_EQ(Field(who.out, "Groups"), "[arbiter:editors:team-a system:authenticated]") << who.out;
  CommandOutput who_json = Kubectl(bob, "auth whoami -o jsonpath='{.status.userInfo.username}'");
  EXPECT_EQ(who_json.out, "bob") << who_json.out;

  // alice edits team-a: yes there, no elsewhere (exit 1), with the authorizer's sentence.
  CommandOutput yes = Kubectl(alice, "auth can-i create pods -n team-a");
  EXPECT_EQ(yes.rc, 0) << yes.out;
  EXPECT_EQ(yes.out, "yes\n");
  CommandOutput no = Kubectl(alice, "auth can-i list pods -n team-b");
  EXPECT_EQ(no.rc, 1) << no.out;
  EXPECT_TRUE(Has(no.out,
                  "no - User \"alice\" cannot list resource \"pods\" in API group \"\" "
                  "in the namespace \"team-b\""))
      << no.out;
  EXPECT_EQ(Kubectl(alice, "auth can-i get resourcequotas -n team-a").out, "yes\n");
  EXPECT_EQ(Kubectl(alice, "auth can-i create resourcequotas -n team-a").rc, 1);
  EXPECT_EQ(Kubectl(alice, "auth can-i create pods/eviction -n team-a").out, "yes\n");
  EXPECT_EQ(Kubectl(alice, "auth can-i list pods -A").rc, 1);
  // kubectl asks in the context's namespace ("default") and warns; nodes have none.
  EXPECT_EQ(Kubectl(alice, "auth can-i get nodes").rc, 0);
  EXPECT_EQ(Kubectl(alice, "auth can-i delete nodes").rc, 1);
  EXPECT_EQ(Kubectl(alice, "auth can-i get /metrics").rc, 1);
  EXPECT_EQ(Kubectl(alice, "auth can-i get /version").out, "yes\n");
  // bob views team-b: reads, never writes.
  EXPECT_EQ(Kubectl(bob, "auth can-i watch pods -n team-b").out, "yes\n");
  EXPECT_EQ(Kubectl(bob, "auth can-i delete pods -n team-b").rc, 1);
  EXPECT_EQ(Kubectl(admin, "auth can-i '*' '*' -A").out, "yes\n");

  // The answers are what the requests themselves get.
  EXPECT_EQ(Kubectl(alice, "get pods -n team-a").rc, 0);
  EXPECT_EQ(Kubectl(alice, "get pods -n team-b").rc, 1);
  EXPECT_EQ(Kubectl(bob, "delete pod x -n team-b").rc, 1);
}

TEST_F(ServeSelfReviewTest, WithoutTokensEveryoneIsAnAdmin) {
  StartServe("self-review-open", false);
  CommandOutput who = serve_->Kubectl("auth whoami");
  EXPECT_EQ(who.rc, 0) << who.out;
  EXPECT_TRUE(Has(who.out, "system:unsecured")) << who.out;
  CommandOutput nodes = serve_->Kubectl("auth can-i delete nodes");
  EXPECT_EQ(nodes.rc, 0) << nodes.out;
  EXPECT_TRUE(Has(nodes.out, "yes\n")) << nodes.out;
}

TEST_F(ServeSelfReviewTest, LogsAndExecSayPodsAreVirtual) {
  StartServe("virtual-pods", false);
  std::ofstream(dir_ / "pod.yaml")
      << "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n"
         "  containers:\n  - name: main\n    image: busybox\n";
  ASSERT_EQ(serve_->Kubectl("apply -f " + (dir_ / "pod.yaml").string()).rc, 0);
  const std::string virtual_pods =
      "Error from server (BadRequest): pods are virtual in this mode: pod default/web has ";
  CommandOutput logs = serve_->Kubectl("logs web");
  EXPECT_EQ(logs.rc, 1) << logs.out;
  EXPECT_TRUE(Has(logs.out, virtual_pods + "no container output to read")) << logs.out;
  EXPECT_FALSE(Has(logs.out, "NotFound")) << logs.out;
  CommandOutput exec = serve_->Kubectl("exec web -- echo hi");
  EXPECT_NE(exec.rc, 0) << exec.out;
  EXPECT_TRUE(Has(exec.out,
                  "pods are virtual in this mode: pod default/web has no container to "
                  "run a command in"))
      << exec.out;
  // A pod that does not exist is still NotFound.
  CommandOutput missing = serve_->Kubectl("logs nothing-here");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_TRUE(Has(missing.out, "pods \"nothing-here\" not found")) << missing.out;
}

// The example pool's recipe (docs/scheduling.md): a quota of 0 pods scoped to PriorityClass
// high-priority keeps that class out of team-b, and the built-in system-node-critical and
// system-cluster-critical out of every tenant (they were usable by any); other classes there,
// and high-priority in team-a, are not affected. A bad scopeSelector is refused with
// kube-apiserver's words.
TEST_F(ServeSelfReviewTest, PriorityClassQuotaKeepsAHighClassOutOfANamespace) {
  StartServe("priority-quota", false);
  const std::string pool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";
  ASSERT_EQ(serve_->Kubectl("apply -f " + pool).rc, 0);
  auto pod = [&](const std::string& ns, const std::string& name, const std::string& cls) {
    std::ofstream(dir_ / (name + ".yaml"))
        << "apiVersion: v1\nkind: Pod\nmetadata: {name: " << name << ", namespace: " << ns
        << "}\nspec:\n  priorityClassName: " << cls
        << "\n  containers:\n  - name: main\n    image: busybox\n    resources:\n"
           "      requests: {cpu: \"1\", memory: 1Gi}\n      limits: {cpu: \"1\", memory: 1Gi}\n";
    return serve_->Kubectl("apply -f " + (dir_ / (name + ".yaml")).string());
  };
  // Refused at create with kube-apiserver's 403 and words, nothing stored (they used to be
  // stored Failed, reason Rejected).
  auto refused = [&](const std::string& ns, const std::string& name, const std::string& cls,
                     const std::string& quota) {
    CommandOutput out = pod(ns, name, cls);
    EXPECT_EQ(out.rc, 1) << name << ": " << out.out;
    EXPECT_TRUE(Has(out.out, "Error from server (Forbidden)")) << name << ": " << out.out;
    EXPECT_TRUE(Has(out.out, "pods \"" + name + "\" is forbidden: exceeded quota: " + quota +
                                 ", requested: pods=1, used: pods=0, limited: pods=0"))
        << name << ": " << out.out;
    CommandOutput get = serve_->Kubectl("get pod " + name + " -n " + ns);
    EXPECT_TRUE(Has(get.out, "NotFound")) << name << ": " << get.out;
  };
  refused("team-b", "sneaky", "high-priority", "no-high-priority");
  ASSERT_EQ(pod("team-b", "honest", "training").rc, 0);
  ASSERT_EQ(pod("team-a", "allowed", "high-priority").rc, 0);
  // Kubernetes' built-in system-* classes, which any pod may name, are kept out of every tenant
  // the same way (the pool's quotas no-system-priority and no-high-priority).
  refused("team-a", "critical-a", "system-node-critical", "no-system-priority");
  refused("team-c", "critical-c", "system-cluster-critical", "no-high-priority");
  for (const auto& [ns, name] :
       {std::pair<std::string, std::string>{"team-b", "honest"}, {"team-a", "allowed"}}) {
    CommandOutput ok =
        serve_->Kubectl("get pod " + name + " -n " + ns + " -o jsonpath='{.status.message}'");
    EXPECT_FALSE(Has(ok.out, "no-high-priority")) << name << ": " << ok.out;
  }
  std::ofstream(dir_ / "bad.yaml")
      << "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: bad, namespace: team-b}\n"
         "spec:\n  hard: {pods: 0}\n  scopeSelector:\n    matchExpressions:\n"
         "    - {scopeName: PriorityClass, operator: In}\n";
  CommandOutput bad = serve_->Kubectl("apply -f " + (dir_ / "bad.yaml").string());
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(Has(bad.out,
                  "must be at least one value when `operator` is 'In' or 'NotIn' for "
                  "scope selector"))
      << bad.out;
}

}  // namespace serve_self_review_test
}  // namespace arbiter::testing
