// batch/v1 Jobs on the daemon's virtual nodes (server/state/job_controller.h, cluster_jobs.cc;
// issue 27): the Cluster makes a Job's pods, counts them, retries, suspends, fails at the deadline,
// cascades deletes, and a replay or a snapshot gives the same Jobs and pods.
#include "server/state/job_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace job_controller_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::Delete;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;

// A Job whose pods ask 1 GPU and run `duration`; `spec` is merged into its spec.
Json JobOf(const std::string& name, const Json& spec, const std::string& duration = "1m") {
  Json pod_spec = {{"restartPolicy", "Never"},
                   {"containers",
                    {{{"name", "main"},
                      {"image", "busybox"},
                      {"resources",
                       {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", "1"}}},
                        {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}};
  Json j = {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec",
             {{"template",
               {{"metadata", {{"annotations", {{"arbiter.dev/duration", duration}}}}},
                {"spec", pod_spec}}}}}};
  if (spec.is_object()) j["spec"].update(spec);
  return j;
}

Mutation Update(Millis t, Json obj) {
  Mutation m = Create(t, obj);
  m.op = Mutation::Op::kUpdate;
  m.name = obj["metadata"]["name"];
  return m;
}

// A cluster with namespace default and one node of 8 GPUs.
void Start(Cluster& c) {
  Ok(c, Create(kT0, Namespace("default")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
}

// Advances to every due instant up to `end`, then to `end`.
void RunUntil(Cluster& c, Millis end) {
  while (auto due = c.NextDue()) {
    if (*due > end) break;
    Ok(c, Advance(*due));
  }
  Ok(c, Advance(end));
}

const Json& JobStatus(const Cluster& c, const std::string& name) {
  return c.store().Get("Job", "default", name)->at("status");
}

std::vector<const Json*> PodsOf(const Cluster& c, const std::string& job) {
  std::vector<const Json*> out;
  for (const Json* p : c.store().List("Pod", "default"))
    if (p->at("metadata").value("labels", Json::object()).value(kJobNameLabel, "") == job)
      out.push_back(p);
  return out;
}

int CountPhase(const Cluster& c, const std::string& job, const std::string& phase) {
  int n = 0;
  for (const Json* p : PodsOf(c, job)) n += p->at("status").value("phase", "") == phase;
  return n;
}

// The condition of `type` ("" when absent) as "Status/Reason".
std::string Condition(const Cluster& c, const std::string& job, const std::string& type) {
  for (const auto& cond : JobStatus(c, job).value("conditions", Json::array()))
    if (cond.value("type", "") == type)
      return cond.value("status", "") + "/" + cond.value("reason", "");
  return "";
}

std::string Dump(const Cluster& c) {
  Json out = Json::array();
  for (const char* kind : {"Job", "Pod"})
    for (const Json* o : c.store().List(kind, "default")) out.push_back(*o);
  return out.dump();
}

TEST(JobController, ParallelismTwoCompletionsFourCompletesWithFourSucceeded) {
  Cluster c("0000abcd");
  Start(c);
  Ok(c, Create(kT0 + 1000, JobOf("train", {{"parallelism", 2}, {"completions", 4}})));
  ASSERT_EQ(PodsOf(c, "train").size(), 2u);
  EXPECT_EQ(CountPhase(c, "train", "Running"), 2);
  EXPECT_EQ(JobStatus(c, "train").value("active", 0), 2);
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
  EXPECT_EQ(Condition(c, "train", "Complete"), "True/CompletionsReached");
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
  Start(c);
  Ok(c, Create(kT0, JobOf("queue", {{"parallelism", 3}})));
  EXPECT_EQ(PodsOf(c, "queue").size(), 3u);
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(Condition(c, "queue", "Complete"), "True/CompletionsReached");
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
  Start(c);
  Ok(c, Create(kT0, Failing("flaky", 2)));
  RunUntil(c, kT0 + 15000);  // failed at 10 s: the next one waits 10 s
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 1);
  EXPECT_EQ(JobStatus(c, "flaky").value("active", 0), 0);
  EXPECT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 20000));  // the clock wakes then
  RunUntil(c, kT0 + 600000);
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 3);
  EXPECT_EQ(Condition(c, "flaky", "Failed"), "True/BackoffLimitExceeded");
  EXPECT_EQ(CountPhase(c, "flaky", "Failed"), 3);
  // Made at 0, at 10 + 10 and at 30 + 20 s.
  EXPECT_EQ(CreatedAt(c, "flaky"), (std::vector<int64_t>{0, 20, 50}));
  EXPECT_FALSE(JobStatus(c, "flaky").contains("completionTime"));
}

TEST(JobController, TheBackOffDoublesUpToTenMinutes) {
  Cluster c("0000abcd");
  Start(c);
  Ok(c, Create(kT0, Failing("flaky", 8)));
  RunUntil(c, kT0 + 3600000);
  EXPECT_EQ(Condition(c, "flaky", "Failed"), "True/BackoffLimitExceeded");
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
  Start(c);
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
  EXPECT_EQ(Condition(c, "idx", "Complete"), "True/CompletionsReached");
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
  Start(c);
  Ok(c, Create(kT0, WithPolicy("fatal", 42)));
  Ok(c, Create(kT0, WithPolicy("ignored", 3)));
  Ok(c, Create(kT0, WithPolicy("counted", 1)));
  RunUntil(c, kT0 + 35000);
  EXPECT_EQ(Condition(c, "fatal", "Failed"), "True/PodFailurePolicy");
  const std::string pod = PodsOf(c, "fatal").at(0)->at("metadata").value("name", "");
  std::string message;
  for (const auto& cond : JobStatus(c, "fatal")["conditions"])
    if (cond["type"] == "Failed") message = cond.value("message", "");
  EXPECT_EQ(message, "Container main for pod default/" + pod +
                         " failed with exit code 42 matching FailJob rule at index 1");
  // Exit code 3: not a failure (backoffLimit 0 is not reached), replaced at once (no back-off).
  EXPECT_EQ(Condition(c, "ignored", "Failed"), "");
  EXPECT_EQ(JobStatus(c, "ignored").value("failed", 0), 0);
  EXPECT_EQ(CreatedAt(c, "ignored"), (std::vector<int64_t>{0, 10, 20, 30}));
  // Exit code 1: counted, past backoffLimit 0.
  EXPECT_EQ(Condition(c, "counted", "Failed"), "True/BackoffLimitExceeded");
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
  Start(c);
  Ok(c, Create(kT0, JobOf("held", {{"parallelism", 2}, {"completions", 2}, {"suspend", true}})));
  EXPECT_EQ(PodsOf(c, "held").size(), 0u);
  EXPECT_EQ(Condition(c, "held", "Suspended"), "True/JobSuspended");
  EXPECT_FALSE(JobStatus(c, "held").contains("startTime"));

  Json job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = false;
  Ok(c, Update(kT0 + 1000, job));
  EXPECT_EQ(Condition(c, "held", "Suspended"), "False/JobResumed");
  EXPECT_EQ(CountPhase(c, "held", "Running"), 2);

  job = *c.store().Get("Job", "default", "held");
  job["spec"]["suspend"] = true;
  Ok(c, Update(kT0 + 2000, job));
  EXPECT_EQ(Condition(c, "held", "Suspended"), "True/JobSuspended");
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
  RunUntil(c, kT0 + 200000);
  EXPECT_EQ(Condition(c, "held", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(c, "held").value("succeeded", 0), 2);
}

TEST(JobController, ActiveDeadlineFailsTheJobAndDeletesItsPods) {
  Cluster c("0000abcd");
  Start(c);
  Ok(c, Create(kT0, JobOf("slow", {{"activeDeadlineSeconds", 30}}, "1h")));
  ASSERT_EQ(c.NextDue(), std::optional<Millis>(kT0 + 30000));
  RunUntil(c, kT0 + 30000);
  EXPECT_EQ(Condition(c, "slow", "Failed"), "True/DeadlineExceeded");
  for (const Json* p : PodsOf(c, "slow"))
    EXPECT_TRUE(p->at("metadata").contains("deletionTimestamp"));
  RunUntil(c, kT0 + 120000);
  EXPECT_EQ(PodsOf(c, "slow").size(), 0u);
  EXPECT_EQ(Condition(c, "slow", "Failed"), "True/DeadlineExceeded");
}

TEST(JobController, DeletingTheJobDeletesItsPods) {
  Cluster c("0000abcd");
  Start(c);
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

TEST(JobController, InvalidSpecsAreRefusedWithKubernetesMessages) {
  Cluster c("0000abcd");
  Start(c);
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
  EXPECT_EQ(Condition(first, "life", "Complete"), "True/CompletionsReached");
  EXPECT_EQ(JobStatus(first, "life").value("succeeded", 0), 5);
  EXPECT_EQ(Dump(restored), Dump(first));
  EXPECT_EQ(restored.decision_digest(), first.decision_digest());
}

}  // namespace job_controller_test
}  // namespace arbiter::server
