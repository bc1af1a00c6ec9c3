#include "sim/trace/trace_sim.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <set>
#include <variant>

#include "core/engine/engine.h"
#include "core/int128.h"
#include "core/placement/policies.h"
#include "core/placement/rng.h"
#include "core/policy_names.h"
#include "driver/object_commands.h"

namespace arbiter::sim::trace {

namespace pl = arbiter::placement;
using engine::At;
using engine::EventType;
using engine::Value;
using engine::WorkloadId;

namespace {

constexpr uint64_t kNodeStream = 0x6E6F6465ULL;  // "node"
constexpr uint64_t kPodStream = 0x706F6473ULL;   // "pods"
constexpr Millis kSecond = 1000;

template <typename T>
void Shuffle(std::vector<T>& v, pl::Xoshiro256& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

pl::WorkloadProfile ProfileOf(const PodTrace& trace) {
  std::vector<pl::PodShape> shapes;
  shapes.reserve(trace.pods.size());
  for (const auto& p : trace.pods) shapes.push_back(p.shape);
  return pl::BuildWorkloadProfile(shapes);
}

Node ToNode(const TraceNode& t) {
  Node n;
  n.meta.name = t.name;
  if (!t.model.empty()) n.meta.labels["nvidia.com/gpu.product"] = t.model;
  n.capacity.Set(kCpu, t.cpu_milli);
  n.capacity.Set(kMemory, t.memory_mib << 20);
  if (t.gpus > 0) n.capacity.Set(kGpu, int64_t{t.gpus} * pl::kMilliPerGpu);
  n.allocatable = n.capacity;
  return n;
}

// Follows the engine's outputs for the replay's numbers (allocation, placed pods, tenants) and
// hands them on to the driver::Recorder (the work model's timers; everything, with a policy file).
class Replay final : public engine::EventSink, public engine::RunSink {
 public:
  Replay(const std::vector<TraceNode>& nodes, const PodTrace& trace, const TraceRunOptions& o)
      : nodes_(nodes), trace_(trace), o_(o), recorder_(&timers_, o.policy_file != nullptr) {
    queue_ =
        o.unschedulable == TraceRunOptions::Unschedulable::kWait ||
        (o.unschedulable == TraceRunOptions::Unschedulable::kDefault && o.policy_file != nullptr);
    int32_t tenants = 1;
    for (const auto& p : trace.pods) tenants = std::max(tenants, p.tenant + 1);
    tenants_.assign(static_cast<size_t>(tenants), TimelineResult::Tenant{});
    times_seen_.assign(trace.pods.size(), 0);
  }

  Status Setup() {
    engine::EngineOptions eo;
    eo.seed = o_.seed;
    eo.check_invariants = o_.check_invariants;
    eo.placement = o_.policy;
    eo.placement_profile = ProfileOf(trace_);
    eo.fgd_popularity_percent = o_.typical_popularity_percent;
    eo.random_rescore_winner = true;  // the trace protocol's Random stream
    engine_ = std::make_unique<engine::Engine>(eo);
    engine_->SetSinks(this, this);
    const ManifestSet* pf = o_.policy_file;
    // The paper's simulator scores every feasible node; a policy file may say otherwise.
    PoolPolicy pp = pf && pf->pool_policy ? *pf->pool_policy : PoolPolicy{};
    if (pp.percentage_of_nodes_to_score == 0) pp.percentage_of_nodes_to_score = 100;
    if (Status s = Setup0(engine::UpsertPoolPolicy{pp}); !s.ok()) return s;
    if (pf) {  // the file's other policy objects, in the order of every driver
      for (engine::CommandOp& op : driver::PolicyUpsertCommands(*pf))
        if (!std::holds_alternative<engine::UpsertPoolPolicy>(op))
          if (Status s = Setup0(std::move(op)); !s.ok()) return s;
      for (const auto& x : pf->priority_classes)
        class_of_value_.emplace(x.value, x.meta.name);  // the first by name keeps a value
    }
    // The node order: a seeded shuffle (score ties go to the earlier node).
    std::vector<size_t> order(nodes_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (o_.shuffle_nodes) {
      pl::Xoshiro256 rng(o_.seed ^ kNodeStream);
      Shuffle(order, rng);
    }
    std::set<std::string> names;
    for (size_t k = 0; k < order.size(); ++k) {
      const TraceNode& t = nodes_[order[k]];
      if (!names.insert(t.name).second)
        return Status::Error("the node list has node " + t.name + " twice");
      gpu_capacity_ += int64_t{t.gpus} * pl::kMilliPerGpu;
      cpu_capacity_ += t.cpu_milli;
      if (Status s = Setup0(engine::UpsertNode{ToNode(t), static_cast<int64_t>(k)}); !s.ok())
        return s;
    }
    return Status::Ok();
  }

  // Submits trace pod `k` at `now` and runs its scheduling cycle; returns the node it started on
  // ("" if it did not start).
  Status Arrive(uint32_t k, Millis now, std::string* node) {
    const TracePod& t = trace_.pods[k];
    Pod pod;
    uint32_t& seen = times_seen_[k];
    pod.meta.name = ++seen == 1 ? t.name : t.name + "-" + std::to_string(seen);
    pod.meta.namespace_ = "tenant-" + std::to_string(t.tenant);
    Container c;
    c.name = "main";
    c.requests.Set(kCpu, t.cpu_milli);
    c.requests.Set(kMemory, t.memory_mib << 20);
    if (t.num_gpu >= 1) c.requests.Set(kGpu, t.shape.gpu_milli_total());
    pod.containers.push_back(std::move(c));
    if (o_.policy_file) {
      if (auto pc = class_of_value_.find(t.priority); pc != class_of_value_.end())
        pod.priority_class_name = pc->second;
      else
        pod.priority = t.priority;
    } else {
      pod.priority = t.priority;
      pod.preemption_policy = PreemptionPolicy::kNever;  // the paper's simulator does not preempt
    }
    driver::WorkSpec spec;
    if (mode_timeline_) spec.duration = duration_ms_[k];
    if (mode_timeline_ && o_.time_limit_percent > 0) {
      const int64_t limit =
          (static_cast<int64_t>(duration_ms_[k]) * o_.time_limit_percent + 99) / 100;
      pod.active_deadline = std::max<int64_t>(1, (limit + 999) / 1000) * 1000;
    }
    if (mode_timeline_ && o_.checkpoint_interval > 0 && duration_ms_[k] > o_.checkpoint_interval) {
      pod.sim.checkpoint_interval = spec.checkpoint_interval = o_.checkpoint_interval;
      pod.sim.shutdown_time = spec.shutdown = o_.checkpoint_shutdown;
    }
    current_ = engine_->next_workload_id();
    current_node_.clear();
    pod_of_.push_back(k);
    started_.push_back(0);
    recorder_.Submitted(spec, std::nullopt);
    engine::SubmitPod submit{std::move(pod), !queue_,
                             t.num_gpu >= 1 ? t.gpu_spec : std::vector<std::string>{}};
    if (Status s = engine_->Apply(At(now, std::move(submit))); !s.ok()) return s;
    if (Status s = engine_->Apply(At(now, engine::Tick{})); !s.ok()) return s;
    *node = current_node_;
    current_ = engine::kNoWorkload;
    if (o_.on_decision) o_.on_decision(k, *node);
    return Status::Ok();
  }

  // ------------------------------------------------------------ sinks
  void OnEvent(const engine::Event& e) override {
    recorder_.OnEvent(e);
    if (e.type != EventType::kScheduled) return;
    const size_t id = Value(e.workload);
    const TracePod& p = trace_.pods[pod_of_[id]];
    gpu_allocated_ += p.gpu_milli_total();
    cpu_allocated_ += p.cpu_milli;
    ++running_;
    if (!started_[id]) {
      started_[id] = 1;
      ++placed_;
    }
    if (e.workload == current_) current_node_ = e.node;
  }
  void OnRun(const engine::RunRecord& run) override {
    recorder_.OnRun(run);
    const TracePod& p = trace_.pods[pod_of_[Value(run.workload)]];
    gpu_allocated_ -= p.gpu_milli_total();
    cpu_allocated_ -= p.cpu_milli;
    --running_;
    TimelineResult::Tenant& tu = tenants_[static_cast<size_t>(std::max(0, p.tenant))];
    tu.gpu_milli_seconds +=
        static_cast<int128>(p.gpu_milli_total()) * (run.end - run.start) / kSecond;
    tu.cpu_milli_seconds += static_cast<int128>(p.cpu_milli) * (run.end - run.start) / kSecond;
  }
  void OnFinished(const engine::WorkloadStatus& s) override { recorder_.OnFinished(s); }
  bool WantsFinalStatus() const override { return recorder_.WantsFinalStatus(); }

  // The work model's timers due by `now`, each applied at its time, between before(time) and
  // after(time).
  template <typename Before, typename After>
  Status FireDue(Millis now, Before before, After after) {
    while (auto due = timers_.PopDue(now)) {
      before(due->time);
      if (Status s = engine_->Apply(driver::DueCommand(*due)); !s.ok()) return s;
      after(due->time);
    }
    return Status::Ok();
  }

  // The policy run's report: the pool as manifests, and what the engine did up to `end`.
  std::shared_ptr<PolicyRun> Finish(Millis end) {
    if (!o_.policy_file) return nullptr;
    auto run = std::make_shared<PolicyRun>();
    ManifestSet& m = run->manifests;
    const ManifestSet& pf = *o_.policy_file;
    m.namespaces = pf.namespaces;
    m.resource_quotas = pf.resource_quotas;
    m.limit_ranges = pf.limit_ranges;
    m.priority_classes = pf.priority_classes;
    m.pdbs = pf.pdbs;
    m.pool_policy = pf.pool_policy;
    m.elastic_quotas = pf.elastic_quotas;
    m.price_books = pf.price_books;
    m.qos = pf.qos;
    for (const auto& t : nodes_) m.nodes.push_back(ToNode(t));
    driver::SimResult& r = recorder_.result;
    for (auto& o : engine_->OpenRuns(end)) r.run_list.push_back(std::move(o));
    for (const auto& s : engine_->Workloads(end)) recorder_.Record(s);
    r.pool_policy = engine_->policy();
    r.end_time = end;
    run->result = std::move(r);
    return run;
  }

  engine::Engine& engine() { return *engine_; }
  driver::WorkTimers& timers() { return timers_; }
  bool queue() const { return queue_; }
  int64_t gpu_capacity() const { return gpu_capacity_; }
  int64_t cpu_capacity() const { return cpu_capacity_; }
  int64_t gpu_allocated() const { return gpu_allocated_; }
  int64_t cpu_allocated() const { return cpu_allocated_; }
  int64_t running() const { return running_; }
  int64_t placed() const { return placed_; }
  bool started(size_t id) const { return started_[id] != 0; }
  uint32_t pod_of(size_t id) const { return pod_of_[id]; }
  size_t submitted() const { return pod_of_.size(); }
  std::vector<TimelineResult::Tenant>& tenants() { return tenants_; }
  void SetTimeline(std::vector<Millis> durations) {
    mode_timeline_ = true;
    duration_ms_ = std::move(durations);
  }

 private:
  Status Setup0(engine::CommandOp op) { return engine_->Apply(engine::Command{0, std::move(op)}); }

  const std::vector<TraceNode>& nodes_;
  const PodTrace& trace_;
  const TraceRunOptions& o_;
  driver::WorkTimers timers_;
  driver::Recorder recorder_;
  std::unique_ptr<engine::Engine> engine_;
  bool queue_ = false;
  bool mode_timeline_ = false;
  std::vector<Millis> duration_ms_;                // by trace pod (timeline)
  std::map<int32_t, std::string> class_of_value_;  // policy file: PriorityClass by value
  std::vector<uint32_t> times_seen_;               // trace pod -> submissions so far (names)
  std::vector<uint32_t> pod_of_;                   // WorkloadId -> trace pod
  std::vector<uint8_t> started_;                   // WorkloadId -> ever started
  std::vector<TimelineResult::Tenant> tenants_;
  WorkloadId current_ = engine::kNoWorkload;
  std::string current_node_;
  int64_t gpu_capacity_ = 0, cpu_capacity_ = 0, gpu_allocated_ = 0, cpu_allocated_ = 0;
  int64_t running_ = 0, placed_ = 0;
};

}  // namespace

double SaturateResult::gpu_allocation_at_100() const {
  return cluster_gpu_milli > 0 ? static_cast<double>(allocated_gpu_milli_at_100) / cluster_gpu_milli
                               : 0;
}
double SaturateResult::unallocated_gpu_share_at_end() const {
  return cluster_gpu_milli > 0 ? 1.0 - static_cast<double>(allocated_gpu_milli) / cluster_gpu_milli
                               : 0;
}
double TimelineResult::average_gpu_allocation() const {
  if (cluster_gpu_milli <= 0 || end_s <= start_s) return 0;
  return static_cast<double>(gpu_milli_seconds) / static_cast<double>(cluster_gpu_milli) /
         static_cast<double>(end_s - start_s);
}

namespace {

// A run's result head: the placement policy, the seed and the cluster's capacity.
template <typename RunResult>
void SetRunHead(RunResult& r, Replay& replay, const TraceRunOptions& o) {
  r.policy = PolicyKey(replay.engine().policy().placement);
  r.seed = o.seed;
  r.cluster_gpu_milli = replay.gpu_capacity();
  r.cluster_cpu_milli = replay.cpu_capacity();
}

// The saturation run's submission list (indices into trace.pods): the pods in a random order,
// cut or extended by random picks until their GPU demand is about `target` GPU milli.
Result<std::vector<uint32_t>> SubmissionList(const PodTrace& trace, int64_t target,
                                             pl::Xoshiro256& rng) {
  std::vector<uint32_t> order(trace.pods.size());
  int64_t demand = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = static_cast<uint32_t>(i);
    demand += trace.pods[i].gpu_milli_total();
  }
  if (demand == 0)
    return Result<std::vector<uint32_t>>::Error("saturate: the pod list asks for no GPUs");
  Shuffle(order, rng);
  if (demand > target) {
    while (demand > target && !order.empty()) {
      const size_t k = rng.Below(order.size());
      demand -= trace.pods[order[k]].gpu_milli_total();
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
  } else {
    while (true) {
      const uint32_t k = static_cast<uint32_t>(rng.Below(trace.pods.size()));
      const int64_t g = trace.pods[k].gpu_milli_total();
      if (demand + g > target) break;
      demand += g;
      order.push_back(k);
    }
  }
  return order;
}

// Victims exiting (all at time 0: nothing departs), then the queue again for their preemptors.
Status SettleAtZero(Replay& replay) {
  auto nothing = [](Millis) {};
  for (int64_t steps = 0; replay.timers().Next() && *replay.timers().Next() <= 0; ++steps) {
    if (steps > 1000000)
      return Status::Error("saturate: no progress after a million steps (livelock)");
    if (Status s = replay.FireDue(0, nothing, nothing); !s.ok()) return s;
    if (replay.engine().has_pending())
      if (Status s = replay.engine().Apply(At(0, engine::Tick{})); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<SaturateResult> RunSaturate(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (trace.pods.empty()) return Result<SaturateResult>::Error("saturate: the pod list is empty");
  if (o.target_permille <= 0)
    return Result<SaturateResult>::Error("saturate: --target must be > 0");
  Replay replay(nodes, trace, o);
  if (Status s = replay.Setup(); !s.ok()) return s;
  SaturateResult r;
  SetRunHead(r, replay, o);
  if (r.cluster_gpu_milli == 0)
    return Result<SaturateResult>::Error("saturate: the cluster has no GPUs");
  pl::Xoshiro256 rng(o.seed ^ kPodStream);
  const int64_t target =
      static_cast<int64_t>(static_cast<int128>(r.cluster_gpu_milli) * o.target_permille / 1000);
  auto order = SubmissionList(trace, target, rng);
  if (!order.ok()) return order.status();

  int64_t arrived = 0;
  bool reached_100 = false;
  int64_t next_percent = 1;
  std::string node;
  for (uint32_t k : *order) {
    const TracePod& p = trace.pods[k];
    ++r.pods_submitted;
    arrived += p.gpu_milli_total();
    if (Status s = replay.Arrive(k, 0, &node); !s.ok()) return s;
    if (Status s = SettleAtZero(replay); !s.ok()) return s;
    while (arrived * 100 >= next_percent * r.cluster_gpu_milli) {
      r.curve.push_back({next_percent * r.cluster_gpu_milli / 100, replay.gpu_allocated()});
      ++next_percent;
    }
    if (!reached_100 && arrived >= r.cluster_gpu_milli) {
      reached_100 = true;
      r.allocated_gpu_milli_at_100 = replay.gpu_allocated();
    }
  }
  r.pods_placed = replay.placed();
  r.pods_failed = r.pods_submitted - r.pods_placed;
  for (size_t id = 0; id < replay.submitted(); ++id)
    if (!replay.started(id) && trace.pods[replay.pod_of(id)].shape.gpu_count > 0)
      ++r.gpu_pods_failed;
  r.arrived_gpu_milli = arrived;
  r.allocated_gpu_milli = replay.gpu_allocated();
  r.allocated_cpu_milli = replay.cpu_allocated();
  if (!reached_100) r.allocated_gpu_milli_at_100 = r.allocated_gpu_milli;
  r.policy_run = replay.Finish(0);
  return r;
}

namespace {

struct TraceArrival {
  int64_t t;  // seconds
  uint32_t pod;
};

// The pods with a creation time, in arrival order; *duration learns each one's run time
// (scheduled or created until deleted).
std::vector<TraceArrival> TimelineArrivals(const PodTrace& trace, std::vector<Millis>* duration) {
  std::vector<TraceArrival> arrivals;
  for (size_t i = 0; i < trace.pods.size(); ++i) {
    const TracePod& p = trace.pods[i];
    if (!p.creation_s) continue;  // no arrival time: not part of the replay
    int64_t end = p.deletion_s.value_or(*p.creation_s);
    int64_t start = p.scheduled_s.value_or(*p.creation_s);
    (*duration)[i] = std::max<int64_t>(0, end - start) * kSecond;
    arrivals.push_back({*p.creation_s, static_cast<uint32_t>(i)});
  }
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const TraceArrival& a, const TraceArrival& b) { return a.t < b.t; });
  return arrivals;
}

// The timeline's clock: the GPU allocation integrated over time, and a point recorded every
// `stride` events (about a thousand over the replay).
struct TimelineClock {
  Replay& replay;
  TimelineResult& r;
  Millis last_t;
  size_t stride;
  int128 gpu_milli_ms = 0;
  size_t events = 0;

  void Advance(Millis t) {
    gpu_milli_ms += static_cast<int128>(replay.gpu_allocated()) * (t - last_t);
    last_t = t;
  }
  void Record(Millis t) {
    if (events++ % stride == 0)
      r.points.push_back(
          {t / kSecond, replay.gpu_allocated(), replay.cpu_allocated(), replay.running()});
  }
};

// Replays the arrivals and what follows them in time order: departures and victims exiting, each
// at its time, then the arrivals at that time, one scheduling cycle each (a pod that ends at once
// departs before the next arrival); else the queue's turn.
Status ReplayTimeline(Replay& replay, const std::vector<TraceArrival>& arrivals,
                      TimelineClock& clock, TimelineResult& r) {
  auto advance = [&](Millis t) { clock.Advance(t); };
  auto released = [&](Millis t) { clock.Record(t); };
  auto fire = [&](Millis up_to) { return replay.FireDue(up_to, advance, released); };
  size_t a = 0;
  Millis same_instant = -1;
  int64_t steps = 0;
  std::string node;
  while (true) {
    std::optional<Millis> t;
    if (a < arrivals.size()) t = arrivals[a].t * kSecond;
    if (auto timer = replay.timers().Next()) t = t ? std::min(*t, *timer) : *timer;
    if (auto wake = replay.engine().NextWakeup()) t = t ? std::min(*t, *wake) : *wake;
    if (!t) break;
    if (*t == same_instant) {
      if (++steps > 1000000)
        return Status::Error("timeline: no progress after a million steps (livelock)");
    } else {
      same_instant = *t;
      steps = 0;
    }
    if (Status s = fire(*t); !s.ok()) return s;
    if (a < arrivals.size() && arrivals[a].t * kSecond == *t) {
      for (; a < arrivals.size() && arrivals[a].t * kSecond == *t; ++a) {
        if (Status s = fire(*t); !s.ok()) return s;
        clock.Advance(*t);
        ++r.pods_submitted;
        if (Status s = replay.Arrive(arrivals[a].pod, *t, &node); !s.ok()) return s;
        r.peak_allocated_gpu_milli = std::max(r.peak_allocated_gpu_milli, replay.gpu_allocated());
        clock.Record(*t);
      }
    } else if (const auto wake = replay.engine().NextWakeup();
               replay.engine().has_pending() || (wake && *wake <= *t)) {
      // Room was freed or a wake-up is due (a requeued victim's back-off ends): the queue's turn.
      clock.Advance(*t);
      if (Status s = replay.engine().Apply(At(*t, engine::Tick{})); !s.ok()) return s;
      r.peak_allocated_gpu_milli = std::max(r.peak_allocated_gpu_milli, replay.gpu_allocated());
    }
  }
  return Status::Ok();
}

// Per tenant the pods placed and failed (never started); the failures by priority tier too.
void TallyTenants(Replay& replay, const PodTrace& trace, TimelineResult& r) {
  r.tenants = replay.tenants();
  for (size_t id = 0; id < replay.submitted(); ++id) {
    const TracePod& p = trace.pods[replay.pod_of(id)];
    TimelineResult::Tenant& tu = r.tenants[static_cast<size_t>(std::max(0, p.tenant))];
    if (replay.started(id)) {
      ++tu.pods_placed;
      continue;
    }
    ++tu.pods_failed;
    const int tier = p.priority == 1000 ? 0 : p.priority == 5000 ? 1 : p.priority == 10000 ? 2 : 3;
    ++r.failed_by_priority_tier[static_cast<size_t>(tier)];
  }
}

}  // namespace

Result<TimelineResult> RunTimeline(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (!trace.has_times)
    return Result<TimelineResult>::Error(
        "timeline: the pod list has no creation_time/deletion_time/scheduled_time columns "
        "(use --mode saturate)");
  Replay replay(nodes, trace, o);
  if (Status s = replay.Setup(); !s.ok()) return s;
  TimelineResult r;
  SetRunHead(r, replay, o);
  r.failed_by_priority_tier.assign(4, 0);
  std::vector<Millis> duration(trace.pods.size(), 0);
  const std::vector<TraceArrival> arrivals = TimelineArrivals(trace, &duration);
  if (arrivals.empty())
    return Result<TimelineResult>::Error("timeline: no pod has a creation_time");
  replay.SetTimeline(std::move(duration));

  r.start_s = arrivals.front().t;
  TimelineClock clock{replay, r, r.start_s * kSecond, std::max<size_t>(1, arrivals.size() / 1000)};
  if (Status s = ReplayTimeline(replay, arrivals, clock, r); !s.ok()) return s;
  r.end_s = clock.last_t / kSecond;
  r.gpu_milli_seconds = clock.gpu_milli_ms / kSecond;
  // Pods that never started failed.
  r.pods_placed = replay.placed();
  r.pods_failed = r.pods_submitted - r.pods_placed;
  TallyTenants(replay, trace, r);
  const TimelinePoint last{r.end_s, replay.gpu_allocated(), replay.cpu_allocated(),
                           replay.running()};
  if (r.points.empty() || r.points.back().time_s != last.time_s ||
      r.points.back().allocated_gpu_milli != last.allocated_gpu_milli)
    r.points.push_back(last);
  r.policy_run = replay.Finish(clock.last_t);
  return r;
}

Result<std::vector<PolicySummary>> ComparePolicies(const std::vector<TraceNode>& nodes,
                                                   const PodTrace& trace,
                                                   const std::vector<PlacementPolicyName>& policies,
                                                   const std::vector<uint64_t>& seeds,
                                                   const TraceRunOptions& base,
                                                   const ProgressFn& progress) {
  if (policies.empty() || seeds.empty())
    return Result<std::vector<PolicySummary>>::Error(
        "compare: need at least one policy and one seed");
  std::vector<PolicySummary> out;
  const size_t total = policies.size() * seeds.size();
  size_t done = 0;
  for (PlacementPolicyName p : policies) {
    std::vector<SaturateResult> runs;
    for (uint64_t seed : seeds) {
      TraceRunOptions o = base;
      o.policy = p;
      o.seed = seed;
      if (progress) progress(PolicyKey(p), seed, done, total);
      auto r = RunSaturate(nodes, trace, o);
      if (!r.ok()) return r.status();
      runs.push_back(std::move(r).value());
      ++done;
    }
    out.push_back(SummariseRuns(PolicyKey(p), seeds, std::move(runs)));
  }
  if (progress) progress("", 0, done, total);
  return out;
}

PolicySummary SummariseRuns(std::string policy, std::vector<uint64_t> seeds,
                            std::vector<SaturateResult> runs) {
  PolicySummary s;
  s.policy = std::move(policy);
  s.seeds = std::move(seeds);
  s.runs = std::move(runs);
  if (s.runs.empty()) return s;
  {
    double a = 0, u = 0, f = 0;
    s.unallocated_gpu_share_min = 1;
    s.unallocated_gpu_share_max = 0;
    for (const auto& r : s.runs) {
      a += r.gpu_allocation_at_100();
      const double un = r.unallocated_gpu_share_at_end();
      u += un;
      f += static_cast<double>(r.pods_failed);
      s.unallocated_gpu_share_min = std::min(s.unallocated_gpu_share_min, un);
      s.unallocated_gpu_share_max = std::max(s.unallocated_gpu_share_max, un);
    }
    const double n = static_cast<double>(s.runs.size());
    s.gpu_allocation_at_100 = a / n;
    s.unallocated_gpu_share_at_end = u / n;
    s.pods_failed = f / n;
  }
  return s;
}

Result<PlacementPolicyName> ParsePolicyName(std::string_view text) {
  return ParsePlacementPolicy(text);
}

std::string PolicyKey(PlacementPolicyName p) { return PlacementPolicyKey(p); }

Result<std::vector<uint64_t>> ParseSeeds(std::string_view text) {
  using R = Result<std::vector<uint64_t>>;
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  auto num = [](std::string_view s, uint64_t* v) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  const std::string syntax =
      " (expected a seed like 42, a range like 42-51, or a comma list like 1,5,10-12)";
  const std::string too_many =
      "more than " + std::to_string(kMaxSeeds) + " seeds in '" + std::string(text) +
      "' (each seed is one saturate run per policy; at most " + std::to_string(kMaxSeeds) + ")";
  if (trim(text).empty()) return R::Error("no seed given" + syntax);
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view part = trim(text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (part.empty())
      return R::Error("empty item in seed list '" + std::string(text) + "'" + syntax);
    size_t dash = part.find('-');
    uint64_t a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!num(part, &a))
        return R::Error("'" + std::string(part) + "' is not a seed (a whole number >= 0)" + syntax);
      out.push_back(a);
    } else {
      if (dash == 0)
        return R::Error("'" + std::string(part) + "': seeds are not negative" + syntax);
      const std::string_view first = trim(part.substr(0, dash)), last = trim(part.substr(dash + 1));
      if (!num(first, &a) || !num(last, &b))
        return R::Error("'" + std::string(part) + "' is not a seed range FIRST-LAST" + syntax);
      if (b < a)
        return R::Error("seed range '" + std::string(part) +
                        "' is reversed: FIRST must not be greater than LAST (did you mean " +
                        std::string(last) + "-" + std::string(first) + "?)");
      if (b - a >= kMaxSeeds || out.size() + (b - a + 1) > kMaxSeeds) return R::Error(too_many);
      for (uint64_t s = a;; ++s) {
        out.push_back(s);
        if (s == b) break;
      }
    }
    if (out.size() > kMaxSeeds) return R::Error(too_many);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<uint64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      return R::Error("seed " + std::to_string(sorted[i]) + " is given more than once in '" +
                      std::string(text) + "' (each seed once)");
  return out;
}

Result<int64_t> ParseTargetPermille(std::string_view text) {
  using R = Result<int64_t>;
  const std::string shown(text);
  const std::string syntax =
      " (expected a ratio of the cluster's GPUs like 1.3, or a percentage like 130%; "
      "between 0 and 10, i.e. 1000%)";
  std::string_view t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  if (t.empty()) return R::Error("no target given" + syntax);
  int128 whole = 0, frac = 0, denom = 1;
  size_t i = 0;
  bool digits = false;
  for (; i < t.size() && t[i] != '.'; ++i) {
    if (t[i] < '0' || t[i] > '9') return R::Error("'" + shown + "' is not a number" + syntax);
    digits = true;
    if (whole < static_cast<int128>(1) << 64) whole = whole * 10 + (t[i] - '0');
  }
  if (i < t.size()) {
    for (++i; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return R::Error("'" + shown + "' is not a number" + syntax);
      digits = true;
      if (denom >= 1000000) {
        if (t[i] != '0')
          return R::Error("'" + shown + "' is more precise than " +
                          (percent ? "0.1%" : std::string("0.001")) + syntax);
        continue;
      }
      frac = frac * 10 + (t[i] - '0');
      denom *= 10;
    }
  }
  if (!digits) return R::Error("'" + shown + "' is not a number" + syntax);
  const int64_t scale = percent ? 10 : 1000;  // per mille per unit written
  if ((frac * scale) % denom != 0)
    return R::Error("'" + shown + "' is more precise than " +
                    (percent ? "0.1%" : std::string("0.001")) + syntax);
  const int128 permille = whole * scale + frac * scale / denom;
  if (permille <= 0) return R::Error("the target must be above 0, got '" + shown + "'" + syntax);
  if (permille > kMaxTargetPermille) {
    if (!percent && whole * 10 <= kMaxTargetPermille) {
      std::string pct = std::to_string(static_cast<int64_t>(permille / 10));
      if (permille % 10 != 0) pct += "." + std::to_string(static_cast<int>(permille % 10));
      return R::Error("'" + shown + "' would mean " + shown + " x the cluster's GPUs (" + pct +
                      "%): a bare number is a ratio, at most 10; did you mean " + shown + "%?");
    }
    return R::Error("'" + shown + "' is above the limit of 10 x the cluster's GPUs (1000%)" +
                    syntax);
  }
  return static_cast<int64_t>(permille);
}

}  // namespace arbiter::sim::trace
