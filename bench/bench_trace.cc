// Trace replay timings on the vendored openb trace (data/openb): one saturate run (one policy,
// one seed, ~10,800 pods on 1,213 GPU nodes) per policy, and the timeline replay of the default
// trace, and a generated 10,000-node, 1,000,000-pod timeline. Targets (issue 5): saturate < 1 s
// for BestFit, < 2 s for FGD; timeline < 1 s; generated timeline < 60 s and < 4 GiB.
//
//   build/bench_trace --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <string>

#include "sim/trace/generator.h"
#include "sim/trace/trace_sim.h"

namespace {

using namespace arbiter;
using namespace arbiter::sim::trace;

std::string DataDir() {
  if (const char* d = std::getenv("ARBITER_OPENB_DIR")) return std::string(d) + "/";
  std::string f = __FILE__;  // .../bench/bench_trace.cc
  return f.substr(0, f.rfind("/bench/")) + "/data/openb/";
}

struct Trace {
  std::vector<TraceNode> nodes;
  PodTrace pods;
};

const Trace& Default() {
  static const Trace t = [] {
    Trace x;
    auto n = ReadOpenbNodes(DataDir() + "openb_node_list_gpu_node.csv");
    auto p = ReadOpenbPods(DataDir() + "openb_pod_list_default.csv");
    if (!n.ok() || !p.ok()) {
      std::fprintf(stderr, "%s%s\n", n.message().c_str(), p.message().c_str());
      std::abort();
    }
    x.nodes = *n;
    x.pods = *p;
    return x;
  }();
  return t;
}

void BM_Saturate(benchmark::State& state, PlacementPolicyName policy) {
  const Trace& t = Default();
  TraceRunOptions o;
  o.policy = policy;
  uint64_t seed = 42;
  int64_t pods = 0;
  for (auto _ : state) {
    o.seed = seed++;
    auto r = RunSaturate(t.nodes, t.pods, o);
    if (!r.ok()) state.SkipWithError(r.message().c_str());
    pods += r->pods_submitted;
    benchmark::DoNotOptimize(r->allocated_gpu_milli);
  }
  state.counters["pods/s"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Saturate, BestFit, PlacementPolicyName::kBestFit)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Saturate, FGD, PlacementPolicyName::kFGD)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Saturate, Packing, PlacementPolicyName::kPacking)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Saturate, DotProduct, PlacementPolicyName::kDotProduct)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Saturate, Random, PlacementPolicyName::kRandom)->Unit(benchmark::kMillisecond);

void BM_Timeline(benchmark::State& state, PlacementPolicyName policy) {
  const Trace& t = Default();
  TraceRunOptions o;
  o.policy = policy;
  for (auto _ : state) {
    auto r = RunTimeline(t.nodes, t.pods, o);
    if (!r.ok()) state.SkipWithError(r.message().c_str());
    benchmark::DoNotOptimize(r->pods_placed);
  }
}
BENCHMARK_CAPTURE(BM_Timeline, BestFit, PlacementPolicyName::kBestFit)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Timeline, FGD, PlacementPolicyName::kFGD)->Unit(benchmark::kMillisecond);

void BM_ReadDefaultTrace(benchmark::State& state) {
  for (auto _ : state) {
    auto p = ReadOpenbPods(DataDir() + "openb_pod_list_default.csv");
    benchmark::DoNotOptimize(p.ok());
  }
}
BENCHMARK(BM_ReadDefaultTrace)->Unit(benchmark::kMillisecond);

}  // namespace

// 10,000 nodes and 1,000,000 pods sampled from the openb trace, offered GPU load 90 %.
void BM_TimelineGenerated(benchmark::State& state, PlacementPolicyName policy) {
  const Trace& t = Default();
  GeneratorOptions g;
  g.nodes = state.range(0);
  g.pods = state.range(1);
  const auto nodes = GenerateNodes(t.nodes, g);
  const auto pods = GeneratePods(t.pods, nodes, g);
  TraceRunOptions o;
  o.policy = policy;
  int64_t failed = 0;
  for (auto _ : state) {
    auto r = RunTimeline(nodes, pods, o);
    if (!r.ok()) state.SkipWithError(r.message().c_str());
    failed = r->pods_failed;
    benchmark::DoNotOptimize(r->pods_placed);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["failed"] = static_cast<double>(failed);
  state.counters["maxRSS_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK_CAPTURE(BM_TimelineGenerated, BestFit, PlacementPolicyName::kBestFit)
    ->Args({10000, 1000000})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
