// /metrics from facts kept by the mutations (live_facts.h, ObjectStore::pod_phases, the node
// label cache) equals a full recount from the engine and the store after any sequence of
// mutations (a property test over random sequences), after a snapshot restore, and a View taken
// before later mutations still gives the state it was taken at. The dashboard's history sample,
// made from the same facts, equals the walk of the engine it replaced.
#include <gtest/gtest.h>

#include <random>

#include "cluster_fixtures.h"
#include "server/dashboard/history.h"
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

// The history's sample, now made from the live facts off the lock (dashboard::CollectSample,
// MakeSample), gives the values the full walk under the lock gave, after every step of random
// mutations (MIG slices included) and after a snapshot restore.
TEST(MetricsFactsTest, TheDashboardSampleEqualsTheWalkItReplaced) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c("0000abcd");
    Pool(c);
    Json mig = LabelledNode("m1", 2, "NVIDIA-A100-SXM4-80GB");
    mig["status"]["capacity"][kMig] = "14";
    Ok(c, fixtures::Create(kT0, mig));
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

}  // namespace metrics_facts_test
}  // namespace arbiter::server
