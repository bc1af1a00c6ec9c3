#include "core/engine/engine.h"

#include <algorithm>
#include <utility>

#include "core/engine/state.h"
#include "core/overloaded.h"

namespace arbiter::engine {

const char* ToString(Phase p) {
  switch (p) {
    case Phase::kPending:
      return "Pending";
    case Phase::kRunning:
      return "Running";
    case Phase::kTerminating:
      return "Running";  // still holds its node until it exits
    case Phase::kSucceeded:
      return "Succeeded";
    case Phase::kPreempted:
      return "Preempted";
    case Phase::kRejected:
      return "Rejected";
    case Phase::kFailed:
      return "Failed";
    case Phase::kDeleted:
      return "Deleted";
  }
  return "?";
}

const char* ToString(EventType t) {
  switch (t) {
    case EventType::kSubmitted:
      return "Submitted";
    case EventType::kQuotaExceeded:
      return "QuotaExceeded";
    case EventType::kFailedScheduling:
      return "FailedScheduling";
    case EventType::kRejected:
      return "Rejected";
    case EventType::kScheduled:
      return "Scheduled";
    case EventType::kPreempting:
      return "Preempting";
    case EventType::kPreempted:
      return "Preempted";
    case EventType::kTerminated:
      return "Terminated";
    case EventType::kRequeued:
      return "Requeued";
    case EventType::kCancelled:
      return "Cancelled";
    case EventType::kBorrowed:
      return "Borrowed";
    case EventType::kReclaimed:
      return "Reclaimed";
    case EventType::kCompleted:
      return "Completed";
    case EventType::kNodeAdded:
      return "NodeAdded";
    case EventType::kNodeRemoved:
      return "NodeRemoved";
    case EventType::kFailed:
      return "Failed";
    case EventType::kDeleted:
      return "Deleted";
  }
  return "?";
}

Status State::Tick() {
  started = true;
  while (!wakeups.empty() && wakeups.top() <= now) {
    wakeups.pop();
    freed = true;  // re-run the whole queue: a victim became old enough
  }
  ReleaseDue();         // spec.latency: Slurm's clean-up ends, requeued jobs become eligible
  EvictTaintedDue();    // NoExecute taints tolerated for tolerationSeconds
  CycleNominalFirst();  // RunCycle, borrowers after the workloads within their min
  while (RequeueForTopology()) CycleNominalFirst();  // each round placed something: bounded
  return Status::Ok();
}

Engine::Engine(EngineOptions options) : s_(std::make_unique<State>(std::move(options))) {}
Engine::~Engine() = default;

Status Engine::Apply(const Command& command) {
  Command copy = command;
  return Apply(std::move(copy));
}

Status Engine::Apply(Command&& command) {
  State& s = *s_;
  struct Applying {  // set while references into the workload table are held (Capture)
    bool& flag;
    const bool was = std::exchange(flag, true);
    ~Applying() { flag = was; }
  } applying{s.applying};
  s.now = std::max(s.now, command.time);
  // Nodes appended before the engine starts are put in order once, when anything else happens.
  const bool initial_node = !s.started && std::holds_alternative<UpsertNode>(command.op);
  if (!initial_node) s.EnsureNodes();
  Status st = std::visit(
      Overloaded{
          [&](Tick&) { return s.Tick(); },
          [&](SubmitPod& c) { return s.Submit(std::move(c)); },
          [&](DeletePod& c) { return s.Delete(c); },
          [&](PodFinished& c) { return s.Finished(c); },
          [&](VictimExited& c) { return s.VictimGone(c); },
          [&](UpsertNode& c) { return s.UpsertNodeCmd(std::move(c)); },
          [&](RemoveNode& c) { return s.RemoveNodeCmd(c); },
          [&](UpsertNamespace& c) { return s.UpsertNamespaceCmd(std::move(c)); },
          [&](DeleteNamespace& c) { return s.DeleteNamespaceCmd(c); },
          [&](UpsertResourceQuota& c) { return s.UpsertResourceQuotaCmd(std::move(c)); },
          [&](DeleteResourceQuota& c) { return s.DeleteResourceQuotaCmd(c); },
          [&](UpsertLimitRange& c) { return s.UpsertLimitRangeCmd(std::move(c)); },
          [&](DeleteLimitRange& c) { return s.DeleteLimitRangeCmd(c); },
          [&](UpsertPriorityClass& c) { return s.UpsertPriorityClassCmd(std::move(c)); },
          [&](DeletePriorityClass& c) { return s.DeletePriorityClassCmd(c); },
          [&](UpsertPodDisruptionBudget& c) { return s.UpsertPdbCmd(std::move(c)); },
          [&](DeletePodDisruptionBudget& c) { return s.DeletePdbCmd(c); },
          [&](UpsertElasticQuota& c) { return s.UpsertElasticQuotaCmd(std::move(c)); },
          [&](DeleteElasticQuota& c) { return s.DeleteElasticQuotaCmd(c); },
          [&](UpsertQoS& c) { return s.UpsertQoSCmd(std::move(c)); },
          [&](DeleteQoS& c) { return s.DeleteQoSCmd(c); },
          [&](UpsertPoolPolicy& c) { return s.UpsertPoolPolicyCmd(std::move(c.policy)); },
          [&](DeletePoolPolicy&) { return s.UpsertPoolPolicyCmd(std::nullopt); },
          [&](UpsertPriceBook& c) { return s.UpsertPriceBookCmd(std::move(c)); },
          [&](DeletePriceBook& c) { return s.DeletePriceBookCmd(c); },
          [&](SetPodDeadline& c) { return s.SetPodDeadlineCmd(c); },
          [&](SetPodLabels& c) { return s.SetPodLabelsCmd(c); },
      },
      command.op);
  s.Flush();
  if (s.options.check_invariants && !initial_node) {
    Status inv = s.CheckInvariants();
    ARB_CHECK_MSG(inv.ok(), std::string(CommandName(command)) + ": " + inv.message());
  }
  return st;
}

void Engine::SetSinks(EventSink* events, RunSink* runs) {
  s_->events_sink = events;
  s_->runs_sink = runs;
}

Millis Engine::now() const { return s_->now; }
bool Engine::started() const { return s_->started; }

std::optional<Millis> Engine::NextWakeup() const {
  if (s_->wakeups.empty()) return std::nullopt;
  return s_->wakeups.top();
}

WorkloadId Engine::next_workload_id() const { return static_cast<WorkloadId>(s_->next_id); }

std::optional<std::string> Engine::NeverAdmissible(const Pod& pod) const {
  return s_->NeverAdmissible(pod);
}

std::optional<WorkloadId> Engine::Find(std::string_view namespace_, std::string_view name) const {
  std::string key =
      std::string(namespace_.empty() ? "default" : namespace_) + "/" + std::string(name);
  auto it = s_->by_key.find(key);
  if (it == s_->by_key.end()) return std::nullopt;
  return s_->workloads[it->second].id;
}

std::optional<WorkloadStatus> Engine::Get(WorkloadId id) const {
  const Slot s = s_->SlotOf(id);
  if (s == kNoSlot) return std::nullopt;
  return s_->StatusOf(s_->workloads[s]);
}

std::optional<placement::GpuAssignment> Engine::GpusOf(WorkloadId id) const {
  const Slot s = s_->SlotOf(id);
  if (s == kNoSlot) return std::nullopt;
  const Workload& w = s_->workloads[s];
  if (w.node == kNoNode) return placement::GpuAssignment{};
  return w.gpus;
}

std::vector<WorkloadStatus> Engine::WorkloadsOn(std::string_view node) const {
  std::vector<WorkloadStatus> out;
  auto id = s_->node_ids.find(std::string(node));
  if (id == s_->node_ids.end() || !s_->node_info[id->second].present) return out;
  const NodeLive& live = s_->node_live[s_->node_info[id->second].pos];
  out.reserve(live.workloads.size());
  for (Slot slot : live.workloads) out.push_back(s_->StatusOf(s_->workloads[slot]));
  return out;
}

std::vector<WorkloadStatus> Engine::Workloads(std::optional<Millis> as_of) const {
  std::vector<std::pair<uint64_t, Slot>> live;
  live.reserve(s_->slot_of.size());
  for (const auto& [id, slot] : s_->slot_of) live.emplace_back(id, slot);
  std::sort(live.begin(), live.end());
  std::vector<WorkloadStatus> out;
  out.reserve(live.size());
  for (const auto& [id, slot] : live) {
    WorkloadStatus st = s_->StatusOf(s_->workloads[slot]);
    const Workload& w = s_->workloads[slot];
    if (as_of && *as_of > s_->now && w.phase == Phase::kPending) {
      st.pending_total += *as_of - s_->now;
      if (w.held) st.held_total += std::max<Millis>(std::min(*as_of, w.eligible_at) - s_->now, 0);
    }
    out.push_back(std::move(st));
  }
  return out;
}

size_t Engine::live_workloads() const { return s_->slot_of.size(); }
bool Engine::has_pending() const { return !s_->active_classes.empty(); }

std::vector<RunRecord> Engine::OpenRuns(Millis until) const {
  std::vector<std::pair<uint64_t, Slot>> placed;
  for (const auto& [id, slot] : s_->slot_of)
    if (s_->workloads[slot].node != kNoNode) placed.emplace_back(id, slot);
  std::sort(placed.begin(), placed.end());
  std::vector<RunRecord> out;
  for (const auto& [id, slot] : placed) {
    RunRecord r = s_->MakeRun(s_->workloads[slot]);
    r.end = std::max(until, s_->now);
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

std::vector<NodeStatus> NodesOf(const State& s, bool with_workloads) {
  std::vector<NodeStatus> out;
  out.reserve(s.nodes.size());
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    const auto& n = s.nodes[pos];
    const NodeInfo& info = s.node_info[s.node_at[pos]];
    NodeStatus st;
    st.id = static_cast<NodeId>(s.node_at[pos]);
    st.name = info.name;
    st.order = info.order;
    st.schedulable = n.schedulable;
    st.gpu_model = n.gpu_model;
    st.cpu_capacity_milli = n.cpu_capacity_milli;
    st.cpu_used_milli = n.cpu_used_milli;
    st.mem_capacity_bytes = n.mem_capacity_bytes;
    st.mem_used_bytes = n.mem_used_bytes;
    st.gpu_used_milli = n.gpu_used_milli;
    if (with_workloads)
      for (Slot w : s.node_live[pos].workloads) {
        st.workloads.push_back(s.workloads[w].id);
        st.workload_gpus.push_back(s.workloads[w].gpus);
      }
    st.spec = info.spec;
    out.push_back(std::move(st));
  }
  if (s.nodes_dirty)
    std::sort(out.begin(), out.end(), [](const NodeStatus& a, const NodeStatus& b) {
      return a.order != b.order ? a.order < b.order : a.name < b.name;
    });
  return out;
}

}  // namespace

std::vector<NodeStatus> Engine::Nodes() const { return NodesOf(*s_, true); }
std::vector<NodeStatus> Engine::NodeTotals() const { return NodesOf(*s_, false); }

const PoolPolicy& Engine::policy() const { return s_->policy; }
const std::vector<PriceBook>& Engine::price_books() const { return s_->price_books; }
std::vector<ElasticQuota> Engine::elastic_quotas() const { return s_->quota.elastic_quotas(); }

std::vector<Engine::FlavorUsage> Engine::flavor_usages() const {
  std::vector<FlavorUsage> out;
  for (auto& u : s_->quota.FlavorUsages())
    out.push_back({u.namespace_, u.flavor, u.used, u.min, u.max});
  return out;
}
const EngineOptions& Engine::options() const { return s_->options; }
Status Engine::CheckInvariants() const { return s_->CheckInvariants(); }

}  // namespace arbiter::engine
