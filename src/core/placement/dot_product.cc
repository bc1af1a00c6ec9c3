// DotProduct (see policies.h): minimise cpu_free*cpu_req/max_cpu^2 + gpu_free*gpu_req/max_gpu^2,
// computed exactly as (cpu_free*cpu_req*A + gpu_free*gpu_req*B) with A = max_gpu^2/g and
// B = max_cpu^2/g, g = gcd(max_gpu^2, max_cpu^2).
#include <numeric>

#include "core/int128.h"
#include "core/placement/policies.h"

namespace arbiter::placement {

Candidate DotProductPolicy::Score(const NodeState& node, const PodShape& pod) {
  return Candidate{ScoreOnly(node, pod), node.DefaultGpuChoice(pod)};
}

int64_t DotProductPolicy::ScoreOnly(const NodeState& node, const PodShape& pod) {
  const int128 cg = static_cast<int128>(spec_.gpu_milli) * spec_.gpu_milli;
  const int128 cc = static_cast<int128>(spec_.cpu_milli) * spec_.cpu_milli;
  const int64_t g = std::gcd(static_cast<int64_t>(cg), static_cast<int64_t>(cc));
  const int128 a = cg / g, b = cc / g;
  const int128 v = static_cast<int128>(node.cpu_free()) * pod.cpu_milli * a +
                   static_cast<int128>(node.gpu_free_milli()) * pod.gpu_milli_total() * b;
  const int128 kMax = static_cast<int128>(INT64_MAX);
  const int64_t clamped = static_cast<int64_t>(v > kMax ? kMax : v);
  return -clamped;
}

}  // namespace arbiter::placement
