// A pod bound already (SubmitPod::node: a scheduler restarted under running pods) is placed on
// its node whatever only decides placements says (Kubernetes' IgnoredDuringExecution: cordons,
// NoSchedule taints, node affinity), and keeps counting there (node room, quota); a NoExecute taint
// evicts it as any running workload; when it cannot be placed, its status says why, and it never
// preempts.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace bound_pod_test {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

class BoundPod : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.check_invariants = true;
    e = std::make_unique<Engine>(o);
  }
  void AddNode(const Node& n) { ASSERT_TRUE(e->Apply(At(0, UpsertNode{n, 0})).ok()); }
  WorkloadStatus Submit(const Pod& p, const std::string& node, Millis at = 0) {
    EXPECT_TRUE(e->Apply(At(at, SubmitPod{p, false, {}, node})).ok());
    EXPECT_TRUE(e->Apply(At(at, Tick{})).ok());
    return *e->Get(*e->Find("ml", p.meta.name));
  }
  std::unique_ptr<Engine> e;
};

// The node lifecycle controller's unreachable taint, a cordon and a required affinity the node
// no longer matches: none of them moves a running pod, so none keeps it off its node; and the
// room it holds there is not given to another pod.
TEST_F(BoundPod, PlacedOnItsNodeDespiteNoScheduleTaintCordonAndAffinity) {
  Node n1 = GpuNode("n1", 8,
                    {{"node.kubernetes.io/unreachable", "", TaintEffect::kNoSchedule},
                     {"gpu", "bad", TaintEffect::kPreferNoSchedule}});
  n1.unschedulable = true;
  AddNode(n1);
  AddNode(GpuNode("n2"));
  Pod p = GpuPod("running", 6);
  NodeSelectorTerm zone;
  zone.match_expressions = {{"zone", NodeSelectorOperator::kIn, {"b"}}};
  p.node_affinity.required = std::vector<NodeSelectorTerm>{zone};
  p.node_selector["pool"] = "gone";
  const WorkloadStatus s = Submit(p, "n1");
  EXPECT_EQ(s.phase, Phase::kRunning) << s.message;
  EXPECT_EQ(s.node, "n1");
  EXPECT_EQ(e->namespace_usages().at("ml").Get("nvidia.com/gpu"), 6000);
  // A pod that may use n1 (it tolerates everything) finds only 2 GPUs free there.
  Pod q = GpuPod("q", 3);
  Toleration all;
  all.op = TolerationOperator::kExists;
  q.tolerations = {all};
  EXPECT_EQ(Submit(q, "").node, "n2");
  // Bound once, it is an ordinary workload: the filters hold again for the next placement.
  ASSERT_TRUE(e->CheckInvariants().ok());
  const WorkloadStatus r = Submit(GpuPod("not-bound", 1), "");
  EXPECT_EQ(r.node, "n2");
}

// A NoExecute taint evicts a bound pod as any running one: at once when not tolerated, after
// tolerationSeconds (from the bind) when tolerated.
TEST_F(BoundPod, NoExecuteTaintEvictsItOnceBound) {
  AddNode(GpuNode("n1", 8, {{"node.kubernetes.io/unreachable", "", TaintEffect::kNoExecute}}));
  const WorkloadStatus plain = Submit(GpuPod("plain", 1), "n1");
  EXPECT_EQ(plain.phase, Phase::kTerminating);
  EXPECT_EQ(plain.reason, "TaintManagerEviction");
  Pod brief = GpuPod("brief", 1);
  Toleration t;
  t.key = "node.kubernetes.io/unreachable";
  t.op = TolerationOperator::kExists;
  t.effect = TaintEffect::kNoExecute;
  t.toleration_seconds = 300000;
  brief.tolerations = {t};
  EXPECT_EQ(Submit(brief, "n1", kMin).phase, Phase::kRunning);
  EXPECT_EQ(e->NextWakeup().value_or(-1), 6 * kMin);
}

// No room on its node (or its quota used up): it stays Pending with the engine's reason, and
// evicts nobody for it (it runs there already).
TEST_F(BoundPod, WithoutRoomItWaitsWithTheReasonAndPreemptsNobody) {
  AddNode(GpuNode("n1", 8, {{"gpu", "bad", TaintEffect::kNoSchedule}}));
  AddNode(GpuNode("n2"));
  const WorkloadStatus low = Submit(GpuPod("low", 6), "n1");
  ASSERT_EQ(low.phase, Phase::kRunning);
  const WorkloadStatus high = Submit(GpuPod("high", 4, "ml", 1000), "n1");
  EXPECT_EQ(high.phase, Phase::kPending);
  EXPECT_EQ(high.reason, "Unschedulable");
  EXPECT_EQ(high.message,
            "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's "
            "node affinity/selector. It runs on that node already: nothing is preempted for it.");
  EXPECT_EQ(e->Get(low.id)->phase, Phase::kRunning);

  ResourceQuota rq;
  rq.meta.name = "gpus";
  rq.meta.namespace_ = "ml";
  rq.hard = {{"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 7000}};
  ASSERT_TRUE(e->Apply(At(kMin, UpsertResourceQuota{rq})).ok());
  const WorkloadStatus over = Submit(GpuPod("over", 2), "n2", kMin);
  EXPECT_EQ(over.phase, Phase::kPending);
  EXPECT_EQ(over.reason, "QuotaExceeded") << over.message;
}

// The bound node survives a snapshot and a command's encoding.
TEST_F(BoundPod, SnapshotAndCommandKeepTheNode) {
  AddNode(GpuNode("n1", 8, {{"gpu", "bad", TaintEffect::kNoSchedule}}));
  ASSERT_TRUE(e->Apply(At(0, SubmitPod{GpuPod("p", 1), false, {}, "n1"})).ok());
  auto restored = Engine::Restore(e->Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ((*restored)->Snapshot(), e->Snapshot());
  ASSERT_TRUE((*restored)->Apply(At(0, Tick{})).ok());
  EXPECT_EQ((*restored)->Get(*(*restored)->Find("ml", "p"))->node, "n1");
  auto c = DecodeCommand(EncodeCommand(At(0, SubmitPod{GpuPod("p", 1), false, {}, "n1"})));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<SubmitPod>(c->op).node, "n1");
}

}  // namespace bound_pod_test
}  // namespace arbiter::engine
