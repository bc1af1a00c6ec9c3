// batch/v1 Jobs admitted as a unit by `arbiter scheduler` on the real test cluster (CTest fixture
// "kube"; docs/kubernetes.md, "Jobs"): kube-controller-manager's Job controller makes the pods of a
// Job once Arbiter unsuspends it, and deletes them when Arbiter suspends it again. Own scheduler
// name, nodes (--node-selector) and namespace per test, as in kube_scheduler_test.cc. Without the
// cluster these tests fail (never skip).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "integration/kube_fixture.h"

namespace kube_jobs_test {

using kube_fixture::Get;
using kube_fixture::Kubectl;
using kube_fixture::KubeTest;
using kube_fixture::PodYaml;
using kube_fixture::ReadFile;
using kube_fixture::Scheduler;
using kube_fixture::Until;

class KubeJobs : public KubeTest {};

// A Job created suspended, as Kueue asks: `parallelism` pods of `gpus` GPUs, each running
// `duration` (KWOK's arbiter.dev/duration stage).
std::string JobYaml(const std::string& ns, const std::string& name, const std::string& scheduler,
                    int parallelism, int gpus, const std::string& duration,
                    const std::string& priority_class = "") {
  const std::string n = std::to_string(parallelism);
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + ", namespace: " + ns +
         "}\nspec:\n  suspend: true\n  parallelism: " + n + "\n  completions: " + n +
         "\n  template:\n    metadata:\n      annotations: {arbiter.dev/duration: " + duration +
         "}\n    spec:\n      schedulerName: " + scheduler +
         (priority_class.empty() ? "" : "\n      priorityClassName: " + priority_class) +
         "\n      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n      containers:\n"
         "      - name: main\n        image: busybox\n        resources:\n          requests: "
         "{cpu: \"1\", memory: 1Gi, nvidia.com/gpu: " +
         std::to_string(gpus) + "}\n          limits: {nvidia.com/gpu: " + std::to_string(gpus) +
         "}\n";
}

const char* kAdmission = "{.metadata.annotations.arbiter\\.dev/admission}";

TEST_F(KubeJobs, SuspendedJobOverQuotaStaysSuspendedAndIsUnsuspendedWhenQuotaFrees) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kj", "kj-0"));
  ASSERT_NO_FATAL_FAILURE(Node("kj-0", "kj"));
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: kj}\n---\napiVersion: "
      "arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: quota, namespace: kj}\nspec:\n"
      "  min: {nvidia.com/gpu: 4}\n"));
  const std::string log = (arbiter::testing::Scratch("kj") / "scheduler.log").string();
  Scheduler s("arbiter-kj", "kj", log);
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("kj", "blocker", "arbiter-kj", 2)));
  ASSERT_EQ(Until("pod blocker -n kj", "{.status.phase}",
                  [](const std::string& v) { return v == "Running"; }),
            "Running")
      << ReadFile(log);
  // The quota's status, written back: 2 of the namespace's 4 GPUs are used.
  const std::string used = "{.status.used.nvidia\\.com/gpu}";
  EXPECT_EQ(Until("elasticquota quota -n kj", used, [](const std::string& v) { return v == "2"; }),
            "2")
      << ReadFile(log);
  // A Job of 2 x 2 GPUs is over quota as a unit.
  ASSERT_NO_FATAL_FAILURE(Apply(JobYaml("kj", "train", "arbiter-kj", 2, 2, "2s")));
  const std::string why =
      Until("job train -n kj", kAdmission, [](const std::string& v) { return !v.empty(); });
  EXPECT_NE(why.find("exceeded ElasticQuota kj/quota"), std::string::npos) << why << "\n"
                                                                           << ReadFile(log);
  EXPECT_EQ(Get("job train -n kj", "{.spec.suspend}"), "true");
  EXPECT_EQ(Get("pods -n kj -l batch.kubernetes.io/job-name=train", "{.items[*].metadata.name}"),
            "");  // suspended: the Job controller made no pod
  // The blocker goes: the quota admits the whole Job. Unsuspended; its two pods are bound to
  // kj-0, run their 2 s and the Job completes.
  ASSERT_EQ(Kubectl("delete pod blocker -n kj").rc, 0);
  EXPECT_EQ(Until("job train -n kj", "{.spec.suspend}",
                  [](const std::string& v) { return v == "false"; }),
            "false")
      << ReadFile(log);
  EXPECT_EQ(Get("job train -n kj", kAdmission), "admitted: 2 pods on kj-0");
  EXPECT_EQ(Until("job train -n kj", "{.status.succeeded}",
                  [](const std::string& v) { return v == "2"; }),
            "2")
      << ReadFile(log);
  EXPECT_EQ(Until("job train -n kj", "{.status.conditions[?(@.type==\"Complete\")].status}",
                  [](const std::string& v) { return v == "True"; }),
            "True");
  // Its quota is released: the next Job of 4 GPUs is admitted.
  ASSERT_NO_FATAL_FAILURE(Apply(JobYaml("kj", "next", "arbiter-kj", 2, 2, "1s")));
  EXPECT_EQ(
      Until("job next -n kj", "{.status.succeeded}", [](const std::string& v) { return v == "2"; }),
      "2")
      << ReadFile(log);
  EXPECT_EQ(Until("elasticquota quota -n kj", used, [](const std::string& v) { return v == "0"; }),
            "0");
  EXPECT_EQ(Get("elasticquota quota -n kj", "{.status.borrowed.nvidia\\.com/gpu}"), "0");
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("unsuspended job kj/train"), std::string::npos) << text;
  EXPECT_NE(text.find("job kj/train completed"), std::string::npos) << text;
  Kubectl("delete namespace kj --wait=false");
  Kubectl("delete node kj-0 --wait=false");
}

TEST_F(KubeJobs, PreemptedJobIsSuspendedItsPodsDeletedAndItResumesLater) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kp", "kp-0"));
  ASSERT_NO_FATAL_FAILURE(Node("kp-0", "kp"));
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: kp}\n---\napiVersion: "
            "scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kp-low}\nvalue: 100\n---\n"
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: kp-high}\n"
            "value: 1000\n"));
  const std::string log = (arbiter::testing::Scratch("kp") / "scheduler.log").string();
  Scheduler s("arbiter-kp", "kp", log);
  // A long Job fills the node.
  ASSERT_NO_FATAL_FAILURE(Apply(JobYaml("kp", "long", "arbiter-kp", 2, 4, "1h", "kp-low")));
  EXPECT_EQ(
      Until("job long -n kp", "{.status.active}", [](const std::string& v) { return v == "2"; }),
      "2")
      << ReadFile(log);
  // An urgent pod needs the whole node: the Job is suspended as one (its controller deletes the
  // pods), the urgent pod bound, and the Job waits, saying why.
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("kp", "urgent", "arbiter-kp", 8, "kp-high")));
  EXPECT_EQ(Until("pod urgent -n kp", "{.spec.nodeName}",
                  [](const std::string& v) { return !v.empty(); }),
            "kp-0")
      << ReadFile(log);
  EXPECT_EQ(Get("job long -n kp", "{.spec.suspend}"), "true");
  EXPECT_EQ(Until("pods -n kp -l batch.kubernetes.io/job-name=long", "{.items[*].metadata.name}",
                  [](const std::string& v) { return v.empty(); }),
            "");
  const std::string why = Until("job long -n kp", kAdmission, [](const std::string& v) {
    return !v.empty() && v.rfind("stopped", 0) != 0;
  });
  EXPECT_EQ(why.rfind("admitted", 0), std::string::npos) << why;
  // The urgent pod goes: the Job is admitted again and its pods run.
  ASSERT_EQ(Kubectl("delete pod urgent -n kp").rc, 0);
  EXPECT_EQ(
      Until("job long -n kp", "{.spec.suspend}", [](const std::string& v) { return v == "false"; }),
      "false")
      << ReadFile(log);
  EXPECT_EQ(
      Until("job long -n kp", "{.status.active}", [](const std::string& v) { return v == "2"; }),
      "2")
      << ReadFile(log);
  const std::string text = ReadFile(log);
  EXPECT_NE(text.find("suspended job kp/long: stopped: "), std::string::npos) << text;
  Kubectl("delete namespace kp --wait=false");
  Kubectl("delete node kp-0 --wait=false");
}

// Times `needle` occurs in `text`.
int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Issue 26, "Jobs restart": `arbiter scheduler` is killed (SIGKILL) while an admitted Job runs
// and a suspended Job waits over its ElasticQuota. The new process lists the cluster: the
// running Job's slots are placed where its pods run (not admitted again, its pods not bound
// again), the waiting one stays suspended, the quota's status stays right; when the running Job
// goes, the waiting one is admitted, once.
// A bystander, another `arbiter scheduler` (its own name and pool) on the same cluster, runs
// throughout: it lists the namespace's ElasticQuota too, but none of its pods are its own, so it
// leaves the quota's status alone. (The bug this test found under the full suite, where the other
// tests' schedulers are the bystanders: each scheduler wrote every quota's status from its own
// engine, and a scheduler holding none of kr's pods wrote used 0 over the 4 GPUs running.)
TEST_F(KubeJobs, SchedulerKilledAndRestartedAdmitsNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kr", "kr-0"));
  ASSERT_NO_FATAL_FAILURE(Node("kr-0", "kr"));
  ASSERT_NO_FATAL_FAILURE(Apply(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: kr}\n---\napiVersion: "
      "arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: quota, namespace: kr}\nspec:\n"
      "  min: {nvidia.com/gpu: 4}\n"));
  const std::string log1 = (arbiter::testing::Scratch("kr-1") / "scheduler.log").string();
  const std::string log2 = (arbiter::testing::Scratch("kr-2") / "scheduler.log").string();
  const std::string log3 = (arbiter::testing::Scratch("kr-by") / "scheduler.log").string();
  auto listed = [](const std::string& log) {
    for (int i = 0; i < 300 && ReadFile(log).find("every informer has listed") == std::string::npos;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return ReadFile(log).find("every informer has listed") != std::string::npos;
  };
  std::optional<Scheduler> bystander;
  const std::string used = "{.status.used.nvidia\\.com/gpu}";
  const std::string running_pods = "pods -n kr -l batch.kubernetes.io/job-name=running";
  std::string pods_before;
  {
    Scheduler first("arbiter-kr", "kr", log1);
    // A Job of 2 x 2 GPUs takes the namespace's 4: admitted, its pods run (1 h).
    ASSERT_NO_FATAL_FAILURE(Apply(JobYaml("kr", "running", "arbiter-kr", 2, 2, "1h")));
    ASSERT_EQ(Until("job running -n kr", "{.status.active}",
                    [](const std::string& v) { return v == "2"; }),
              "2")
        << ReadFile(log1);
    ASSERT_EQ(
        Until("elasticquota quota -n kr", used, [](const std::string& v) { return v == "4"; }), "4")
        << ReadFile(log1);
    // A second one is over quota: suspended, saying why. The node has room for it (8 GPUs).
    ASSERT_NO_FATAL_FAILURE(Apply(JobYaml("kr", "waiting", "arbiter-kr", 2, 2, "2s")));
    const std::string why =
        Until("job waiting -n kr", kAdmission, [](const std::string& v) { return !v.empty(); });
    ASSERT_NE(why.find("exceeded ElasticQuota kr/quota"), std::string::npos) << why << "\n"
                                                                             << ReadFile(log1);
    pods_before = Get(running_pods, "{.items[*].metadata.name}");
    // The bystander lists the cluster and cycles: the status stays 4.
    bystander.emplace("arbiter-kr-by", "kr-by", log3);
    ASSERT_TRUE(listed(log3)) << ReadFile(log3);
    EXPECT_EQ(
        Until(
            "elasticquota quota -n kr", used, [](const std::string& v) { return v != "4"; }, 5),
        "4")
        << ReadFile(log3);
    first.Stop(SIGKILL);
  }
  Scheduler again("arbiter-kr", "kr", log2);
  ASSERT_TRUE(listed(log2)) << ReadFile(log2);
  // Several cycles of the new process: nothing changes. The waiting Job waits, the running one
  // keeps its pods (not re-bound, not counted as foreign), the quota says 4 of 4.
  EXPECT_EQ(Until(
                "elasticquota quota -n kr", used, [](const std::string& v) { return v != "4"; }, 5),
            "4")
      << ReadFile(log2);
  EXPECT_EQ(Get("job waiting -n kr", "{.spec.suspend}"), "true") << ReadFile(log2);
  EXPECT_EQ(Get("pods -n kr -l batch.kubernetes.io/job-name=waiting", "{.items[*].metadata.name}"),
            "");
  EXPECT_EQ(Get("job running -n kr", "{.spec.suspend}"), "false");
  EXPECT_EQ(Get("job running -n kr", kAdmission), "admitted: 2 pods on kr-0");
  EXPECT_EQ(Get(running_pods, "{.items[*].metadata.name}"), pods_before);
  {
    const std::string text = ReadFile(log2);
    EXPECT_EQ(Count(text, "bound kr/"), 0) << text;
    EXPECT_EQ(Count(text, "counted as foreign"), 0) << text;
    EXPECT_EQ(Count(text, "unsuspended job"), 0) << text;
  }
  // The running Job goes: the waiting one is admitted, runs its 2 s and completes; the quota is
  // its 4 GPUs, then none.
  ASSERT_EQ(Kubectl("delete job running -n kr").rc, 0);
  EXPECT_EQ(Until("job waiting -n kr", "{.spec.suspend}",
                  [](const std::string& v) { return v == "false"; }),
            "false")
      << ReadFile(log2);
  EXPECT_EQ(Get("job waiting -n kr", kAdmission), "admitted: 2 pods on kr-0");
  EXPECT_EQ(Until("job waiting -n kr", "{.status.succeeded}",
                  [](const std::string& v) { return v == "2"; }),
            "2")
      << ReadFile(log2);
  EXPECT_EQ(Until("elasticquota quota -n kr", used, [](const std::string& v) { return v == "0"; }),
            "0")
      << ReadFile(log2);
  again.Stop(SIGTERM);
  bystander.reset();
  EXPECT_NE(ReadFile(log3).find("ElasticQuota kr/quota: status not written"), std::string::npos)
      << ReadFile(log3);
  const std::string text = ReadFile(log1) + ReadFile(log2);
  EXPECT_EQ(Count(text, "unsuspended job kr/running"), 1) << text;
  EXPECT_EQ(Count(text, "unsuspended job kr/waiting"), 1) << text;
  EXPECT_EQ(Count(text, "bound kr/"), 4) << text;  // each Job's two pods, once
  EXPECT_NE(text.find("job kr/waiting completed"), std::string::npos) << text;
  // The deleted Job's pods stayed Arbiter's while they terminated: the node never shrank under
  // the engine ("engine refused UpsertNode: ... GPU device N is in use", issue 26).
  EXPECT_EQ(Count(text, "engine refused"), 0) << text;
  Kubectl("delete namespace kr --wait=false");
  Kubectl("delete node kr-0 --wait=false");
}

}  // namespace kube_jobs_test
