// SetPodLabels (command.h): an update's new labels reach the workload, the budgets that select it
// are matched again, and a snapshot restores to the same engine.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace pod_labels_test {

using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

TEST(PodLabels, ABudgetFollowsTheLabelsAndASnapshotKeepsThem) {
  EngineOptions o;
  o.check_invariants = true;
  Engine e(o);
  ASSERT_TRUE(e.Apply(At(0, UpsertNode{GpuNode("n1", 8), 0})).ok());
  PodDisruptionBudget pdb;
  pdb.meta.name = "keep";
  pdb.meta.namespace_ = "ml";
  pdb.min_available = IntOrPercent{false, 1};
  pdb.selector.match_labels = {{"app", "p"}};
  ASSERT_TRUE(e.Apply(At(0, UpsertPodDisruptionBudget{pdb})).ok());
  Pod a = GpuPod("a", 4, "ml", 10), b = GpuPod("b", 4, "ml", 10);
  a.meta.labels = {{"app", "p"}};
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{a, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, SubmitPod{b, false, {}})).ok());
  ASSERT_TRUE(e.Apply(At(0, Tick{})).ok());
  const WorkloadId ia = *e.Find("ml", "a"), ib = *e.Find("ml", "b");
  // The budget moves from a to b.
  ASSERT_TRUE(e.Apply(At(1000, SetPodLabels{ia, {}})).ok());
  ASSERT_TRUE(e.Apply(At(1000, SetPodLabels{ib, {{"app", "p"}, {"tier", "x"}}})).ok());
  ASSERT_TRUE(e.CheckInvariants().ok());
  auto restored = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ((*restored)->Snapshot(), e.Snapshot());
  // A high-priority pod needs one of them: the one no budget protects now (a) is the victim, in
  // the engine and in its restored copy alike.
  for (Engine* x : {&e, restored->get()}) {
    ASSERT_TRUE(x->Apply(At(2000, SubmitPod{GpuPod("urgent", 4, "ml", 100), false, {}})).ok());
    ASSERT_TRUE(x->Apply(At(2000, Tick{})).ok());
    EXPECT_EQ(x->Get(*x->Find("ml", "a"))->phase, Phase::kTerminating);
    EXPECT_EQ(x->Get(*x->Find("ml", "b"))->phase, Phase::kRunning);
  }
  EXPECT_EQ((*restored)->Snapshot(), e.Snapshot());
  // A workload that is not live: NotFound.
  EXPECT_EQ(e.Apply(At(3000, SetPodLabels{WorkloadId{999}, {}})).code(), StatusCode::kNotFound);
}

}  // namespace pod_labels_test
}  // namespace arbiter::engine
