#include "sim/simulator.h"

#include <algorithm>
#include <map>

#include "driver/object_commands.h"

namespace arbiter::sim {

using engine::At;
using engine::EventType;
using engine::Value;
using engine::WorkFacts;
using engine::WorkloadId;

NodeWindow NodeWindowOf(const Node& node, Millis end) {
  NodeWindow w;
  w.from = std::min(node.sim.add_time, end);
  w.to = node.sim.remove_time ? std::min(*node.sim.remove_time, end) : end;
  w.to = std::max(w.to, w.from);
  return w;
}

bool NodePresentAt(const Node& node, Millis t) {
  return node.sim.add_time <= t && (!node.sim.remove_time || t < *node.sim.remove_time);
}

placement::WorkloadProfile ProfileOfPods(const std::vector<Pod>& pods) {
  placement::WorkloadProfile profile;
  std::map<std::string, size_t> idx;
  for (const auto& p : pods) {
    placement::PodShape s = placement::PodShape::FromRequests(p.EffectiveRequests());
    std::string k = s.ext.ToString() + "|" + std::to_string(s.cpu_milli) + "|" +
                    std::to_string(s.mem_bytes) + "|" + std::to_string(s.gpu_count) + "|" +
                    std::to_string(s.gpu_milli_per_device);
    auto it = idx.find(k);
    if (it == idx.end()) {
      idx[k] = profile.shapes.size();
      profile.shapes.push_back({s, 1});
    } else {
      profile.shapes[it->second].weight++;
    }
  }
  return profile;
}

Simulation::Simulation() = default;
Simulation::~Simulation() = default;

Status Simulation::Apply(engine::Command&& c) {
  if (options_.on_command) options_.on_command(c);
  return engine_->Apply(std::move(c));
}

Result<std::unique_ptr<Simulation>> Simulation::Create(const ManifestSet& m,
                                                       const SimOptions& options) {
  if (options.until && (*options.until < 0 || *options.until > kMaxHorizon))
    return Status::Error("--until must be between 0s and " + FormatDuration(kMaxHorizon));
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->m_ = &m;
  sim->options_ = options;
  Status s = sim->Setup();
  if (!s.ok()) return s;
  return sim;
}

Result<std::unique_ptr<Simulation>> Simulation::Create(ManifestSet&& m, const SimOptions& options) {
  if (options.until && (*options.until < 0 || *options.until > kMaxHorizon))
    return Status::Error("--until must be between 0s and " + FormatDuration(kMaxHorizon));
  std::unique_ptr<Simulation> sim(new Simulation());
  sim->owned_ = std::make_unique<ManifestSet>(std::move(m));
  sim->m_ = sim->owned_.get();
  sim->options_ = options;
  sim->release_submitted_ = true;
  Status s = sim->Setup();
  if (!s.ok()) return s;
  return sim;
}

Status Simulation::Setup() {
  const ManifestSet& m = *m_;
  engine::EngineOptions eo;
  eo.seed = options_.seed;
  eo.check_invariants = options_.check_invariants;
  eo.placement = options_.placement;
  eo.placement_profile = ProfileOfPods(m.pods);
  engine_ = std::make_unique<engine::Engine>(eo);
  recorder_ = std::make_unique<driver::Recorder>(&timers_, true);
  engine_->SetSinks(recorder_.get(), recorder_.get());
  // The pool at time 0: policy objects, then the nodes present from the start.
  auto apply = [&](engine::CommandOp op) { return Apply(engine::Command{0, std::move(op)}); };
  for (engine::CommandOp& op : driver::PolicyUpsertCommands(m))
    if (Status s = apply(std::move(op)); !s.ok()) return s;
  {
    std::vector<const Node*> sorted;
    for (const auto& n : m.nodes) sorted.push_back(&n);
    std::sort(sorted.begin(), sorted.end(),
              [](const Node* a, const Node* b) { return a->meta.name < b->meta.name; });
    for (size_t i = 1; i < sorted.size(); ++i)
      if (sorted[i]->meta.name == sorted[i - 1]->meta.name)
        return Status::Error("duplicate node " + sorted[i]->meta.name);
  }
  for (const auto& n : m.nodes)  // a node with a later arbiter.dev/add-time joins then
    if (n.sim.add_time <= 0)
      if (Status s = apply(engine::UpsertNode{n, 0}); !s.ok()) return s;

  // Arrivals in time order; equal times keep manifest order.
  arrivals_.reserve(m.pods.size());
  for (const auto& p : m.pods) arrivals_.push_back(&p);
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [](const Pod* a, const Pod* b) {
    return a->sim.submit_time < b->sim.submit_time;
  });
  arrivals_total_ = arrivals_.size();
  if (release_submitted_) {  // the pods go, in submission order, into the store of pods to come
    std::vector<Pod>& pods = owned_->pods;
    for (const Pod* p : arrivals_) {
      pods_to_come_.Push(*p);
      Pod gone = std::move(pods[static_cast<size_t>(p - pods.data())]);  // its strings and maps
    }
    std::vector<Pod>().swap(pods);
    std::vector<const Pod*>().swap(arrivals_);
  }
  recorder_->usage.reserve(arrivals_total_);
  recorder_->result.workload_list.reserve(arrivals_total_);
  // Pool changes from the Nodes' arbiter.dev/add-time and remove-time: at one instant removals
  // come before additions (a workload that loses its node may start on one that joins), each
  // group by node name; all of them before the arrivals and the scheduling cycle at that instant.
  for (const auto& n : m.nodes) {
    if (n.sim.add_time > 0) changes_.push_back({n.sim.add_time, true, &n});
    if (n.sim.remove_time) changes_.push_back({*n.sim.remove_time, false, &n});
  }
  std::sort(changes_.begin(), changes_.end(), [](const NodeChange& a, const NodeChange& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.add != b.add) return !a.add;
    return a.node->meta.name < b.node->meta.name;
  });
  return Status::Ok();
}

Status Simulation::Run(std::optional<Millis> until) {
  if (until && *until < paused_at_)
    return Status::Error("--until " + FormatDuration(*until) +
                         " is before the time the run was paused at (" +
                         FormatDuration(paused_at_) + ")");
  while (true) {
    std::optional<Millis> t;
    t = NextArrival();
    if (auto timer = timers_.Next()) t = t ? std::min(*t, *timer) : *timer;
    if (auto wake = engine_->NextWakeup()) t = t ? std::min(*t, *wake) : *wake;
    if (next_change_ < changes_.size())
      t = t ? std::min(*t, changes_[next_change_].time) : changes_[next_change_].time;
    if (!t) break;
    if (until && *t > *until) break;
    if (*t > kMaxHorizon)
      return Status::Error("virtual time would pass " + FormatDuration(kMaxHorizon) +
                           " (a submit-time or duration that large is almost certainly a mistake; "
                           "use --until to stop earlier)");
    now_ = std::max(now_, *t);
    if (now_ == same_instant_) {
      // Each step at one instant must change something (a victim exits, a workload binds); a
      // million of them means two decisions undo each other: a bug, reported instead of a hang.
      if (++steps_at_instant_ > 1000000)
        return Status::Error(
            "the engine made no progress at virtual time " + FormatDuration(now_) +
            " after a million steps (livelock); please report this with the manifests");
    } else {
      same_instant_ = now_;
      steps_at_instant_ = 0;
    }
    // The work model's timers due now: runs completing, victims exiting.
    while (auto due = timers_.PopDue(now_)) {
      if (Status s = Apply(driver::DueCommand(*due, recorder_->ExitCode(due->workload))); !s.ok())
        return s;
    }
    for (; next_change_ < changes_.size() && changes_[next_change_].time <= now_; ++next_change_) {
      const NodeChange& c = changes_[next_change_];
      if (c.add) {
        if (Status s = Apply(At(now_, engine::UpsertNode{*c.node, 0})); !s.ok()) return s;
      } else if (Status s = Apply(At(now_, engine::RemoveNode{c.node->meta.name})); !s.ok()) {
        return Status::Error("removing node " + c.node->meta.name + ": " + s.message());
      }
    }
    for (auto at = NextArrival(); at && *at <= now_; at = NextArrival())
      if (Status s = SubmitNext(); !s.ok()) return s;
    if (Status s = Apply(At(now_, engine::Tick{})); !s.ok()) return s;
    if (options_.progress && now_ / 3600000 != last_progress_) {
      last_progress_ = now_ / 3600000;
      options_.progress(now_, submitted(), total_pods());
    }
  }
  paused_at_ = until ? std::max(now_, *until) : now_;
  return Status::Ok();
}

std::optional<Millis> Simulation::NextArrival() const {
  if (next_arrival_ == arrivals_total_) return std::nullopt;
  return release_submitted_ ? pods_to_come_.FrontSubmitTime()
                            : arrivals_[next_arrival_]->sim.submit_time;
}

Status Simulation::SubmitNext() {
  // A pod the simulation owns comes out of its store and moves into the command (not copied).
  Pod owned;
  if (release_submitted_) {
    Result<Pod> next = pods_to_come_.Pop();
    if (!next.ok()) return next.status();
    owned = std::move(next).value();
  }
  const Pod& pod = release_submitted_ ? owned : *arrivals_[next_arrival_];
  ++next_arrival_;
  recorder_->Submitted(driver::WorkSpec::Of(pod), pod.sim.usage);
  // Its name for a message (short names stay in the strings themselves: no allocation).
  const std::string ns = pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_;
  const std::string name = pod.meta.name;
  Status s = release_submitted_ ? Apply(At(now_, engine::SubmitPod{std::move(owned), false, {}}))
                                : Apply(At(now_, engine::SubmitPod{pod, false, {}}));
  if (!s.ok()) return Status::Error("pod " + ns + "/" + name + ": " + s.message());
  return Status::Ok();
}

driver::SimResult Simulation::Finish(Millis end) {
  end = std::max(end, now_);
  // Timers due by the end still fire (no scheduling cycle follows).
  while (auto due = timers_.PopDue(end)) {
    (void)Apply(driver::DueCommand(*due, recorder_->ExitCode(due->workload)));
  }
  driver::SimResult& r = recorder_->result;
  for (auto& run : engine_->OpenRuns(end)) r.run_list.push_back(std::move(run));
  for (const auto& s : engine_->Workloads(end)) recorder_->Record(s);
  r.pool_policy = engine_->policy();
  r.elastic_quotas = engine_->elastic_quotas();
  r.flavor_usage = engine_->flavor_usages();
  r.end_time = end;
  driver::SimResult out = std::move(r);
  r.names = std::make_shared<driver::NamePool>();  // the moved-from result stays usable (and empty)
  return out;
}

Result<driver::SimResult> RunSimulation(const ManifestSet& m, const SimOptions& options) {
  auto sim = Simulation::Create(m, options);
  if (!sim.ok()) return sim.status();
  if (Status s = (*sim)->Run(options.until); !s.ok()) return s;
  const Millis end = options.until ? *options.until : (*sim)->now();
  return (*sim)->Finish(end);
}

}  // namespace arbiter::sim
