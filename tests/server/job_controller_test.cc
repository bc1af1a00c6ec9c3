// batch/v1 Jobs on the daemon's virtual nodes (server/job_controller.h, cluster_jobs.cc; issue
// 27): the Cluster makes a Job's pods, counts them, retries, suspends, fails at the deadline,
// cascades deletes, and a replay or a snapshot gives the same Jobs and pods.
#include "server/job_controller.h"

#include <gtest/gtest.h>

#include <map>

#include "cluster_fixtures.h"
#include "server/cluster.h"

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

TEST(JobController, FailedPodsAreRetriedUpToTheBackoffLimit) {
  Cluster c("0000abcd");
  Start(c);
  // Each pod exits with code 1 after its 10 s (arbiter.dev/exit-code): Failed.
  Json job = JobOf("flaky", {{"backoffLimit", 2}}, "10s");
  job["spec"]["template"]["metadata"]["annotations"]["arbiter.dev/exit-code"] = "1";
  Ok(c, Create(kT0, job));
  RunUntil(c, kT0 + 15000);
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 1);
  EXPECT_EQ(JobStatus(c, "flaky").value("active", 0), 1);
  RunUntil(c, kT0 + 600000);
  EXPECT_EQ(JobStatus(c, "flaky").value("failed", 0), 3);
  EXPECT_EQ(Condition(c, "flaky", "Failed"), "True/BackoffLimitExceeded");
  EXPECT_EQ(CountPhase(c, "flaky", "Failed"), 3);
  EXPECT_EQ(PodsOf(c, "flaky").size(), 3u);
  EXPECT_FALSE(JobStatus(c, "flaky").contains("completionTime"));
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

std::string Dump(const Cluster& c) {
  Json out = Json::array();
  for (const char* kind : {"Job", "Pod"})
    for (const Json* o : c.store().List(kind, "default")) out.push_back(*o);
  return out.dump();
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
