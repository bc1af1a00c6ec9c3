// The controller of `arbiter scheduler` (src/kubesched/controller.h), without a cluster: objects
// as kube-apiserver sends them in, actions out. The decisions must be `arbiter sim`'s for the same
// objects; the API server's answers (201, 409, 429) move it as docs/kubernetes.md says. The same
// paths against a real kube-apiserver: tests/integration/kube_scheduler_test.cc.
#include "kubesched/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "adapters/yaml/manifest_loader.h"
#include "driver/pod_scheduling.h"
#include "kubesched/scheduler.h"
#include "sim/simulator.h"

namespace arbiter::kubesched {
namespace controller_test {

constexpr Millis kT0 = 1764000000000;  // 2025-11-24, any wall-clock instant

// A Node as the API server returns it (server fields, conditions, the kubelet's labels).
Json NodeJson(const std::string& name, int gpus, const std::string& cpu = "32") {
  return Json::parse(
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","uid":"u-)" + name +
      R"(","resourceVersion":"7","creationTimestamp":"2026-01-01T00:00:00Z",
      "annotations":{"kwok.x-k8s.io/node":"fake"},"labels":{"type":"kwok"},
      "managedFields":[{"manager":"kubectl","operation":"Update"}]},
      "spec":{},
      "status":{"capacity":{"cpu":")" +
      cpu + R"(","memory":"256Gi","pods":"110","nvidia.com/gpu":")" + std::to_string(gpus) + R"("},
                "allocatable":{"cpu":")" +
      cpu + R"(","memory":"256Gi","pods":"110","nvidia.com/gpu":")" + std::to_string(gpus) + R"("},
                "conditions":[{"type":"Ready","status":"True"}],
                "nodeInfo":{"kubeletVersion":"kwok-v0.8.0"}}})");
}

// A Pod as the API server returns it after admission (defaults, the service-account volume, the
// default tolerations, status Pending).
Json PodJson(const std::string& name, int gpus, const std::string& scheduler = "arbiter",
             const std::string& priority_class = "", const std::string& node = "") {
  Json p = Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                       R"(","namespace":"team-a","uid":"uid-)" + name + R"(",
      "resourceVersion":"9","creationTimestamp":"2026-01-01T00:00:01Z","labels":{"app":")" +
                       name +
                       R"("}},
      "spec":{"schedulerName":")" +
                       scheduler + R"(","restartPolicy":"Never","dnsPolicy":"ClusterFirst",
        "serviceAccountName":"default","terminationGracePeriodSeconds":30,"enableServiceLinks":true,
        "preemptionPolicy":"PreemptLowerPriority","priority":0,
        "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
        "volumes":[{"name":"kube-api-access-x","projected":{"sources":[{"serviceAccountToken":{"path":"token"}}]}}],
        "containers":[{"name":"main","image":"busybox","imagePullPolicy":"Always",
          "terminationMessagePath":"/dev/termination-log",
          "volumeMounts":[{"name":"kube-api-access-x","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],
          "resources":{"requests":{"cpu":"2","memory":"8Gi","nvidia.com/gpu":")" +
                       std::to_string(gpus) + R"("},"limits":{"nvidia.com/gpu":")" +
                       std::to_string(gpus) + R"("}}}]},
      "status":{"phase":"Pending","qosClass":"Burstable"}})");
  if (!priority_class.empty()) p["spec"]["priorityClassName"] = priority_class;
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

Json PriorityClassJson(const std::string& name, int value) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}, {"uid", "pc-" + name}, {"resourceVersion", "3"}}},
          {"value", value},
          {"preemptionPolicy", "PreemptLowerPriority"}};
}

// Every kind listed once (what the informers deliver first).
void SyncAll(Controller& c, const std::vector<Json>& nodes, const std::vector<Json>& pods,
             const std::vector<Json>& classes = {}) {
  c.Synced("Node", nodes);
  c.Synced("Pod", pods);
  c.Synced("PriorityClass", classes);
  for (const char* k : {"Namespace", "ResourceQuota", "LimitRange", "PodDisruptionBudget",
                        "ElasticQuota", "PoolPolicy", "PriceBook", "QoS"})
    c.Synced(k, {});
}

std::map<std::string, std::string> Binds(const std::vector<Action>& actions) {
  std::map<std::string, std::string> out;
  for (const auto& a : actions)
    if (a.type == Action::Type::kBind) out[a.namespace_ + "/" + a.name] = a.node;
  return out;
}

// `arbiter sim` of the same objects: where each pod runs at time 0 ("" pending), and why.
std::map<std::string, std::pair<std::string, std::string>> Simulated(
    const std::vector<Json>& objs) {
  std::string text;
  for (const auto& o : objs) {
    Json clean = o;
    clean.erase("status");
    if (o["kind"] == "Node")
      clean["status"] = {{"allocatable", o["status"]["allocatable"]},
                         {"capacity", o["status"]["capacity"]}};
    clean["metadata"] = {{"name", o["metadata"]["name"]}};
    if (o["metadata"].contains("namespace"))
      clean["metadata"]["namespace"] = o["metadata"]["namespace"];
    text += clean.dump() + "\n---\n";
  }
  yaml::ManifestLoad load;
  yaml::LoadManifestText(text, "objects", &load);
  EXPECT_TRUE(load.ok());
  auto sim = sim::Simulation::Create(load.set, {});
  EXPECT_TRUE(sim.ok());
  EXPECT_TRUE((*sim)->Run(Millis{0}).ok());
  const driver::SimResult r = (*sim)->Finish(0);
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& w : r.workloads())
    out[w.key] = {std::string(w.on_node ? w.last_node : ""),
                  std::string(w.phase == engine::Phase::kPending ? w.message : "")};
  return out;
}

TEST(KubeschedController, BindsWhereSimPlacesAndSaysWhyTheRestWait) {
  const std::vector<Json> nodes = {NodeJson("n1", 8), NodeJson("n2", 8)};
  const std::vector<Json> pods = {PodJson("p1", 4), PodJson("p2", 4), PodJson("p3", 8),
                                  PodJson("p4", 8), PodJson("other", 2, "default-scheduler")};
  Controller c({});
  SyncAll(c, nodes, pods);
  const std::vector<Action> actions = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;  // nothing refused or ignored
  std::vector<Json> objs = nodes;
  for (size_t i = 0; i + 1 < pods.size(); ++i) objs.push_back(pods[i]);  // Arbiter's pods only
  const auto want = Simulated(objs);
  std::map<std::string, std::string> binds = Binds(actions);
  std::map<std::string, std::string> status;
  for (const auto& a : actions)
    if (a.type == Action::Type::kStatus) status[a.namespace_ + "/" + a.name] = a.message;
  ASSERT_EQ(want.size(), 4u);
  for (const auto& [key, w] : want) {
    if (!w.first.empty()) {
      EXPECT_EQ(binds[key], w.first) << key;
    } else {
      EXPECT_FALSE(binds.count(key)) << key;
      EXPECT_EQ(status[key], w.second) << key;
      EXPECT_FALSE(w.second.empty());
    }
  }
  EXPECT_EQ(binds.size(), 3u);
  EXPECT_FALSE(binds.count("team-a/other"));  // kube-scheduler's
  // Nothing is done twice: bound as asked, the next step has nothing to bind.
  for (const auto& a : actions) c.Done(a, ActionResult{201, "", ""}, kT0);
  EXPECT_TRUE(Binds(c.Step(kT0 + 1000)).empty());
  EXPECT_EQ(c.binds(), 3);
}

// PoolPolicy quota.maxSubmittedPerNamespace is serve's and sim's: the pods here exist in
// kube-apiserver already, so arbiter scheduler leaves the cap out (and says so) rather than
// refuse a pod for good that a later restart might accept: 3 pods of one namespace under a cap of
// 1 all bind.
TEST(KubeschedController, TheSubmitLimitIsNotAppliedToPodsThatExistAlready) {
  const std::vector<Json> nodes = {NodeJson("n1", 8)};
  const std::vector<Json> pods = {PodJson("p1", 1), PodJson("p2", 1), PodJson("p3", 1)};
  Controller c({});
  SyncAll(c, nodes, pods);
  c.Synced("PoolPolicy", {Json{{"apiVersion", "arbiter.dev/v1alpha1"},
                               {"kind", "PoolPolicy"},
                               {"metadata", {{"name", "pool"}}},
                               {"spec", {{"quota", {{"maxSubmittedPerNamespace", 1}}}}}}});
  const std::vector<Action> actions = c.Step(kT0);
  EXPECT_EQ(Binds(actions).size(), 3u);
  const auto log = c.TakeLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "PoolPolicy pool: spec.quota.maxSubmittedPerNamespace is not applied by arbiter "
            "scheduler (pods exist in kube-apiserver already; a count/pods ResourceQuota limits "
            "them)");
}

// With `placed`, each binding goes out as the engine places the pod, during the cycle (so that
// `arbiter scheduler` binds while the cycle goes on), and not again in the actions returned: the
// same bindings as without, each once.
TEST(KubeschedController, BindingsAreHandedOverAsTheEnginePlacesThePods) {
  const std::vector<Json> nodes = {NodeJson("n1", 8), NodeJson("n2", 8)};
  const std::vector<Json> pods = {PodJson("p1", 4), PodJson("p2", 4), PodJson("p3", 8),
                                  PodJson("p4", 8)};
  Controller batch({}), streamed({});
  SyncAll(batch, nodes, pods);
  SyncAll(streamed, nodes, pods);
  const std::vector<Action> all = batch.Step(kT0);
  std::vector<Action> early;
  const std::vector<Action> rest = streamed.Step(kT0, [&](Action a) { early.push_back(a); });
  EXPECT_EQ(Binds(early), Binds(all));
  EXPECT_EQ(Binds(early).size(), 3u);
  EXPECT_EQ(early.size(), 3u);
  EXPECT_TRUE(Binds(rest).empty());
  ASSERT_EQ(rest.size(), 1u);  // p4's PodScheduled condition, after the cycle
  EXPECT_EQ(rest[0].type, Action::Type::kStatus);
  for (const auto& a : early) streamed.Done(a, ActionResult{201, "", ""}, kT0);
  for (const auto& a : rest) streamed.Done(a, ActionResult{200, "", ""}, kT0);
  std::vector<Action> later;
  EXPECT_TRUE(streamed.Step(kT0 + 1000, [&](Action a) { later.push_back(a); }).empty());
  EXPECT_TRUE(later.empty());
  EXPECT_EQ(streamed.binds(), 3);
}

TEST(KubeschedController, ForeignPodsTakeTheirRequestsOffTheirNode) {
  Controller c({});
  // kube-scheduler's pod holds 6 of n1's 8 GPUs: Arbiter's 4-GPU pod does not fit beside it.
  SyncAll(c, {NodeJson("n1", 8)},
          {PodJson("theirs", 6, "default-scheduler", "", "n1"), PodJson("mine", 4)});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_TRUE(Binds(a).empty());
  // The foreign pod finishes: its GPUs are free again.
  Json done = PodJson("theirs", 6, "default-scheduler", "", "n1");
  done["status"]["phase"] = "Succeeded";
  c.Upsert("Pod", done);
  EXPECT_EQ(Binds(c.Step(kT0 + 1000)), (std::map<std::string, std::string>{{"team-a/mine", "n1"}}));
}

TEST(KubeschedController, ConflictOnBindingIsNeverBoundTwice) {
  Controller c({});
  SyncAll(c, {NodeJson("n1", 8), NodeJson("n2", 8)}, {PodJson("p", 8)});
  std::vector<Action> a = c.Step(kT0);
  ASSERT_EQ(Binds(a).size(), 1u);
  const std::string chosen = a[0].node;
  const std::string other = chosen == "n1" ? "n2" : "n1";
  // 409: someone else bound it to the other node. Arbiter lets go of it and counts it there.
  c.Done(a[0], ActionResult{409, "pod p is already assigned to node " + other, other}, kT0);
  c.Upsert("Pod", PodJson("p", 8, "arbiter", "", other));
  EXPECT_TRUE(Binds(c.Step(kT0 + 1000)).empty());
  EXPECT_EQ(c.engine().Nodes().size(), 2u);
  EXPECT_EQ(c.binds(), 0);
  // A second pod goes to the node the first did not take.
  c.Upsert("Pod", PodJson("q", 8));
  EXPECT_EQ(Binds(c.Step(kT0 + 2000)), (std::map<std::string, std::string>{{"team-a/q", chosen}}));
  // 409 from an earlier attempt of ours: the same node read back, taken as bound.
  Controller d({});
  SyncAll(d, {NodeJson("n1", 8)}, {PodJson("r", 8)});
  std::vector<Action> b = d.Step(kT0);
  ASSERT_EQ(Binds(b).size(), 1u);
  d.Done(b[0], ActionResult{409, "already assigned", "n1"}, kT0);
  EXPECT_TRUE(Binds(d.Step(kT0 + 1000)).empty());
}

// Pod "low" (priority 100) bound to n1's 8 GPUs, then "high" (1000, 8 GPUs) arrives: the actions
// of the Step at kT0 + 1000, which plans the preemption. The events so far are taken and dropped.
std::vector<Action> HighArrivesOverBoundLow(Controller& c) {
  SyncAll(c, {NodeJson("n1", 8)}, {PodJson("low", 8, "arbiter", "low")},
          {PriorityClassJson("low", 100), PriorityClassJson("high", 1000)});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_EQ(Binds(a).size(), 1u);
  if (a.empty()) return {};
  c.Done(a[0], ActionResult{201, "", ""}, kT0);
  (void)c.TakeEvents();
  c.Upsert("Pod", PodJson("low", 8, "arbiter", "low", "n1"));
  c.Upsert("Pod", PodJson("high", 8, "arbiter", "high"));
  return c.Step(kT0 + 1000);
}

TEST(KubeschedController, PreemptsThroughEvictionAndSaysWhenTheApiServerRefuses) {
  Controller c({});
  std::vector<Action> a = HighArrivesOverBoundLow(c);
  const Action* evict = nullptr;
  for (const auto& x : a)
    if (x.type == Action::Type::kEvict) evict = &x;
  ASSERT_NE(evict, nullptr);
  EXPECT_EQ(evict->name, "low");
  EXPECT_TRUE(Binds(a).empty());
  // 429: a PodDisruptionBudget the API server enforces. Retried later, never deleted; the
  // preemptor's condition says so.
  c.Done(*evict,
         ActionResult{429, "Cannot evict pod as it would violate the pod's disruption budget.", ""},
         kT0 + 1000);
  a = c.Step(kT0 + 2000);
  std::string said;
  for (const auto& x : a) {
    EXPECT_NE(x.type, Action::Type::kEvict);  // not before the retry time
    if (x.type == Action::Type::kStatus && x.name == "high") said = x.message;
  }
  EXPECT_NE(said.find("the API server refused to evict team-a/low: Cannot evict pod as it would "
                      "violate the pod's disruption budget."),
            std::string::npos)
      << said;
  a = c.Step(kT0 + 7000);
  ASSERT_EQ(a.size() >= 1, true);
  evict = nullptr;
  for (const auto& x : a)
    if (x.type == Action::Type::kEvict) evict = &x;
  ASSERT_NE(evict, nullptr);
  c.Done(*evict, ActionResult{201, "", ""}, kT0 + 7000);
  Json gone = PodJson("low", 8, "arbiter", "low", "n1");
  c.Remove("Pod", gone);
  EXPECT_EQ(Binds(c.Step(kT0 + 8000)), (std::map<std::string, std::string>{{"team-a/high", "n1"}}));
  EXPECT_EQ(c.evictions(), 1);
}

// The pending status and events are driver/pod_scheduling.h's (as `arbiter serve` writes them):
// a pod over its ElasticQuota gets PodScheduled reason QuotaExceeded (the engine's code, not
// Unschedulable) and a QuotaExceeded event (not FailedScheduling).
TEST(KubeschedController, PendingReasonAndEventsAreTheDrivers) {
  Controller c({});
  // Three pods of 4 GPUs, an 8-GPU node, their namespace's quota 8 GPUs: two run, one waits, for
  // quota first (the engine checks the quota before the nodes).
  SyncAll(c, {NodeJson("n1", 8)},
          {PodJson("a", 4, "arbiter", "low"), PodJson("b", 4, "arbiter", "low"),
           PodJson("c", 4, "arbiter", "low")},
          {PriorityClassJson("low", 100), PriorityClassJson("high", 1000)});
  c.Synced("ElasticQuota",
           {{{"apiVersion", "arbiter.dev/v1alpha1"},
             {"kind", "ElasticQuota"},
             {"metadata", {{"name", "q"}, {"namespace", "team-a"}}},
             {"spec", {{"min", {{"nvidia.com/gpu", "8"}}}, {"max", {{"nvidia.com/gpu", "8"}}}}}}});
  std::vector<Action> a = c.Step(kT0);
  const Action* status = nullptr;
  for (const auto& x : a)
    if (x.type == Action::Type::kStatus) status = &x;
  ASSERT_NE(status, nullptr);
  std::optional<engine::WorkloadStatus> st;
  for (const auto& w : c.engine().Workloads())
    if (w.key == "team-a/" + status->name) st = w;
  ASSERT_TRUE(st);
  EXPECT_EQ(status->reason, "QuotaExceeded");
  EXPECT_EQ(status->reason, driver::PodSchedulingOf(*st).scheduled.reason);
  EXPECT_EQ(status->message, st->message);
  const std::map<std::string, std::string> binds = Binds(a);
  ASSERT_EQ(binds.size(), 2u);
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0);
  std::map<std::string, EventRequest> by_reason;
  for (auto& e : c.TakeEvents()) by_reason[e.reason] = e;
  ASSERT_TRUE(by_reason.count("QuotaExceeded"));
  EXPECT_FALSE(by_reason.count("FailedScheduling"));
  EXPECT_TRUE(by_reason["QuotaExceeded"].warning);
  EXPECT_EQ(by_reason["QuotaExceeded"].action, "Scheduling");
  EXPECT_EQ(by_reason["QuotaExceeded"].note, st->message);
}

TEST(KubeschedController, PreemptedEventIsTheEnginesStop) {
  Controller c({});
  std::vector<Action> a = HighArrivesOverBoundLow(c);
  const Action* evict = nullptr;
  for (const auto& x : a)
    if (x.type == Action::Type::kEvict) evict = &x;
  ASSERT_NE(evict, nullptr);
  std::string stopped;
  for (const auto& w : c.engine().Workloads())
    if (w.key == "team-a/" + evict->name) stopped = w.message;
  // Before: "Preempted by team-a/high on node n1", kubesched's own wording.
  EXPECT_EQ(stopped, "preempted by team-a/high; SIGTERM, grace 30s");
  c.Done(*evict, ActionResult{201, "", ""}, kT0 + 1000);
  std::map<std::string, EventRequest> by_reason;
  for (auto& e : c.TakeEvents()) by_reason[e.reason] = e;
  ASSERT_TRUE(by_reason.count("Preempted"));
  EXPECT_EQ(by_reason["Preempted"].regarding.name, evict->name);
  EXPECT_EQ(by_reason["Preempted"].note, stopped);
  EXPECT_EQ(by_reason["Preempted"].action, "Preempting");
  EXPECT_FALSE(by_reason["Preempted"].warning);
  ASSERT_TRUE(by_reason["Preempted"].related);
  EXPECT_EQ(by_reason["Preempted"].related->name, "high");
  EXPECT_EQ(by_reason["Preempted"].related->uid, "uid-high");
}

// PREEMPT=1 bench/kubesched.sh's extra evictions: a preemptor whose victim is gone but whose
// nominated node is unschedulable for a moment (a KWOK node's NotReady flap under load: the node
// lifecycle controller's node.kubernetes.io/unreachable:NoSchedule taint) preempts again
// elsewhere, as kube-scheduler does. That new plan may pick a node whose own preemptor has its
// room free but was not tried yet in the cycle: the newcomer's nomination then held that room
// against it, and it preempted a third victim. The nominees that can bind where their room is
// held go first: one eviction more than victims needed, not two.
TEST(KubeschedController, PreemptorPlannedAgainDoesNotTakeTheRoomOfAnotherNominee) {
  Controller c({});
  const std::vector<Json> nodes = {NodeJson("n1", 8), NodeJson("n2", 8), NodeJson("n3", 8)};
  std::vector<Json> pods;
  // Two 4-GPU pods fill each node: priority 100 on n1 and n2, 200 on n3 (the last choice).
  for (const std::string n : {"n1", "n2", "n3"})
    for (const std::string i : {"0", "1"})
      pods.push_back(PodJson("l-" + n + "-" + i, 4, "arbiter", n == "n3" ? "mid" : "low", n));
  pods.push_back(PodJson("h1", 4, "arbiter", "high"));
  pods.push_back(PodJson("h2", 4, "arbiter", "high"));
  SyncAll(c, nodes, pods,
          {PriorityClassJson("low", 100), PriorityClassJson("mid", 200),
           PriorityClassJson("high", 1000)});
  std::vector<Action> a = c.Step(kT0);
  std::map<std::string, std::string> nominated;
  std::vector<std::string> victims;
  for (const auto& x : a) {
    if (x.type == Action::Type::kStatus) nominated[x.name] = x.node;
    if (x.type == Action::Type::kEvict) victims.push_back(x.name);
  }
  ASSERT_EQ(victims.size(), 2u);
  ASSERT_EQ(nominated.size(), 2u);
  ASSERT_NE(nominated["h1"], nominated["h2"]);
  ASSERT_NE(nominated["h1"], "n3");
  ASSERT_NE(nominated["h2"], "n3");
  for (const auto& x : a)
    c.Done(x, ActionResult{x.type == Action::Type::kEvict ? 201 : 200, "", ""}, kT0);
  // Both victims are gone; h1's node is tainted NoSchedule (NotReady) as the next cycle runs.
  for (const auto& v : victims) c.Remove("Pod", PodJson(v, 4, "arbiter", "low", v.substr(2, 2)));
  Json flapped = NodeJson(nominated["h1"], 8);
  flapped["spec"]["taints"] =
      Json::array({{{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}}});
  c.Upsert("Node", flapped);
  a = c.Step(kT0 + 1000);
  std::vector<std::string> evicted;
  for (const auto& x : a)
    if (x.type == Action::Type::kEvict) evicted.push_back(x.name);
  // h2 binds where its room is; h1 preempts the low pod beside it (kube-scheduler would too).
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/h2", nominated["h2"]}}));
  const std::string n2 = nominated["h2"];
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].substr(0, 2 + n2.size()), "l-" + n2);
}

TEST(KubeschedController, RestartPlacesBoundPodsWhereTheyRun) {
  Controller c({});
  // Before the restart: a and b were bound (by an earlier run) to n2 and n1, c waits.
  SyncAll(c, {NodeJson("n1", 8), NodeJson("n2", 8)},
          {PodJson("a", 8, "arbiter", "", "n2"), PodJson("b", 4, "arbiter", "", "n1"),
           PodJson("c", 4)});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/c", "n1"}}));
  EXPECT_EQ(c.engine().Workloads().size(), 3u);
}

// Taints with effect NoSchedule (the node lifecycle controller's unreachable taint, an
// operator's) and cordons keep new pods off a node, never those running there
// (IgnoredDuringExecution): a restart places Arbiter's bound pods where they run, charged to
// their quota and holding their room, not counted as foreign.
TEST(KubeschedController, RestartPlacesBoundPodsOnTaintedAndCordonedNodes) {
  Controller c({});
  Json n1 = NodeJson("n1", 8), n2 = NodeJson("n2", 8), n3 = NodeJson("n3", 8);
  n1["spec"]["taints"] =
      Json::array({{{"key", "node.kubernetes.io/unreachable"}, {"effect", "NoSchedule"}}});
  n2["spec"]["unschedulable"] = true;
  n3["spec"]["taints"] =
      Json::array({{{"key", "gpu"}, {"value", "bad"}, {"effect", "NoSchedule"}}});
  Json waits = PodJson("waits", 8);  // may use n3 (it tolerates the taint), not n1 or n2
  waits["spec"]["tolerations"].push_back({{"key", "gpu"}, {"operator", "Exists"}});
  SyncAll(c, {n1, n2, n3},
          {PodJson("a", 8, "arbiter", "", "n1"), PodJson("b", 8, "arbiter", "", "n2"),
           PodJson("c", 4, "arbiter", "", "n3"), waits});
  const std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_TRUE(Binds(a).empty());
  for (const auto& [pod, node] :
       std::map<std::string, std::string>{{"a", "n1"}, {"b", "n2"}, {"c", "n3"}}) {
    auto id = c.engine().Find("team-a", pod);
    ASSERT_TRUE(id) << pod;
    EXPECT_EQ(c.engine().Get(*id)->node, node) << pod;
  }
  EXPECT_EQ(c.engine().namespace_usages().at("team-a").Get("nvidia.com/gpu"), 20000);
  EXPECT_EQ(c.engine().Get(*c.engine().Find("team-a", "waits"))->phase, engine::Phase::kPending);
}

// A bound pod the engine still cannot place (here: no room left on its node) is counted as
// foreign, and the log says the engine's reason for it.
TEST(KubeschedController, RestartSaysWhyABoundPodIsCountedAsForeign) {
  Controller c({});
  SyncAll(c, {NodeJson("n1", 8)},
          {PodJson("a", 8, "arbiter", "", "n1"), PodJson("b", 4, "arbiter", "", "n1")});
  (void)c.Step(kT0);
  const std::vector<std::string> log = c.TakeLog();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0],
            "pod team-a/b runs on n1 but the engine cannot place it there (Unschedulable: 0/1 "
            "nodes are available: 1 Insufficient nvidia.com/gpu. It runs on that node already: "
            "nothing is preempted for it.): counted as foreign");
  // (Then n1 less b's 4 GPUs is refused: a's 8 use them. The node is overbooked indeed.)
}

// One its quota refuses (here: the ResourceQuota holds one of the two) keeps its room on its node
// from the first cycle: a pending pod of another namespace does not get it.
TEST(KubeschedController, BoundPodTheQuotaRefusesAtRestartKeepsItsRoom) {
  Controller c({});
  Json other = PodJson("other", 4);
  other["metadata"]["namespace"] = "team-b";
  c.Synced("Node", {NodeJson("n1", 8)});
  c.Synced("Pod",
           {PodJson("a", 4, "arbiter", "", "n1"), PodJson("b", 4, "arbiter", "", "n1"), other});
  c.Synced("ResourceQuota",
           {{{"apiVersion", "v1"},
             {"kind", "ResourceQuota"},
             {"metadata",
              {{"name", "gpus"}, {"namespace", "team-a"}, {"uid", "rq"}, {"resourceVersion", "3"}}},
             {"spec", {{"hard", {{"requests.nvidia.com/gpu", "4"}}}}}}});
  for (const char* k : {"Namespace", "PriorityClass", "LimitRange", "PodDisruptionBudget",
                        "ElasticQuota", "PoolPolicy", "PriceBook", "QoS"})
    c.Synced(k, {});
  EXPECT_TRUE(Binds(c.Step(kT0)).empty());
  const std::vector<std::string> log = c.TakeLog();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].rfind("pod team-a/b runs on n1 but the engine cannot place it there "
                         "(QuotaExceeded: exceeded quota: gpus",
                         0),
            0u)
      << log[0];
  EXPECT_EQ(c.engine().Get(*c.engine().Find("team-b", "other"))->phase, engine::Phase::kPending);
}

TEST(KubeschedController, PodTheLoaderRefusesIsToldWhy) {
  Controller c({});
  Json bad = PodJson("bad", 1);
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1.0001m";
  SyncAll(c, {NodeJson("n1", 8)}, {bad});
  std::vector<Action> a = c.Step(kT0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].type, Action::Type::kStatus);
  EXPECT_NE(a[0].message.find("Arbiter cannot schedule this pod"), std::string::npos);
  c.Done(a[0], ActionResult{200, "", ""}, kT0);
  EXPECT_TRUE(c.Step(kT0 + 1000).empty());  // said once
}

// A pod the engine rejects at admission (here: it names a QoS and a PriorityClass that do not
// exist) says the engine's reason code in PodScheduled (driver::PodSchedulingOf of its final
// status, as `arbiter serve` and `arbiter sim` give it), not Unschedulable (which would have the
// cluster autoscaler add nodes for it), and gets the engine's Rejected event, once.
TEST(KubeschedController, PodTheEngineRejectsSaysTheEnginesReason) {
  Controller c({});
  Json qos = PodJson("qos", 1);
  qos["metadata"]["annotations"] = {{"arbiter.dev/qos", "gold"}};
  SyncAll(c, {NodeJson("n1", 8)}, {qos, PodJson("pc", 1, "arbiter", "nope"), PodJson("ok", 1)});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/ok", "n1"}}));
  std::map<std::string, Action> status;
  for (const auto& x : a)
    if (x.type == Action::Type::kStatus) status[x.name] = x;
  ASSERT_EQ(status.size(), 2u);
  EXPECT_EQ(status["qos"].reason, "UnknownQoS");
  EXPECT_EQ(status["qos"].message, "no QoS with name gold was found");
  EXPECT_EQ(status["pc"].reason, "UnknownPriorityClass");
  EXPECT_EQ(status["pc"].message, "no PriorityClass with name nope was found");
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0);
  std::map<std::string, EventRequest> rejected;
  for (auto& e : c.TakeEvents())
    if (e.reason != "Scheduled") rejected[e.regarding.name] = e;
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected["qos"].reason, "Rejected");
  EXPECT_TRUE(rejected["qos"].warning);
  EXPECT_EQ(rejected["qos"].note, "no QoS with name gold was found");
  EXPECT_EQ(rejected["pc"].reason, "Rejected");
  EXPECT_TRUE(c.Step(kT0 + 1000).empty());  // said once
  EXPECT_TRUE(c.TakeEvents().empty());
}

// Pods that differ in their names only are loaded once (Controller::LoadPod): each keeps its own
// name, a pod that differs in anything the loader reads (requests, priority) is loaded for
// itself, and a name the loader refuses is refused even when the shape was loaded before.
TEST(KubeschedController, PodsOfOneShapeKeepTheirNamesAndTheirDifferences) {
  Controller c({});
  std::vector<Json> pods;
  for (const char* n : {"a-0", "a-1", "a-2"}) {
    pods.push_back(PodJson(n, 4));
    pods.back()["metadata"]["labels"]["app"] = "a";  // one shape: PodJson labels by name
    pods.back()["spec"]["volumes"][0]["name"] = std::string("kube-api-access-") + n;
  }
  pods.push_back(PodJson("big", 8));
  pods.back()["metadata"]["labels"]["app"] = "a";
  pods.push_back(PodJson("Not_A_Name", 4));
  pods.back()["metadata"]["labels"]["app"] = "a";
  for (size_t i = 0; i < pods.size(); ++i)  // creation order: the list's
    pods[i]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:0" + std::to_string(i) + "Z";
  SyncAll(c, {NodeJson("n1", 8), NodeJson("n2", 8)}, pods);
  const std::vector<Action> a = c.Step(kT0);
  // a-0 and a-1 fill n1 (4 + 4 GPUs), a-2 goes to n2, big (8 GPUs) fits nowhere.
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{
                          {"team-a/a-0", "n1"}, {"team-a/a-1", "n1"}, {"team-a/a-2", "n2"}}));
  for (const char* n : {"a-0", "a-1", "a-2", "big"}) EXPECT_TRUE(c.engine().Find("team-a", n)) << n;
  EXPECT_FALSE(c.engine().Find("team-a", "Not_A_Name"));
  std::map<std::string, std::string> status;
  for (const auto& x : a)
    if (x.type == Action::Type::kStatus) status[x.name] = x.message;
  ASSERT_EQ(status.size(), 2u);
  EXPECT_NE(status["big"].find("Insufficient nvidia.com/gpu"), std::string::npos) << status["big"];
  EXPECT_NE(status["Not_A_Name"].find("Arbiter cannot schedule this pod: metadata.name"),
            std::string::npos)
      << status["Not_A_Name"];
}

TEST(KubeschedController, PodRequestsFollowKubernetesEffectiveRequests) {
  Json p = PodJson("p", 2);
  p["spec"]["initContainers"] =
      Json::parse(R"([{"name":"init","resources":{"requests":{"cpu":"6","memory":"1Gi"}}}])");
  p["spec"]["overhead"] = {{"cpu", "250m"}};
  ResourceList r = PodRequests(p);
  EXPECT_EQ(r.Get("cpu"), 6250);
  EXPECT_EQ(r.Get("memory"), int64_t{8} << 30);
  EXPECT_EQ(r.Get("nvidia.com/gpu"), 2000);
}

// scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1) as the API server returns it.
Json PodGroupJson(const std::string& name, int min_member) {
  return {
      {"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
      {"kind", "PodGroup"},
      {"metadata",
       {{"name", name}, {"namespace", "team-a"}, {"uid", "pg-" + name}, {"resourceVersion", "4"}}},
      {"spec", {{"minMember", min_member}}},
      {"status", {{"phase", "Pending"}}}};
}

Json MemberJson(const std::string& name, const std::string& group, int gpus) {
  Json p = PodJson(name, gpus);
  p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = group;
  return p;
}

std::map<std::string, std::string> Statuses(const std::vector<Action>& actions) {
  std::map<std::string, std::string> out;
  for (const auto& a : actions)
    if (a.type == Action::Type::kStatus) out[a.namespace_ + "/" + a.name] = a.message;
  return out;
}

// A PodGroup from the cluster makes its pods one gang: all bound or none. Members whose PodGroup
// does not exist wait for it (as with the coscheduling plugin) and say so; once it is created they
// are scheduled as a gang.
TEST(KubeschedController, PodGroupsFromTheClusterAreGangs) {
  Controller c({});
  // 3 members of 4 GPUs on two 4-GPU nodes: minMember 3 cannot fit, none is bound.
  SyncAll(c, {NodeJson("n1", 4), NodeJson("n2", 4)},
          {MemberJson("g-0", "train", 4), MemberJson("g-1", "train", 4),
           MemberJson("g-2", "train", 4), MemberJson("w-0", "later", 2)});
  c.Synced("PodGroup", {PodGroupJson("train", 3)});
  c.Synced("ResourceFlavor", {});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_TRUE(Binds(a).empty());
  const auto st = Statuses(a);
  EXPECT_EQ(st.count("team-a/g-0"), 1u);
  EXPECT_EQ(st.at("team-a/w-0"),
            "waiting for PodGroup team-a/later (the pod's label scheduling.x-k8s.io/pod-group), "
            "which does not exist");
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  // A third node: the gang fits and is bound whole.
  c.Upsert("Node", NodeJson("n3", 4));
  a = c.Step(kT0 + 1000);
  EXPECT_EQ(Binds(a).size(), 3u);
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0 + 1000);
  // Its group arrives: w-0 is scheduled (a group of 1; 2 GPUs do not fit anywhere now).
  c.Upsert("PodGroup", PodGroupJson("later", 1));
  c.Upsert("Node", NodeJson("n4", 4));
  a = c.Step(kT0 + 2000);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/w-0", "n4"}}));
  ASSERT_TRUE(c.engine().Find("team-a", "w-0").has_value());
}

// An 8-GPU node labelled nvidia.com/gpu.product `product`.
Json LabelledNode(const std::string& name, const std::string& product) {
  Json n = NodeJson(name, 8);
  n["metadata"]["labels"]["nvidia.com/gpu.product"] = product;
  return n;
}

// A ResourceFlavor selecting the nodes of GPU product `product`.
Json FlavorJson(const std::string& name, const std::string& product) {
  return Json{{"apiVersion", "arbiter.dev/v1alpha1"},
              {"kind", "ResourceFlavor"},
              {"metadata", {{"name", name}, {"uid", "rf-" + name}, {"resourceVersion", "5"}}},
              {"spec", {{"nodeLabels", {{"nvidia.com/gpu.product", product}}}}}};
}

// An ElasticQuota's spec.flavors take the node labels of the cluster's ResourceFlavors, at start
// and when a flavor arrives or changes later.
TEST(KubeschedController, ElasticQuotaFlavorsComeFromTheClusterResourceFlavors) {
  const Json quota = {
      {"apiVersion", "arbiter.dev/v1alpha1"},
      {"kind", "ElasticQuota"},
      {"metadata", {{"name", "q"}, {"namespace", "team-a"}, {"uid", "eq-q"}}},
      {"spec",
       {{"flavors", Json::array({{{"name", "h100"}, {"min", {{"nvidia.com/gpu", "16"}}}}})}}}};
  Controller c({});
  SyncAll(c, {LabelledNode("a100-1", "A100"), LabelledNode("h100-1", "H100")}, {PodJson("p", 4)});
  c.Synced("ElasticQuota", {quota});
  c.Synced("ResourceFlavor", {FlavorJson("h100", "H100"), FlavorJson("a100", "A100")});
  c.Synced("PodGroup", {});
  std::vector<Action> a = c.Step(kT0);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/p", "h100-1"}}));
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0);
  // The flavor now names the A100 nodes: the next pod goes there.
  c.Upsert("ResourceFlavor", FlavorJson("h100", "A100"));
  c.Upsert("Pod", PodJson("q", 4));
  EXPECT_EQ(Binds(c.Step(kT0 + 1000)),
            (std::map<std::string, std::string>{{"team-a/q", "a100-1"}}));
}

// A PodGroup's arrival wakes the pods that wait for it, by namespace and name (Propagate's
// index): not a pod of another namespace waiting for a group of the same name, nor a waiting pod
// deleted meanwhile, nor a pod whose label moved to another group.
TEST(KubeschedController, PodGroupArrivalWakesExactlyItsWaitingPods) {
  auto in = [](Json pod, const std::string& ns) {
    pod["metadata"]["namespace"] = ns;
    return pod;
  };
  auto group_in = [](const std::string& name, const std::string& ns) {
    Json g = PodGroupJson(name, 1);
    g["metadata"]["namespace"] = ns;
    return g;
  };
  Controller c({});
  SyncAll(c, {NodeJson("n1", 8)},
          {MemberJson("a-0", "g", 2), in(MemberJson("b-0", "g", 2), "team-b"),
           MemberJson("gone", "g", 2), MemberJson("moved", "g", 2)});
  c.Synced("PodGroup", {});
  c.Synced("ResourceFlavor", {});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_TRUE(Binds(a).empty());
  const auto st = Statuses(a);
  EXPECT_EQ(st.at("team-b/b-0"),
            "waiting for PodGroup team-b/g (the pod's label scheduling.x-k8s.io/pod-group), "
            "which does not exist");
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0);
  // One waiting pod is deleted, another now waits for group h.
  c.Remove("Pod", MemberJson("gone", "g", 2));
  c.Upsert("Pod", MemberJson("moved", "h", 2));
  a = c.Step(kT0 + 1000);
  EXPECT_TRUE(Binds(a).empty());
  for (const auto& x : a) c.Done(x, ActionResult{200, "", ""}, kT0 + 1000);
  // team-a's group g arrives: a-0 only.
  c.Upsert("PodGroup", group_in("g", "team-a"));
  a = c.Step(kT0 + 2000);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/a-0", "n1"}}));
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0 + 2000);
  EXPECT_FALSE(c.engine().Find("team-a", "gone").has_value());
  // Then team-b's g and team-a's h: each wakes its own pod.
  c.Upsert("PodGroup", group_in("g", "team-b"));
  c.Upsert("PodGroup", group_in("h", "team-a"));
  a = c.Step(kT0 + 3000);
  EXPECT_EQ(Binds(a),
            (std::map<std::string, std::string>{{"team-a/moved", "n1"}, {"team-b/b-0", "n1"}}));
}

// ElasticQuotas applied in one step share the ResourceFlavors loaded once for that step; a flavor
// changed before the next step is loaded again there.
TEST(KubeschedController, ElasticQuotasOfOneStepTakeTheFlavorsOfThatStep) {
  auto quota = [](const std::string& ns, const std::string& flavor_name) {
    return Json{{"apiVersion", "arbiter.dev/v1alpha1"},
                {"kind", "ElasticQuota"},
                {"metadata", {{"name", "q"}, {"namespace", ns}, {"uid", "eq-" + ns}}},
                {"spec",
                 {{"flavors",
                   Json::array({{{"name", flavor_name}, {"min", {{"nvidia.com/gpu", "16"}}}}})}}}};
  };
  auto pod_in = [](const std::string& name, const std::string& ns) {
    Json p = PodJson(name, 4);
    p["metadata"]["namespace"] = ns;
    return p;
  };
  Controller c({});
  SyncAll(
      c,
      {LabelledNode("a100-1", "A100"), LabelledNode("h100-1", "H100"), LabelledNode("l4-1", "L4")},
      {pod_in("p", "team-a"), pod_in("p", "team-b")});
  c.Synced("ElasticQuota", {quota("team-a", "fast"), quota("team-b", "slow")});
  c.Synced("ResourceFlavor", {FlavorJson("fast", "H100"), FlavorJson("slow", "A100")});
  c.Synced("PodGroup", {});
  std::vector<Action> a = c.Step(kT0);
  for (const auto& l : c.TakeLog()) ADD_FAILURE() << l;
  EXPECT_EQ(Binds(a),
            (std::map<std::string, std::string>{{"team-a/p", "h100-1"}, {"team-b/p", "a100-1"}}));
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0);
  // Both flavors move in one step: both quotas follow.
  c.Upsert("ResourceFlavor", FlavorJson("fast", "L4"));
  c.Upsert("ResourceFlavor", FlavorJson("slow", "H100"));
  c.Upsert("Pod", pod_in("q", "team-a"));
  c.Upsert("Pod", pod_in("q", "team-b"));
  a = c.Step(kT0 + 1000);
  EXPECT_EQ(Binds(a),
            (std::map<std::string, std::string>{{"team-a/q", "l4-1"}, {"team-b/q", "h100-1"}}));
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0 + 1000);
  // A quota changed alone (its flavor renamed) in a later step loads the flavors of that step.
  c.Upsert("ResourceFlavor", FlavorJson("fast", "A100"));
  a = c.Step(kT0 + 2000);
  for (const auto& x : a) c.Done(x, ActionResult{201, "", ""}, kT0 + 2000);
  c.Upsert("ElasticQuota", quota("team-b", "fast"));
  c.Upsert("Pod", pod_in("r", "team-b"));
  EXPECT_EQ(Binds(c.Step(kT0 + 3000)),
            (std::map<std::string, std::string>{{"team-b/r", "a100-1"}}));
}

// Members of a PodGroup that come or go after the group was given to the engine (docs/
// kubernetes.md, "flavors and gangs"): one member of minMember 2 waits; the second completes the
// group (both bound at once); a third, the group running, is bound alone; the third deleted while
// running takes the others with it (evicted, as a preempted member's group: docs/manifests.md).
TEST(KubeschedController, PodGroupMembersAddedOrDeletedAfterSubmission) {
  Controller c({});
  SyncAll(c, {NodeJson("n1", 4), NodeJson("n2", 4), NodeJson("n3", 4)},
          {MemberJson("g-0", "train", 4)});
  c.Synced("PodGroup", {PodGroupJson("train", 2)});
  c.Synced("ResourceFlavor", {});
  auto step = [&](Millis t) {  // the calls answered; a bound pod runs, as the informer says
    std::vector<Action> a = c.Step(t);
    for (const auto& x : a) {
      c.Done(x, ActionResult{x.type == Action::Type::kStatus ? 200 : 201, "", ""}, t);
      if (x.type != Action::Type::kBind) continue;
      Json p = MemberJson(x.name, "train", 4);
      p["spec"]["nodeName"] = x.node;
      p["status"]["phase"] = "Running";
      c.Upsert("Pod", p);
    }
    (void)c.TakeEvents();
    return a;
  };
  auto of_type = [](const std::vector<Action>& a, Action::Type type) {
    std::set<std::string> names;
    for (const auto& x : a)
      if (x.type == type) names.insert(x.name);
    return names;
  };
  std::vector<Action> a = step(kT0);
  EXPECT_TRUE(Binds(a).empty());
  EXPECT_EQ(Statuses(a)["team-a/g-0"],
            "pod group team-a/train: 1 of minMember 2 pods present; waiting for the rest");
  c.Upsert("Pod", MemberJson("g-1", "train", 4));
  a = step(kT0 + 1000);
  EXPECT_EQ(of_type(a, Action::Type::kBind), (std::set<std::string>{"g-0", "g-1"}));
  c.Upsert("Pod", MemberJson("g-2", "train", 4));
  a = step(kT0 + 2000);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/g-2", "n3"}}));
  Json gone = MemberJson("g-2", "train", 4);
  gone["spec"]["nodeName"] = "n3";
  c.Remove("Pod", gone);
  a = step(kT0 + 3000);
  EXPECT_EQ(of_type(a, Action::Type::kEvict), (std::set<std::string>{"g-0", "g-1"}));
  EXPECT_TRUE(of_type(step(kT0 + 4000), Action::Type::kEvict).empty());  // once
}

// A controller whose calls are all answered (bind 201, status 200); each pod bound then runs, as
// the informer says (Upsert with its nodeName and phase Running). Members of the PodGroups
// "train" (g-*) and "solo" (h-*).
struct GangCluster {
  Controller c{ControllerOptions{}};
  std::map<std::string, Json> pods;  // by name, as last delivered
  void Add(const std::string& name, int gpus) {
    pods[name] = MemberJson(name, name[0] == 'g' ? "train" : "solo", gpus);
    c.Upsert("Pod", pods[name]);
  }
  std::vector<Action> Step(Millis t) {
    std::vector<Action> a = c.Step(t);
    for (const auto& x : a) {
      c.Done(x, ActionResult{x.type == Action::Type::kStatus ? 200 : 201, "", ""}, t);
      if (x.type != Action::Type::kBind) continue;
      Json& p = pods[x.name];
      p["spec"]["nodeName"] = x.node;
      p["status"]["phase"] = "Running";
      c.Upsert("Pod", p);
    }
    (void)c.TakeEvents();
    for (const auto& l : c.TakeLog())
      if (l.find("bound ") != 0) ADD_FAILURE() << l;
    return a;
  }
  // The pod's workload in the engine (none: nullopt).
  std::optional<engine::WorkloadId> Workload(const std::string& name) const {
    return c.engine().Find("team-a", name);
  }
  void SetMinMember(const std::string& group, int min_member, const std::string& version) {
    Json g = PodGroupJson(group, min_member);
    g["metadata"]["resourceVersion"] = version;
    c.Upsert("PodGroup", g);
  }
};

int Count(const std::vector<Action>& a, Action::Type type) {
  return static_cast<int>(
      std::count_if(a.begin(), a.end(), [&](const Action& x) { return x.type == type; }));
}

// A PodGroup's spec changed after its members were given to the engine reaches its pending
// members (submitted again with it, as coscheduling reads the PodGroup at every attempt): a
// status-only change does not; minMember lowered under a waiting group starts it; a PodGroup
// deleted under a pending member makes it wait for the PodGroup again (its running member stays),
// and created again lets it be scheduled.
TEST(KubeschedController, ChangedPodGroupReachesItsPendingMembers) {
  GangCluster k;
  SyncAll(k.c, {NodeJson("n1", 4), NodeJson("n2", 4), NodeJson("n3", 4)}, {});
  k.c.Synced("PodGroup", {PodGroupJson("train", 3), PodGroupJson("solo", 1)});
  k.c.Synced("ResourceFlavor", {});
  k.Add("g-0", 4);
  k.Add("g-1", 4);
  k.Add("h-0", 4);
  std::vector<Action> a = k.Step(kT0);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/h-0", "n1"}}));
  EXPECT_EQ(Statuses(a)["team-a/g-0"],
            "pod group team-a/train: 2 of minMember 3 pods present; waiting for the rest");
  k.Add("h-1", 8);  // "solo" runs: placed alone, but it fits no 4-GPU node
  a = k.Step(kT0 + 1000);
  EXPECT_TRUE(Binds(a).empty());
  const auto g0 = k.Workload("g-0"), h0 = k.Workload("h-0"), h1 = k.Workload("h-1");
  ASSERT_TRUE(g0 && h0 && h1);
  // Its status written by someone else (the PodGroup controller): nothing is submitted again.
  Json g = PodGroupJson("train", 3);
  g["metadata"]["resourceVersion"] = "5";
  g["status"]["phase"] = "Scheduling";
  k.c.Upsert("PodGroup", g);
  a = k.Step(kT0 + 2000);
  EXPECT_TRUE(Binds(a).empty());
  EXPECT_EQ(k.Workload("g-0"), g0);
  // minMember lowered to 2: both members are bound together.
  k.SetMinMember("train", 2, "6");
  a = k.Step(kT0 + 3000);
  EXPECT_EQ(Binds(a),
            (std::map<std::string, std::string>{{"team-a/g-0", "n2"}, {"team-a/g-1", "n3"}}));
  // "solo" deleted: its pending member waits for it again, its running member is left be.
  k.c.Remove("PodGroup", PodGroupJson("solo", 1));
  a = k.Step(kT0 + 4000);
  EXPECT_EQ(Statuses(a)["team-a/h-1"],
            "waiting for PodGroup team-a/solo (the pod's label scheduling.x-k8s.io/pod-group), "
            "which does not exist");
  EXPECT_FALSE(k.Workload("h-1").has_value());
  EXPECT_EQ(k.Workload("h-0"), h0);
  EXPECT_EQ(Count(a, Action::Type::kEvict), 0);
  EXPECT_EQ(Count(a, Action::Type::kBind), 0);
  // Created again: the waiting member is given to the engine again.
  k.c.Upsert("PodGroup", PodGroupJson("solo", 1));
  a = k.Step(kT0 + 5000);
  EXPECT_TRUE(k.Workload("h-1").has_value());
  EXPECT_EQ(k.Workload("h-0"), h0);
  EXPECT_EQ(Count(a, Action::Type::kEvict), 0);
}

// minMember raised under a group whose first members run: its pending member is held for the
// rest (as coscheduling's PreFilter counts the group's pods), even once there is room; the
// running members are neither submitted again nor evicted. Lowered again, the member is bound.
TEST(KubeschedController, RaisedMinMemberHoldsTheRestAndLeavesRunningMembersBe) {
  GangCluster k;
  SyncAll(k.c, {NodeJson("n1", 4), NodeJson("n2", 4)}, {});
  k.c.Synced("PodGroup", {PodGroupJson("train", 2)});
  k.c.Synced("ResourceFlavor", {});
  k.Add("g-0", 4);
  k.Add("g-1", 4);
  EXPECT_EQ(Binds(k.Step(kT0)).size(), 2u);
  k.Add("g-2", 4);  // the group runs: placed alone, but no room
  std::vector<Action> a = k.Step(kT0 + 1000);
  EXPECT_TRUE(Binds(a).empty());
  const auto g0 = k.Workload("g-0"), g1 = k.Workload("g-1"), g2 = k.Workload("g-2");
  ASSERT_TRUE(g0 && g1 && g2);
  k.SetMinMember("train", 4, "5");
  a = k.Step(kT0 + 2000);
  EXPECT_EQ(Statuses(a)["team-a/g-2"],
            "pod group team-a/train: 3 of minMember 4 pods present; waiting for the rest");
  EXPECT_NE(k.Workload("g-2"), g2);  // submitted again
  EXPECT_EQ(k.Workload("g-0"), g0);
  EXPECT_EQ(k.Workload("g-1"), g1);
  EXPECT_EQ(Count(a, Action::Type::kEvict), 0);
  k.c.Upsert("Node", NodeJson("n3", 4));  // room for it: still held
  a = k.Step(kT0 + 3000);
  EXPECT_TRUE(Binds(a).empty());
  EXPECT_EQ(Count(a, Action::Type::kEvict), 0);
  k.SetMinMember("train", 3, "6");
  a = k.Step(kT0 + 4000);
  EXPECT_EQ(Binds(a), (std::map<std::string, std::string>{{"team-a/g-2", "n3"}}));
  EXPECT_EQ(k.Workload("g-0"), g0);
  EXPECT_EQ(k.Workload("g-1"), g1);
  EXPECT_EQ(Count(a, Action::Type::kEvict), 0);
  // Every member runs: a spec change has nothing to submit again.
  const auto g2_running = k.Workload("g-2");
  k.SetMinMember("train", 5, "7");
  a = k.Step(kT0 + 5000);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(k.Workload("g-0"), g0);
  EXPECT_EQ(k.Workload("g-2"), g2_running);
}

}  // namespace controller_test
}  // namespace arbiter::kubesched

namespace arbiter::kubesched {
namespace informer_resources_test {

// One informer per kind: Jobs came twice once batch/v1 Job joined core/api_kinds.h beside the
// hand-added entry (every Job delivered twice, one more watch on the API server).
TEST(KubeschedInformers, OneInformerPerKindAndNoneForEvents) {
  std::set<std::string> kinds, paths;
  for (const auto& r : InformerResources()) {
    EXPECT_TRUE(kinds.insert(r.kind).second) << r.kind;
    EXPECT_TRUE(paths.insert(r.api_path).second) << r.api_path;
  }
  EXPECT_FALSE(kinds.count("Event"));
  for (const char* k : {"Pod", "Node", "Job", "ElasticQuota", "ResourceFlavor", "PodGroup"})
    EXPECT_TRUE(kinds.count(k)) << k;
  EXPECT_TRUE(paths.count("/apis/batch/v1/jobs"));
  EXPECT_TRUE(paths.count("/apis/scheduling.x-k8s.io/v1alpha1/podgroups"));
}

}  // namespace informer_resources_test
}  // namespace arbiter::kubesched
