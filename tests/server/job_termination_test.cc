// batch/v1 Jobs as kube-controller-manager v1.36 ends them (server/state/job_controller.h; issue
// 27): the interim FailureTarget condition before Failed, status.terminating,
// podReplacementPolicy Failed vs TerminatingOrFailed, and DELETE's propagationPolicy (Orphan,
// Background, Foreground). Each expectation is what the real controller does (pkg/controller/job:
// syncJob, trackJobStatusAndRemoveFinalizers, enactJobFinished, isPodFailed,
// onlyReplaceFailedPods), checked live by tests/integration/kube_serve_jobs_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"
#include "server/state/job_controller.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace job_termination_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::Delete;
using fixtures::JobsAndPods;
using fixtures::JobStatus;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::PodsOf;
using fixtures::RunUntil;
using fixtures::StartOneNode;

// A Job of 1-GPU pods that run `duration` and take `shutdown` to exit after SIGTERM.
Json JobOf(const std::string& name, const Json& spec, const std::string& duration,
           const std::string& shutdown = "0s") {
  Json container = {{"name", "main"},
                    {"image", "busybox"},
                    {"resources",
                     {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
                      {"limits", {{"nvidia.com/gpu", "1"}}}}}};
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"terminationGracePeriodSeconds", 30},
                   {"containers", Json::array({container})}};
  Json annotations = {{"arbiter.dev/duration", duration}, {"arbiter.dev/shutdown-time", shutdown}};
  Json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "default"}}}};
  j["spec"]["template"]["metadata"]["annotations"] = annotations;
  j["spec"]["template"]["spec"] = pod_spec;
  if (spec.is_object()) j["spec"].update(spec);
  return j;
}

// The conditions as "Type=Status/Reason", in order.
std::vector<std::string> Conditions(const Cluster& c, const std::string& job) {
  std::vector<std::string> out;
  for (const auto& cond : JobStatus(c, job).value("conditions", Json::array()))
    out.push_back(cond.value("type", "") + "=" + cond.value("status", "") + "/" +
                  cond.value("reason", ""));
  return out;
}

int Live(const Cluster& c, const std::string& job) {  // neither finished nor being deleted
  int n = 0;
  for (const Json* p : PodsOf(c, job))
    n += !p->at("metadata").contains("deletionTimestamp") &&
         p->at("status").value("phase", "") != "Succeeded" &&
         p->at("status").value("phase", "") != "Failed";
  return n;
}

std::string FirstPod(const Cluster& c, const std::string& job) {
  return PodsOf(c, job).at(0)->at("metadata").value("name", "");
}

Mutation DeleteWith(Millis t, const std::string& kind, const std::string& name,
                    const std::string& propagation) {
  Mutation m = Delete(t, kind, "default", name);
  m.propagation = propagation;
  return m;
}

// kube's syncJob at the deadline: FailureTarget (DeadlineExceeded) at once, the running pods
// deleted and counted as failed; Failed only once none of them is left terminating.
TEST(JobTermination, DeadlineSetsFailureTargetThenFailedOnceThePodsAreGone) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c,
     Create(kT0, JobOf("slow", {{"parallelism", 2}, {"activeDeadlineSeconds", 30}}, "1h", "20s")));
  RunUntil(c, kT0 + 30000);
  EXPECT_EQ(Conditions(c, "slow"),
            (std::vector<std::string>{"FailureTarget=True/DeadlineExceeded"}));
  EXPECT_EQ(JobStatus(c, "slow").value("failed", 0), 2);
  EXPECT_EQ(JobStatus(c, "slow").value("terminating", -1), 2);
  EXPECT_EQ(JobStatus(c, "slow").value("active", 0), 0);
  EXPECT_EQ(JobStatus(c, "slow").value("ready", -1), 0);
  EXPECT_EQ(JobStatus(c, "slow")["uncountedTerminatedPods"], Json::object());
  for (const Json* p : PodsOf(c, "slow")) {
    EXPECT_TRUE(p->at("metadata").contains("deletionTimestamp"));
    EXPECT_FALSE(p->at("metadata").contains("finalizers"));  // counted
  }
  RunUntil(c, kT0 + 45000);  // still terminating (20 s to exit)
  EXPECT_EQ(Conditions(c, "slow").size(), 1u);
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(PodsOf(c, "slow").size(), 0u);
  EXPECT_EQ(Conditions(c, "slow"), (std::vector<std::string>{"FailureTarget=True/DeadlineExceeded",
                                                             "Failed=True/DeadlineExceeded"}));
  EXPECT_EQ(JobStatus(c, "slow").value("terminating", -1), 0);
  EXPECT_EQ(JobStatus(c, "slow").value("failed", 0), 2);
  EXPECT_FALSE(JobStatus(c, "slow").contains("completionTime"));
}

// With no pod left running, FailureTarget and Failed come in the same sync (kube appends both).
TEST(JobTermination, BackoffLimitWithNothingRunningSetsBothConditionsAtOnce) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json job = JobOf("flaky", {{"backoffLimit", 0}}, "10s");
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "1";
  Ok(c, Create(kT0, job));
  RunUntil(c, kT0 + 10000);
  EXPECT_EQ(Conditions(c, "flaky"),
            (std::vector<std::string>{"FailureTarget=True/BackoffLimitExceeded",
                                      "Failed=True/BackoffLimitExceeded"}));
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 1);
}

// TerminatingOrFailed (the default without a podFailurePolicy): a pod the user deletes is a
// failure at once (kube's isPodFailed), its finalizer comes off, and its replacement is made
// while it still terminates.
TEST(JobTermination, TerminatingOrFailedCountsADeletedPodAndReplacesItAtOnce) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("w", {{"parallelism", 1}, {"completions", 1}}, "1h", "20s")));
  EXPECT_EQ(c.store().Get("Job", "default", "w")->at("spec").value("podReplacementPolicy", ""),
            "TerminatingOrFailed");
  Ok(c, Delete(kT0 + 1000, "Pod", "default", FirstPod(c, "w")));
  EXPECT_EQ(JobStatus(c, "w").value("failed", 0), 1);
  EXPECT_EQ(JobStatus(c, "w").value("terminating", -1), 1);
  RunUntil(c, kT0 + 12000);  // the replacement waits the back-off from the deletion: 10 s
  EXPECT_EQ(Live(c, "w"), 1);
  EXPECT_EQ(JobStatus(c, "w").value("active", 0), 1);
}

// Failed: the terminating pod holds its place: no replacement, not counted, until it has exited
// (then Failed, counted, gone) -- kube's onlyReplaceFailedPods.
TEST(JobTermination, FailedReplacementWaitsUntilTheDeletedPodHasFailed) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("w", {{"podReplacementPolicy", "Failed"}}, "1h", "20s")));
  const std::string first = FirstPod(c, "w");
  Ok(c, Delete(kT0 + 1000, "Pod", "default", first));
  EXPECT_EQ(JobStatus(c, "w").value("failed", 0), 0);
  EXPECT_EQ(JobStatus(c, "w").value("terminating", -1), 1);
  EXPECT_EQ(JobStatus(c, "w").value("active", 0), 0);
  RunUntil(c, kT0 + 15000);
  EXPECT_EQ(Live(c, "w"), 0);  // not replaced while it terminates
  RunUntil(c, kT0 + 21000);    // exited at 21 s: counted as failed, gone
  EXPECT_EQ(c.store().Get("Pod", "default", first), nullptr);
  EXPECT_EQ(JobStatus(c, "w").value("failed", 0), 1);
  EXPECT_EQ(JobStatus(c, "w").value("terminating", -1), 0);
  RunUntil(c, kT0 + 40000);
  EXPECT_EQ(Live(c, "w"), 1);  // replaced (after the back-off)
}

// A podFailurePolicy makes Failed the default, and allows no other value.
TEST(JobTermination, PodReplacementPolicyDefaultsAndIsValidatedAsKubernetesDoes) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json with_policy = JobOf(
      "p",
      {{"podFailurePolicy",
        {{"rules",
          {{{"action", "Ignore"}, {"onExitCodes", {{"operator", "In"}, {"values", {3}}}}}}}}}},
      "1h");
  Ok(c, Create(kT0, with_policy));
  EXPECT_EQ(c.store().Get("Job", "default", "p")->at("spec").value("podReplacementPolicy", ""),
            "Failed");
  with_policy["metadata"]["name"] = "q";
  with_policy["spec"]["podReplacementPolicy"] = "TerminatingOrFailed";
  MutationResult r = c.Apply(Create(kT0, with_policy));
  ASSERT_FALSE(r.ok());
  ASSERT_FALSE(r.error->diagnostics.items.empty());
  EXPECT_EQ(r.error->diagnostics.items[0].field_path, "spec.podReplacementPolicy");
  EXPECT_EQ(r.error->diagnostics.items[0].message,
            "Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"");
  Json bad = JobOf("r", {{"podReplacementPolicy", "Never"}}, "1h");
  r = c.Apply(Create(kT0, bad));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).message,
            "Unsupported value: \"Never\": supported values: \"Failed\", \"TerminatingOrFailed\"");
}

// The Indexed success policy ends the Job with a pod running: SuccessCriteriaMet, the pod deleted
// (not counted), Complete once it is gone. Index 1's first pod is deleted at 1 s, so its
// replacement (made after the 10 s back-off) still runs when index 0 succeeds at 30 s.
TEST(JobTermination, SuccessCriteriaMetWaitsForTerminatingPodsBeforeComplete) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("lead",
                          {{"completionMode", "Indexed"},
                           {"completions", 2},
                           {"parallelism", 2},
                           {"successPolicy", {{"rules", {{{"succeededIndexes", "0"}}}}}}},
                          "30s", "20s")));
  std::string index1;
  for (const Json* p : PodsOf(c, "lead"))
    if (p->at("metadata").at("annotations").value(kJobCompletionIndex, "") == "1")
      index1 = p->at("metadata").value("name", "");
  Ok(c, Delete(kT0 + 1000, "Pod", "default", index1));
  RunUntil(c, kT0 + 12000);
  EXPECT_EQ(Live(c, "lead"), 2);  // index 1 again, made at 11 s
  RunUntil(c, kT0 + 30000);
  EXPECT_EQ(Conditions(c, "lead"),
            (std::vector<std::string>{"SuccessCriteriaMet=True/SuccessPolicy"}));
  EXPECT_EQ(JobStatus(c, "lead").value("terminating", -1), 1);
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(Conditions(c, "lead"),
            (std::vector<std::string>{"SuccessCriteriaMet=True/SuccessPolicy",
                                      "Complete=True/SuccessPolicy"}));
  EXPECT_EQ(JobStatus(c, "lead").value("completionTime", ""), KubeTime(kT0 + 50000));
  EXPECT_EQ(JobStatus(c, "lead").value("failed", 0), 1);  // the pod deleted at 1 s only
}

// DELETE's propagationPolicy. Orphan: the Job goes, its pods run on without the ownerReference
// and the tracking finalizer.
TEST(JobTermination, OrphanPropagationLeavesThePodsRunning) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("o", {{"parallelism", 2}, {"completions", 2}}, "1h")));
  Ok(c, DeleteWith(kT0 + 1000, "Job", "o", "Orphan"));
  EXPECT_EQ(c.store().Get("Job", "default", "o"), nullptr);
  ASSERT_EQ(PodsOf(c, "o").size(), 2u);
  for (const Json* p : PodsOf(c, "o")) {
    EXPECT_EQ(p->at("status").value("phase", ""), "Running");
    EXPECT_FALSE(p->at("metadata").contains("ownerReferences"));
    EXPECT_FALSE(p->at("metadata").contains("finalizers"));
    EXPECT_FALSE(p->at("metadata").contains("deletionTimestamp"));
  }
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(PodsOf(c, "o").size(), 2u);
}

// Background: the Job goes at once, its pods are deleted and go once they exit.
TEST(JobTermination, BackgroundPropagationDeletesThePods) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("b", {{"parallelism", 2}, {"completions", 2}}, "1h", "5s")));
  Ok(c, DeleteWith(kT0 + 1000, "Job", "b", "Background"));
  EXPECT_EQ(c.store().Get("Job", "default", "b"), nullptr);
  for (const Json* p : PodsOf(c, "b")) EXPECT_TRUE(p->at("metadata").contains("deletionTimestamp"));
  RunUntil(c, kT0 + 10000);
  EXPECT_EQ(PodsOf(c, "b").size(), 0u);
  EXPECT_TRUE(c.engine().CheckInvariants().ok());
}

// Foreground: the Job stays, being deleted (finalizer foregroundDeletion), until its last pod is
// gone; no pod is made meanwhile.
TEST(JobTermination, ForegroundPropagationKeepsTheJobUntilItsPodsAreGone) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("f", {{"parallelism", 2}, {"completions", 4}}, "1h", "5s")));
  Ok(c, DeleteWith(kT0 + 1000, "Job", "f", "Foreground"));
  const Json* job = c.store().Get("Job", "default", "f");
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->at("metadata").contains("deletionTimestamp"));
  EXPECT_EQ(job->at("metadata").value("finalizers", Json::array()),
            Json::array({"foregroundDeletion"}));
  EXPECT_EQ(Live(c, "f"), 0);
  RunUntil(c, kT0 + 3000);
  ASSERT_NE(c.store().Get("Job", "default", "f"), nullptr);
  EXPECT_EQ(Live(c, "f"), 0);
  RunUntil(c, kT0 + 10000);
  EXPECT_EQ(PodsOf(c, "f").size(), 0u);
  EXPECT_EQ(c.store().Get("Job", "default", "f"), nullptr);
}

// A replay of the mutations, or a snapshot restore, gives the same Jobs and pods through a
// FailureTarget, a deleted pod held under podReplacementPolicy Failed and a foreground delete.
TEST(JobTermination, AReplayOrARestoreMakesTheSameDecisions) {
  Cluster a("0000abcd");
  std::vector<Mutation> h = {
      Create(kT0, Namespace("default")), Create(kT0, Node("gpu-0", 8)),
      Create(kT0, JobOf("slow", {{"parallelism", 2}, {"activeDeadlineSeconds", 30}}, "1h", "20s")),
      Create(kT0, JobOf("w", {{"podReplacementPolicy", "Failed"}}, "1h", "20s"))};
  for (const auto& m : h) Ok(a, m);
  h.push_back(Delete(kT0 + 1000, "Pod", "default", FirstPod(a, "w")));
  Ok(a, h.back());
  for (Millis t = kT0 + 5000; t <= kT0 + 70000; t += 5000) {
    h.push_back(Advance(t));
    Ok(a, h.back());
  }
  h.push_back(DeleteWith(kT0 + 71000, "Job", "w", "Foreground"));
  Ok(a, h.back());
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(a.Snapshot()).ok());
  h.push_back(Advance(kT0 + 100000));
  Ok(a, h.back());
  Ok(restored, h.back());
  Cluster b("0000abcd");
  for (const auto& m : h) Ok(b, Mutation::Decode(m.Encode()).value());
  EXPECT_EQ(JobsAndPods(b), JobsAndPods(a));
  EXPECT_EQ(JobsAndPods(restored), JobsAndPods(a));
  EXPECT_EQ(Conditions(a, "slow").back(), "Failed=True/DeadlineExceeded");
  EXPECT_EQ(a.store().Get("Job", "default", "w"), nullptr);
}

}  // namespace job_termination_test
}  // namespace arbiter::server
