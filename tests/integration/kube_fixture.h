// Helpers of the Kube* tests that run `arbiter scheduler` on the real test cluster (CTest
// fixture "kube"; docs/kubernetes.md): kubectl, polling, the scheduler as a child process, a
// KWOK node in a test pool. Each test has its own scheduler name, nodes (--node-selector) and
// namespace, so the tests share the cluster.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "apps/run_command.h"
#include "integration/services.h"

namespace kube_fixture {

using arbiter::testing::Env;
using arbiter::testing::RunCommand;

inline std::string Dir() { return Env("ARBITER_KUBE_DIR", "/tmp/arbiter-ci/kube"); }
inline std::string Kubeconfig() { return Dir() + "/kubeconfig"; }
inline std::string KubectlCmd() {
  return Dir() + "/bin/kubectl --kubeconfig " + Kubeconfig() + " ";
}

inline arbiter::testing::CommandOutput Kubectl(const std::string& args) {
  return RunCommand(KubectlCmd() + args + " 2>&1");
}

// The value at `jsonpath` of `kubectl get what`; "" when kubectl fails, whose message is printed
// to the test's output (once while it stays the same): a value that never comes then shows
// whether the object lacked it or kubectl could not read it.
inline std::string Get(const std::string& what, const std::string& jsonpath) {
  static thread_local std::string last_error;
  const auto scratch = std::filesystem::temp_directory_path() /
                       ("arbiter-kubectl-" + std::to_string(getpid()) + "-" +
                        std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())));
  auto r = arbiter::testing::RunCommandSplit(
      KubectlCmd() + "get " + what + " -o jsonpath='" + jsonpath + "'", scratch);
  if (r.rc != 0) {
    std::string e = r.err.substr(0, r.err.find('\n'));
    if (e != last_error)
      std::cerr << "kubectl get " << what << " (exit " << r.rc << "): " << e << std::endl;
    last_error = e;
    return "";
  }
  last_error.clear();
  std::string s = r.out;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Polls (every 200 ms) until `ok(value)` or `seconds` of wall time pass; returns the last value,
// and says in the test's output how long a wait that timed out took and what it last saw.
template <typename F>
std::string Until(const std::string& what, const std::string& jsonpath, F ok, int seconds = 120) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  std::string got = Get(what, jsonpath);
  int polls = 1;
  while (!ok(got) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    got = Get(what, jsonpath);
    ++polls;
  }
  if (!ok(got))
    std::cerr << "waited " << seconds << " s (" << polls << " polls) for " << what << " "
              << jsonpath << "; last value: \"" << got << "\"" << std::endl;
  return got;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `arbiter scheduler` as a child process (its own process group), its log in a file; stopped
// (SIGTERM, or the signal given) on Stop() or destruction. `pool`: the nodes labelled
// arbiter.dev/test-pool=POOL (--node-selector; empty: every node of the cluster). `policy`: a
// --policy file (empty: none); `extra`: more flags.
class Scheduler {
 public:
  Scheduler(const std::string& name, const std::string& pool, const std::string& log,
            const std::string& policy = "", const std::string& extra = "") {
    const std::string cmd = arbiter::testing::Arbiter() + " scheduler --kubeconfig " +
                            Kubeconfig() + " --scheduler-name " + name +
                            (pool.empty() ? "" : " --node-selector arbiter.dev/test-pool=" + pool) +
                            (policy.empty() ? "" : " --policy " + policy) + " " + extra + " >> " +
                            log + " 2>&1";
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Scheduler() { Stop(); }
  void Stop(int sig = SIGTERM) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// Arbiter's CRDs, admission policies and RBAC from deploy/, as a user installs them, the CRDs
// established before use. Not deploy/scheduler.yaml's Deployment: on KWOK nodes its two replicas
// "run" (kube-scheduler places them on any Ready node) and their requests, 500m CPU each, would
// sit as foreign pods on some test's pool, changing where that test's pods fit (the acceptance
// pool's BestFit choice for train-a-1 turns on one CPU of ka-h100-0: a CI failure). The
// Deployment is still checked by a server-side dry run.
inline void InstallDeploy() {
  const std::string dir = arbiter::testing::SourceDir() + "/deploy/";
  auto a = Kubectl("apply -f " + dir + " -l 'app.kubernetes.io/name!=arbiter-scheduler'");
  ASSERT_EQ(a.rc, 0) << a.out;
  auto gone = Kubectl("delete deployment arbiter-scheduler -n arbiter-system --ignore-not-found");
  ASSERT_EQ(gone.rc, 0) << gone.out;  // left by an older run of the tests on this cluster
  auto dry = Kubectl("apply --dry-run=server -f " + dir + "scheduler.yaml");
  ASSERT_EQ(dry.rc, 0) << dry.out;
  auto w = Kubectl(
      "wait --for=condition=Established --timeout=60s crd/elasticquotas.arbiter.dev "
      "crd/poolpolicies.arbiter.dev crd/qoses.arbiter.dev crd/pricebooks.arbiter.dev");
  ASSERT_EQ(w.rc, 0) << w.out;
}

class KubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ready = Kubectl("get --raw=/readyz");
    ASSERT_EQ(ready.rc, 0) << "the test cluster is not running (ARBITER_KUBE_DIR " << Dir()
                           << "; scripts/services/kube.sh start DIR): " << ready.out;
    ASSERT_NO_FATAL_FAILURE(InstallDeploy());
  }
  // A scratch file for a scheduler's log.
  std::string LogFile(const std::string& name) {
    return (arbiter::testing::Scratch(name) / "scheduler.log").string();
  }
  void Apply(const std::string& yaml) {
    const std::string file = (arbiter::testing::Scratch("kube-apply") / "objects.yaml").string();
    std::ofstream(file) << yaml;
    auto a = Kubectl("apply -f " + file);
    ASSERT_EQ(a.rc, 0) << a.out;
  }
  // No namespace `ns` nor node `node` left by an earlier run (a test deletes them at its end
  // without waiting; the next repetition would find the namespace terminating).
  void Fresh(const std::string& ns, const std::string& node) {
    auto n = Kubectl("delete namespace " + ns + " --ignore-not-found --timeout=120s");
    ASSERT_EQ(n.rc, 0) << n.out;
    auto d = Kubectl("delete node " + node + " --ignore-not-found --timeout=60s");
    ASSERT_EQ(d.rc, 0) << d.out;
  }
  // A KWOK node of 8 GPUs in the test pool `pool`, ready for pods (the node lifecycle
  // controller has lifted its not-ready taint).
  void Node(const std::string& name, const std::string& pool) {
    ASSERT_NO_FATAL_FAILURE(Apply(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
        "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {arbiter.dev/test-pool: " + pool +
        "}\nstatus:\n  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
        "\"8\"}\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
        "\"8\"}\n"));
    ASSERT_EQ(
        Until("node " + name, "{.spec.taints}", [](const std::string& v) { return v.empty(); }),
        "");
  }
};

inline std::string Resources(int gpus) {
  const std::string g = std::to_string(gpus);
  return "    resources:\n      requests: {cpu: \"1\", memory: 1Gi, nvidia.com/gpu: " + g +
         "}\n      limits: {nvidia.com/gpu: " + g + "}\n";
}

// A pod that runs until deleted.
inline std::string PodYaml(const std::string& ns, const std::string& name,
                           const std::string& scheduler, int gpus,
                           const std::string& priority_class = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns +
         "}\nspec:\n  schedulerName: " + scheduler +
         (priority_class.empty() ? "" : "\n  priorityClassName: " + priority_class) +
         "\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: "
         "busybox\n" +
         Resources(gpus);
}

}  // namespace kube_fixture
