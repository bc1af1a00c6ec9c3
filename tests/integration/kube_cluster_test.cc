// The test cluster itself (scripts/services/kube.sh, CTest fixture "kube"; docs/kubernetes.md):
// kube-apiserver, kube-controller-manager, kube-scheduler and etcd built from upstream source, KWOK
// as the kubelet. What the Arbiter tests on it rely on:
//  - a Node applied with kubectl (annotation kwok.x-k8s.io/node=fake) becomes Ready and keeps
//    the capacity it was applied with;
//  - a Pod scheduled by kube-scheduler, or bound by spec.nodeName, goes Running on it and then
//    Succeeded after its arbiter.dev/duration; one without the annotation keeps running, and is
//    removed when deleted;
//  - a batch/v1 Job gets its pods from the controller manager and completes; deleting it deletes
//    its pods (garbage collection).
// The cluster must be running: without it these tests fail (never skip).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "apps/run_command.h"
#include "integration/services.h"

namespace {

using arbiter::testing::Env;
using arbiter::testing::RunCommand;

std::string KubeDir() { return Env("ARBITER_KUBE_DIR", "/tmp/arbiter-ci/kube"); }

// kubectl (the cluster's own release, DIR/bin) against the fixture's cluster, stderr included.
arbiter::testing::CommandOutput Kubectl(const std::string& args) {
  return RunCommand(KubeDir() + "/bin/kubectl --kubeconfig " + KubeDir() + "/kubeconfig " + args +
                    " 2>&1");
}

// Applies a manifest given as text.
arbiter::testing::CommandOutput Apply(const std::string& yaml) {
  return RunCommand("printf '%s' '" + yaml + "' | " + KubeDir() + "/bin/kubectl --kubeconfig " +
                    KubeDir() + "/kubeconfig apply -f - 2>&1");
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A field of an object (kubectl's JSONPath), standard error left out.
std::string Get(const std::string& what, const std::string& jsonpath) {
  return Trim(RunCommand(KubeDir() + "/bin/kubectl --kubeconfig " + KubeDir() + "/kubeconfig get " +
                         what + " -o jsonpath='" + jsonpath + "' 2>/dev/null")
                  .out);
}

// Polls Get(what, jsonpath) every 0.2 s until it is `want` or `seconds` pass; returns the last.
std::string Eventually(const std::string& what, const std::string& jsonpath,
                       const std::string& want, int seconds = 60) {
  std::string got = Get(what, jsonpath);
  for (int i = 0; i < seconds * 5 && got != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    got = Get(what, jsonpath);
  }
  return got;
}

// A KWOK node: 32 CPUs, 256 GiB, 8 GPUs.
std::string NodeYaml(const std::string& name) {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  annotations:\n    kwok.x-k8s.io/node: fake\n  labels:\n    type: kwok\n"
         "    kubernetes.io/hostname: " +
         name +
         "\nstatus:\n  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
         "\"8\"}\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
         "\"8\"}\n";
}

// A pod for `node`: bound directly (spec.nodeName) or placed by kube-scheduler (a node selector).
std::string PodYaml(const std::string& name, const std::string& node, bool bind_directly,
                    const std::string& duration) {
  std::string y = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n";
  if (!duration.empty()) y += "  annotations:\n    arbiter.dev/duration: " + duration + "\n";
  y += "spec:\n  restartPolicy: Never\n";
  y += bind_directly ? "  nodeName: " + node + "\n"
                     : "  nodeSelector:\n    kubernetes.io/hostname: " + node + "\n";
  y += "  containers:\n  - name: main\n    image: busybox\n    resources:\n      requests: {cpu: "
       "\"2\", memory: 1Gi}\n";
  return y;
}

class KubeCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ready = Kubectl("get --raw=/readyz");
    ASSERT_EQ(ready.rc, 0) << "the test cluster is not running (KUBE DIR " << KubeDir()
                           << "; start it with scripts/services/kube.sh start DIR): " << ready.out;
  }

  // Applies a KWOK node and waits until it is Ready.
  void ReadyNode(const std::string& name) {
    auto a = Apply(NodeYaml(name));
    ASSERT_EQ(a.rc, 0) << a.out;
    auto w = Kubectl("wait --for=condition=Ready node/" + name + " --timeout=60s");
    ASSERT_EQ(w.rc, 0) << w.out << Kubectl("get node " + name + " -o yaml").out;
  }

  // Waits until the pod's phase is `phase`.
  void WaitPhase(const std::string& pod, const std::string& phase) {
    auto w = Kubectl("wait --for=jsonpath='{.status.phase}'=" + phase + " pod/" + pod +
                     " --timeout=90s");
    ASSERT_EQ(w.rc, 0) << pod << " never " << phase << ": " << w.out
                       << Kubectl("get pod " + pod + " -o yaml").out;
  }
};

TEST_F(KubeCluster, NodeBecomesReadyWithTheCapacityItWasAppliedWith) {
  ASSERT_NO_FATAL_FAILURE(ReadyNode("kc-node-ready"));
  EXPECT_EQ(Get("node kc-node-ready", "{.status.allocatable.cpu}"), "32");
  EXPECT_EQ(Get("node kc-node-ready", "{.status.allocatable.nvidia\\.com/gpu}"), "8");
  EXPECT_EQ(Get("node kc-node-ready", "{.status.capacity.memory}"), "256Gi");
  // The controller manager's node lifecycle controller sees it as healthy: it lifts the
  // not-ready taint it put on the new node.
  EXPECT_EQ(Eventually("node kc-node-ready", "{.spec.taints}", ""), "");
}

TEST_F(KubeCluster, ScheduledPodRunsThenSucceedsAfterItsDuration) {
  ASSERT_NO_FATAL_FAILURE(ReadyNode("kc-node-sched"));
  auto a = Apply(PodYaml("kc-sched", "kc-node-sched", false, "5s"));
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_NO_FATAL_FAILURE(WaitPhase("kc-sched", "Running"));
  EXPECT_EQ(Get("pod kc-sched", "{.spec.nodeName}"), "kc-node-sched");  // kube-scheduler bound it
  EXPECT_EQ(Get("pod kc-sched", "{.status.containerStatuses[0].state.running.startedAt}").empty(),
            false);
  ASSERT_NO_FATAL_FAILURE(WaitPhase("kc-sched", "Succeeded"));
  EXPECT_EQ(Get("pod kc-sched", "{.status.containerStatuses[0].state.terminated.reason}"),
            "Completed");
  EXPECT_EQ(Get("pod kc-sched", "{.status.containerStatuses[0].state.terminated.exitCode}"), "0");
  Kubectl("delete pod kc-sched --wait=false");
}

TEST_F(KubeCluster, BoundPodRunsThenSucceeds) {
  ASSERT_NO_FATAL_FAILURE(ReadyNode("kc-node-bound"));
  auto a = Apply(PodYaml("kc-bound", "kc-node-bound", true, "2s"));
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_NO_FATAL_FAILURE(WaitPhase("kc-bound", "Succeeded"));
  EXPECT_EQ(Get("pod kc-bound", "{.status.conditions[?(@.type==\"Ready\")].reason}"),
            "PodCompleted");
  Kubectl("delete pod kc-bound --wait=false");
}

TEST_F(KubeCluster, PodWithoutDurationRunsUntilDeleted) {
  ASSERT_NO_FATAL_FAILURE(ReadyNode("kc-node-forever"));
  auto a = Apply(PodYaml("kc-forever", "kc-node-forever", true, ""));
  ASSERT_EQ(a.rc, 0) << a.out;
  ASSERT_NO_FATAL_FAILURE(WaitPhase("kc-forever", "Running"));
  EXPECT_EQ(Get("pod kc-forever", "{.status.conditions[?(@.type==\"Ready\")].status}"), "True");
  EXPECT_FALSE(Get("pod kc-forever", "{.status.podIP}").empty());
  // Deleted gracefully, it is removed (the kubelet's part, KWOK's here).
  auto d = Kubectl("delete pod kc-forever --timeout=60s");
  EXPECT_EQ(d.rc, 0) << d.out;
  EXPECT_NE(Kubectl("get pod kc-forever").out.find("NotFound"), std::string::npos);
}

TEST_F(KubeCluster, JobMakesPodsThatCompleteAndGarbageCollectionDeletesThem) {
  ASSERT_NO_FATAL_FAILURE(ReadyNode("kc-node-job"));
  auto a = Apply(
      "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: kc-job\nspec:\n  completions: 3\n"
      "  parallelism: 3\n  template:\n    metadata:\n      labels: {app: kc-job}\n"
      "      annotations:\n        arbiter.dev/duration: 2s\n    spec:\n"
      "      restartPolicy: Never\n      nodeSelector:\n        kubernetes.io/hostname: "
      "kc-node-job\n      containers:\n      - name: main\n        image: busybox\n");
  ASSERT_EQ(a.rc, 0) << a.out;
  auto w = Kubectl("wait --for=condition=Complete job/kc-job --timeout=120s");
  ASSERT_EQ(w.rc, 0) << w.out << Kubectl("get job kc-job -o yaml").out
                     << Kubectl("get pods -l app=kc-job -o wide").out;
  EXPECT_EQ(Get("job kc-job", "{.status.succeeded}"), "3");
  EXPECT_EQ(Get("pods -l app=kc-job", "{range .items[*]}{.status.phase} {end}"),
            "Succeeded Succeeded Succeeded");
  // Background deletion: the garbage collector deletes the pods the Job owned.
  auto d = Kubectl("delete job kc-job --cascade=background");
  ASSERT_EQ(d.rc, 0) << d.out;
  std::string left = "?";
  for (int i = 0; i < 300 && !left.empty(); ++i) {  // up to 60 s
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto r = RunCommand(KubeDir() + "/bin/kubectl --kubeconfig " + KubeDir() +
                        "/kubeconfig get pods -l app=kc-job -o name 2>/dev/null");
    left = r.rc == 0 ? Trim(r.out) : "(kubectl failed)";
  }
  EXPECT_EQ(left, "") << "the Job's pods were not garbage-collected";
}

}  // namespace
