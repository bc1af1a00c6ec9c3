// batch/v1 Jobs on `arbiter serve` under the real kubectl (issue 27): examples/serve/job.yaml (the
// example docs/serve.md shows) is applied, completes 4/4, its pods are listed by the job-name
// label, a restart keeps the Job and its pods, and a bad Job is refused with Kubernetes' message.
#include <gtest/gtest.h>

#include <fstream>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace serve_job_kubectl_test {

const std::string kExamples = std::string(ARBITER_SOURCE_DIR) + "/examples/";

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(ServeJobKubectlTest, ExampleJobCompletesAndKeepsItsPodsAcrossARestart) {
  ServeProcess s(ScratchDir("job"));
  ASSERT_TRUE(s.Start()) << s.log();
  CommandOutput pool = s.Kubectl("apply -f " + kExamples + "pool.yaml");
  ASSERT_EQ(pool.rc, 0) << pool.out;
  CommandOutput a = s.Kubectl("apply -f " + kExamples + "serve/job.yaml");
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  EXPECT_NE(a.out.find("job.batch/sweep created"), std::string::npos) << a.out;
  CommandOutput running = s.Kubectl("get jobs");
  EXPECT_NE(running.out.find("STATUS"), std::string::npos) << running.out;
  EXPECT_NE(running.out.find("COMPLETIONS"), std::string::npos) << running.out;
  EXPECT_NE(running.out.find("DURATION"), std::string::npos) << running.out;
  CommandOutput w = s.Kubectl("wait --for=condition=complete job/sweep --timeout=60s");
  EXPECT_EQ(w.rc, 0) << w.out << s.Kubectl("get job sweep -o yaml").out;
  CommandOutput jobs = s.Kubectl("get jobs");
  EXPECT_NE(jobs.out.find("Complete"), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("4/4"), std::string::npos) << jobs.out;
  CommandOutput pods = s.Kubectl("get pods -l batch.kubernetes.io/job-name=sweep");
  EXPECT_EQ(CountLines(pods.out, "sweep-"), 4) << pods.out;
  EXPECT_EQ(CountLines(pods.out, "Completed"), 4) << pods.out;
  CommandOutput owner = s.Kubectl(
      "get pods -l batch.kubernetes.io/job-name=sweep "
      "-o jsonpath='{.items[0].metadata.ownerReferences[0].kind}'");
  EXPECT_EQ(owner.out, "Job") << owner.out;

  EXPECT_EQ(s.Stop(), 0) << s.log();
  ASSERT_TRUE(s.Start()) << s.log();
  CommandOutput after = s.Kubectl("get jobs");
  EXPECT_NE(after.out.find("Complete"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("4/4"), std::string::npos) << after.out;
  CommandOutput pods_after = s.Kubectl("get pods -l batch.kubernetes.io/job-name=sweep");
  EXPECT_EQ(CountLines(pods_after.out, "Completed"), 4) << pods_after.out;

  CommandOutput del = s.Kubectl("delete job sweep");
  EXPECT_EQ(del.rc, 0) << del.out;
  CommandOutput gone =
      s.KubectlUntil("get pods -l batch.kubernetes.io/job-name=sweep", "No resources found");
  EXPECT_NE(gone.out.find("No resources found"), std::string::npos) << gone.out;
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

// An Indexed Job with spec.successPolicy (2 of 4 indexes suffice) completes through the API once
// two indexes succeeded: SuccessCriteriaMet then Complete, reason SuccessPolicy, 2 pods made.
TEST(ServeJobKubectlTest, SuccessPolicyJobCompletesEarly) {
  ServeProcess s(ScratchDir("job-success"));
  ASSERT_TRUE(s.Start()) << s.log();
  ASSERT_EQ(s.Kubectl("apply -f " + kExamples + "pool.yaml").rc, 0);
  {
    std::ofstream f(s.dir() / "early.yaml");
    f << "apiVersion: batch/v1\nkind: Job\nmetadata: {name: early, namespace: default}\nspec:\n"
         "  completionMode: Indexed\n  completions: 4\n  parallelism: 2\n"
         "  successPolicy:\n    rules:\n    - succeededCount: 2\n"
         "  template:\n    metadata:\n      annotations: {arbiter.dev/duration: 2s}\n"
         "    spec:\n      restartPolicy: Never\n      containers:\n"
         "      - {name: main, image: busybox, resources: {requests: {cpu: \"1\", memory: 1Gi}}}\n";
  }
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "early.yaml").string());
  ASSERT_EQ(a.rc, 0) << a.out << s.log();
  CommandOutput w = s.Kubectl("wait --for=condition=complete job/early --timeout=60s");
  EXPECT_EQ(w.rc, 0) << w.out << s.Kubectl("get job early -o yaml").out;
  CommandOutput cond = s.Kubectl(
      "get job early -o jsonpath='{range .status.conditions[*]}{.type}={.reason};{end}"
      "{.status.succeeded}/{.status.completedIndexes}'");
  EXPECT_EQ(cond.out, "SuccessCriteriaMet=SuccessPolicy;Complete=SuccessPolicy;2/0,1") << cond.out;
  CommandOutput pods = s.Kubectl("get pods -l batch.kubernetes.io/job-name=early");
  EXPECT_EQ(CountLines(pods.out, "early-"), 2) << pods.out;
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

TEST(ServeJobKubectlTest, BadParallelismIsRefusedWithKubernetesMessage) {
  ServeProcess s(ScratchDir("job-bad"));
  ASSERT_TRUE(s.Start()) << s.log();
  {
    std::ofstream f(s.dir() / "bad.yaml");
    f << "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad}\nspec:\n  parallelism: -1\n"
         "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
         "      - {name: main, image: busybox}\n";
  }
  CommandOutput a = s.Kubectl("apply -f " + (s.dir() / "bad.yaml").string());
  EXPECT_NE(a.rc, 0);
  EXPECT_NE(a.out.find("spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
            std::string::npos)
      << a.out;
  EXPECT_EQ(s.Stop(), 0) << s.log();
}

}  // namespace serve_job_kubectl_test
}  // namespace arbiter::testing
