// The work model: what a workload does while it runs, from its pod's simulation annotations
// (arbiter.dev/duration, checkpoint-interval, shutdown-time, usage). The engine schedules and
// signals; a driver with a work model decides when a run completes (PodFinished) and when a
// signalled workload exits (VictimExited), and knows what each run saved and lost. The simulator
// drives it on a virtual clock; a daemon's virtual nodes (KWOK-style) can drive it on the wall
// clock: nothing here reads a clock or knows how time advances.
//
// Stopping a workload (BRIEF §5): at SIGTERM time t with grace period G, a workload with a
// checkpoint interval whose shutdown time S fits in G saves its progress as of t and exits at
// t+S: nothing is lost. If S > G it is killed at t+G and keeps its last periodic checkpoint. A
// workload without a checkpoint interval exits at t+S (killed at t+G if S > G) and restarts from
// zero. A workload whose node is removed stops at once and keeps its last periodic checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/duration.h"
#include "core/engine/command.h"
#include "core/engine/slot_table.h"
#include "core/engine/types.h"
#include "core/objects.h"

namespace arbiter::driver {

// The annotations that describe the work.
struct WorkSpec {
  std::optional<Millis> duration;  // run time needed when never interrupted; none: forever
  std::optional<Millis> checkpoint_interval;  // none: no checkpoints
  Millis shutdown = 0;                        // time needed after SIGTERM to save and exit
  int32_t exit_code = 0;                      // when the duration is done (arbiter.dev/exit-code)
  static WorkSpec Of(const Pod& pod);
};

// One workload's progress, kept by the driver.
struct Work {
  WorkSpec spec;
  Millis progress = 0;    // saved progress: work done that survives a requeue
  Millis run_start = 0;   // the current run's start
  bool stopping = false;  // signalled or lost with its node; its run ends at its exit
  Millis stop_time = 0;   // SIGTERM (or node loss)
  Millis exit_time = 0;
  Millis progress_after_exit = 0;
  Millis lost_work = 0;             // run time lost by the current stop
  Millis lost_ms = 0;               // run time lost to preemption, over every run
  Millis lost_ms_node_removed = 0;  // run time lost with removed nodes
};

// What a SIGTERM leads to.
struct StopPlan {
  Millis grace = 0;
  Millis exit_at = 0;  // absolute
  Millis kept = 0;     // progress saved
  Millis lost = 0;     // run time lost
};

class WorkModel {
 public:
  // The run starts at `now`; returns when it completes if it is never interrupted (none: never).
  static std::optional<Millis> Start(Work& w, Millis now);
  // SIGTERM at `now` with `grace`: when it exits and what it keeps.
  static StopPlan Stop(Work& w, Millis now, Millis grace);
  // A second delete at `now` shortens the SIGTERM's grace to end `grace` from now: a workload
  // whose shutdown would last past that is killed then, keeping only the checkpoints it had at
  // the SIGTERM. The plan's grace is the whole grace since the SIGTERM.
  static StopPlan Shorten(Work& w, Millis now, Millis grace);
  // Its node was removed at `now` (it was running, or shutting down after a SIGTERM): it stops at
  // once; returns the progress kept. `w.lost_work` is the run time lost.
  static Millis NodeLost(Work& w, Millis now);
  // The run completed: all work is done.
  static void Complete(Work& w);
  // A stopped run has ended (the workload exited): its progress is what the stop kept.
  static void Exited(Work& w);
  // The lost interval of a stopped run (RunRecord::lost_from / lost_to / preemptor), when work
  // was lost.
  static void Annotate(const Work& w, engine::RunRecord& run);

  // The work model's facts appended to the engine's text (engine::WorkFacts):
  //   kStopPlan:      ", shutdown S[ (killed at the end of the grace period)], exits at T; progress
  //   kept K, lost L" kProgressLost:  "; progress kept K, lost L"
  static std::string StopText(const Work& w, const StopPlan& p);
  static std::string LossText(Millis kept, Millis lost);
};

// Completion and exit instants a driver waits for, fired in (time, order of arming). Arming a new
// timer for a workload, or Disarm, cancels the one it had. The heap and the generations are kept
// in chunked tables (engine::SlotTable), so that Freeze() takes them in O(chunks) (issue 27: a
// snapshot's capture under the daemon's lock); the live timers are sorted out of a Frozen on the
// snapshot thread.
class WorkTimers {
 public:
  enum class Kind : uint8_t { kComplete, kExit };
  struct Timer {
    Millis time = 0;
    uint64_t seq = 0;
    engine::WorkloadId workload{};
    uint64_t generation = 0;
    Kind kind = Kind::kComplete;
    bool operator>(const Timer& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  void Arm(engine::WorkloadId w, Millis at, Kind kind);
  void Disarm(engine::WorkloadId w);
  // The next live timer, if any (stale ones are dropped).
  std::optional<Millis> Next();
  // Pops the next live timer due at or before `now`.
  std::optional<Timer> PopDue(Millis now);

  // State, for snapshots: the live timers in firing order, the sequence and generations.
  std::vector<Timer> Live() const;
  void Restore(const std::vector<Timer>& live, uint64_t seq, const std::vector<uint64_t>& gens);
  uint64_t seq() const { return seq_; }
  std::vector<uint64_t> generations() const;  // by WorkloadId (a copy)

  // The state at one instant, taken in O(chunks); immutable, readable on any thread.
  struct Frozen {
    engine::SlotTable<Timer>::Frozen heap;            // live and cancelled timers, in heap order
    engine::SlotTable<uint64_t>::Frozen generations;  // by WorkloadId
    uint64_t seq = 0;
    std::vector<Timer> Live() const;  // as WorkTimers::Live() at the instant
  };
  Frozen Freeze() const { return {heap_.Freeze(), generation_.Freeze(), seq_}; }

 private:
  uint64_t& Gen(engine::WorkloadId w);
  void Push(const Timer& t);
  void Pop();
  engine::SlotTable<Timer> heap_;           // a binary heap, the first timer to fire at 0
  engine::SlotTable<uint64_t> generation_;  // by WorkloadId
  uint64_t seq_ = 0;
};

// The engine command a due timer stands for, at the timer's time: a completed run is PodFinished
// with `exit_code` (the pod's arbiter.dev/exit-code, Recorder::ExitCode), a signalled workload's
// exit is VictimExited.
engine::Command DueCommand(const WorkTimers::Timer& due, int32_t exit_code = 0);

}  // namespace arbiter::driver
