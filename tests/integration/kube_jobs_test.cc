// batch/v1 Jobs admitted as a unit by `arbiter scheduler` on the real test cluster (CTest fixture
// "kube"; docs/kubernetes.md, "Jobs"): kube-controller-manager's Job controller makes the pods of a
// Job once Arbiter unsuspends it, and deletes them when Arbiter suspends it again. Own scheduler
// name, nodes (--node-selector) and namespace per test, as in kube_scheduler_test.cc. Without the
// cluster these tests fail (never skip).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

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

}  // namespace kube_jobs_test
