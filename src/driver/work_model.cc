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

StopPlan WorkModel::Shorten(Work& w, Millis now, Millis grace) {
  const Millis kill = now + grace;
  if (kill < w.exit_time) {
    const auto& ckpt = w.spec.checkpoint_interval;
    const Millis done = DoneBy(w, w.stop_time);
    Millis saved = ckpt ? std::max(done / *ckpt * *ckpt, std::min(w.progress, done)) : 0;
    saved = std::min(saved, w.progress_after_exit);
    w.lost_ms += (done - saved) - w.lost_work;
    w.lost_work = done - saved;
    w.progress_after_exit = saved;
    w.exit_time = kill;
  }
  return StopPlan{kill - w.stop_time, w.exit_time, w.progress_after_exit, w.lost_work};
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
  while (generation_.size() <= i) generation_.push_back(0);
  return generation_[i];
}

void WorkTimers::Push(const Timer& t) {
  size_t i = heap_.size();
  heap_.push_back(t);
  for (; i > 0; i = (i - 1) / 2) {
    const Timer& parent = heap_[(i - 1) / 2];
    if (!(parent > t)) break;
    heap_[i] = parent;
  }
  heap_[i] = t;
}

void WorkTimers::Pop() {
  const Timer last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return;
  size_t i = 0;
  for (size_t c = 1; c < n; c = 2 * i + 1) {
    if (c + 1 < n && heap_[c] > heap_[c + 1]) ++c;
    if (!(last > heap_[c])) break;
    heap_[i] = heap_[c];
    i = c;
  }
  heap_[i] = last;
}

void WorkTimers::Arm(engine::WorkloadId w, Millis at, Kind kind) {
  const uint64_t g = ++Gen(w);
  Push(Timer{at, seq_++, w, g, kind});
}

void WorkTimers::Disarm(engine::WorkloadId w) { ++Gen(w); }

std::optional<Millis> WorkTimers::Next() {
  while (!heap_.empty() && heap_[0].generation != Gen(heap_[0].workload)) Pop();
  if (heap_.empty()) return std::nullopt;
  return heap_[0].time;
}

std::optional<WorkTimers::Timer> WorkTimers::PopDue(Millis now) {
  while (!heap_.empty()) {
    const Timer t = heap_[0];
    if (t.generation != Gen(t.workload)) {
      Pop();
      continue;
    }
    if (t.time > now) return std::nullopt;
    Pop();
    return t;
  }
  return std::nullopt;
}

namespace {
// The timers of `heap` that `gens` has not cancelled, in firing order.
template <typename Heap, typename Gens>
std::vector<WorkTimers::Timer> LiveOf(const Heap& heap, const Gens& gens) {
  std::vector<WorkTimers::Timer> out;
  for (size_t k = 0; k < heap.size(); ++k) {
    const WorkTimers::Timer& t = heap[k];
    const uint64_t i = engine::Value(t.workload);
    if (i < gens.size() && t.generation == gens[i]) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return b > a; });
  return out;
}
}  // namespace

std::vector<WorkTimers::Timer> WorkTimers::Live() const { return LiveOf(heap_, generation_); }
std::vector<WorkTimers::Timer> WorkTimers::Frozen::Live() const {
  return LiveOf(heap, generations);
}

std::vector<uint64_t> WorkTimers::generations() const {
  return {generation_.begin(), generation_.end()};
}

void WorkTimers::Restore(const std::vector<Timer>& live, uint64_t seq,
                         const std::vector<uint64_t>& gens) {
  heap_.clear();
  for (const Timer& t : live) Push(t);
  seq_ = seq;
  generation_.clear();
  for (uint64_t g : gens) generation_.push_back(g);
}

engine::Command DueCommand(const WorkTimers::Timer& due, int32_t exit_code) {
  engine::CommandOp op = due.kind == WorkTimers::Kind::kComplete
                             ? engine::CommandOp(engine::PodFinished{due.workload, exit_code})
                             : engine::CommandOp(engine::VictimExited{due.workload});
  return engine::Command{due.time, std::move(op)};
}

}  // namespace arbiter::driver
