// A PodDisruptionBudget's upsert matches that budget alone against the workloads, and a delete
// moves the later budgets' indexes down (RematchPdb, UnmatchPdb: O(workloads) a write where
// RematchAllPdbs was O(workloads x budgets), 75 ms a PDB write at 2,000 pods and 2,000 budgets in a
// hostile-tenant trial). The state must be what matching everything again makes: the engine's
// invariants (CheckPdbMembers) recompute it after every command of random sequences of budget
// upserts (new ones and changed selectors), deletes, relabels, submits and deletes of pods.
#include <gtest/gtest.h>

#include <random>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace pdb_rematch_test {

using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

PodDisruptionBudget Budget(const std::string& ns, int n, const std::string& app) {
  PodDisruptionBudget p;
  p.meta.name = "b" + std::to_string(n);
  p.meta.namespace_ = ns;
  p.min_available = IntOrPercent{false, 1};
  p.selector.match_labels = {{"app", app}};
  return p;
}

TEST(PdbRematch, IncrementalMatchingIsWhatMatchingEverythingMakes) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    EngineOptions o;
    o.check_invariants = true;  // every command checks CheckPdbMembers
    Engine e(o);
    ASSERT_TRUE(e.Apply(At(0, UpsertNode{GpuNode("n1", 8), 0})).ok());
    const std::vector<std::string> spaces = {"ml", "web"}, apps = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> pods;  // (namespace, name)
    for (int step = 0; step < 300; ++step) {
      const Millis t = step * 1000;
      const std::string ns = spaces[pick(2)];
      Status s;
      switch (pick(5)) {
        case 0:
        case 1: {
          Pod p = GpuPod("p" + std::to_string(step), 1, ns, 10);
          p.meta.labels = {{"app", apps[pick(3)]}};
          s = e.Apply(At(t, SubmitPod{p, false, {}}));
          if (s.ok()) pods.emplace_back(ns, p.meta.name);
          break;
        }
        case 2:  // a new budget or one changed (same name, another selector)
          s = e.Apply(At(t, UpsertPodDisruptionBudget{Budget(ns, pick(6), apps[pick(3)])}));
          break;
        case 3: {
          s = e.Apply(At(t, DeletePodDisruptionBudget{{ns, "b" + std::to_string(pick(6))}}));
          if (s.code() == StatusCode::kNotFound) s = Status::Ok();
          break;
        }
        default: {
          if (pods.empty()) break;
          const auto& [pns, name] = pods[static_cast<size_t>(pick(static_cast<int>(pods.size())))];
          if (auto id = e.Find(pns, name)) {
            s = pick(2) ? e.Apply(At(t, SetPodLabels{*id, {{"app", apps[pick(3)]}}}))
                        : e.Apply(At(t, DeletePod{*id, 0}));
          }
          break;
        }
      }
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(e.Apply(At(t, Tick{})).ok());
    }
    auto restored = Engine::Restore(e.Snapshot());  // (its budgets matched anew)
    ASSERT_TRUE(restored.ok()) << restored.message();
    EXPECT_EQ((*restored)->Snapshot(), e.Snapshot());
  }
}

}  // namespace pdb_rematch_test
}  // namespace arbiter::engine
