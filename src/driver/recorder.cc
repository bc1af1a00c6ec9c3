#include "driver/recorder.h"

#include "core/placement/node_state.h"

namespace arbiter::driver {

using engine::EventType;
using engine::Value;
using engine::WorkFacts;
using engine::WorkloadId;

void Recorder::Submitted(const WorkSpec& spec, std::optional<ResourceList> u) {
  Work w;
  w.spec = spec;
  works.push_back(w);
  if (!keep_) return;
  usage.push_back(std::move(u));
  result.workload_list.emplace_back();
}

void Recorder::OnEvent(const engine::Event& e) {
  std::string facts;
  if (e.workload != engine::kNoWorkload) {
    const WorkloadId id = e.workload;
    Work& w = works[Value(id)];
    switch (e.type) {
      case EventType::kScheduled:
        if (auto done = WorkModel::Start(w, e.time))
          timers_->Arm(id, *done, WorkTimers::Kind::kComplete);
        else
          timers_->Disarm(id);
        break;
      case EventType::kCompleted:
        WorkModel::Complete(w);
        break;
      default:
        break;
    }
    if (e.work_facts == WorkFacts::kStopPlan || e.work_facts == WorkFacts::kStopSooner) {
      const StopPlan plan = e.work_facts == WorkFacts::kStopPlan
                                ? WorkModel::Stop(w, e.time, e.grace)
                                : WorkModel::Shorten(w, e.time, e.grace);
      timers_->Arm(id, plan.exit_at, WorkTimers::Kind::kExit);
      facts = WorkModel::StopText(w, plan);
      if (keep_) stop_text[Value(id)] = facts;
    } else if (e.work_facts == WorkFacts::kProgressLost) {
      const Millis kept = WorkModel::NodeLost(w, e.time);
      timers_->Disarm(id);
      facts = WorkModel::LossText(kept, w.lost_work);
    }
  }
  if (!keep_) return;
  NamePool& names = *result.names;
  result.event_list.push_back(
      SimEvent{e.time, e.type, e.workload, names.Intern(e.node), names.Intern(e.by), e.reason,
               names.Intern(facts.empty() ? e.message : e.message + facts)});
}

std::string_view NamePool::Intern(std::string_view name) {
  if (name.empty()) return {};
  if (auto it = index_.find(name); it != index_.end()) return *it;
  return *index_.insert(names_.emplace_back(name)).first;
}

void Recorder::OnRun(const engine::RunRecord& run) {
  Work& w = works[Value(run.workload)];
  timers_->Disarm(run.workload);
  engine::RunRecord r = run;
  if (w.stopping) {
    WorkModel::Annotate(w, r);
    WorkModel::Exited(w);
  }
  if (!keep_) return;
  stop_text.erase(Value(run.workload));
  result.run_list.push_back(std::move(r));
}

void Recorder::Record(const engine::WorkloadStatus& s) {
  if (!keep_) return;
  SimWorkload& r = result.workload_list[Value(s.id)];
  const Work& w = works[Value(s.id)];
  NamePool& names = *result.names;
  r.key = s.key;
  r.namespace_ = names.Intern(s.namespace_);
  r.priority = s.priority;
  r.priority_class = names.Intern(s.priority_class);
  r.qos = names.Intern(s.qos);
  r.phase = s.phase;
  r.last_node = names.Intern(s.last_node);
  r.on_node = !s.node.empty();
  r.submit_time = s.submit_time;
  r.first_start = s.first_start;
  r.finish_time = s.finish_time;
  r.preemptions = s.preemptions;
  r.message = names.Intern(s.message);
  if (s.message_facts == WorkFacts::kStopPlan)
    if (auto t = stop_text.find(Value(s.id)); t != stop_text.end())
      r.message = names.Intern(s.message + t->second);
  r.requests = s.requests;
  if (const auto& u = usage[Value(s.id)])
    r.SetUsage(*u);
  else
    r.usage_override.reset();
  r.pending_total = s.pending_total;
  r.held_total = s.held_total;
  r.borrowed = s.borrowed;
  if (!s.flavor.empty()) r.flavor = names.Intern(s.flavor);
  r.progress = w.progress;
  const int64_t gpu = placement::PodShape::FromRequests(s.requests).gpu_milli_total();
  r.lost_gpu_milli_ms = static_cast<int64_t>(w.lost_ms) * gpu;
  r.lost_gpu_milli_ms_node_removed = static_cast<int64_t>(w.lost_ms_node_removed) * gpu;
}

}  // namespace arbiter::driver
