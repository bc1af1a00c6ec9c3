// RemoveNode / UpsertNode (issue 3): a removed node's workloads stop without a grace period and
// meet their preemption fate; a victim shutting down there is cut short; a nominated preemptor
// loses its nomination. The engine part with commands; what the work model keeps and loses
// through the simulator.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"
#include "sim/simulator.h"

namespace arbiter::engine {
namespace pool_changes_test {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

struct Events : EventSink {
  std::vector<Event> all;
  void OnEvent(const Event& e) override { all.push_back(e); }
  const Event* Find(EventType type, WorkloadId w) const {
    for (const auto& e : all)
      if (e.type == type && e.workload == w) return &e;
    return nullptr;
  }
};

TEST(PoolChanges, VictimShuttingDownOnARemovedNodeIsCutShort) {
  EngineOptions o;
  o.check_invariants = true;
  Engine e(o);
  Events ev;
  e.SetSinks(&ev, nullptr);
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{GpuNode("n1", 1), 0})).ok());
  Pod victim = GpuPod("victim", 1, "ml", 1000);
  victim.termination_grace_period = 2 * kMin;
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{victim, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, Tick{})).ok());
  const WorkloadId v = *e.Find("ml", "victim");
  ASSERT_EQ(e.Get(v)->phase, Phase::kRunning);
  ASSERT_TRUE(e.Apply(At(30 * kMin, SubmitPod{GpuPod("urgent", 1, "ml", 5000), false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(30 * kMin, Tick{})).ok());
  const WorkloadId u = *e.Find("ml", "urgent");
  const Event* pre = ev.Find(EventType::kPreempted, v);
  ASSERT_NE(pre, nullptr);
  EXPECT_EQ(pre->grace, 2 * kMin);
  EXPECT_EQ(pre->work_facts, WorkFacts::kStopPlan);
  EXPECT_EQ(pre->message, "preempted by ml/urgent; SIGTERM, grace 2m");
  EXPECT_EQ(e.Get(u)->nominated_node, "n1");
  // The node goes away while the victim shuts down.
  ASSERT_TRUE(e.Apply(At(30 * kMin + 30000, RemoveNode{"n1"})).ok());
  const Event* t = ev.Find(EventType::kTerminated, v);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->reason, "NodeRemoved");
  EXPECT_EQ(t->work_facts, WorkFacts::kProgressLost);
  EXPECT_EQ(t->message, "node n1 was removed while it was shutting down");
  EXPECT_EQ(e.Get(v)->phase, Phase::kPending);  // Requeue: its fate as a victim
  EXPECT_EQ(e.Get(v)->preemptions, 1);
  EXPECT_EQ(e.Get(u)->nominated_node, "");
  EXPECT_TRUE(e.Nodes().empty());
  EXPECT_EQ(e.Apply(At(30 * kMin + 30000, VictimExited{v})).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(e.CheckInvariants().ok());
  // A node joins: the cycle places the higher-priority workload first.
  ASSERT_TRUE(e.Apply(At(40 * kMin, UpsertNode{GpuNode("n2", 1), 0})).ok());
  ASSERT_TRUE(e.Apply(At(40 * kMin, Tick{})).ok());
  EXPECT_EQ(e.Get(u)->phase, Phase::kRunning);
  EXPECT_EQ(e.Get(v)->phase, Phase::kPending);
  bool added = false;
  for (const auto& x : ev.all) added |= x.type == EventType::kNodeAdded && x.node == "n2";
  EXPECT_TRUE(added);
  EXPECT_TRUE(e.CheckInvariants().ok());
}

// The same story through the simulator: the work model keeps the victim's last periodic
// checkpoint (it would have saved as of SIGTERM, but the node went first).
TEST(PoolChanges, VictimShuttingDownOnARemovedNodeKeepsOnlyItsPeriodicCheckpoint) {
  ManifestSet m;
  m.nodes = {GpuNode("n1", 1), GpuNode("n2", 1)};
  m.nodes[0].sim.remove_time = 30 * kMin + 30000;
  m.nodes[1].sim.add_time = 40 * kMin;
  m.pods = {GpuPod("victim", 1, "ml", 1000), GpuPod("urgent", 1, "ml", 5000)};
  m.pods[0].sim.checkpoint_interval = 7 * kMin;
  m.pods[0].sim.shutdown_time = kMin;  // within its 2m grace: it would save as of SIGTERM
  m.pods[0].termination_grace_period = 2 * kMin;
  m.pods[1].sim.submit_time = 30 * kMin;
  sim::SimOptions o;
  o.check_invariants = true;
  auto r = sim::RunSimulation(m, o);
  ASSERT_TRUE(r.ok()) << r.message();
  const driver::SimEvent* t = nullptr;
  for (const auto& ev : r->events())
    if (ev.type == EventType::kTerminated && ev.workload == WorkloadId{0}) t = &ev;
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->reason, "NodeRemoved");
  EXPECT_NE(t->message.find("while it was shutting down; progress kept 28m, lost 2m"),
            std::string::npos)
      << t->message;
  const auto& v = r->workloads()[0];
  EXPECT_EQ(v.phase, Phase::kPending);
  EXPECT_EQ(v.progress, 28 * kMin);
  EXPECT_EQ(v.preemptions, 1);
  EXPECT_EQ(r->workloads()[1].phase, Phase::kRunning);
}

TEST(PoolChanges, RunningWorkloadsMeetTheirPreemptFate) {
  ManifestSet m;
  m.nodes = {GpuNode("a", 2), GpuNode("b", 2)};
  m.nodes[0].sim.remove_time = 25 * kMin;
  m.nodes[1].sim.remove_time = 25 * kMin;
  m.pods = {GpuPod("keep", 2, "ml", 0), GpuPod("drop", 2, "ml", 0)};
  m.pods[1].sim.preempt_mode = PreemptMode::kCancel;
  m.pods[0].sim.checkpoint_interval = 10 * kMin;
  m.pods[0].node_selector["kubernetes.io/hostname"] = "a";
  m.pods[1].node_selector["kubernetes.io/hostname"] = "b";
  auto r = sim::RunSimulation(m, sim::SimOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->workloads()[0].last_node, "a");
  EXPECT_EQ(r->workloads()[1].last_node, "b");
  EXPECT_EQ(r->workloads()[0].phase, Phase::kPending);
  EXPECT_EQ(r->workloads()[0].progress, 20 * kMin);
  EXPECT_EQ(r->workloads()[0].preemptions, 0);
  EXPECT_EQ(r->workloads()[0].lost_gpu_milli_ms_node_removed, int64_t{5} * kMin * 2000);
  EXPECT_EQ(r->workloads()[1].phase, Phase::kPreempted);
  EXPECT_EQ(r->workloads()[1].message, "cancelled: node b was removed");
  ASSERT_EQ(r->runs().size(), 2u);
  for (const auto& run : r->runs()) {
    EXPECT_EQ(run.end, 25 * kMin);
    EXPECT_EQ(run.preemptor, "node/" + run.node);
  }
}

TEST(PoolChanges, RemovingAnUnknownNodeIsNotFound) {
  Engine e;
  EXPECT_EQ(e.Apply(At(0, RemoveNode{"nope"})).code(), StatusCode::kNotFound);
}

}  // namespace pool_changes_test
}  // namespace arbiter::engine
