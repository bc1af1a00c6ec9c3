// Trace replay through the engine decides exactly what the old fast placement loop decided (issue
// 9): every placement policy, both modes, every vendored openb pod list, two seeds. The decisions
// are compared one by one (pod, node), and so are the results.
#include <gtest/gtest.h>

#include <cstdio>

#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace {

const std::string kData = std::string(ARBITER_SOURCE_DIR) + "/data/openb/";

struct Trace {
  std::vector<TraceNode> nodes;
  PodTrace pods;
};

const Trace& Load(const std::string& file) {
  static std::map<std::string, Trace> cache;
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  Trace t;
  auto n = ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  auto p = ReadOpenbPods(kData + file);
  EXPECT_TRUE(n.ok() && p.ok());
  t.nodes = *n;
  t.pods = *p;
  return cache.emplace(file, std::move(t)).first->second;
}

struct Decisions {
  std::vector<std::pair<size_t, std::string>> list;
  uint64_t Digest() const {
    uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&](const std::string& s) {
      for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
      h = (h ^ 0xff) * 0x100000001b3ULL;
    };
    for (const auto& [pod, node] : list) mix(std::to_string(pod) + "@" + node);
    return h;
  }
};

class TraceDifferential : public ::testing::TestWithParam<std::tuple<std::string, PlacementPolicyName>> {};

TEST_P(TraceDifferential, EngineDecidesLikeTheFastLoop) {
  const auto& [file, policy] = GetParam();
  const Trace& t = Load(file);
  for (uint64_t seed : {42, 7}) {
    SCOPED_TRACE(file + " " + PolicyKey(policy) + " seed " + std::to_string(seed));
    Decisions fast, engine;
    TraceRunOptions o;
    o.policy = policy;
    o.seed = seed;
    o.on_decision = [&](size_t pod, const std::string& node) { fast.list.emplace_back(pod, node); };
    auto fs = RunSaturateFast(t.nodes, t.pods, o);
    o.on_decision = [&](size_t pod, const std::string& node) { engine.list.emplace_back(pod, node); };
    auto es = RunSaturate(t.nodes, t.pods, o);
    ASSERT_TRUE(fs.ok() && es.ok()) << fs.message() << es.message();
    ASSERT_EQ(fast.list.size(), engine.list.size());
    for (size_t i = 0; i < fast.list.size(); ++i)
      ASSERT_EQ(fast.list[i], engine.list[i]) << "saturate decision " << i << " differs";
    EXPECT_EQ(fs->allocated_gpu_milli, es->allocated_gpu_milli);
    EXPECT_EQ(fs->allocated_cpu_milli, es->allocated_cpu_milli);
    EXPECT_EQ(fs->pods_failed, es->pods_failed);
    EXPECT_EQ(fs->gpu_pods_failed, es->gpu_pods_failed);
    ASSERT_EQ(fs->curve.size(), es->curve.size());
    for (size_t i = 0; i < fs->curve.size(); ++i)
      EXPECT_EQ(fs->curve[i].allocated_gpu_milli, es->curve[i].allocated_gpu_milli);
    std::printf("  saturate %s %s seed %llu: %zu decisions, digest %016llx\n", file.c_str(), PolicyKey(policy).c_str(),
                static_cast<unsigned long long>(seed), fast.list.size(), static_cast<unsigned long long>(fast.Digest()));
    if (!t.pods.has_times) continue;
    fast.list.clear();
    engine.list.clear();
    o.on_decision = [&](size_t pod, const std::string& node) { fast.list.emplace_back(pod, node); };
    auto ft = RunTimelineFast(t.nodes, t.pods, o);
    o.on_decision = [&](size_t pod, const std::string& node) { engine.list.emplace_back(pod, node); };
    auto et = RunTimeline(t.nodes, t.pods, o);
    ASSERT_TRUE(ft.ok() && et.ok()) << ft.message() << et.message();
    ASSERT_EQ(fast.list.size(), engine.list.size());
    for (size_t i = 0; i < fast.list.size(); ++i)
      ASSERT_EQ(fast.list[i], engine.list[i]) << "timeline decision " << i << " differs";
    EXPECT_EQ(ft->pods_failed, et->pods_failed);
    EXPECT_EQ(ft->peak_allocated_gpu_milli, et->peak_allocated_gpu_milli);
    EXPECT_TRUE(ft->gpu_milli_seconds == et->gpu_milli_seconds);
    EXPECT_EQ(ft->failed_by_priority_tier, et->failed_by_priority_tier);
    ASSERT_EQ(ft->points.size(), et->points.size());
    for (size_t i = 0; i < ft->points.size(); ++i) {
      EXPECT_EQ(ft->points[i].time_s, et->points[i].time_s);
      EXPECT_EQ(ft->points[i].allocated_gpu_milli, et->points[i].allocated_gpu_milli);
      EXPECT_EQ(ft->points[i].running_pods, et->points[i].running_pods);
    }
    std::printf("  timeline %s %s seed %llu: %zu decisions, digest %016llx\n", file.c_str(), PolicyKey(policy).c_str(),
                static_cast<unsigned long long>(seed), fast.list.size(), static_cast<unsigned long long>(fast.Digest()));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPoliciesAllTraces, TraceDifferential,
    ::testing::Combine(::testing::Values("openb_pod_list_default.csv", "openb_pod_list_gpushare100.csv",
                                         "openb_pod_list_cpu250.csv", "openb_pod_list_gpuspec33.csv"),
                       ::testing::Values(PlacementPolicyName::kBestFit, PlacementPolicyName::kLeastAllocated,
                                         PlacementPolicyName::kFGD, PlacementPolicyName::kPacking,
                                         PlacementPolicyName::kDotProduct, PlacementPolicyName::kRandom)),
    [](const auto& info) {
      std::string f = std::get<0>(info.param);
      f = f.substr(f.find("list_") + 5);
      f = f.substr(0, f.find('.'));
      return f + "_" + PolicyKey(std::get<1>(info.param));
    });

}  // namespace
}  // namespace arbiter::sim::trace
