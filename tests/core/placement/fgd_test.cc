// FGD placement policy: fragmentation measure, typical pods, scoring, cache.
#include <gtest/gtest.h>

#include "core/placement/policies.h"

namespace arbiter::placement {
namespace {

NodeState Node(std::string name, int64_t cpu, std::vector<int32_t> gpu_used,
               std::string model = "G1") {
  NodeState n;
  n.name = std::move(name);
  n.gpu_model = std::move(model);
  n.cpu_capacity_milli = cpu;
  n.mem_capacity_bytes = int64_t{1} << 40;
  n.gpu_used_milli = std::move(gpu_used);
  return n;
}

PodShape Pod(int64_t cpu, int32_t count, int32_t milli, std::vector<std::string> models = {}) {
  PodShape p;
  p.cpu_milli = cpu;
  p.gpu_count = count;
  p.gpu_milli_per_device = milli;
  p.allowed_gpu_models = std::move(models);
  return p;
}

std::vector<int16_t> Devs(const GpuAssignment& a) { return {a.devices.begin(), a.devices.end()}; }

GpuAssignment Whole(int16_t device) {
  GpuAssignment a;
  a.devices.push_back(device);
  a.milli_per_device = 1000;
  return a;
}

WorkloadProfile Profile(std::vector<std::pair<PodShape, int64_t>> shapes) {
  WorkloadProfile w;
  for (auto& [s, n] : shapes) w.shapes.push_back({s, n});
  return w;
}

TEST(FgdTest, FragmentationIsTheFreeGpuTheTypicalPodsCannotUse) {
  // Typical pods: half-GPU pods only.
  FgdPolicy fgd(Profile({{Pod(1000, 1, 500), 1}}));
  // free [1000, 300]: a half-GPU pod fits; only the 300 on device 1 is unusable.
  EXPECT_EQ(fgd.Fragmentation(Node("a", 8000, {0, 700})), 300);
  // free [400, 300]: the pod fits nowhere: all 700 free milli are fragments.
  EXPECT_EQ(fgd.Fragmentation(Node("b", 8000, {600, 700})), 700);
  // enough GPU but not enough CPU: all free GPU is a fragment.
  NodeState c = Node("c", 8000, {0, 0});
  c.cpu_used_milli = 7500;
  EXPECT_EQ(fgd.Fragmentation(c), 2000);
  // no free GPU: nothing to fragment.
  EXPECT_EQ(fgd.Fragmentation(Node("d", 8000, {1000, 1000})), 0);
}

TEST(FgdTest, FragmentationWeighsTypicalPodsByPopularity) {
  // 3 whole-GPU pods for each 1 CPU-only pod. CPU pods can use no GPU at all.
  FgdPolicy fgd(Profile({{Pod(1000, 1, 1000), 3}, {Pod(1000, 0, 0), 1}}));
  EXPECT_EQ(fgd.total_weight(), 4);
  // free [1000, 500]: whole-GPU pods cannot use the 500 (3 x 500), CPU pods none of 1500.
  EXPECT_EQ(fgd.Fragmentation(Node("a", 8000, {0, 500})), 3 * 500 + 1 * 1500);
}

TEST(FgdTest, ModelConstraintMakesTheWholeNodeAFragment) {
  FgdPolicy fgd(Profile({{Pod(1000, 1, 1000, {"V100"}), 1}}));
  EXPECT_EQ(fgd.Fragmentation(Node("v", 8000, {0, 0}, "V100")), 0);
  EXPECT_EQ(fgd.Fragmentation(Node("t", 8000, {0, 0}, "T4")), 2000);
}

TEST(FgdTest, PrefersThePlacementThatLeavesAWholeGpuForTypicalPods) {
  // Typical pods ask whole GPUs. A 300m shared pod arrives.
  const auto profile = Profile({{Pod(1000, 1, 1000), 1}});
  FgdPolicy fgd(profile);
  BestFitPolicy best_fit;
  std::vector<NodeState> nodes = {
      Node("a", 8000, {0, 0}),     // little CPU left (below), both GPUs free
      Node("b", 64000, {0, 600}),  // device 1 has 400 free
  };
  nodes[0].cpu_used_milli = 4000;
  fgd.Reset(nodes);
  best_fit.Reset(nodes);
  const PodShape pod = Pod(1000, 1, 300);
  // BestFit packs onto the node with less free capacity overall: a. That breaks a whole GPU.
  EXPECT_GT(best_fit.Score(nodes[0], pod).score, best_fit.Score(nodes[1], pod).score);
  // FGD puts it on b's partly used device 1, which shrinks b's fragment (400 -> 100).
  Candidate ca = fgd.Score(nodes[0], pod);
  Candidate cb = fgd.Score(nodes[1], pod);
  EXPECT_GT(cb.score, ca.score);
  EXPECT_EQ(Devs(cb.gpus), std::vector<int16_t>{1});
  std::vector<size_t> feasible = {0, 1};
  auto choice = ChooseNode(fgd, nodes, feasible, pod);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node_index, 1u);
}

TEST(FgdTest, PaperScoreIsTheSigmoidLevelAndExactScoreIsTheDecrease) {
  const auto profile = Profile({{Pod(1000, 1, 1000), 1}});
  FgdPolicy paper(profile);
  FgdPolicy exact(profile, 95, FgdScoring::kExact);
  const NodeState n = Node("b", 64000, {0, 600});
  const PodShape pod = Pod(1000, 1, 300);
  // Fragment 400 -> 100 on device 1: decrease 300 milli = 0.3 GPU; floor(100 sigmoid(0.3)) = 57.
  EXPECT_EQ(exact.Score(n, pod).score, 300);
  EXPECT_EQ(paper.Score(n, pod).score, 57);
  // Using device 0 instead: fragment 400 -> 1100 (no whole GPU left): floor(100 sigmoid(-0.7))
  // = 33.
  const NodeState m = Node("m", 64000, {0, 1000});
  EXPECT_EQ(exact.Score(m, pod).score, -700);
  EXPECT_EQ(paper.Score(m, pod).score, 33);
  // No change -> 50.
  EXPECT_EQ(paper.Score(Node("z", 64000, {1000, 1000}), Pod(1000, 0, 0)).score, 50);
}

TEST(FgdTest, SharedPodTriesEveryDevice) {
  // Typical: 500m pods. free [600, 1000, 550]: a 500m pod on device 0 or 2 leaves 100/50 (a
  // fragment) either way; on device 1 it leaves 500 (usable). Device 1 grows fragmentation least.
  FgdPolicy fgd(Profile({{Pod(1000, 1, 500), 1}}), 95, FgdScoring::kExact);
  const NodeState n = Node("n", 64000, {400, 0, 450});
  Candidate c = fgd.Score(n, Pod(1000, 1, 500));
  EXPECT_EQ(Devs(c.gpus), std::vector<int16_t>{1});
  EXPECT_EQ(c.score, 0);
}

TEST(FgdTest, CacheFollowsNodeChangesAndSurvivesMissedNotifications) {
  const auto profile = Profile({{Pod(1000, 1, 500), 2}, {Pod(2000, 2, 1000), 1}});
  FgdPolicy cached(profile);
  std::vector<NodeState> nodes = {Node("a", 32000, {0, 0, 0, 0}), Node("b", 32000, {0, 0})};
  cached.Reset(nodes);
  const PodShape pod = Pod(1000, 1, 300);
  GpuAssignment a = cached.Score(nodes[0], pod).gpus;
  nodes[0].Allocate(pod, a);
  cached.OnNodeChanged(nodes[0], 0);
  FgdPolicy fresh(profile);
  EXPECT_EQ(cached.Fragmentation(nodes[0]), fresh.Fragmentation(nodes[0]));
  // Changed without a notification: the cache (and the per-shape score memo) notices.
  const Candidate stale = cached.Score(nodes[1], pod);
  EXPECT_EQ(stale.score, fresh.Score(nodes[1], pod).score);
  nodes[1].Allocate(Pod(1000, 1, 1000), Whole(0));
  EXPECT_EQ(cached.Fragmentation(nodes[1]), fresh.Fragmentation(nodes[1]));
  EXPECT_EQ(cached.Score(nodes[1], pod).score, fresh.Score(nodes[1], pod).score);
  EXPECT_EQ(cached.Score(nodes[1], pod).gpus, fresh.Score(nodes[1], pod).gpus);
  // Another shape on the same node state, then the first again: both memoised correctly.
  const PodShape whole = Pod(2000, 2, 1000);
  EXPECT_EQ(cached.Score(nodes[0], whole).score, fresh.Score(nodes[0], whole).score);
  EXPECT_EQ(cached.Score(nodes[0], pod).score, fresh.Score(nodes[0], pod).score);
}

TEST(FgdTest, TypicalShapesCoverThePopularityThreshold) {
  WorkloadProfile w = Profile({{Pod(1000, 1, 500), 50},
                               {Pod(2000, 1, 1000), 30},
                               {Pod(4000, 0, 0), 15},
                               {Pod(8000, 8, 1000), 5}});
  EXPECT_EQ(SelectTypicalShapes(w, 95).size(), 3u);  // 50 + 30 + 15 = 95 %
  EXPECT_EQ(SelectTypicalShapes(w, 96).size(), 4u);
  EXPECT_EQ(SelectTypicalShapes(w, 50).size(), 1u);
  auto top = SelectTypicalShapes(w, 80);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].weight, 50);
  EXPECT_EQ(top[1].shape.gpu_milli_per_device, 1000);
}

TEST(FgdTest, TypicalShapesMergeEntriesThatDifferOnlyInMemory) {
  PodShape small_mem = Pod(1000, 1, 500);
  PodShape big_mem = small_mem;
  big_mem.mem_bytes = int64_t{64} << 30;
  // 30 + 30 of the half-GPU shape outweigh 40 of the whole-GPU shape.
  WorkloadProfile w = Profile({{small_mem, 30}, {Pod(1000, 1, 1000), 40}, {big_mem, 30}});
  auto top = SelectTypicalShapes(w, 50);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].weight, 60);
  EXPECT_EQ(top[0].shape.gpu_milli_per_device, 500);
}

TEST(FgdTest, BuildWorkloadProfileCountsShapesIgnoringMemory) {
  PodShape a = Pod(1000, 1, 500);
  PodShape b = a;
  b.mem_bytes = 12345;  // memory is not part of the shape key
  PodShape c = Pod(1000, 1, 500, {"T4"});
  WorkloadProfile w = BuildWorkloadProfile({a, b, c, a});
  ASSERT_EQ(w.shapes.size(), 2u);
  int64_t total = 0;
  for (const auto& e : w.shapes) total += e.weight;
  EXPECT_EQ(total, 4);
}

}  // namespace
}  // namespace arbiter::placement
