// Lost work: what a running workload would lose if it were stopped now, and the victim order that
// minimises it (PoolPolicy preemption.victimOrder: LeastLostWork), engine-internal.
//
// The estimate follows the work model's stopping rule (driver/work_model.h, BRIEF §5) from the
// facts the pod declares (Workload::checkpoint_interval and shutdown_time, from the annotations
// arbiter.dev/checkpoint-interval and arbiter.dev/shutdown-time), its grace period and its run's
// start; the engine keeps no progress of its own:
//  - it checkpoints and its shutdown time fits its grace period: it saves at SIGTERM, loses 0;
//  - it checkpoints but is killed at the end of its grace period: the run time since its last
//    periodic checkpoint, (now - run start) mod interval (a run resumes from a checkpoint, so its
//    checkpoints fall every interval from its start);
//  - it has no checkpoint interval: its whole run, now - run start (it restarts from zero).
// The lost GPU work is that run time times its GPUs (milli-GPU x ms; CPU-only workloads and MIG
// instances count 0 GPUs), saturated at INT64_MAX.
//
// LeastLostWork keeps priority first everywhere. Among victims of equal priority the one that
// loses the least GPU work goes first, then the least run time, then the type's own order
// (Kubernetes: the latest start; Kueue: the most recently admitted; Slurm: submission).
#pragma once

#include <cstdint>

#include "core/engine/workload.h"

namespace arbiter::engine {

struct LostWork {
  int64_t gpu_milli_ms = 0;  // milli-GPU x ms
  Millis run_ms = 0;
  bool operator==(const LostWork&) const = default;
  // Less is cheaper to stop: the GPU work, then the run time.
  bool operator<(const LostWork& o) const {
    return gpu_milli_ms != o.gpu_milli_ms ? gpu_milli_ms < o.gpu_milli_ms : run_ms < o.run_ms;
  }
  LostWork& operator+=(const LostWork& o);  // saturating
};

// What `v` (running since v.run_start) loses if it gets SIGTERM with `grace` at `now`.
LostWork LostWorkIfStopped(const Workload& v, Millis grace, Millis now);

}  // namespace arbiter::engine
