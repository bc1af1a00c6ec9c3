// pods/eviction and PodDisruptionBudgets under the real kubectl 1.32 (`kubectl drain` evicts
// through the eviction API and retries on 429) and over plain HTTP; ?dryRun=All
// (`kubectl apply --dry-run=server`); metadata.generateName (`kubectl create`).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_eviction_test {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

const char* kNode =
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: gpu-0\nstatus:\n  capacity: {cpu: \"32\", "
    "memory: 256Gi, nvidia.com/gpu: \"8\", pods: \"110\"}\n";

std::string PodYaml(const std::string& name, const std::string& app) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  labels: {app: " + app +
         "}\n  annotations: {arbiter.dev/shutdown-time: 1s}\nspec:\n  containers:\n  - name: "
         "main\n    image: busybox\n    resources:\n      requests: {cpu: \"1\", nvidia.com/gpu: "
         "\"1\"}\n      limits: {nvidia.com/gpu: \"1\"}\n";
}

const char* kPdb =
    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep-one, namespace: "
    "default}\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels: {app: a}\n";

// A node, two running pods app=a and a budget that keeps one of them.
void StartBudgetedPods(ServeProcess& s) {
  Write(s.dir() / "setup.yaml", std::string(kNode) + "---\n" + PodYaml("a-1", "a") + "---\n" +
                                    PodYaml("a-2", "a") + "---\n" + kPdb);
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "setup.yaml").string());
  ASSERT_EQ(a.rc, 0) << a.out;
  CommandOutput w = s.Kubectl("wait --for=condition=Ready pod -l app=a --timeout=30s");
  ASSERT_EQ(w.rc, 0) << w.out;
}

TEST(ServeEvictionTest, GetPdbShowsAllowedDisruptionsAndDrainEvictsOnlyWhatTheBudgetAllows) {
  ServeProcess s(ScratchDir("evict-drain"));
  ASSERT_TRUE(s.Start()) << s.log();
  StartBudgetedPods(s);
  CommandOutput get = s.Kubectl("get pdb");
  ASSERT_EQ(get.rc, 0) << get.out;
  EXPECT_NE(get.out.find("ALLOWED DISRUPTIONS"), std::string::npos) << get.out;
  EXPECT_TRUE(std::regex_search(get.out, std::regex(R"(keep-one\s+1\s+N/A\s+1\s)"))) << get.out;
  // drain uses the eviction API (no controller: --force); one pod may go, the other is refused
  // with 429 until the timeout.
  CommandOutput drain =
      s.Kubectl("drain gpu-0 --pod-selector app=a --force --disable-eviction=false --timeout=8s");
  EXPECT_NE(drain.rc, 0) << drain.out;
  EXPECT_NE(drain.out.find("Cannot evict pod as it would violate the pod's disruption budget."),
            std::string::npos)
      << drain.out;
  // The evicted pod exits (shutdown-time 1s) and goes; the other one stays, healthy.
  CommandOutput st = s.KubectlUntil(
      "get pdb keep-one -o jsonpath='{.status.expectedPods}/{.status.currentHealthy}/"
      "{.status.desiredHealthy}/{.status.disruptionsAllowed}'",
      "1/1/1/0");
  EXPECT_EQ(st.out, "1/1/1/0") << st.out;
  CommandOutput left = s.Kubectl("get pods -l app=a -o name");
  EXPECT_EQ(std::count(left.out.begin(), left.out.end(), '\n'), 1) << left.out;
  EXPECT_EQ(s.Stop(), 0);
}

TEST(ServeEvictionTest,
     EvictionOverHttpIs429WithTheDisruptionBudgetCauseOr201WithDisruptionTarget) {
  ServeProcess s(ScratchDir("evict-http"));
  ASSERT_TRUE(s.Start()) << s.log();
  StartBudgetedPods(s);
  auto evict = [&](const std::string& pod) {
    Write(s.dir() / "eviction.json",
          "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"" + pod +
              "\",\"namespace\":\"default\"},\"deleteOptions\":{\"gracePeriodSeconds\":30}}");
    return RunCommand(
        "curl -s -w '\\n%{http_code}' -X POST -H 'Content-Type: application/json' "
        "--data @" +
        (s.dir() / "eviction.json").string() + " " + s.url() + "/api/v1/namespaces/default/pods/" +
        pod + "/eviction");
  };
  CommandOutput first = evict("a-1");
  EXPECT_NE(first.out.find("\n201"), std::string::npos) << first.out;
  CommandOutput dt = s.Kubectl(
      "get pod a-1 -o jsonpath='{.status.conditions[?(@.type==\"DisruptionTarget\")].reason}'");
  EXPECT_EQ(dt.out, "EvictionByEvictionAPI") << dt.out;
  CommandOutput second = evict("a-2");
  EXPECT_NE(second.out.find("\n429"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("\"reason\":\"TooManyRequests\""), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("{\"message\":\"The disruption budget keep-one needs 1 healthy pods "
                            "and has 1 currently\",\"reason\":\"DisruptionBudget\"}"),
            std::string::npos)
      << second.out;
  CommandOutput still = s.Kubectl("get pod a-2 -o jsonpath='{.metadata.deletionTimestamp}'");
  EXPECT_EQ(still.rc, 0) << still.out;
  EXPECT_EQ(still.out, "") << still.out;
  EXPECT_EQ(s.Stop(), 0);
}

}  // namespace serve_eviction_test
}  // namespace arbiter::testing
