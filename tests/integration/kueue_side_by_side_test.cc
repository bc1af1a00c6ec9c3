// Kueue and `arbiter scheduler` side by side on the same test cluster (CTest fixtures "kube" and
// "kueue"; docs/kubernetes.md, "Side by side with Kueue"): the same quota of 4 GPUs and the same
// suspended batch/v1 Jobs, once in a namespace queued to Kueue (ClusterQueue, LocalQueue), once in
// a namespace of Arbiter (ElasticQuota, the Jobs' scheduler name); each on a KWOK node of 8 GPUs of
// its own, so only the quota decides. The tests compare which Jobs each admits (unsuspends) while
// the quota is short, and after a Job finishes; with priorities, which it preempts. Without the
// cluster or Kueue these tests fail (never skip).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "integration/kube_fixture.h"

namespace kueue_side_by_side_test {

using kube_fixture::Dir;
using kube_fixture::Get;
using kube_fixture::Kubectl;
using kube_fixture::KubeTest;
using kube_fixture::ReadFile;
using kube_fixture::Scheduler;
using kube_fixture::Until;

// The manager's readyz URL, from the ports file scripts/services/kueue.sh writes.
std::string KueueReadyz() {
  std::istringstream in(ReadFile(Dir() + "/kueue/ports"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("kueue-health=", 0) == 0)
      return "http://127.0.0.1:" + line.substr(13) + "/readyz";
  return "";
}

class KueueSideBySide : public KubeTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(KubeTest::SetUp());
    const std::string readyz = KueueReadyz();
    ASSERT_FALSE(readyz.empty()) << "Kueue is not running on the test cluster (no " << Dir()
                                 << "/kueue/ports; scripts/services/kueue.sh start DIR)";
    auto r = arbiter::testing::RunCommand("curl -sf " + readyz + " 2>&1");
    ASSERT_EQ(r.rc, 0) << "Kueue's manager is not ready at " << readyz << ": " << r.out;
  }
  // The same quota of 4 GPUs on each side, each on a KWOK node of 8 GPUs of its own (pool = the
  // namespace's name). Kueue in namespace `kq`: the namespace (labelled for Kueue's webhooks,
  // scripts/services/kueue.sh), a ResourceFlavor of its node, a ClusterQueue (Kueue needs every
  // requested resource covered: cpu and memory as large as the node; `cq_extra`: more of its
  // spec), its LocalQueue "queue". Arbiter in namespace `ka`: the namespace's ElasticQuota
  // (`eq_extra`: more of its spec).
  void Quotas(const std::string& kq, const std::string& ka, const std::string& cq_extra = "",
              const std::string& eq_extra = "") {
    ASSERT_NO_FATAL_FAILURE(Fresh(kq, kq + "-0"));
    ASSERT_NO_FATAL_FAILURE(Fresh(ka, ka + "-0"));
    for (const char* kind : {"clusterqueues", "resourceflavors"}) {
      auto d = Kubectl("delete " + std::string(kind) + ".kueue.x-k8s.io " + kq +
                       " --ignore-not-found --timeout=60s");
      ASSERT_EQ(d.rc, 0) << d.out;
    }
    ASSERT_NO_FATAL_FAILURE(Node(kq + "-0", kq));
    ASSERT_NO_FATAL_FAILURE(Node(ka + "-0", ka));
    ASSERT_NO_FATAL_FAILURE(Apply(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + kq +
        ", labels: {arbiter.dev/kueue: \"true\"}}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: "
        "ResourceFlavor\nmetadata: {name: " +
        kq + "}\nspec:\n  nodeLabels: {arbiter.dev/test-pool: " + kq +
        "}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " + kq +
        "}\nspec:\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: " + kq +
        "}}\n" + cq_extra +
        "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n    flavors:\n"
        "    - name: " +
        kq +
        "\n      resources:\n      - {name: cpu, nominalQuota: \"32\"}\n"
        "      - {name: memory, nominalQuota: 256Gi}\n      - {name: nvidia.com/gpu, nominalQuota: "
        "\"4\"}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: "
        "queue, namespace: " +
        kq + "}\nspec:\n  clusterQueue: " + kq + "\n"));
    ASSERT_NO_FATAL_FAILURE(Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ka +
                                  "}\n---\napiVersion: arbiter.dev/v1alpha1\nkind: "
                                  "ElasticQuota\nmetadata: {name: quota, namespace: " +
                                  ka + "}\nspec:\n  min: {nvidia.com/gpu: 4}\n" + eq_extra));
    ASSERT_EQ(Until("localqueues.kueue.x-k8s.io queue -n " + kq,
                    "{.status.conditions[?(@.type==\"Active\")].status}",
                    [](const std::string& v) { return v == "True"; }),
              "True")
        << ReadFile(Dir() + "/kueue.log");
  }
  // The same objects applied on each side.
  void Both(const std::string& yaml_kq, const std::string& yaml_ka) {
    ASSERT_NO_FATAL_FAILURE(Apply(yaml_kq));
    ASSERT_NO_FATAL_FAILURE(Apply(yaml_ka));
  }
  void Cleanup(const std::string& kq, const std::string& ka) {
    for (const std::string& what :
         {"namespace " + kq, "namespace " + ka, "clusterqueues.kueue.x-k8s.io " + kq,
          "resourceflavors.kueue.x-k8s.io " + kq, "node " + kq + "-0", "node " + ka + "-0"})
      Kubectl("delete " + what + " --wait=false");
  }
};

// A Job created suspended: `parallelism` pods of 2 GPUs, each running `duration` (KWOK's
// arbiter.dev/duration stage). `kueue`: queued to the LocalQueue "queue" (its pods scheduled by
// kube-scheduler onto the flavor's nodes); else the pods say `schedulerName: arbiter-NS`.
std::string JobYaml(const std::string& ns, const std::string& name, bool kueue, int parallelism,
                    const std::string& duration, const std::string& priority_class = "") {
  const std::string n = std::to_string(parallelism);
  return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         (kueue ? "\n  labels: {kueue.x-k8s.io/queue-name: queue}" : "") +
         "\nspec:\n  suspend: true\n  parallelism: " + n + "\n  completions: " + n +
         "\n  template:\n    metadata:\n      annotations: {arbiter.dev/duration: " + duration +
         "}\n    spec:\n" + (kueue ? "" : "      schedulerName: arbiter-" + ns + "\n") +
         (priority_class.empty() ? "" : "      priorityClassName: " + priority_class + "\n") +
         "      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n      containers:\n"
         "      - name: main\n        image: busybox\n        resources:\n          requests: "
         "{cpu: \"1\", memory: 1Gi, nvidia.com/gpu: 2}\n          limits: {nvidia.com/gpu: 2}\n";
}

// Each Job of the namespace as NAME=admitted|waiting|complete, in name order: "complete" when its
// Complete condition is True, "admitted" when unsuspended, else "waiting".
std::string States(const std::string& ns) {
  const std::string raw = Get("jobs -n " + ns,
                              "{range .items[*]}{.metadata.name}={.spec.suspend}/"
                              "{.status.conditions[?(@.type==\"Complete\")].status}{\"\\n\"}{end}");
  std::map<std::string, std::string> states;
  std::istringstream in(raw);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string rest = line.substr(eq + 1);
    states[line.substr(0, eq)] = rest.find("/True") != std::string::npos ? "complete"
                                 : rest.rfind("false", 0) == 0           ? "admitted"
                                                                         : "waiting";
  }
  std::string out;
  for (const auto& [name, state] : states) out += (out.empty() ? "" : " ") + name + "=" + state;
  return out;
}

// Polls States(ns) (every 200 ms) until it contains `part` or `seconds` pass; returns the last.
std::string StatesUntil(const std::string& ns, const std::string& part, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::string got = States(ns);
  while (got.find(part) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    got = States(ns);
  }
  if (got.find(part) == std::string::npos)
    std::cerr << "waited " << seconds << " s for " << part << " in " << ns << ": " << got
              << std::endl;
  return got;
}

// The jsonpath of why Kueue's Workload of Job `job` waits: its QuotaReserved condition's message.
std::string KueueWhy(const std::string& job) {
  return std::string("{.items[?(@.metadata.ownerReferences[0].name==\"" + job +
                     "\")].status.conditions[?(@.type==\"QuotaReserved\")].message}");
}

const char* kAdmission = "{.metadata.annotations.arbiter\\.dev/admission}";

// Quota 4 GPUs. "first" (2 GPUs, 20 s) and "second" (2 GPUs, 1 h) fill it; then "wide" (2 pods
// x 2 GPUs) and, a second later, "late" (2 GPUs) wait. When "first" finishes, 2 GPUs are free:
// "late" fits, "wide", ahead of it in the queue, does not.
TEST_F(KueueSideBySide, SameJobsSameQuotaSameAdmissions) {
  ASSERT_NO_FATAL_FAILURE(Quotas("kq", "ka"));
  const std::string log = (arbiter::testing::Scratch("ka") / "scheduler.log").string();
  Scheduler s("arbiter-ka", "ka", log);
  // 1. Two Jobs of 2 GPUs fill the quota: both admitted by each.
  ASSERT_NO_FATAL_FAILURE(Both(
      JobYaml("kq", "first", true, 1, "20s") + "---\n" + JobYaml("kq", "second", true, 1, "1h"),
      JobYaml("ka", "first", false, 1, "20s") + "---\n" + JobYaml("ka", "second", false, 1, "1h")));
  const std::string filled = "first=admitted second=admitted";
  EXPECT_EQ(StatesUntil("kq", filled, 60), filled) << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(StatesUntil("ka", filled, 60), filled) << ReadFile(log);
  // 2. "wide" (4 GPUs), then "late" (2 GPUs), a second later (Kueue orders by creation time, to
  // the second): over the quota, both wait in each, saying why.
  ASSERT_NO_FATAL_FAILURE(
      Both(JobYaml("kq", "wide", true, 2, "1h"), JobYaml("ka", "wide", false, 2, "1h")));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_NO_FATAL_FAILURE(
      Both(JobYaml("kq", "late", true, 1, "1h"), JobYaml("ka", "late", false, 1, "1h")));
  const auto said = [](const std::string& v) { return !v.empty(); };
  const std::string kq_wide = Until("workloads.kueue.x-k8s.io -n kq", KueueWhy("wide"), said);
  const std::string kq_late = Until("workloads.kueue.x-k8s.io -n kq", KueueWhy("late"), said);
  const std::string ka_wide = Until("job wide -n ka", kAdmission, said);
  const std::string ka_late = Until("job late -n ka", kAdmission, said);
  std::cout << "waiting, Kueue:   wide: " << kq_wide << "\n                  late: " << kq_late
            << "\nwaiting, Arbiter: wide: " << ka_wide << "\n                  late: " << ka_late
            << std::endl;
  EXPECT_NE(kq_wide.find("insufficient unused quota for nvidia.com/gpu"), std::string::npos)
      << kq_wide;
  EXPECT_NE(kq_late.find("insufficient unused quota for nvidia.com/gpu"), std::string::npos)
      << kq_late;
  EXPECT_NE(ka_wide.find("exceeded ElasticQuota ka/quota"), std::string::npos) << ka_wide;
  EXPECT_NE(ka_late.find("exceeded ElasticQuota ka/quota"), std::string::npos) << ka_late;
  const std::string waiting = "first=admitted late=waiting second=admitted wide=waiting";
  const std::string kq_short = States("kq"), ka_short = States("ka");
  std::cout << "quota short, Kueue:   " << kq_short << "\nquota short, Arbiter: " << ka_short
            << std::endl;
  EXPECT_EQ(kq_short, ka_short);
  EXPECT_EQ(kq_short, waiting) << "(\"first\" runs 20 s: if it completed already, the machine was "
                                  "too slow for this check)";
  // 3. "first" finishes: 2 GPUs free. Each admits "late"; "wide" still waits.
  StatesUntil("kq", "late=admitted", 90);
  StatesUntil("ka", "late=admitted", 90);
  // A few more cycles of each: nothing else changes ("wide" does not fit 2 free GPUs).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string kq_end = States("kq"), ka_end = States("ka");
  std::cout << "after first finished, Kueue:   " << kq_end
            << "\nafter first finished, Arbiter: " << ka_end << std::endl;
  EXPECT_EQ(kq_end, ka_end) << ReadFile(log);
  EXPECT_EQ(kq_end, "first=complete late=admitted second=admitted wide=waiting")
      << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(Get("job wide -n kq", "{.spec.suspend}"), "true");
  EXPECT_EQ(Get("job wide -n ka", "{.spec.suspend}"), "true");
  Cleanup("kq", "ka");
}

// Priority: quota 4 GPUs, PriorityClasses kss-low (100) and kss-high (1000). "low" (2 pods x 2
// GPUs, 1 h) fills the quota; "high" (2 GPUs, 15 s) arrives. Both preempt within the quota for a
// higher priority: Kueue's ClusterQueue `preemption.withinClusterQueue: LowerPriority`, Arbiter's
// ElasticQuota `preemption.withinNamespace: LowerPriority` (the default of each is Never: "high"
// would wait). "low" is suspended as a whole, "high" admitted; when "high" finishes, "low" is
// admitted again.
TEST_F(KueueSideBySide, HigherPriorityJobPreemptsALowerOneOfTheSameQuota) {
  ASSERT_NO_FATAL_FAILURE(Quotas("kqp", "kap",
                                 "  preemption: {withinClusterQueue: LowerPriority}\n",
                                 "  preemption: {withinNamespace: LowerPriority}\n"));
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kss-low}\n"
      "value: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
      "kss-high}\nvalue: 1000\n"));
  const std::string log = (arbiter::testing::Scratch("kap") / "scheduler.log").string();
  Scheduler s("arbiter-kap", "kap", log);
  ASSERT_NO_FATAL_FAILURE(Both(JobYaml("kqp", "low", true, 2, "1h", "kss-low"),
                               JobYaml("kap", "low", false, 2, "1h", "kss-low")));
  EXPECT_EQ(StatesUntil("kqp", "low=admitted", 60), "low=admitted")
      << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(StatesUntil("kap", "low=admitted", 60), "low=admitted") << ReadFile(log);
  ASSERT_NO_FATAL_FAILURE(Both(JobYaml("kqp", "high", true, 1, "15s", "kss-high"),
                               JobYaml("kap", "high", false, 1, "15s", "kss-high")));
  StatesUntil("kqp", "high=admitted", 60);
  StatesUntil("kap", "high=admitted", 60);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string kq_pre = States("kqp"), ka_pre = States("kap");
  std::cout << "high arrived, Kueue:   " << kq_pre << "\nhigh arrived, Arbiter: " << ka_pre
            << std::endl;
  EXPECT_EQ(kq_pre, ka_pre) << ReadFile(log);
  EXPECT_EQ(kq_pre, "high=admitted low=waiting") << ReadFile(Dir() + "/kueue.log");
  // "high" finishes: "low" is admitted again by each.
  StatesUntil("kqp", "low=admitted", 90);
  StatesUntil("kap", "low=admitted", 90);
  const std::string kq_end = States("kqp"), ka_end = States("kap");
  std::cout << "high finished, Kueue:   " << kq_end << "\nhigh finished, Arbiter: " << ka_end
            << std::endl;
  EXPECT_EQ(kq_end, ka_end) << ReadFile(log);
  EXPECT_EQ(kq_end, "high=complete low=admitted");
  Cleanup("kqp", "kap");
}

}  // namespace kueue_side_by_side_test
