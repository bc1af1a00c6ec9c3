// Synthetic traces derived from the vendored openb trace (scale tests).
#include <gtest/gtest.h>

#include "sim/trace/generator.h"
#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace trace_generator_test {

const std::string kData = std::string(ARBITER_SOURCE_DIR) + "/data/openb/";

TEST(TraceGeneratorTest, SamplesNodesAndPodsDeterministically) {
  auto n = ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  auto p = ReadOpenbPods(kData + "openb_pod_list_default.csv");
  ASSERT_TRUE(n.ok() && p.ok());
  GeneratorOptions g;
  g.nodes = 200;
  g.pods = 20000;
  g.seed = 3;
  const auto nodes = GenerateNodes(*n, g);
  const auto pods = GeneratePods(*p, nodes, g);
  ASSERT_EQ(nodes.size(), 200u);
  ASSERT_EQ(pods.pods.size(), 20000u);
  EXPECT_EQ(nodes[7].name, "gen-node-000007");
  for (size_t i = 1; i < pods.pods.size(); ++i)
    ASSERT_LE(*pods.pods[i - 1].creation_s, *pods.pods[i].creation_s);
  const auto again = GeneratePods(*p, GenerateNodes(*n, g), g);
  EXPECT_EQ(again.pods.back().creation_s, pods.pods.back().creation_s);
  EXPECT_EQ(again.pods[123].shape.gpu_milli_total(), pods.pods[123].shape.gpu_milli_total());
  auto r = RunTimeline(nodes, pods, TraceRunOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->pods_submitted, 20000);
  // Offered load 90 %: the cluster gets busy (the real openb timeline peaks at 1 %); the average
  // over the whole run includes the ramp-up and the drain of long pods.
  EXPECT_GT(r->average_gpu_allocation(), 0.1);
  EXPECT_GT(
      static_cast<double>(r->peak_allocated_gpu_milli) / static_cast<double>(r->cluster_gpu_milli),
      0.5);
  EXPECT_LE(r->peak_allocated_gpu_milli, r->cluster_gpu_milli);
}

}  // namespace trace_generator_test
}  // namespace arbiter::sim::trace
