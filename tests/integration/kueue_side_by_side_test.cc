// Kueue and `arbiter scheduler` side by side on the same test cluster (CTest fixtures "kube" and
// "kueue"; docs/kubernetes.md, "Side by side with Kueue"): the same quota of 4 GPUs and the same
// suspended batch/v1 Jobs, once in a namespace queued to Kueue (ClusterQueue, LocalQueue), once in
// a namespace of Arbiter (ElasticQuota, the Jobs' scheduler name); each on a KWOK node of 8 GPUs of
// its own, so only the quota decides. The tests compare which Jobs each admits (unsuspends) while
// the quota is short, and after a Job finishes; with priorities, which it preempts. The Cohort*,
// LendingLimit* and BorrowWithinCohort* tests put two or three quotas in one cohort on each side
// (ClusterQueues of one cohortName; ElasticQuotas of one cohort) and compare borrowing, the
// borrowing and lending limits, reclaim and preemption while borrowing (which Jobs are evicted).
// Without the cluster or Kueue these tests fail (never skip).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
  // One quota of a cohort on each side (Cohort, below): the namespaces KQ-NAME (Kueue) and
  // KA-NAME (Arbiter), each with 4 GPUs of nominal quota (min); `kueue_gpu`: more of the
  // ClusterQueue's nvidia.com/gpu entry (", borrowingLimit: \"2\""), `kueue_spec` more of its
  // spec, `arbiter_spec` more of the ElasticQuota's spec.
  struct Member {
    std::string name, kueue_gpu, kueue_spec, arbiter_spec;
    std::string gpus = "4";  // the nominal quota (min)
  };
  // A cohort of `members` on each side, on `nodes` KWOK nodes of 8 GPUs per side (as many GPUs
  // as the cohort's nominal quota or more: the nodes never decide). Kueue: a ResourceFlavor `kq`
  // of the nodes kq-0, kq-1, ... shared by the members' ClusterQueues (cohortName `kq`; borrowing
  // is per flavor), each with a LocalQueue "queue". Arbiter: the nodes ka-0, ... in pool `ka`, an
  // ElasticQuota per namespace with cohort `ka` (the pods of every namespace name the scheduler
  // arbiter-KA).
  void Cohort(const std::string& kq, const std::string& ka, const std::vector<Member>& members,
              int nodes = 1) {
    for (const Member& m : members) {
      ASSERT_NO_FATAL_FAILURE(Fresh(kq + "-" + m.name, kq + "-0"));
      ASSERT_NO_FATAL_FAILURE(Fresh(ka + "-" + m.name, ka + "-0"));
      auto d = Kubectl("delete clusterqueues.kueue.x-k8s.io " + kq + "-" + m.name +
                       " --ignore-not-found --timeout=60s");
      ASSERT_EQ(d.rc, 0) << d.out;
    }
    auto d = Kubectl("delete resourceflavors.kueue.x-k8s.io " + kq +
                     " --ignore-not-found --timeout=60s");
    ASSERT_EQ(d.rc, 0) << d.out;
    for (int i = 0; i < nodes; ++i)
      for (const std::string& side : {kq, ka}) {
        const std::string node = side + "-" + std::to_string(i);
        if (i > 0) {
          ASSERT_EQ(Kubectl("delete node " + node + " --ignore-not-found").rc, 0);
        }
        ASSERT_NO_FATAL_FAILURE(Node(node, side));
      }
    std::string kueue =
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " + kq +
        "}\nspec:\n  nodeLabels: {arbiter.dev/test-pool: " + kq + "}\n";
    std::string arbiter;
    for (const Member& m : members) {
      const std::string ns = kq + "-" + m.name, ea = ka + "-" + m.name;
      kueue += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns +
               ", labels: {arbiter.dev/kueue: \"true\"}}\n---\napiVersion: kueue.x-k8s.io/v1beta2\n"
               "kind: ClusterQueue\nmetadata: {name: " +
               ns + "}\nspec:\n  cohortName: " + kq +
               "\n  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: " + ns + "}}\n" +
               m.kueue_spec +
               "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
               "    flavors:\n    - name: " +
               kq +
               "\n      resources:\n      - {name: cpu, nominalQuota: \"32\"}\n"
               "      - {name: memory, nominalQuota: 256Gi}\n"
               "      - {name: nvidia.com/gpu, nominalQuota: \"" +
               m.gpus + "\"" + m.kueue_gpu +
               "}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: "
               "queue, namespace: " +
               ns + "}\nspec:\n  clusterQueue: " + ns + "\n";
      arbiter += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + ea +
                 "}\n---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: "
                 "quota, namespace: " +
                 ea + "}\nspec:\n  cohort: " + ka + "\n  min: {nvidia.com/gpu: " + m.gpus + "}\n" +
                 m.arbiter_spec;
    }
    ASSERT_NO_FATAL_FAILURE(Apply(kueue));
    ASSERT_NO_FATAL_FAILURE(Apply(arbiter));
    for (const Member& m : members)
      ASSERT_EQ(Until("localqueues.kueue.x-k8s.io queue -n " + kq + "-" + m.name,
                      "{.status.conditions[?(@.type==\"Active\")].status}",
                      [](const std::string& v) { return v == "True"; }),
                "True")
          << ReadFile(Dir() + "/kueue.log");
  }
  void CleanupCohort(const std::string& kq, const std::string& ka,
                     const std::vector<Member>& members, int nodes = 1) {
    for (const Member& m : members)
      for (const std::string& what :
           {"namespace " + kq + "-" + m.name, "namespace " + ka + "-" + m.name,
            "clusterqueues.kueue.x-k8s.io " + kq + "-" + m.name})
        Kubectl("delete " + what + " --wait=false");
    Kubectl("delete resourceflavors.kueue.x-k8s.io " + kq + " --wait=false");
    for (int i = 0; i < nodes; ++i)
      for (const std::string& side : {kq, ka})
        Kubectl("delete node " + side + "-" + std::to_string(i) + " --wait=false");
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
// kube-scheduler onto the flavor's nodes); else the pods say `schedulerName: SCHEDULER`
// (default arbiter-NS).
std::string JobYaml(const std::string& ns, const std::string& name, bool kueue, int parallelism,
                    const std::string& duration, const std::string& priority_class = "",
                    const std::string& scheduler = "") {
  const std::string n = std::to_string(parallelism);
  return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         (kueue ? "\n  labels: {kueue.x-k8s.io/queue-name: queue}" : "") +
         "\nspec:\n  suspend: true\n  parallelism: " + n + "\n  completions: " + n +
         "\n  template:\n    metadata:\n      annotations: {arbiter.dev/duration: " + duration +
         "}\n    spec:\n" +
         (kueue ? ""
                : "      schedulerName: " + (scheduler.empty() ? "arbiter-" + ns : scheduler) +
                      "\n") +
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

// The Jobs of namespace `ns` evicted and not admitted again, in name order. Kueue's: those whose
// Workload has the condition Evicted True, reason Preempted. Arbiter's: those waiting (States)
// that Arbiter suspended again, " suspended job NS/NAME: stopped: ..." in its log `log` (the Job's
// annotation says "stopped: ..." only until its slots are requeued; it then carries their
// pending message).
std::string Evicted(const std::string& ns, bool kueue, const std::string& log = "") {
  std::map<std::string, bool> evicted;
  if (kueue) {
    std::istringstream in(Get("workloads.kueue.x-k8s.io -n " + ns,
                              "{range .items[*]}{.metadata.ownerReferences[0].name}={.status."
                              "conditions[?(@.type==\"Evicted\")].status}/{.status.conditions[?(@."
                              "type==\"Evicted\")].reason}{\"\\n\"}{end}"));
    for (std::string line; std::getline(in, line);)
      if (const auto eq = line.find('='); eq != std::string::npos)
        evicted[line.substr(0, eq)] = line.substr(eq + 1) == "True/Preempted";
  } else {
    const std::string text = ReadFile(log);
    std::istringstream in(States(ns));
    for (std::string state; in >> state;) {
      const std::string name = state.substr(0, state.find('='));
      evicted[name] = state == name + "=waiting" && text.find(" suspended job " + ns + "/" + name +
                                                              ": stopped: ") != std::string::npos;
    }
  }
  std::string out;
  for (const auto& [name, yes] : evicted)
    if (yes) out += (out.empty() ? "" : " ") + name;
  return out;
}

// Submits the 2-GPU Jobs `names` (of PriorityClass `priority_class`) of member `m` of a cohort
// (Cohort) to each side one after another, each but the last admitted before the next, a
// second apart: Kueue orders by creation time and picks victims by admission time, both to the
// second (pkg/scheduler/preemption/common/ordering.go, CandidatesOrdering: the latest admitted
// first; Arbiter's victim order: the latest started first).
void OneByOne(const std::string& kq, const std::string& ka, const std::string& m,
              const std::vector<std::string>& names, const std::string& log,
              const std::string& priority_class = "") {
  for (const std::string& name : names) {
    const std::string q = kq + "-" + m, a = ka + "-" + m;
    for (const std::string& yaml :
         {JobYaml(q, name, true, 1, "1h", priority_class),
          JobYaml(a, name, false, 1, "1h", priority_class, "arbiter-" + ka)}) {
      const std::string file = (arbiter::testing::Scratch("kueue-job") / "job.yaml").string();
      std::ofstream(file) << yaml;
      auto r = Kubectl("apply -f " + file);
      ASSERT_EQ(r.rc, 0) << r.out;
    }
    if (&name == &names.back()) break;
    EXPECT_NE(StatesUntil(q, name + "=admitted", 60).find(name + "=admitted"), std::string::npos)
        << ReadFile(Dir() + "/kueue.log");
    EXPECT_NE(StatesUntil(a, name + "=admitted", 60).find(name + "=admitted"), std::string::npos)
        << ReadFile(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
}

// Borrowing and reclaim in a cohort. Two quotas of 4 GPUs in one cohort on each side: "a" may
// borrow 2 (Kueue: borrowingLimit 2; Arbiter: max 6 = nominal + borrowingLimit), "b" lends what
// it does not use; both reclaim from the cohort (`reclaimWithinCohort: Any` on each side: Kueue's
// default is Never, Arbiter's the PoolPolicy's `preemption.reclaim`, Any). 1. While "b" is idle,
// "a" submits four Jobs of 2 GPUs: three are admitted (the third borrows 2 of b's GPUs), the
// fourth waits at the borrowing limit. 2. "b" submits two Jobs of 2 GPUs, within its nominal
// quota: the first fits the cohort's 2 free GPUs, the second reclaims: a3, the latest admitted
// of a's Jobs, is evicted (suspended again), a1 and a2 keep running.
TEST_F(KueueSideBySide, CohortBorrowsUpToTheBorrowingLimitAndReclaims) {
  const std::vector<Member> members = {
      {"a", ", borrowingLimit: \"2\"", "  preemption: {reclaimWithinCohort: Any}\n",
       "  max: {nvidia.com/gpu: 6}\n  preemption: {reclaimWithinCohort: Any}\n"},
      {"b", "", "  preemption: {reclaimWithinCohort: Any}\n",
       "  preemption: {reclaimWithinCohort: Any}\n"}};
  ASSERT_NO_FATAL_FAILURE(Cohort("kqc", "kac", members));
  const std::string log = (arbiter::testing::Scratch("kac") / "scheduler.log").string();
  Scheduler s("arbiter-kac", "kac", log);
  // 1. a1, a2, a3 admitted one by one (a3 borrowing), then a4 waits.
  ASSERT_NO_FATAL_FAILURE(OneByOne("kqc", "kac", "a", {"a1", "a2", "a3", "a4"}, log));
  const auto said = [](const std::string& v) { return !v.empty(); };
  const std::string kq_a4 = Until("workloads.kueue.x-k8s.io -n kqc-a", KueueWhy("a4"), said);
  const std::string ka_a4 = Until("job a4 -n kac-a", kAdmission, said);
  std::cout << "a4 waits, Kueue:   " << kq_a4 << "\na4 waits, Arbiter: " << ka_a4 << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string borrowing = "a1=admitted a2=admitted a3=admitted a4=waiting";
  const std::string kq_borrow = States("kqc-a"), ka_borrow = States("kac-a");
  std::cout << "a borrows, Kueue:   " << kq_borrow << "\na borrows, Arbiter: " << ka_borrow
            << std::endl;
  EXPECT_EQ(kq_borrow, borrowing) << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(ka_borrow, borrowing) << ReadFile(log);
  // 2. b1 and b2 within b's nominal quota: b1 fits, b2 reclaims from a (a3 evicted).
  ASSERT_NO_FATAL_FAILURE(
      Both(JobYaml("kqc-b", "b1", true, 1, "1h") + "---\n" + JobYaml("kqc-b", "b2", true, 1, "1h"),
           JobYaml("kac-b", "b1", false, 1, "1h", "", "arbiter-kac") + "---\n" +
               JobYaml("kac-b", "b2", false, 1, "1h", "", "arbiter-kac")));
  const std::string both = "b1=admitted b2=admitted";
  StatesUntil("kqc-b", both, 90);
  StatesUntil("kac-b", both, 90);
  StatesUntil("kqc-a", "a3=waiting", 30);
  StatesUntil("kac-a", "a3=waiting", 30);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string kq_a = States("kqc-a"), ka_a = States("kac-a");
  const std::string kq_b = States("kqc-b"), ka_b = States("kac-b");
  const std::string kq_ev = Evicted("kqc-a", true), ka_ev = Evicted("kac-a", false, log);
  std::cout << "b reclaimed, Kueue:   " << kq_a << " " << kq_b << "; evicted: " << kq_ev
            << "\nb reclaimed, Arbiter: " << ka_a << " " << ka_b << "; evicted: " << ka_ev
            << std::endl;
  const std::string text = ReadFile(log), line = " suspended job kac-a/a3: stopped: ";
  const auto at = text.find(line);
  std::cout << "a3 evicted, Kueue:   "
            << Get("workloads.kueue.x-k8s.io -n kqc-a",
                   "{.items[?(@.metadata.ownerReferences[0].name==\"a3\")].status.conditions[?(@."
                   "type==\"Evicted\")].message}")
            << "\na3 evicted, Arbiter: "
            << (at == std::string::npos
                    ? ""
                    : text.substr(at + line.size(), text.find('\n', at) - at - line.size()))
            << std::endl;
  EXPECT_EQ(kq_a, ka_a) << ReadFile(log);
  EXPECT_EQ(kq_b, ka_b) << ReadFile(log);
  EXPECT_EQ(kq_ev, ka_ev) << ReadFile(log);
  EXPECT_EQ(kq_a, "a1=admitted a2=admitted a3=waiting a4=waiting")
      << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(kq_b, both);
  EXPECT_EQ(kq_ev, "a3");
  CleanupCohort("kqc", "kac", members);
}

// Lending limit, and no reclaim. Two quotas of 4 GPUs in one cohort on each side; "b" lends at
// most 2 of its GPUs (lendingLimit 2 on each side), neither reclaims (Kueue's default
// `reclaimWithinCohort: Never`; Arbiter's set to Never, its default being Any). 1. While "b" is
// idle, "a" submits four Jobs of 2 GPUs: three are admitted (a3 borrows the 2 GPUs b lends), a4
// waits. 2. "b" submits two Jobs of 2 GPUs: b1 fits the 2 GPUs b does not lend, b2 waits (the
// cohort is full and b may not reclaim). 3. a3 is deleted: its 2 GPUs go to b2, within b's
// nominal quota, not to a4, which would borrow (both Kueue's and Arbiter's admission order: a
// workload within its nominal quota before one that borrows).
TEST_F(KueueSideBySide, LendingLimitKeepsQuotaBackAndNoReclaimWaits) {
  const std::vector<Member> members = {
      {"a", "", "", "  preemption: {reclaimWithinCohort: Never}\n"},
      {"b", ", lendingLimit: \"2\"", "",
       "  lendingLimit: {nvidia.com/gpu: 2}\n  preemption: {reclaimWithinCohort: Never}\n"}};
  ASSERT_NO_FATAL_FAILURE(Cohort("kql", "kal", members));
  const std::string log = (arbiter::testing::Scratch("kal") / "scheduler.log").string();
  Scheduler s("arbiter-kal", "kal", log);
  // 1. a1, a2, a3 admitted (a3 borrowing b's lendable 2 GPUs), a4 waits.
  ASSERT_NO_FATAL_FAILURE(OneByOne("kql", "kal", "a", {"a1", "a2", "a3", "a4"}, log));
  const auto said = [](const std::string& v) { return !v.empty(); };
  Until("workloads.kueue.x-k8s.io -n kql-a", KueueWhy("a4"), said);
  Until("job a4 -n kal-a", kAdmission, said);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string lent = "a1=admitted a2=admitted a3=admitted a4=waiting";
  EXPECT_EQ(States("kql-a"), lent) << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(States("kal-a"), lent) << ReadFile(log);
  // 2. b1 admitted on the 2 GPUs b keeps; b2 waits, saying why.
  ASSERT_NO_FATAL_FAILURE(
      Both(JobYaml("kql-b", "b1", true, 1, "1h") + "---\n" + JobYaml("kql-b", "b2", true, 1, "1h"),
           JobYaml("kal-b", "b1", false, 1, "1h", "", "arbiter-kal") + "---\n" +
               JobYaml("kal-b", "b2", false, 1, "1h", "", "arbiter-kal")));
  StatesUntil("kql-b", "b1=admitted", 60);
  StatesUntil("kal-b", "b1=admitted", 60);
  const std::string kq_b2 = Until("workloads.kueue.x-k8s.io -n kql-b", KueueWhy("b2"), said);
  const std::string ka_b2 = Until("job b2 -n kal-b", kAdmission, said);
  std::cout << "b2 waits, Kueue:   " << kq_b2 << "\nb2 waits, Arbiter: " << ka_b2 << std::endl;
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string kq_wait = States("kql-a") + " " + States("kql-b");
  const std::string ka_wait = States("kal-a") + " " + States("kal-b");
  std::cout << "b lends 2, Kueue:   " << kq_wait << "\nb lends 2, Arbiter: " << ka_wait
            << std::endl;
  EXPECT_EQ(kq_wait, ka_wait) << ReadFile(log);
  EXPECT_EQ(kq_wait, lent + " b1=admitted b2=waiting") << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(Evicted("kql-a", true), "");
  EXPECT_EQ(Evicted("kal-a", false, log), "");
  // 3. a3 deleted: b2 admitted, a4 still waits.
  for (const std::string ns : {"kql-a", "kal-a"}) {
    auto d = Kubectl("delete job a3 -n " + ns + " --wait=false");
    ASSERT_EQ(d.rc, 0) << d.out;
  }
  StatesUntil("kql-b", "b2=admitted", 60);
  StatesUntil("kal-b", "b2=admitted", 60);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string kq_end = States("kql-a") + " " + States("kql-b");
  const std::string ka_end = States("kal-a") + " " + States("kal-b");
  std::cout << "a3 deleted, Kueue:   " << kq_end << "\na3 deleted, Arbiter: " << ka_end
            << std::endl;
  EXPECT_EQ(kq_end, ka_end) << ReadFile(log);
  EXPECT_EQ(kq_end, "a1=admitted a2=admitted a4=waiting b1=admitted b2=admitted")
      << ReadFile(Dir() + "/kueue.log");
  CleanupCohort("kql", "kal", members);
}

// Preempting while borrowing. Three quotas in one cohort on each side: a and b of 4 GPUs, c of 2,
// idle (10 GPUs; two nodes of 8 a side). PriorityClasses kss-low (100) and kss-high (1000). a:
// `reclaimWithinCohort: LowerPriority`, `borrowWithinCohort: {policy: LowerPriority,
// maxPriorityThreshold: 100}` on each side; b and c reclaim nothing (Kueue's default; Arbiter's
// set to Never). 1. b runs b1, b2, b3 (kss-low, 2 GPUs each: b borrows 2). 2. a runs a1, a2
// (kss-high) within its 4. 3. a3 (kss-high) would make a borrow, and the cohort is full: only
// borrowWithinCohort lets it preempt, b's latest admitted borrower of priority at most 100: b3
// is evicted, a3 admitted (a borrows 2 of c's idle GPUs).
TEST_F(KueueSideBySide, BorrowWithinCohortPreemptsALowerPriorityBorrower) {
  const std::string bwc =
      "  preemption:\n    reclaimWithinCohort: LowerPriority\n    borrowWithinCohort: {policy: "
      "LowerPriority, maxPriorityThreshold: 100}\n";
  const std::vector<Member> members = {
      {"a", "", bwc, bwc},
      {"b", "", "", "  preemption: {reclaimWithinCohort: Never}\n"},
      {"c", "", "", "  preemption: {reclaimWithinCohort: Never}\n", "2"}};
  ASSERT_NO_FATAL_FAILURE(Cohort("kqw", "kaw", members, 2));
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kss-low}\n"
      "value: 100\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
      "kss-high}\nvalue: 1000\n"));
  const std::string log = (arbiter::testing::Scratch("kaw") / "scheduler.log").string();
  Scheduler s("arbiter-kaw", "kaw", log);
  // 1. b1, b2, b3 (b borrows 2).
  ASSERT_NO_FATAL_FAILURE(OneByOne("kqw", "kaw", "b", {"b1", "b2", "b3"}, log, "kss-low"));
  const std::string b_all = "b1=admitted b2=admitted b3=admitted";
  EXPECT_EQ(StatesUntil("kqw-b", b_all, 60), b_all) << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(StatesUntil("kaw-b", b_all, 60), b_all) << ReadFile(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  // 2. a1, a2 within a's 4.
  ASSERT_NO_FATAL_FAILURE(OneByOne("kqw", "kaw", "a", {"a1", "a2"}, log, "kss-high"));
  const std::string a_two = "a1=admitted a2=admitted";
  EXPECT_EQ(StatesUntil("kqw-a", a_two, 60), a_two) << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(StatesUntil("kaw-a", a_two, 60), a_two) << ReadFile(log);
  // 3. a3 borrows by preempting b3.
  ASSERT_NO_FATAL_FAILURE(Both(JobYaml("kqw-a", "a3", true, 1, "1h", "kss-high"),
                               JobYaml("kaw-a", "a3", false, 1, "1h", "kss-high", "arbiter-kaw")));
  StatesUntil("kqw-a", "a3=admitted", 90);
  StatesUntil("kaw-a", "a3=admitted", 90);
  StatesUntil("kqw-b", "b3=waiting", 30);
  StatesUntil("kaw-b", "b3=waiting", 30);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::string kq_end = States("kqw-a") + " " + States("kqw-b");
  const std::string ka_end = States("kaw-a") + " " + States("kaw-b");
  const std::string kq_ev = Evicted("kqw-b", true), ka_ev = Evicted("kaw-b", false, log);
  std::cout << "a3 borrows, Kueue:   " << kq_end << "; evicted: " << kq_ev
            << "\na3 borrows, Arbiter: " << ka_end << "; evicted: " << ka_ev << std::endl;
  EXPECT_EQ(kq_end, ka_end) << ReadFile(log);
  EXPECT_EQ(kq_ev, ka_ev) << ReadFile(log);
  EXPECT_EQ(kq_end, "a1=admitted a2=admitted a3=admitted b1=admitted b2=admitted b3=waiting")
      << ReadFile(Dir() + "/kueue.log");
  EXPECT_EQ(kq_ev, "b3");
  CleanupCohort("kqw", "kaw", members, 2);
}

}  // namespace kueue_side_by_side_test
