// Trace replay through the engine decides exactly what the FGD paper's protocol decided before it
// went through the engine (issue 9). A differential test compared every decision (pod, node) of
// the old fast placement loop and of the engine, for all six placement policies, both modes, the
// four vendored openb pod lists and two seeds: identical. The fast loop is gone; this test keeps
// its decisions as digests (FNV-1a over "pod@node" in arrival order, "" for a pod that failed) and
// the engine must reproduce them.
#include <gtest/gtest.h>

#include <map>

#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace {

const std::string kData = std::string(ARBITER_SOURCE_DIR) + "/data/openb/";

struct Trace {
  std::vector<TraceNode> nodes;
  PodTrace pods;
};

const Trace& Load(const std::string& name) {
  static std::map<std::string, Trace> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Trace t;
  auto n = ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  auto p = ReadOpenbPods(kData + "openb_pod_list_" + name + ".csv");
  EXPECT_TRUE(n.ok() && p.ok());
  t.nodes = *n;
  t.pods = *p;
  return cache.emplace(name, std::move(t)).first->second;
}

struct Decisions {
  size_t count = 0;
  uint64_t h = 0xcbf29ce484222325ULL;
  void Add(size_t pod, const std::string& node) {
    ++count;
    for (unsigned char c : std::to_string(pod) + "@" + node) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL;
  }
};

struct Expected {
  const char* trace;
  const char* policy;
  const char* mode;
  uint64_t seed;
  size_t decisions;
  uint64_t digest;  // of the fast loop's decisions
};

// Recorded from the fast loop (RunSaturateFast / RunTimelineFast, removed in the commit after the
// differential test passed).
const Expected kFastLoop[] = {
    {"default", "bestfit", "saturate", 42, 10829, 0x40e31f87f92db959ULL},
    {"default", "bestfit", "timeline", 42, 8152, 0x5f67f8636c9ba955ULL},
    {"default", "bestfit", "saturate", 7, 10841, 0xc0855d2a60ad4bcbULL},
    {"default", "bestfit", "timeline", 7, 8152, 0xbaa403f620ab715aULL},
    {"default", "leastallocated", "saturate", 42, 10829, 0x0e760a1b0de56db1ULL},
    {"default", "leastallocated", "timeline", 42, 8152, 0x15f247dc4f5bb87bULL},
    {"default", "leastallocated", "saturate", 7, 10841, 0x2c6ce35818154f08ULL},
    {"default", "leastallocated", "timeline", 7, 8152, 0x7240bef918973e1aULL},
    {"default", "fgd", "saturate", 42, 10829, 0x21fdfd3a9088b2b3ULL},
    {"default", "fgd", "timeline", 42, 8152, 0x697da8991a82f48fULL},
    {"default", "fgd", "saturate", 7, 10841, 0xf3431193719fe3c0ULL},
    {"default", "fgd", "timeline", 7, 8152, 0x7b817a7f08ca770eULL},
    {"default", "packing", "saturate", 42, 10829, 0xf0b89573b1f32dc4ULL},
    {"default", "packing", "timeline", 42, 8152, 0x8a93aff5673bebdbULL},
    {"default", "packing", "saturate", 7, 10841, 0x389e426e6b8d40fcULL},
    {"default", "packing", "timeline", 7, 8152, 0x4bb668d3fccf196cULL},
    {"default", "dotproduct", "saturate", 42, 10829, 0xc0481617378fb9a5ULL},
    {"default", "dotproduct", "timeline", 42, 8152, 0xa1fe4bc00f559301ULL},
    {"default", "dotproduct", "saturate", 7, 10841, 0x685737a67f52caf3ULL},
    {"default", "dotproduct", "timeline", 7, 8152, 0xf33de833505aebc2ULL},
    {"default", "random", "saturate", 42, 10829, 0x6f224d61032be7e8ULL},
    {"default", "random", "timeline", 42, 8152, 0x5392d4619b2f7ccdULL},
    {"default", "random", "saturate", 7, 10841, 0xd9ad109d21102dbeULL},
    {"default", "random", "timeline", 7, 8152, 0xc04623c9d69624c4ULL},
    {"gpushare100", "bestfit", "saturate", 42, 16699, 0x867d44c3cb063af5ULL},
    {"gpushare100", "bestfit", "timeline", 42, 8152, 0x60fede5722b75a6cULL},
    {"gpushare100", "leastallocated", "saturate", 42, 16699, 0x62a573bffd87518dULL},
    {"gpushare100", "leastallocated", "timeline", 42, 8152, 0x4782ef6a9544ec8eULL},
    {"gpushare100", "fgd", "saturate", 42, 16699, 0x62c735aaf3152eafULL},
    {"gpushare100", "fgd", "timeline", 42, 8152, 0x66721e99c7d53850ULL},
    {"gpushare100", "packing", "saturate", 42, 16699, 0xf38ba94f0d4e86ffULL},
    {"gpushare100", "packing", "timeline", 42, 8152, 0x1dffef605cba8600ULL},
    {"gpushare100", "dotproduct", "saturate", 42, 16699, 0xc894ba1074b56174ULL},
    {"gpushare100", "dotproduct", "timeline", 42, 8152, 0xea91acba20547066ULL},
    {"gpushare100", "random", "saturate", 42, 16699, 0x38c32fd646c09ddfULL},
    {"gpushare100", "random", "timeline", 42, 8152, 0xff043d09b0bca889ULL},
    {"cpu250", "bestfit", "saturate", 42, 12479, 0x6f7efe10c12b4672ULL},
    {"cpu250", "bestfit", "timeline", 42, 9420, 0xccc62153743a4425ULL},
    {"cpu250", "leastallocated", "saturate", 42, 12479, 0x0de74a6478dba1d5ULL},
    {"cpu250", "leastallocated", "timeline", 42, 9420, 0x7d6545e8d0c9f6acULL},
    {"cpu250", "fgd", "saturate", 42, 12479, 0xfa9a661698586d2cULL},
    {"cpu250", "fgd", "timeline", 42, 9420, 0xf38ba1947bc7d60bULL},
    {"cpu250", "packing", "saturate", 42, 12479, 0x317a4def9b2e3493ULL},
    {"cpu250", "packing", "timeline", 42, 9420, 0x8656651421d77925ULL},
    {"cpu250", "dotproduct", "saturate", 42, 12479, 0x47c84ecd4fdee107ULL},
    {"cpu250", "dotproduct", "timeline", 42, 9420, 0x531f6fb0a3ffaf38ULL},
    {"cpu250", "random", "saturate", 42, 12479, 0x437533a541f1a5c8ULL},
    {"cpu250", "random", "timeline", 42, 9420, 0xc79fc197807d36a9ULL},
    {"gpuspec33", "bestfit", "saturate", 42, 10829, 0x0acc4b494607aeb1ULL},
    {"gpuspec33", "bestfit", "timeline", 42, 8152, 0xbead29be2ab69bf6ULL},
    {"gpuspec33", "leastallocated", "saturate", 42, 10829, 0x1e67a05c0a596512ULL},
    {"gpuspec33", "leastallocated", "timeline", 42, 8152, 0x5356fefb8f6d0260ULL},
    {"gpuspec33", "fgd", "saturate", 42, 10829, 0x8bacf67854179540ULL},
    {"gpuspec33", "fgd", "timeline", 42, 8152, 0x76c81ed60b210bbfULL},
    {"gpuspec33", "packing", "saturate", 42, 10829, 0x5d2fde4bc6bcb934ULL},
    {"gpuspec33", "packing", "timeline", 42, 8152, 0x2e571e5b496c0343ULL},
    {"gpuspec33", "dotproduct", "saturate", 42, 10829, 0xa1b6fd10cbab4171ULL},
    {"gpuspec33", "dotproduct", "timeline", 42, 8152, 0xd91116b185934049ULL},
    {"gpuspec33", "random", "saturate", 42, 10829, 0x643998e67badb776ULL},
    {"gpuspec33", "random", "timeline", 42, 8152, 0x7aa9fdf7c6dada01ULL},
};

class TraceDecisions : public ::testing::TestWithParam<Expected> {};

TEST_P(TraceDecisions, EngineDecidesLikeTheFastLoopDid) {
  const Expected& x = GetParam();
  const Trace& t = Load(x.trace);
  TraceRunOptions o;
  o.policy = *ParsePolicyName(x.policy);
  o.seed = x.seed;
  Decisions d;
  o.on_decision = [&](size_t pod, const std::string& node) { d.Add(pod, node); };
  if (std::string(x.mode) == "saturate") {
    ASSERT_TRUE(RunSaturate(t.nodes, t.pods, o).ok());
  } else {
    ASSERT_TRUE(RunTimeline(t.nodes, t.pods, o).ok());
  }
  EXPECT_EQ(d.count, x.decisions);
  EXPECT_EQ(d.h, x.digest) << "the engine decided differently from the fast loop";
}

INSTANTIATE_TEST_SUITE_P(AllPoliciesAllTraces, TraceDecisions, ::testing::ValuesIn(kFastLoop),
                         [](const auto& info) {
                           return std::string(info.param.trace) + "_" + info.param.policy + "_" +
                                  info.param.mode + "_" + std::to_string(info.param.seed);
                         });

}  // namespace
}  // namespace arbiter::sim::trace
