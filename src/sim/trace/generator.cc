#include "sim/trace/generator.h"

#include <algorithm>
#include <cstdio>

#include "core/int128.h"
#include "core/placement/rng.h"

namespace arbiter::sim::trace {

std::vector<TraceNode> GenerateNodes(const std::vector<TraceNode>& templ,
                                     const GeneratorOptions& o) {
  std::vector<TraceNode> out;
  if (templ.empty()) return out;
  placement::Xoshiro256 rng(o.seed ^ 0x67656E6E6F6465ULL);
  out.reserve(static_cast<size_t>(o.nodes));
  char name[32];
  for (int64_t i = 0; i < o.nodes; ++i) {
    TraceNode n = templ[rng.Below(templ.size())];
    std::snprintf(name, sizeof name, "gen-node-%06lld", static_cast<long long>(i));
    n.name = name;
    out.push_back(std::move(n));
  }
  return out;
}

PodTrace GeneratePods(const PodTrace& templ, const std::vector<TraceNode>& nodes,
                      const GeneratorOptions& o) {
  PodTrace out;
  out.has_times = true;
  if (templ.pods.empty()) return out;
  placement::Xoshiro256 rng(o.seed ^ 0x67656E706F6473ULL);
  auto duration_of = [&](const TracePod& p) -> int64_t {
    if (!p.creation_s || !p.deletion_s) return 0;
    const int64_t start = p.scheduled_s.value_or(*p.creation_s);
    return std::clamp<int64_t>(*p.deletion_s - start, 0, o.max_duration_s);
  };
  // Mean GPU milli-seconds per pod of the template, for the arrival rate.
  int128 gpu_ms = 0;
  for (const auto& p : templ.pods)
    gpu_ms += static_cast<int128>(p.gpu_milli_total()) * duration_of(p);
  int64_t capacity = 0;
  for (const auto& n : nodes) capacity += int64_t{n.gpus} * 1000;
  const double mean_gpu_ms = static_cast<double>(gpu_ms) / static_cast<double>(templ.pods.size());
  const double offered =
      static_cast<double>(capacity) * static_cast<double>(o.load_permille) / 1000.0;
  // Mean inter-arrival time in milliseconds; arrivals uniform in [0, 2 x mean].
  const int64_t mean_gap_ms =
      offered > 0 ? std::max<int64_t>(1, static_cast<int64_t>(mean_gpu_ms / offered * 1000.0))
                  : 1000;
  out.pods.reserve(static_cast<size_t>(o.pods));
  int64_t t_ms = 0;
  char name[32];
  for (int64_t i = 0; i < o.pods; ++i) {
    TracePod p = templ.pods[rng.Below(templ.pods.size())];
    const int64_t d = duration_of(p);
    std::snprintf(name, sizeof name, "gen-%07lld", static_cast<long long>(i));
    p.name = name;
    p.creation_s = t_ms / 1000;
    p.scheduled_s = p.creation_s;
    p.deletion_s = *p.creation_s + d;
    out.pods.push_back(std::move(p));
    t_ms += static_cast<int64_t>(rng.Below(static_cast<uint64_t>(2 * mean_gap_ms + 1)));
  }
  return out;
}

}  // namespace arbiter::sim::trace
