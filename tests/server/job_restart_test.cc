// batch/v1 Jobs under restartPolicy OnFailure and spec.managedBy (issue 27, "Realism"): a failed
// container restarted in place by the virtual kubelet (server/state/pod_status.h, CrashLoopAt:
// kubelet's doBackOff with flowcontrol.Backoff, 10 s doubling to 5 min, the first restart at once),
// the Job controller's pastBackoffLimitOnFailure, and a Job another controller manages (kube's
// managedByExternalController; pkg/apis/batch/validation for the field's checks).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"
#include "server/state/job_controller.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace job_restart_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::JobsAndPods;
using fixtures::JobStatus;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::PodsOf;
using fixtures::RunUntil;
using fixtures::StartOneNode;
using fixtures::Update;

// A Job of 1-GPU pods under restartPolicy OnFailure whose container fails with exit code 3 after
// `duration`.
Json CrashingJob(const std::string& name, const Json& spec, const std::string& duration = "5s") {
  Json container = {{"name", "main"},
                    {"image", "busybox"},
                    {"resources",
                     {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
                      {"limits", {{"nvidia.com/gpu", "1"}}}}}};
  Json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "default"}}}};
  j["spec"]["template"]["metadata"]["annotations"] = {{"arbiter.dev/duration", duration},
                                                      {"arbiter.dev/exit-code", "3"}};
  j["spec"]["template"]["spec"] = {{"restartPolicy", "OnFailure"},
                                   {"containers", Json::array({container})}};
  if (spec.is_object()) j["spec"].update(spec);
  return j;
}

const Json& Container(const Json& pod) { return pod.at("status").at("containerStatuses").at(0); }

std::string ReadyCondition(const Json& pod) {
  for (const auto& c : pod.at("status").at("conditions"))
    if (c.value("type", "") == "Ready") return c.value("status", "") + "/" + c.value("reason", "");
  return "";
}

std::vector<std::string> Conditions(const Cluster& c, const std::string& job) {
  std::vector<std::string> out;
  for (const auto& cond : JobStatus(c, job).value("conditions", Json::array()))
    out.push_back(cond.value("type", "") + "=" + cond.value("status", "") + "/" +
                  cond.value("reason", ""));
  return out;
}

int JobEvents(const Cluster& c, const std::string& reason) {
  int n = 0;
  for (const Json* e : c.store().List("Event", "default"))
    n += e->value("reason", "") == reason && e->at("involvedObject").value("kind", "") == "Job";
  return n;
}

// kubelet's schedule for a container that fails every 5 s: restart 1 at once (5 s), then after
// back-offs of 10, 20, 40 s from each failure: running 5-10 s, waiting 10-20, running 20-25,
// waiting 25-45, running 45-50, waiting 50-90.
TEST(JobRestart, CrashLoopAtFollowsKubeletsBackOff) {
  struct Want {
    Millis at;
    int64_t restarts;
    bool running;
    Millis backoff, next;
  };
  for (const Want& w : std::vector<Want>{{0, 0, true, 0, 5000},
                                         {4999, 0, true, 0, 5000},
                                         {5000, 1, true, 0, 10000},
                                         {10000, 1, false, 10000, 20000},
                                         {19999, 1, false, 10000, 20000},
                                         {20000, 2, true, 0, 25000},
                                         {30000, 2, false, 20000, 45000},
                                         {45000, 3, true, 0, 50000},
                                         {60000, 3, false, 40000, 90000}}) {
    const CrashLoop c = CrashLoopAt(0, 5000, w.at);
    EXPECT_EQ(c.restarts, w.restarts) << w.at;
    EXPECT_EQ(c.running, w.running) << w.at;
    EXPECT_EQ(c.running ? 0 : c.backoff, w.backoff) << w.at;
    EXPECT_EQ(c.next, w.next) << w.at;
  }
  // The back-off stops doubling at 5 min: after 10+20+40+80+160 s, every wait is 300 s.
  CrashLoop c = CrashLoopAt(0, 1000, 2000000);
  EXPECT_EQ(c.running ? c.next - c.started : c.backoff, c.running ? 1000 : 300000);
  // A run longer than 10 min outlasts the entry (2 x max): each failure restarts at once.
  c = CrashLoopAt(0, 700000, 3 * 700000 + 1);
  EXPECT_EQ(c.restarts, 3);
  EXPECT_TRUE(c.running);
  EXPECT_EQ(c.started, 3 * 700000);
}

// The same pod restarts in place: restartCount, lastState terminated with the exit code, waiting
// CrashLoopBackOff (kubelet's message) and Ready False during a back-off; it keeps its node; the
// Job counts no failed pod and makes no other.
TEST(JobRestart, AFailedContainerIsRestartedInPlace) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CrashingJob("crash", {{"backoffLimit", 10}})));
  ASSERT_EQ(PodsOf(c, "crash").size(), 1u);
  const std::string name = PodsOf(c, "crash")[0]->at("metadata").value("name", "");
  const std::string uid = PodsOf(c, "crash")[0]->at("metadata").value("uid", "");
  RunUntil(c, kT0 + 4000);
  EXPECT_EQ(Container(*PodsOf(c, "crash")[0]).value("restartCount", -1), 0);
  RunUntil(c, kT0 + 5000);
  {
    const Json& pod = *PodsOf(c, "crash").at(0);
    EXPECT_EQ(pod.at("status").value("phase", ""), "Running");
    EXPECT_EQ(Container(pod).value("restartCount", -1), 1);
    EXPECT_EQ(Container(pod)["state"]["running"]["startedAt"], KubeTime(kT0 + 5000));
    EXPECT_EQ(Container(pod)["lastState"]["terminated"]["exitCode"], 3);
    EXPECT_EQ(Container(pod)["lastState"]["terminated"]["reason"], "Error");
    EXPECT_EQ(Container(pod)["lastState"]["terminated"]["finishedAt"], KubeTime(kT0 + 5000));
  }
  RunUntil(c, kT0 + 12000);  // failed again at 10 s: back-off 10 s
  {
    const Json& pod = *PodsOf(c, "crash").at(0);
    EXPECT_EQ(pod.at("metadata").value("name", ""), name);
    EXPECT_EQ(pod.at("status").value("phase", ""), "Running");
    EXPECT_TRUE(pod.at("spec").contains("nodeName"));
    EXPECT_EQ(Container(pod).value("restartCount", -1), 1);
    EXPECT_EQ(Container(pod)["state"]["waiting"]["reason"], "CrashLoopBackOff");
    EXPECT_EQ(
        Container(pod)["state"]["waiting"]["message"],
        "back-off 10s restarting failed container=main pod=" + name + "_default(" + uid + ")");
    EXPECT_FALSE(Container(pod).value("ready", true));
    EXPECT_EQ(ReadyCondition(pod), "False/ContainersNotReady");
    EXPECT_EQ(JobStatus(c, "crash").value("ready", -1), 0);
    EXPECT_EQ(JobStatus(c, "crash").value("active", 0), 1);
  }
  RunUntil(c, kT0 + 20000);
  EXPECT_EQ(Container(*PodsOf(c, "crash").at(0)).value("restartCount", -1), 2);
  EXPECT_EQ(ReadyCondition(*PodsOf(c, "crash").at(0)), "True/");
  EXPECT_EQ(JobStatus(c, "crash").value("ready", -1), 1);
  RunUntil(c, kT0 + 60000);  // failed at 50 s, waits 40 s
  EXPECT_EQ(Container(*PodsOf(c, "crash").at(0)).value("restartCount", -1), 3);
  EXPECT_EQ(
      Container(*PodsOf(c, "crash").at(0))["state"]["waiting"]["message"].get<std::string>().rfind(
          "back-off 40s ", 0),
      0u);
  EXPECT_EQ(PodsOf(c, "crash").size(), 1u);
  EXPECT_FALSE(JobStatus(c, "crash").contains("failed"));
  EXPECT_TRUE(Conditions(c, "crash").empty());
  EXPECT_EQ(JobEvents(c, "SuccessfulCreate"), 1);
}

// kube's pastBackoffLimitOnFailure: the restarts reaching backoffLimit (3: at 45 s) fail the Job
// (BackoffLimitExceeded), its pod is deleted and counted as failed; with backoffLimit 0 the first
// restart does.
TEST(JobRestart, RestartsReachingTheBackoffLimitFailTheJob) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CrashingJob("three", {{"backoffLimit", 3}})));
  Ok(c, Create(kT0, CrashingJob("zero", {{"backoffLimit", 0}})));
  RunUntil(c, kT0 + 5000);
  EXPECT_EQ(Conditions(c, "zero"),
            (std::vector<std::string>{"FailureTarget=True/BackoffLimitExceeded",
                                      "Failed=True/BackoffLimitExceeded"}));
  EXPECT_EQ(JobStatus(c, "zero").value("failed", 0), 1);
  RunUntil(c, kT0 + 44999);
  EXPECT_TRUE(Conditions(c, "three").empty());
  EXPECT_EQ(Container(*PodsOf(c, "three").at(0)).value("restartCount", -1), 2);
  RunUntil(c, kT0 + 45000);
  EXPECT_EQ(Conditions(c, "three"),
            (std::vector<std::string>{"FailureTarget=True/BackoffLimitExceeded",
                                      "Failed=True/BackoffLimitExceeded"}));
  EXPECT_EQ(JobStatus(c, "three").value("failed", 0), 1);
  EXPECT_FALSE(JobStatus(c, "three").contains("active"));
  EXPECT_TRUE(PodsOf(c, "three").empty());
  EXPECT_EQ(JobEvents(c, "SuccessfulCreate"), 2);  // one pod each, never replaced
  EXPECT_EQ(JobEvents(c, "BackoffLimitExceeded"), 2);
}

// Under restartPolicy Never the same failing pod is replaced by a new one (nothing restarts in
// place), and a container that exits 0 under OnFailure completes as before.
TEST(JobRestart, NeverMakesANewPodAndSuccessIsUnchanged) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json never = CrashingJob("never", {{"backoffLimit", 1}});
  never["spec"]["template"]["spec"]["restartPolicy"] = "Never";
  Ok(c, Create(kT0, never));
  Json ok = CrashingJob("ok", {});
  ok["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "0";
  Ok(c, Create(kT0, ok));
  RunUntil(c, kT0 + 6000);
  EXPECT_EQ(JobStatus(c, "never").value("failed", 0), 1);
  EXPECT_EQ(Conditions(c, "ok").back(), "Complete=True/CompletionsReached");
  EXPECT_EQ(Container(*PodsOf(c, "ok").at(0)).value("restartCount", -1), 0);
}

// The restarts are derived from the engine's run and the clock: a replay of the mutations and a
// snapshot restore show the same pods at the same restart counts.
TEST(JobRestart, AReplayOrARestoreRestartsTheSame) {
  Cluster a("0000abcd");
  std::vector<Mutation> h = {Create(kT0, Namespace("default")), Create(kT0, Node("gpu-0", 8)),
                             Create(kT0, CrashingJob("crash", {{"backoffLimit", 4}}))};
  for (const auto& m : h) Ok(a, m);
  for (Millis t = kT0 + 3000; t <= kT0 + 30000; t += 3000) {
    h.push_back(Advance(t));
    Ok(a, h.back());
  }
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(a.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), a.NextDue());
  for (Millis t = kT0 + 31000; t <= kT0 + 100000; t += 7000) {
    h.push_back(Advance(t));
    Ok(a, h.back());
    Ok(restored, h.back());
  }
  h.push_back(Advance(kT0 + 101000));  // the deleted pod exits
  Ok(a, h.back());
  Ok(restored, h.back());
  Cluster b("0000abcd");
  for (const auto& m : h) Ok(b, Mutation::Decode(m.Encode()).value());
  EXPECT_EQ(JobsAndPods(b), JobsAndPods(a));
  EXPECT_EQ(JobsAndPods(restored), JobsAndPods(a));
  EXPECT_EQ(Conditions(a, "crash").back(), "Failed=True/BackoffLimitExceeded");
}

// spec.managedBy naming another controller (Kueue's MultiKueue): no pod, no status written; the
// built-in controller's own name runs it as without.
TEST(JobManagedBy, AnotherControllersJobIsLeftAlone) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CrashingJob("remote", {{"managedBy", "kueue.x-k8s.io/multikueue"}})));
  Json builtin = CrashingJob("local", {{"managedBy", "kubernetes.io/job-controller"}});
  builtin["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "0";
  Ok(c, Create(kT0, builtin));
  RunUntil(c, kT0 + 60000);
  const Json* remote = c.store().Get("Job", "default", "remote");
  ASSERT_NE(remote, nullptr);
  EXPECT_TRUE(PodsOf(c, "remote").empty());
  EXPECT_EQ(remote->at("status"), Json::object());  // kube-apiserver's at create, untouched
  EXPECT_EQ(Conditions(c, "local").back(), "Complete=True/CompletionsReached");
}

// kube's validateJobSpec for managedBy (IsDomainPrefixedPath, at most 63 bytes) and
// ValidateJobSpecUpdate (immutable), with its messages.
TEST(JobManagedBy, IsValidatedAndImmutableAsKubernetesDoes) {
  Cluster c("0000abcd");
  StartOneNode(c);
  auto errors = [&](const Json& by) {
    MutationResult r = c.Apply(Create(kT0, CrashingJob("bad", {{"managedBy", by}})));
    std::vector<std::string> out;
    if (r.ok()) return out;
    for (const auto& d : r.error->diagnostics.items) out.push_back(d.field_path + ": " + d.message);
    return out;
  };
  EXPECT_EQ(errors("multikueue"),
            (std::vector<std::string>{"spec.managedBy: Invalid value: \"multikueue\": must be a "
                                      "domain-prefixed path (such as \"acme.io/foo\")"}));
  EXPECT_EQ(
      errors("Kueue.io/x"),
      (std::vector<std::string>{
          "spec.managedBy: Invalid value: \"Kueue.io\": a lowercase RFC 1123 subdomain "
          "must consist of lower case alphanumeric characters, '-' or '.', and must start "
          "and end with an alphanumeric character (e.g. 'example.com', regex used for "
          "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}));
  EXPECT_EQ(
      errors("kueue.io/a b"),
      (std::vector<std::string>{"spec.managedBy: Invalid value: \"a b\": Invalid path (regex "
                                "used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"}));
  EXPECT_EQ(errors("example.com/" + std::string(52, 'a')),
            (std::vector<std::string>{"spec.managedBy: Too long: may not be more than 63 bytes"}));
  EXPECT_EQ(errors(""), (std::vector<std::string>{"spec.managedBy: Required value"}));
  EXPECT_TRUE(errors("example.com/" + std::string(51, 'a')).empty());
  EXPECT_EQ(c.store().Get("Job", "default", "bad") != nullptr, true);

  Ok(c, Create(kT0, CrashingJob("moved", {{"managedBy", "kueue.x-k8s.io/multikueue"}})));
  Json changed = *c.store().Get("Job", "default", "moved");
  changed["spec"]["managedBy"] = "kubernetes.io/job-controller";
  MutationResult r = c.Apply(Update(kT0 + 1, changed));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path, "spec.managedBy");
  EXPECT_EQ(r.error->diagnostics.items.at(0).message,
            "Invalid value: \"kubernetes.io/job-controller\": field is immutable");
}

// Regression: the daemon's clock sleeps until Cluster::NextDue(), and a crash-looping pod's
// container changes are due only through its Job. Right after the create (no other mutation, no
// Advance), the first failure must already be due: without it `arbiter serve` never woke up and
// the pod stayed Running with restartCount 0 until some other request came
// (KubeServeJobsTest.RestartsUnderOnFailureReachingTheBackoffLimitFailTheJob).
TEST(JobRestart, TheFirstFailureIsDueRightAfterTheCreate) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CrashingJob("three", {{"backoffLimit", 3}})));
  ASSERT_EQ(PodsOf(c, "three").size(), 1u);
  const auto due = c.NextDue();
  ASSERT_TRUE(due.has_value());
  EXPECT_EQ(*due, kT0 + 5000);  // the container's first failure (5 s), restarted at once
  Ok(c, Advance(*due));
  const auto next = c.NextDue();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, kT0 + 10000);  // the restarted run fails 5 s later
  EXPECT_EQ(Container(*PodsOf(c, "three").at(0)).value("restartCount", -1), 1);
}

}  // namespace job_restart_test
}  // namespace arbiter::server
