// /metrics from facts kept by the mutations (live_facts.h, ObjectStore::pod_phases, the node
// label cache) equals a full recount from the engine and the store after any sequence of
// mutations (a property test over random sequences), after a snapshot restore, and a View taken
// before later mutations still gives the state it was taken at. The dashboard's history sample,
// made from the same facts, equals the walk of the engine it replaced.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "cluster_fixtures.h"
#include "server/dashboard/history.h"
#include "server/dashboard/views.h"
#include "server/metrics/metrics.h"

namespace arbiter::server {
namespace metrics_facts_test {

using fixtures::kT0;
using fixtures::Ok;

Json ElasticQuota(const std::string& ns, const std::string& min_gpu, const std::string& max_gpu) {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", ns}, {"namespace", ns}}},
          {"spec",
           {{"cohort", "pool"},
            {"min", {{"nvidia.com/gpu", min_gpu}, {"cpu", "8"}}},
            {"max", {{"nvidia.com/gpu", max_gpu}, {"cpu", "32"}}}}}};
}

Json LabelledNode(const std::string& name, int gpus, const std::string& product) {
  Json n = fixtures::Node(name, gpus);
  n["metadata"]["labels"]["nvidia.com/gpu.product"] = product;
  return n;
}

// The workloads' rows against Engine::Workloads, the API pods by phase against the store, the
// namespaces' running requests against Engine::namespace_usages, the node labels against the
// stored Nodes.
void ExpectRecount(const Cluster& c, const std::string& step) {
  SCOPED_TRACE(step);
  const MetricsFacts f = CollectMetrics(c, c.now());
  std::vector<LiveFact> rows;
  f.live.ForEach([&](const LiveFact& r) { rows.push_back(r); });
  const std::vector<engine::WorkloadStatus> ws = c.engine().Workloads(c.now());
  ASSERT_EQ(rows.size(), ws.size());
  std::map<std::string, ResourceList> used;
  for (size_t i = 0; i < ws.size(); ++i) {
    const LiveFact& r = rows[i];
    const engine::WorkloadStatus& s = ws[i];
    SCOPED_TRACE(s.key);
    EXPECT_EQ(r.id, engine::Value(s.id));
    EXPECT_EQ(*r.namespace_, s.namespace_);
    EXPECT_EQ(r.name, s.name);
    EXPECT_EQ(*r.node, s.node);
    EXPECT_EQ(r.pending, s.phase == engine::Phase::kPending);
    if (r.pending) {
      EXPECT_EQ(*r.reason, s.reason);
    }
    EXPECT_EQ(r.requests(), s.requests);
    if (r.running()) {
      EXPECT_EQ(r.run_start, s.run_start);
    }
    const auto pod = c.store().Stored("Pod", s.namespace_, s.name);
    ASSERT_TRUE(pod);
    EXPECT_EQ(*r.container, pod->first_container());
    const ResourceList* declared = c.UsageOf(engine::Value(s.id));
    EXPECT_EQ(r.usage(), declared ? *declared : s.requests);
    if (r.running()) used[s.namespace_] += r.requests();
  }
  EXPECT_EQ(used, c.engine().namespace_usages());
  std::map<std::string, int64_t> phases = {
      {"Pending", 0}, {"Running", 0}, {"Succeeded", 0}, {"Failed", 0}};
  for (const auto& [key, pod] : c.store().All("Pod")) {
    const std::string& p = pod.stored().pod_phase();
    ++phases[p.empty() ? "Pending" : p];
  }
  EXPECT_EQ(f.pod_phases, phases);
  NodeLabelRows labels;
  for (const auto& [key, node] : c.store().All("Node")) {
    labels.push_back({{"node", key.second}});
    const Json& meta = node->at("metadata");
    if (meta.contains("labels") && meta["labels"].contains("nvidia.com/gpu.product"))
      labels.back().push_back(
          {"label_nvidia_com_gpu_product", meta["labels"]["nvidia.com/gpu.product"]});
  }
  ASSERT_TRUE(f.node_labels);
  EXPECT_EQ(*f.node_labels, labels);
}

// One random step: create, delete or update a pod, let time pass, add or remove a node.
void RandomStep(Cluster& c, std::mt19937& rng, Millis& t, int& serial, std::string& what) {
  const std::vector<std::string> namespaces = {"team-a", "team-b", "solo"};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const auto& pods = c.store().All("Pod");
  switch (pick(10)) {
    case 0:
    case 1:
    case 2:
    case 3: {  // a pod
      const std::string ns = namespaces[static_cast<size_t>(pick(3))];
      Json p = fixtures::PodIn(ns, "p" + std::to_string(serial++), pick(3),
                               pick(3) == 0 ? "" : std::to_string(5 + pick(60)) + "s",
                               pick(2) ? "high" : "low");
      p["spec"]["containers"][0]["name"] = pick(2) ? "main" : "worker";
      if (pick(2)) p["metadata"]["annotations"]["arbiter.dev/usage"] = "cpu=500m";
      what = "create " + p["metadata"]["name"].get<std::string>();
      (void)c.Apply(fixtures::Create(t, p));  // refusals (quota, LimitRange) are steps too
      return;
    }
    case 4: {  // a delete
      if (pods.empty()) return;
      auto it = std::next(pods.begin(), pick(static_cast<int>(pods.size())));
      what = "delete " + it->first.second;
      (void)c.Apply(fixtures::Delete(t, "Pod", it->first.first, it->first.second));
      return;
    }
    case 5: {  // an update of the declared use (metadata)
      if (pods.empty()) return;
      auto it = std::next(pods.begin(), pick(static_cast<int>(pods.size())));
      Mutation m = fixtures::Create(t, *it->second);
      m.op = Mutation::Op::kUpdate;
      m.name = it->first.second;
      m.object["metadata"]["annotations"]["arbiter.dev/usage"] =
          "cpu=" + std::to_string(1 + pick(900)) + "m";
      what = "update " + m.name;
      (void)c.Apply(m);
      return;
    }
    case 6: {  // a node comes or goes
      what = "node";
      if (c.store().Get("Node", "", "n3"))
        (void)c.Apply(fixtures::Delete(t, "Node", "", "n3"));
      else
        (void)c.Apply(fixtures::Create(t, LabelledNode("n3", 2, "H" + std::to_string(pick(99)))));
      return;
    }
    default:  // time passes: runs end, signalled pods exit
      t += 1000 * (1 + pick(30));
      what = "advance";
      fixtures::RunUntil(c, t);
  }
}

void Pool(Cluster& c) {
  for (const char* ns : {"team-a", "team-b", "solo"})
    Ok(c, fixtures::Create(kT0, fixtures::Namespace(ns)));
  Ok(c, fixtures::Create(kT0, LabelledNode("n1", 4, "NVIDIA-H100")));
  Ok(c, fixtures::Create(kT0, fixtures::Node("n2", 2)));
  Ok(c, fixtures::Create(kT0, fixtures::PriorityClass("high", 1000)));
  Ok(c, fixtures::Create(kT0, fixtures::PriorityClass("low", 10)));
  Ok(c, fixtures::Create(kT0, ElasticQuota("team-a", "2", "6")));
  Ok(c, fixtures::Create(kT0, ElasticQuota("team-b", "3", "6")));
  Ok(c, fixtures::Create(kT0, {{"apiVersion", "v1"},
                               {"kind", "ResourceQuota"},
                               {"metadata", {{"name", "q"}, {"namespace", "solo"}}},
                               {"spec", {{"hard", {{"requests.cpu", "3"}}}}}}));
}

TEST(MetricsFactsTest, EqualAFullRecountAfterRandomMutations) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c("0000abcd");
    Pool(c);
    std::mt19937 rng(seed);
    Millis t = kT0;
    int serial = 0;
    for (int step = 0; step < 150; ++step) {
      std::string what;
      RandomStep(c, rng, t, serial, what);
      ASSERT_NO_FATAL_FAILURE(ExpectRecount(c, std::to_string(step) + ": " + what));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(MetricsFactsTest, ARestoredClusterServesTheSameMetrics) {
  Cluster c("0000abcd");
  Pool(c);
  std::mt19937 rng(7);
  Millis t = kT0;
  int serial = 0;
  for (int step = 0; step < 120; ++step) {
    std::string what;
    RandomStep(c, rng, t, serial, what);
  }
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  ExpectRecount(restored, "restored");
  const JournalStats j;
  MetricsFacts again = CollectMetrics(restored, t + 5);
  const MetricsFacts was = CollectMetrics(c, t + 5);
  EXPECT_TRUE(again.stats.events.empty());  // the counters since this process started: not saved
  again.stats = was.stats;
  EXPECT_EQ(RenderMetrics(again, j), RenderMetrics(was, j));
}

TEST(MetricsFactsTest, AViewTakenBeforeLaterMutationsKeepsItsInstant) {
  Cluster c("0000abcd");
  Pool(c);
  std::mt19937 rng(3);
  Millis t = kT0;
  int serial = 0;
  for (int step = 0; step < 60; ++step) {
    std::string what;
    RandomStep(c, rng, t, serial, what);
  }
  const MetricsFacts before = CollectMetrics(c, t);
  const JournalStats j;
  const std::string text = RenderMetrics(before, j);
  for (int step = 0; step < 60; ++step) {
    std::string what;
    RandomStep(c, rng, t, serial, what);
  }
  EXPECT_NE(RenderMetrics(CollectMetrics(c, t), j), text);
  EXPECT_EQ(RenderMetrics(before, j), text);
}

constexpr const char* kMig = "nvidia.com/mig-1g.10gb";

// The dashboard's sample as the sampler took it before it read the live facts (a walk of
// Engine::Workloads and Engine::Nodes under the lock, dashboard::QuotaStates): the reference its
// values must keep equal, entry for entry (a zero is not an absent resource: the history's
// columns differ).
dashboard::PoolSample RecountPool(const Cluster& c) {
  dashboard::PoolSample p;
  const engine::Engine& e = c.engine();
  std::map<engine::WorkloadId, ResourceList> requests;
  auto pool_part = [](const ResourceList& l) {
    ResourceList out;
    for (const auto& [r, v] : l.entries())
      if (r == kCpu || r == kMemory || r == kGpu || IsMigResourceName(r)) out.Set(r, v);
    return out;
  };
  for (const engine::WorkloadStatus& w : e.Workloads()) {
    if (w.phase != engine::Phase::kRunning && w.phase != engine::Phase::kTerminating) continue;
    const ResourceList req = pool_part(w.requests);
    requests[w.id] = req;
    const ResourceList* declared = c.UsageOf(engine::Value(w.id));
    p.used += declared ? pool_part(*declared) : req;
  }
  for (const engine::NodeStatus& n : e.Nodes()) {
    ResourceList alloc = {{std::string(kCpu), n.cpu_used_milli},
                          {std::string(kMemory), n.mem_used_bytes}};
    ResourceList cap = {{std::string(kCpu), n.cpu_capacity_milli},
                        {std::string(kMemory), n.mem_capacity_bytes}};
    int64_t gpu_used = 0;
    for (int32_t u : n.gpu_used_milli) gpu_used += u;
    const int64_t gpu_cap = static_cast<int64_t>(n.gpu_used_milli.size()) * 1000;
    if (gpu_cap > 0) {
      alloc.Set(kGpu, gpu_used);
      cap.Set(kGpu, gpu_cap);
      p.idle_gpu_milli[n.gpu_model] += gpu_cap - gpu_used;
    }
    for (const auto& [r, v] : n.spec.allocatable.entries())
      if (IsMigResourceName(r)) cap.Set(r, v);
    for (engine::WorkloadId id : n.workloads)
      if (auto it = requests.find(id); it != requests.end())
        for (const auto& [r, v] : it->second.entries())
          if (IsMigResourceName(r)) alloc.Set(r, alloc.Get(r) + v);
    p.allocated += alloc;
    p.capacity += cap;
  }
  return p;
}

// The MIG slices the sample says are allocated.
int64_t ExpectSampleRecount(const Cluster& c, const std::string& step) {
  SCOPED_TRACE(step);
  const dashboard::Sample s = dashboard::TakeSample(c, c.now());
  const dashboard::PoolSample p = RecountPool(c);
  EXPECT_EQ(s.pool.used.entries(), p.used.entries());
  EXPECT_EQ(s.pool.allocated.entries(), p.allocated.entries());
  EXPECT_EQ(s.pool.capacity.entries(), p.capacity.entries());
  EXPECT_EQ(s.pool.idle_gpu_milli, p.idle_gpu_milli);
  const auto tenants = dashboard::QuotaStates(c.engine());
  EXPECT_EQ(s.tenants.size(), tenants.size());
  for (const auto& [ns, q] : tenants) {
    SCOPED_TRACE(ns);
    auto got = s.tenants.find(ns);
    if (got == s.tenants.end()) {
      ADD_FAILURE() << "no tenant " << ns;
      continue;
    }
    EXPECT_EQ(got->second.used.entries(), q.used.entries());
    EXPECT_EQ(got->second, q);
  }
  return s.pool.allocated.Get(kMig);
}

// A pod of `slices` MIG slices and 1 CPU, in `ns`, for 20 s.
Json MigPod(const std::string& ns, const std::string& name, int slices) {
  Json p = fixtures::PodIn(ns, name, 0, "20s");
  p["spec"]["containers"][0]["resources"] = {
      {"requests", {{"cpu", "1"}, {kMig, std::to_string(slices)}}},
      {"limits", {{kMig, std::to_string(slices)}}}};
  return p;
}

// Pool and a node of 14 MIG slices (2 A100s), m1.
void PoolWithMig(Cluster& c) {
  Pool(c);
  Json mig = LabelledNode("m1", 2, "NVIDIA-A100-SXM4-80GB");
  mig["status"]["capacity"][kMig] = "14";
  Ok(c, fixtures::Create(kT0, mig));
}

// The history's sample, now made from the live facts off the lock (dashboard::CollectSample,
// MakeSample), gives the values the full walk under the lock gave, after every step of random
// mutations (MIG slices included) and after a snapshot restore.
TEST(MetricsFactsTest, TheDashboardSampleEqualsTheWalkItReplaced) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c("0000abcd");
    PoolWithMig(c);
    int64_t most_mig = 0;
    std::mt19937 rng(seed);
    Millis t = kT0;
    int serial = 0;
    for (int step = 0; step < 150; ++step) {
      std::string what;
      if (rng() % 5 == 0) {
        const Json p = MigPod(step % 2 ? "team-a" : "solo", "m" + std::to_string(serial++),
                              1 + static_cast<int>(rng() % 3));
        what = "create " + p["metadata"]["name"].get<std::string>();
        (void)c.Apply(fixtures::Create(t, p));
      } else {
        RandomStep(c, rng, t, serial, what);
      }
      most_mig = std::max(most_mig, ExpectSampleRecount(c, std::to_string(step) + ": " + what));
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(most_mig, 0) << "no MIG slice was ever allocated: the test proves less";
    Cluster restored("0000abcd");
    ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
    ExpectSampleRecount(restored, "restored");
  }
}

// The dashboard's pool, tenants and queue views as they were made before they read the live
// facts (a walk of Engine::Workloads and Engine::Nodes under the lock): the reference the views
// built from the facts off the lock must equal, byte for byte. A node's workloads are taken in id
// order, the order the views document.
Json RecountPoolView(const Cluster& c, const dashboard::Viewer& v) {
  std::map<engine::WorkloadId, engine::WorkloadStatus> live;
  for (auto& w : c.engine().Workloads()) live.emplace(w.id, std::move(w));
  auto occupant = [&](const engine::WorkloadStatus& w) {
    return v.Sees(w.namespace_) ? Json{{"namespace", w.namespace_}, {"name", w.name}}
                                : Json{{"hidden", true}};
  };
  Json nodes = Json::array();
  int64_t allocated = 0, capacity = 0;
  for (engine::NodeStatus& n : c.engine().Nodes()) {
    std::vector<std::pair<engine::WorkloadId, placement::GpuAssignment>> on;
    for (size_t i = 0; i < n.workloads.size(); ++i)
      on.emplace_back(n.workloads[i], n.workload_gpus[i]);
    std::sort(on.begin(), on.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Json gpus = Json::array();
    for (size_t d = 0; d < n.gpu_used_milli.size(); ++d)
      gpus.push_back(
          {{"index", d}, {"usedMilli", n.gpu_used_milli[d]}, {"occupants", Json::array()}});
    for (const auto& [id, a] : on)
      for (int16_t d : a.devices) {
        Json o = occupant(live.at(id));
        o["milli"] = a.milli_per_device;
        gpus[static_cast<size_t>(d)]["occupants"].push_back(std::move(o));
      }
    for (int32_t u : n.gpu_used_milli) {
      allocated += u;
      capacity += 1000;
    }
    Json mig = Json::array();
    const auto family = GpuFamilyOfProduct(n.gpu_model);
    for (const auto& [r, count] : n.spec.allocatable.entries()) {
      if (!IsMigResourceName(r) || count <= 0) continue;
      const auto profile = family ? LookupMigProfile(r, *family) : LookupMigProfile(r);
      const int64_t per = profile ? std::max(1, std::min(7 / std::max(1, profile->compute_slices),
                                                         8 / std::max(1, profile->memory_slices)))
                                  : count;
      std::vector<Json> slots;
      for (const auto& [id, a] : on)
        for (int64_t k = 0; k < live.at(id).requests.Get(r) && (int64_t)slots.size() < count; ++k)
          slots.push_back(occupant(live.at(id)));
      slots.resize(static_cast<size_t>(count), nullptr);
      for (int64_t d = 0; d * per < count; ++d) {
        Json dev = Json::array();
        for (int64_t k = d * per; k < std::min(count, (d + 1) * per); ++k)
          dev.push_back(slots[static_cast<size_t>(k)]);
        mig.push_back({{"resource", r},
                       {"profile", profile ? profile->profile : r},
                       {"slots", std::move(dev)}});
      }
    }
    nodes.push_back(
        {{"name", n.name},
         {"migDevices", std::move(mig)},
         {"gpuModel", n.gpu_model},
         {"schedulable", n.schedulable},
         {"cpuMilli", {{"used", n.cpu_used_milli}, {"capacity", n.cpu_capacity_milli}}},
         {"memoryBytes", {{"used", n.mem_used_bytes}, {"capacity", n.mem_capacity_bytes}}},
         {"gpus", std::move(gpus)}});
  }
  return {{"nodes", std::move(nodes)},
          {"gpuMilli", {{"allocated", allocated}, {"capacity", capacity}}}};
}

// The tenants' workload counts as the walk made them (their quotas and preemptions are checked
// against the store, the engine and the kept Events in ExpectTenantsRecount).
Json RecountTenantWorkloads(const Cluster& c, const dashboard::Viewer& v) {
  const auto hidden = dashboard::HiddenNamespaces(c, v);
  std::map<std::string, Json> by_ns;
  auto entry = [&](const std::string& ns) -> Json& {
    auto [it, made] = by_ns.try_emplace(ns);
    if (made)
      it->second = {{"running", 0},
                    {"pending", 0},
                    {"used", {{"gpuMilli", 0}, {"cpuMilli", 0}, {"memoryBytes", 0}}},
                    {"requests", Json::object()},
                    {"borrowedGpuMilli", 0},
                    {"preemptions", 0},
                    {"pendingWorkloads", Json::array()}};
    return it->second;
  };
  auto add = [](Json& j, int64_t n) { j = j.get<int64_t>() + n; };
  for (const engine::WorkloadStatus& w : c.engine().Workloads()) {
    if (!v.Sees(w.namespace_)) continue;
    Json& t = entry(w.namespace_);
    add(t["preemptions"], w.preemptions);
    if (w.phase == engine::Phase::kPending) {
      add(t["pending"], 1);
      t["pendingWorkloads"].push_back({{"name", w.name},
                                       {"reason", w.reason},
                                       {"message", dashboard::Redact(w.message, hidden)}});
      continue;
    }
    if (w.phase != engine::Phase::kRunning && w.phase != engine::Phase::kTerminating) continue;
    add(t["running"], 1);
    add(t["used"]["gpuMilli"], w.requests.Get(kGpu));
    add(t["used"]["cpuMilli"], w.requests.Get(kCpu));
    add(t["used"]["memoryBytes"], w.requests.Get(kMemory));
    for (const auto& [r, amount] : w.requests.entries())
      t["requests"][r] = t["requests"].value(r, int64_t{0}) + amount;
    if (w.borrowed) add(t["borrowedGpuMilli"], w.requests.Get(kGpu));
  }
  Json out = Json::object();
  for (auto& [ns, t] : by_ns) out[ns] = std::move(t);
  return out;
}

Json RecountQueueView(const Cluster& c, const dashboard::Viewer& v, Millis wall_now) {
  const auto hidden = dashboard::HiddenNamespaces(c, v);
  std::vector<engine::WorkloadStatus> pending;
  for (auto& w : c.engine().Workloads())
    if (w.phase == engine::Phase::kPending) pending.push_back(std::move(w));
  std::sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(-static_cast<int64_t>(a.priority), a.submit_time, a.key,
                           engine::Value(a.id)) < std::make_tuple(-static_cast<int64_t>(b.priority),
                                                                  b.submit_time, b.key,
                                                                  engine::Value(b.id));
  });
  const Millis now = std::max(wall_now, c.now());
  Json out = Json::array();
  int position = 0;
  for (const auto& w : pending) {
    ++position;
    if (!v.Sees(w.namespace_)) continue;
    out.push_back({{"position", position},
                   {"namespace", w.namespace_},
                   {"name", w.name},
                   {"priority", w.priority},
                   {"reason", w.reason},
                   {"message", dashboard::Redact(w.message, hidden)},
                   {"nominatedNode", w.nominated_node},
                   {"reservation", dashboard::ReservationOf(w.reservation)},
                   {"pendingSeconds", (now - w.submit_time) / 1000}});
  }
  const size_t visible = out.size();  // (fewer than a page here)
  return {{"pending", std::move(out)}, {"total", position}, {"visible", visible}};
}

// Every tenant the viewer sees (its Namespaces and the namespaces of its workloads), each with
// its workloads' counts as the walk made them, its quotas as stored and as the engine keeps them,
// and the preemptions of the kept Events on either side.
void ExpectTenantsRecount(const Cluster& c, const dashboard::Viewer& v, const Json& tenants) {
  const Json workloads = RecountTenantWorkloads(c, v);
  std::set<std::string> want, got;
  for (const Json* n : c.store().List("Namespace", ""))
    if (v.Sees(n->at("metadata")["name"]))
      want.insert(n->at("metadata")["name"].get<std::string>());
  for (const auto& [ns, counts] : workloads.items()) want.insert(ns);
  std::map<std::string, int64_t> suffered, caused;
  for (const auto& kept : c.preemptions()) {
    ++suffered[kept.victim_namespace];
    if (!kept.by_namespace.empty()) ++caused[kept.by_namespace];
  }
  const auto quotas = dashboard::QuotaStates(c.engine());
  auto amounts = [](const ResourceList& l) {
    Json out = Json::object();
    for (const auto& [r, a] : l.entries()) out[r] = a;
    return out;
  };
  for (const Json& t : tenants["tenants"]) {
    const std::string ns = t["namespace"];
    SCOPED_TRACE(ns);
    got.insert(ns);
    if (workloads.contains(ns)) {
      for (const auto& [k, counts] : workloads[ns].items()) EXPECT_EQ(t[k], counts) << k;
    } else {
      EXPECT_EQ(t["running"], 0);
      EXPECT_EQ(t["pending"], 0);
    }
    const auto eqs = c.store().List("ElasticQuota", ns);
    EXPECT_EQ(t["elasticQuota"].is_null(), eqs.empty());
    if (!eqs.empty()) {
      EXPECT_EQ(t["elasticQuota"]["name"], eqs.back()->at("metadata")["name"]);
    }
    EXPECT_EQ(t["resourceQuotas"].size(), c.store().List("ResourceQuota", ns).size());
    const auto q = quotas.find(ns);
    EXPECT_EQ(t["fairShare"].is_null(), q == quotas.end() || q->second.cohort.empty());
    EXPECT_EQ(t["borrowed"], q == quotas.end() ? Json::object() : amounts(q->second.borrowed));
    EXPECT_EQ(t["lent"], q == quotas.end() ? Json::object() : amounts(q->second.lent));
    EXPECT_EQ(t["preemptionsSuffered"], suffered[ns]);
    EXPECT_EQ(t["preemptionsCaused"], caused[ns]);
  }
  EXPECT_EQ(got, want);
}

// What the random steps reached, for the test to say it proved something.
struct ViewsSeen {
  int pending_messages = 0, borrowed = 0, preempted = 0, gpu_occupants = 0, reservations = 0,
      nominated = 0, kept_preemptions = 0, resource_quotas = 0, pod_messages = 0, deadlines_set = 0;
};

void ExpectViewsRecount(const Cluster& c, const std::string& step, ViewsSeen& seen) {
  SCOPED_TRACE(step);
  dashboard::Viewer tenant;
  tenant.all = false;
  tenant.namespaces = {"team-a"};
  for (const dashboard::Viewer& v : {dashboard::Viewer{}, tenant}) {
    SCOPED_TRACE(v.all ? "admin" : "team-a");
    EXPECT_EQ(dashboard::PoolView(c, v), RecountPoolView(c, v));
    const Json queue = dashboard::QueueView(c, v, c.now() + 7000);
    EXPECT_EQ(queue, RecountQueueView(c, v, c.now() + 7000));
    const Json tenants = dashboard::TenantsView(c, v);
    ExpectTenantsRecount(c, v, tenants);
    if (!v.all) continue;
    for (const Json& p : queue["pending"]) {
      seen.pending_messages += !p["message"].get<std::string>().empty();
      seen.reservations += !p["reservation"].is_null();
      seen.nominated += !p["nominatedNode"].get<std::string>().empty();
    }
    for (const Json& t : tenants["tenants"]) {
      seen.borrowed += t["borrowedGpuMilli"].get<int64_t>() > 0;
      seen.preempted += t["preemptions"].get<int64_t>() > 0;
      seen.kept_preemptions += t["preemptionsSuffered"].get<int64_t>() > 0;
      seen.resource_quotas += !t["resourceQuotas"].empty();
    }
  }
  for (const auto& w : c.engine().Workloads()) {
    if (auto g = c.engine().GpusOf(w.id); g && !g->devices.empty()) ++seen.gpu_occupants;
    // A pending pod's stored status says what the engine says now: its text moves without an
    // Event, and the engine tells it (EventSink::OnRestated, Cluster::SyncRestated).
    if (w.phase != engine::Phase::kPending) continue;
    const Json* pod = c.store().Get("Pod", w.namespace_, w.name);
    ASSERT_TRUE(pod) << w.key;
    const Json st = pod->value("status", Json::object());
    EXPECT_EQ(st.value("message", ""), w.message) << w.key;
    EXPECT_EQ(st.value("nominatedNodeName", ""), w.nominated_node) << w.key;
    seen.pod_messages += !w.message.empty();
  }
}

// A live pod's spec.activeDeadlineSeconds set or lowered (an update: backfill plans move).
bool SetADeadline(Cluster& c, std::mt19937& rng, Millis t, std::string& what) {
  const auto& pods = c.store().All("Pod");
  if (pods.empty()) return false;
  auto it = std::next(pods.begin(), static_cast<long>(rng() % pods.size()));
  Mutation m = fixtures::Create(t, *it->second);
  m.op = Mutation::Op::kUpdate;
  m.name = it->first.second;
  const int64_t was = m.object["spec"].value("activeDeadlineSeconds", int64_t{200});
  m.object["spec"]["activeDeadlineSeconds"] = std::max<int64_t>(5, was - 5 - rng() % 60);
  what = "deadline " + m.name;
  return c.Apply(m).ok();  // (refused for a finished pod)
}

// A pod of 3 or 4 GPUs, some with a deadline the backfill reserves against, high or low.
Json BigPod(std::mt19937& rng, int serial) {
  Json p = fixtures::PodIn(rng() % 2 ? "team-a" : "team-b", "big" + std::to_string(serial),
                           3 + static_cast<int>(rng() % 2), "", rng() % 2 ? "high" : "low");
  if (rng() % 2) p["spec"]["activeDeadlineSeconds"] = 30 + static_cast<int>(rng() % 90);
  return p;
}

// The pool, tenants and queue views, now built from the live facts collected under the lock in
// O(chunks) (dashboard::CollectFacts) and made off it, equal what the walk of the engine under
// the lock made, for an admin and for a tenant (other tenants' names hidden), after every step
// of random mutations (preemptions, borrowing, backfill reservations, deadlines set by updates,
// GPUs and MIG slices) and after a snapshot restore. Every pending pod's stored status says the
// engine's message and nominated node after every step.
TEST(MetricsFactsTest, TheDashboardViewsEqualTheWalkTheyReplaced) {
  ViewsSeen seen;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c("0000abcd");
    PoolWithMig(c);
    std::mt19937 rng(seed);
    Millis t = kT0;
    int serial = 0;
    for (int step = 0; step < 120; ++step) {
      std::string what;
      const uint32_t roll = rng() % 9;
      if (roll == 2) {
        seen.deadlines_set += SetADeadline(c, rng, t, what);
      } else if (roll == 0 || roll == 1) {
        const Json p = roll == 0
                           ? MigPod(step % 2 ? "team-a" : "solo", "m" + std::to_string(serial++),
                                    1 + static_cast<int>(rng() % 3))
                           : BigPod(rng, serial++);
        what = "create " + p["metadata"]["name"].get<std::string>();
        (void)c.Apply(fixtures::Create(t, p));
      } else {
        RandomStep(c, rng, t, serial, what);
      }
      ExpectViewsRecount(c, std::to_string(step) + ": " + what, seen);
      if (::testing::Test::HasFailure()) return;
    }
    Cluster restored("0000abcd");
    ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
    ExpectViewsRecount(restored, "restored", seen);
  }
  EXPECT_GT(seen.pending_messages, 0);
  EXPECT_GT(seen.borrowed, 0);
  EXPECT_GT(seen.preempted, 0);
  EXPECT_GT(seen.gpu_occupants, 0);
  EXPECT_GT(seen.reservations, 0);
  EXPECT_GT(seen.nominated, 0);
  EXPECT_GT(seen.kept_preemptions, 0);
  EXPECT_GT(seen.resource_quotas, 0);
  EXPECT_GT(seen.pod_messages, 0);
  EXPECT_GT(seen.deadlines_set, 0);
}

}  // namespace metrics_facts_test
}  // namespace arbiter::server
