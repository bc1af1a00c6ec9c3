// `arbiter scheduler --leader-elect` against the real test cluster (scripts/services/kube.sh,
// CTest fixture "kube"; docs/kubernetes.md "High availability"): two replicas on one
// coordination.k8s.io/v1 Lease, pods created while the leader is killed with SIGKILL. What was
// bound, by whom and how often is read from kube-apiserver's audit log (DIR/audit.log, every
// pods/binding request with its answer and the client's user agent, which carries the replica's
// holder identity), never from the schedulers' own word. The lease is kept short through the
// flags; no assertion on time beyond generous deadlines.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/run_command.h"
#include "integration/kube_fixture.h"
#include "integration/services.h"

namespace kube_leader_election_test {

using arbiter::testing::RunCommand;
using kube_fixture::Dir;
using kube_fixture::Get;
using kube_fixture::Kubeconfig;
using kube_fixture::Kubectl;
using kube_fixture::ReadFile;
using kube_fixture::Until;
using Json = nlohmann::json;

// A replica: `arbiter scheduler --leader-elect` with a short lease, its log in a file.
class Replica {
 public:
  Replica(const std::string& scheduler, const std::string& pool, const std::string& ns,
          const std::string& log)
      : log_(log) {
    const std::string cmd = arbiter::testing::Arbiter() + " scheduler --kubeconfig " +
                            Kubeconfig() + " --scheduler-name " + scheduler +
                            " --node-selector arbiter.dev/test-pool=" + pool +
                            " --leader-elect --leader-elect-lease-duration 3s"
                            " --leader-elect-renew-deadline 2s --leader-elect-retry-period 500ms"
                            " --leader-elect-resource-namespace " +
                            ns + " > " + log + " 2>&1";
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Replica() {
    if (pid_ > 0) Signal(SIGKILL);
  }
  // Sends `sig` and waits: the exit code (128 + signal when killed by it).
  int Signal(int sig) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    return Wait(120);
  }
  // Waits up to `seconds` for the process to end on its own: its exit code, -1 if it did not.
  int Wait(int seconds) {
    for (int i = 0; i < seconds * 10 && pid_ > 0; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  // The holder identity it says it runs as ("" until it has said).
  std::string Identity() const {
    const std::string text = ReadFile(log_);
    const std::string needle = " as ";
    const size_t p = text.find("leader election on Lease ");
    if (p == std::string::npos) return "";
    const size_t a = text.find(needle, p);
    const size_t e = text.find(' ', a + needle.size());
    return a == std::string::npos || e == std::string::npos
               ? ""
               : text.substr(a + needle.size(), e - a - needle.size());
  }
  // Identity(), waited for up to 30 s ("" if it never came).
  std::string AwaitIdentity() const {
    for (int i = 0; i < 300; ++i) {
      if (std::string id = Identity(); !id.empty()) return id;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return "";
  }
  std::string log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

std::string Node(const std::string& name, const std::string& pool) {
  return "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
         "\n  annotations: {kwok.x-k8s.io/node: fake}\n  labels: {arbiter.dev/test-pool: " + pool +
         "}\nstatus:\n  capacity: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
         "\"8\"}\n  allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\", nvidia.com/gpu: "
         "\"8\"}\n";
}

std::string Pod(const std::string& ns, const std::string& name, const std::string& scheduler) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\nspec:\n  schedulerName: " + scheduler +
         "\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n"
         "    resources:\n      requests: {cpu: \"1\", memory: 1Gi, nvidia.com/gpu: 1}\n"
         "      limits: {nvidia.com/gpu: 1}\n";
}

void Apply(const std::string& file, const std::string& yaml) {
  std::ofstream(file) << yaml;
  auto a = Kubectl("apply -f " + file);
  ASSERT_EQ(a.rc, 0) << a.out;
}

// A pods/binding request as kube-apiserver's audit log records it.
struct Binding {
  std::string pod, user_agent, received;  // received: RFC 3339 with microseconds (sortable)
  int code = 0;
};

// The bindings of namespace `ns` received at `since` (NowMicro) or later: a repetition of the test
// (--gtest_repeat) binds pods of the same names again, and the earlier run's are in the log.
std::vector<Binding> Bindings(const std::string& ns, const std::string& since) {
  std::vector<Binding> out;
  std::istringstream in(ReadFile(Dir() + "/audit.log"));
  for (std::string line; std::getline(in, line);) {
    const Json e = Json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("stage", "") != "ResponseComplete") continue;
    const Json ref = e.value("objectRef", Json::object());
    if (ref.value("subresource", "") != "binding" || ref.value("namespace", "") != ns) continue;
    Binding b{ref.value("name", ""), e.value("userAgent", ""),
              e.value("requestReceivedTimestamp", ""),
              e.value("responseStatus", Json::object()).value("code", 0)};
    if (b.received >= since) out.push_back(std::move(b));
  }
  return out;
}

bool From(const Binding& b, const std::string& identity) {
  return !identity.empty() && b.user_agent.find(identity) != std::string::npos;
}

std::string NowMicro() {
  const auto now = std::chrono::system_clock::now();
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t secs = us / 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(us % 1000000));
  return buf;
}

class KubeLeaderElection : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ready = Kubectl("get --raw=/readyz");
    ASSERT_EQ(ready.rc, 0) << "the test cluster is not running (ARBITER_KUBE_DIR " << Dir()
                           << "; scripts/services/kube.sh start DIR): " << ready.out;
    ASSERT_NO_FATAL_FAILURE(kube_fixture::InstallDeploy());
  }

  // The namespace, and `nodes` 8-GPU nodes of pool `pool`, their not-ready taint lifted. What an
  // earlier run left is deleted first, waiting: a test ends deleting its namespace without waiting,
  // and a repetition (--gtest_repeat) then found it terminating (its Lease writes got 404, and the
  // leader stepped down before the test could kill it).
  void Pool(const std::string& ns, const std::string& pool, int nodes) {
    auto gone = Kubectl("delete namespace " + ns + " --ignore-not-found --timeout=120s");
    ASSERT_EQ(gone.rc, 0) << gone.out;
    for (int i = 0; i < nodes; ++i) {
      auto n = Kubectl("delete node " + pool + "-" + std::to_string(i) +
                       " --ignore-not-found --timeout=60s");
      ASSERT_EQ(n.rc, 0) << n.out;
    }
    std::string y = "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n";
    for (int i = 0; i < nodes; ++i) y += "---\n" + Node(pool + "-" + std::to_string(i), pool);
    ASSERT_NO_FATAL_FAILURE(Apply((arbiter::testing::Scratch(ns) / "pool.yaml").string(), y));
    for (int i = 0; i < nodes; ++i)
      ASSERT_EQ(Until("node " + pool + "-" + std::to_string(i), "{.spec.taints}",
                      [](const std::string& v) { return v.empty(); }),
                "");
  }

  std::string Holder(const std::string& ns, const std::string& lease) {
    return Get("lease " + lease + " -n " + ns, "{.spec.holderIdentity}");
  }
};

TEST_F(KubeLeaderElection, KillingTheLeaderUnderLoadHandsOverAndBindsNothingTwice) {
  const std::string ns = "le", sched = "arbiter-le";
  ASSERT_NO_FATAL_FAILURE(Pool(ns, "le", 4));  // 32 GPUs
  const std::string started = NowMicro();      // an earlier repetition's bindings are older
  Replica a(sched, "le", ns, (arbiter::testing::Scratch("le-a") / "scheduler.log").string());
  Replica b(sched, "le", ns, (arbiter::testing::Scratch("le-b") / "scheduler.log").string());
  const std::string first = Until("lease " + sched + " -n " + ns, "{.spec.holderIdentity}",
                                  [](const std::string& v) { return !v.empty(); });
  ASSERT_FALSE(first.empty()) << a.log() << b.log();
  // Each replica logs its identity when it starts electing; the standby may not have yet when the
  // leader already holds the Lease (read once, this failed under load): wait for both lines.
  const std::string a_id = a.AwaitIdentity(), b_id = b.AwaitIdentity();
  ASSERT_FALSE(a_id.empty()) << a.log();
  ASSERT_FALSE(b_id.empty()) << b.log();
  ASSERT_TRUE(first == a_id || first == b_id) << first << "\n" << a.log() << b.log();
  Replica& leader = first == a_id ? a : b;
  Replica& standby = first == a_id ? b : a;
  const std::string standby_id = first == a_id ? b_id : a_id;

  // 40 one-GPU pods, created one by one, the last 20 after the leader is killed: 32 fit.
  const int kPods = 40;
  const auto dir = arbiter::testing::Scratch("le-pods");
  std::atomic<bool> killed{false};
  std::thread producer([&] {
    for (int i = 0; i < kPods; ++i) {
      while (i == kPods / 2 && !killed.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::string file = (dir / ("p-" + std::to_string(i) + ".yaml")).string();
      std::ofstream(file) << Pod(ns, "p-" + std::to_string(i), sched);
      Kubectl("create -f " + file);
    }
  });
  const std::string bound10 = Until("pod p-9 -n " + ns, "{.spec.nodeName}",
                                    [](const std::string& v) { return !v.empty(); });
  const std::string killed_at = NowMicro();
  const int rc = leader.Signal(SIGKILL);
  killed = true;
  producer.join();
  EXPECT_FALSE(bound10.empty()) << leader.log();
  EXPECT_EQ(rc, 128 + SIGKILL);

  // The standby takes the Lease over (one more transition) and binds the rest.
  EXPECT_EQ(Until("lease " + sched + " -n " + ns, "{.spec.holderIdentity}",
                  [&](const std::string& v) { return v == standby_id; }),
            standby_id)
      << standby.log();
  EXPECT_EQ(Get("lease " + sched + " -n " + ns, "{.spec.leaseTransitions}"), "1");
  std::map<std::string, int> per_node;
  int pending = 0;
  for (int i = 0; i < kPods; ++i) {
    const std::string pod = "pod p-" + std::to_string(i) + " -n " + ns;
    const std::string node =
        Until(pod, "{.spec.nodeName}{.status.conditions[?(@.type==\"PodScheduled\")].reason}",
              [](const std::string& v) { return !v.empty(); });
    if (node == "Unschedulable") {
      ++pending;
    } else {
      ++per_node[node];
    }
  }
  EXPECT_EQ(pending, kPods - 32) << standby.log();
  EXPECT_EQ(per_node,
            (std::map<std::string, int>{{"le-0", 8}, {"le-1", 8}, {"le-2", 8}, {"le-3", 8}}))
      << standby.log();

  // kube-apiserver's record: each bound pod had exactly one successful binding, made by one of
  // the two replicas; the dead leader made none after the kill, the standby none before it.
  std::map<std::string, int> ok_bindings;
  int by_leader = 0, by_standby = 0;
  for (const Binding& b : Bindings(ns, started)) {
    EXPECT_TRUE(From(b, first) || From(b, standby_id)) << b.user_agent;
    if (From(b, first)) {
      ++by_leader;
      EXPECT_LT(b.received, killed_at) << b.pod;
    } else {
      ++by_standby;
      EXPECT_GT(b.received, killed_at) << b.pod;
    }
    if (b.code == 201) ++ok_bindings[b.pod];
  }
  EXPECT_EQ(ok_bindings.size(), 32u);
  for (const auto& [pod, n] : ok_bindings) EXPECT_EQ(n, 1) << pod;
  EXPECT_GE(by_leader, 10);
  EXPECT_GE(by_standby, 1);

  // A clean stop gives the Lease up (holder "") for the next replica.
  EXPECT_EQ(standby.Signal(SIGTERM), 0) << standby.log();
  EXPECT_EQ(Holder(ns, sched), "");
  EXPECT_NE(standby.log().find("released Lease " + ns + "/" + sched), std::string::npos);
  Kubectl("delete namespace " + ns + " --wait=false");
  Kubectl("delete node le-0 le-1 le-2 le-3 --wait=false");
}

TEST_F(KubeLeaderElection, ALeaderThatFindsTheLeaseTakenStopsActingAndExits) {
  const std::string ns = "lt", sched = "arbiter-lt";
  ASSERT_NO_FATAL_FAILURE(Pool(ns, "lt", 1));
  Replica a(sched, "lt", ns, (arbiter::testing::Scratch("lt-a") / "scheduler.log").string());
  const std::string id = Until("lease " + sched + " -n " + ns, "{.spec.holderIdentity}",
                               [](const std::string& v) { return !v.empty(); });
  ASSERT_EQ(id, a.Identity()) << a.log();
  // Someone else writes the Lease (as another replica that judged it expired would): the leader's
  // next renewal conflicts (resourceVersion), its read shows another holder: it must stop.
  auto p = Kubectl("patch lease " + sched + " -n " + ns +
                   " --type merge -p '{\"spec\":{\"holderIdentity\":\"intruder\"}}'");
  ASSERT_EQ(p.rc, 0) << p.out;
  EXPECT_EQ(a.Wait(60), 1) << a.log();
  const std::string log = a.log();
  EXPECT_NE(log.find("lost Lease " + ns + "/" + sched + ": now held by intruder"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("lost the Lease"), std::string::npos) << log;
  // It did not release what is not its own.
  EXPECT_EQ(Holder(ns, sched), "intruder");
  Kubectl("delete namespace " + ns + " --wait=false");
  Kubectl("delete node lt-0 --wait=false");
}

}  // namespace kube_leader_election_test
