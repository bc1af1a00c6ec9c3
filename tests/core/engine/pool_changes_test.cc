// Engine::RemoveNode / AddNode (issue 3): a removed node's workloads stop without a grace period,
// keep their last periodic checkpoint and meet their preemption fate; a victim shutting down
// there is cut short; a nominated preemptor loses its nomination.
#include <gtest/gtest.h>

#include "core/engine/engine.h"

namespace arbiter::engine {
namespace {

constexpr Millis kMin = 60000;

Node GpuNode(const std::string& name, int gpus) {
  Node n;
  n.meta.name = name;
  n.capacity = {{"cpu", 64000}, {"memory", int64_t{256} << 30}, {"nvidia.com/gpu", gpus * 1000}};
  n.allocatable = n.capacity;
  return n;
}

Pod GpuPod(const std::string& name, int32_t priority, int gpus) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = "ml";
  p.priority = priority;
  Container c;
  c.name = "c";
  c.requests = {{"cpu", 1000}, {"nvidia.com/gpu", gpus * 1000}};
  c.limits = {{"nvidia.com/gpu", gpus * 1000}};
  p.containers.push_back(c);
  return p;
}

const Event* Find(const Engine& e, EventType type, const std::string& workload) {
  for (const auto& ev : e.events())
    if (ev.type == type && (ev.workload == kNoWorkload ? std::string() : e.workloads()[ev.workload].key) == workload)
      return &ev;
  return nullptr;
}

TEST(PoolChanges, VictimShuttingDownOnARemovedNodeKeepsOnlyItsPeriodicCheckpoint) {
  ManifestSet m;
  m.nodes = {GpuNode("n1", 1)};
  m.pods = {GpuPod("victim", 1000, 1), GpuPod("urgent", 5000, 1)};
  m.pods[0].sim.checkpoint_interval = 7 * kMin;
  m.pods[0].sim.shutdown_time = kMin;  // within its 2m grace: it would save as of SIGTERM
  m.pods[0].termination_grace_period = 2 * kMin;
  EngineOptions o;
  o.check_invariants = true;
  auto created = Engine::Create(m, o);
  ASSERT_TRUE(created.ok());
  Engine& e = **created;
  e.Submit(m.pods[0], 0);
  e.Schedule(0);
  e.AdvanceTo(30 * kMin);
  e.Submit(m.pods[1], 30 * kMin);
  e.Schedule(30 * kMin);
  // The victim saves as of 30m and would exit at 31m; the node goes away at 30m30s.
  ASSERT_NE(Find(e, EventType::kPreempted, "ml/victim"), nullptr);
  e.AdvanceTo(30 * kMin + 30000);
  ASSERT_TRUE(e.RemoveNode("n1", 30 * kMin + 30000).ok());
  const Event* t = Find(e, EventType::kTerminated, "ml/victim");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->reason, "NodeRemoved");
  EXPECT_NE(t->message.find("while it was shutting down; progress kept 28m, lost 2m"), std::string::npos) << t->message;
  const Workload& v = e.workloads()[0];
  EXPECT_EQ(v.phase, Phase::kPending);  // Requeue: its fate as a victim
  EXPECT_EQ(v.progress, 28 * kMin);
  EXPECT_EQ(v.preemptions, 1);
  const Workload& u = e.workloads()[1];
  EXPECT_FALSE(u.nominated_node.has_value());
  EXPECT_TRUE(u.waiting_for.empty());
  EXPECT_TRUE(e.nodes().empty());
  ASSERT_TRUE(e.CheckInvariants().ok());
  // A node joins: the cycle places the higher-priority workload first.
  Node n2 = GpuNode("n2", 1);
  e.AddNode(n2, 40 * kMin);
  e.Schedule(40 * kMin);
  EXPECT_EQ(e.workloads()[1].phase, Phase::kRunning);
  EXPECT_NE(Find(e, EventType::kNodeAdded, ""), nullptr);
  EXPECT_TRUE(e.CheckInvariants().ok());
}

TEST(PoolChanges, RunningWorkloadsMeetTheirPreemptFate) {
  ManifestSet m;
  m.nodes = {GpuNode("a", 2), GpuNode("b", 2)};
  m.pods = {GpuPod("keep", 0, 2), GpuPod("drop", 0, 2)};
  m.pods[1].sim.preempt_mode = PreemptMode::kCancel;
  m.pods[0].sim.checkpoint_interval = 10 * kMin;
  m.pods[0].node_selector["kubernetes.io/hostname"] = "a";
  m.pods[1].node_selector["kubernetes.io/hostname"] = "b";
  auto created = Engine::Create(m, EngineOptions{});
  ASSERT_TRUE(created.ok());
  Engine& e = **created;
  e.Submit(m.pods[0], 0);
  e.Submit(m.pods[1], 0);
  e.Schedule(0);
  ASSERT_EQ(e.workloads()[0].last_node, "a");
  ASSERT_EQ(e.workloads()[1].last_node, "b");
  EXPECT_FALSE(e.RemoveNode("nope", kMin).ok());
  ASSERT_TRUE(e.RemoveNode("a", 25 * kMin).ok());
  ASSERT_TRUE(e.RemoveNode("b", 25 * kMin).ok());
  EXPECT_EQ(e.workloads()[0].phase, Phase::kPending);
  EXPECT_EQ(e.workloads()[0].progress, 20 * kMin);
  EXPECT_EQ(e.workloads()[0].preemptions, 0);
  EXPECT_EQ(e.workloads()[0].lost_gpu_milli_ms_node_removed, int64_t{5} * kMin * 2000);
  EXPECT_EQ(e.workloads()[1].phase, Phase::kPreempted);
  EXPECT_EQ(e.workloads()[1].message, "cancelled: node b was removed");
  ASSERT_EQ(e.runs().size(), 2u);
  for (const auto& r : e.runs()) {
    EXPECT_EQ(r.end, 25 * kMin);
    EXPECT_EQ(r.preemptor, "node/" + r.node);
  }
}

}  // namespace
}  // namespace arbiter::engine
