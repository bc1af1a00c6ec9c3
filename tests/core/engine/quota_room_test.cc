// A single pod blocked by its ElasticQuota whose quota victims (Kueue's rules) free the quota but
// not room on any node gets one plan: the quota victims plus a priority preemption for room on one
// node (Kubernetes' rules), all or nothing (reclaim.cc, step 3). Invariants are checked after
// every command.
#include <gtest/gtest.h>

#include <map>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"

namespace arbiter::engine {
namespace {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;

// The shared GPU pod, pinned to `node` by its hostname when one is given.
Pod GpuPod(const std::string& name, const std::string& ns, int gpus, int32_t priority,
           const std::string& node = "") {
  Pod p = gpu_objects::GpuPod(name, gpus, ns, priority);
  if (!node.empty()) p.node_selector["kubernetes.io/hostname"] = node;
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

class QuotaRoom : public ::testing::Test {
 protected:
  QuotaRoom() : e_(Options()) { e_.SetSinks(&sink_, nullptr); }
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
    Do(t, Tick{});
    return id;
  }
  Phase PhaseOf(WorkloadId id) {
    if (auto s = e_.Get(id)) return s->phase;
    return sink_.finished.at(Value(id)).phase;
  }
  std::string MessageOf(WorkloadId id) { return e_.Get(id)->message; }

  // Cohort reclaim. n1: b1 (team-b, 4 GPUs, within team-b's min 4); n2: `other` (namespace x,
  // 2 GPUs, priority `other_priority`) and b2 (team-b, 2 GPUs, borrowed). Then team-a's `a`
  // (4 GPUs, priority 100, within its min 4) arrives: reclaiming b2 frees its quota, but only 2
  // GPUs of n2.
  void SetUpCohort(int32_t other_priority) {
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
    b1_ = Submit(0, GpuPod("b1", "team-b", 4, 0, "n1"));
    other_ = Submit(kMin, GpuPod("other", "x", 2, other_priority, "n2"));
    b2_ = Submit(2 * kMin, GpuPod("b2", "team-b", 2, 0, "n2"));
    ASSERT_EQ(PhaseOf(b2_), Phase::kRunning);
    a_ = Submit(10 * kMin, GpuPod("a", "team-a", 4, 100));
  }

  // withinNamespace: LowerPriority, no cohort; team-a's min is 5 GPUs. n1: a1 (team-a, 2 GPUs)
  // and x1 (namespace x, 2 GPUs); n2: a2 (team-a, 2 GPUs, the newest) and x2 (namespace x, 2
  // GPUs); all priority 0, x's pods labelled app=x. Then team-a's `hi` (3 GPUs, priority 100):
  // preempting a2 frees its quota (2 + 3 <= 5), but no node has 3 GPUs free.
  void SetUpWithinNamespace(std::optional<PodDisruptionBudget> pdb) {
    Do(0, UpsertNode{GpuNode("n1", 4), 0});
    Do(0, UpsertNode{GpuNode("n2", 4), 1});
    ElasticQuota q;
    q.meta.name = "team-a";
    q.meta.namespace_ = "team-a";
    q.min = {{"nvidia.com/gpu", 5000}};
    q.preemption.within_namespace = WithinNamespacePolicy::kLowerPriority;
    Do(0, UpsertElasticQuota{q});
    if (pdb) Do(0, UpsertPodDisruptionBudget{*pdb});
    auto x_pod = [](const char* name, const char* node) {
      Pod p = GpuPod(name, "x", 2, 0, node);
      p.meta.labels["app"] = "x";
      return p;
    };
    a1_ = Submit(0, GpuPod("a1", "team-a", 2, 0, "n1"));
    x1_ = Submit(kMin, x_pod("x1", "n1"));
    a2_ = Submit(2 * kMin, GpuPod("a2", "team-a", 2, 0, "n2"));
    x2_ = Submit(3 * kMin, x_pod("x2", "n2"));
    for (WorkloadId id : {a1_, x1_, a2_, x2_}) ASSERT_EQ(PhaseOf(id), Phase::kRunning);
    hi_ = Submit(10 * kMin, GpuPod("hi", "team-a", 3, 100));
  }

  Engine e_;
  Sink sink_;
  WorkloadId b1_, b2_, other_, a_, a1_, a2_, x1_, x2_, hi_;
};

TEST_F(QuotaRoom, ReclaimVictimAndNodePreemptionInOnePlan) {
  SetUpCohort(0);
  EXPECT_EQ(PhaseOf(b1_), Phase::kRunning);  // team-b back at its min: no candidate
  EXPECT_EQ(PhaseOf(b2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(other_), Phase::kTerminating);
  ASSERT_NE(sink_.Find(EventType::kReclaimed, b2_), nullptr);
  ASSERT_NE(sink_.Find(EventType::kPreempted, other_), nullptr);
  EXPECT_EQ(sink_.Find(EventType::kPreempted, other_)->by, "team-a/a");
  ASSERT_NE(sink_.Find(EventType::kPreempting, a_), nullptr);
  EXPECT_EQ(e_.Get(a_)->reason, "Reclaiming");
  EXPECT_EQ(e_.Get(a_)->nominated_node, "n2");
  EXPECT_EQ(MessageOf(a_),
            "reclaiming lent quota: waiting for 1 borrowing workload(s) and 1 lower-priority "
            "workload(s) preempted for room to exit (nominated to n2)");
  // One victim gone is not enough: `a` binds once both have exited.
  Do(10 * kMin, VictimExited{b2_});
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(a_), Phase::kPending);
  Do(10 * kMin, VictimExited{other_});
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(a_), Phase::kRunning);
  EXPECT_EQ(e_.Get(a_)->node, "n2");
}

// All or nothing: `other` has a higher priority than `a`, so no node can be freed; b2, whose
// reclaim frees the quota but not the room, is not reclaimed either.
TEST_F(QuotaRoom, NothingEvictedWhenRoomCannotBeFreed) {
  SetUpCohort(200);
  for (WorkloadId id : {b1_, b2_, other_}) EXPECT_EQ(PhaseOf(id), Phase::kRunning);
  EXPECT_EQ(sink_.Find(EventType::kReclaimed, b2_), nullptr);
  EXPECT_EQ(sink_.Find(EventType::kPreempting, a_), nullptr);
  EXPECT_EQ(PhaseOf(a_), Phase::kPending);
  EXPECT_EQ(e_.Get(a_)->reason, "QuotaExceeded");
  EXPECT_EQ(e_.Get(a_)->nominated_node, "");
  EXPECT_NE(MessageOf(a_).find("not reclaiming: no node would have room for it even after the "
                               "borrowing workloads of cohort c exit"),
            std::string::npos)
      << MessageOf(a_);
  EXPECT_NE(MessageOf(a_).find(", nor by preempting for room (No preemption victims found"),
            std::string::npos)
      << MessageOf(a_);
}

// minRuntime protects the node's victims too: while `other` is younger than it, the combined plan
// waits (saying until when), and the engine wakes up when `other` comes of age.
TEST_F(QuotaRoom, NodeVictimYoungerThanMinRuntimeDefersThePlan) {
  PoolPolicy pp;
  pp.meta.name = "default";
  pp.min_runtime = 30 * kMin;
  Do(0, UpsertPoolPolicy{pp});
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
  b1_ = Submit(0, GpuPod("b1", "team-b", 4, 0, "n1"));
  b2_ = Submit(kMin, GpuPod("b2", "team-b", 2, 0, "n2"));
  other_ = Submit(20 * kMin, GpuPod("other", "x", 2, 0, "n2"));
  a_ = Submit(40 * kMin, GpuPod("a", "team-a", 4, 100));
  EXPECT_EQ(PhaseOf(b2_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(other_), Phase::kRunning);
  EXPECT_NE(MessageOf(a_).find("nor by preempting for room (Some workloads are younger than the "
                               "minimum run time (30m) and cannot be preempted before 50m)"),
            std::string::npos)
      << MessageOf(a_);
  EXPECT_EQ(e_.NextWakeup(), std::optional<Millis>(50 * kMin));
  Do(50 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(b2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(other_), Phase::kTerminating);
  EXPECT_EQ(e_.Get(a_)->nominated_node, "n2");
}

// preemptionPolicy: Never forbids the preemption for room (Kubernetes), not the quota plan alone:
// here both are needed, so nothing happens.
TEST_F(QuotaRoom, PreemptionPolicyNeverForbidsTheNodePart) {
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
  PriorityClass pc;
  pc.meta.name = "never";
  pc.value = 100;
  pc.preemption_policy = PreemptionPolicy::kNever;
  Do(0, UpsertPriorityClass{pc});
  b1_ = Submit(0, GpuPod("b1", "team-b", 4, 0, "n1"));
  other_ = Submit(kMin, GpuPod("other", "x", 2, 0, "n2"));
  b2_ = Submit(2 * kMin, GpuPod("b2", "team-b", 2, 0, "n2"));
  Pod p = GpuPod("a", "team-a", 4, 0);
  p.priority.reset();
  p.priority_class_name = "never";
  a_ = Submit(10 * kMin, p);
  for (WorkloadId id : {b1_, b2_, other_}) EXPECT_EQ(PhaseOf(id), Phase::kRunning);
  EXPECT_EQ(PhaseOf(a_), Phase::kPending);
  EXPECT_NE(MessageOf(a_).find("nor by preempting for room (Preemption is not allowed"),
            std::string::npos)
      << MessageOf(a_);
}

TEST_F(QuotaRoom, WithinNamespaceVictimAndNodePreemptionInOnePlan) {
  SetUpWithinNamespace(std::nullopt);
  // Kueue's victim: the newest lower-priority workload of team-a (a2, on n2); kube-scheduler's:
  // the fewest victims on one node (x2 on n2, rather than a1 and x1 on n1).
  EXPECT_EQ(PhaseOf(a2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(x2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(a1_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(x1_), Phase::kRunning);
  ASSERT_NE(sink_.Find(EventType::kPreempted, a2_), nullptr);
  EXPECT_NE(sink_.Find(EventType::kPreempted, a2_)->message.find("within the ElasticQuota"),
            std::string::npos);
  EXPECT_EQ(e_.Get(hi_)->nominated_node, "n2");
  EXPECT_EQ(MessageOf(hi_),
            "preempting within the quota of namespace team-a: waiting for 1 workload(s) and 1 "
            "lower-priority workload(s) preempted for room to exit (nominated to n2)");
  Do(10 * kMin, VictimExited{a2_});
  Do(10 * kMin, VictimExited{x2_});
  Do(10 * kMin, Tick{});
  EXPECT_EQ(PhaseOf(hi_), Phase::kRunning);
  EXPECT_EQ(e_.Get(hi_)->node, "n2");
}

// Under disruptionBudgets: Strict (the default) the node victims obey PodDisruptionBudgets: x's
// budget allows no disruption, so no node can be freed and nothing is evicted (not a2 either).
TEST_F(QuotaRoom, NodeVictimsRespectBudgets) {
  PodDisruptionBudget pdb;
  pdb.meta.name = "x";
  pdb.meta.namespace_ = "x";
  pdb.selector.match_labels["app"] = "x";
  pdb.min_available = IntOrPercent{false, 2};
  SetUpWithinNamespace(pdb);
  for (WorkloadId id : {a1_, x1_, a2_, x2_}) EXPECT_EQ(PhaseOf(id), Phase::kRunning);
  EXPECT_EQ(PhaseOf(hi_), Phase::kPending);
  EXPECT_EQ(e_.Get(hi_)->nominated_node, "");
  EXPECT_NE(MessageOf(hi_).find("nor by preempting for room (Preemption would violate "
                                "PodDisruptionBudget x/x (disruptionBudgets: Strict))"),
            std::string::npos)
      << MessageOf(hi_);
}

// All victims together respect the budgets, and the node is chosen knowing it: team-a's budget
// allows one disruption, which the quota victim a2 (Kueue's choice: the newest) uses. The cheapest
// node plan otherwise, a1 on n1, would break the budget; kube-scheduler, seeing the budget's
// status after a2's eviction, prefers a node whose victims break none: n3 (x3 and x4, priority 0
// and 10) over n2 (x2, priority 50).
TEST_F(QuotaRoom, QuotaVictimsUseTheBudgetsBeforeTheNodeIsChosen) {
  for (const char* n : {"n1", "n2", "n3"}) Do(0, UpsertNode{GpuNode(n, 4), 0});
  ElasticQuota q;
  q.meta.name = q.meta.namespace_ = "team-a";
  q.min = {{"nvidia.com/gpu", 5000}};
  q.preemption.within_namespace = WithinNamespacePolicy::kLowerPriority;
  Do(0, UpsertElasticQuota{q});
  PodDisruptionBudget pdb;
  pdb.meta.name = pdb.meta.namespace_ = "team-a";
  pdb.selector.match_labels["app"] = "a";
  pdb.max_unavailable = IntOrPercent{false, 1};
  Do(0, UpsertPodDisruptionBudget{pdb});
  auto a_pod = [](const char* name, const char* node) {
    Pod p = GpuPod(name, "team-a", 2, 0, node);
    p.meta.labels["app"] = "a";
    return p;
  };
  a1_ = Submit(0, a_pod("a1", "n1"));
  x1_ = Submit(0, GpuPod("x1", "x", 1, 0, "n1"));
  a2_ = Submit(kMin, a_pod("a2", "n2"));
  x2_ = Submit(kMin, GpuPod("x2", "x", 2, 50, "n2"));
  const WorkloadId x3 = Submit(kMin, GpuPod("x3", "x", 2, 0, "n3"));
  const WorkloadId x4 = Submit(kMin, GpuPod("x4", "x", 2, 10, "n3"));
  hi_ = Submit(10 * kMin, GpuPod("hi", "team-a", 3, 100));
  EXPECT_EQ(PhaseOf(a2_), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(a1_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(x1_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(x2_), Phase::kRunning);
  EXPECT_EQ(PhaseOf(x3), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(x4), Phase::kTerminating);
  EXPECT_EQ(e_.Get(hi_)->nominated_node, "n3");
  EXPECT_EQ(MessageOf(hi_),
            "preempting within the quota of namespace team-a: waiting for 1 workload(s) and 2 "
            "lower-priority workload(s) preempted for room to exit (nominated to n3)");
}

}  // namespace
}  // namespace arbiter::engine
