// Simulation::Save / Simulation::Resume: a paused simulation as a state file (docs/snapshot.md).
// It holds the engine's snapshot, the work model's timers and per-workload progress, the arrivals
// and node changes still to come, what the reports have collected so far (workloads, events, run
// records), and the manifests' nodes and price books (the reports read them).
#include "core/engine/reasons.h"
#include "core/object_serial.h"
#include "sim/simulator.h"

namespace arbiter::serial {

ARB_SERIAL_ENUM(engine::Phase, engine::Phase::kDeleted)
ARB_SERIAL_ENUM(engine::EventType, engine::EventType::kDeleted)
ARB_SERIAL_ENUM(driver::WorkTimers::Kind, driver::WorkTimers::Kind::kExit)

template <typename A>
void Io(A& a, engine::WorkloadId& id) {
  uint64_t v = engine::Value(id);
  Io(a, v);
  id = static_cast<engine::WorkloadId>(v);
}

template <typename A>
void Io(A& a, driver::WorkSpec& s) {
  Io(a, s.duration);
  Io(a, s.checkpoint_interval);
  Io(a, s.shutdown);
}

template <typename A>
void Io(A& a, driver::Work& w) {
  Io(a, w.spec);
  Io(a, w.progress);
  Io(a, w.run_start);
  Io(a, w.stopping);
  Io(a, w.stop_time);
  Io(a, w.exit_time);
  Io(a, w.progress_after_exit);
  Io(a, w.lost_work);
  Io(a, w.lost_ms);
  Io(a, w.lost_ms_node_removed);
}

// The recorder's works, as a std::vector of them is written (its count, then each).
template <typename A>
void Io(A& a, engine::SlotTable<driver::Work>& v) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count();
    v.clear();
    for (uint64_t i = 0; i < n && a.ok(); ++i) Io(a, v.emplace_back());
  } else {
    a.U64(v.size());
    for (auto& x : v) Io(a, x);
  }
}

// A text of a result, kept in its pool (the format holds the text).
template <typename A>
void Io(A& a, std::string_view& name, driver::NamePool& names) {
  std::string s(name);
  Io(a, s);
  if constexpr (A::kReading) name = names.Intern(s);
}

template <typename A>
void Io(A& a, driver::SimWorkload& w, driver::NamePool& names) {
  Io(a, w.key);
  Io(a, w.namespace_, names);
  Io(a, w.priority);
  Io(a, w.priority_class, names);
  Io(a, w.qos, names);
  Io(a, w.phase);
  Io(a, w.last_node, names);
  Io(a, w.on_node);
  Io(a, w.submit_time);
  Io(a, w.first_start);
  Io(a, w.finish_time);
  Io(a, w.preemptions);
  Io(a, w.message, names);
  Io(a, w.requests);
  {  // the format keeps the usage itself (requests when none was declared)
    ResourceList usage = w.Usage();
    Io(a, usage);
    if constexpr (A::kReading) w.SetUsage(std::move(usage));
  }
  Io(a, w.pending_total);
  if (!a.heldless) Io(a, w.held_total);  // version 8
  Io(a, w.borrowed);
  Io(a, w.progress);
  Io(a, w.lost_gpu_milli_ms);
  Io(a, w.lost_gpu_milli_ms_node_removed);
  if (!a.flavorless) Io(a, w.flavor, names);  // version 3
}

template <typename A>
void Io(A& a, driver::SimEvent& e, driver::NamePool& names) {
  Io(a, e.time);
  Io(a, e.type);
  Io(a, e.workload);
  Io(a, e.node, names);
  Io(a, e.by, names);
  std::string reason(e.reason);
  Io(a, reason);
  if constexpr (A::kReading) {
    auto known = engine::KnownReason(reason);
    if (!known) a.Fail("an unknown event reason " + reason);
    e.reason = known.value_or(engine::reason::kNone);
  }
  Io(a, e.message, names);
}

template <typename A>
void Io(A& a, engine::RunRecord& r) {
  Io(a, r.workload);
  Io(a, r.node);
  Io(a, r.gpu_product);
  Io(a, r.gpu_replicas);
  Io(a, r.start);
  Io(a, r.end);
  Io(a, r.stopped_by);
  Io(a, r.stop_time);
  Io(a, r.lost_from);
  Io(a, r.lost_to);
  Io(a, r.preemptor);
}

template <typename A>
void Io(A& a, driver::WorkTimers::Timer& t) {
  Io(a, t.time);
  Io(a, t.seq);
  Io(a, t.workload);
  Io(a, t.generation);
  Io(a, t.kind);
}

// A result's workloads or events with the pool their texts are kept in.
template <typename List>
struct WithNames {
  List& list;
  driver::NamePool& names;
};

template <typename A, typename List>
void Io(A& a, WithNames<List>& l) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count();
    l.list.clear();
    for (uint64_t i = 0; i < n && a.ok(); ++i) {
      l.list.emplace_back();
      Io(a, l.list.back(), l.names);
    }
  } else {
    a.U64(l.list.size());
    for (auto& x : l.list) Io(a, x, l.names);
  }
}

template <typename A, typename T>
void Io(A& a, std::deque<T>& d) {
  if constexpr (A::kReading) {
    const uint64_t n = a.Count();
    d.clear();
    for (uint64_t i = 0; i < n && a.ok(); ++i) {
      d.emplace_back();
      Io(a, d.back());
    }
  } else {
    a.U64(d.size());
    for (auto& x : d) Io(a, x);
  }
}

}  // namespace arbiter::serial

namespace arbiter::sim {

using serial::Io;
using serial::Write;

namespace {
constexpr char kKind[] = "simulation";

Status CorruptState(const std::string& why) {
  return Status::Error(StatusCode::kInvalidArgument, "corrupt simulation state: " + why);
}

// The engine's snapshot, restored with the run's placement policy (and invariant checks).
Result<std::unique_ptr<engine::Engine>> ReadEngine(serial::Reader& r, const SimOptions& options) {
  std::string engine_bytes;
  Io(r, engine_bytes);
  if (!r.ok()) return CorruptState(r.error());
  engine::Engine::RestoreOptions ro;
  ro.placement = options.placement;
  if (options.check_invariants) ro.check_invariants = true;
  return engine::Engine::Restore(engine_bytes, ro);
}

// The work model's timers as saved.
struct SavedTimers {
  std::vector<driver::WorkTimers::Timer> live;
  uint64_t seq = 0;
  std::vector<uint64_t> generations;
};

// The recorder's collections: the reports' data so far.
void ReadRecorder(serial::Reader& r, driver::Recorder& rec) {
  Io(r, rec.works);
  Io(r, rec.usage);
  Io(r, rec.stop_text);
  serial::WithNames<std::vector<driver::SimWorkload>> workloads{rec.result.workload_list,
                                                                *rec.result.names};
  Io(r, workloads);
  serial::WithNames<std::deque<driver::SimEvent>> events{rec.result.event_list, *rec.result.names};
  Io(r, events);
  Io(r, rec.result.run_list);
}

// Every saved part agrees with the engine's count of workloads (`ids`): no record, timer, event
// or run of a workload it does not know.
Status CheckWorkloadCounts(uint64_t ids, uint64_t submitted, const driver::Recorder& rec,
                           const SavedTimers& t) {
  if (rec.works.size() != ids || rec.usage.size() != ids ||
      rec.result.workload_list.size() != ids || submitted != ids || t.generations.size() > ids)
    return CorruptState("its workload counts disagree");
  for (const auto& timer : t.live)
    if (engine::Value(timer.workload) >= ids)
      return CorruptState("a timer for an unknown workload");
  for (const auto& e : rec.result.event_list)
    if (e.workload != engine::kNoWorkload && engine::Value(e.workload) >= ids)
      return CorruptState("an event of an unknown workload");
  for (const auto& run : rec.result.run_list)
    if (engine::Value(run.workload) >= ids) return CorruptState("a run of an unknown workload");
  return Status::Ok();
}
}  // namespace

// arbiter.dev/exit-code (version 9): the pods' and the workloads' encodings hold none, so the
// state ends with the codes of the pods still to come and of every workload, in their orders
// (each as a std::vector<int32_t> encodes: its count, then the codes), read where they are.
void Simulation::WriteExitCodes(serial::Writer& w) const {
  if (release_submitted_) {
    pods_to_come_.WriteExitCodes(w);
  } else {
    w.U64(arrivals_.size() - next_arrival_);
    for (size_t i = next_arrival_; i < arrivals_.size(); ++i) Io(w, arrivals_[i]->sim.exit_code);
  }
  w.U64(recorder_->works.size());
  for (const auto& work : recorder_->works) Io(w, work.spec.exit_code);
}

namespace {
Status ReadExitCodes(serial::Reader& r, std::vector<Pod>& pods, driver::Recorder& rec) {
  std::vector<int32_t> to_come, works;
  Io(r, to_come);
  Io(r, works);
  if (!r.ok()) return CorruptState(r.error());
  if (to_come.size() != pods.size() || works.size() != rec.works.size())
    return CorruptState("its exit codes disagree with its pods");
  for (size_t i = 0; i < pods.size(); ++i) pods[i].sim.exit_code = to_come[i];
  for (size_t i = 0; i < works.size(); ++i) rec.works[i].spec.exit_code = works[i];
  return Status::Ok();
}
}  // namespace

std::string Simulation::Save() const {
  serial::Writer w;
  Write(w, engine_->Snapshot());
  // The manifests the reports read, and what is still to come.
  Write(w, m_->nodes);
  Write(w, m_->price_books);
  if (release_submitted_) {
    pods_to_come_.Write(w);
  } else {
    std::vector<Pod> remaining;
    for (size_t i = next_arrival_; i < arrivals_.size(); ++i) remaining.push_back(*arrivals_[i]);
    Write(w, remaining);
  }
  Write(w, static_cast<uint64_t>(submitted()));
  w.U64(changes_.size() - next_change_);
  for (size_t i = next_change_; i < changes_.size(); ++i) {
    Write(w, changes_[i].time);
    Write(w, changes_[i].add);
    Write(w, static_cast<uint64_t>(changes_[i].node - m_->nodes.data()));
  }
  // The loop.
  Write(w, now_);
  Write(w, paused_at_);
  Write(w, same_instant_);
  Write(w, steps_at_instant_);
  // The work model.
  Write(w, timers_.Live());
  Write(w, timers_.seq());
  Write(w, timers_.generations());
  // The recorder.
  Write(w, recorder_->works);
  Write(w, recorder_->usage);
  Write(w, recorder_->stop_text);
  driver::SimResult& result = recorder_->result;
  serial::WithNames<std::vector<driver::SimWorkload>> workloads{result.workload_list,
                                                                *result.names};
  Io(w, workloads);
  serial::WithNames<std::deque<driver::SimEvent>> events{result.event_list, *result.names};
  Io(w, events);
  Write(w, recorder_->result.run_list);
  WriteExitCodes(w);
  return serial::Seal(kKind, kStateVersion, w.bytes());
}

Result<std::unique_ptr<Simulation>> Simulation::Resume(std::string_view bytes,
                                                       const SimOptions& options) {
  if (options.until && (*options.until < 0 || *options.until > kMaxHorizon))
    return Status::Error("--until must be between 0s and " + FormatDuration(kMaxHorizon));
  uint32_t version = 0;
  auto body = serial::Unseal(bytes, kKind, 2, kStateVersion, &version);
  if (!body.ok()) return body.status();
  serial::Reader r(*body);
  r.flavorless = version < 3;
  r.constraintless = version < 4;
  r.schedless = version < 5;
  r.topologyless = version < 5;
  r.backoffless = version < 7;
  r.heldless = version < 8;
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->options_ = options;
  auto restored = ReadEngine(r, options);
  if (!restored.ok()) return restored.status();
  sim->engine_ = std::move(restored).value();
  sim->owned_ = std::make_unique<ManifestSet>();
  ManifestSet& m = *sim->owned_;
  Io(r, m.nodes);
  Io(r, m.price_books);
  Io(r, m.pods);
  uint64_t submitted = 0;
  Io(r, submitted);
  const uint64_t nchanges = r.Count();
  for (uint64_t i = 0; i < nchanges && r.ok(); ++i) {
    NodeChange c{};
    uint64_t node = 0;
    Io(r, c.time);
    Io(r, c.add);
    Io(r, node);
    if (node >= m.nodes.size()) return CorruptState("a node change names an unknown node");
    c.node = &m.nodes[node];
    sim->changes_.push_back(c);
  }
  Io(r, sim->now_);
  Io(r, sim->paused_at_);
  Io(r, sim->same_instant_);
  Io(r, sim->steps_at_instant_);
  SavedTimers timers;
  Io(r, timers.live);
  Io(r, timers.seq);
  Io(r, timers.generations);
  sim->recorder_ = std::make_unique<driver::Recorder>(&sim->timers_, true);
  ReadRecorder(r, *sim->recorder_);
  if (version >= 9)
    if (Status s = ReadExitCodes(r, m.pods, *sim->recorder_); !s.ok()) return s;
  if (!r.ok()) return CorruptState(r.error());
  if (!r.AtEnd()) return CorruptState("bytes after the end");
  const uint64_t ids = engine::Value(sim->engine_->next_workload_id());
  if (Status s = CheckWorkloadCounts(ids, submitted, *sim->recorder_, timers); !s.ok()) return s;
  sim->timers_.Restore(timers.live, timers.seq, std::move(timers.generations));
  sim->m_ = sim->owned_.get();
  sim->submitted_before_ = submitted;
  for (const auto& p : m.pods) sim->arrivals_.push_back(&p);
  sim->arrivals_total_ = sim->arrivals_.size();
  sim->engine_->SetSinks(sim->recorder_.get(), sim->recorder_.get());
  return sim;
}

}  // namespace arbiter::sim
