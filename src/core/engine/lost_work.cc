// Lost work and the LeastLostWork victim order: see lost_work.h.
#include "core/engine/lost_work.h"

#include <algorithm>
#include <limits>

namespace arbiter::engine {

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
int64_t SaturatingAdd(int64_t a, int64_t b) { return a > kMax - b ? kMax : a + b; }
}  // namespace

LostWork& LostWork::operator+=(const LostWork& o) {
  gpu_milli_ms = SaturatingAdd(gpu_milli_ms, o.gpu_milli_ms);
  run_ms = SaturatingAdd(run_ms, o.run_ms);
  return *this;
}

LostWork LostWorkIfStopped(const Workload& v, Millis grace, Millis now) {
  LostWork out;
  const Millis elapsed = std::max<Millis>(0, now - v.run_start);
  if (v.checkpoint_interval > 0)
    out.run_ms = v.shutdown_time <= grace ? 0 : elapsed % v.checkpoint_interval;
  else
    out.run_ms = elapsed;
  const int64_t gpus = std::max<int64_t>(0, v.shape.gpu_milli_total());
  out.gpu_milli_ms = gpus != 0 && out.run_ms > kMax / gpus ? kMax : out.run_ms * gpus;
  return out;
}

}  // namespace arbiter::engine
