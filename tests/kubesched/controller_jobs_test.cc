// batch/v1 Jobs admitted as a unit by the controller of `arbiter scheduler`
// (src/kubesched/controller_jobs.cc), without a cluster: Jobs and their pods as kube-apiserver and
// the Job controller make them, actions out. The same path against a real kube-apiserver and
// kube-controller-manager: tests/integration/kube_jobs_test.cc.
#include <gtest/gtest.h>

#include <map>

#include "kubesched/controller.h"

namespace arbiter::kubesched {
namespace controller_jobs_test {

constexpr Millis kT0 = 1764000000000;

Json Node(const std::string& name, int gpus) {
  const std::string g = std::to_string(gpus);
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"uid", "u-" + name}, {"labels", {{"type", "kwok"}}}}},
      {"status",
       {{"capacity", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", g}}},
        {"allocatable",
         {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}, {"nvidia.com/gpu", g}}}}}};
}

Json PodSpec(int gpus, const std::string& priority_class) {
  const std::string g = std::to_string(gpus);
  Json spec = {{"schedulerName", "arbiter"},
               {"restartPolicy", "Never"},
               {"terminationGracePeriodSeconds", 30},
               {"containers",
                {{{"name", "main"},
                  {"image", "busybox"},
                  {"resources",
                   {{"requests", {{"cpu", "2"}, {"memory", "8Gi"}, {"nvidia.com/gpu", g}}},
                    {"limits", {{"nvidia.com/gpu", g}}}}}}}}};
  if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
  return spec;
}

// A Job as the API server returns it (defaults filled in, the controller's labels on the template).
Json Job(const std::string& name, int parallelism, int gpus, bool suspend,
         const std::string& priority_class = "") {
  Json labels = {{"batch.kubernetes.io/controller-uid", "uid-" + name},
                 {"batch.kubernetes.io/job-name", name},
                 {"controller-uid", "uid-" + name},
                 {"job-name", name}};
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", name},
            {"namespace", "team-a"},
            {"uid", "uid-" + name},
            {"resourceVersion", "5"},
            {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
          {"spec",
           {{"parallelism", parallelism},
            {"completions", parallelism},
            {"backoffLimit", 6},
            {"completionMode", "NonIndexed"},
            {"suspend", suspend},
            {"template",
             {{"metadata", {{"labels", labels}}}, {"spec", PodSpec(gpus, priority_class)}}}}},
          {"status", Json::object()}};
}

// A pod the Job controller made for `job` (pending, or bound to `node`).
Json JobPod(const Json& job, const std::string& suffix, const std::string& node = "",
            const std::string& phase = "Pending") {
  const std::string name = job["metadata"]["name"].get<std::string>() + "-" + suffix;
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", name},
              {"namespace", "team-a"},
              {"uid", "uid-" + name},
              {"creationTimestamp", "2026-01-01T00:00:02Z"},
              {"labels", job["spec"]["template"]["metadata"]["labels"]},
              {"ownerReferences",
               {{{"apiVersion", "batch/v1"},
                 {"kind", "Job"},
                 {"name", job["metadata"]["name"]},
                 {"uid", job["metadata"]["uid"]},
                 {"controller", true},
                 {"blockOwnerDeletion", true}}}}}},
            {"spec", job["spec"]["template"]["spec"]},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

Json Pod(const std::string& name, int gpus, const std::string& node = "",
         const std::string& priority_class = "", const std::string& phase = "Pending") {
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}}},
            {"spec", PodSpec(gpus, priority_class)},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

Json Quota(int gpus) {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", "quota"}, {"namespace", "team-a"}}},
          {"spec", {{"min", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

Json Class(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}}},
          {"value", value}};
}

void SyncAll(Controller& c, std::map<std::string, std::vector<Json>> lists) {
  for (const char* k :
       {"Node", "Pod", "Job", "PriorityClass", "Namespace", "ResourceQuota", "LimitRange",
        "PodDisruptionBudget", "ElasticQuota", "PoolPolicy", "PriceBook", "QoS"})
    c.Synced(k, lists[k]);
}

std::vector<const Action*> Of(const std::vector<Action>& a, Action::Type type) {
  std::vector<const Action*> out;
  for (const auto& x : a)
    if (x.type == type) out.push_back(&x);
  return out;
}

void AllDone(Controller& c, const std::vector<Action>& actions, Millis now) {
  for (const auto& a : actions) c.Done(a, ActionResult{200, "", ""}, now);
}

int64_t GpusUsed(const Controller& c, const std::string& node) {
  for (const auto& n : c.engine().Nodes())
    if (n.name == node) {
      int64_t used = 0;
      for (int32_t g : n.gpu_used_milli) used += g;
      return used / 1000;
    }
  return -1;
}

TEST(KubeschedJobs, SuspendedJobOverQuotaStaysSuspendedUntilQuotaFrees) {
  Controller c({});
  const Json job = Job("train", 2, 2, true);
  SyncAll(c, {{"Node", {Node("n1", 8)}},
              {"Pod", {Pod("blocker", 2)}},
              {"Job", {job}},
              {"ElasticQuota", {Quota(4)}}});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  // The blocker takes 2 of the namespace's 4 GPUs; the Job needs 2 x 2: it stays suspended, and
  // its annotation says the engine's reason.
  ASSERT_EQ(Of(a, Action::Type::kBind).size(), 1u);
  EXPECT_EQ(Of(a, Action::Type::kBind)[0]->name, "blocker");
  auto patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_TRUE(patch[0]->suspend);
  EXPECT_EQ(patch[0]->name, "train");
  EXPECT_NE(patch[0]->message.find("exceeded ElasticQuota team-a/quota"), std::string::npos)
      << patch[0]->message;
  AllDone(c, a, kT0);
  c.Upsert("Pod", Pod("blocker", 2, "n1", "", "Running"));
  EXPECT_TRUE(Of(c.Step(kT0 + 1000), Action::Type::kJob).empty());  // said once
  // The blocker ends: the quota admits the whole Job, which is unsuspended.
  c.Upsert("Pod", Pod("blocker", 2, "n1", "", "Succeeded"));
  a = c.Step(kT0 + 2000);
  patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_FALSE(patch[0]->suspend);
  EXPECT_EQ(patch[0]->message, "admitted: 2 pods on n1");
  AllDone(c, a, kT0 + 2000);
  Json resumed = job;
  resumed["spec"]["suspend"] = false;
  resumed["metadata"]["annotations"] = {{kAdmissionAnnotation, patch[0]->message}};
  c.Upsert("Job", resumed);
  // Its controller makes the pods: each bound to a slot's node, counted once.
  c.Upsert("Pod", JobPod(job, "aaaaa"));
  c.Upsert("Pod", JobPod(job, "bbbbb"));
  a = c.Step(kT0 + 3000);
  auto binds = Of(a, Action::Type::kBind);
  ASSERT_EQ(binds.size(), 2u);
  EXPECT_EQ(binds[0]->node, "n1");
  EXPECT_EQ(binds[1]->node, "n1");
  EXPECT_TRUE(Of(a, Action::Type::kJob).empty());
  AllDone(c, a, kT0 + 3000);
  c.Upsert("Pod", JobPod(job, "aaaaa", "n1", "Running"));
  c.Upsert("Pod", JobPod(job, "bbbbb", "n1", "Running"));
  EXPECT_TRUE(c.Step(kT0 + 4000).empty());
  EXPECT_EQ(GpusUsed(c, "n1"), 4);  // the slots, not the pods again
  EXPECT_EQ(c.engine().Nodes()[0].spec.allocatable.Get("nvidia.com/gpu"), 8000);
  // A pod that fails frees its slot for the replacement the Job controller makes.
  c.Upsert("Pod", JobPod(job, "aaaaa", "n1", "Failed"));
  c.Upsert("Pod", JobPod(job, "ccccc"));
  a = c.Step(kT0 + 5000);
  binds = Of(a, Action::Type::kBind);
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0]->name, "train-ccccc");
  AllDone(c, a, kT0 + 5000);
  // The Job completes: its quota is released.
  Json complete = resumed;
  complete["status"]["conditions"] = {{{"type", "Complete"}, {"status", "True"}}};
  c.Upsert("Pod", JobPod(job, "bbbbb", "n1", "Succeeded"));
  c.Upsert("Pod", JobPod(job, "ccccc", "n1", "Succeeded"));
  c.Upsert("Job", complete);
  a = c.Step(kT0 + 6000);
  EXPECT_TRUE(Of(a, Action::Type::kBind).empty());
  EXPECT_TRUE(Of(a, Action::Type::kJob).empty());
  auto status = Of(a, Action::Type::kQuotaStatus);  // the quota's status follows
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(Json::parse(status[0]->message)["used"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(c.engine().live_workloads(), 0u);
  EXPECT_EQ(GpusUsed(c, "n1"), 0);
}

TEST(KubeschedJobs, PreemptedJobIsSuspendedAndRequeued) {
  Controller c({});
  const Json job = Job("train", 2, 4, false, "low");
  Json admitted = job;
  admitted["metadata"]["annotations"] = {{kAdmissionAnnotation, "admitted: 2 pods on n1"}};
  // An admitted Job (a restart: the annotation marks it Arbiter's), its pods running on n1.
  SyncAll(c,
          {{"Node", {Node("n1", 8)}},
           {"Pod", {JobPod(job, "aaaaa", "n1", "Running"), JobPod(job, "bbbbb", "n1", "Running")}},
           {"Job", {admitted}},
           {"PriorityClass", {Class("low", 100), Class("high", 1000)}}});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_TRUE(a.empty());  // nothing to write: as the earlier process left it
  EXPECT_EQ(GpusUsed(c, "n1"), 8);
  // A high-priority pod needs the whole node: the Job's slots are its victims, as a group.
  c.Upsert("Pod", Pod("urgent", 8, "", "high"));
  a = c.Step(kT0 + 1000);
  EXPECT_TRUE(Of(a, Action::Type::kEvict).empty());  // the Job is stopped, not its pods
  EXPECT_TRUE(Of(a, Action::Type::kBind).empty());
  auto patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_TRUE(patch[0]->suspend);
  EXPECT_NE(patch[0]->message.find("stopped: "), std::string::npos) << patch[0]->message;
  AllDone(c, a, kT0 + 1000);
  Json suspended = admitted;
  suspended["spec"]["suspend"] = true;
  c.Upsert("Job", suspended);
  EXPECT_TRUE(Of(c.Step(kT0 + 2000), Action::Type::kBind).empty());  // its pods still run
  // The Job controller deletes them; once gone, the slots are requeued and urgent is bound.
  c.Remove("Pod", JobPod(job, "aaaaa", "n1", "Running"));
  c.Remove("Pod", JobPod(job, "bbbbb", "n1", "Running"));
  a = c.Step(kT0 + 3000);
  EXPECT_TRUE(Of(a, Action::Type::kJob).empty() || Of(a, Action::Type::kJob)[0]->suspend);
  AllDone(c, a, kT0 + 3000);
  a = c.Step(kT0 + 4000);
  ASSERT_EQ(Of(a, Action::Type::kBind).size(), 1u);
  EXPECT_EQ(Of(a, Action::Type::kBind)[0]->name, "urgent");
  patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_TRUE(patch[0]->suspend);  // waits again, and says why
  EXPECT_EQ(patch[0]->message.find("stopped"), std::string::npos) << patch[0]->message;
  AllDone(c, a, kT0 + 4000);
  // urgent ends: the Job is admitted again.
  c.Upsert("Pod", Pod("urgent", 8, "n1", "high", "Succeeded"));
  a = c.Step(kT0 + 5000);
  patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_FALSE(patch[0]->suspend);
}

// Issue 26: a deleted Job's pods are deleted after it (garbage collection) and take a moment to
// go. Until they are gone they are Arbiter's: their slots keep the node's GPUs and the quota, they
// are never counted as another scheduler's pods (before, they were for about a second: the node
// shrank under the other Job's GPUs and the engine refused the UpsertNode, "GPU device 4 is in
// use", and a waiting Job was admitted onto GPUs the leaving pods still held).
TEST(KubeschedJobs, DeletedJobsPodsStayArbitersUntilGone) {
  Controller c({});
  Json first = Job("first", 2, 2, false), second = Job("second", 2, 2, false);
  second["metadata"]["creationTimestamp"] = "2026-01-01T00:00:01Z";
  for (Json* j : {&first, &second})
    (*j)["metadata"]["annotations"] = {{kAdmissionAnnotation, "admitted: 2 pods on n1"}};
  Json waiting = Job("waiting", 2, 2, true);
  waiting["metadata"]["creationTimestamp"] = "2026-01-01T00:00:05Z";
  std::vector<Json> first_pods = {JobPod(first, "aaaaa", "n1", "Running"),
                                  JobPod(first, "bbbbb", "n1", "Running")};
  SyncAll(c, {{"Node", {Node("n1", 8)}},
              {"Pod",
               {first_pods[0], first_pods[1], JobPod(second, "ccccc", "n1", "Running"),
                JobPod(second, "ddddd", "n1", "Running")}},
              {"Job", {first, second, waiting}}});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_EQ(GpusUsed(c, "n1"), 8);
  AllDone(c, a, kT0);
  auto quiet = [&](const char* step) {
    for (const auto& l : c.TakeLog())
      EXPECT_TRUE(l.find("refused") == std::string::npos && l.find("foreign") == std::string::npos)
          << step << ": " << l;
    EXPECT_EQ(c.engine().Nodes()[0].spec.allocatable.Get("nvidia.com/gpu"), 8000) << step;
    EXPECT_EQ(GpusUsed(c, "n1"), 8) << step;
  };
  // The Job is deleted; its pods still run, then terminate: the waiting Job stays suspended.
  c.Remove("Job", first);
  a = c.Step(kT0 + 1000);
  for (const auto* j : Of(a, Action::Type::kJob)) EXPECT_TRUE(j->suspend) << j->name;
  AllDone(c, a, kT0 + 1000);
  quiet("the Job deleted");
  for (Json& p : first_pods) {
    p["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z";
    c.Upsert("Pod", p);
  }
  a = c.Step(kT0 + 2000);
  for (const auto* j : Of(a, Action::Type::kJob)) EXPECT_TRUE(j->suspend) << j->name;
  AllDone(c, a, kT0 + 2000);
  quiet("its pods terminating");
  // One pod goes: its slot with it (the other still holds 2 GPUs: still no room for 2 x 2).
  c.Remove("Pod", first_pods[0]);
  a = c.Step(kT0 + 3000);
  for (const auto* j : Of(a, Action::Type::kJob)) EXPECT_TRUE(j->suspend) << j->name;
  AllDone(c, a, kT0 + 3000);
  EXPECT_EQ(GpusUsed(c, "n1"), 6);
  // The last one goes: the waiting Job is admitted on the GPUs they held.
  c.Remove("Pod", first_pods[1]);
  a = c.Step(kT0 + 4000);
  auto patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_EQ(patch[0]->name, "waiting");
  EXPECT_FALSE(patch[0]->suspend);
  quiet("its pods gone");
  EXPECT_EQ(c.engine().live_workloads(), 4u);  // the slots of second and waiting
}

TEST(KubeschedJobs, UnsuspendedJobWithoutTheAnnotationIsScheduledPodByPod) {
  Controller c({});
  const Json job = Job("plain", 2, 6, false);
  SyncAll(c, {{"Node", {Node("n1", 8)}},
              {"Pod", {JobPod(job, "aaaaa"), JobPod(job, "bbbbb")}},
              {"Job", {job}}});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_TRUE(Of(a, Action::Type::kJob).empty());
  EXPECT_EQ(Of(a, Action::Type::kBind).size(), 1u);  // one fits; no gang
}

TEST(KubeschedJobs, ParallelismAboveTheBoundIsRefusedWithAReason) {
  Controller c({});
  SyncAll(c, {{"Node", {Node("n1", 8)}}, {"Job", {Job("huge", 1000000, 1, true)}}});
  std::vector<Action> a = c.Step(kT0);
  auto patch = Of(a, Action::Type::kJob);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_TRUE(patch[0]->suspend);
  EXPECT_NE(patch[0]->message.find("at most 10000 pods"), std::string::npos);
  EXPECT_EQ(c.engine().live_workloads(), 0u);
}

// The cluster as a restarted `arbiter scheduler` lists it (tests/integration/kube_jobs_test.cc,
// SchedulerKilledAndRestartedAdmitsNothingTwice): an admitted Job's pods run on n1, a second Job
// waits over the quota, whose status the earlier process wrote (4 of 4 GPUs).
std::map<std::string, std::vector<Json>> RestartedCluster(bool with_pods) {
  const Json job = Job("running", 2, 2, false);
  Json admitted = job;
  admitted["metadata"]["annotations"] = {{kAdmissionAnnotation, "admitted: 2 pods on n1"}};
  Json waiting = Job("waiting", 2, 2, true);
  waiting["metadata"]["creationTimestamp"] = "2026-01-01T00:00:05Z";
  waiting["metadata"]["annotations"] = {{kAdmissionAnnotation, "exceeded"}};
  Json quota = Quota(4);
  quota["status"] = Json::parse(R"({"used":{"nvidia.com/gpu":"4"},
      "borrowed":{"nvidia.com/gpu":"0"},"lent":{"nvidia.com/gpu":"0"}})");
  std::vector<Json> pods;
  if (with_pods)
    pods = {JobPod(job, "aaaaa", "n1", "Running"), JobPod(job, "bbbbb", "n1", "Running")};
  return {{"Node", {Node("n1", 8)}},
          {"Pod", pods},
          {"Job", {admitted, waiting}},
          {"ElasticQuota", {quota}}};
}

// A restarted scheduler charges the running Job's slots before its first quota status: it finds
// the status the earlier process wrote and writes nothing, in its first cycle and later ones.
TEST(KubeschedJobs, RestartedSchedulerKeepsTheQuotaStatusOfARunningJob) {
  Controller c({});
  SyncAll(c, RestartedCluster(true));
  for (int i = 0; i < 4; ++i) {
    const Millis now = kT0 + 1000 * i;
    std::vector<Action> a = c.Step(now);
    EXPECT_TRUE(Of(a, Action::Type::kQuotaStatus).empty()) << i;
    EXPECT_TRUE(Of(a, Action::Type::kBind).empty()) << i;
    for (const auto* j : Of(a, Action::Type::kJob)) EXPECT_TRUE(j->suspend) << j->name;
    AllDone(c, a, now);
  }
  EXPECT_EQ(GpusUsed(c, "n1"), 4);
}

// The bug SchedulerKilledAndRestartedAdmitsNothingTwice found: several schedulers share the
// cluster (the tests run one per --scheduler-name); each lists every ElasticQuota, and each wrote
// every quota's status from its own engine, which holds none of the other schedulers' pods: used 0
// over the 4 GPUs the namespace's own scheduler runs. A namespace with another scheduler's pods
// or Jobs is not written: neither once its pods run, nor while its admitted Job has none yet.
TEST(KubeschedJobs, AnotherSchedulersNamespaceKeepsItsQuotaStatus) {
  ControllerOptions o;
  o.scheduler_name = "arbiter-other";
  for (bool with_pods : {true, false}) {
    Controller other(o);
    SyncAll(other, RestartedCluster(with_pods));
    for (int i = 0; i < 3; ++i) {
      const Millis now = kT0 + 1000 * i;
      std::vector<Action> a = other.Step(now);
      EXPECT_TRUE(Of(a, Action::Type::kQuotaStatus).empty()) << with_pods << " " << i;
      // Only the condition Valid of the cluster's objects (the same from every scheduler), once.
      EXPECT_EQ(a.size(), Of(a, Action::Type::kCondition).size()) << with_pods << " " << i;
      if (i > 0) {
        EXPECT_TRUE(a.empty()) << with_pods << " " << i;
      }
      AllDone(other, a, now);
    }
    const auto log = other.TakeLog();
    ASSERT_EQ(log.size(), 1u) << with_pods;
    EXPECT_NE(log[0].find("ElasticQuota team-a/quota: status not written: namespace team-a has "
                          "pods or Jobs of another scheduler"),
              std::string::npos)
        << log[0];
  }
}

// A node's heartbeat lost (the node lifecycle controller's unreachable NoExecute taint, seen
// under load when KWOK renewed late): the Job's pods tolerate it for 300 s (kube-apiserver's
// DefaultTolerationSeconds), and so do its slots: the Job is not suspended at once.
TEST(KubeschedJobs, AdmittedJobOutlastsAnUnreachableTaintAsItsPodsDo) {
  Controller c({});
  SyncAll(c, RestartedCluster(true));
  AllDone(c, c.Step(kT0), kT0);
  Json node = Node("n1", 8);
  node["spec"]["taints"] = {{{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoExecute"}}};
  c.Upsert("Node", node);
  for (Millis t : {kT0 + 1000, kT0 + 200000})
    for (const auto* j : Of(c.Step(t), Action::Type::kJob))
      EXPECT_NE(j->name, "running") << t - kT0 << " " << j->message;
  EXPECT_EQ(GpusUsed(c, "n1"), 4);
  // After 300 s it is stopped, as its pods are evicted.
  bool suspended = false;
  for (const auto* j : Of(c.Step(kT0 + 302000), Action::Type::kJob))
    if (j->name == "running") suspended = j->suspend;
  EXPECT_TRUE(suspended);
}

}  // namespace controller_jobs_test
}  // namespace arbiter::kubesched
