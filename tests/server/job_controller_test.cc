// batch/v1 Jobs on the daemon's virtual nodes (server/state/job_controller.h, cluster_jobs.cc;
// issue 27): the Cluster makes a Job's pods, counts them, retries, suspends, fails at the deadline,
// cascades deletes, and a replay or a snapshot gives the same Jobs and pods.
#include "server/state/job_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"
#include "server/state/job_controller_detail.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace job_controller_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::Delete;
using fixtures::JobCondition;
using fixtures::JobStatus;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::PodsOf;
using fixtures::RunUntil;
using fixtures::StartOneNode;
using fixtures::Update;

// A Job whose pods ask 1 GPU and run `duration`; `spec` is merged into its spec.
Json JobOf(const std::string& name, const Json& spec, const std::string& duration = "1m") {
  return fixtures::GpuJob("default", name, spec, duration);
}

int CountPhase(const Cluster& c, const std::string& job, const std::string& phase) {
  int n = 0;
  for (const Json* p : PodsOf(c, job)) n += p->at("status").value("phase", "") == phase;
  return n;
}

std::string Dump(const Cluster& c) {
  Json out = Json::array();
  for (const char* kind : {"Job", "Pod"})
    for (const Json* o : c.store().List(kind, "default")) out.push_back(*o);
  return out.dump();
}

TEST(JobController, ParallelismTwoCompletionsFourCompletesWithFourSucceeded) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0 + 1000, JobOf("train", {{"parallelism", 2}, {"completions", 4}})));
  ASSERT_EQ(PodsOf(c, "train").size(), 2u);
  EXPECT_EQ(CountPhase(c, "train", "Running"), 2);
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
  // Made, bound and Ready in the create's mutation: ready says so at once (it said 0 until the
  // next mutation).
  EXPECT_EQ(JobStatus(c, "train").value("ready", -1), 2);
  EXPECT_TRUE(JobStatus(c, "train").contains("startTime"));
  const Json& pod = *PodsOf(c, "train")[0];
  const Json& job = *c.store().Get("Job", "default", "train");
  const std::string uid = job["metadata"]["uid"];
  EXPECT_EQ(pod["metadata"]["labels"][kControllerUidLabel], uid);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(pod["metadata"]["name"].get<std::string>().rfind("train-", 0), 0u);
  EXPECT_EQ(pod["metadata"]["name"].get<std::string>().size(), std::string("train-xxxxx").size());

  RunUntil(c, kT0 + 62000);  // the first two finished, two more made
  EXPECT_EQ(JobStatus(c, "train").value("succeeded", 0), 2);
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
  EXPECT_EQ(PodsOf(c, "train").size(), 4u);
  RunUntil(c, kT0 + 200000);
  EXPECT_EQ(JobStatus(c, "train").value("succeeded", 0), 4);
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 0);
  EXPECT_EQ(JobCondition(c, "train", "Complete"), "True/CompletionsReached");
  EXPECT_TRUE(JobStatus(c, "train").contains("completionTime"));
  EXPECT_EQ(CountPhase(c, "train", "Succeeded"), 4);
  EXPECT_EQ(PodsOf(c, "train").size(), 4u);
  for (const Json* p : PodsOf(c, "train"))  // counted: the tracking finalizer is off
    EXPECT_FALSE(p->at("metadata").contains("finalizers"));
  std::map<std::string, int> events;  // the Job controller's Events about the Job
  for (const Json* e : c.store().List("Event", "default"))
    if (e->at("involvedObject").value("kind", "") == "Job") ++events[e->value("reason", "")];
  EXPECT_EQ(events["SuccessfulCreate"], 4);
  EXPECT_EQ(events["Completed"], 1);
  EXPECT_EQ(job["metadata"]["labels"][kJobNameLabel], "train");  // the template's labels
}

TEST(JobController, WorkQueueIsDoneWhenOneSucceededAndNoneRuns) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("queue", {{"parallelism", 3}})));
  EXPECT_EQ(PodsOf(c, "queue").size(), 3u);
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(JobCondition(c, "queue", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(c, "queue").value("succeeded", 0), 3);
  EXPECT_EQ(PodsOf(c, "queue").size(), 3u);  // none made after the first success
}

// The creation times of a Job's pods, in seconds after kT0, oldest first.
std::vector<int64_t> CreatedAt(const Cluster& c, const std::string& job) {
  std::vector<int64_t> out;
  for (const Json* p : PodsOf(c, job))
    out.push_back((ParseRfc3339(p->at("metadata").value("creationTimestamp", "")).value() - kT0) /
                  1000);
  std::sort(out.begin(), out.end());
  return out;
}

// A Job whose pods run 10 s and exit with code 1 (arbiter.dev/exit-code): Failed.
Json Failing(const std::string& name, int backoff_limit) {
  Json job = JobOf(name, {{"backoffLimit", backoff_limit}}, "10s");
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "1";
  return job;
}

TEST(JobController, FailedPodsAreRetriedAfterTheBackOffUpToTheBackoffLimit) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, Failing("flaky", 2)));
  RunUntil(c, kT0 + 15000);  // failed at 10 s: the next one waits 10 s
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 1);
  EXPECT_EQ(JobStatus(c, "flaky").value("active", 0), 0);
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 20000));  // the clock wakes then
  RunUntil(c, kT0 + 600000);
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 3);
  EXPECT_EQ(JobCondition(c, "flaky", "Failed"), "True/BackoffLimitExceeded");
  EXPECT_EQ(CountPhase(c, "flaky", "Failed"), 3);
  // Made at 0, at 10 + 10 and at 30 + 20 s.
  EXPECT_EQ(CreatedAt(c, "flaky"), (std::vector<int64_t>{0, 20, 50}));
  EXPECT_FALSE(JobStatus(c, "flaky").contains("completionTime"));
}

TEST(JobController, TheBackOffDoublesUpToTenMinutes) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, Failing("flaky", 8)));
  RunUntil(c, kT0 + 3600000);
  EXPECT_EQ(JobCondition(c, "flaky", "Failed"), "True/BackoffLimitExceeded");
  const std::vector<int64_t> at = CreatedAt(c, "flaky");
  ASSERT_EQ(at.size(), 9u);
  std::vector<int64_t> waits;  // from a pod's failure (10 s after its creation) to the next pod
  for (size_t i = 1; i < at.size(); ++i) waits.push_back(at[i] - at[i - 1] - 10);
  EXPECT_EQ(waits, (std::vector<int64_t>{10, 20, 40, 80, 160, 320, 600, 600}));
}

// A finished pod of `job` (counted: no finalizer) that ended `at` ms after kT0.
Json FinishedPod(const std::string& name, const std::string& phase, Millis at) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"creationTimestamp", KubeTime(kT0)},
            {"labels", {{kControllerUidLabel, "u"}}}}},
          {"status",
           {{"phase", phase},
            {"containerStatuses",
             {{{"name", "main"},
               {"state", {{"terminated", {{"finishedAt", KubeTime(kT0 + at)}}}}}}}}}}};
}

TEST(JobController, TheBackOffCountsTheFailuresAfterTheLastSuccess) {
  Json job = JobOf("mixed", {{"completions", 5}, {"backoffLimit", 6}});
  DefaultJob(job, "u");
  job["status"] = {{"succeeded", 1}, {"failed", 2}, {"startTime", KubeTime(kT0)}};
  const Json f1 = FinishedPod("a", "Failed", 100000), ok = FinishedPod("b", "Succeeded", 200000),
             f2 = FinishedPod("c", "Failed", 300000);
  // One failure after the success: 10 s from 300 s.
  JobPlan plan = PlanJob(job, {&f1, &ok, &f2}, kT0 + 305000);
  EXPECT_EQ(plan.create, 0);
  EXPECT_EQ(plan.due, std::optional<Millis>(kT0 + 310000));
  EXPECT_EQ(PlanJob(job, {&f1, &ok, &f2}, kT0 + 310000).create, 1);
  // Without the success both count: 20 s.
  EXPECT_EQ(PlanJob(job, {&f1, &f2}, kT0 + 305000).due, std::optional<Millis>(kT0 + 320000));
  // A success last: none.
  const Json ok2 = FinishedPod("d", "Succeeded", 301000);
  EXPECT_EQ(PlanJob(job, {&f1, &ok, &f2, &ok2}, kT0 + 302000).create, 1);
}

TEST(JobController, ABackOffSurvivesAReplayAndASnapshotRestore) {
  Cluster first("0000abcd");
  std::vector<Mutation> h = {Create(kT0, Namespace("default")), Create(kT0, Node("gpu-0", 8)),
                             Create(kT0, Failing("flaky", 3))};
  for (const auto& m : h) Ok(first, m);
  while (auto due = first.NextDue()) {  // to the second failure (at 30 s): back-off to 50 s
    if (*due > kT0 + 30000) break;
    h.push_back(Advance(*due));
    Ok(first, h.back());
  }
  ASSERT_EQ(JobStatus(first, "flaky").value("failed", 0), 2);
  ASSERT_EQ(first.NextDue(), std::optional<Millis>(kT0 + 50000));
  Cluster replayed("0000abcd");
  for (const auto& m : h) Ok(replayed, Mutation::Decode(m.Encode()).value());
  EXPECT_EQ(replayed.NextDue(), first.NextDue());
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(first.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), first.NextDue());
  for (Cluster* c : {&first, &replayed, &restored}) RunUntil(*c, kT0 + 120000);
  EXPECT_EQ(CreatedAt(first, "flaky"), (std::vector<int64_t>{0, 20, 50, 100}));
  EXPECT_EQ(CreatedAt(replayed, "flaky"), CreatedAt(first, "flaky"));
  EXPECT_EQ(CreatedAt(restored, "flaky"), CreatedAt(first, "flaky"));
  EXPECT_EQ(Dump(restored), Dump(first));
}

TEST(JobController, IndexedPodsCarryTheirIndexAndEachIndexCompletesOnce) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0,
               JobOf("idx", {{"completionMode", "Indexed"}, {"completions", 5}, {"parallelism", 2}},
                     "10s")));
  ASSERT_EQ(PodsOf(c, "idx").size(), 2u);
  std::map<std::string, const Json*> by_index;
  for (const Json* p : PodsOf(c, "idx"))
    by_index[p->at("metadata")["annotations"].value(kJobCompletionIndex, "")] = p;
  ASSERT_EQ(by_index.size(), 2u);
  ASSERT_TRUE(by_index.count("0") && by_index.count("1"));
  const Json& pod1 = *by_index["1"];
  EXPECT_EQ(pod1["metadata"]["labels"][kJobCompletionIndex], "1");
  EXPECT_EQ(pod1["spec"]["hostname"], "idx-1");
  EXPECT_EQ(pod1["metadata"]["name"].get<std::string>().rfind("idx-1-", 0), 0u);
  EXPECT_EQ(pod1["spec"]["containers"][0]["env"][0]["name"], "JOB_COMPLETION_INDEX");
  RunUntil(c, kT0 + 10000);  // 0 and 1 done; 2 and 3 made
  EXPECT_EQ(JobStatus(c, "idx").value("completedIndexes", ""), "0,1");
  EXPECT_EQ(JobStatus(c, "idx").value("succeeded", 0), 2);
  RunUntil(c, kT0 + 20000);
  EXPECT_EQ(JobStatus(c, "idx").value("completedIndexes", ""), "0-3");
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(JobStatus(c, "idx").value("completedIndexes", ""), "0-4");
  EXPECT_EQ(JobStatus(c, "idx").value("succeeded", 0), 5);
  EXPECT_EQ(JobCondition(c, "idx", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(PodsOf(c, "idx").size(), 5u);
}

TEST(JobController, CompletedIndexesAreWrittenAsKubernetesDoes) {
  EXPECT_EQ(FormatIndexes({0, 1, 2, 3, 5}), "0-3,5");
  EXPECT_EQ(FormatIndexes({1, 2}), "1,2");
  EXPECT_EQ(FormatIndexes({4}), "4");
  EXPECT_EQ(FormatIndexes({}), "");
  EXPECT_EQ(FormatIndexes({0, 2, 3, 4, 7, 8}), "0,2-4,7,8");
  EXPECT_EQ(ParseIndexes("0,2-4,7,8"), (std::vector<int64_t>{0, 2, 3, 4, 7, 8}));
  EXPECT_EQ(ParseIndexes("x,3"), (std::vector<int64_t>{3}));
}

// A Job whose pods run 10 s and exit with `code`, under a podFailurePolicy: Ignore 3, FailJob 42
// (the rest are counted).
Json WithPolicy(const std::string& name, int code) {
  Json job = Failing(name, 0);
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] =
      std::to_string(code);
  job["spec"]["podFailurePolicy"] = {
      {"rules",
       {{{"action", "Ignore"}, {"onExitCodes", {{"operator", "In"}, {"values", {3}}}}},
        {{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}, {"values", {42}}}}}}}};
  return job;
}

TEST(JobController, PodFailurePolicyFailsTheJobIgnoresOrCountsByExitCode) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, WithPolicy("fatal", 42)));
  Ok(c, Create(kT0, WithPolicy("ignored", 3)));
  Ok(c, Create(kT0, WithPolicy("counted", 1)));
  RunUntil(c, kT0 + 35000);
  EXPECT_EQ(JobCondition(c, "fatal", "Failed"), "True/PodFailurePolicy");
  const std::string pod = PodsOf(c, "fatal").at(0)->at("metadata").value("name", "");
  std::string message;
  for (const auto& cond : JobStatus(c, "fatal")["conditions"])
    if (cond["type"] == "Failed") message = cond.value("message", "");
  EXPECT_EQ(message, "Container main for pod default/" + pod +
                         " failed with exit code 42 matching FailJob rule at index 1");
  // Exit code 3: not a failure (backoffLimit 0 is not reached), replaced at once (no back-off).
  EXPECT_EQ(JobCondition(c, "ignored", "Failed"), "");
  EXPECT_EQ(JobStatus(c, "ignored").value("failed", 0), 0);
  EXPECT_EQ(CreatedAt(c, "ignored"), (std::vector<int64_t>{0, 10, 20, 30}));
  // Exit code 1: counted, past backoffLimit 0.
  EXPECT_EQ(JobCondition(c, "counted", "Failed"), "True/BackoffLimitExceeded");
  EXPECT_EQ(JobStatus(c, "counted").value("failed", 0), 1);

  Json on_failure = WithPolicy("bad", 1);
  on_failure["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure";
  on_failure["spec"]["podFailurePolicy"]["rules"][0]["action"] = "Retry";
  MutationResult r = c.Apply(Create(kT0 + 40000, on_failure));
  ASSERT_FALSE(r.ok());
  std::map<std::string, std::string> errors;
  for (const auto& d : r.error->diagnostics.items) errors[d.field_path] = d.message;
  EXPECT_EQ(errors["spec.template.spec.restartPolicy"],
            "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is "
            "specified");
  EXPECT_EQ(errors["spec.podFailurePolicy.rules[0].action"],
            "Unsupported value: \"Retry\": supported values: \"Count\", \"FailIndex\", "
            "\"FailJob\", \"Ignore\"");
}

TEST(JobController, SuspendDeletesActivePodsAndResumeMakesThemAgain) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("held", {{"parallelism", 2}, {"completions", 2}, {"suspend", true}})));
  EXPECT_EQ(PodsOf(c, "held").size(), 0u);
  EXPECT_EQ(JobCondition(c, "held", "Suspended"), "True/JobSuspended");
  EXPECT_FALSE(JobStatus(c, "held").contains("startTime"));

  Json job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = false;
  Ok(c, Update(kT0 + 1000, job));
  EXPECT_EQ(JobCondition(c, "held", "Suspended"), "False/JobResumed");
  EXPECT_EQ(CountPhase(c, "held", "Running"), 2);
  std::set<std::string> names;  // every pod the Job made has a name of its own
  for (const Json* p : PodsOf(c, "held")) names.insert(p->at("metadata").value("name", ""));

  job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = true;
  Ok(c, Update(kT0 + 2000, job));
  EXPECT_EQ(JobCondition(c, "held", "Suspended"), "True/JobSuspended");
  EXPECT_EQ(JobStatus(c, "held").value("active", 0), 0);
  for (const Json* p : PodsOf(c, "held"))
    EXPECT_TRUE(p->at("metadata").contains("deletionTimestamp"));
  RunUntil(c, kT0 + 60000);  // past the grace period: gone, and not counted as failed
  EXPECT_EQ(PodsOf(c, "held").size(), 0u);
  EXPECT_EQ(JobStatus(c, "held").value("failed", 0), 0);

  job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = false;
  Ok(c, Update(kT0 + 61000, job));
  EXPECT_EQ(CountPhase(c, "held", "Running"), 2);
  for (const Json* p : PodsOf(c, "held"))  // (journal format 4 named them as the first two)
    EXPECT_TRUE(names.insert(p->at("metadata").value("name", "")).second);
  RunUntil(c, kT0 + 200000);
  EXPECT_EQ(JobCondition(c, "held", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(c, "held").value("succeeded", 0), 2);
}

// A Job resumed while the pods its suspend deleted still terminate makes its pods again at once:
// the Job never counted those pods, and they are no failures to back off from (kube's back-off
// record holds the pods it counts). Journal format 4 backed off 10 s here (JobRules::kFormat4).
TEST(JobController, AResumeRightAfterASuspendIsNotBackedOff) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json held = JobOf("held", {{"parallelism", 2}, {"completions", 2}}, "10m");
  held["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "20s";
  Ok(c, Create(kT0, held));
  ASSERT_EQ(CountPhase(c, "held", "Running"), 2);
  Json job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = true;
  Ok(c, Update(kT0 + 2000, job));
  RunUntil(c, kT0 + 3000);
  job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = false;
  Ok(c, Update(kT0 + 3000, job));  // the first two exit 20 s after their SIGTERM
  EXPECT_EQ(JobStatus(c, "held").value("active", 0), 2);
  EXPECT_EQ(JobStatus(c, "held").value("terminating", 0), 2);
  EXPECT_EQ(PodsOf(c, "held").size(), 4u);
  EXPECT_EQ(CreatedAt(c, "held"), (std::vector<int64_t>{0, 0, 3, 3}));
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(JobStatus(c, "held").value("failed", 0), 0);
  EXPECT_EQ(CreatedAt(c, "held"), (std::vector<int64_t>{3, 3}));
}

// A pod a user deletes is counted failed at once and backs the Job off while it terminates; a
// snapshot taken meanwhile keeps what the Job counted (the pod no longer carries the finalizer),
// and the restored cluster backs off to the same instant.
TEST(JobController, ACountedPodStillTerminatingBacksOffAfterASnapshotRestore) {
  Cluster first("0000abcd");
  StartOneNode(first);
  Ok(first, Create(kT0, JobOf("one", {}, "10m")));
  ASSERT_EQ(PodsOf(first, "one").size(), 1u);
  const std::string pod = PodsOf(first, "one")[0]->at("metadata").value("name", "");
  Ok(first, Delete(kT0 + 1000, "Pod", "default", pod));
  ASSERT_EQ(JobStatus(first, "one").value("failed", 0), 1);
  ASSERT_EQ(JobStatus(first, "one").value("terminating", 0), 1);
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(first.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), first.NextDue());
  for (Cluster* c : {&first, &restored}) RunUntil(*c, kT0 + 60000);
  EXPECT_EQ(CreatedAt(first, "one"), (std::vector<int64_t>{11}));  // 10 s after the failure
  EXPECT_EQ(CreatedAt(restored, "one"), CreatedAt(first, "one"));
  EXPECT_EQ(Dump(restored), Dump(first));
}

// The Job controller's events about `job`, as (reason, count, message) in name order.
std::vector<std::tuple<std::string, int64_t, std::string>> JobEvents(const Cluster& c,
                                                                     const std::string& job) {
  std::vector<std::tuple<std::string, int64_t, std::string>> out;
  for (const Json* e : c.store().List("Event", "default"))
    if (e->at("involvedObject").value("kind", "") == "Job" &&
        e->at("involvedObject").value("name", "") == job)
      out.emplace_back(e->value("reason", ""), e->value("count", 0), e->value("message", ""));
  return out;
}

// A Job of 40 pods reports them as kube's job controller does through client-go's recorder
// (EventCorrelator): 9 SuccessfulCreate events, a tenth combining the next 16, then nothing
// until the spam filter's bucket refills (one event an object every 5 minutes).
TEST(JobController, ABigJobsEventsAreCombinedAndRateLimitedAsKubesRecorderDoes) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, Node("big", 64)));
  Ok(c, Create(kT0, JobOf("wide", {{"parallelism", 40}, {"completions", 40}}, "10m")));
  ASSERT_EQ(PodsOf(c, "wide").size(), 40u);
  const auto events = JobEvents(c, "wide");
  ASSERT_EQ(events.size(), 10u);
  int distinct = 0;
  for (const auto& [reason, count, message] : events) {
    EXPECT_EQ(reason, "SuccessfulCreate");
    if (message.rfind("(combined from similar events): Created pod: wide-", 0) == 0) {
      EXPECT_EQ(count, 16);
    } else {
      EXPECT_EQ(count, 1);
      EXPECT_EQ(message.rfind("Created pod: wide-", 0), 0u) << message;
      ++distinct;
    }
  }
  EXPECT_EQ(distinct, 9);
}

// A LimitRange refusing the pods of JobOf (they ask 1 cpu; at least 2 a container).
Json CpuFloor() {
  return {{"apiVersion", "v1"},
          {"kind", "LimitRange"},
          {"metadata", {{"name", "floor"}, {"namespace", "default"}}},
          {"spec", {{"limits", {{{"type", "Container"}, {"min", {{"cpu", "2"}}}}}}}}};
}

// A pod create the Job cannot make (LimitRanger) is reported as kube's FailedCreate Warning, in
// kube-apiserver's words. It is retried by the clock after its back-off (journal format 9; format
// 8 also at each mutation), each time under a new name (as generateName gives in kube): the
// recorder combines the 10th and later ones into one event.
TEST(JobController, ARefusedPodCreateIsAFailedCreateWarningCombinedOverRetries) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CpuFloor()));
  Ok(c, Create(kT0 + 1000, JobOf("small", {})));
  EXPECT_EQ(PodsOf(c, "small").size(), 0u);
  auto events = JobEvents(c, "small");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(std::get<0>(events[0]), "FailedCreate");
  const std::string& message = std::get<2>(events[0]);
  EXPECT_EQ(message.rfind("Error creating: pods \"small-", 0), 0u) << message;
  EXPECT_NE(message.find("\" is forbidden: LimitRange default/floor: minimum cpu usage per "
                         "Container is 2, but request is 1"),
            std::string::npos)
      << message;
  Ok(c, Create(kT0 + 2000, Namespace("other")));  // another mutation: no retry
  EXPECT_EQ(JobEvents(c, "small").size(), 1u);
  for (int i = 0; i < 12; ++i) Ok(c, Advance(*c.NextDue()));  // the clock's: retried
  events = JobEvents(c, "small");
  ASSERT_EQ(events.size(), 10u);
  int64_t combined = 0;
  for (const auto& [reason, count, text] : events) {
    EXPECT_EQ(reason, "FailedCreate");
    if (text.rfind("(combined from similar events): Error creating: pods", 0) == 0)
      combined = count;
  }
  EXPECT_EQ(combined, 4);  // the 10th to the 13th refusal
}

// PoolPolicy quota.maxSubmittedPerNamespace holds a Job's pods as it holds a user's: the Job makes
// what the limit leaves (3 of 5) and reports the refusal as FailedCreate; once pods finish, its
// retries make the rest.
TEST(JobController, ASubmitLimitHoldsAJobsPodsUntilSomeFinish) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, Json{{"apiVersion", "arbiter.dev/v1alpha1"},
                         {"kind", "PoolPolicy"},
                         {"metadata", {{"name", "pool"}}},
                         {"spec", {{"quota", {{"maxSubmittedPerNamespace", 3}}}}}}));
  Ok(c, Create(kT0 + 1000, JobOf("wide", {{"parallelism", 5}, {"completions", 5}}, "10s")));
  EXPECT_EQ(PodsOf(c, "wide").size(), 3u);
  const auto events = JobEvents(c, "wide");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(std::get<0>(events.back()), "FailedCreate");
  EXPECT_NE(std::get<2>(events.back()).find("quota.maxSubmittedPerNamespace"), std::string::npos)
      << std::get<2>(events.back());
  for (Millis t = kT0 + 2000; t <= kT0 + 60000; t += 1000) Ok(c, Advance(t));
  EXPECT_EQ(CountPhase(c, "wide", "Succeeded"), 5);
  EXPECT_EQ(JobCondition(c, "wide", "Complete"), "True/CompletionsReached");
}

// Found by a hostile-tenant trial: a Job whose template set spec.priority (no class, no global
// default) got pods of that priority, above every other tenant's, though a pod created with it is
// refused. The Job's pods pass the Priority admission as a user's (journal format 7): a
// FailedCreate in kube-apiserver's words, no pod; the priority its class gives is admitted. Records
// of formats 1-6 replay as they were answered (the pod made with the template's priority).
TEST(JobController, AJobsPodsPassThePriorityAdmission) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, fixtures::PriorityClass("batch", 100)));
  Json high = JobOf("high", {});
  high["spec"]["template"]["spec"]["priority"] = 1999999999;
  Ok(c, Create(kT0 + 1000, high));
  EXPECT_EQ(PodsOf(c, "high").size(), 0u);
  const auto events = JobEvents(c, "high");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(std::get<0>(events[0]), "FailedCreate");
  EXPECT_NE(std::get<2>(events[0]).find(
                "\" is forbidden: the integer value of priority (1999999999) must not be provided "
                "in pod spec; priority admission controller computed 0 from the given "
                "PriorityClass name"),
            std::string::npos)
      << std::get<2>(events[0]);
  Json classed = JobOf("classed", {});
  classed["spec"]["template"]["spec"]["priorityClassName"] = "batch";
  classed["spec"]["template"]["spec"]["priority"] = 100;
  Ok(c, Create(kT0 + 2000, classed));
  ASSERT_EQ(PodsOf(c, "classed").size(), 1u);
  EXPECT_EQ(PodsOf(c, "classed")[0]->at("spec").value("priority", -1), 100);

  c.SetRecordFormat(6);
  Json old = JobOf("old", {});
  old["spec"]["template"]["spec"]["priority"] = 1999999999;
  Ok(c, Create(kT0 + 3000, old));
  c.SetRecordFormat(7);
  ASSERT_EQ(PodsOf(c, "old").size(), 1u);
  EXPECT_EQ(PodsOf(c, "old")[0]->at("spec").value("priority", -1), 1999999999);
}

// A refused create is tried again after kube's back-off (1 s doubling to 60 s) even when no
// mutation comes (found by a new-user trial: an idle cluster never retried); a restore from a
// snapshot keeps the instant; once the pods are made, no retry is due.
TEST(JobController, ARefusedCreateIsRetriedAfterABackOffWithoutAMutation) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, CpuFloor()));
  Ok(c, Create(kT0 + 1000, JobOf("small", {}, "10m")));
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 2000));
  Ok(c, Advance(kT0 + 2000));
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 4000));
  Ok(c, Advance(kT0 + 4000));
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 8000));
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), c.NextDue());
  EXPECT_EQ(JobEvents(c, "small").size(), 3u);  // three FailedCreate
  Ok(c, Delete(kT0 + 5000, "LimitRange", "default", "floor"));
  EXPECT_EQ(PodsOf(c, "small").size(), 0u);  // (the retry is the clock's, at its instant)
  Ok(c, Advance(kT0 + 8000));
  EXPECT_EQ(PodsOf(c, "small").size(), 1u);
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 8000 + 600000));  // the pod's run alone
}

TEST(JobController, ActiveDeadlineFailsTheJobAndDeletesItsPods) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("slow", {{"activeDeadlineSeconds", 30}}, "1h")));
  ASSERT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 30000));
  RunUntil(c, kT0 + 30000);
  EXPECT_EQ(JobCondition(c, "slow", "Failed"), "True/DeadlineExceeded");
  for (const Json* p : PodsOf(c, "slow"))
    EXPECT_TRUE(p->at("metadata").contains("deletionTimestamp"));
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(PodsOf(c, "slow").size(), 0u);
  EXPECT_EQ(JobCondition(c, "slow", "Failed"), "True/DeadlineExceeded");
}

TEST(JobController, DeletingTheJobDeletesItsPods) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("gone", {{"parallelism", 2}, {"completions", 3}}, "10s")));
  RunUntil(c, kT0 + 11000);  // two finished, one running
  ASSERT_EQ(PodsOf(c, "gone").size(), 3u);
  Ok(c, Delete(kT0 + 12000, "Job", "default", "gone"));
  EXPECT_EQ(c.store().Get("Job", "default", "gone"), nullptr);
  EXPECT_EQ(CountPhase(c, "gone", "Succeeded"), 0);  // finished ones went at once
  RunUntil(c, kT0 + 60000);
  EXPECT_EQ(PodsOf(c, "gone").size(), 0u);
  EXPECT_TRUE(c.engine().CheckInvariants().ok());
}

// spec.ttlSecondsAfterFinished: kube's TTL-after-finished controller deletes the finished Job
// (Foreground: its pods, then it) that long after its Complete condition; the clock wakes for it,
// and a restore from a snapshot keeps that instant. (Found by a new-user trial: it was ignored.)
TEST(JobController, AFinishedJobIsDeletedWithItsPodsItsTtlAfterItFinished) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("brief", {{"completions", 2}, {"ttlSecondsAfterFinished", 30}}, "10s")));
  RunUntil(c, kT0 + 25000);
  ASSERT_EQ(JobCondition(c, "brief", "Complete"), "True/CompletionsReached");
  const Millis done =
      ParseRfc3339(JobStatus(c, "brief").value("completionTime", "")).value();  // 20 s
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(done + 30000));
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), c.NextDue());
  for (Cluster* x : {&c, &restored}) {
    RunUntil(*x, done + 29999);
    EXPECT_NE(x->store().Get("Job", "default", "brief"), nullptr);
    EXPECT_EQ(PodsOf(*x, "brief").size(), 2u);
    RunUntil(*x, done + 30000);
    EXPECT_EQ(x->store().Get("Job", "default", "brief"), nullptr);
    EXPECT_EQ(PodsOf(*x, "brief").size(), 0u);
  }
  EXPECT_EQ(Dump(restored), Dump(c));
}

// A Job created without arbiter.dev/duration in its template (as `kubectl create job X --image=Y
// -- sleep 5` makes it) is accepted with a warning: its pods would run until deleted. (Found by a
// new-user trial: the Job never finished, and nothing said why.)
TEST(JobController, AJobWithoutADurationIsCreatedWithAWarning) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json bare = JobOf("bare", {});
  bare["spec"]["template"]["metadata"].erase("annotations");
  MutationResult r = c.Apply(Create(kT0, bare));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(
      r.warnings[0].rfind("spec.template.metadata.annotations[arbiter.dev/duration]: not set: "
                          "on arbiter's virtual nodes",
                          0),
      0u)
      << r.warnings[0];
  EXPECT_TRUE(c.Apply(Create(kT0, JobOf("timed", {}))).warnings.empty());
  Json update = *c.store().Get("Job", "default", "bare");  // said once, at the create
  update["metadata"]["labels"]["x"] = "y";
  EXPECT_TRUE(c.Apply(Update(kT0 + 1000, update)).warnings.empty());
}

// The clock alone (the daemon advances only at NextDue) takes a Job that fails with pods still
// terminating to Failed, and then to its TTL's end: the sync that writes Failed sets the instant.
// (Found by a review: no wake-up was set, and an idle daemon kept the Job.)
TEST(JobController, AJobFinishedByTheClockAloneIsDeletedAtItsTtlsEnd) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Json job = JobOf("late", {{"activeDeadlineSeconds", 5}, {"ttlSecondsAfterFinished", 20}}, "10m");
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "3s";
  Ok(c, Create(kT0, job));
  int advances = 0;
  while (auto due = c.NextDue()) {  // only the instants the daemon would wake at
    ASSERT_LT(++advances, 50);
    Ok(c, Advance(*due));
    if (!c.store().Get("Job", "default", "late")) break;
  }
  EXPECT_EQ(c.store().Get("Job", "default", "late"), nullptr);
  EXPECT_EQ(PodsOf(c, "late").size(), 0u);
  EXPECT_EQ(c.now(), kT0 + 8000 + 20000);  // Failed at 8 s (the pod exited 3 s after 5 s)
}

TEST(JobController, InvalidSpecsAreRefusedWithKubernetesMessages) {
  Cluster c("0000abcd");
  StartOneNode(c);
  MutationResult r = c.Apply(Create(kT0, JobOf("bad", {{"parallelism", -1}})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid);
  ASSERT_EQ(r.error->diagnostics.items.size(), 1u);
  EXPECT_EQ(r.error->diagnostics.items[0].field_path, "spec.parallelism");
  EXPECT_EQ(r.error->diagnostics.items[0].message,
            "Invalid value: -1: must be greater than or equal to 0");
  Json always = JobOf("bad", {});
  always["spec"]["template"]["spec"].erase("restartPolicy");
  r = c.Apply(Create(kT0, always));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path, "spec.template.spec.restartPolicy");
  EXPECT_EQ(r.error->diagnostics.items.at(0).message,
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"");
  Json no_containers = JobOf("bad", {});
  no_containers["spec"]["template"]["spec"].erase("containers");
  r = c.Apply(Create(kT0, no_containers));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path.rfind("spec.template.spec", 0), 0u);
  EXPECT_EQ(c.store().Get("Job", "default", "bad"), nullptr);
  EXPECT_TRUE(PodsOf(c, "bad").empty());

  // A name over 63 bytes (a DNS subdomain may be 253) cannot be its pods' job-name label value:
  // kube-apiserver's two causes on spec.template.labels. It used to be accepted, then made no pod.
  const std::string long_name = std::string(60, 'a') + "." + std::string(60, 'b');
  r = c.Apply(Create(kT0, JobOf(long_name, {})));
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error->diagnostics.items.size(), 2u);
  for (const auto& item : r.error->diagnostics.items) {
    EXPECT_EQ(item.field_path, "spec.template.labels");
    EXPECT_EQ(item.message, "Invalid value: \"" + long_name + "\": must be no more than 63 bytes");
  }
  EXPECT_EQ(c.store().Get("Job", "default", long_name), nullptr);

  Json indexed = JobOf("bad", {{"completionMode", "Indexed"}});
  r = c.Apply(Create(kT0, indexed));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path, "spec.completions");
  EXPECT_EQ(r.error->diagnostics.items.at(0).message,
            "Required value: when completion mode is Indexed");
  r = c.Apply(Create(kT0, JobOf("bad", {{"completionMode", "Sparse"}})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).message,
            "Unsupported value: \"Sparse\": supported values: \"NonIndexed\", \"Indexed\"");

  Ok(c, Create(kT0, JobOf("fixed", {{"completions", 2}})));
  Json changed = *c.store().Get("Job", "default", "fixed");
  changed["spec"]["completions"] = 3;
  r = c.Apply(Update(kT0 + 1, changed));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path, "spec.completions");
}

// --- spec.successPolicy (kube's success_policy.go) ---

// Ported from kube's TestMatchSuccessPolicy (completions 10): which rule the succeeded indexes
// meet.
TEST(JobController, SuccessPolicyRulesMatchAsKubernetesDoes) {
  auto match = [](const Json& rules, std::set<int64_t> succeeded) {
    Json spec = {
        {"completionMode", "Indexed"}, {"completions", 10}, {"successPolicy", {{"rules", rules}}}};
    return job_detail::MatchSuccessPolicy(spec, succeeded).value_or("-");
  };
  // "rules.succeededIndexes is specified; succeededIndexes matched rules"
  EXPECT_EQ(match({{{"succeededIndexes", "0-2"}}}, {0, 1, 2}), "Matched rules at index 0");
  // "... succeededIndexes didn't match rules"
  EXPECT_EQ(match({{{"succeededIndexes", "3"}}}, {0, 1, 2}), "-");
  // "rules.succeededCount is specified; succeededIndexes matched / didn't match rules"
  EXPECT_EQ(match({{{"succeededCount", 2}}}, {0, 1, 2}), "Matched rules at index 0");
  EXPECT_EQ(match({{{"succeededCount", 4}}}, {0, 1, 2}), "-");
  // "multiple rules; ... succeededIndexes met one of rules"
  EXPECT_EQ(match({{{"succeededIndexes", "9"}}, {{"succeededIndexes", "4,6"}}}, {0, 1, 2, 4, 6}),
            "Matched rules at index 1");
  // "rules.succeededIndexes and rules.succeededCount are specified; ... met / didn't match"
  EXPECT_EQ(match({{{"succeededIndexes", "3-6"}, {"succeededCount", 2}}}, {3, 4}),
            "Matched rules at index 0");
  EXPECT_EQ(match({{{"succeededIndexes", "3-6"}, {"succeededCount", 2}}}, {1, 2, 3}), "-");
  // "... rules is subset of succeededIndexes": the rule's 8-12 is cut at completions (8-9).
  EXPECT_EQ(match({{{"succeededIndexes", "2-4,8-12"}}}, {2, 3, 4, 8, 9}),
            "Matched rules at index 0");
  // "rules.succeededIndexes is invalid format", "... rules is an empty set": never met.
  EXPECT_EQ(match({{{"succeededIndexes", "invalid-form"}}}, {0, 1, 2}), "-");
  EXPECT_EQ(match({{{"succeededIndexes", ""}}}, {0, 1, 2}), "-");
  // No succeeded index: nothing is met.
  EXPECT_EQ(match({{{"succeededCount", 0}}}, {}), "-");
}

// An Indexed pod of Job "u" at `index` in `phase` (tracked: it still has the finalizer).
Json IndexedPod(int64_t index, const std::string& phase, Millis finished = 0,
                const std::string& failures = "") {
  Json pod = FinishedPod("p" + std::to_string(index) + phase, phase, finished);
  pod["metadata"]["annotations"] = {{kJobCompletionIndex, std::to_string(index)}};
  if (!failures.empty())
    pod["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] = failures;
  pod["metadata"]["finalizers"] = {kJobTrackingFinalizer};
  if (phase == "Running") pod["status"].erase("containerStatuses");
  return pod;
}

std::string ConditionOf(const Json& status, const std::string& type) {
  for (const auto& cond : status.value("conditions", Json::array()))
    if (cond.value("type", "") == type)
      return cond.value("status", "") + "/" + cond.value("reason", "") + "/" +
             cond.value("message", "");
  return "";
}

// After kube's TestSyncJobWithJobSuccessPolicy ("job with successPolicy; job has
// SuccessCriteriaMet condition if job meets to successPolicy and some indexes fail"): the rule is
// met, the running pods are deleted, and Complete waits until none is left.
TEST(JobController, SuccessPolicyMetDeletesTheRestThenCompletes) {
  Json job = JobOf("early", {{"completionMode", "Indexed"},
                             {"completions", 3},
                             {"parallelism", 3},
                             {"successPolicy", {{"rules", {{{"succeededIndexes", "0"}}}}}}});
  DefaultJob(job, "u");
  job["status"] = {{"startTime", KubeTime(kT0)}};
  const Json ok = IndexedPod(0, "Succeeded", 10000), r1 = IndexedPod(1, "Running"),
             r2 = IndexedPod(2, "Running");
  JobPlan plan = PlanJob(job, {&ok, &r1, &r2}, kT0 + 10000);
  EXPECT_EQ(ConditionOf(plan.status, "SuccessCriteriaMet"),
            "True/SuccessPolicy/Matched rules at index 0");
  EXPECT_EQ(ConditionOf(plan.status, "Complete"), "");
  EXPECT_EQ(plan.remove.size(), 2u);
  EXPECT_EQ(plan.create, 0);
  // The deleted pods lose the finalizer too (kube's canRemoveFinalizer once the Job is done), not
  // counted.
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"p0Succeeded", "p1Running", "p2Running"}));
  EXPECT_EQ(plan.status.value("failed", 0), 0);
  EXPECT_EQ(plan.status.value("completedIndexes", ""), "0");
  EXPECT_EQ(plan.status.value("terminating", 0), 2);

  job["status"] = plan.status;  // the two are terminating: not yet Complete
  Json d1 = r1, d2 = r2, counted = ok;
  d1["metadata"]["deletionTimestamp"] = d2["metadata"]["deletionTimestamp"] = KubeTime(kT0 + 10000);
  counted["metadata"].erase("finalizers");
  plan = PlanJob(job, {&counted, &d1, &d2}, kT0 + 12000);
  EXPECT_EQ(ConditionOf(plan.status, "Complete"), "");
  EXPECT_TRUE(plan.remove.empty());

  plan = PlanJob(job, {&counted}, kT0 + 40000);  // gone: Complete, as the rule said
  EXPECT_EQ(ConditionOf(plan.status, "Complete"), "True/SuccessPolicy/Matched rules at index 0");
  EXPECT_EQ(plan.status.value("completionTime", ""), KubeTime(kT0 + 40000));
  EXPECT_EQ(plan.status.value("succeeded", 0), 1);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "Completed");
}

// An Indexed Job's pod of an index another pod runs (the first by name keeps it) or of a
// completed one is deleted, and only that one: the others stay active, none is made.
TEST(JobController, APodOfARepeatedOrCompletedIndexGoesAndTheRestStay) {
  Json job = JobOf("ix", {{"completionMode", "Indexed"}, {"completions", 3}, {"parallelism", 3}});
  DefaultJob(job, "u");
  job["status"] = {{"startTime", KubeTime(kT0)}, {"completedIndexes", "2"}, {"succeeded", 1}};
  Json a = IndexedPod(0, "Running"), b = IndexedPod(0, "Running"), c = IndexedPod(1, "Running"),
       d = IndexedPod(2, "Running");
  b["metadata"]["name"] = "p0Running-again";
  d["metadata"]["name"] = "p2Running-late";
  const JobPlan plan = PlanJob(job, {&a, &b, &c, &d}, kT0 + 1000);
  // (Same creation time, unbound: by name, the last first.)
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"p2Running-late", "p0Running-again"}));
  EXPECT_EQ(plan.create, 0);
  EXPECT_FALSE(plan.more);
  EXPECT_EQ(plan.status.value("active", 0), 2);
  EXPECT_EQ(plan.status.value("terminating", 0), 2);
  EXPECT_EQ(plan.status.value("completedIndexes", ""), "2");
}

// A Job that fails at its deadline (30 s after kT0), under podReplacementPolicy Failed.
Json LateJob(int parallelism, int completions) {
  Json job = JobOf("late", {{"parallelism", parallelism},
                            {"completions", completions},
                            {"activeDeadlineSeconds", 30},
                            {"podReplacementPolicy", "Failed"}});
  DefaultJob(job, "u");
  job["status"] = {{"startTime", KubeTime(kT0)}};
  return job;
}

// A running pod of a Job, carrying the tracking finalizer, made `created` ms after kT0.
Json TrackedRunningPod(const std::string& name, Millis created) {
  Json pod = FinishedPod(name, "Running", 0);
  pod["status"].erase("containerStatuses");
  pod["metadata"]["creationTimestamp"] = KubeTime(kT0 + created);
  pod["metadata"]["finalizers"] = {kJobTrackingFinalizer};
  return pod;
}

// A failing Job counts at most `limit` of its unfinished pods in one plan (their finalizers off,
// added to status.failed): the ones it deletes then first, then the others in name order; the
// rest stay tracked for the next plan (JobPlan::more), and Failed waits for them (journal format
// 11). JobRules::kFormat10 counts every one at once.
TEST(JobController, AFailingJobCountsItsUnfinishedPodsALimitAPlanThoseItDeletesFirst) {
  Json job = LateJob(4, 6);
  std::vector<Json> pods;  // a0-a3 running (a3 the newest), t0 and t1 terminating (deleted)
  for (int i = 0; i < 4; ++i) pods.push_back(TrackedRunningPod("a" + std::to_string(i), i * 1000));
  for (const char* name : {"t0", "t1"}) {
    Json pod = pods[0];
    pod["metadata"]["name"] = name;
    pod["metadata"]["deletionTimestamp"] = KubeTime(kT0 + 5000);
    pods.push_back(pod);
  }
  std::vector<const Json*> view;
  for (const Json& p : pods) view.push_back(&p);
  const Millis late = kT0 + 31000;
  JobPlan plan = PlanJob(job, view, late, {}, JobRules::kCurrent, 3);
  EXPECT_EQ(ConditionOf(plan.status, "FailureTarget").substr(0, 21), "True/DeadlineExceeded");
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"a3", "a2", "a1"}));  // the newest first
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"a1", "a2", "a3"}));
  EXPECT_EQ(plan.status.value("failed", 0), 3);
  EXPECT_TRUE(plan.more);
  plan = PlanJob(job, view, late, {}, JobRules::kCurrent, 5);  // all 4 deleted, and t0
  EXPECT_EQ(plan.remove.size(), 4u);
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"a0", "a1", "a2", "a3", "t0"}));
  EXPECT_EQ(plan.status.value("failed", 0), 5);
  EXPECT_TRUE(plan.more);
  EXPECT_EQ(ConditionOf(plan.status, "Failed"), "");
  plan = PlanJob(job, view, late, {}, JobRules::kFormat10, 3);  // every one
  EXPECT_EQ(plan.counted.size(), 6u);
  EXPECT_EQ(plan.status.value("failed", 0), 6);

  // The next plan, with those 5 counted (finalizers off; the 4 deleted): t1 is counted.
  job["status"] = PlanJob(job, view, late, {}, JobRules::kCurrent, 5).status;
  for (Json& p : pods)
    if (p["metadata"]["name"] != "t1") {
      p["metadata"].erase("finalizers");
      p["metadata"]["deletionTimestamp"] = KubeTime(late);
    }
  plan = PlanJob(job, view, late + 1, {}, JobRules::kCurrent, 5);
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"t1"}));
  EXPECT_EQ(plan.status.value("failed", 0), 6);
  EXPECT_FALSE(plan.more);
  EXPECT_EQ(ConditionOf(plan.status, "Failed"), "");  // (5 still terminating)
}

// The unfinished pods an ending Job counts under podReplacementPolicy Failed are its active and
// its terminating ones together, in name order (the table keeps them in two lists): the ones it
// deletes now first, then the first others by name, whichever list they are in.
TEST(JobController, AnEndingJobsTerminatingPodsTakeTheirNamesPlaceAmongItsActiveOnes) {
  const Json job = LateJob(2, 4);
  std::vector<Json> pods;  // a0, a2 running (a2 the newer); a1, a3 terminating
  for (int i = 0; i < 4; ++i) {
    Json pod = TrackedRunningPod("a" + std::to_string(i), i * 1000);
    if (i % 2 == 1) pod["metadata"]["deletionTimestamp"] = KubeTime(kT0 + 5000);
    pods.push_back(pod);
  }
  const std::vector<const Json*> view{&pods[0], &pods[1], &pods[2], &pods[3]};
  const Millis late = kT0 + 31000;
  JobPlan plan = PlanJob(job, view, late, {}, JobRules::kCurrent, 2);
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"a2", "a0"}));
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"a0", "a2"}));  // room for no other
  EXPECT_TRUE(plan.more);
  plan = PlanJob(job, view, late, {}, JobRules::kCurrent, 3);
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"a0", "a1", "a2"}));
  EXPECT_EQ(plan.status.value("failed", 0), 3);
  EXPECT_TRUE(plan.more);
  plan = PlanJob(job, view, late, {}, JobRules::kCurrent, 4);  // every one: no more
  EXPECT_EQ(plan.counted, (std::vector<std::string>{"a0", "a1", "a2", "a3"}));
  EXPECT_FALSE(plan.more);
}

// Ported from kube's TestSyncJobWithJobSuccessPolicy, "job with successPolicy and
// backoffLimitPerIndex; ... job has a failed condition when job meets to both successPolicy and
// backoffLimitPerIndex" and "... job with SuccessCriteriaMet has never been transitioned to
// FailureTarget and Failed even if job meet backoffLimitPerIndex".
TEST(JobController, FailedIndexesBeatASuccessPolicyUnlessItWasMetBefore) {
  auto job_with = [](const Json& rule, const Json& status) {
    Json job = JobOf("both", {{"completionMode", "Indexed"},
                              {"completions", 2},
                              {"parallelism", 2},
                              {"backoffLimitPerIndex", 1},
                              {"successPolicy", {{"rules", {rule}}}}});
    DefaultJob(job, "u");
    job["status"] = status;
    job["status"]["startTime"] = KubeTime(kT0);
    return job;
  };
  const Json a = IndexedPod(0, "Failed", 1000, "1"), b = IndexedPod(1, "Succeeded", 1000);
  JobPlan plan = PlanJob(job_with({{"succeededIndexes", "0,1"}, {"succeededCount", 1}}, {}),
                         {&a, &b}, kT0 + 2000);
  EXPECT_EQ(ConditionOf(plan.status, "Failed"), "True/FailedIndexes/Job has failed indexes");
  EXPECT_EQ(ConditionOf(plan.status, "SuccessCriteriaMet"), "");
  EXPECT_EQ(plan.status.value("failedIndexes", ""), "0");
  EXPECT_EQ(plan.status.value("completedIndexes", ""), "1");
  EXPECT_EQ(plan.status.value("failed", 0), 1);
  EXPECT_EQ(plan.status.value("succeeded", 0), 1);

  const Json met = {{"type", "SuccessCriteriaMet"},
                    {"status", "True"},
                    {"reason", "SuccessPolicy"},
                    {"message", "Matched rules at index 0"}};
  plan = PlanJob(job_with({{"succeededIndexes", "1"}},
                          {{"succeeded", 1}, {"completedIndexes", "1"}, {"conditions", {met}}}),
                 {&a, &b}, kT0 + 2000);
  EXPECT_EQ(ConditionOf(plan.status, "Complete"), "True/SuccessPolicy/Matched rules at index 0");
  EXPECT_EQ(ConditionOf(plan.status, "Failed"), "");
  EXPECT_EQ(plan.status.value("failedIndexes", ""), "0");
  EXPECT_EQ(plan.status.value("failed", 0), 1);
}

TEST(JobController, ASuccessPolicyJobCompletesEarlyOnTheCluster) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, JobOf("early",
                          {{"completionMode", "Indexed"},
                           {"completions", 4},
                           {"parallelism", 2},
                           {"successPolicy", {{"rules", {{{"succeededCount", 2}}}}}}},
                          "10s")));
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(JobCondition(c, "early", "SuccessCriteriaMet"), "True/SuccessPolicy");
  EXPECT_EQ(JobCondition(c, "early", "Complete"), "True/SuccessPolicy");
  EXPECT_EQ(JobStatus(c, "early").value("succeeded", 0), 2);
  EXPECT_EQ(JobStatus(c, "early").value("completedIndexes", ""), "0,1");
  EXPECT_EQ(JobStatus(c, "early").value("completionTime", ""), KubeTime(kT0 + 10000));
  EXPECT_EQ(PodsOf(c, "early").size(), 2u);  // indexes 2 and 3 never ran
}

// --- spec.backoffLimitPerIndex ---

// Indexed, 2 indexes, pods that fail after 10 s; `spec` merged in.
Json PerIndex(const std::string& name, const Json& spec, int code = 1) {
  Json job =
      JobOf(name, {{"completionMode", "Indexed"}, {"completions", 2}, {"parallelism", 2}}, "10s");
  job["spec"].update(spec);
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] =
      std::to_string(code);
  return job;
}

std::vector<std::string> FailureCounts(const Cluster& c, const std::string& job) {
  std::vector<std::string> out;
  for (const Json* p : PodsOf(c, job))
    out.push_back(
        p->at("metadata")["annotations"].value(kJobCompletionIndex, "") + ":" +
        p->at("metadata")["annotations"].value("batch.kubernetes.io/job-index-failure-count", "-"));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JobController, EachIndexIsRetriedUpToBackoffLimitPerIndexThenFailed) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, PerIndex("per", {{"backoffLimitPerIndex", 1}})));
  const Json& spec = c.store().Get("Job", "default", "per")->at("spec");
  EXPECT_EQ(spec.value("backoffLimit", 0), 2147483647);  // kube's default with a per-index limit
  EXPECT_EQ(JobStatus(c, "per").value("failedIndexes", "x"), "");
  RunUntil(c, kT0 + 15000);  // both failed at 10 s: their replacements wait 10 s each
  EXPECT_EQ(JobStatus(c, "per").value("active", 0), 0);
  EXPECT_EQ(JobStatus(c, "per").value("failed", 0), 0);  // kept until the replacement is made
  RunUntil(c, kT0 + 25000);
  EXPECT_EQ(FailureCounts(c, "per"), (std::vector<std::string>{"0:0", "0:1", "1:0", "1:1"}));
  EXPECT_EQ(JobStatus(c, "per").value("failed", 0), 2);
  RunUntil(c, kT0 + 120000);  // the second failures (30 s) used the retry: both indexes failed
  EXPECT_EQ(JobStatus(c, "per").value("failedIndexes", ""), "0,1");
  EXPECT_EQ(JobCondition(c, "per", "Failed"), "True/FailedIndexes");
  EXPECT_EQ(JobStatus(c, "per").value("failed", 0), 4);
  EXPECT_EQ(CreatedAt(c, "per"), (std::vector<int64_t>{0, 0, 20, 20}));
}

// After kube's TestSyncJobWithBackoffLimitPerIndex ("job fails when maxFailedIndexes is exceeded"
// and "FailIndex action: the index fails at once").
TEST(JobController, MaxFailedIndexesAndFailIndexEndTheJob) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, PerIndex("many", {{"backoffLimitPerIndex", 0}, {"maxFailedIndexes", 1}})));
  Json fail_index = PerIndex("fatal", {{"backoffLimitPerIndex", 3}}, 42);
  fail_index["spec"]["podFailurePolicy"] = {
      {"rules",
       {{{"action", "FailIndex"}, {"onExitCodes", {{"operator", "In"}, {"values", {42}}}}}}}};
  Ok(c, Create(kT0, fail_index));
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(JobCondition(c, "many", "Failed"), "True/MaxFailedIndexesExceeded");
  EXPECT_EQ(JobStatus(c, "many").value("failedIndexes", ""), "0,1");
  EXPECT_EQ(JobCondition(c, "fatal", "Failed"), "True/FailedIndexes");
  EXPECT_EQ(JobStatus(c, "fatal").value("failedIndexes", ""), "0,1");
  EXPECT_EQ(PodsOf(c, "fatal").size(), 2u);  // no retry despite backoffLimitPerIndex 3
}

// kube's getPodsWithDelayedDeletionPerIndex and getRemainingTimePerIndex: the replacement waits
// 10 s x 2^(count) after the index's last failure and carries count + 1; other indexes go on.
TEST(JobController, AnIndexBacksOffOnItsOwnFailures) {
  Json job = PerIndex("own", {{"backoffLimitPerIndex", 4}});
  job["spec"]["completions"] = 3;
  DefaultJob(job, "u");
  job["status"] = {{"startTime", KubeTime(kT0)}, {"completedIndexes", "2"}, {"succeeded", 1}};
  const Json f0 = IndexedPod(0, "Failed", 100000, "2"), f1 = IndexedPod(1, "Failed", 100000);
  JobPlan plan = PlanJob(job, {&f0, &f1}, kT0 + 110000);  // index 1: 10 s done; index 0: 40 s
  EXPECT_EQ(plan.indexes, (std::vector<int64_t>{1}));
  ASSERT_EQ(plan.annotations.size(), 1u);
  EXPECT_EQ(plan.annotations[0].value("batch.kubernetes.io/job-index-failure-count", ""), "1");
  EXPECT_EQ(plan.due, std::optional<Millis>(kT0 + 140000));
  EXPECT_EQ(plan.counted, (std::vector<std::string>{}));  // both wait for their replacement
  plan = PlanJob(job, {&f0, &f1}, kT0 + 140000);
  EXPECT_EQ(plan.indexes, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(plan.annotations[0].value("batch.kubernetes.io/job-index-failure-count", ""), "3");
}

// Pods as the Job controller reads them: their facts, and each one's object.
struct PodsRead {
  explicit PodsRead(const std::vector<const Json*>& pods)
      : view{table, [this](const JobPodFacts& f) -> const Json& { return *trees.at(f.name); }} {
    for (const Json* p : pods) {
      JobPodFacts f = JobPodFacts::Of(*p);
      trees.emplace(f.name, p);
      table.Add(std::move(f));
    }
  }
  PodsRead(const PodsRead&) = delete;
  std::map<std::string, const Json*> trees;
  JobPodTable table;
  JobPodView view;
};

job_detail::IndexFailures TrackFailed(const Json& spec, const Json& status, const PodsRead& pods,
                                      const std::set<int64_t>& completed,
                                      const std::set<int64_t>& running) {
  return job_detail::TrackFailedIndexes(spec, status, pods.view, completed, running);
}

// Ported from kube's TestGetPodsWithDelayedDeletionPerIndex ("failed pods are kept corresponding
// to non-failed indexes are kept", "multiple failed pods for index with different failure count;
// only the pod with highest failure count is kept") and TestCalculateFailedIndexes.
TEST(JobController, TheLastFailedPodOfEachIndexStillToRunIsKept) {
  auto names = [](const job_detail::IndexFailures& f) {
    std::vector<std::string> out;
    for (const auto& [i, pod] : f.last_failed) out.push_back(pod->name);
    return out;
  };
  Json spec = {{"completionMode", "Indexed"}, {"completions", 3}, {"backoffLimitPerIndex", 1}};
  Json a = IndexedPod(0, "Failed", 1000, "0"), b = IndexedPod(1, "Failed", 1000, "1"),
       c = IndexedPod(2, "Failed", 1000, "0");
  c["metadata"]["name"] = "c";
  const PodsRead abc({&a, &b, &c});
  job_detail::IndexFailures f = TrackFailed(spec, Json::object(), abc, {}, {});
  EXPECT_EQ(f.failed, (std::set<int64_t>{1}));  // b used index 1's one retry
  EXPECT_EQ(names(f), (std::vector<std::string>{"p0Failed", "c"}));

  spec["backoffLimitPerIndex"] = 4;
  Json a1 = IndexedPod(0, "Failed", 1000, "0"), a3 = IndexedPod(0, "Failed", 1000, "2"),
       a2 = IndexedPod(0, "Failed", 1000, "1");
  // (Named so that the pod with the highest count is neither the first nor the last by name.)
  a1["metadata"]["name"] = "n0", a3["metadata"]["name"] = "n1", a2["metadata"]["name"] = "n2";
  const PodsRead a132({&a1, &a3, &a2}), only_a1({&a1});
  f = TrackFailed(spec, {{"failedIndexes", "2"}}, a132, {}, {});
  EXPECT_EQ(names(f), (std::vector<std::string>{"n1"}));  // a3
  EXPECT_EQ(f.failed, (std::set<int64_t>{2}));            // from the status
  // An index already running (replaced) or completed keeps none.
  EXPECT_TRUE(TrackFailed(spec, {}, only_a1, {}, {0}).last_failed.empty());
  EXPECT_TRUE(TrackFailed(spec, {}, only_a1, {0}, {}).last_failed.empty());
}

TEST(JobController, PerIndexFailuresSurviveAReplayAndASnapshotRestore) {
  Cluster first("0000abcd");
  std::vector<Mutation> h = {Create(kT0, Namespace("default")), Create(kT0, Node("gpu-0", 8)),
                             Create(kT0, PerIndex("per", {{"backoffLimitPerIndex", 2}}))};
  for (const auto& m : h) Ok(first, m);
  while (auto due = first.NextDue()) {  // to the second failures (30 s): back-off to 50 s
    if (*due > kT0 + 30000) break;
    h.push_back(Advance(*due));
    Ok(first, h.back());
  }
  ASSERT_EQ(first.NextDue(), std::optional<Millis>(kT0 + 50000));
  Cluster replayed("0000abcd");
  for (const auto& m : h) Ok(replayed, Mutation::Decode(m.Encode()).value());
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(first.Snapshot()).ok());
  EXPECT_EQ(restored.NextDue(), first.NextDue());
  for (Cluster* c : {&first, &replayed, &restored}) RunUntil(*c, kT0 + 300000);
  EXPECT_EQ(JobCondition(first, "per", "Failed"), "True/FailedIndexes");
  EXPECT_EQ(CreatedAt(first, "per"), (std::vector<int64_t>{0, 0, 20, 20, 50, 50}));
  EXPECT_EQ(Dump(replayed), Dump(first));
  EXPECT_EQ(Dump(restored), Dump(first));
}

TEST(JobController, SuccessPolicyAndPerIndexSpecsAreCheckedAsKubernetesDoes) {
  Cluster c("0000abcd");
  StartOneNode(c);
  auto errors = [&](const Json& spec) {
    Json job = JobOf("bad", spec);
    MutationResult r = c.Apply(Create(kT0, job));
    std::map<std::string, std::string> out;
    if (!r.ok())
      for (const auto& d : r.error->diagnostics.items) out[d.field_path] = d.message;
    return out;
  };
  const Json indexed = {{"completionMode", "Indexed"}, {"completions", 5}};
  auto with = [&](Json extra) {
    Json s = indexed;
    s.update(extra);
    return s;
  };
  EXPECT_EQ(
      errors({{"successPolicy", {{"rules", {{{"succeededCount", 1}}}}}}})["spec.successPolicy"],
      "Invalid value: {\"Rules\":[{\"SucceededIndexes\":null,\"SucceededCount\":1}]}: "
      "requires indexed completion mode");
  EXPECT_EQ(
      errors(with({{"successPolicy", {{"rules", Json::array()}}}}))["spec.successPolicy.rules"],
      "Required value: at least one rules must be specified when the successPolicy is "
      "specified");
  EXPECT_EQ(errors(with(
                {{"successPolicy", {{"rules", {Json::object()}}}}}))["spec.successPolicy.rules[0]"],
            "Required value: at least one of succeededCount or succeededIndexes must be specified");
  EXPECT_EQ(
      errors(with(
          {{"successPolicy",
            {{"rules",
              {{{"succeededIndexes", "3-1"}}}}}}}))["spec.successPolicy.rules[0].succeededIndexes"],
      "Invalid value: \"3-1\": error parsing succeededIndexes: non-increasing order, "
      "previous: 3, current: 1");
  EXPECT_EQ(
      errors(with(
          {{"successPolicy",
            {{"rules",
              {{{"succeededIndexes", "1,7"}}}}}}}))["spec.successPolicy.rules[0].succeededIndexes"],
      "Invalid value: \"1,7\": error parsing succeededIndexes: too large index: \"7\"");
  EXPECT_EQ(
      errors(with({{"successPolicy",
                    {{"rules",
                      {{{"succeededIndexes", "0-1"},
                        {"succeededCount", 3}}}}}}}))["spec.successPolicy.rules[0].succeededCount"],
      "Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified "
      "succeededIndexes field)");
  EXPECT_EQ(
      errors(with({{"successPolicy",
                    {{"rules",
                      {{{"succeededCount", 6}}}}}}}))["spec.successPolicy.rules[0].succeededCount"],
      "Invalid value: 6: must be less than or equal to 5 (the number of specified "
      "completions)");
  EXPECT_EQ(errors({{"backoffLimitPerIndex", 1}})["spec.backoffLimitPerIndex"],
            "Invalid value: 1: requires indexed completion mode");
  EXPECT_EQ(errors(with({{"maxFailedIndexes", 1}}))["spec.backoffLimitPerIndex"],
            "Required value: when maxFailedIndexes is specified");
  EXPECT_EQ(
      errors(with({{"backoffLimitPerIndex", 1}, {"maxFailedIndexes", 6}}))["spec.maxFailedIndexes"],
      "Invalid value: 6: must be less than or equal to completions");
  EXPECT_EQ(errors(with({{"backoffLimitPerIndex", -1}}))["spec.backoffLimitPerIndex"],
            "Invalid value: -1: must be greater than or equal to 0");
  Json fail_index = with({{"backoffLimitPerIndex", 1}});
  fail_index["podFailurePolicy"] = {
      {"rules",
       {{{"action", "FailIndex"}, {"onExitCodes", {{"operator", "In"}, {"values", {1}}}}}}}};
  EXPECT_TRUE(errors(fail_index).empty());  // accepted with a per-index limit
  fail_index.erase("backoffLimitPerIndex");
  Ok(c, Delete(kT0, "Job", "default", "bad"));
  EXPECT_EQ(errors(fail_index)["spec.podFailurePolicy.rules[0].action"],
            "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set");

  Ok(c, Create(kT0, JobOf("fixed", with({{"backoffLimitPerIndex", 1}}))));
  Json changed = *c.store().Get("Job", "default", "fixed");
  changed["spec"]["backoffLimitPerIndex"] = 2;
  MutationResult r = c.Apply(Update(kT0 + 1, changed));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->diagnostics.items.at(0).field_path, "spec.backoffLimitPerIndex");
}

// The mutations of a Job's life: create, a suspend, a resume, time.
std::vector<Mutation> History(Cluster& c) {
  std::vector<Mutation> h = {
      Create(kT0, Namespace("default")), Create(kT0, Node("gpu-0", 8)),
      Create(kT0 + 1, JobOf("life", {{"parallelism", 2}, {"completions", 5}}, "20s"))};
  for (const auto& m : h) Ok(c, m);
  while (auto due = c.NextDue()) {
    if (*due > kT0 + 45000) break;
    h.push_back(Advance(*due));
    Ok(c, h.back());
  }
  return h;
}

TEST(JobController, AReplayOrASnapshotRestoreKeepsJobsAndTheirPods) {
  Cluster first("0000abcd");
  const std::vector<Mutation> h = History(first);
  ASSERT_EQ(JobStatus(first, "life").value("succeeded", 0), 4);
  Cluster replayed("0000abcd");
  for (const auto& m : h) Ok(replayed, Mutation::Decode(m.Encode()).value());
  EXPECT_EQ(Dump(replayed), Dump(first));
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(first.Snapshot()).ok());
  EXPECT_EQ(Dump(restored), Dump(first));
  RunUntil(first, kT0 + 200000);
  RunUntil(restored, kT0 + 200000);
  EXPECT_EQ(JobCondition(first, "life", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(first, "life").value("succeeded", 0), 5);
  EXPECT_EQ(Dump(restored), Dump(first));
  EXPECT_EQ(restored.decision_digest(), first.decision_digest());
}

// A Job's pods are those labelled with its uid, whoever writes the label: what the Job controller
// keeps of them (Cluster::JobPodsOf) follows a pod relabelled out of the Job (released: journal
// format 4 left its ownerReference and finalizer) and one a user labels into it (Ok checks the
// kept facts against the pods after every mutation).
TEST(JobController, APodRelabelledOutOfItsJobIsReplacedAndOneLabelledInIsCounted) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0 + 1000, JobOf("train", {{"parallelism", 2}, {"completions", 2}}, "10m")));
  ASSERT_EQ(PodsOf(c, "train").size(), 2u);
  const std::string uid = c.store().Get("Job", "default", "train")->at("metadata").at("uid");
  Json out = *PodsOf(c, "train")[0];
  out["metadata"]["labels"][kControllerUidLabel] = "someone-else";
  Ok(c, Update(kT0 + 2000, out));
  EXPECT_EQ(PodsOf(c, "train").size(), 3u);  // the Job made one in its place
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
  EXPECT_EQ(JobStatus(c, "train").value("ready", -1), 2);
  // Released, as kube's ClaimPods releases it: no ownerReference to the Job, no tracking
  // finalizer (the controller's orphan-pod handling); it runs on, a pod of its own.
  const Json& released =
      c.store().Get("Pod", "default", out["metadata"]["name"].get<std::string>())->at("metadata");
  EXPECT_FALSE(released.contains("ownerReferences")) << released.dump();
  EXPECT_FALSE(released.contains("finalizers")) << released.dump();

  Json in = fixtures::PodIn("default", "stray", 1, "10m");
  in["metadata"]["labels"] = {{kControllerUidLabel, uid}};
  Ok(c, Create(kT0 + 3000, in));
  // Three active: the newest is surplus. `stray` was made last, and is deleted (it was Running: it
  // is terminating).
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
  ASSERT_NE(c.store().Get("Pod", "default", "stray"), nullptr);
  EXPECT_TRUE(
      c.store().Get("Pod", "default", "stray")->at("metadata").contains("deletionTimestamp"));
  out = *c.store().Get("Pod", "default", out["metadata"]["name"].get<std::string>());
  out["metadata"]["labels"][kControllerUidLabel] = uid;  // back in: again one too many
  Ok(c, Update(kT0 + 4000, out));
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
  EXPECT_EQ(JobStatus(c, "train").value("terminating", 0), 2);
}

// A namespace's delete takes its Jobs, and what the Job controller kept of their pods, with it
// (Ok fails when facts are kept for a Job no longer stored).
TEST(JobController, ANamespacesDeleteTakesItsJobsAndWhatWasKeptOfTheirPods) {
  Cluster c("0000abcd");
  StartOneNode(c);
  Ok(c, Create(kT0, Namespace("team")));
  Json job = JobOf("train", {{"parallelism", 2}}, "10m");
  job["metadata"]["namespace"] = "team";
  Ok(c, Create(kT0 + 1000, job));
  ASSERT_EQ(c.store().List("Pod", "team").size(), 2u);
  Ok(c, Delete(kT0 + 2000, "Namespace", "", "team"));
  EXPECT_EQ(c.store().Get("Job", "team", "train"), nullptr);
  RunUntil(c, kT0 + 120000);
  EXPECT_TRUE(c.store().List("Pod", "team").empty());
}

}  // namespace job_controller_test
}  // namespace arbiter::server
