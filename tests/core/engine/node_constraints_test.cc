// Node constraints through the engine's commands: taints that change on a running node
// (NoSchedule never evicts, NoExecute evicts at once or after tolerationSeconds, as Kubernetes'
// taint eviction controller), cordons and tolerations, and a snapshot taken while an eviction
// is scheduled. The placement rules themselves: tests/scenarios/110_* to 118_*.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace node_constraints_test {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;

// The shared one-GPU pod, tolerating `tolerations`.
Pod GpuPod(const std::string& name, std::vector<Toleration> tolerations = {}) {
  Pod p = gpu_objects::GpuPod(name, 1);
  p.tolerations = std::move(tolerations);
  return p;
}

Toleration Tolerate(const std::string& key, std::optional<Millis> seconds = std::nullopt) {
  Toleration t;
  t.key = key;
  t.op = TolerationOperator::kExists;
  t.effect = TaintEffect::kNoExecute;
  t.toleration_seconds = seconds;
  return t;
}

struct Events : EventSink {
  std::vector<Event> all;
  void OnEvent(const Event& e) override { all.push_back(e); }
  const Event* Find(EventType type, WorkloadId w) const {
    for (const auto& e : all)
      if (e.type == type && e.workload == w) return &e;
    return nullptr;
  }
};

class TaintEviction : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.check_invariants = true;
    e = std::make_unique<Engine>(o);
    e->SetSinks(&ev, nullptr);
  }
  WorkloadId Run(const Pod& p, Millis at = 0) {
    EXPECT_TRUE(e->Apply(At(at, SubmitPod{p, false, {}})).ok());
    EXPECT_TRUE(e->Apply(At(at, Tick{})).ok());
    const WorkloadId id = *e->Find("ml", p.meta.name);
    EXPECT_EQ(e->Get(id)->phase, Phase::kRunning);
    return id;
  }
  std::unique_ptr<Engine> e;
  Events ev;
};

TEST_F(TaintEviction, NoScheduleTaintNeverEvicts) {
  ASSERT_TRUE(e->Apply(At(0, UpsertNode{GpuNode("n1"), 0})).ok());
  const WorkloadId p = Run(GpuPod("p"));
  ASSERT_TRUE(
      e->Apply(
           At(kMin, UpsertNode{GpuNode("n1", 8, {{"gpu", "bad", TaintEffect::kNoSchedule}}), 0}))
          .ok());
  ASSERT_TRUE(e->Apply(At(kMin, Tick{})).ok());
  EXPECT_EQ(e->Get(p)->phase, Phase::kRunning);
  // But a new pod without a toleration no longer goes there.
  ASSERT_TRUE(e->Apply(At(kMin, SubmitPod{GpuPod("q"), false, {}})).ok());
  ASSERT_TRUE(e->Apply(At(kMin, Tick{})).ok());
  const WorkloadId q = *e->Find("ml", "q");
  EXPECT_EQ(e->Get(q)->phase, Phase::kPending);
  EXPECT_EQ(e->Get(q)->message.rfind(
                "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: bad}.", 0),
            0u)
      << e->Get(q)->message;
}

TEST_F(TaintEviction, UntoleratedNoExecuteEvictsAtOnceTolerationSecondsLater) {
  ASSERT_TRUE(e->Apply(At(0, UpsertNode{GpuNode("n1"), 0})).ok());
  const WorkloadId plain = Run(GpuPod("plain"));
  const WorkloadId brief = Run(GpuPod("brief", {Tolerate("maintenance", 300000)}));
  const WorkloadId forever = Run(GpuPod("forever", {Tolerate("maintenance")}));
  ASSERT_TRUE(
      e->Apply(At(10 * kMin,
                  UpsertNode{GpuNode("n1", 8, {{"maintenance", "", TaintEffect::kNoExecute}}), 0}))
          .ok());
  const Event* now = ev.Find(EventType::kPreempted, plain);
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now->time, 10 * kMin);
  EXPECT_EQ(now->reason, "TaintManagerEviction");
  EXPECT_EQ(now->by, "node/n1");
  EXPECT_EQ(now->message,
            "evicted: node n1 has taint {maintenance: }:NoExecute, which it does not tolerate; "
            "SIGTERM, grace 30s");
  EXPECT_EQ(e->Get(plain)->phase, Phase::kTerminating);
  EXPECT_EQ(ev.Find(EventType::kPreempted, brief), nullptr);
  EXPECT_EQ(e->NextWakeup().value_or(-1), 15 * kMin);  // 300 s after the taint appeared
  // A snapshot taken meanwhile keeps the scheduled eviction.
  auto restored = Engine::Restore(e->Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ((*restored)->Snapshot(), e->Snapshot());
  ASSERT_TRUE(e->Apply(At(15 * kMin, Tick{})).ok());
  const Event* later = ev.Find(EventType::kPreempted, brief);
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(later->time, 15 * kMin);
  EXPECT_EQ(later->reason, "TaintManagerEviction");
  EXPECT_EQ(e->Get(forever)->phase, Phase::kRunning);  // no tolerationSeconds: stays
  // The restored engine evicts at the same instant.
  Events rev;
  (*restored)->SetSinks(&rev, nullptr);
  ASSERT_TRUE((*restored)->Apply(At(15 * kMin, Tick{})).ok());
  ASSERT_NE(rev.Find(EventType::kPreempted, brief), nullptr);
  // The evicted workloads meet their preemption fate once they exit: Requeue, then they wait
  // (the node's NoExecute taint keeps them off).
  ASSERT_TRUE(e->Apply(At(16 * kMin, VictimExited{plain})).ok());
  ASSERT_TRUE(e->Apply(At(16 * kMin, Tick{})).ok());
  EXPECT_EQ(e->Get(plain)->phase, Phase::kPending);
  EXPECT_EQ(e->Get(plain)->preemptions, 1);
}

TEST_F(TaintEviction, RemovedTaintCancelsTheScheduledEviction) {
  ASSERT_TRUE(e->Apply(At(0, UpsertNode{GpuNode("n1"), 0})).ok());
  const WorkloadId brief = Run(GpuPod("brief", {Tolerate("maintenance", 300000)}));
  ASSERT_TRUE(
      e->Apply(At(kMin,
                  UpsertNode{GpuNode("n1", 8, {{"maintenance", "", TaintEffect::kNoExecute}}), 0}))
          .ok());
  ASSERT_TRUE(e->Apply(At(2 * kMin, UpsertNode{GpuNode("n1"), 0})).ok());
  ASSERT_TRUE(e->Apply(At(6 * kMin, Tick{})).ok());
  EXPECT_EQ(ev.Find(EventType::kPreempted, brief), nullptr);
  EXPECT_EQ(e->Get(brief)->phase, Phase::kRunning);
}

TEST_F(TaintEviction, BoundToATaintedNodeTheTimeRunsFromTheBind) {
  ASSERT_TRUE(
      e->Apply(At(0, UpsertNode{GpuNode("n1", 8, {{"spot", "", TaintEffect::kNoExecute}}), 0}))
          .ok());
  ASSERT_TRUE(e->Apply(At(0, SubmitPod{GpuPod("plain"), false, {}})).ok());
  const WorkloadId brief = Run(GpuPod("brief", {Tolerate("spot", 120000)}), kMin);
  EXPECT_EQ(e->Get(*e->Find("ml", "plain"))->phase, Phase::kPending);
  EXPECT_EQ(e->NextWakeup().value_or(-1), 3 * kMin);
  ASSERT_TRUE(e->Apply(At(3 * kMin, Tick{})).ok());
  ASSERT_NE(ev.Find(EventType::kPreempted, brief), nullptr);
}

// A cordoned node admits pods that tolerate node.kubernetes.io/unschedulable, and a pod's
// required affinity is honoured through the commands as well.
TEST(NodeConstraintsEngine, CordonToleranceAndAffinity) {
  EngineOptions o;
  o.check_invariants = true;
  Engine e(o);
  Node n = GpuNode("n1");
  n.unschedulable = true;
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{n, 0})).ok());
  Node m = GpuNode("n2");
  m.meta.labels["zone"] = "b";
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{m, 0})).ok());
  Toleration t;
  t.key = "node.kubernetes.io/unschedulable";
  t.op = TolerationOperator::kExists;
  Pod daemon = GpuPod("daemon", {t});
  daemon.meta.name = "daemon";
  NodeSelectorTerm term;
  term.match_fields = {{"metadata.name", NodeSelectorOperator::kIn, {"n1"}}};
  daemon.node_affinity.required = std::vector<NodeSelectorTerm>{term};
  Pod zoned = GpuPod("zoned");
  NodeSelectorTerm zone;
  zone.match_expressions = {{"zone", NodeSelectorOperator::kNotIn, {"b"}}};
  zoned.node_affinity.required = std::vector<NodeSelectorTerm>{zone};
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{daemon, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{zoned, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, Tick{})).ok());
  EXPECT_EQ(e.Get(*e.Find("ml", "daemon"))->node, "n1");
  const auto z = e.Get(*e.Find("ml", "zoned"));
  EXPECT_EQ(z->phase, Phase::kPending);
  EXPECT_EQ(z->message.rfind("0/2 nodes are available: 1 node(s) didn't match Pod's node "
                             "affinity/selector, 1 node(s) were unschedulable.",
                             0),
            0u)
      << z->message;
}

}  // namespace node_constraints_test
}  // namespace arbiter::engine
