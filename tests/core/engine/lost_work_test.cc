// The LeastLostWork victim order (issue 29, core/engine/lost_work.h): the lost-work estimate, its
// order, the policy value and the workloads' checkpoint facts through commands and snapshots
// (engine snapshot 9, command 8; version-8 snapshots still read), and snapshots under the order.
#include "core/engine/lost_work.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <utility>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"
#include "core/engine/preempt_plan.h"
#include "core/engine/random_pool.h"
#include "core/serial.h"
#include "sim/simulator.h"

namespace arbiter::engine {
namespace lost_work_test {

constexpr Millis kMin = 60000;

Workload Running(Millis start, int32_t gpus, Millis interval, Millis shutdown) {
  Workload w;
  w.phase = Phase::kRunning;
  w.run_start = start;
  w.shape.gpu_count = gpus;
  w.shape.gpu_milli_per_device = gpus > 0 ? 1000 : 0;
  w.checkpoint_interval = interval;
  w.shutdown_time = shutdown;
  return w;
}

TEST(LostWorkTest, WithoutCheckpointsTheWholeRunIsLost) {
  const LostWork l = LostWorkIfStopped(Running(10 * kMin, 4, 0, 0), 30000, 70 * kMin);
  EXPECT_EQ(l.run_ms, 60 * kMin);
  EXPECT_EQ(l.gpu_milli_ms, 60 * kMin * 4000);
}

TEST(LostWorkTest, KilledAtTheEndOfItsGraceItLosesTheTimeSinceItsLastCheckpoint) {
  // Checkpoints every 30m from its start at 10m (40m, 70m, ...): at 95m it is 25m past the last.
  const Workload w = Running(10 * kMin, 2, 30 * kMin, 5 * kMin);
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 95 * kMin).run_ms, 25 * kMin);
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 95 * kMin).gpu_milli_ms, 25 * kMin * 2000);
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 100 * kMin).run_ms, 0);  // just saved
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 10 * kMin).run_ms, 0);   // just started
}

TEST(LostWorkTest, SavingWithinTheGracePeriodLosesNothing) {
  const Workload w = Running(0, 8, 60 * kMin, 30000);  // shutdown 30s = grace 30s
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 59 * kMin), LostWork{});
  EXPECT_EQ(LostWorkIfStopped(w, 29999, 59 * kMin).run_ms, 59 * kMin);  // a shorter grace: killed
}

TEST(LostWorkTest, CpuOnlyWorkloadsLoseRunTimeButNoGpuWork) {
  const LostWork l = LostWorkIfStopped(Running(0, 0, 0, 0), 30000, 5 * kMin);
  EXPECT_EQ(l.gpu_milli_ms, 0);
  EXPECT_EQ(l.run_ms, 5 * kMin);
}

TEST(LostWorkTest, SharedGpusCountTheirFraction) {
  Workload w = Running(0, 1, 0, 0);
  w.shape.gpu_milli_per_device = 250;
  EXPECT_EQ(LostWorkIfStopped(w, 30000, 4000).gpu_milli_ms, 4000 * 250);
}

TEST(LostWorkTest, HugeValuesSaturateInsteadOfOverflowing) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const Workload w = Running(0, 1 << 20, 0, 0);
  const LostWork l = LostWorkIfStopped(w, 30000, kMax - 1);
  EXPECT_EQ(l.run_ms, kMax - 1);
  EXPECT_EQ(l.gpu_milli_ms, kMax);
  LostWork sum = l;
  sum += l;
  EXPECT_EQ(sum.gpu_milli_ms, kMax);
  EXPECT_EQ(sum.run_ms, kMax);
}

TEST(LostWorkTest, OrderIsGpuWorkThenRunTime) {
  EXPECT_LT((LostWork{100, 999}), (LostWork{200, 1}));
  EXPECT_LT((LostWork{0, 1}), (LostWork{0, 2}));
  EXPECT_FALSE((LostWork{5, 5}) < (LostWork{5, 5}));
}

// The plan choice: LeastLostWork decides after the victim count, before the latest start, and
// only under that order.
TEST(LostWorkTest, PlanChoiceWeighsLostWorkAfterTheVictimCount) {
  PreemptPlan a, b;
  a.node = 0;
  b.node = 1;
  a.victims = {1};
  b.victims = {2};
  a.max_priority = b.max_priority = 100;
  a.sum_priority = b.sum_priority = 100;
  a.earliest_start_of_max = 10;  // Kubernetes prefers b (latest start)
  b.earliest_start_of_max = 20;
  a.lost = LostWork{1000, 1};
  b.lost = LostWork{9000, 1};
  EXPECT_TRUE(BetterPlan(b, a));
  EXPECT_TRUE(BetterPlan(a, b, /*least_lost_work=*/true));
  b.victims = {2, 3};  // one victim more: lost work does not buy it
  b.sum_priority = a.sum_priority;
  b.lost = LostWork{0, 0};
  EXPECT_TRUE(BetterPlan(a, b, true));
}

// --------------------------------------------------------------- the policy and the facts

using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

TEST(LostWorkTest, VictimOrderRoundTripsInCommandsAndSnapshots) {
  PoolPolicy p;
  p.meta.name = "default";
  p.victim_order = VictimOrder::kLeastLostWork;
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertPoolPolicy{p})));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<UpsertPoolPolicy>(c->op).policy.victim_order, VictimOrder::kLeastLostWork);
  Engine e;
  ASSERT_TRUE(e.Apply(At(1, UpsertPoolPolicy{p})).ok());
  auto r = Engine::Restore(e.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->policy().victim_order, VictimOrder::kLeastLostWork);
}

TEST(LostWorkTest, AnUnknownVictimOrderByteIsRefused) {
  PoolPolicy p;
  p.meta.name = "default";
  p.victim_order = VictimOrder::kLeastLostWork;
  p.backfill_depth = 0x5a5a5a;  // a marker: the order's byte lies just before spec.latency
  auto body = serial::Unseal(EncodeCommand(At(1, UpsertPoolPolicy{p})), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string b = *body;
  // The order byte (2) is followed by latency (none: a 0 byte) and then the marker.
  const std::string marker("\x02\x00\x5a\x5a\x5a\x00", 6);
  const size_t at = b.find(marker);
  ASSERT_NE(at, std::string::npos);
  b[at] = 3;
  auto c = DecodeCommand(serial::Seal("command", kCommandVersion, b));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("an unknown victim order 3"), std::string::npos) << c.message();
}

// The pod's checkpoint facts reach the engine with SubmitPod and survive a snapshot; a version-8
// snapshot (without them) still reads, as a workload that declared none.
TEST(LostWorkTest, CheckpointFactsSurviveSnapshotsAndVersion8StillReads) {
  auto engine_with = [](bool facts) {
    auto e = std::make_unique<Engine>();
    EXPECT_TRUE(e->Apply(At(0, UpsertNode{GpuNode("n1", 8), 0})).ok());
    Pod p = GpuPod("train", 4, "default");
    if (facts) {
      p.sim.checkpoint_interval = 0x0123456789ab;  // markers to find in the snapshot
      p.sim.shutdown_time = 0x0fedcba98765;
    }
    EXPECT_TRUE(e->Apply(At(0, SubmitPod{p, false, {}})).ok());
    EXPECT_TRUE(e->Apply(At(0, Tick{})).ok());
    return e;
  };
  auto with = engine_with(true);
  const std::string snap = with->Snapshot();
  auto r = Engine::Restore(snap);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Snapshot(), snap);
  auto body = serial::Unseal(snap, "engine", Engine::kSnapshotVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  const std::string facts("\xab\x89\x67\x45\x23\x01\x00\x00\x65\x87\xa9\xcb\xed\x0f\x00\x00", 16);
  std::string b = *body;
  const size_t at = b.find(facts);
  ASSERT_NE(at, std::string::npos);
  // The facts, then version 11's time held out of the queue (0 here) and version 12's bound node
  // (none: an empty text): cut them.
  ASSERT_EQ(b.substr(at + facts.size(), 16), std::string(16, '\0'));
  std::string v11 = b;  // without the bound node: a version-11 snapshot
  v11.erase(at + facts.size() + 8, 8);
  auto r11 = Engine::Restore(serial::Seal("engine", 11, v11));
  ASSERT_TRUE(r11.ok()) << r11.message();
  EXPECT_EQ((*r11)->Snapshot(), snap);
  std::string v10 = b;  // without the time held either: a version-10 snapshot, facts kept
  v10.erase(at + facts.size(), 16);
  auto r10 = Engine::Restore(serial::Seal("engine", 10, v10));
  ASSERT_TRUE(r10.ok()) << r10.message();
  EXPECT_EQ((*r10)->Snapshot(), snap);
  b.erase(at, facts.size() + 16);
  auto v8 = Engine::Restore(serial::Seal("engine", 8, b));
  ASSERT_TRUE(v8.ok()) << v8.message();
  EXPECT_EQ((*v8)->Snapshot(), engine_with(false)->Snapshot());
  EXPECT_FALSE(Engine::Restore(serial::Seal("engine", 9, b)).ok());  // read as 9: cut short
}

// Everything the engine gives out, as text (as snapshot_property_test's transcript).
struct Transcript : EventSink, RunSink {
  std::vector<std::string> lines;
  void OnEvent(const Event& e) override {
    std::ostringstream o;
    o << "E " << e.time << " " << ToString(e.type) << " " << Value(e.workload) << " " << e.node
      << " " << e.by << " " << e.message;
    lines.push_back(o.str());
  }
  void OnFinished(const WorkloadStatus& s) override {
    lines.push_back("F " + s.key + " " + ToString(s.phase) + " " + std::to_string(s.preemptions));
  }
  void OnRun(const RunRecord& r) override {
    lines.push_back("R " + std::to_string(Value(r.workload)) + " " + r.node + " " +
                    std::to_string(r.start) + " " + std::to_string(r.end));
  }
};

// Random pools under LeastLostWork with checkpointing pods: an engine restored from a snapshot at
// a random command continues byte for byte (the facts it orders victims by are in the snapshot).
TEST(LostWorkTest, RestoredEngineContinuesByteForByteUnderLeastLostWork) {
  size_t preempted = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = testing_pools::RandomPool(seed);
    testing_pools::Rng r{seed * 7919 + 11};
    PoolPolicy pp = m.pool_policy.value_or(PoolPolicy{});
    pp.victim_order = VictimOrder::kLeastLostWork;
    m.pool_policy = pp;
    for (auto& p : m.pods)
      if (r.Chance(60)) {
        p.sim.checkpoint_interval = r.Uniform(1, 60) * kMin;
        p.sim.shutdown_time = r.Uniform(0, 120) * 1000;
      }
    std::vector<Command> cmds;
    sim::SimOptions so;
    so.until = 12 * 3600 * 1000;
    so.seed = seed;
    so.on_command = [&](const Command& c) { cmds.push_back(c); };
    ASSERT_TRUE(sim::RunSimulation(m, so).ok());
    ASSERT_FALSE(cmds.empty());
    EngineOptions eo;
    eo.seed = seed;
    eo.placement = so.placement;
    eo.placement_profile = sim::ProfileOfPods(m.pods);
    eo.check_invariants = true;
    Engine a(eo);
    Transcript ta;
    a.SetSinks(&ta, &ta);
    const size_t cut = static_cast<size_t>(r.Uniform(0, static_cast<int64_t>(cmds.size())));
    std::string snap;
    size_t lines_at_cut = 0;
    for (size_t i = 0; i < cmds.size(); ++i) {
      if (i == cut) {
        snap = a.Snapshot();
        lines_at_cut = ta.lines.size();
      }
      ASSERT_TRUE(a.Apply(cmds[i]).ok()) << CommandName(cmds[i]);
    }
    if (snap.empty()) continue;  // cut after the last command
    auto b = Engine::Restore(snap);
    ASSERT_TRUE(b.ok()) << b.message();
    Transcript tb;
    (*b)->SetSinks(&tb, &tb);
    for (size_t i = cut; i < cmds.size(); ++i) ASSERT_TRUE((*b)->Apply(cmds[i]).ok());
    ASSERT_EQ(ta.lines.size() - lines_at_cut, tb.lines.size());
    for (size_t i = 0; i < tb.lines.size(); ++i) {
      ASSERT_EQ(ta.lines[lines_at_cut + i], tb.lines[i]) << "output " << i;
      preempted += tb.lines[i].find(" Preempted ") != std::string::npos;
    }
    EXPECT_EQ(a.Snapshot(), (*b)->Snapshot());
  }
  EXPECT_GT(preempted, 20u) << "the pools must preempt after the cuts";
}

// ------------------------------------------------- the node's plan and a nominated borrower

struct Events : EventSink {
  std::vector<Event> events;
  void OnEvent(const Event& e) override { events.push_back(e); }
  std::vector<uint64_t> Preempted() const {
    std::vector<uint64_t> out;
    for (const auto& e : events)
      if (e.type == EventType::kPreempted) out.push_back(Value(e.workload));
    return out;
  }
};

PriorityClass Class(const std::string& name, int32_t value) {
  PriorityClass pc;
  pc.meta.name = name;
  pc.value = value;
  return pc;
}

struct Harness {
  explicit Harness(VictimOrder order) : e(Options()) {
    e.SetSinks(&sink, nullptr);
    PoolPolicy pp;
    pp.meta.name = "default";
    pp.victim_order = order;
    Do(0, UpsertPoolPolicy{pp});
    Do(0, UpsertPriorityClass{Class("low", 1000)});
    Do(0, UpsertPriorityClass{Class("high", 10000)});
  }
  static EngineOptions Options() {
    EngineOptions o;
    o.check_invariants = true;
    return o;
  }
  void Do(Millis t, CommandOp op) {
    const Status st = e.Apply(Command{t, std::move(op)});
    EXPECT_TRUE(st.ok()) << st.message();
  }
  WorkloadId Submit(Millis t, Pod p, const std::string& pc) {
    p.priority_class_name = pc;
    const WorkloadId id = e.next_workload_id();
    Do(t, SubmitPod{std::move(p), false, {}});
    Do(t, Tick{});
    return id;
  }
  Engine e;
  Events sink;
};

// A 4-GPU node runs `big` (2 GPUs, no checkpoint, from 50m) and `b`, `c` (1 GPU each, from 0,
// checkpointing every 30m but killed at the end of their grace: they lose the run since 60m). At
// 80m a 2-GPU preemptor comes. Reprieving the costliest first keeps `big` (60 GPU-minutes) and
// leaves `b` and `c` (20 + 20); Kubernetes' order (the earliest start reprieved first) leaves
// `big` alone. LeastLostWork takes the node's better plan by the node choice's rule: one victim
// before two, so `big`, as Kubernetes' order does (scenario 181).
TEST(LostWorkTest, ANodesPlanNeverHasMoreVictimsThanUnderKubernetesOrder) {
  for (VictimOrder order : {VictimOrder::kDefault, VictimOrder::kLeastLostWork}) {
    SCOPED_TRACE(ToString(order));
    Harness h(order);
    h.Do(0, UpsertNode{GpuNode("n1", 4), 0});
    Pod b = GpuPod("b", 1, "default"), c = GpuPod("c", 1, "default");
    for (Pod* p : {&b, &c}) {
      p->sim.checkpoint_interval = 30 * kMin;
      p->sim.shutdown_time = 5 * kMin;
    }
    h.Submit(0, b, "low");
    h.Submit(0, c, "low");
    const WorkloadId big = h.Submit(50 * kMin, GpuPod("big", 2, "default"), "low");
    h.Submit(80 * kMin, GpuPod("urgent", 2, "default"), "high");
    EXPECT_EQ(h.sink.Preempted(), std::vector<uint64_t>{Value(big)});
  }
}

// Of plans with as many victims, LeastLostWork still keeps the cheaper one on the node: here the
// Kubernetes order would stop `young` (the latest start, no checkpoint: 20 GPU-minutes), the
// lost-work order `old` (10 minutes since its checkpoint at 60m).
TEST(LostWorkTest, OfEqualPlansOnANodeTheLeastWorkLostIsKept) {
  Harness h(VictimOrder::kLeastLostWork);
  h.Do(0, UpsertNode{GpuNode("n1", 2), 0});
  Pod old = GpuPod("old", 1, "default");
  old.sim.checkpoint_interval = 60 * kMin;
  old.sim.shutdown_time = 5 * kMin;
  const WorkloadId o = h.Submit(0, old, "low");
  h.Submit(50 * kMin, GpuPod("young", 1, "default"), "low");
  h.Submit(70 * kMin, GpuPod("urgent", 1, "default"), "high");
  EXPECT_EQ(h.sink.Preempted(), std::vector<uint64_t>{Value(o)});
}

// A preemptor nominated to a node whose admission borrows from the cohort starts as soon as its
// victims have exited (it was deferred as a borrower and then passed over as nominated, holding
// the node until it no longer borrowed; scenario 180).
TEST(LostWorkTest, ANominatedBorrowerStartsOnceItsVictimsExited) {
  Harness h(VictimOrder::kDefault);
  h.Do(0, UpsertNode{GpuNode("n1", 2), 0});
  h.Do(0, UpsertNode{GpuNode("n2", 1), 0});
  using Min = std::pair<const char*, int64_t>;
  for (const auto& [ns, gpus] : {Min{"a", 1}, Min{"b", 3}}) {
    ElasticQuota q;
    q.meta.name = "gpus";
    q.meta.namespace_ = ns;
    q.cohort = "c";
    q.min.Set("nvidia.com/gpu", gpus * 1000);
    q.max = ResourceList{};
    q.max->Set("nvidia.com/gpu", 4000);
    h.Do(0, UpsertElasticQuota{q});
  }
  auto in = [](Pod p, const char* ns) {
    p.meta.namespace_ = ns;
    return p;
  };
  h.Submit(0, in(GpuPod("run", 1, "default"), "b"), "low");  // BestFit: n2, the fullest afterwards
  h.Submit(0, in(GpuPod("low-1", 1, "default"), "a"), "low");
  const WorkloadId low2 = h.Submit(0, in(GpuPod("low-2", 1, "default"), "a"), "low");  // borrows 1
  const WorkloadId high = h.Submit(10 * kMin, in(GpuPod("high", 1, "default"), "a"), "high");
  ASSERT_EQ(h.sink.Preempted(), std::vector<uint64_t>{Value(low2)});
  h.Do(10 * kMin, VictimExited{low2});
  h.Do(10 * kMin, Tick{});
  ASSERT_TRUE(h.e.Get(high).has_value());
  EXPECT_EQ(h.e.Get(high)->phase, Phase::kRunning) << h.e.Get(high)->message;
  EXPECT_EQ(h.e.Get(low2)->phase, Phase::kPending);
}

}  // namespace lost_work_test
}  // namespace arbiter::engine
