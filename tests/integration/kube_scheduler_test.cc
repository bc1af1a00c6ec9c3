// `arbiter scheduler` against the real test cluster (scripts/services/kube.sh, CTest fixture
// "kube"; docs/kubernetes.md): kube-apiserver, kube-controller-manager and etcd built from
// upstream source, KWOK nodes. Arbiter's CRDs and RBAC are installed with `kubectl apply -f
// deploy/`; the scheduler runs as a process of the test. Each test has its own scheduler name,
// its own nodes (selected with --node-selector) and namespaces, so the Kube* tests share the
// cluster. Without the cluster these tests fail (never skip).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "apps/run_command.h"
#include "integration/kube_fixture.h"
#include "integration/services.h"

namespace kube_scheduler_test {

using arbiter::testing::RunCommand;
using kube_fixture::Dir;
using kube_fixture::Get;
using kube_fixture::Kubeconfig;
using kube_fixture::Kubectl;
using kube_fixture::ReadFile;
using kube_fixture::Until;
using Json = nlohmann::json;

using kube_fixture::Scheduler;

// Each test its own scheduler name, pool and namespaces on the shared cluster.
class KubeScheduler : public kube_fixture::KubeTest {};

// How many times the log says the pod was bound.
int BindsInLog(const std::string& log, const std::string& pod) {
  int n = 0;
  const std::string needle = "bound " + pod + " to ";
  for (size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1)) ++n;
  return n;
}

TEST_F(KubeScheduler, EveryPodEndsWhereArbiterSimPutsIt) {
  const std::string data = arbiter::testing::SourceDir() + "/tests/integration/data/kube/";
  // The simulation of the same pool.
  const std::string report = (arbiter::testing::Scratch("accept-sim") / "report.json").string();
  auto sim = RunCommand(arbiter::testing::Arbiter() + " sim -f " + data + "kube-policy.yaml -f " +
                        data + "pool.yaml --until 1s --report-json " + report + " 2>&1");
  ASSERT_EQ(sim.rc, 0) << sim.out;
  const Json r = Json::parse(ReadFile(report));
  struct Want {
    std::string node, message, reason;  // pending: the message and reason code sim reports
  };
  std::map<std::string, Want> want;
  auto str = [](const Json& v) { return v.is_string() ? v.get<std::string>() : std::string(); };
  for (const auto& w : r["workloads"]) {
    const bool pending = str(w["phase"]) == "Pending";
    want[str(w["name"])] = {str(w["node"]), pending ? str(w["message"]) : "",
                            pending ? str(w["lastPendingReason"]["reason"]) : ""};
  }
  ASSERT_EQ(want.size(), 11u);
  int pending = 0, over_quota = 0;
  for (const auto& [k, v] : want) {
    pending += v.node.empty();
    over_quota += v.reason == "QuotaExceeded";
  }
  ASSERT_GE(pending, 2);     // the pool shows reasons, not only bindings
  ASSERT_GE(over_quota, 1);  // among them a pod pending for quota

  const std::string log = LogFile("accept");
  // What an earlier run left (it deletes without waiting): a namespace still terminating would
  // refuse the pods.
  auto gone = Kubectl(
      "delete namespace ka-team-a ka-team-b ka-team-c --ignore-not-found "
      "--timeout=120s");
  ASSERT_EQ(gone.rc, 0) << gone.out;
  // The pool first (everything without an app label: not the pods), then the pods once the
  // controller manager has lifted the new nodes' not-ready taint (the engine honours taints, as
  // kube-scheduler does: a pod arriving before would not go to a tainted node).
  auto pool = Kubectl("apply -f " + data + "pool.yaml -l '!app'");
  ASSERT_EQ(pool.rc, 0) << pool.out;
  for (const char* n : {"ka-a100-0", "ka-a100-1", "ka-h100-0", "ka-cpu-0"})
    ASSERT_EQ(Until(std::string("node ") + n, "{.spec.taints}",
                    [](const std::string& v) { return v.empty(); }),
              "")
        << n;
  auto a = Kubectl("apply -f " + data + "pool.yaml");
  ASSERT_EQ(a.rc, 0) << a.out;
  // Started once every pod exists: its first cycle submits them all at once, as the simulation
  // does at time 0 (pods arriving over several cycles while it runs may be placed in another
  // order: a regression once the bindings got fast enough to run between kubectl's creates).
  Scheduler s("arbiter-accept", "accept", log, data + "kube-policy.yaml");
  for (const auto& [key, w] : want) {
    const std::string ns = key.substr(0, key.find('/'));
    const std::string pod = "pod " + key.substr(key.find('/') + 1) + " -n " + ns;
    if (!w.node.empty()) {
      EXPECT_EQ(Until(pod, "{.spec.nodeName}", [&](const std::string& v) { return !v.empty(); }),
                w.node)
          << key << "\n"
          << ReadFile(log);
      EXPECT_EQ(Until(pod, "{.status.phase}", [](const std::string& v) { return v == "Running"; }),
                "Running")
          << key;
    } else {
      const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
      EXPECT_EQ(Until(pod, jp, [&](const std::string& v) { return v == w.message; }), w.message)
          << key << "\n"
          << ReadFile(log);
      // The same reason code as the simulation (driver/pod_scheduling.h): QuotaExceeded for a
      // pod over its quota, Unschedulable only where no node fits.
      EXPECT_EQ(Get(pod, "{.status.conditions[?(@.type==\"PodScheduled\")].reason}"), w.reason)
          << key;
      EXPECT_EQ(Get(pod, "{.status.phase}"), "Pending") << key;  // kubectl's STATUS column
      EXPECT_EQ(Get(pod, "{.spec.nodeName}"), "") << key;
    }
  }
  s.Stop(SIGTERM);
  const std::string text = ReadFile(log);
  for (const auto& [key, w] : want) EXPECT_EQ(BindsInLog(text, key), w.node.empty() ? 0 : 1) << key;
  // The simulation knows only the pool's own pods: another pod on these nodes (deploy/'s
  // scheduler Deployment once was one, see kube_fixture::InstallDeploy) changes where they fit.
  auto on = Kubectl(
      "get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/"
      "{.metadata.name}@{.spec.nodeName}{\"\\n\"}{end}'");
  ASSERT_EQ(on.rc, 0) << on.out;
  std::istringstream lines(on.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("@ka-") == std::string::npos) continue;
    EXPECT_EQ(line.rfind("ka-team-", 0), 0u) << line;
  }
  Kubectl("delete namespace ka-team-a ka-team-b ka-team-c --wait=false");
  Kubectl("delete node ka-a100-0 ka-a100-1 ka-h100-0 ka-cpu-0 --wait=false");
}

// An 8-GPU KWOK node in the test pool `pool` (the scheduler's --node-selector).
std::string PeNode(const std::string& name, const std::string& pool) {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {arbiter.dev/test-pool: " + pool +
         "}\n"
         "status:\n  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n"
         "  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n";
}

std::string PePod(const std::string& ns, const std::string& name, const std::string& pc,
                  const std::string& scheduler, int gpus) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\n  labels: {app: " + name.substr(0, name.find('-')) +
         "}\nspec:\n  schedulerName: " + scheduler + "\n  priorityClassName: " + pc +
         "\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n"
         "    resources:\n      requests: {cpu: \"2\", memory: 1Gi, nvidia.com/gpu: " +
         std::to_string(gpus) + "}\n      limits: {nvidia.com/gpu: " + std::to_string(gpus) + "}\n";
}

TEST_F(KubeScheduler, PreemptsThroughEvictionAndTheApiServerEnforcesTheBudget) {
  // BestEffort budgets: the engine picks the victim despite its budget; kube-apiserver refuses
  // the eviction (429), and the preemptor says so until the budget is lifted.
  const std::string policy = (arbiter::testing::Scratch("pe-policy") / "policy.yaml").string();
  std::ofstream(policy) << "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: "
                           "default}\nspec:\n  preemption: {disruptionBudgets: BestEffort}\n";
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: pe}\n---\n" + PeNode("pe-0", "pe") +
      "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pe-low}\n"
      "value: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
      "pe-high}\nvalue: 1000\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: "
      "{name: victim, namespace: pe}\nspec:\n  minAvailable: 1\n  selector:\n    matchLabels: "
      "{app: victim}\n"));
  const std::string log = LogFile("pe");
  Scheduler s("arbiter-pe", "pe", log, policy);
  ASSERT_NO_FATAL_FAILURE(Apply(PePod("pe", "victim-0", "pe-low", "arbiter-pe", 8)));
  ASSERT_EQ(Until("pod victim-0 -n pe", "{.status.phase}",
                  [](const std::string& v) { return v == "Running"; }),
            "Running")
      << ReadFile(log);
  // The disruption controller sees the victim healthy: no disruption allowed.
  ASSERT_EQ(Until("pdb victim -n pe", "{.status.currentHealthy}",
                  [](const std::string& v) { return v == "1"; }),
            "1");
  ASSERT_NO_FATAL_FAILURE(Apply(PePod("pe", "urgent-0", "pe-high", "arbiter-pe", 8)));
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  const std::string said = Until("pod urgent-0 -n pe", jp, [](const std::string& v) {
    return v.find("the API server refused to evict pe/victim-0") != std::string::npos;
  });
  EXPECT_NE(said.find("the API server refused to evict pe/victim-0: Cannot evict pod as it would "
                      "violate the pod's disruption budget."),
            std::string::npos)
      << said << "\n"
      << ReadFile(log);
  EXPECT_EQ(Get("pod urgent-0 -n pe", "{.status.nominatedNodeName}"), "pe-0");
  EXPECT_EQ(Get("pod victim-0 -n pe", "{.metadata.deletionTimestamp}"), "");  // never deleted
  EXPECT_EQ(Get("pod urgent-0 -n pe", "{.spec.nodeName}"), "");
  // The budget lifted: the eviction is retried and goes through; the preemptor is bound.
  ASSERT_EQ(Kubectl("delete pdb victim -n pe").rc, 0);
  EXPECT_EQ(Until("pod urgent-0 -n pe", "{.spec.nodeName}",
                  [](const std::string& v) { return !v.empty(); }),
            "pe-0")
      << ReadFile(log);
  EXPECT_NE(Kubectl("get pod victim-0 -n pe").out.find("NotFound"), std::string::npos);
  s.Stop(SIGTERM);
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("evicted pe/victim-0"), std::string::npos) << text;
  EXPECT_EQ(BindsInLog(text, "pe/urgent-0"), 1);
  Kubectl("delete namespace pe --wait=false");
  Kubectl("delete node pe-0 --wait=false");
}

TEST_F(KubeScheduler, RestartAndCutWatchesLoseNothingAndBindNothingTwice) {
  // Watches the API server ends every second (--watch-timeout 1), reopened from the last
  // resourceVersion; then a kill -9 and a new process that lists the cluster again.
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: rs}\n---\n" + PeNode("rs-0", "rs") +
            "---\n" + PeNode("rs-1", "rs") +
            "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: rs-low}\n"
            "value: 100\n"));
  const std::string log = LogFile("rs");
  auto pods = [](int from, int to) {
    std::string y;
    for (int i = from; i < to; ++i)
      y += "---\n" + PePod("rs", "job-" + std::to_string(i), "rs-low", "arbiter-rs", 2);
    return y;
  };
  {
    Scheduler s("arbiter-rs", "rs", log, "", "--watch-timeout 1");
    ASSERT_NO_FATAL_FAILURE(Apply(pods(0, 3)));
    for (int i = 0; i < 3; ++i)
      ASSERT_NE(Until("pod job-" + std::to_string(i) + " -n rs", "{.spec.nodeName}",
                      [](const std::string& v) { return !v.empty(); }),
                "")
          << ReadFile(log);
    std::this_thread::sleep_for(std::chrono::seconds(3));  // several watches ended and reopened
    ASSERT_NO_FATAL_FAILURE(Apply(pods(3, 5)));            // seen only through reopened watches
    for (int i = 3; i < 5; ++i)
      ASSERT_NE(Until("pod job-" + std::to_string(i) + " -n rs", "{.spec.nodeName}",
                      [](const std::string& v) { return !v.empty(); }),
                "")
          << ReadFile(log);
    s.Stop(SIGKILL);
  }
  ASSERT_NO_FATAL_FAILURE(Apply(pods(5, 8)));  // while no scheduler runs
  Scheduler again("arbiter-rs", "rs", log, "", "--watch-timeout 1");
  for (int i = 5; i < 8; ++i)
    EXPECT_NE(Until("pod job-" + std::to_string(i) + " -n rs", "{.spec.nodeName}",
                    [](const std::string& v) { return !v.empty(); }),
              "")
        << ReadFile(log);
  // 8 pods of 2 GPUs fill both 8-GPU nodes exactly: the restarted scheduler counted the bound ones.
  std::map<std::string, int> per_node;
  for (int i = 0; i < 8; ++i)
    ++per_node[Get("pod job-" + std::to_string(i) + " -n rs", "{.spec.nodeName}")];
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"rs-0", 4}, {"rs-1", 4}}));
  // A ninth does not fit and says why.
  ASSERT_NO_FATAL_FAILURE(Apply(pods(8, 9)));
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  EXPECT_NE(Until("pod job-8 -n rs", jp, [](const std::string& v) { return !v.empty(); }), "");
  EXPECT_EQ(Get("pod job-8 -n rs", "{.spec.nodeName}"), "");
  again.Stop(SIGTERM);
  const std::string text = ReadFile(log);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(BindsInLog(text, "rs/job-" + std::to_string(i)), 1) << i << "\n" << text;
  Kubectl("delete namespace rs --wait=false");
  Kubectl("delete node rs-0 rs-1 --wait=false");
}

// A NoSchedule taint or a cordon put on a node after Arbiter bound a pod there (the node
// lifecycle controller's unreachable taint, an operator's) does not move the pod
// (IgnoredDuringExecution): a restarted scheduler places it where it runs, charged to its quota,
// instead of counting it as foreign; a new pod that would need its quota does not get it.
TEST_F(KubeScheduler, RestartKeepsBoundPodsOnANodeTaintedOrCordonedSince) {
  ASSERT_NO_FATAL_FAILURE(Fresh("bt", "bt-0"));
  ASSERT_NO_FATAL_FAILURE(Node("bt-0", "bt"));
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: bt}\n---\napiVersion: "
      "arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: quota, namespace: bt}\nspec:\n"
      "  min: {nvidia.com/gpu: 8}\n"));
  const std::string log = LogFile("bt");
  const std::string used = "{.status.used.nvidia\\.com/gpu}";
  {
    Scheduler s("arbiter-bt", "bt", log);
    ASSERT_NO_FATAL_FAILURE(Apply(kube_fixture::PodYaml("bt", "held", "arbiter-bt", 6)));
    ASSERT_EQ(Until("pod held -n bt", "{.spec.nodeName}",
                    [](const std::string& v) { return !v.empty(); }),
              "bt-0")
        << ReadFile(log);
    ASSERT_EQ(
        Until("elasticquota quota -n bt", used, [](const std::string& v) { return v == "6"; }), "6")
        << ReadFile(log);
    s.Stop(SIGTERM);
  }
  ASSERT_EQ(Kubectl("taint node bt-0 gpu=bad:NoSchedule").rc, 0);
  ASSERT_EQ(Kubectl("cordon bt-0").rc, 0);
  Scheduler again("arbiter-bt", "bt", log);
  // 4 GPUs more exceed the quota's 8 with held's 6 counted: QuotaExceeded. (Were held counted as
  // foreign, the quota would admit it and it would wait for room: Unschedulable.)
  ASSERT_NO_FATAL_FAILURE(Apply(kube_fixture::PodYaml("bt", "needs", "arbiter-bt", 4) +
                                "  tolerations:\n  - {key: gpu, operator: Exists}\n"
                                "  - {key: node.kubernetes.io/unschedulable, operator: Exists}\n"));
  const std::string reason = "{.status.conditions[?(@.type==\"PodScheduled\")].reason}";
  EXPECT_EQ(Until("pod needs -n bt", reason, [](const std::string& v) { return !v.empty(); }),
            "QuotaExceeded")
      << Get("pod needs -n bt", "{.status.conditions}") << "\n"
      << ReadFile(log);
  EXPECT_EQ(Get("pod needs -n bt", "{.spec.nodeName}"), "");
  EXPECT_EQ(Get("elasticquota quota -n bt", used), "6");
  again.Stop(SIGTERM);
  const std::string text = ReadFile(log);
  EXPECT_EQ(text.find("counted as foreign"), std::string::npos) << text;
  EXPECT_EQ(Get("pod held -n bt", "{.spec.nodeName}"), "bt-0");
  Kubectl("delete namespace bt --wait=false");
  Kubectl("delete node bt-0 --wait=false");
}

// PodGroups and ResourceFlavors from the cluster (deploy/podgroup-crd.yaml, deploy/crds.yaml): an
// ElasticQuota's flavor sends its namespace's pod to the flavor's node; a gang whose PodGroup is
// created after its pods waits and says so, then is bound whole.
TEST_F(KubeScheduler, PodGroupsAndFlavorsFromTheCluster) {
  std::string objs =
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: pg}\n---\napiVersion: "
      "v1\nkind: Namespace\nmetadata: {name: pgq}\n";
  for (const char* n : {"pg-0", "pg-1", "pg-2"}) objs += "---\n" + PeNode(n, "pg");
  ASSERT_NO_FATAL_FAILURE(Apply(objs));
  ASSERT_EQ(Kubectl("label node pg-1 nvidia.com/gpu.product=H100").rc, 0);
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pg-low}\n"
      "value: 100\n---\napiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: "
      "pg-h100}\nspec: {nodeLabels: {nvidia.com/gpu.product: H100}}\n---\napiVersion: "
      "arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: pgq}\nspec:\n  "
      "flavors:\n  - {name: pg-h100, min: {nvidia.com/gpu: 8}}\n"));
  const std::string log = LogFile("pg");
  Scheduler s("arbiter-pg", "pg", log);
  // The quota's only flavor is H100: its pod goes to pg-1, the one node with that label.
  ASSERT_NO_FATAL_FAILURE(Apply(PePod("pgq", "h-0", "pg-low", "arbiter-pg", 8)));
  EXPECT_EQ(
      Until("pod h-0 -n pgq", "{.spec.nodeName}", [](const std::string& v) { return !v.empty(); }),
      "pg-1")
      << ReadFile(log);
  auto member = [](int i) {
    std::string y = PePod("pg", "gang-" + std::to_string(i), "pg-low", "arbiter-pg", 8);
    const std::string at = "  labels: {app: gang}\n";
    y.replace(y.find(at), at.size(),
              "  labels: {app: gang, scheduling.x-k8s.io/pod-group: train}\n");
    return y;
  };
  ASSERT_NO_FATAL_FAILURE(Apply(member(0) + "---\n" + member(1)));
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  EXPECT_EQ(Until("pod gang-0 -n pg", jp, [](const std::string& v) { return !v.empty(); }),
            "waiting for PodGroup pg/train (the pod's label scheduling.x-k8s.io/pod-group), which "
            "does not exist")
      << ReadFile(log);
  EXPECT_EQ(Get("pod gang-1 -n pg", "{.spec.nodeName}"), "");
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
            "metadata: {name: train, namespace: pg}\nspec: {minMember: 2}\n"));
  std::set<std::string> used;
  for (int i = 0; i < 2; ++i)
    used.insert(Until("pod gang-" + std::to_string(i) + " -n pg", "{.spec.nodeName}",
                      [](const std::string& v) { return !v.empty(); }));
  EXPECT_EQ(used, (std::set<std::string>{"pg-0", "pg-2"})) << ReadFile(log);
  // The condition Valid (controller_validity.cc): True on the quota and its flavor; a quota
  // naming a flavor that does not exist (which no admission policy can see) says so, in
  // `arbiter validate`'s words, until the flavor is created.
  const std::string valid = "{.status.conditions[?(@.type==\"Valid\")].status}";
  EXPECT_EQ(Until("elasticquota q -n pgq", valid, [](const std::string& v) { return !v.empty(); }),
            "True")
      << ReadFile(log);
  EXPECT_EQ(Until("resourceflavor pg-h100", valid, [](const std::string& v) { return !v.empty(); }),
            "True");
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: pgq2}\n---\napiVersion: "
            "arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: pgq2}\n"
            "spec:\n  flavors:\n  - {name: pg-h10, min: {nvidia.com/gpu: 8}}\n"));
  const std::string message = "{.status.conditions[?(@.type==\"Valid\")].message}";
  EXPECT_EQ(
      Until("elasticquota q -n pgq2", message, [](const std::string& v) { return !v.empty(); }),
      "spec.flavors[0].name: unknown ResourceFlavor \"pg-h10\"; did you mean \"pg-h100\"?")
      << ReadFile(log);
  EXPECT_EQ(Get("elasticquota q -n pgq2", valid), "False");
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\n"
            "metadata: {name: pg-h10}\nspec: {}\n"));
  EXPECT_EQ(
      Until("elasticquota q -n pgq2", valid, [](const std::string& v) { return v == "True"; }),
      "True")
      << ReadFile(log);
  s.Stop(SIGTERM);
  Kubectl("delete namespace pg pgq pgq2 --wait=false");
  Kubectl("delete node pg-0 pg-1 pg-2 --wait=false");
  Kubectl("delete resourceflavor/pg-h100 resourceflavor/pg-h10 priorityclass/pg-low --wait=false");
}

// PodGroup members that come or go after the group was given to the engine (docs/kubernetes.md,
// "flavors and gangs"): a member alone waits for minMember; the second completes the group, bound
// with it; a third, the group running, is bound alone; deleting the third while it runs evicts
// the others (a running member deleted takes its group with it: docs/manifests.md), and their
// Preempted events say why. Bare pods: nothing recreates them.
TEST_F(KubeScheduler, PodGroupMembersAddedOrDeletedAfterSubmission) {
  ASSERT_NO_FATAL_FAILURE(Fresh("pgm", "pgm-0"));
  std::string objs = "apiVersion: v1\nkind: Namespace\nmetadata: {name: pgm}\n";
  for (const char* n : {"pgm-0", "pgm-1", "pgm-2"}) objs += "---\n" + PeNode(n, "pgm");
  objs +=
      "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pgm-low}\n"
      "value: 100\n---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
      "metadata: {name: train, namespace: pgm}\nspec: {minMember: 2}\n";
  ASSERT_NO_FATAL_FAILURE(Apply(objs));
  for (const char* n : {"pgm-0", "pgm-1", "pgm-2"})
    ASSERT_EQ(Until("node " + std::string(n), "{.spec.taints}",
                    [](const std::string& v) { return v.empty(); }),
              "");
  const std::string log = LogFile("pgm");
  Scheduler s("arbiter-pgm", "pgm", log);
  auto member = [](int i) {
    std::string y = PePod("pgm", "gang-" + std::to_string(i), "pgm-low", "arbiter-pgm", 8);
    const std::string at = "  labels: {app: gang}\n";
    y.replace(y.find(at), at.size(),
              "  labels: {app: gang, scheduling.x-k8s.io/pod-group: train}\n");
    return y;
  };
  auto node_of = [](int i) { return "pod gang-" + std::to_string(i) + " -n pgm"; };
  auto bound = [](const std::string& v) { return !v.empty(); };
  ASSERT_NO_FATAL_FAILURE(Apply(member(0)));
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  EXPECT_EQ(Until(node_of(0), jp, bound),
            "pod group pgm/train: 1 of minMember 2 pods present; waiting for the rest")
      << ReadFile(log);
  ASSERT_NO_FATAL_FAILURE(Apply(member(1)));
  std::set<std::string> used;
  for (int i = 0; i < 2; ++i) used.insert(Until(node_of(i), "{.spec.nodeName}", bound));
  EXPECT_EQ(used.size(), 2u) << ReadFile(log);
  EXPECT_EQ(used.count(""), 0u) << ReadFile(log);
  ASSERT_NO_FATAL_FAILURE(Apply(member(2)));
  EXPECT_NE(Until(node_of(2), "{.spec.nodeName}", bound), "") << ReadFile(log);
  ASSERT_EQ(
      Until(node_of(2), "{.status.phase}", [](const std::string& v) { return v == "Running"; }),
      "Running");
  ASSERT_EQ(Kubectl("delete pod gang-2 -n pgm --wait=false").rc, 0);
  // gang-0 and gang-1 evicted: gone from the API server, each with its Preempted event.
  EXPECT_EQ(Until("pods -n pgm", "{.items[*].metadata.name}",
                  [](const std::string& v) { return v.empty(); }),
            "")
      << ReadFile(log);
  const std::string preempted =
      "{range .items[?(@.reason==\"Preempted\")]}{.regarding.name}: {.note}{\"\\n\"}{end}";
  const std::string said =
      Until("events.events.k8s.io -n pgm", preempted, [](const std::string& v) {
        return v.find("gang-0") != std::string::npos && v.find("gang-1") != std::string::npos;
      });
  EXPECT_NE(said.find("gang-0: stopped with pod group pgm/train (member pgm/gang-2 was deleted)"),
            std::string::npos)
      << said;
  s.Stop(SIGTERM);
  Kubectl("delete namespace pgm --wait=false");
  Kubectl("delete node pgm-0 pgm-1 pgm-2 --wait=false");
  Kubectl("delete priorityclass/pgm-low --wait=false");
}

// A PodGroup's spec changed or the PodGroup deleted after its members were given to the engine
// (docs/kubernetes.md, "flavors and gangs"): minMember lowered under a waiting group starts it;
// raised while a member waits for room holds that member for the rest (its message says so),
// lowered again binds it; the running members stay where they are, never evicted; a PodGroup
// deleted under its pending member makes it wait for the PodGroup again.
TEST_F(KubeScheduler, ChangedPodGroupReachesItsPendingMembers) {
  ASSERT_NO_FATAL_FAILURE(Fresh("pgc", "pgc-0"));
  std::string objs = "apiVersion: v1\nkind: Namespace\nmetadata: {name: pgc}\n";
  for (const char* n : {"pgc-0", "pgc-1"}) objs += "---\n" + PeNode(n, "pgc");
  objs +=
      "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pgc-low}\n"
      "value: 100\n---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
      "metadata: {name: train, namespace: pgc}\nspec: {minMember: 3}\n---\n"
      "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
      "metadata: {name: solo, namespace: pgc}\nspec: {minMember: 1}\n";
  ASSERT_NO_FATAL_FAILURE(Apply(objs));
  for (const char* n : {"pgc-0", "pgc-1"})
    ASSERT_EQ(Until("node " + std::string(n), "{.spec.taints}",
                    [](const std::string& v) { return v.empty(); }),
              "");
  const std::string log = LogFile("pgc");
  Scheduler s("arbiter-pgc", "pgc", log);
  auto member = [](const std::string& name, const std::string& group, int gpus) {
    std::string y = PePod("pgc", name, "pgc-low", "arbiter-pgc", gpus);
    const std::string at = "  labels: {app: " + name.substr(0, name.find('-')) + "}\n";
    y.replace(y.find(at), at.size(),
              "  labels: {app: x, scheduling.x-k8s.io/pod-group: " + group + "}\n");
    return y;
  };
  auto min_member = [](int n) {
    auto r = Kubectl("patch podgroup train -n pgc --type merge -p '{\"spec\":{\"minMember\":" +
                     std::to_string(n) + "}}'");
    ASSERT_EQ(r.rc, 0) << r.out;
  };
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  auto says = [&](const std::string& pod, const std::string& want) {
    return Until("pod " + pod + " -n pgc", jp, [&](const std::string& v) { return v == want; });
  };
  auto bound = [](const std::string& v) { return !v.empty(); };
  ASSERT_NO_FATAL_FAILURE(
      Apply(member("gang-0", "train", 8) + "---\n" + member("gang-1", "train", 8)));
  const std::string two_of_three =
      "pod group pgc/train: 2 of minMember 3 pods present; waiting for the rest";
  EXPECT_EQ(says("gang-0", two_of_three), two_of_three) << ReadFile(log);
  ASSERT_NO_FATAL_FAILURE(min_member(2));
  std::set<std::string> used;
  for (const char* p : {"gang-0", "gang-1"})
    used.insert(Until("pod " + std::string(p) + " -n pgc", "{.spec.nodeName}", bound));
  EXPECT_EQ(used, (std::set<std::string>{"pgc-0", "pgc-1"})) << ReadFile(log);
  auto uid_node = [](const char* p) {
    return Get("pod " + std::string(p) + " -n pgc", "{.metadata.uid} {.spec.nodeName}");
  };
  const std::string gang0 = uid_node("gang-0"), gang1 = uid_node("gang-1");
  // A third member finds no room; minMember raised to 4, it waits for the rest instead.
  ASSERT_NO_FATAL_FAILURE(Apply(member("gang-2", "train", 8)));
  EXPECT_NE(Until("pod gang-2 -n pgc", jp, bound), "") << ReadFile(log);
  ASSERT_NO_FATAL_FAILURE(min_member(4));
  const std::string three_of_four =
      "pod group pgc/train: 3 of minMember 4 pods present; waiting for the rest";
  EXPECT_EQ(says("gang-2", three_of_four), three_of_four) << ReadFile(log);
  // Room for it, and minMember 3: it is bound there.
  ASSERT_NO_FATAL_FAILURE(Apply(PeNode("pgc-2", "pgc")));
  ASSERT_NO_FATAL_FAILURE(min_member(3));
  EXPECT_EQ(Until("pod gang-2 -n pgc", "{.spec.nodeName}", bound), "pgc-2") << ReadFile(log);
  // "solo" deleted under its pending member (16 GPUs: no node fits it).
  ASSERT_NO_FATAL_FAILURE(Apply(member("solo-0", "solo", 16)));
  EXPECT_NE(Until("pod solo-0 -n pgc", jp, bound), "") << ReadFile(log);
  ASSERT_EQ(Kubectl("delete podgroup solo -n pgc").rc, 0);
  const std::string waits =
      "waiting for PodGroup pgc/solo (the pod's label scheduling.x-k8s.io/pod-group), which does "
      "not exist";
  EXPECT_EQ(says("solo-0", waits), waits) << ReadFile(log);
  // The first members ran throughout: the same pods, on their nodes, nothing evicted.
  EXPECT_EQ(uid_node("gang-0"), gang0);
  EXPECT_EQ(uid_node("gang-1"), gang1);
  const std::string text = ReadFile(log);
  EXPECT_EQ(text.find("evicted pgc/"), std::string::npos) << text;
  s.Stop(SIGTERM);
  Kubectl("delete namespace pgc --wait=false");
  Kubectl("delete node pgc-0 pgc-1 pgc-2 --wait=false");
  Kubectl("delete priorityclass/pgc-low --wait=false");
}

TEST_F(KubeScheduler, UnreachableApiServerAndBadKubeconfigAreClearErrors) {
  const auto dir = arbiter::testing::Scratch("bad-kubeconfig");
  std::string kc = ReadFile(Kubeconfig());
  const size_t p = kc.find("server: https://127.0.0.1:");
  ASSERT_NE(p, std::string::npos);
  const size_t eol = kc.find('\n', p);
  kc.replace(p, eol - p, "server: https://127.0.0.1:1");
  std::ofstream(dir / "unreachable") << kc;
  auto r = RunCommand(arbiter::testing::Arbiter() + " scheduler --kubeconfig " +
                      (dir / "unreachable").string() + " 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("kube-apiserver at https://127.0.0.1:1 unreachable"), std::string::npos)
      << r.out;
  std::ofstream(dir / "garbage") << "clusters: [";
  r = RunCommand(arbiter::testing::Arbiter() + " scheduler --kubeconfig " +
                 (dir / "garbage").string() + " 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("not a kubeconfig"), std::string::npos) << r.out;
}

}  // namespace kube_scheduler_test
