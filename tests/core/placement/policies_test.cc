// BestFit, Packing, DotProduct, Random, the policy factory, and model lists in NodeState::Fits.
#include "core/placement/policies.h"

#include <gtest/gtest.h>

#include <set>

namespace arbiter::placement {
namespace policies_test {

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

PodShape Pod(int64_t cpu, int32_t count, int32_t milli) {
  PodShape p;
  p.cpu_milli = cpu;
  p.gpu_count = count;
  p.gpu_milli_per_device = milli;
  return p;
}

TEST(BestFitTest, MinimisesFreeCpuAndGpuNormalisedByTheLargestNode) {
  BestFitPolicy bf;
  std::vector<NodeState> nodes = {Node("big", 128000, std::vector<int32_t>(8, 0)),
                                  Node("small", 16000, {0, 0})};
  bf.Reset(nodes);
  const PodShape pod = Pod(4000, 1, 1000);
  // (cpu_after/128000 + gpu_after/8000): big = 124/128 + 7/8, small = 12/128 + 1/8.
  EXPECT_GT(bf.Score(nodes[1], pod).score, bf.Score(nodes[0], pod).score);
  EXPECT_EQ(bf.Score(nodes[1], pod).score, -(12000 * 8000 + 1000 * 128000));
}

TEST(BestFitTest, SharedPodGoesToTheFullestDeviceThatFits) {
  BestFitPolicy bf;
  Candidate c = bf.Score(Node("n", 16000, {200, 700, 600}), Pod(1000, 1, 300));
  EXPECT_EQ(std::vector<int16_t>(c.gpus.devices.begin(), c.gpus.devices.end()),
            std::vector<int16_t>{1});
}

TEST(PackingTest, PrefersSharedGpusThenUsedNodesThenSmallEmptyNodes) {
  PackingPolicy p;
  const PodShape shared = Pod(1000, 1, 300);
  const int64_t on_shared = p.Score(Node("s", 16000, {0, 600}), shared).score;   // tier 1
  const int64_t used_node = p.Score(Node("u", 16000, {0, 1000}), shared).score;  // tier 2
  const int64_t empty8 = p.Score(Node("e8", 16000, std::vector<int32_t>(8, 0)), shared).score;
  const int64_t empty2 = p.Score(Node("e2", 16000, {0, 0}), shared).score;  // tier 3
  EXPECT_GT(on_shared, used_node);
  EXPECT_GT(used_node, empty2);
  EXPECT_GT(empty2, empty8);
  // Tier 1: the fuller device wins.
  EXPECT_GT(p.Score(Node("f", 16000, {0, 650}), shared).score, on_shared);
  // Tier 2: fewer fresh GPUs opened wins.
  EXPECT_GT(p.Score(Node("a", 16000, {0, 0, 1000}), Pod(1000, 1, 1000)).score,
            p.Score(Node("b", 16000, {0, 0, 1000}), Pod(1000, 2, 1000)).score);
  // CPU-only pods: all equal.
  EXPECT_EQ(p.Score(Node("x", 16000, {0}), Pod(1000, 0, 0)).score, 0);
}

TEST(DotProductTest, PrefersTheSmallerAlignmentOfFreeAndRequest) {
  DotProductPolicy d;
  std::vector<NodeState> nodes = {Node("big", 128000, std::vector<int32_t>(8, 0)),
                                  Node("tight", 16000, {0, 1000})};
  d.Reset(nodes);
  const PodShape pod = Pod(8000, 1, 1000);
  // dot = cpu_free*cpu/128000^2 + gpu_free*gpu/8000^2 -> exact: cpu_free*cpu + 256*gpu_free*gpu.
  EXPECT_EQ(d.Score(nodes[1], pod).score, -(16000LL * 8000 + 256LL * 1000 * 1000));
  EXPECT_GT(d.Score(nodes[1], pod).score, d.Score(nodes[0], pod).score);
}

TEST(RandomTest, SameSeedSameChoicesAndEveryNodeIsReachable) {
  std::vector<NodeState> nodes;
  for (int i = 0; i < 5; ++i)
    nodes.push_back(Node(std::to_string(i).insert(0, 1, 'n'), 16000, {0, 0, 0, 0}));
  std::vector<size_t> feasible = {0, 1, 2, 3, 4};
  RandomPolicy a(7), b(7), c(8);
  std::set<size_t> seen;
  std::set<int16_t> devices;
  bool differs = false;
  for (int k = 0; k < 200; ++k) {
    auto x = ChooseNode(a, nodes, feasible, Pod(1000, 1, 300));
    auto y = ChooseNode(b, nodes, feasible, Pod(1000, 1, 300));
    auto z = ChooseNode(c, nodes, feasible, Pod(1000, 1, 300));
    ASSERT_TRUE(x && y && z);
    EXPECT_EQ(x->node_index, y->node_index);
    EXPECT_EQ(x->candidate.gpus, y->candidate.gpus);
    differs |= x->node_index != z->node_index;
    seen.insert(x->node_index);
    ASSERT_EQ(x->candidate.gpus.devices.size(), 1u);
    devices.insert(x->candidate.gpus.devices[0]);
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(devices.size(), 4u);
}

// Regression (issue 9): the manifests' Random stream is one Score() per feasible node, the winner
// keeping the devices drawn with its score; the trace replay's stream scores every node and then
// draws the winner's devices anew. Seeded runs of either kind replay as before the redesign.
TEST(RandomTest, ManifestStreamDrawsOncePerNodeTraceStreamRescoresTheWinner) {
  std::vector<NodeState> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(Node("n" + std::to_string(i), 16000, {0, 0, 0, 0}));
  const std::vector<size_t> feasible = {0, 1, 2, 3};
  const PodShape pod = Pod(1000, 1, 300);
  RandomPolicy manifests(3), manifests_by_hand(3);
  RandomPolicy trace(3, /*rescore_winner=*/true), trace_by_hand(3);
  for (int k = 0; k < 50; ++k) {
    auto m = ChooseNode(manifests, nodes, feasible, pod);
    std::optional<Choice> want;
    for (size_t i : feasible) {
      Candidate c = manifests_by_hand.Score(nodes[i], pod);
      if (!want || c.score > want->candidate.score) want = Choice{i, std::move(c)};
    }
    ASSERT_TRUE(m && want);
    EXPECT_EQ(m->node_index, want->node_index);
    EXPECT_EQ(m->candidate.gpus, want->candidate.gpus);

    auto t = ChooseNode(trace, nodes, feasible, pod);
    size_t best = 0;
    int64_t best_score = 0;
    for (size_t i : feasible) {
      const int64_t sc = trace_by_hand.Score(nodes[i], pod).score;
      if (i == 0 || sc > best_score) best = i, best_score = sc;
    }
    Candidate again = trace_by_hand.Score(nodes[best], pod);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->node_index, best);
    EXPECT_EQ(t->candidate.gpus, again.gpus);
  }
  // The two streams part after the first choice.
  EXPECT_NE(manifests.SaveState(), trace.SaveState());
}

TEST(ScoreOnlyTest, EqualsScoreForDeterministicPolicies) {
  Xoshiro256 rng(5);
  std::vector<NodeState> nodes;
  for (int i = 0; i < 60; ++i) {
    std::vector<int32_t> used(static_cast<size_t>(1 + rng.Below(8)));
    for (auto& u : used) u = static_cast<int32_t>(rng.Below(5) == 0 ? 0 : rng.Below(1001));
    NodeState n =
        Node(std::to_string(i).insert(0, 1, 'n'), 8000 + static_cast<int64_t>(rng.Below(120000)),
             used, rng.Below(2) ? "A" : "B");
    n.cpu_used_milli =
        static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n.cpu_capacity_milli) / 2));
    nodes.push_back(std::move(n));
  }
  WorkloadProfile profile =
      BuildWorkloadProfile({Pod(1000, 1, 500), Pod(4000, 1, 1000), Pod(2000, 0, 0)});
  const PodShape pods[] = {Pod(1000, 1, 300), Pod(8000, 2, 1000), Pod(2000, 0, 0),
                           Pod(500, 1, 1000)};
  for (PlacementPolicyName name :
       {PlacementPolicyName::kBestFit, PlacementPolicyName::kLeastAllocated,
        PlacementPolicyName::kFGD, PlacementPolicyName::kPacking,
        PlacementPolicyName::kDotProduct}) {
    auto policy = MakePlacementPolicy(name, 1, profile);
    policy->Reset(nodes);
    for (const PodShape& pod : pods)
      for (const NodeState& n : nodes) {
        if (!n.Fits(pod)) continue;
        const int64_t only = policy->ScoreOnly(n, pod);
        EXPECT_EQ(only, policy->Score(n, pod).score) << policy->name() << " " << n.name;
        EXPECT_EQ(only, policy->ScoreOnly(n, pod)) << policy->name() << " " << n.name;
      }
  }
}

TEST(PolicyFactoryTest, EveryNameIsRegistered) {
  const WorkloadProfile profile;
  const std::pair<PlacementPolicyName, std::string_view> cases[] = {
      {PlacementPolicyName::kBestFit, "BestFit"},
      {PlacementPolicyName::kLeastAllocated, "LeastAllocated"},
      {PlacementPolicyName::kFGD, "FGD"},
      {PlacementPolicyName::kPacking, "Packing"},
      {PlacementPolicyName::kDotProduct, "DotProduct"},
      {PlacementPolicyName::kRandom, "Random"},
  };
  for (const auto& [name, text] : cases)
    EXPECT_EQ(MakePlacementPolicy(name, 1, profile)->name(), text);
}

TEST(NodeStateModelsTest, AllowedModelListConstrainsGpuPodsOnly) {
  NodeState t4 = Node("t4", 16000, {0, 0}, "T4");
  PodShape p = Pod(1000, 1, 500);
  EXPECT_TRUE(t4.Fits(p));
  p.allowed_gpu_models = {"V100M16", "V100M32"};
  EXPECT_FALSE(t4.Fits(p));
  EXPECT_TRUE(t4.Insufficient(p).empty());  // a model mismatch is not a lack of resources
  p.allowed_gpu_models.push_back("T4");
  EXPECT_TRUE(t4.Fits(p));
  PodShape cpu_only = Pod(1000, 0, 0);
  cpu_only.allowed_gpu_models = {"V100M16"};
  EXPECT_TRUE(t4.Fits(cpu_only));
}

}  // namespace policies_test
}  // namespace arbiter::placement
