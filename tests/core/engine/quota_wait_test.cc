// How long quota preemption waits for minRuntime, and what its reason says (quota_wait.cc): the
// earliest instant T at which the candidates old enough by T free the preemptor's quota under the
// reclaim's own rule, and how many of the young candidates that victim set needs. Invariants are
// checked after every command.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace quota_wait_test {

constexpr Millis kMin = 60000;

class QuotaWait : public ::testing::Test {
 protected:
  QuotaWait() : e_(Options()) {
    e_.SetSinks(&sink_, nullptr);
    PoolPolicy pp;
    pp.meta.name = "default";
    pp.min_runtime = 30 * kMin;
    Do(0, UpsertPoolPolicy{pp});
    Do(0, UpsertNode{gpu_objects::GpuNode("n1"), 0});
    for (const char* ns : {"team-a", "team-b"}) {
      ElasticQuota q;
      q.meta.name = ns;
      q.meta.namespace_ = ns;
      q.cohort = "c";
      q.min = {{"nvidia.com/gpu", 4000}};
      Do(0, UpsertElasticQuota{q});
    }
  }
  static EngineOptions Options() {
    EngineOptions o;
    o.check_invariants = true;
    return o;
  }
  void Do(Millis t, CommandOp op) {
    const Status s = e_.Apply(Command{t, std::move(op)});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  // Submits a pod of `gpus` GPUs in `ns` at `t` and runs the cycle.
  WorkloadId Run(Millis t, const std::string& ns, const std::string& name, int gpus) {
    const WorkloadId id = e_.next_workload_id();
    Do(t, SubmitPod{gpu_objects::GpuPod(name, gpus, ns), false, {}});
    Do(t, Tick{});
    return id;
  }
  Phase PhaseOf(WorkloadId id) { return e_.Get(id)->phase; }
  std::string MessageOf(WorkloadId id) { return e_.Get(id)->message; }
  Engine e_;
  struct : EventSink {
    void OnEvent(const Event&) override {}
  } sink_;
};

// At 30m only `early` (1 GPU) is old enough, and the 3 GPUs need `late` (4 GPUs, 35m): the wait
// ends at 35m and needs late alone (the reclaim takes the most recently admitted first). The
// reason used to count all three young candidates from the first one's age, 30m.
TEST_F(QuotaWait, EndsWhenTheCandidatesOldEnoughFreeTheQuota) {
  const WorkloadId early = Run(0, "team-a", "early", 1);
  const WorkloadId late = Run(5 * kMin, "team-a", "late", 4);
  const WorkloadId steady = Run(10 * kMin, "team-a", "steady", 3);
  const WorkloadId mine = Run(15 * kMin, "team-b", "mine", 3);
  const std::string wait =
      "reclaiming lent quota: 1 borrowing workload(s) become reclaimable at 35m (minRuntime 30m)";
  EXPECT_EQ(MessageOf(mine), wait);
  Do(30 * kMin, Tick{});  // early comes of age: not enough, nothing is reclaimed
  EXPECT_EQ(PhaseOf(early), Phase::kRunning);
  EXPECT_EQ(PhaseOf(mine), Phase::kPending);
  EXPECT_EQ(MessageOf(mine), wait);
  Do(35 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(late), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(early), Phase::kRunning);
  EXPECT_EQ(PhaseOf(steady), Phase::kRunning);
  EXPECT_EQ(e_.Get(mine)->reason, "Reclaiming");
}

// A candidate old enough now and a young one together free the quota: the reason counts only the
// young one it waits for. At 31m `old` may be reclaimed but frees 2 of the 4 GPUs; at 50m `young`
// joins it (the reclaim's order: young, then old); `younger` (55m) is not needed. The reason used
// to say "2 ... from 50m" (every young candidate).
TEST_F(QuotaWait, CountsOnlyTheYoungCandidatesNeeded) {
  const WorkloadId old = Run(0, "team-a", "old", 2);
  const WorkloadId young = Run(20 * kMin, "team-a", "young", 2);
  const WorkloadId younger = Run(25 * kMin, "team-a", "younger", 4);
  const WorkloadId mine = Run(31 * kMin, "team-b", "mine", 4);
  EXPECT_EQ(MessageOf(mine),
            "reclaiming lent quota: 1 borrowing workload(s) become reclaimable at 50m (minRuntime "
            "30m)");
  EXPECT_EQ(PhaseOf(old), Phase::kRunning);
  Do(50 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(old), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(young), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(younger), Phase::kRunning);
}

// Two young candidates are needed, of age at 30m and 31m: the reason says "by" the later one.
// `base` (4 GPUs) would free the quota alone, but only at 33m.
TEST_F(QuotaWait, SaysByWhenTheNeededComeOfAgeAtDifferentInstants) {
  Run(0, "team-a", "first", 2);
  Run(1 * kMin, "team-a", "second", 2);
  const WorkloadId base = Run(3 * kMin, "team-a", "base", 4);
  const WorkloadId mine = Run(4 * kMin, "team-b", "mine", 4);
  EXPECT_EQ(MessageOf(mine),
            "reclaiming lent quota: 2 borrowing workload(s) become reclaimable by 31m (minRuntime "
            "30m)");
  Do(31 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(base), Phase::kRunning);
  EXPECT_EQ(e_.Get(mine)->reason, "Reclaiming");
}

}  // namespace quota_wait_test
}  // namespace arbiter::engine
