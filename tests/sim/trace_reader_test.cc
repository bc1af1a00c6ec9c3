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
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n"
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
  auto t = ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,12000,16384,2,1000\n",
                          "m.csv");
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_FALSE(t->has_times);
  EXPECT_EQ(t->pods[0].shape.gpu_count, 2);
  auto r = RunTimeline({}, *t, TraceRunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("saturate"), std::string::npos);
}

TEST(OpenbReaderTest, SaturateNeedsGpuDemandAndGpus) {
  auto nodes = ParseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn,8000,1024,2,T4\n", "n.csv");
  auto cpu_only =
      ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,0,0\n", "p.csv");
  ASSERT_TRUE(nodes.ok() && cpu_only.ok());
  auto r = RunSaturate(*nodes, *cpu_only, TraceRunOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("no GPUs"), std::string::npos);
  auto gpu =
      ParseOpenbPods("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,1,500\n", "p.csv");
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
  for (int i = 0; i < 400; ++i)
    ++count[static_cast<size_t>(TenantOf("pod-" + std::to_string(i), 4, 9))];
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
  EXPECT_EQ(*ParseSeeds("1, 5,10-12"), (std::vector<uint64_t>{1, 5, 10, 11, 12}));
  EXPECT_EQ(*ParseSeeds("7-7"), (std::vector<uint64_t>{7}));
  EXPECT_EQ(ParseSeeds("0-99999")->size(), kMaxSeeds);
}

// Regression (new-user trial): a reversed range and the seed cap gave "bad seed range" at best.
TEST(TraceOptionsTest, SeedErrorsSayWhatIsWrong) {
  auto msg = [](const char* t) {
    auto r = ParseSeeds(t);
    EXPECT_FALSE(r.ok()) << t;
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(msg("44-42").find("seed range '44-42' is reversed"), std::string::npos) << msg("44-42");
  EXPECT_NE(msg("44-42").find("did you mean 42-44?"), std::string::npos) << msg("44-42");
  EXPECT_NE(msg("0-100000").find("more than 100000 seeds"), std::string::npos) << msg("0-100000");
  EXPECT_NE(msg("0-99999,100000").find("more than 100000 seeds"), std::string::npos);
  EXPECT_NE(msg("0-18446744073709551615").find("more than 100000 seeds"), std::string::npos);
  EXPECT_NE(msg("42,43,42").find("seed 42 is given more than once"), std::string::npos)
      << msg("42,43,42");
  EXPECT_NE(msg("40-45,44").find("seed 44 is given more than once"), std::string::npos);
  EXPECT_NE(msg("-5").find("not negative"), std::string::npos) << msg("-5");
  EXPECT_NE(msg("1,,2").find("empty item"), std::string::npos) << msg("1,,2");
  EXPECT_NE(msg("").find("no seed given"), std::string::npos) << msg("");
  EXPECT_NE(msg("a-b").find("'a-b' is not a seed range FIRST-LAST"), std::string::npos)
      << msg("a-b");
  EXPECT_NE(msg("x").find("a range like 42-51"), std::string::npos) << msg("x");
}

// Regression (new-user trial): `--target 50` was taken as 50 x the cluster (5000 %).
TEST(TraceOptionsTest, TargetGrammar) {
  EXPECT_EQ(*ParseTargetPermille("1.3"), 1300);
  EXPECT_EQ(*ParseTargetPermille("1"), 1000);
  EXPECT_EQ(*ParseTargetPermille("0.5"), 500);
  EXPECT_EQ(*ParseTargetPermille(".5"), 500);
  EXPECT_EQ(*ParseTargetPermille("0.125"), 125);
  EXPECT_EQ(*ParseTargetPermille("130%"), 1300);
  EXPECT_EQ(*ParseTargetPermille("50%"), 500);
  EXPECT_EQ(*ParseTargetPermille("12.5%"), 125);
  EXPECT_EQ(*ParseTargetPermille("10"), 10000);
  EXPECT_EQ(*ParseTargetPermille("1000%"), 10000);
  auto msg = [](const char* t) {
    auto r = ParseTargetPermille(t);
    EXPECT_FALSE(r.ok()) << t;
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(msg("50").find("'50' would mean 50 x the cluster's GPUs (5000%)"), std::string::npos)
      << msg("50");
  EXPECT_NE(msg("50").find("did you mean 50%?"), std::string::npos) << msg("50");
  EXPECT_NE(msg("12.5").find("(1250%)"), std::string::npos) << msg("12.5");
  EXPECT_NE(msg("1001%").find("above the limit"), std::string::npos) << msg("1001%");
  EXPECT_NE(msg("2000").find("above the limit"), std::string::npos) << msg("2000");
  for (const char* bad :
       {"0", "0%", "0.0", "-1", "1.3x", "%", "", ".", "1..3", "1.0001", "12.25%", "abc"})
    EXPECT_NE(msg(bad).find("like 1.3"), std::string::npos) << bad << ": " << msg(bad);
  EXPECT_NE(msg("1.0001").find("more precise than 0.001"), std::string::npos);
  EXPECT_NE(msg("12.25%").find("more precise than 0.1%"), std::string::npos);
}

// Issue 14: cpu_milli = INT64_MAX overflowed the replay's sums (UBSan: signed integer overflow in
// trace_sim.cc) and the release build went on. The reader refuses such values; the largest ones
// it accepts replay without overflow (this test runs under UBSan in scripts/test.sh's sanitizer
// job).
TEST(OpenbReaderTest, OutOfRangeNumbersAreRefusedAndTheLargestAcceptedOnesReplay) {
  const std::string nh = "sn,cpu_milli,memory_mib,gpu,model\n";
  const std::string ph =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n";
  for (const char* row : {"n,9223372036854775807,1,1,M\n", "n,1,9223372036854775807,1,M\n",
                          "n,1000000001,1,1,M\n", "n,1,1073741825,1,M\n"}) {
    auto n = ParseOpenbNodes(nh + row, "n.csv");
    ASSERT_FALSE(n.ok()) << row;
    EXPECT_NE(n.message().find("n.csv:2: "), std::string::npos) << n.message();
    EXPECT_NE(n.message().find("(the largest value Arbiter accepts)"), std::string::npos)
        << n.message();
  }
  for (const char* row : {"p,9223372036854775807,1,0,0,,LS,Running,0,1,0\n",
                          "p,1,1,0,0,,LS,Running,10000000001,1,0\n",
                          "p,1,1,0,0,,LS,Running,0,9223372036854775807,0\n"}) {
    auto p = ParseOpenbPods(ph + row, "p.csv");
    ASSERT_FALSE(p.ok()) << row;
    EXPECT_NE(p.message().find("is more than"), std::string::npos) << p.message();
  }
  std::string nodes = nh, pods = ph;
  for (int i = 0; i < 64; ++i) nodes += "n" + std::to_string(i) + ",1000000000,1073741824,64,M\n";
  for (int i = 0; i < 200; ++i)
    pods += "p" + std::to_string(i) + ",1000000000,1073741824," + (i % 2 ? "64,1000" : "0,0") +
            ",,LS,Running," + std::to_string(i % 3 ? 0 : 10000000000) + ",10000000000,0\n";
  auto n = ParseOpenbNodes(nodes, "n.csv");
  auto p = ParseOpenbPods(pods, "p.csv");
  ASSERT_TRUE(n.ok()) << n.message();
  ASSERT_TRUE(p.ok()) << p.message();
  auto t = RunTimeline(*n, *p, TraceRunOptions{});
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->pods_submitted, 200);
  auto sat = RunSaturate(*n, *p, TraceRunOptions{});
  ASSERT_TRUE(sat.ok()) << sat.message();
  EXPECT_GT(sat->pods_submitted, 0);
}

}  // namespace
}  // namespace arbiter::sim::trace
