// events.k8s.io/v1 Events written by `arbiter scheduler` to the real kube-apiserver (CTest fixture
// "kube"; docs/kubernetes.md, "Events"): Scheduled, FailedScheduling / QuotaExceeded with the
// engine's message (the PodScheduled condition's), Rejected for a pod the engine rejects at
// admission (PodScheduled with the rejection's code), Preempted on the victim related to its
// preemptor, as driver/pod_scheduling.h derives them. The API server validates them as it
// validates kube-scheduler's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "adapters/kubeclient/kubeconfig_reader.h"
#include "integration/kube_fixture.h"
#include "kubesched/event_writer.h"

namespace kube_events_test {

using kube_fixture::Get;
using kube_fixture::Kubectl;
using kube_fixture::KubeTest;
using kube_fixture::PodYaml;
using kube_fixture::ReadFile;
using kube_fixture::Scheduler;
using kube_fixture::Until;
using Json = nlohmann::json;

class KubeEvents : public KubeTest {};

// Every event Arbiter wrote in namespace `ns`, as the API server lists them.
Json Events(const std::string& ns = "ke") {
  auto r = Kubectl("get events.events.k8s.io -n " + ns + " -o json");
  Json j = Json::parse(r.out, nullptr, false);
  return j.is_object() && j.contains("items") ? j["items"] : Json::array();
}

// The first event with this reason about pod `name` (null when none).
Json Find(const std::string& reason, const std::string& name) {
  for (const auto& e : Events())
    if (e.value("reason", "") == reason && e["regarding"].value("name", "") == name) return e;
  return nullptr;
}

Json Await(const std::string& reason, const std::string& name) {
  Json e = Find(reason, name);
  for (int i = 0; i < 300 && e.is_null(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    e = Find(reason, name);
  }
  return e;
}

TEST_F(KubeEvents, ScheduledFailedSchedulingAndPreemptedAreWrittenAsKubeSchedulerWrites) {
  ASSERT_NO_FATAL_FAILURE(Node("ke-0", "ke"));
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: ke}\n---\napiVersion: "
            "scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: ke-low}\nvalue: 100\n---\n"
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: ke-high}\n"
            "value: 1000\n"));
  const std::string log = (arbiter::testing::Scratch("ke") / "scheduler.log").string();
  Scheduler s("arbiter-ke", "ke", log);
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("ke", "victim", "arbiter-ke", 8, "ke-low")));
  const Json scheduled = Await("Scheduled", "victim");
  ASSERT_FALSE(scheduled.is_null()) << ReadFile(log) << Kubectl("get events -n ke").out;
  EXPECT_EQ(scheduled["note"], "Successfully assigned ke/victim to ke-0");
  EXPECT_EQ(scheduled["type"], "Normal");
  EXPECT_EQ(scheduled["action"], "Binding");
  EXPECT_EQ(scheduled["reportingController"], "arbiter-ke");
  EXPECT_EQ(scheduled["regarding"]["kind"], "Pod");
  EXPECT_EQ(scheduled["regarding"]["uid"], Get("pod victim -n ke", "{.metadata.uid}"));
  // A pod of the same priority does not fit and preempts nobody: FailedScheduling, its note the
  // PodScheduled condition's message (the engine's).
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("ke", "waits", "arbiter-ke", 8, "ke-low")));
  const Json failed = Await("FailedScheduling", "waits");
  ASSERT_FALSE(failed.is_null()) << ReadFile(log);
  EXPECT_EQ(failed["type"], "Warning");
  EXPECT_EQ(failed["action"], "Scheduling");
  const std::string jp = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  EXPECT_EQ(failed["note"], Get("pod waits -n ke", jp));
  EXPECT_FALSE(failed["note"].get<std::string>().empty());
  // A high-priority pod preempts the victim through the Eviction API: Preempted, related to it.
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("ke", "urgent", "arbiter-ke", 8, "ke-high")));
  const Json preempted = Await("Preempted", "victim");
  ASSERT_FALSE(preempted.is_null()) << ReadFile(log);
  // The engine's text of its Preempted event (driver::PodEventOf), as `arbiter serve` says it.
  EXPECT_EQ(preempted["note"], "preempted by ke/urgent; SIGTERM, grace 1s");
  EXPECT_EQ(preempted["type"], "Normal");
  EXPECT_EQ(preempted["action"], "Preempting");
  EXPECT_EQ(preempted["related"]["name"], "urgent");
  EXPECT_EQ(preempted["related"]["uid"], Get("pod urgent -n ke", "{.metadata.uid}"));
  EXPECT_FALSE(Await("Scheduled", "urgent").is_null()) << ReadFile(log);
  // Each is one Event: nothing failed to write.
  s.Stop();
  const std::string text = ReadFile(log);
  EXPECT_EQ(text.find("writing an event failed"), std::string::npos) << text;
  int scheduled_victim = 0;
  for (const auto& e : Events())
    scheduled_victim += e.value("reason", "") == "Scheduled" && e["regarding"]["name"] == "victim";
  EXPECT_EQ(scheduled_victim, 1);
  Kubectl("delete namespace ke --wait=false");
  Kubectl("delete node ke-0 --wait=false");
}

// A pod pending for quota (driver/pod_scheduling.h): its PodScheduled reason is the engine's code,
// QuotaExceeded -- not Unschedulable, which autoscalers would add nodes for -- its message the
// engine's text, and its Event QuotaExceeded (Warning, action Scheduling) with that text.
TEST_F(KubeEvents, APodPendingForQuotaSaysQuotaExceeded) {
  ASSERT_NO_FATAL_FAILURE(Fresh("keq", "keq-0"));
  ASSERT_NO_FATAL_FAILURE(Node("keq-0", "keq"));
  ASSERT_NO_FATAL_FAILURE(
      Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: keq}\n---\n"
            "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: "
            "keq}\nspec:\n  min: {nvidia.com/gpu: 4}\n  max: {nvidia.com/gpu: 4}\n"));
  const std::string log = (arbiter::testing::Scratch("keq") / "scheduler.log").string();
  Scheduler s("arbiter-keq", "keq", log);
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("keq", "first", "arbiter-keq", 4)));
  ASSERT_EQ(Until("pod first -n keq", "{.spec.nodeName}",
                  [](const std::string& v) { return !v.empty(); }),
            "keq-0")
      << ReadFile(log);
  // The node has room (8 GPUs, 4 used); the quota has none.
  ASSERT_NO_FATAL_FAILURE(Apply(PodYaml("keq", "second", "arbiter-keq", 4)));
  const std::string reason = "{.status.conditions[?(@.type==\"PodScheduled\")].reason}";
  const std::string message = "{.status.conditions[?(@.type==\"PodScheduled\")].message}";
  EXPECT_EQ(
      Until("pod second -n keq", reason, [](const std::string& v) { return v == "QuotaExceeded"; }),
      "QuotaExceeded")
      << ReadFile(log);
  EXPECT_EQ(Get("pod second -n keq", message),
            "exceeded ElasticQuota keq/q max: requested nvidia.com/gpu=4, used 4, max 4");
  EXPECT_EQ(Get("pod second -n keq", "{.status.conditions[?(@.type==\"PodScheduled\")].status}"),
            "False");
  EXPECT_EQ(Get("pod second -n keq", "{.status.phase}"), "Pending");  // kubectl's STATUS
  EXPECT_EQ(Get("pod second -n keq", "{.status.reason}"), "");
  Json quota;
  for (int i = 0; i < 300 && quota.is_null(); ++i) {
    for (const auto& e : Events("keq"))
      if (e.value("reason", "") == "QuotaExceeded" && e["regarding"].value("name", "") == "second")
        quota = e;
    if (quota.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(quota.is_null()) << ReadFile(log);
  EXPECT_EQ(quota["type"], "Warning");
  EXPECT_EQ(quota["action"], "Scheduling");
  EXPECT_EQ(quota["note"], Get("pod second -n keq", message));
  // A pod the engine rejects at admission (its QoS does not exist): the engine's code, not
  // Unschedulable, and its Rejected event.
  std::string third = PodYaml("keq", "third", "arbiter-keq", 1);
  third.replace(third.find("namespace: keq}"), 15,
                "namespace: keq, annotations: {arbiter.dev/qos: nope}}");
  ASSERT_NO_FATAL_FAILURE(Apply(third));
  EXPECT_EQ(
      Until("pod third -n keq", reason, [](const std::string& v) { return v == "UnknownQoS"; }),
      "UnknownQoS")
      << ReadFile(log);
  EXPECT_EQ(Get("pod third -n keq", message), "no QoS with name nope was found");
  Json rejected;
  for (int i = 0; i < 300 && rejected.is_null(); ++i) {
    for (const auto& e : Events("keq"))
      if (e.value("reason", "") == "Rejected" && e["regarding"].value("name", "") == "third")
        rejected = e;
    if (rejected.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_FALSE(rejected.is_null()) << ReadFile(log);
  EXPECT_EQ(rejected["type"], "Warning");
  EXPECT_EQ(rejected["note"], "no QoS with name nope was found");
  s.Stop();
  Kubectl("delete namespace keq --wait=false");
  Kubectl("delete node keq-0 --wait=false");
}

// The event writer's connections (16, as `arbiter scheduler` uses): 300 Events written at once,
// each created and at once patched into a series of 2. Each Event's writes keep their order
// (over one connection): no patch reaches the API server before its create (a 404), and every
// Event ends with its count.
TEST_F(KubeEvents, WriterOverSeveralConnectionsKeepsEachSeriesInOrder) {
  namespace ks = arbiter::kubesched;
  ASSERT_NO_FATAL_FAILURE(Fresh("kew", "kew-none"));
  ASSERT_NO_FATAL_FAILURE(Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: kew}\n"));
  auto kube = arbiter::kubeclient::LoadKubeconfig(kube_fixture::Kubeconfig());
  ASSERT_TRUE(kube.ok()) << kube.message();
  std::string said;
  ks::EventWriter writer(
      *kube, [&](const std::string& m) { said = m; }, 16);
  ks::EventRecorder recorder;
  constexpr int kEvents = 300;
  const arbiter::Millis now = 1764000000000;
  for (int i = 0; i < kEvents; ++i) {
    ks::EventRequest r{{"v1", "Pod", "kew", "p-" + std::to_string(i), ""},
                       std::nullopt,
                       false,
                       "Scheduled",
                       "Binding",
                       "Successfully assigned kew/p to n"};
    auto writes = recorder.Record(r, now + i);
    for (auto& w : recorder.Record(r, now + i)) writes.push_back(std::move(w));
    ASSERT_EQ(writes.size(), 2u);
    writer.Submit(std::move(writes));
  }
  for (int i = 0; i < 600 && writer.pending() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(writer.pending(), 0);
  EXPECT_EQ(writer.failed(), 0) << said;
  EXPECT_EQ(writer.written(), 2 * kEvents);
  int counted = 0;
  for (const auto& e : Events("kew"))
    if (e.contains("series") && e["series"].value("count", 0) == 2) ++counted;
  EXPECT_EQ(counted, kEvents);
  Kubectl("delete namespace kew --wait=false");
}

}  // namespace kube_events_test
