// openb trace reader: columns, mapping to pod shapes, errors with file:line.
#include <gtest/gtest.h>

#include "sim/trace/openb_reader.h"
#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace {

TEST(OpenbReaderTest, ReadsNodes) {
  auto nodes = ParseOpenbNodes(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "openb-node-0227,32000,262144,0,nan\n"
      "openb-node-0228,128000,786432,8,G3\r\n",
      "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.message();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].model, "");
  EXPECT_EQ((*nodes)[1].gpus, 8);
  EXPECT_EQ((*nodes)[1].model, "G3");
  auto states = ToNodeStates(*nodes);
  EXPECT_EQ(states[1].mem_capacity_bytes, int64_t{786432} << 20);
  EXPECT_EQ(states[1].gpu_devices(), 8);
}

TEST(OpenbReaderTest, MapsPodsToShapes) {
  auto t = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
      "p0,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n"
      "p1,4000,15258,1,220,nan,BE,Running,9679175,9973826,9679175\n"
      "p2,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063\n"
      "p3,1000,1024,0,0,,Guaranteed,Pending,5,10,\n",
      "pods.csv");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_TRUE(t->has_times);
  const auto& p = t->pods;
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].shape.gpu_count, 8);
  EXPECT_EQ(p[0].shape.gpu_milli_per_device, 1000);
  EXPECT_EQ(p[0].priority, 5000);
  EXPECT_EQ(p[1].shape.gpu_count, 1);
  EXPECT_EQ(p[1].shape.gpu_milli_per_device, 220);  // shared GPU
  EXPECT_EQ(p[1].priority, 1000);
  EXPECT_EQ(p[1].shape.mem_bytes, int64_t{15258} << 20);
  EXPECT_EQ(p[2].shape.allowed_gpu_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ(p[2].priority, 10000);
  EXPECT_EQ(p[3].shape.gpu_count, 0);
  EXPECT_EQ(p[3].priority, 5000);
  EXPECT_FALSE(p[3].scheduled_s.has_value());
  EXPECT_EQ(*p[0].creation_s, 9437497);
}

TEST(OpenbReaderTest, MultiGpuListsHaveOnlyFiveColumns) {
  auto t = ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,12000,16384,2,1000\n", "m.csv");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_FALSE(t->has_times);
  EXPECT_EQ(t->pods[0].shape.gpu_count, 2);
  auto r = RunTimeline({}, *t, TraceRunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("saturate"), std::string::npos);
}

TEST(OpenbReaderTest, SaturateNeedsGpuDemandAndGpus) {
  auto nodes = ParseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn,8000,1024,2,T4\n", "n.csv");
  auto cpu_only = ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,0,0\n", "p.csv");
  ASSERT_TRUE(nodes.ok() && cpu_only.ok());
  auto r = RunSaturate(*nodes, *cpu_only, TraceRunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no GPUs"), std::string::npos);
  auto gpu = ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,1,500\n", "p.csv");
  ASSERT_TRUE(gpu.ok());
  auto ok = RunSaturate(*nodes, *gpu, TraceRunOptions{});
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->arrived_gpu_milli, 2500);  // 5 x 500m pods reach 125 %; a sixth would pass 130 %
  EXPECT_EQ(ok->allocated_gpu_milli, 2000);
  EXPECT_EQ(ok->pods_failed, 1);
}

TEST(OpenbReaderTest, MalformedRowsNameFileAndLine) {
  const std::string header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  auto bad_int = ParseOpenbPods(header + "a,1000,10,0,0\nb,12x,10,0,0\n", "pods.csv");
  ASSERT_FALSE(bad_int.ok());
  EXPECT_EQ(bad_int.message(), "pods.csv:3: cpu_milli: not a non-negative integer: '12x'");
  auto fields = ParseOpenbPods(header + "a,1000,10,0\n", "pods.csv");
  ASSERT_FALSE(fields.ok());
  EXPECT_EQ(fields.message(), "pods.csv:2: expected 5 fields, found 4");
  auto shared_multi = ParseOpenbPods(header + "a,1000,10,2,500\n", "pods.csv");
  ASSERT_FALSE(shared_multi.ok());
  EXPECT_NE(shared_multi.message().find("pods.csv:2: gpu_milli"), std::string::npos);
  auto milli = ParseOpenbPods(header + "a,1000,10,1,1500\n", "pods.csv");
  ASSERT_FALSE(milli.ok());
  EXPECT_NE(milli.message().find("pods.csv:2: gpu_milli"), std::string::npos);
  auto too_many = ParseOpenbPods(header + "a,1000,10,65,1000\n", "pods.csv");
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.message(), "pods.csv:2: num_gpu: not an integer in 0..64: '65'");
  auto header_bad = ParseOpenbPods("name,cpu\n", "pods.csv");
  ASSERT_FALSE(header_bad.ok());
  EXPECT_NE(header_bad.message().find("pods.csv:1:"), std::string::npos);
  auto node_bad = ParseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn,1000,10,2,\n", "nodes.csv");
  ASSERT_FALSE(node_bad.ok());
  EXPECT_EQ(node_bad.message(), "nodes.csv:2: model: a node with GPUs needs a GPU model");
  auto missing = ReadOpenbPods("/nonexistent/pods.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("/nonexistent/pods.csv"), std::string::npos);
}

TEST(OpenbReaderTest, TenantsAndPrioritiesAreConfigurable) {
  PodMappingOptions o;
  o.tenants = 4;
  o.tenant_seed = 9;
  o.priorities.be = 42;
  auto t = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos\na,1,1,0,0,BE\nb,1,1,0,0,LS\n", "p.csv", o);
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->pods[0].priority, 42);
  for (const auto& p : t->pods) {
    EXPECT_GE(p.tenant, 0);
    EXPECT_LT(p.tenant, 4);
    EXPECT_EQ(p.tenant, TenantOf(p.name, 4, 9));
  }
  // The rule spreads names over the tenants.
  std::vector<int> count(4, 0);
  for (int i = 0; i < 400; ++i) ++count[static_cast<size_t>(TenantOf("pod-" + std::to_string(i), 4, 9))];
  for (int c : count) EXPECT_GT(c, 60);
}

TEST(TraceOptionsTest, ParsesPoliciesAndSeeds) {
  EXPECT_EQ(*ParsePolicyName("FGD"), PlacementPolicyName::kFGD);
  EXPECT_EQ(*ParsePolicyName("best-fit"), PlacementPolicyName::kBestFit);
  EXPECT_EQ(*ParsePolicyName("DotProduct"), PlacementPolicyName::kDotProduct);
  EXPECT_FALSE(ParsePolicyName("worstfit").ok());
  EXPECT_EQ(*ParseSeeds("42-45"), (std::vector<uint64_t>{42, 43, 44, 45}));
  EXPECT_EQ(*ParseSeeds("1,7,3"), (std::vector<uint64_t>{1, 7, 3}));
  EXPECT_FALSE(ParseSeeds("9-3").ok());
  EXPECT_FALSE(ParseSeeds("x").ok());
}

}  // namespace
}  // namespace arbiter::sim::trace
