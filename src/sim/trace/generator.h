// Synthetic traces for scale tests, derived from a real one: node types and pod shapes are
// sampled (with replacement, seeded) from the template trace; pods arrive at a steady rate chosen
// so that the offered GPU load (arrival rate x mean GPU x run time) is `load_permille` of the
// generated cluster's GPUs; run times are sampled from the template's (deletion - scheduled).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace/openb_reader.h"

namespace arbiter::sim::trace {

struct GeneratorOptions {
  int64_t nodes = 10000;
  int64_t pods = 1000000;
  uint64_t seed = 42;
  int64_t load_permille = 900;
  int64_t max_duration_s = 7 * 24 * 3600;  // cap on sampled run times
};

std::vector<TraceNode> GenerateNodes(const std::vector<TraceNode>& templ,
                                     const GeneratorOptions& o);
// Needs a template with times (has_times) and at least one pod; `nodes` are the generated ones.
PodTrace GeneratePods(const PodTrace& templ, const std::vector<TraceNode>& nodes,
                      const GeneratorOptions& o);

}  // namespace arbiter::sim::trace
