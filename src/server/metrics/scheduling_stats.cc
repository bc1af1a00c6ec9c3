#include "server/metrics/scheduling_stats.h"

namespace arbiter::server {

void SchedulingStats::Record(const engine::Event& e, const engine::WorkloadStatus* status) {
  ++events[engine::ToString(e.type)];
  if (e.type != engine::EventType::kScheduled || !status || status->first_start != e.time) return;
  const double seconds = static_cast<double>(e.time - status->submit_time) / 1000.0;
  for (size_t i = 0; i < kWaitBounds.size(); ++i)
    if (seconds <= kWaitBounds[i]) ++wait_buckets[i];
  ++wait_count;
  wait_sum_seconds += seconds;
}

}  // namespace arbiter::server
