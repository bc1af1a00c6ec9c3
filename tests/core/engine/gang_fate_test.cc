// A running pod group shares one fate: whatever stops one of its members — its user deleting it,
// the Eviction API (which deletes it), or a within-namespace quota preemption — stops the others
// too, and they are requeued and wait as a group. Invariants are checked after every command.
#include <gtest/gtest.h>

#include <map>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace gang_fate_test {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;

Pod Member(const std::string& name, int gpus, const std::string& group, int32_t min_member,
           int32_t priority = 0) {
  Pod p = gpu_objects::GpuPod(name, gpus, "ml", priority);
  if (!group.empty()) p.pod_group = PodGroupRef{group, min_member, 0};
  return p;
}

struct Sink : EventSink {
  std::vector<Event> events;
  std::map<uint64_t, WorkloadStatus> finished;
  void OnEvent(const Event& e) override { events.push_back(e); }
  void OnFinished(const WorkloadStatus& s) override { finished[Value(s.id)] = s; }
  const Event* Find(EventType t, WorkloadId w) const {
    for (const auto& e : events)
      if (e.type == t && e.workload == w) return &e;
    return nullptr;
  }
};

class GangFate : public ::testing::Test {
 protected:
  GangFate() : e_(Options()) { e_.SetSinks(&sink_, nullptr); }
  static EngineOptions Options() {
    EngineOptions o;
    o.check_invariants = true;
    return o;
  }
  void Do(Millis t, CommandOp op) {
    const Status s = e_.Apply(Command{t, std::move(op)});
    ASSERT_TRUE(s.ok()) << s.message();
  }
  WorkloadId Submit(Millis t, Pod p) {
    const WorkloadId id = e_.next_workload_id();
    Do(t, SubmitPod{std::move(p), false, {}});
    return id;
  }
  Phase PhaseOf(WorkloadId id) {
    if (auto s = e_.Get(id)) return s->phase;
    return sink_.finished.at(Value(id)).phase;
  }
  Engine e_;
  Sink sink_;
};

// B7: `kubectl drain` / the Eviction API deletes one member; the other does not run on alone
// below minMember: it is stopped with the group, requeued, and waits for the group.
TEST_F(GangFate, DeletingARunningMemberStopsTheGroup) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  Do(0, UpsertNode{GpuNode("n2", 4), 0});
  const WorkloadId a = Submit(0, Member("tg-0", 4, "tg", 2));
  const WorkloadId b = Submit(0, Member("tg-1", 4, "tg", 2));
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  ASSERT_EQ(PhaseOf(b), Phase::kRunning);

  Do(kMin, DeletePod{a, std::nullopt});
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(a), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(b), Phase::kTerminating);
  const Event* stopped = sink_.Find(EventType::kPreempted, b);
  ASSERT_NE(stopped, nullptr);
  EXPECT_NE(stopped->message.find("stopped with pod group ml/tg (member ml/tg-0 was deleted)"),
            std::string::npos)
      << stopped->message;

  Do(kMin, VictimExited{a});
  Do(kMin, VictimExited{b});
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(a), Phase::kDeleted);  // gone for good
  EXPECT_EQ(PhaseOf(b), Phase::kPending);  // requeued, waiting for its group
  EXPECT_NE(sink_.Find(EventType::kRequeued, b), nullptr);
  EXPECT_NE(e_.Get(b)->message.find("pod group ml/tg: 1 of minMember 2 pods present"),
            std::string::npos)
      << e_.Get(b)->message;

  // A replacement member arrives: the group starts whole again.
  const WorkloadId c = Submit(2 * kMin, Member("tg-2", 4, "tg", 2));
  Do(2 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(PhaseOf(c), Phase::kRunning);
}

// Deleting a pending member (one beyond minMember) changes nothing for the running others.
TEST_F(GangFate, DeletingAPendingMemberStopsNothing) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  const WorkloadId a = Submit(0, Member("tg-0", 2, "tg", 2));
  const WorkloadId b = Submit(0, Member("tg-1", 2, "tg", 2));
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  ASSERT_EQ(PhaseOf(b), Phase::kRunning);
  const WorkloadId extra = Submit(kMin, Member("tg-2", 2, "tg", 2));  // beyond the node: pending
  Do(kMin, Tick{});
  ASSERT_EQ(PhaseOf(extra), Phase::kPending);
  Do(2 * kMin, DeletePod{extra, std::nullopt});
  Do(2 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(a), Phase::kRunning);
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(sink_.Find(EventType::kPreempted, a), nullptr);
}

// Within-namespace quota preemption of one member of a running group stops the whole group
// (it used to leave the other member running below minMember).
TEST_F(GangFate, WithinNamespaceVictimTakesItsGroup) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  ElasticQuota q;
  q.meta.name = "ml";
  q.meta.namespace_ = "ml";
  q.min = {{"nvidia.com/gpu", 4000}};
  q.preemption.within_namespace = WithinNamespacePolicy::kLowerPriority;
  Do(0, UpsertElasticQuota{q});
  const WorkloadId a = Submit(0, Member("low-0", 2, "low", 2, 0));
  const WorkloadId b = Submit(0, Member("low-1", 2, "low", 2, 0));
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  ASSERT_EQ(PhaseOf(b), Phase::kRunning);
  const WorkloadId urgent = Submit(kMin, Member("urgent", 2, "", 1, 100));
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(a), Phase::kTerminating);  // the one victim the quota needs
  EXPECT_EQ(PhaseOf(b), Phase::kTerminating);  // and its group with it
  const Event* stopped = sink_.Find(EventType::kPreempted, b);
  ASSERT_NE(stopped, nullptr);
  EXPECT_NE(stopped->message.find("stopped with pod group ml/low"), std::string::npos)
      << stopped->message;
  Do(kMin, VictimExited{a});
  Do(kMin, VictimExited{b});
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(urgent), Phase::kRunning);
  EXPECT_EQ(PhaseOf(a), Phase::kPending);
  EXPECT_EQ(PhaseOf(b), Phase::kPending);
}

// B3: a group blocked by its namespace's quota that a single preemption cannot free for every
// member evicts nothing; once it can, one plan stops the victims and nominates every member.
TEST_F(GangFate, GroupQuotaPreemptionIsAllOrNothing) {
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  ElasticQuota q;
  q.meta.name = "ml";
  q.meta.namespace_ = "ml";
  q.min = {{"nvidia.com/gpu", 4000}};
  q.preemption.within_namespace = WithinNamespacePolicy::kLowerPriority;
  Do(0, UpsertElasticQuota{q});
  const WorkloadId low = Submit(0, Member("low", 2, "", 1, 0));
  const WorkloadId mid = Submit(0, Member("mid", 2, "", 1, 500));
  Do(0, Tick{});
  // 2 x 2 GPUs at priority 100: only `low` is below it, which frees 2 GPUs of 4 needed.
  const WorkloadId g0 = Submit(kMin, Member("g-0", 2, "g", 2, 100));
  const WorkloadId g1 = Submit(kMin, Member("g-1", 2, "g", 2, 100));
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(low), Phase::kRunning);
  EXPECT_EQ(PhaseOf(mid), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g0), Phase::kPending);
  EXPECT_EQ(e_.Get(g0)->reason, "QuotaExceeded");
  // `mid` ends: `low` alone now frees enough for the group.
  Do(2 * kMin, PodFinished{mid, 0});
  Do(2 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(low), Phase::kTerminating);
  EXPECT_EQ(e_.Get(g0)->reason, "Reclaiming");
  EXPECT_EQ(e_.Get(g1)->reason, "Reclaiming");
  EXPECT_EQ(e_.Get(g0)->nominated_node, "n1");
  EXPECT_EQ(e_.Get(g1)->nominated_node, "n1");
  Do(2 * kMin, VictimExited{low});
  Do(2 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(g0), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g1), Phase::kRunning);
}

// Deleting the namespace deletes every member: those stopped with the group are deleted while
// shutting down, so none is requeued.
TEST_F(GangFate, DeletingTheNamespaceRequeuesNoMember) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  Namespace ns;
  ns.meta.name = "ml";
  Do(0, UpsertNamespace{ns});
  const WorkloadId a = Submit(0, Member("tg-0", 2, "tg", 2));
  const WorkloadId b = Submit(0, Member("tg-1", 2, "tg", 2));
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(b), Phase::kRunning);
  Do(kMin, DeleteNamespace{"ml"});
  Do(kMin, VictimExited{a});
  Do(kMin, VictimExited{b});
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(a), Phase::kDeleted);
  EXPECT_EQ(PhaseOf(b), Phase::kDeleted);
  EXPECT_EQ(sink_.Find(EventType::kRequeued, b), nullptr);
}

// Quota that a reclaim would free is not enough: every member also needs room once the victims
// are gone. Here reclaiming `hog` frees the quota for the group but room for one member only
// (`other`, outside any quota, keeps the rest of the node): nothing is evicted, and the reason
// says why.
TEST_F(GangFate, GroupReclaimNeedsRoomForEveryMember) {
  Do(0, UpsertNode{GpuNode("n1", 4), 0});
  for (const char* ns : {"team-a", "team-b"}) {
    ElasticQuota q;
    q.meta.name = ns;
    q.meta.namespace_ = ns;
    q.cohort = "c";
    q.min = {{"nvidia.com/gpu", std::string(ns) == "team-a" ? 4000 : 0}};
    Do(0, UpsertElasticQuota{q});
  }
  Pod hog = Member("hog", 2, "", 1);
  hog.meta.namespace_ = "team-b";
  Pod other = Member("other", 2, "", 1);
  other.meta.namespace_ = "x";
  const WorkloadId h = Submit(0, hog);
  Submit(0, other);
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(h), Phase::kRunning);
  Pod m0 = Member("g-0", 2, "g", 2), m1 = Member("g-1", 2, "g", 2);
  m0.meta.namespace_ = m1.meta.namespace_ = "team-a";
  const WorkloadId g0 = Submit(kMin, m0);
  Submit(kMin, m1);
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(h), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g0), Phase::kPending);
  EXPECT_NE(e_.Get(g0)->message.find(
                "not reclaiming: the group would not have room for every member even after "
                "the borrowing workloads of cohort c exit"),
            std::string::npos)
      << e_.Get(g0)->message;
}

// The minimal victim set frees the quota but leaves a member without room: every valid candidate
// is then tried as gone and given back from the last while quota and room suffice, so the group
// takes both borrowers (one per node) and starts whole.
TEST_F(GangFate, GroupReclaimTakesMoreVictimsForRoom) {
  Do(0, UpsertNode{GpuNode("n1", 2), 0});
  Do(0, UpsertNode{GpuNode("n2", 2), 0});
  for (const char* ns : {"team-a", "team-b"}) {
    ElasticQuota q;
    q.meta.name = ns;
    q.meta.namespace_ = ns;
    q.cohort = "c";
    q.min = {{"nvidia.com/gpu", std::string(ns) == "team-a" ? 6000 : 0}};
    Do(0, UpsertElasticQuota{q});
  }
  Pod b1 = Member("b1", 2, "", 1), b2 = Member("b2", 2, "", 1);
  b1.meta.namespace_ = b2.meta.namespace_ = "team-b";
  const WorkloadId v1 = Submit(0, b1);
  const WorkloadId v2 = Submit(0, b2);
  Do(0, Tick{});
  ASSERT_EQ(PhaseOf(v1), Phase::kRunning);
  ASSERT_EQ(PhaseOf(v2), Phase::kRunning);
  Pod m0 = Member("g-0", 2, "g", 2), m1 = Member("g-1", 2, "g", 2);
  m0.meta.namespace_ = m1.meta.namespace_ = "team-a";
  const WorkloadId g0 = Submit(kMin, m0);
  const WorkloadId g1 = Submit(kMin, m1);
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(v1), Phase::kTerminating);  // quota needed one victim, room needs both
  EXPECT_EQ(PhaseOf(v2), Phase::kTerminating);
  EXPECT_EQ(e_.Get(g0)->reason, "Reclaiming");
  Do(kMin, VictimExited{v1});
  Do(kMin, VictimExited{v2});
  Do(kMin, Tick{});
  EXPECT_EQ(PhaseOf(g0), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g1), Phase::kRunning);
}

// Issue 10: the quota victims free the group's quota but room for one member only; a
// lower-priority pod of a namespace without quota is preempted for the other member's room, in
// the same plan. Both members are nominated to that node, hold their quota, and run once both
// victims have exited.
class GangReclaimRoom : public GangFate {
 protected:
  // n1: b1 (team-b, 4 GPUs, within team-b's min); n2: `other` (namespace x, 2 GPUs, priority
  // `other_priority`) and b2 (team-b, 2 GPUs, borrowed). team-a's group g: 2 x 2 GPUs, priority
  // 100.
  void SetUpPool(int32_t other_priority) {
    Do(0, UpsertNode{GpuNode("n1", 4), 0});
    Do(0, UpsertNode{GpuNode("n2", 4), 1});
    for (const char* ns : {"team-a", "team-b"}) {
      ElasticQuota q;
      q.meta.name = ns;
      q.meta.namespace_ = ns;
      q.cohort = "c";
      q.min = {{"nvidia.com/gpu", 4000}};
      Do(0, UpsertElasticQuota{q});
    }
    Pod p1 = Member("b1", 4, "", 1), p2 = Member("b2", 2, "", 1);
    p1.meta.namespace_ = p2.meta.namespace_ = "team-b";
    Pod o = Member("other", 2, "", 1, other_priority);
    o.meta.namespace_ = "x";
    b1_ = Submit(0, p1);
    Do(0, Tick{});
    other_ = Submit(kMin, o);
    Do(kMin, Tick{});
    b2_ = Submit(2 * kMin, p2);
    Do(2 * kMin, Tick{});
    ASSERT_EQ(e_.Get(b1_)->node, "n1");
    ASSERT_EQ(e_.Get(other_)->node, "n2");
    ASSERT_EQ(e_.Get(b2_)->node, "n2");
    Pod m0 = Member("g-0", 2, "g", 2, 100), m1 = Member("g-1", 2, "g", 2, 100);
    m0.meta.namespace_ = m1.meta.namespace_ = "team-a";
    g0_ = Submit(10 * kMin, m0);
    g1_ = Submit(10 * kMin, m1);
    Do(10 * kMin, Tick{});
  }
  WorkloadId b1_, b2_, other_, g0_, g1_;
};

TEST_F(GangReclaimRoom, QuotaVictimsAndNodePreemptionInOnePlan) {
  SetUpPool(0);
  EXPECT_EQ(PhaseOf(b1_), Phase::kRunning);  // team-b back at its min: no candidate
  EXPECT_EQ(PhaseOf(b2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(other_), Phase::kTerminating);
  ASSERT_NE(sink_.Find(EventType::kReclaimed, b2_), nullptr);
  ASSERT_NE(sink_.Find(EventType::kPreempted, other_), nullptr);
  EXPECT_EQ(sink_.Find(EventType::kPreempted, other_)->by, "team-a/g-1");
  for (WorkloadId g : {g0_, g1_}) {
    EXPECT_EQ(e_.Get(g)->reason, "Reclaiming");
    EXPECT_EQ(e_.Get(g)->nominated_node, "n2");
    EXPECT_NE(e_.Get(g)->message.find("waiting for 1 borrowing workload(s) and 1 lower-priority "
                                      "workload(s) preempted for room to exit (nominated to n2)"),
              std::string::npos)
        << e_.Get(g)->message;
  }
  // One victim gone is not enough: the group binds together once both have exited.
  Do(10 * kMin, VictimExited{b2_});
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(g0_), Phase::kPending);
  EXPECT_EQ(PhaseOf(g1_), Phase::kPending);
  Do(10 * kMin, VictimExited{other_});
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(g0_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g1_), Phase::kRunning);
  EXPECT_EQ(e_.Get(g0_)->node, "n2");
  EXPECT_EQ(e_.Get(g1_)->node, "n2");
}

// All or nothing: `other` has the group's priority, so no member may preempt it; the reclaim of
// b2, which would free the quota and room for one member, does not happen either.
TEST_F(GangReclaimRoom, NothingEvictedWhenRoomCannotBeFreed) {
  SetUpPool(100);
  EXPECT_EQ(PhaseOf(b2_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(other_), Phase::kRunning);
  EXPECT_EQ(sink_.Find(EventType::kReclaimed, b2_), nullptr);
  EXPECT_EQ(sink_.Find(EventType::kPreempting, g0_), nullptr);
  EXPECT_EQ(sink_.Find(EventType::kPreempting, g1_), nullptr);
  for (WorkloadId g : {g0_, g1_}) {
    EXPECT_EQ(PhaseOf(g), Phase::kPending);
    EXPECT_EQ(e_.Get(g)->reason, "QuotaExceeded");
    EXPECT_EQ(e_.Get(g)->nominated_node, "");
    EXPECT_NE(e_.Get(g)->message.find("nor by preempting for room"), std::string::npos)
        << e_.Get(g)->message;
  }
}

// B11: while the only reclaim candidates are younger than minRuntime, a group within its min says
// it is reclaiming and when, not that its namespace borrows.
TEST_F(GangFate, GroupWaitingForMinRuntimeSaysReclaimingLentQuota) {
  PoolPolicy pp;
  pp.meta.name = "default";
  pp.min_runtime = 30 * kMin;
  Do(0, UpsertPoolPolicy{pp});
  Do(0, UpsertNode{GpuNode("n1", 8), 0});
  for (const char* ns : {"team-a", "team-b"}) {
    ElasticQuota q;
    q.meta.name = ns;
    q.meta.namespace_ = ns;
    q.cohort = "c";
    q.min = {{"nvidia.com/gpu", 4000}};
    Do(0, UpsertElasticQuota{q});
  }
  Pod hog = Member("hog", 8, "", 1);
  hog.meta.namespace_ = "team-b";
  const WorkloadId h = Submit(0, hog);
  Do(0, Tick{});
  Pod m0 = Member("g-0", 2, "g", 2), m1 = Member("g-1", 2, "g", 2);
  m0.meta.namespace_ = m1.meta.namespace_ = "team-a";
  const WorkloadId g0 = Submit(10 * kMin, m0);
  Submit(10 * kMin, m1);
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(h), Phase::kRunning);
  EXPECT_EQ(e_.Get(g0)->reason, "QuotaExceeded");
  EXPECT_EQ(e_.Get(g0)->message,
            "pod group team-a/g: reclaiming lent quota: 1 borrowing workload(s) become reclaimable "
            "at 30m (minRuntime 30m)");
  Do(30 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(h), Phase::kTerminating);
  EXPECT_EQ(e_.Get(g0)->reason, "Reclaiming");
}

// Under disruptionBudgets: Strict (the default) the combined plan's victims together respect the
// budgets: each member's plan for room is made with the budgets' allowances already used by the
// plan's earlier victims (quota victims, earlier members'), as kube-scheduler sees the budgets'
// status after those evictions. Pool: n1 b1 (team-b) + o1, n2 b2 (team-b, borrowed) + o2, n3 o3 +
// o4, every pod 2 GPUs; x's pods (o*) under one budget allowing one disruption. team-a's group of
// 3 x 2 GPUs (priority 100) needs 2 GPUs of quota back from team-b.
class GangBudgets : public GangFate {
 protected:
  void SetUpPool(int32_t b2_priority) {
    for (const char* n : {"n1", "n2", "n3"}) Do(0, UpsertNode{GpuNode(n, 4), 0});
    for (const char* ns : {"team-a", "team-b"}) {
      ElasticQuota q;
      q.meta.name = ns;
      q.meta.namespace_ = ns;
      q.cohort = "c";
      q.min = {{"nvidia.com/gpu", std::string(ns) == "team-a" ? 6000 : 2000}};
      Do(0, UpsertElasticQuota{q});
    }
    PodDisruptionBudget pdb;
    pdb.meta.name = "o";
    pdb.meta.namespace_ = "x";
    pdb.selector.match_labels["app"] = "o";
    pdb.max_unavailable = IntOrPercent{false, 1};
    Do(0, UpsertPodDisruptionBudget{pdb});
    auto pinned = [&](const char* name, const char* ns, const char* node, int32_t priority) {
      Pod p = Member(name, 2, "", 1, priority);
      p.meta.namespace_ = ns;
      if (std::string(ns) == "x") p.meta.labels["app"] = "o";
      p.node_selector["kubernetes.io/hostname"] = node;
      const WorkloadId id = Submit(0, p);
      Do(0, Tick{});
      return id;
    };
    b1_ = pinned("b1", "team-b", "n1", 0);            // within team-b's min
    b2_ = pinned("b2", "team-b", "n2", b2_priority);  // borrowed
    xs_ = {pinned("o1", "x", "n1", 0), pinned("o2", "x", "n2", 0), pinned("o3", "x", "n3", 0),
           pinned("o4", "x", "n3", 0)};
    ASSERT_EQ(PhaseOf(b1_), Phase::kRunning);
    ASSERT_EQ(PhaseOf(b2_), Phase::kRunning);
    for (int k = 0; k < 3; ++k) {
      Pod m = Member("g-" + std::to_string(k), 2, "g", 3, 100);
      m.meta.namespace_ = "team-a";
      group_.push_back(Submit(kMin, m));
    }
    Do(kMin, Tick{});
  }
  size_t XsStopped() {
    size_t n = 0;
    for (WorkloadId x : xs_) n += PhaseOf(x) == Phase::kTerminating;
    return n;
  }
  WorkloadId b1_, b2_;
  std::vector<WorkloadId> xs_, group_;
};

// One quota victim frees the quota and room for one member; of the two others, one preempts one of
// x's pods (the budget's one disruption) and the other preempts b2 (borrowed, lower priority, no
// budget) rather than a second of x's pods. (Before the plan charged its earlier victims to the
// budgets, both members picked one of x's pods and the whole plan was refused: a more faithful
// result, as kube-scheduler would choose after the first eviction.)
TEST_F(GangBudgets, GroupReclaimWithRoomTakesVictimsWithinBudgets) {
  SetUpPool(0);
  EXPECT_EQ(XsStopped(), 1u);
  EXPECT_EQ(PhaseOf(b1_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(b2_), Phase::kTerminating);
  for (WorkloadId g : group_) {
    EXPECT_EQ(PhaseOf(g), Phase::kPending);
    EXPECT_EQ(e_.Get(g)->reason, "Reclaiming");
    EXPECT_NE(e_.Get(g)->nominated_node, "");
  }
}

// b2 has a higher priority than the group: the third member could only preempt a second of x's
// pods, which the budget forbids once the second member's victim used its one disruption, so
// nothing is evicted and the reason names the budget.
TEST_F(GangBudgets, GroupReclaimWithRoomRespectsBudgetsTogether) {
  SetUpPool(200);
  EXPECT_EQ(PhaseOf(b1_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(b2_), Phase::kRunning);
  EXPECT_EQ(XsStopped(), 0u);
  for (WorkloadId g : group_) {
    EXPECT_EQ(PhaseOf(g), Phase::kPending);
    EXPECT_EQ(e_.Get(g)->reason, "QuotaExceeded");
  }
  EXPECT_NE(e_.Get(group_[0])->message.find("nor by preempting for room (team-a/g-2: Preemption "
                                            "would violate PodDisruptionBudget x/o"),
            std::string::npos)
      << e_.Get(group_[0])->message;
}

// The same for a group that fits its quota but not the nodes (priority preemption only): two
// members would each preempt one of x's pods, whose budget allows one disruption: nothing is
// evicted.
TEST_F(GangFate, GroupPreemptionRespectsBudgetsTogether) {
  for (const char* n : {"n1", "n2"}) Do(0, UpsertNode{GpuNode(n, 2), 0});
  PodDisruptionBudget pdb;
  pdb.meta.name = "o";
  pdb.meta.namespace_ = "x";
  pdb.selector.match_labels["app"] = "o";
  pdb.max_unavailable = IntOrPercent{false, 1};
  Do(0, UpsertPodDisruptionBudget{pdb});
  std::vector<WorkloadId> xs;
  for (const char* name : {"o1", "o2"}) {
    Pod p = Member(name, 2, "", 1);
    p.meta.namespace_ = "x";
    p.meta.labels["app"] = "o";
    xs.push_back(Submit(0, p));
  }
  Do(0, Tick{});
  const WorkloadId g0 = Submit(kMin, Member("g-0", 2, "g", 2, 100));
  const WorkloadId g1 = Submit(kMin, Member("g-1", 2, "g", 2, 100));
  Do(kMin, Tick{});
  for (WorkloadId x : xs) EXPECT_EQ(PhaseOf(x), Phase::kRunning);
  EXPECT_EQ(PhaseOf(g0), Phase::kPending);
  EXPECT_EQ(PhaseOf(g1), Phase::kPending);
  EXPECT_EQ(sink_.Find(EventType::kPreempting, g0), nullptr);
  // The second member's plan is made with the first one's victim charged to the budget.
  EXPECT_NE(e_.Get(g0)->message.find("ml/g-1: Preemption would violate PodDisruptionBudget x/o"),
            std::string::npos)
      << e_.Get(g0)->message;
}

}  // namespace gang_fate_test
}  // namespace arbiter::engine
