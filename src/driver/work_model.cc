#include "driver/work_model.h"

#include <algorithm>

namespace arbiter::driver {

WorkSpec WorkSpec::Of(const Pod& pod) {
  WorkSpec s;
  s.duration = pod.sim.duration;
  s.checkpoint_interval = pod.sim.checkpoint_interval;
  s.shutdown = pod.sim.shutdown_time;
  s.exit_code = pod.sim.exit_code;
  return s;
}

std::optional<Millis> WorkModel::Start(Work& w, Millis now) {
  w.run_start = now;
  w.stopping = false;
  w.lost_work = 0;
  if (!w.spec.duration) return std::nullopt;
  return now + std::max<Millis>(0, *w.spec.duration - w.progress);
}

namespace {
// Progress made by `at` (capped at the work needed).
Millis DoneBy(const Work& w, Millis at) {
  Millis done = w.progress + (at - w.run_start);
  if (w.spec.duration) done = std::min(done, *w.spec.duration);
  return done;
}
}  // namespace

StopPlan WorkModel::Stop(Work& w, Millis now, Millis grace) {
  const auto& ckpt = w.spec.checkpoint_interval;
  const Millis done = DoneBy(w, now);
  Millis saved;
  Millis exit_after;
  if (w.spec.shutdown <= grace) {
    exit_after = w.spec.shutdown;
    saved = ckpt ? done : 0;
  } else {
    exit_after = grace;
    saved = ckpt ? done / *ckpt * *ckpt : 0;
  }
  saved = std::max(saved, std::min(w.progress, done));  // never below what was already saved
  if (!ckpt) saved = 0;
  w.stopping = true;
  w.stop_time = now;
  w.exit_time = now + exit_after;
  w.progress_after_exit = saved;
  w.lost_work = done - saved;
  w.lost_ms += w.lost_work;
  return StopPlan{grace, w.exit_time, saved, w.lost_work};
}

Millis WorkModel::NodeLost(Work& w, Millis now) {
  const bool running = !w.stopping;
  const auto& ckpt = w.spec.checkpoint_interval;
  // Progress as of the moment the workload was stopped (now, or its SIGTERM if shutting down).
  const Millis stop = running ? now : w.stop_time;
  const Millis done = DoneBy(w, stop);
  Millis periodic = ckpt ? done / *ckpt * *ckpt : 0;
  if (ckpt) periodic = std::max(periodic, std::min(w.progress, done));
  const Millis lost_before = running ? 0 : w.lost_work;
  const Millis saved = running ? periodic : (w.exit_time <= now ? w.progress_after_exit : periodic);
  if (running) w.stop_time = now;
  w.progress_after_exit = saved;
  w.lost_work = done - saved;
  const Millis extra = w.lost_work - lost_before;
  if (running)
    w.lost_ms_node_removed += extra;
  else
    w.lost_ms += extra;
  w.exit_time = now;
  w.stopping = true;
  return saved;
}

void WorkModel::Complete(Work& w) {
  if (w.spec.duration) w.progress = *w.spec.duration;
  w.stopping = false;
}

void WorkModel::Exited(Work& w) {
  w.progress = w.progress_after_exit;
  w.stopping = false;
}

void WorkModel::Annotate(const Work& w, engine::RunRecord& run) {
  if (run.stopped_by.empty() || w.lost_work <= 0) return;
  // The lost interval is expressed on the run's wall clock: it ends at the stop.
  run.lost_to = run.stop_time;
  run.lost_from = std::max(run.start, run.stop_time - w.lost_work);
  run.preemptor = run.stopped_by;
}

std::string WorkModel::StopText(const Work& w, const StopPlan& p) {
  return ", shutdown " + FormatDuration(w.spec.shutdown) +
         (w.spec.shutdown > p.grace ? " (killed at the end of the grace period)" : "") +
         ", exits at " + FormatDuration(p.exit_at) + "; progress kept " + FormatDuration(p.kept) +
         ", lost " + FormatDuration(p.lost);
}

std::string WorkModel::LossText(Millis kept, Millis lost) {
  return "; progress kept " + FormatDuration(kept) + ", lost " + FormatDuration(lost);
}

uint64_t& WorkTimers::Gen(engine::WorkloadId w) {
  const uint64_t i = engine::Value(w);
  if (i >= generation_.size()) generation_.resize(i + 1, 0);
  return generation_[i];
}

void WorkTimers::Arm(engine::WorkloadId w, Millis at, Kind kind) {
  const uint64_t g = ++Gen(w);
  heap_.push(Timer{at, seq_++, w, g, kind});
}

void WorkTimers::Disarm(engine::WorkloadId w) { ++Gen(w); }

std::optional<Millis> WorkTimers::Next() {
  while (!heap_.empty() && heap_.top().generation != Gen(heap_.top().workload)) heap_.pop();
  if (heap_.empty()) return std::nullopt;
  return heap_.top().time;
}

std::optional<WorkTimers::Timer> WorkTimers::PopDue(Millis now) {
  while (!heap_.empty()) {
    const Timer t = heap_.top();
    if (t.generation != Gen(t.workload)) {
      heap_.pop();
      continue;
    }
    if (t.time > now) return std::nullopt;
    heap_.pop();
    return t;
  }
  return std::nullopt;
}

std::vector<WorkTimers::Timer> WorkTimers::Live() const {
  std::vector<Timer> out;
  auto copy = heap_;
  while (!copy.empty()) {
    const Timer t = copy.top();
    copy.pop();
    const uint64_t i = engine::Value(t.workload);
    if (i < generation_.size() && t.generation == generation_[i]) out.push_back(t);
  }
  return out;
}

void WorkTimers::Restore(const std::vector<Timer>& live, uint64_t seq,
                         std::vector<uint64_t> generations) {
  heap_ = {};
  for (const Timer& t : live) heap_.push(t);
  seq_ = seq;
  generation_ = std::move(generations);
}

engine::Command DueCommand(const WorkTimers::Timer& due, int32_t exit_code) {
  engine::CommandOp op = due.kind == WorkTimers::Kind::kComplete
                             ? engine::CommandOp(engine::PodFinished{due.workload, exit_code})
                             : engine::CommandOp(engine::VictimExited{due.workload});
  return engine::Command{due.time, std::move(op)};
}

}  // namespace arbiter::driver
