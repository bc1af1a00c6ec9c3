// What the daemon's engine decided since the process started (journal replay included), for
// /metrics (metrics.h). Counters restart with the process, as Prometheus counters may.
//
//   events[type]   engine events by type name (engine::ToString: Scheduled, Preempted,
//                  Reclaimed, FailedScheduling, QuotaExceeded, Requeued, ...)
//   wait           a histogram of the time from a pod's submission to its first bind, in
//                  seconds of the cluster's clock (the wall clock in `arbiter serve`); later
//                  binds (after a preemption or node loss) are not observed again
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "core/engine/types.h"

namespace arbiter::server {

struct SchedulingStats {
  // Upper bounds (seconds) of the wait histogram's buckets; +Inf is implicit.
  static constexpr std::array<double, 10> kWaitBounds = {0.1, 1,   5,    15,    60,
                                                         300, 900, 3600, 14400, 86400};
  std::map<std::string, uint64_t> events;
  std::array<uint64_t, kWaitBounds.size()> wait_buckets{};  // cumulative, Prometheus style
  uint64_t wait_count = 0;
  double wait_sum_seconds = 0;

  // Counts `e`; on a first bind (`status` is the workload's status after the event, when known)
  // observes its wait.
  void Record(const engine::Event& e, const engine::WorkloadStatus* status);
};

}  // namespace arbiter::server
