// batch/v1 Jobs on `arbiter serve` against the real kube-controller-manager (v1.36, CTest fixture
// "kube"; docs/serve.md, "Jobs"; issue 27): the same Job applied to the test cluster (KWOK runs
// its pods: kube/kwok-stages.yaml, arbiter.dev/duration and arbiter.dev/exit-code as on the
// daemon's virtual nodes) and to `arbiter serve` ends with the same conditions in the same order
// (FailureTarget before Failed, SuccessCriteriaMet before Complete, with the same reasons and
// messages) and the same status counters; a deleted pod is counted and replaced alike under both
// podReplacementPolicy values; DELETE's propagation policies leave the same objects. Without the
// cluster these tests fail (never skip).
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "integration/kube_fixture.h"
#include "server/serve_process.h"

namespace kube_serve_jobs_test {

using arbiter::testing::CommandOutput;
using arbiter::testing::ServeProcess;
using Json = nlohmann::json;
using Kubectl = std::function<CommandOutput(const std::string&)>;

// The namespace of the running test, also its node's name prefix and pool label ("ksj-" and the
// test's initials, Begin): ctest runs these cases at once on one cluster, each in its own
// namespace.
std::string g_ns = "ksj";

std::string NodeYaml(const std::string& name) {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {arbiter.dev/test-pool: " + g_ns +
         "}\n"
         "status:\n  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n"
         "  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: \"8\"}\n";
}

// A Job in the test's namespace whose pods run `duration` on the test pool (exit code `exit_code`
// when not 0); `spec` is more of its spec, as YAML lines indented by two.
std::string JobYaml(const std::string& name, const std::string& spec, const std::string& duration,
                    int exit_code = 0) {
  std::string annotations = "{arbiter.dev/duration: " + duration;
  if (exit_code != 0)
    annotations += ", arbiter.dev/exit-code: \"" + std::to_string(exit_code) + "\"";
  annotations += "}";
  return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + ", namespace: " + g_ns +
         "}\nspec:\n" + spec + "  template:\n    metadata:\n      annotations: " + annotations +
         "\n    spec:\n      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n"
         "      nodeSelector: {arbiter.dev/test-pool: " +
         g_ns +
         "}\n      containers:\n"
         "      - name: main\n        image: busybox\n        resources:\n"
         "          requests: {cpu: \"1\", memory: 1Gi}\n";
}

// Applies `yaml` with `kubectl` (a file in `dir`).
void ApplyTo(const Kubectl& kubectl, const std::string& dir, const std::string& yaml) {
  static int n = 0;
  const std::string file = dir + "/apply-" + std::to_string(++n) + ".yaml";
  std::ofstream(file) << yaml;
  CommandOutput r = kubectl("apply -f " + file);
  ASSERT_EQ(r.rc, 0) << r.out;
}

Json GetJson(const Kubectl& kubectl, const std::string& what) {
  CommandOutput r = kubectl("get " + what + " -o json");
  if (r.rc != 0) return nullptr;
  Json j = Json::parse(r.out.substr(std::min(r.out.find('{'), r.out.size())), nullptr, false);
  return j.is_discarded() ? Json() : j;
}

// What must agree of a Job: its conditions in order (type, status, reason, message with the pod
// names made POD), the status counters and index lists, which times are set, and the defaulted
// podReplacementPolicy.
std::string View(const Json& job) {
  if (!job.is_object()) return "(none)";
  const Json& st = job.value("status", Json::object());
  std::string out;
  for (const Json& c : st.value("conditions", Json::array())) {
    std::string message = c.value("message", "");
    const std::string prefix = "for pod " + g_ns + "/";
    const size_t pod = message.find(prefix);
    if (pod != std::string::npos) {
      const size_t from = pod + prefix.size();
      message.replace(from, message.find(' ', from) - from, "POD");
    }
    out += c.value("type", "") + "=" + c.value("status", "") + "/" + c.value("reason", "") + " (" +
           message + ")\n";
  }
  for (const char* k : {"active", "succeeded", "failed", "terminating", "ready"})
    out += std::string(k) + "=" + (st.contains(k) ? st[k].dump() : "-") + " ";
  for (const char* k : {"completedIndexes", "failedIndexes", "uncountedTerminatedPods"})
    out += std::string(k) + "=" + (st.contains(k) ? st[k].dump() : "-") + " ";
  out += "startTime=" + std::string(st.contains("startTime") ? "set" : "-");
  out += " completionTime=" + std::string(st.contains("completionTime") ? "set" : "-");
  out += " podReplacementPolicy=" + job["spec"].value("podReplacementPolicy", "-");
  return out;
}

bool Finished(const Json& job) {
  if (!job.is_object()) return false;
  for (const Json& c : job.value("status", Json::object()).value("conditions", Json::array()))
    if ((c.value("type", "") == "Complete" || c.value("type", "") == "Failed") &&
        c.value("status", "") == "True")
      return true;
  return false;
}

// Polls `kubectl get what` (JSON) every 200 ms until `ok` or `seconds` pass; returns the last.
Json PollUntil(const Kubectl& kubectl, const std::string& what,
               const std::function<bool(const Json&)>& ok, int seconds = 90) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  Json j = GetJson(kubectl, what);
  while (!ok(j) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    j = GetJson(kubectl, what);
  }
  return j;
}

// The test's two sides: the real cluster (a fresh namespace g_ns, KWOK node g_ns-0) and a fresh
// `arbiter serve` with the same namespace and node.
class Sides {
 public:
  Sides() : serve_(arbiter::testing::ScratchDir("kube-serve-jobs")) {
    dir_ = serve_.dir().string();
    real = [](const std::string& a) { return kube_fixture::Kubectl(a); };
    arbiter = [this](const std::string& a) { return serve_.Kubectl(a); };
  }
  bool Start() { return serve_.Start(); }
  void Setup() {
    const std::string ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + g_ns + "}\n";
    ASSERT_NO_FATAL_FAILURE(ApplyTo(real, dir_, ns));
    ASSERT_NO_FATAL_FAILURE(ApplyTo(arbiter, dir_, ns + "---\n" + NodeYaml(g_ns + "-0")));
  }
  void Apply(const std::string& yaml) {
    ASSERT_NO_FATAL_FAILURE(ApplyTo(real, dir_, yaml));
    ASSERT_NO_FATAL_FAILURE(ApplyTo(arbiter, dir_, yaml));
  }
  std::string log() const { return serve_.log(); }
  const std::string& dir() const { return dir_; }
  int Stop() { return serve_.Stop(); }
  Kubectl real, arbiter;

 private:
  ServeProcess serve_;
  std::string dir_;
};

class KubeServeJobsTest : public kube_fixture::KubeTest {
 protected:
  void Begin(Sides& s) {
    const char* test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    // The test's initials (its name's capitals): each test its own namespace, since the one
    // before may still be terminating ("ADeletedPod..." and "AJobManaged..." once shared ksj-a).
    g_ns = "ksj-";
    for (const char* c = test; *c && g_ns.size() < 24; ++c)
      if (std::isupper(static_cast<unsigned char>(*c))) g_ns += static_cast<char>(std::tolower(*c));
    ASSERT_NO_FATAL_FAILURE(Fresh(g_ns, g_ns + "-0"));
    ASSERT_NO_FATAL_FAILURE(Node(g_ns + "-0", g_ns));
    ASSERT_TRUE(s.Start()) << s.log();
    ASSERT_NO_FATAL_FAILURE(s.Setup());
  }
  void End(Sides& s) {
    EXPECT_EQ(s.Stop(), 0) << s.log();
    kube_fixture::Kubectl("delete namespace " + g_ns + " --wait=false");
    kube_fixture::Kubectl("delete node " + g_ns + "-0 --wait=false");
  }
};

// Five Jobs that end five ways, on both sides at once: each one's conditions and counters once
// it has finished.
TEST_F(KubeServeJobsTest, FinishedJobsHaveTheSameConditionsInTheSameOrderAndTheSameCounters) {
  Sides s;
  ASSERT_NO_FATAL_FAILURE(Begin(s));
  const std::vector<std::pair<std::string, std::string>> jobs = {
      {"complete", JobYaml("complete", "  parallelism: 2\n  completions: 3\n", "1s")},
      {"deadline", JobYaml("deadline", "  parallelism: 2\n  activeDeadlineSeconds: 3\n", "1h")},
      {"backoff", JobYaml("backoff", "  backoffLimit: 1\n", "1s", 3)},
      {"failjob", JobYaml("failjob",
                          "  podFailurePolicy:\n    rules:\n    - action: FailJob\n"
                          "      onExitCodes: {operator: In, values: [42]}\n",
                          "1s", 42)},
      {"indexed",
       JobYaml("indexed", "  completionMode: Indexed\n  completions: 3\n  parallelism: 3\n",
               "1s")}};
  std::string all;
  for (const auto& [name, yaml] : jobs) all += yaml + "---\n";
  ASSERT_NO_FATAL_FAILURE(s.Apply(all));
  for (const auto& [name, yaml] : jobs) {
    const Json real = PollUntil(s.real, "job " + name + " -n " + g_ns, Finished);
    const Json served = PollUntil(s.arbiter, "job " + name + " -n " + g_ns, Finished);
    ASSERT_TRUE(Finished(real)) << name << ": " << View(real);
    ASSERT_TRUE(Finished(served)) << name << ": " << View(served) << "\n" << s.log();
    // The counters settle a moment after the terminal condition on the cluster.
    const Json settled = PollUntil(
        s.real, "job " + name + " -n " + g_ns,
        [&](const Json& j) { return View(j) == View(served); }, 10);
    EXPECT_EQ(View(served), View(settled)) << name;
  }
  End(s);
}

// A pod of a running Job deleted by its user: counted as failed, and replaced only after the
// back-off (10 s from the deletion): at once as it terminates (TerminatingOrFailed) or once it
// has failed (Failed); the same counters on both sides.
TEST_F(KubeServeJobsTest,
       ADeletedPodIsCountedAndReplacedAfterTheBackOffUnderBothReplacementPolicies) {
  Sides s;
  ASSERT_NO_FATAL_FAILURE(Begin(s));
  ASSERT_NO_FATAL_FAILURE(s.Apply(JobYaml("tof", "", "1h") + "---\n" +
                                  JobYaml("failed", "  podReplacementPolicy: Failed\n", "1h")));
  for (const char* job : {"tof", "failed"}) {
    for (const Kubectl* side : {&s.real, &s.arbiter}) {
      const Json running = PollUntil(
          *side, "job " + std::string(job) + " -n " + g_ns,
          [](const Json& j) { return j.is_object() && j["status"].value("active", 0) == 1; });
      ASSERT_EQ(running["status"].value("active", 0), 1) << job << " " << View(running);
      const Json pods = GetJson(*side, "pods -n " + g_ns + " -l job-name=" + std::string(job));
      ASSERT_EQ(pods["items"].size(), 1u) << pods.dump();
      const std::string pod = pods["items"][0]["metadata"]["name"];
      const auto deleted = std::chrono::steady_clock::now();
      CommandOutput d = (*side)("delete pod " + pod + " -n " + g_ns + " --wait=false");
      ASSERT_EQ(d.rc, 0) << d.out;
      const Json counted = PollUntil(
          *side, "job " + std::string(job) + " -n " + g_ns,
          [](const Json& j) { return j.is_object() && j["status"].value("failed", 0) == 1; });
      EXPECT_EQ(counted["status"].value("failed", 0), 1) << job << " " << View(counted);
      const Json replaced =
          PollUntil(*side, "job " + std::string(job) + " -n " + g_ns, [](const Json& j) {
            return j.is_object() && j["status"].value("active", 0) == 1 &&
                   j["status"].value("failed", 0) == 1;
          });
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - deleted).count();
      EXPECT_EQ(replaced["status"].value("active", 0), 1) << job << " " << View(replaced);
      EXPECT_GE(waited, 8.0) << job << ": replaced before the back-off";
      EXPECT_EQ(replaced["status"].value("terminating", -1), 0) << View(replaced);
      EXPECT_EQ(replaced["status"]["uncountedTerminatedPods"], Json::object());
    }
  }
  End(s);
}

// DELETE's propagationPolicy: Orphan (kubectl --cascade=orphan) leaves the pods running without
// the ownerReference and the tracking finalizer; no policy at all (a raw DELETE) is batch/v1's
// Orphan with kube-apiserver's warning; Foreground keeps the Job, being deleted with finalizer
// foregroundDeletion, until its pods are gone.
TEST_F(KubeServeJobsTest, PropagationPoliciesLeaveTheSameObjects) {
  Sides s;
  ASSERT_NO_FATAL_FAILURE(Begin(s));
  ASSERT_NO_FATAL_FAILURE(s.Apply(JobYaml("orphan", "  parallelism: 2\n", "1h") + "---\n" +
                                  JobYaml("raw", "", "1h") + "---\n" +
                                  JobYaml("fg", "  parallelism: 2\n", "1h")));
  for (const Kubectl* side : {&s.real, &s.arbiter}) {
    const std::string where = side == &s.real ? "cluster" : "arbiter";
    for (const char* job : {"orphan", "raw", "fg"}) {
      const Json j = PollUntil(*side, "job " + std::string(job) + " -n " + g_ns, [](const Json& j) {
        return j.is_object() && j["status"].value("active", 0) == j["spec"].value("parallelism", 1);
      });
      ASSERT_TRUE(j.is_object()) << where << " " << job;
    }
    CommandOutput o = (*side)("delete job orphan -n " + g_ns + " --cascade=orphan");
    ASSERT_EQ(o.rc, 0) << o.out;
    CommandOutput raw = (*side)("delete --raw /apis/batch/v1/namespaces/" + g_ns + "/jobs/raw");
    EXPECT_NE(raw.out.find("child pods are preserved by default when jobs are deleted"),
              std::string::npos)
        << where << ": " << raw.out;
    for (const char* job : {"orphan", "raw"}) {
      const Json pods = PollUntil(*side, "pods -n " + g_ns + " -l job-name=" + std::string(job),
                                  [](const Json& p) {
                                    if (!p.is_object() || p["items"].empty()) return false;
                                    for (const Json& pod : p["items"])
                                      if (pod["metadata"].contains("ownerReferences") ||
                                          pod["metadata"].contains("finalizers"))
                                        return false;
                                    return true;
                                  });
      ASSERT_TRUE(pods.is_object()) << where;
      EXPECT_EQ(pods["items"].size(), std::string(job) == "orphan" ? 2u : 1u) << where;
      for (const Json& pod : pods["items"]) {
        EXPECT_FALSE(pod["metadata"].contains("ownerReferences")) << where << " " << pod.dump();
        EXPECT_FALSE(pod["metadata"].contains("finalizers")) << where << " " << pod.dump();
        EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp")) << where;
        EXPECT_EQ(pod["status"].value("phase", ""), "Running") << where;
      }
    }
    CommandOutput f = (*side)("delete job fg -n " + g_ns + " --cascade=foreground --wait=false");
    ASSERT_EQ(f.rc, 0) << f.out;
    const Json gone =
        PollUntil(*side, "job fg -n " + g_ns, [](const Json& j) { return j.is_null(); });
    EXPECT_TRUE(gone.is_null()) << where << " " << gone.dump();
    const Json left = GetJson(*side, "pods -n " + g_ns + " -l job-name=fg");
    EXPECT_TRUE(left.is_object() && left["items"].empty()) << where << " " << left.dump();
  }
  End(s);
}

// restartPolicy OnFailure: the test cluster's KWOK stages do not restart a container (a pod with
// arbiter.dev/exit-code goes Failed whatever its restartPolicy), so the cluster's kubelet part is
// played by hand: the pod's status gets restartCount 2 (kubectl patch --subresource=status), as
// a kubelet writes it after two in-place restarts. The real Job controller then fails the Job
// (pastBackoffLimitOnFailure: backoffLimit 2 reached) as `arbiter serve` does once its virtual
// kubelet restarted the container twice (at once at 1 s, then after 10 s of back-off): the same
// conditions, messages and counters, the pod deleted and counted as failed, no other pod made.
TEST_F(KubeServeJobsTest, RestartsUnderOnFailureReachingTheBackoffLimitFailTheJob) {
  Sides s;
  ASSERT_NO_FATAL_FAILURE(Begin(s));
  auto on_failure = [](std::string yaml) {
    yaml.replace(yaml.find("restartPolicy: Never"), 20, "restartPolicy: OnFailure");
    return yaml;
  };
  ASSERT_NO_FATAL_FAILURE(
      ApplyTo(s.real, s.dir(), on_failure(JobYaml("restarts", "  backoffLimit: 2\n", "1h"))));
  ASSERT_NO_FATAL_FAILURE(
      ApplyTo(s.arbiter, s.dir(), on_failure(JobYaml("restarts", "  backoffLimit: 2\n", "1s", 3))));
  const Json pods =
      PollUntil(s.real, "pods -n " + g_ns + " -l job-name=restarts", [](const Json& p) {
        return p.is_object() && p["items"].size() == 1 &&
               p["items"][0]["status"].value("phase", "") == "Running";
      });
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump();
  const std::string pod = pods["items"][0]["metadata"]["name"];
  Json status = pods["items"][0]["status"];
  status["containerStatuses"][0]["restartCount"] = 2;
  const std::string patch = s.dir() + "/restarts.json";
  std::ofstream(patch)
      << Json{{"status", {{"containerStatuses", status["containerStatuses"]}}}}.dump();
  CommandOutput r = s.real("patch pod " + pod + " -n " + g_ns +
                           " --subresource=status --type=merge --patch-file=" + patch);
  ASSERT_EQ(r.rc, 0) << r.out;
  const Json real = PollUntil(s.real, "job restarts -n " + g_ns, Finished);
  const Json served = PollUntil(s.arbiter, "job restarts -n " + g_ns, Finished);
  ASSERT_TRUE(Finished(real)) << View(real);
  ASSERT_TRUE(Finished(served)) << View(served) << "\n" << s.log();
  const Json settled = PollUntil(
      s.real, "job restarts -n " + g_ns, [&](const Json& j) { return View(j) == View(served); },
      10);
  EXPECT_EQ(View(served), View(settled));
  EXPECT_NE(View(served).find("Failed=True/BackoffLimitExceeded (Job has reached the specified "
                              "backoff limit)"),
            std::string::npos)
      << View(served);
  for (const Kubectl* side : {&s.real, &s.arbiter}) {
    const Json events = GetJson(*side, "events -n " + g_ns);
    int made = 0;
    for (const Json& e : events.value("items", Json::array()))
      made += e.value("reason", "") == "SuccessfulCreate" &&
              e["involvedObject"].value("name", "") == "restarts";
    EXPECT_EQ(made, 1) << events.dump();
  }
  End(s);
}

// spec.managedBy: another controller's Job (Kueue's MultiKueue) gets no pod and no status from
// the built-in controller on either side; bad values and a change are refused with the same
// messages.
TEST_F(KubeServeJobsTest, AJobManagedByAnotherControllerIsLeftAloneAndTheFieldIsChecked) {
  Sides s;
  ASSERT_NO_FATAL_FAILURE(Begin(s));
  const std::string managed = "  managedBy: kueue.x-k8s.io/multikueue\n";
  ASSERT_NO_FATAL_FAILURE(
      s.Apply(JobYaml("remote", managed, "1s") + "---\n" +
              JobYaml("local", "  managedBy: kubernetes.io/job-controller\n", "1s")));
  for (const Kubectl* side : {&s.real, &s.arbiter}) {
    const Json local = PollUntil(*side, "job local -n " + g_ns, Finished);
    EXPECT_TRUE(Finished(local)) << View(local);
  }
  // By then the built-in controller has long seen "remote" (it was applied first).
  const Json real = GetJson(s.real, "job remote -n " + g_ns);
  const Json served = GetJson(s.arbiter, "job remote -n " + g_ns);
  EXPECT_EQ(View(served), View(real));
  EXPECT_EQ(real["status"].value("startTime", "-"), "-") << real.dump();
  for (const Kubectl* side : {&s.real, &s.arbiter}) {
    const Json pods = GetJson(*side, "pods -n " + g_ns + " -l job-name=remote");
    EXPECT_TRUE(pods.is_object() && pods["items"].empty()) << pods.dump();
  }
  const std::string dir = s.dir();
  auto refusal = [&](const Kubectl& side, const std::string& yaml) {
    static int n = 0;
    const std::string file = dir + "/managed-" + std::to_string(++n) + ".yaml";
    std::ofstream(file) << yaml;
    CommandOutput r = side("apply -f " + file);
    EXPECT_NE(r.rc, 0) << r.out;
    const size_t at = r.out.find("is invalid: ");
    return at == std::string::npos ? r.out : r.out.substr(at);
  };
  for (const std::string& bad :
       {std::string("multikueue"), std::string("Kueue.io/x"), std::string("kueue.io/a b"),
        "example.com/" + std::string(52, 'a')}) {
    const std::string yaml = JobYaml("bad", "  managedBy: \"" + bad + "\"\n", "1s");
    EXPECT_EQ(refusal(s.arbiter, yaml), refusal(s.real, yaml)) << bad;
  }
  const std::string moved = JobYaml("remote", "  managedBy: kubernetes.io/job-controller\n", "1s");
  EXPECT_EQ(refusal(s.arbiter, moved), refusal(s.real, moved));
  End(s);
}

}  // namespace kube_serve_jobs_test
