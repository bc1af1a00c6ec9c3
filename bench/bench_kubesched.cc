// arbiter scheduler's controller (src/kubesched/controller.h) without a cluster: the first cycle
// after every informer has listed, the step that delays the first binding (docs/kubernetes.md,
// "Where the time goes"). Objects as kube-apiserver returns them (server fields, defaults).
//   build/bench_kubesched     (counters: pods_per_s, binds; first_bind_ms: from the Step's start
//                             to its first binding handed over, step_ms: the whole Step)
#include <benchmark/benchmark.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "kubesched/controller.h"

namespace {

using arbiter::kubesched::Action;
using arbiter::kubesched::Controller;
using arbiter::kubesched::ControllerOptions;
using arbiter::kubesched::Json;

constexpr arbiter::Millis kT0 = 1764000000000;

Json NodeJson(int i) {
  const std::string name = "kwok-" + std::to_string(i);
  return Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
                     R"(","uid":"u-)" + name + R"(","resourceVersion":"7",
      "creationTimestamp":"2026-01-01T00:00:00Z","annotations":{"kwok.x-k8s.io/node":"fake"},
      "labels":{"type":"kwok","kubernetes.io/hostname":")" +
                     name + R"("}},"spec":{},
      "status":{"capacity":{"cpu":"32","memory":"256Gi","pods":"110","nvidia.com/gpu":"8"},
                "allocatable":{"cpu":"32","memory":"256Gi","pods":"110","nvidia.com/gpu":"8"},
                "conditions":[{"type":"Ready","status":"True"}]}})");
}

// A pod as kube-apiserver returns it: managed fields, the service account's volume (its name
// differs from pod to pod), the default tolerations. `node`: bound there by another scheduler.
Json PodJson(int i, const std::string& scheduler = "arbiter", const std::string& node = "") {
  const std::string name = "p-" + std::to_string(i);
  Json p = Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                       R"(","namespace":"bench","uid":"uid-)" + name + R"(",
      "resourceVersion":"9","creationTimestamp":"2026-01-01T00:00:01Z","labels":{"app":"bench"},
      "managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1",
        "time":"2026-01-01T00:00:01Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{
        "f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},
        "f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},
        "f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},
        "f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},
        "f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}]},
      "spec":{"schedulerName":")" +
                       scheduler + R"(","restartPolicy":"Always","dnsPolicy":"ClusterFirst",
        "serviceAccountName":"default","terminationGracePeriodSeconds":0,"enableServiceLinks":true,
        "preemptionPolicy":"PreemptLowerPriority","priority":0,"securityContext":{},
        "tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},
          {"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],
        "volumes":[{"name":"kube-api-access-)" +
                       std::to_string(10000 + i) + R"(","projected":{"defaultMode":420,"sources":[
          {"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},
          {"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}]}}],
        "containers":[{"name":"c","image":"busybox","imagePullPolicy":"Always",
          "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
          "volumeMounts":[{"name":"kube-api-access-)" +
                       std::to_string(10000 + i) + R"(","readOnly":true,
            "mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],
          "resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]},
      "status":{"phase":"Pending","qosClass":"Burstable"}})");
  if (!node.empty()) {
    p["spec"]["nodeName"] = node;
    p["status"]["phase"] = "Running";
  }
  return p;
}

// The first Step with range(0) nodes, range(1) pending pods and range(2) pods another scheduler
// bound (bench/kubesched.sh's second pass: kube-scheduler's), every kind listed: what `arbiter
// scheduler` does between its informers' first lists and its first bindings.
void BM_KubeschedFirstCycle(benchmark::State& state) {
  std::vector<Json> nodes, pods;
  for (int i = 0; i < state.range(0); ++i) nodes.push_back(NodeJson(i));
  for (int i = 0; i < state.range(1); ++i) pods.push_back(PodJson(i));
  for (int i = 0; i < state.range(2); ++i)
    pods.push_back(PodJson(state.range(1) + i, "default-scheduler",
                           "kwok-" + std::to_string(i % state.range(0))));
  size_t binds = 0;
  double step_ms = 0, first_bind_ms = 0;  // wall time: the Step, and until its first binding
  for (auto _ : state) {
    state.PauseTiming();
    Controller c({});
    c.Synced("Node", nodes);
    c.Synced("Pod", pods);
    for (const char* k :
         {"Namespace", "ResourceQuota", "LimitRange", "PriorityClass", "PodDisruptionBudget",
          "ElasticQuota", "PoolPolicy", "PriceBook", "QoS", "ResourceFlavor", "PodGroup", "Job"})
      c.Synced(k, {});
    state.ResumeTiming();
    // As `arbiter scheduler` steps it: the bindings handed over as the engine places the pods.
    binds = 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> first;
    const std::vector<Action> actions = c.Step(kT0, [&](const Action&) {
      if (!first) first = std::chrono::steady_clock::now();
      ++binds;
    });
    const auto t1 = std::chrono::steady_clock::now();
    for (const auto& a : actions) binds += a.type == Action::Type::kBind;
    state.PauseTiming();
    auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
    step_ms += ms(t1 - t0);
    first_bind_ms += ms((first ? *first : t1) - t0);
    benchmark::DoNotOptimize(actions.data());
    // The controller (its engine, the objects) is destroyed outside the timing.
    state.ResumeTiming();
  }
  state.counters["binds"] = static_cast<double>(binds);
  state.counters["step_ms"] = step_ms / static_cast<double>(state.iterations());
  state.counters["first_bind_ms"] = first_bind_ms / static_cast<double>(state.iterations());
  state.counters["pods_per_s"] = benchmark::Counter(
      static_cast<double>(state.range(1)) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KubeschedFirstCycle)
    ->Args({1000, 5000, 0})
    ->Args({1000, 5000, 5000})
    ->Args({5000, 5000, 5000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// A Step after one ResourceFlavor changed, with range(0) ElasticQuotas (one per namespace, each
// naming one of range(1) flavors): every ElasticQuota is applied again with the flavors' node
// labels (Controller::Propagate, ApplyPolicy).
void BM_KubeschedFlavorChange(benchmark::State& state) {
  const int quotas = static_cast<int>(state.range(0)), flavors = static_cast<int>(state.range(1));
  auto flavor = [](int f, const std::string& product) {
    return Json{
        {"apiVersion", "arbiter.dev/v1alpha1"},
        {"kind", "ResourceFlavor"},
        {"metadata", {{"name", "f" + std::to_string(f)}, {"uid", "rf-" + std::to_string(f)}}},
        {"spec", {{"nodeLabels", {{"nvidia.com/gpu.product", product}}}}}};
  };
  std::vector<Json> qs, fs;
  for (int f = 0; f < flavors; ++f) fs.push_back(flavor(f, "P" + std::to_string(f)));
  for (int q = 0; q < quotas; ++q)
    qs.push_back(Json{{"apiVersion", "arbiter.dev/v1alpha1"},
                      {"kind", "ElasticQuota"},
                      {"metadata",
                       {{"name", "q"},
                        {"namespace", "ns-" + std::to_string(q)},
                        {"uid", "eq-" + std::to_string(q)}}},
                      {"spec",
                       {{"flavors", Json::array({{{"name", "f" + std::to_string(q % flavors)},
                                                  {"min", {{"nvidia.com/gpu", "8"}}}}})}}}});
  int64_t step = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::optional<Controller> c(std::in_place, ControllerOptions{});
    c->Synced("Node", {NodeJson(0)});
    c->Synced("ElasticQuota", qs);
    c->Synced("ResourceFlavor", fs);
    for (const char* k :
         {"Pod", "Namespace", "ResourceQuota", "LimitRange", "PriorityClass", "PodDisruptionBudget",
          "PoolPolicy", "PriceBook", "QoS", "PodGroup", "Job"})
      c->Synced(k, {});
    (void)c->Step(kT0);
    c->Upsert("ResourceFlavor", flavor(0, "changed-" + std::to_string(++step)));
    state.ResumeTiming();
    benchmark::DoNotOptimize(c->Step(kT0 + 1000).data());
    state.PauseTiming();
    c.reset();  // destroyed outside the timing
    state.ResumeTiming();
  }
}
BENCHMARK(BM_KubeschedFlavorChange)
    ->Args({200, 20})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// A Step after range(1) PodGroups changed at once (their status, say), with range(0) pods waiting
// for other PodGroups that do not exist: Controller::Propagate looks for the pods that wait for
// the changed groups (none here), the rest of the Step has little to do.
void BM_KubeschedPodGroupChange(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0)), groups = static_cast<int>(state.range(1));
  auto group = [](int g) {
    return Json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                {"kind", "PodGroup"},
                {"metadata",
                 {{"name", "g-" + std::to_string(g)},
                  {"namespace", "bench"},
                  {"uid", "pg-" + std::to_string(g)}}},
                {"spec", {{"minMember", 1}}}};
  };
  std::vector<Json> ps;
  for (int i = 0; i < pods; ++i) {
    Json p = PodJson(i);
    p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "w-" + std::to_string(i % groups);
    ps.push_back(std::move(p));
  }
  for (auto _ : state) {
    state.PauseTiming();
    std::optional<Controller> c(std::in_place, ControllerOptions{});
    c->Synced("Node", {NodeJson(0)});
    c->Synced("Pod", ps);
    for (const char* k :
         {"Namespace", "ResourceQuota", "LimitRange", "PriorityClass", "PodDisruptionBudget",
          "ElasticQuota", "PoolPolicy", "PriceBook", "QoS", "ResourceFlavor", "PodGroup", "Job"})
      c->Synced(k, {});
    (void)c->Step(kT0);
    for (int g = 0; g < groups; ++g) c->Upsert("PodGroup", group(g));
    state.ResumeTiming();
    benchmark::DoNotOptimize(c->Step(kT0 + 1000).data());
    state.PauseTiming();
    c.reset();  // destroyed outside the timing
    state.ResumeTiming();
  }
}
BENCHMARK(BM_KubeschedPodGroupChange)
    ->Args({5000, 1000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();

// The steady state after the first cycle: range(0) nodes, range(1) pods of Arbiter's bound (their
// bindings accepted), range(2) pods of another scheduler bound; each iteration delivers
// range(3) of Arbiter's pods as their watch events come in after the binding (spec.nodeName set,
// then KWOK's status Running) and runs one Step. What `arbiter scheduler` does for every batch
// of watch events while the bindings flow (bench/kubesched.sh's second pass): its cost per Step
// should follow the events, not the cluster's size.
void BM_KubeschedSteadyStep(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)), own = static_cast<int>(state.range(1));
  const int foreign = static_cast<int>(state.range(2)), batch = static_cast<int>(state.range(3));
  std::vector<Json> ns, pods;
  for (int i = 0; i < nodes; ++i) ns.push_back(NodeJson(i));
  for (int i = 0; i < own; ++i) pods.push_back(PodJson(i));
  for (int i = 0; i < foreign; ++i)
    pods.push_back(PodJson(own + i, "default-scheduler", "kwok-" + std::to_string(i % nodes)));
  Controller c({});
  c.Synced("Node", ns);
  c.Synced("Pod", pods);
  for (const char* k :
       {"Namespace", "ResourceQuota", "LimitRange", "PriorityClass", "PodDisruptionBudget",
        "ElasticQuota", "PoolPolicy", "PriceBook", "QoS", "ResourceFlavor", "PodGroup", "Job"})
    c.Synced(k, {});
  std::vector<Action> binds;
  for (Action& a : c.Step(kT0, [&](Action a) { binds.push_back(std::move(a)); }))
    if (a.type == Action::Type::kBind) binds.push_back(std::move(a));
  std::vector<Json> bound;  // each pod as its watch event after the binding, KWOK's Running
  for (const Action& a : binds) {
    c.Done(a, {201, "", ""}, kT0);
    Json p = PodJson(std::stoi(a.name.substr(2)));
    p["spec"]["nodeName"] = a.node;
    p["status"]["phase"] = "Running";
    bound.push_back(std::move(p));
  }
  (void)c.TakeEvents();
  (void)c.TakeLog();
  size_t next = 0;
  arbiter::Millis now = kT0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Json> deliver;
    for (int i = 0; i < batch && !bound.empty(); ++i)
      deliver.push_back(bound[next++ % bound.size()]);
    state.ResumeTiming();
    for (Json& p : deliver) c.Upsert("Pod", std::move(p));
    now += 10;
    benchmark::DoNotOptimize(c.Step(now).data());
  }
  state.counters["binds"] = static_cast<double>(binds.size());
}
BENCHMARK(BM_KubeschedSteadyStep)
    ->Args({1000, 5000, 5000, 10})
    ->Args({5000, 5000, 5000, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(50)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
