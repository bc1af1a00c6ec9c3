// The engine's commands (command.h), one rule per test: what a refused command answers, and how
// runtime changes of nodes and policy objects take effect (Kubernetes semantics: nothing running
// is evicted by a change; admissions afterwards follow it). Invariants are checked after every
// command.
#include <gtest/gtest.h>

#include <map>

#include "core/engine/engine.h"
#include "core/engine/gpu_objects.h"
#include "core/object_serial.h"
#include "core/serial.h"

namespace arbiter::engine {
namespace {

constexpr Millis kMin = 60000;
using gpu_objects::GpuNode;
using gpu_objects::GpuPod;

PriorityClass Class(const std::string& name, int32_t value, bool global_default = false) {
  PriorityClass pc;
  pc.meta.name = name;
  pc.value = value;
  pc.global_default = global_default;
  return pc;
}

ResourceQuota PodQuota(const std::string& ns, int64_t pods) {
  ResourceQuota q;
  q.meta.name = "pods";
  q.meta.namespace_ = ns;
  q.hard.push_back({"pods", QuotaTrack::kCount, "pods", pods});
  return q;
}

struct Sink : EventSink {
  std::vector<Event> events;
  std::map<uint64_t, WorkloadStatus> finished;
  void OnEvent(const Event& e) override { events.push_back(e); }
  void OnFinished(const WorkloadStatus& s) override { finished[Value(s.id)] = s; }
  size_t Count(EventType t) const {
    size_t n = 0;
    for (const auto& e : events) n += e.type == t;
    return n;
  }
  const Event* Last(EventType t) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
      if (it->type == t) return &*it;
    return nullptr;
  }
};

class Commands : public ::testing::Test {
 protected:
  Commands() : e_(Options()) { e_.SetSinks(&sink_, nullptr); }
  static EngineOptions Options() {
    EngineOptions o;
    o.check_invariants = true;
    return o;
  }
  Status Do(Millis t, CommandOp op) { return e_.Apply(Command{t, std::move(op)}); }
  WorkloadId Submit(Millis t, Pod p, bool immediate = false) {
    const WorkloadId id = e_.next_workload_id();
    EXPECT_TRUE(Do(t, SubmitPod{std::move(p), immediate, {}}).ok());
    return id;
  }
  Phase PhaseOf(WorkloadId id) {
    if (auto s = e_.Get(id)) return s->phase;
    return sink_.finished.at(Value(id)).phase;
  }
  Engine e_;
  Sink sink_;
};

TEST_F(Commands, RefusedCommandsSayWhyWithACode) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId a = Submit(0, GpuPod("a", 1));
  EXPECT_EQ(Do(0, SubmitPod{GpuPod("a", 1), false, {}}).code(), StatusCode::kAlreadyExists);
  Pod nameless = GpuPod("", 1);
  EXPECT_EQ(Do(0, SubmitPod{nameless, false, {}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Do(0, DeletePod{static_cast<WorkloadId>(99), std::nullopt}).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(Do(0, VictimExited{a}).code(),
            StatusCode::kFailedPrecondition);  // pending, not terminating
  EXPECT_EQ(Do(0, PodFinished{a, 0}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Do(0, RemoveNode{"nope"}).code(), StatusCode::kNotFound);
  Node half = GpuNode("half", 1);
  half.capacity.Set("nvidia.com/gpu", 1500);
  half.allocatable = half.capacity;
  EXPECT_EQ(Do(0, UpsertNode{half, 0}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("high", 100, true)}).ok());
  EXPECT_EQ(Do(0, UpsertPriorityClass{Class("high", 200, true)}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Do(0, UpsertPriorityClass{Class("other", 5, true)}).code(), StatusCode::kConflict);
  EXPECT_EQ(Do(0, DeletePriorityClass{"nope"}).code(), StatusCode::kNotFound);
  PoolPolicy pp;
  pp.cpu_overcommit_milli = 900;
  EXPECT_EQ(Do(0, UpsertPoolPolicy{pp}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Do(0, DeleteNamespace{"nope"}).code(), StatusCode::kNotFound);
  // Nothing changed: the first pod is still there and still the only one.
  EXPECT_EQ(e_.live_workloads(), 1u);
}

// Kubernetes' object count quota: count/pods counts a terminal pod until DeletePod (pods does
// not); the deletion frees the count, and a snapshot keeps it.
TEST_F(Commands, CountPodsCountsTerminalPodsUntilDeleted) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 4), 0}).ok());
  ResourceQuota q = PodQuota("ml", 1);
  q.meta.name = "objects";
  q.hard[0] = {"count/pods", QuotaTrack::kCount, "pods", 1};
  ASSERT_TRUE(Do(0, UpsertResourceQuota{q}).ok());
  const WorkloadId a = Submit(0, GpuPod("a", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, PodFinished{a, 0}).ok());
  const WorkloadId b = Submit(kMin, GpuPod("b", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kPending);
  EXPECT_NE(e_.Get(b)->message.find(
                "exceeded quota: objects, requested: count/pods=1, used: count/pods=1"),
            std::string::npos)
      << e_.Get(b)->message;
  auto restored = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  ASSERT_TRUE(Do(2 * kMin, DeletePod{a, {}}).ok());  // the finished pod's object goes
  ASSERT_TRUE(Do(2 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(Do(2 * kMin, DeletePod{a, {}}).code(), StatusCode::kNotFound);  // only once
  // The restored engine still counts `a`: the same deletion frees it there too.
  ASSERT_TRUE((*restored)->Apply(Command{2 * kMin, DeletePod{a, {}}}).ok());
  ASSERT_TRUE((*restored)->Apply(Command{2 * kMin, Tick{}}).ok());
  EXPECT_EQ((*restored)->Get(b)->phase, Phase::kRunning);
}

TEST_F(Commands, ALoweredQuotaNeverEvictsItBlocksNewAdmissions) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 8), 0}).ok());
  ASSERT_TRUE(Do(0, UpsertResourceQuota{PodQuota("ml", 3)}).ok());
  std::vector<WorkloadId> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Submit(0, GpuPod("p" + std::to_string(i), 1)));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  for (auto id : ids) ASSERT_EQ(PhaseOf(id), Phase::kRunning);
  ASSERT_TRUE(Do(kMin, UpsertResourceQuota{PodQuota("ml", 1)}).ok());  // lowered below usage
  const WorkloadId late = Submit(kMin, GpuPod("late", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  for (auto id : ids) EXPECT_EQ(PhaseOf(id), Phase::kRunning) << "a lowered quota never evicts";
  EXPECT_EQ(PhaseOf(late), Phase::kPending);
  ASSERT_NE(sink_.Last(EventType::kQuotaExceeded), nullptr);
  EXPECT_NE(sink_.Last(EventType::kQuotaExceeded)->message.find("used: pods=3, limited: pods=1"),
            std::string::npos);
  // Two finish: usage 1 is still at the limit.
  ASSERT_TRUE(Do(2 * kMin, PodFinished{ids[0], 0}).ok());
  ASSERT_TRUE(Do(2 * kMin, PodFinished{ids[1], 0}).ok());
  ASSERT_TRUE(Do(2 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(late), Phase::kPending);
  ASSERT_TRUE(Do(3 * kMin, PodFinished{ids[2], 0}).ok());
  ASSERT_TRUE(Do(3 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(late), Phase::kRunning);
  // Deleting the quota lifts it.
  ASSERT_TRUE(Do(4 * kMin, DeleteResourceQuota{ObjectRef{"ml", "pods"}}).ok());
  const WorkloadId free1 = Submit(4 * kMin, GpuPod("free1", 1));
  const WorkloadId free2 = Submit(4 * kMin, GpuPod("free2", 1));
  ASSERT_TRUE(Do(4 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(free1), Phase::kRunning);
  EXPECT_EQ(PhaseOf(free2), Phase::kRunning);
}

TEST_F(Commands, ANewQuotaCountsWhatAlreadyRuns) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 8), 0}).ok());
  Submit(0, GpuPod("a", 1));
  Submit(0, GpuPod("b", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, UpsertResourceQuota{PodQuota("ml", 2)}).ok());
  const WorkloadId c = Submit(kMin, GpuPod("c", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(c), Phase::kPending);
}

// A snapshot written before version 13 (when the scope CrossNamespacePodAffinity was skipped)
// holds the usage of such a quota counting every pod. Restored, that usage is recounted as a new
// quota counts what already runs: the pods without a cross-namespace term leaving would take
// nothing off it, and the quota would stay exhausted forever. A version-13 snapshot is restored as
// saved.
TEST_F(Commands, AnOlderSnapshotRecountsCrossNamespacePodAffinityQuotas) {
  ResourceQuota q = PodQuota("ml", 2);
  q.scope_selector.push_back({"CrossNamespacePodAffinity", SelectorOperator::kExists, {}});
  auto cross = [](const std::string& name) {
    Pod p = GpuPod(name, 1);
    PodAffinityTerm term;
    term.namespaces = {"other"};
    term.topology_key = "kubernetes.io/hostname";
    p.pod_anti_affinity.required = {term};
    return p;
  };
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 8), 0}).ok());
  ASSERT_TRUE(Do(0, UpsertResourceQuota{q}).ok());
  // One cross-namespace pod ran and ended (its quota's usage has the key "pods", now 0), two
  // plain pods run: the quota does not count them.
  const WorkloadId gone = Submit(0, cross("gone"));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_EQ(PhaseOf(gone), Phase::kRunning);
  ASSERT_TRUE(Do(kMin, PodFinished{gone, 0}).ok());
  const WorkloadId a = Submit(kMin, GpuPod("a", 1));
  const WorkloadId b = Submit(kMin, GpuPod("b", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  ASSERT_EQ(PhaseOf(b), Phase::kRunning);
  ASSERT_EQ(e_.resource_quota_usages("ml").at(0).items.at(0).used, 0);
  const std::string snap = e_.Snapshot();
  // The version-12 file an older arbiter wrote of the same state: its usage counts a and b
  // (used {"pods": 2}, then no hold and no allowance), the rest the same bytes.
  auto body = serial::Unseal(snap, "engine", Engine::kSnapshotVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  const std::string one(std::string("\x01", 1) + std::string(7, '\0'));
  const std::string used = one + std::string("\x04", 1) + std::string(7, '\0') + "pods";
  const std::string saved = used + std::string(24, '\0');
  std::string b12 = *body;
  const size_t at = b12.find(saved);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(b12.find(saved, at + 1), std::string::npos);  // one quota usage of that shape
  b12[at + used.size()] = 2;
  auto old = Engine::Restore(serial::Seal("engine", 12, b12));
  ASSERT_TRUE(old.ok()) << old.message();
  Engine& r = **old;
  EXPECT_EQ(r.resource_quota_usages("ml").at(0).items.at(0).used, 0) << "recounted";
  EXPECT_TRUE(r.Snapshot() == snap) << "what the new arbiter counts, byte for byte";
  ASSERT_TRUE(r.Apply(At(2 * kMin, DeletePod{a, 0})).ok());
  ASSERT_TRUE(r.Apply(At(2 * kMin, VictimExited{a})).ok());
  ASSERT_TRUE(r.Apply(At(2 * kMin, DeletePod{b, 0})).ok());
  ASSERT_TRUE(r.Apply(At(2 * kMin, VictimExited{b})).ok());
  EXPECT_EQ(r.resource_quota_usages("ml").at(0).items.at(0).used, 0);
  const WorkloadId c = r.next_workload_id();
  ASSERT_TRUE(r.Apply(At(2 * kMin, SubmitPod{cross("c"), false, {}})).ok());
  ASSERT_TRUE(r.Apply(At(2 * kMin, Tick{})).ok());
  ASSERT_TRUE(r.Get(c).has_value());
  EXPECT_EQ(r.Get(c)->phase, Phase::kRunning) << r.Get(c)->message;
  EXPECT_EQ(r.resource_quota_usages("ml").at(0).items.at(0).used, 1);
  // The same bytes as version 13 are restored as saved: no recount, byte for byte.
  const std::string b13 = serial::Seal("engine", 13, b12);
  auto kept = Engine::Restore(b13);
  ASSERT_TRUE(kept.ok()) << kept.message();
  EXPECT_EQ((*kept)->resource_quota_usages("ml").at(0).items.at(0).used, 2);
  EXPECT_EQ((*kept)->Snapshot(), serial::Seal("engine", Engine::kSnapshotVersion, b12));
  auto same = Engine::Restore(snap);
  ASSERT_TRUE(same.ok()) << same.message();
  EXPECT_EQ((*same)->Snapshot(), snap);
}

TEST_F(Commands, ADeletedPriorityClassKeepsRunningPodsPriority) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 8), 0}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("serving", 10000)}).ok());
  Pod p = GpuPod("svc", 1);
  p.priority_class_name = "serving";
  const WorkloadId svc = Submit(0, p);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, DeletePriorityClass{"serving"}).ok());
  EXPECT_EQ(e_.Get(svc)->priority, 10000);
  EXPECT_EQ(e_.Get(svc)->priority_class, "serving");
  Pod q = GpuPod("svc2", 1);
  q.priority_class_name = "serving";
  const WorkloadId svc2 = Submit(kMin, q);
  EXPECT_EQ(PhaseOf(svc2), Phase::kRejected);
  EXPECT_EQ(sink_.finished.at(Value(svc2)).reason, "UnknownPriorityClass");
}

TEST_F(Commands, DeletingPodsPendingRunningAndTerminating) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId run = Submit(0, GpuPod("run", 1));
  const WorkloadId wait = Submit(0, GpuPod("wait", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_EQ(PhaseOf(run), Phase::kRunning);
  ASSERT_EQ(PhaseOf(wait), Phase::kPending);
  // Pending: gone at once.
  ASSERT_TRUE(Do(kMin, DeletePod{wait, std::nullopt}).ok());
  EXPECT_FALSE(e_.Get(wait).has_value());
  EXPECT_EQ(sink_.finished.at(Value(wait)).phase, Phase::kDeleted);
  // Running: SIGTERM with its grace (or the override), holds its node until it exits.
  ASSERT_TRUE(Do(kMin, DeletePod{run, 5000}).ok());
  const Event* del = sink_.Last(EventType::kDeleted);
  ASSERT_NE(del, nullptr);
  EXPECT_EQ(del->grace, 5000);
  EXPECT_EQ(del->work_facts, WorkFacts::kStopPlan);
  EXPECT_EQ(e_.Get(run)->phase, Phase::kTerminating);
  const WorkloadId next = Submit(kMin, GpuPod("next", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(next), Phase::kPending) << "the deleted pod still holds its GPU";
  ASSERT_TRUE(Do(kMin + 5000, VictimExited{run}).ok());
  EXPECT_EQ(sink_.finished.at(Value(run)).phase, Phase::kDeleted) << "deleted, never requeued";
  ASSERT_TRUE(Do(kMin + 5000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(next), Phase::kRunning);
  EXPECT_EQ(e_.Apply(At(kMin + 5000, DeletePod{run, std::nullopt})).code(), StatusCode::kNotFound);
}

// A second delete of a terminating workload may only shorten its grace (kube-apiserver's rule
// for a second DELETE): a grace ending sooner than its SIGTERM's becomes its grace (Deleted, work
// facts kStopSooner, the grace left); a later one, or `shorten` off (commands before version 12),
// changes nothing.
TEST_F(Commands, ASecondDeleteOnlyShortensTheGrace) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId run = Submit(0, GpuPod("run", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, DeletePod{run, 60000}).ok());
  ASSERT_TRUE(Do(kMin + 10000, DeletePod{run, 5000, false}).ok());
  EXPECT_EQ(e_.Get(run)->grace, 60000);
  ASSERT_TRUE(Do(kMin + 10000, DeletePod{run, 55000}).ok());  // ends no sooner
  EXPECT_EQ(e_.Get(run)->grace, 60000);
  EXPECT_EQ(sink_.Last(EventType::kDeleted)->work_facts, WorkFacts::kNone);
  ASSERT_TRUE(Do(kMin + 10000, DeletePod{run, 5000}).ok());
  EXPECT_EQ(e_.Get(run)->grace, 15000) << "from the SIGTERM";
  const Event* del = sink_.Last(EventType::kDeleted);
  EXPECT_EQ(del->work_facts, WorkFacts::kStopSooner);
  EXPECT_EQ(del->grace, 5000);
  EXPECT_EQ(e_.Get(run)->message, "deleted; SIGTERM, grace shortened to 5s from now");
  ASSERT_TRUE(Do(kMin + 15000, VictimExited{run}).ok());
  EXPECT_EQ(sink_.finished.at(Value(run)).phase, Phase::kDeleted);
}

// A shortened grace moves the workload's expected end, which a waiting pod's backfill reservation
// reads: the next cycle reserves from the new end.
TEST_F(Commands, AShortenedGraceMovesAWaitingPodsReservation) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId run = Submit(0, GpuPod("run", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, DeletePod{run, 60000}).ok());
  const WorkloadId wait = Submit(kMin, GpuPod("wait", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  ASSERT_TRUE(e_.Get(wait)->reservation.has_value()) << e_.Get(wait)->message;
  const Millis before = e_.Get(wait)->reservation->from;
  ASSERT_TRUE(Do(kMin + 10000, DeletePod{run, 5000}).ok());
  ASSERT_TRUE(Do(kMin + 10000, Tick{}).ok());
  ASSERT_TRUE(e_.Get(wait)->reservation.has_value()) << e_.Get(wait)->message;
  EXPECT_EQ(e_.Get(wait)->reservation->from, before - 45000) << e_.Get(wait)->message;
}

// DeletePod::shorten is encoded (command version 12); a version-11 command, without it, reads
// false: what a second delete of such a record did is what it does on replay.
TEST(CommandEncoding, DeletePodShortenIsKeptAndOlderCommandsReadItOff) {
  for (bool shorten : {true, false}) {
    auto c = DecodeCommand(EncodeCommand(At(1, DeletePod{WorkloadId{7}, 5000, shorten})));
    ASSERT_TRUE(c.ok()) << c.message();
    EXPECT_EQ(std::get<DeletePod>(c->op).shorten, shorten);
  }
  auto body = serial::Unseal(EncodeCommand(At(1, DeletePod{WorkloadId{7}, 5000, true})), "command",
                             kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string v11 = *body;
  ASSERT_EQ(v11.back(), '\x01');
  v11.pop_back();
  auto old = DecodeCommand(serial::Seal("command", 11, v11));
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_FALSE(std::get<DeletePod>(old->op).shorten);
  EXPECT_EQ(std::get<DeletePod>(old->op).grace_period, 5000);
}

TEST_F(Commands, ExitCodesDecideSucceededOrFailed) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 2), 0}).ok());
  const WorkloadId ok = Submit(0, GpuPod("ok", 1));
  const WorkloadId bad = Submit(0, GpuPod("bad", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, PodFinished{ok, 0}).ok());
  ASSERT_TRUE(Do(kMin, PodFinished{bad, 3}).ok());
  EXPECT_EQ(sink_.finished.at(Value(ok)).phase, Phase::kSucceeded);
  EXPECT_EQ(sink_.finished.at(Value(bad)).phase, Phase::kFailed);
  EXPECT_EQ(sink_.finished.at(Value(bad)).exit_code, 3);
  ASSERT_NE(sink_.Last(EventType::kFailed), nullptr);
  EXPECT_EQ(sink_.Last(EventType::kFailed)->message, "exited with code 3");
  EXPECT_EQ(e_.live_workloads(), 0u);
}

TEST_F(Commands, NodeChangesNeverEvict) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 2), 0}).ok());
  const WorkloadId a = Submit(0, GpuPod("a", 1));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  // Cordon: it keeps running; nothing new lands there.
  Node cordoned = GpuNode("n1", 2);
  cordoned.unschedulable = true;
  ASSERT_TRUE(Do(kMin, UpsertNode{cordoned, 0}).ok());
  const WorkloadId b = Submit(kMin, GpuPod("b", 1));
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kRunning);
  EXPECT_EQ(PhaseOf(b), Phase::kPending);
  ASSERT_NE(sink_.Last(EventType::kFailedScheduling), nullptr);
  EXPECT_NE(sink_.Last(EventType::kFailedScheduling)->message.find("1 node(s) were unschedulable"),
            std::string::npos);
  // Uncordon with one more GPU; removing the GPU in use is refused.
  ASSERT_TRUE(Do(2 * kMin, UpsertNode{GpuNode("n1", 3), 0}).ok());
  ASSERT_TRUE(Do(2 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(Do(3 * kMin, UpsertNode{GpuNode("n1", 1), 0}).code(), StatusCode::kFailedPrecondition);
  // A lower allocatable leaves the node above its capacity; nothing is evicted, nothing more binds.
  ASSERT_TRUE(Do(3 * kMin, UpsertNode{GpuNode("n1", 3, {}, 1000), 0}).ok());
  const WorkloadId c = Submit(3 * kMin, GpuPod("c", 1));
  ASSERT_TRUE(Do(3 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kRunning);
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(PhaseOf(c), Phase::kPending);
  EXPECT_TRUE(e_.CheckInvariants().ok());
}

TEST_F(Commands, DeletingANamespaceDeletesItsPodsAndObjects) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 4), 0}).ok());
  Namespace ns;
  ns.meta.name = "team";
  ASSERT_TRUE(Do(0, UpsertNamespace{ns}).ok());
  ASSERT_TRUE(Do(0, UpsertResourceQuota{PodQuota("team", 1)}).ok());
  const WorkloadId a = Submit(0, GpuPod("a", 1, "team"));
  const WorkloadId b = Submit(0, GpuPod("b", 1, "team"));
  const WorkloadId other = Submit(0, GpuPod("o", 1, "other"));
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_EQ(PhaseOf(a), Phase::kRunning);
  ASSERT_EQ(PhaseOf(b), Phase::kPending);  // the quota
  ASSERT_TRUE(Do(kMin, DeleteNamespace{"team"}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kDeleted);
  EXPECT_EQ(e_.Get(a)->phase, Phase::kTerminating);
  EXPECT_EQ(PhaseOf(other), Phase::kRunning);
  ASSERT_TRUE(Do(kMin, VictimExited{a}).ok());
  // Its quota went with it: a new pod in a namespace of that name is not limited.
  Submit(2 * kMin, GpuPod("x", 1, "team"));
  Submit(2 * kMin, GpuPod("y", 1, "team"));
  ASSERT_TRUE(Do(2 * kMin, Tick{}).ok());
  EXPECT_EQ(sink_.Count(EventType::kQuotaExceeded), 1u);
}

TEST_F(Commands, ImmediatePodsGetOneAttempt) {
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId fits = Submit(0, GpuPod("fits", 1), /*immediate=*/true);
  const WorkloadId late = Submit(0, GpuPod("late", 1), /*immediate=*/true);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  EXPECT_EQ(PhaseOf(fits), Phase::kRunning);
  EXPECT_EQ(PhaseOf(late), Phase::kRejected);
  EXPECT_EQ(sink_.finished.at(Value(late)).reason, "Unschedulable");
  EXPECT_NE(sink_.finished.at(Value(late))
                .message.find("0/1 nodes are available: 1 Insufficient nvidia.com/gpu"),
            std::string::npos);
}

TEST_F(Commands, ADeletedQoSPreemptsNothing) {
  PoolPolicy pp;
  pp.preemption_type = PreemptionType::kQoS;
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  QoS low, high;
  low.meta.name = "low";
  low.priority = 10;
  high.meta.name = "high";
  high.priority = 100;
  high.preempt = {"low"};
  ASSERT_TRUE(Do(0, UpsertQoS{low}).ok());
  ASSERT_TRUE(Do(0, UpsertQoS{high}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Pod v = GpuPod("v", 1);
  v.sim.qos = "low";
  Submit(0, v);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_TRUE(Do(kMin, DeleteQoS{"high"}).ok());
  Pod p = GpuPod("p", 1);
  p.sim.qos = "high";
  const WorkloadId rejected = Submit(kMin, p);
  EXPECT_EQ(PhaseOf(rejected), Phase::kRejected);  // a deleted QoS cannot be named
  // Redefined without the preempt list: a high pod waits instead of preempting.
  high.preempt.clear();
  ASSERT_TRUE(Do(kMin, UpsertQoS{high}).ok());
  Pod p2 = GpuPod("p2", 1);
  p2.sim.qos = "high";
  const WorkloadId waits = Submit(kMin, p2);
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(waits), Phase::kPending);
  EXPECT_EQ(sink_.Count(EventType::kPreempted), 0u);
}

// QoS spec.namespaces (issue 27): a pod of a namespace the list leaves out is Rejected at
// submission (QoSNotAllowed) and preempts nothing; one of a listed namespace preempts. The list is
// kept by a snapshot; a pod submitted before the list changed keeps its QoS.
TEST_F(Commands, AQoSLimitedToNamespacesRejectsThePodsOfOthers) {
  PoolPolicy pp;
  pp.preemption_type = PreemptionType::kQoS;
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  QoS low, high;
  low.meta.name = "low";
  high.meta.name = "high";
  high.priority = 100;
  high.preempt = {"low"};
  high.namespaces = std::vector<std::string>{"team-a"};
  ASSERT_TRUE(Do(0, UpsertQoS{low}).ok());
  ASSERT_TRUE(Do(0, UpsertQoS{high}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Pod v = GpuPod("v", 1);
  v.sim.qos = "low";
  const WorkloadId victim = Submit(0, v);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  Pod sneaky = GpuPod("sneaky", 1);  // namespace "ml"
  sneaky.sim.qos = "high";
  EXPECT_EQ(e_.NeverAdmissible(sneaky),
            "QoS high may not be used in namespace ml: its spec.namespaces is [team-a]");
  const WorkloadId rejected = Submit(kMin, sneaky);
  ASSERT_TRUE(Do(kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(rejected), Phase::kRejected);
  EXPECT_EQ(sink_.finished.at(Value(rejected)).reason, "QoSNotAllowed");
  EXPECT_EQ(PhaseOf(victim), Phase::kRunning);
  // The snapshot keeps the list: restored, the engine refuses the same pod.
  auto restored = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  Pod again = GpuPod("again", 1);
  again.sim.qos = "high";
  EXPECT_TRUE((*restored)->NeverAdmissible(again).has_value());
  Pod mine = GpuPod("m", 1, "team-a");
  mine.sim.qos = "high";
  EXPECT_EQ(e_.NeverAdmissible(mine), std::nullopt);
  Submit(2 * kMin, mine);
  ASSERT_TRUE(Do(2 * kMin, Tick{}).ok());
  EXPECT_EQ(sink_.Count(EventType::kPreempted), 1u);  // team-a's pod preempts v
  // A pod bound already (`arbiter scheduler` restarted under it) keeps its QoS: admitted under the
  // list of its time, it is not rejected (nor taken for a foreign pod) after the list changed.
  ASSERT_TRUE(Do(3 * kMin, UpsertNode{GpuNode("n2", 1), 0}).ok());
  Pod running = GpuPod("running", 1);  // namespace "ml"
  running.sim.qos = "high";
  const WorkloadId kept = e_.next_workload_id();
  ASSERT_TRUE(Do(3 * kMin, SubmitPod{running, false, {}, "n2"}).ok());
  ASSERT_TRUE(Do(3 * kMin, Tick{}).ok());
  EXPECT_EQ(PhaseOf(kept), Phase::kRunning) << e_.Get(kept)->message;
}

// An engine snapshot before version 14 has QoS objects without spec.namespaces: read as no list.
TEST_F(Commands, AVersion13SnapshotsQoSHasNoNamespaces) {
  QoS q;
  q.meta.name = "inference";
  q.priority = 7;
  q.grace_time = 4321;
  ASSERT_TRUE(Do(0, UpsertQoS{q}).ok());
  const std::string snap = e_.Snapshot();
  auto body = serial::Unseal(snap, "engine", Engine::kSnapshotVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  serial::Writer w;
  serial::Io(w, q);  // the QoS as version 14 writes it: its absent list last
  const std::string one = w.bytes();
  ASSERT_EQ(one.back(), '\0');
  std::string b13 = *body;
  const size_t at = b13.find(one);
  ASSERT_NE(at, std::string::npos);
  b13.erase(at + one.size() - 1, 1);
  auto old = Engine::Restore(serial::Seal("engine", 13, b13));
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_TRUE((*old)->Snapshot() == snap) << "the same QoS, no list";
  EXPECT_FALSE(Engine::Restore(serial::Seal("engine", 14, b13)).ok()) << "a misread would fail";
}

// QoS spec.namespaces is encoded (command version 13); a version-12 UpsertQoS, without it, reads
// as no list: every namespace may name the QoS, as it could then.
TEST(CommandEncoding, QoSNamespacesAreKeptAndOlderCommandsReadNone) {
  QoS q;
  q.meta.name = "inference";
  q.namespaces = std::vector<std::string>{"team-a", "ml"};
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertQoS{q})));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<UpsertQoS>(c->op).qos.namespaces, q.namespaces);
  q.namespaces.reset();
  auto body = serial::Unseal(EncodeCommand(At(1, UpsertQoS{q})), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string v12 = *body;
  ASSERT_EQ(v12.back(), '\0');  // the absent optional
  v12.pop_back();
  auto old = DecodeCommand(serial::Seal("command", 12, v12));
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_EQ(std::get<UpsertQoS>(old->op).qos.meta.name, "inference");
  EXPECT_FALSE(std::get<UpsertQoS>(old->op).qos.namespaces);
}

// PoolPolicy quota.maxSubmittedPerNamespace (issue 27; Slurm's GrpSubmitJobs): at most N pods of
// a namespace pending or running. The next is Rejected (SubmitLimit) and NeverAdmissible says so;
// another namespace is not held; a pod that finishes or is deleted frees its place; a pod bound
// already (SubmitPod::node) is counted, never refused; a restored engine counts the same.
TEST_F(Commands, ASubmitLimitRefusesTheNamespacesNextPodUntilOneFinishes) {
  PoolPolicy pp;
  pp.max_submitted_per_namespace = 2;
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  const WorkloadId running = Submit(0, GpuPod("a", 1));
  const WorkloadId pending = Submit(0, GpuPod("b", 1));  // no room: pending, counted
  ASSERT_TRUE(Do(0, Tick{}).ok());
  ASSERT_EQ(PhaseOf(running), Phase::kRunning);
  ASSERT_EQ(PhaseOf(pending), Phase::kPending);
  const std::string words =
      "namespace ml has 2 pods pending or running, the PoolPolicy's "
      "quota.maxSubmittedPerNamespace (Slurm's GrpSubmitJobs): another is refused until one of "
      "them finishes or is deleted";
  EXPECT_EQ(e_.NeverAdmissible(GpuPod("c", 1)), words);
  const WorkloadId over = Submit(0, GpuPod("c", 1));
  EXPECT_EQ(PhaseOf(over), Phase::kRejected);
  EXPECT_EQ(sink_.finished.at(Value(over)).reason, "SubmitLimit");
  EXPECT_EQ(sink_.finished.at(Value(over)).message, words);
  EXPECT_EQ(e_.NeverAdmissible(GpuPod("d", 1, "team-a")), std::nullopt);  // its own count
  LimitRange lr;  // a pod its LimitRange refuses gets that refusal from Submit, not the cap's
  lr.meta.name = "floor";
  lr.meta.namespace_ = "ml";
  lr.limits.push_back({});
  lr.limits.back().min.Set("cpu", 2000);
  ASSERT_TRUE(Do(0, UpsertLimitRange{lr}).ok());
  Pod small = GpuPod("small", 1);
  small.containers[0].requests.Set("cpu", 1000);
  EXPECT_EQ(e_.NeverAdmissible(small), std::nullopt);
  ASSERT_TRUE(Do(0, DeleteLimitRange{ObjectRef{"ml", "floor"}}).ok());
  // Restored, the engine counts the same two.
  auto restored = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.message();
  EXPECT_EQ((*restored)->NeverAdmissible(GpuPod("c", 1)), words);
  // A pod bound already is counted (3 now), not refused.
  SubmitPod bound{GpuPod("e", 1), false, {}};
  bound.node = "n1";
  const WorkloadId kept = e_.next_workload_id();
  ASSERT_TRUE(Do(0, std::move(bound)).ok());
  EXPECT_NE(PhaseOf(kept), Phase::kRejected);
  // The running pod finishes, the pending one is deleted: one place free, not two.
  ASSERT_TRUE(Do(kMin, PodFinished{running, 0}).ok());
  ASSERT_TRUE(Do(kMin, DeletePod{pending, {}}).ok());
  EXPECT_EQ(PhaseOf(Submit(kMin, GpuPod("f", 1))), Phase::kPending);
  EXPECT_EQ(PhaseOf(Submit(kMin, GpuPod("g", 1))), Phase::kRejected);
  // No cap without the field (or without a PoolPolicy).
  ASSERT_TRUE(Do(kMin, DeletePoolPolicy{}).ok());
  EXPECT_EQ(e_.NeverAdmissible(GpuPod("g", 1)), std::nullopt);
  pp.max_submitted_per_namespace = -1;
  EXPECT_EQ(Do(kMin, UpsertPoolPolicy{pp}).code(), StatusCode::kInvalidArgument);
}

// The cap is encoded (command version 14, engine snapshot 15); a version-13 UpsertPoolPolicy,
// without it, reads as no cap.
TEST(CommandEncoding, TheSubmitLimitIsKeptAndOlderCommandsReadNone) {
  PoolPolicy pp;
  pp.meta.name = "pool";
  pp.max_submitted_per_namespace = 1000;
  auto c = DecodeCommand(EncodeCommand(At(1, UpsertPoolPolicy{pp})));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<UpsertPoolPolicy>(c->op).policy.max_submitted_per_namespace, 1000);
  pp.max_submitted_per_namespace = 0;
  auto body =
      serial::Unseal(EncodeCommand(At(1, UpsertPoolPolicy{pp})), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string v13 = *body;
  ASSERT_GE(v13.size(), 8u);
  ASSERT_EQ(v13.substr(v13.size() - 8), std::string(8, '\0'));  // the cap, an int64 0
  v13.resize(v13.size() - 8);
  auto old = DecodeCommand(serial::Seal("command", 13, v13));
  ASSERT_TRUE(old.ok()) << old.message();
  EXPECT_EQ(std::get<UpsertPoolPolicy>(old->op).policy.meta.name, "pool");
  EXPECT_EQ(std::get<UpsertPoolPolicy>(old->op).policy.max_submitted_per_namespace, 0);
}

TEST_F(Commands, TimeNeverGoesBackwards) {
  ASSERT_TRUE(Do(10 * kMin, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Submit(5 * kMin, GpuPod("a", 1));  // earlier than the engine's clock: taken as the clock
  EXPECT_EQ(e_.now(), 10 * kMin);
  ASSERT_NE(sink_.Last(EventType::kSubmitted), nullptr);
  EXPECT_EQ(sink_.Last(EventType::kSubmitted)->time, 10 * kMin);
}

TEST(EngineMemory, FinishedWorkloadsLeaveTheEngine) {
  // The engine's memory follows what is live, not history: after ten thousand pods ran and
  // finished, its snapshot is as small as after ten.
  auto run = [](int pods) {
    Engine e;
    EXPECT_TRUE(e.Apply(At(0, UpsertNode{GpuNode("n1", 8), 0})).ok());
    for (int i = 0; i < pods; ++i) {
      const Millis t = i * kMin;
      const WorkloadId id = e.next_workload_id();
      EXPECT_TRUE(e.Apply(At(t, SubmitPod{GpuPod("p" + std::to_string(i), 1), false, {}})).ok());
      EXPECT_TRUE(e.Apply(At(t, Tick{})).ok());
      EXPECT_TRUE(e.Apply(At(t + 1, PodFinished{id, 0})).ok());
    }
    EXPECT_EQ(e.live_workloads(), 0u);
    return e.Snapshot().size();
  };
  const size_t ten = run(10), many = run(10000);
  EXPECT_LE(many, ten + 64) << "snapshot grew from " << ten << " to " << many << " bytes";
}

// PoolPolicy spec.latency (Slurm's latencies): a killed victim holds its node until Slurm's
// clean-up is over (graceEndDelay + KillWait + MessageTimeout after its grace period), refuses a
// second exit meanwhile, and a requeued one stays out of the queue until cred_expire + 1 s; a node
// removed during the clean-up requeues it at once (held), and deleting it while held is clean.
TEST_F(Commands, SlurmLatencyHoldsTheNodeThenTheRequeuedJob) {
  PoolPolicy pp;
  pp.meta.name = "default";
  pp.latency = PoolPolicy::SlurmLatency{6000, 2000, 5000, 0, 10000};
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("low", 0)}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("high", 100)}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Pod lo = GpuPod("a", 1);
  lo.priority_class_name = "low";
  Pod hi = GpuPod("b", 1);
  hi.priority_class_name = "high";
  const WorkloadId a = Submit(0, lo);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  const WorkloadId b = Submit(1000, hi);
  ASSERT_TRUE(Do(1000, Tick{}).ok());
  ASSERT_EQ(PhaseOf(a), Phase::kTerminating);
  // Killed at the end of its 30 s grace period: the node is Slurm's until 31 + 6 + 2 + 5 = 44 s.
  ASSERT_TRUE(Do(31000, VictimExited{a}).ok());
  ASSERT_TRUE(Do(31000, Tick{}).ok());
  EXPECT_EQ(e_.NextWakeup(), std::optional<Millis>(44000));
  EXPECT_EQ(PhaseOf(a), Phase::kTerminating);
  EXPECT_EQ(PhaseOf(b), Phase::kPending);
  EXPECT_NE(e_.Get(a)->message.find("Slurm holds its node for 13s more"), std::string::npos)
      << e_.Get(a)->message;
  EXPECT_EQ(Do(40000, VictimExited{a}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Do(40000, PodFinished{a, 0}).code(), StatusCode::kFailedPrecondition);
  // Its node leaves during the clean-up: requeued now, eligible at 42 + 10 + 1 = 53 s.
  ASSERT_TRUE(Do(42000, RemoveNode{"n1"}).ok());
  ASSERT_TRUE(Do(42000, UpsertNode{GpuNode("n2", 1), 1}).ok());
  ASSERT_TRUE(Do(42000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  ASSERT_NE(sink_.Last(EventType::kRequeued), nullptr);
  EXPECT_EQ(sink_.Last(EventType::kRequeued)->time, 42000);
  EXPECT_NE(e_.Get(a)->message.find("eligible again in 11s"), std::string::npos)
      << e_.Get(a)->message;
  EXPECT_FALSE(e_.has_pending()) << "a requeued job waits out of the queue";
  ASSERT_TRUE(Do(44000, Tick{}).ok());  // the stale clean-up wake-up changes nothing
  EXPECT_EQ(PhaseOf(a), Phase::kPending);
  ASSERT_TRUE(Do(53000, Tick{}).ok());
  EXPECT_TRUE(e_.has_pending());
  ASSERT_TRUE(Do(54000, DeletePod{a, std::nullopt}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kDeleted);
  // b completes: no Epilog, so its node is free at once.
  ASSERT_TRUE(Do(60000, PodFinished{b, 0}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kSucceeded);
}

// PoolPolicy preemption.requeuingStrategy (Kueue's back-off): a victim requeued after its n-th
// preemption stays out of the queue for min(base * 2^(n-1), max), even with its node free; the
// engine says until when (WorkloadStatus::eligible_at and the message), wakes up then, and a
// snapshot taken during the hold continues the same.
TEST_F(Commands, RequeueBackoffHoldsAVictimThenDoubles) {
  PoolPolicy pp;
  pp.meta.name = "default";
  pp.requeue_backoff = PoolPolicy::RequeueBackoff{60000, 100000};
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("low", 0)}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("high", 100)}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Pod lo = GpuPod("a", 1);
  lo.priority_class_name = "low";
  Pod hi = GpuPod("b", 1);
  hi.priority_class_name = "high";
  const WorkloadId a = Submit(0, lo);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  EXPECT_EQ(e_.Get(a)->eligible_at, -1);
  const WorkloadId b = Submit(1000, hi);
  ASSERT_TRUE(Do(1000, Tick{}).ok());
  ASSERT_TRUE(Do(2000, VictimExited{a}).ok());
  ASSERT_TRUE(Do(2000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(b), Phase::kRunning);
  EXPECT_EQ(PhaseOf(a), Phase::kPending);
  EXPECT_EQ(e_.Get(a)->eligible_at, 62000);
  EXPECT_NE(e_.Get(a)->message.find("backing off until 1m2s (1m after preemption 1"),
            std::string::npos)
      << e_.Get(a)->message;
  EXPECT_FALSE(e_.has_pending()) << "a backing-off victim waits out of the queue";
  EXPECT_EQ(e_.NextWakeup(), std::optional<Millis>(62000));
  ASSERT_TRUE(Do(3000, PodFinished{b, 0}).ok());
  ASSERT_TRUE(Do(3000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kPending) << "the node is free, the back-off is not over";
  ASSERT_TRUE(Do(62000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kRunning);
  EXPECT_EQ(e_.Get(a)->eligible_at, -1);
  // The second preemption: 120 s, capped to 100 s.
  Pod hi2 = GpuPod("c", 1);
  hi2.priority_class_name = "high";
  Submit(70000, hi2);
  ASSERT_TRUE(Do(70000, Tick{}).ok());
  ASSERT_TRUE(Do(71000, VictimExited{a}).ok());
  ASSERT_TRUE(Do(71000, Tick{}).ok());
  EXPECT_EQ(e_.Get(a)->eligible_at, 171000);
  EXPECT_NE(e_.Get(a)->message.find("(1m40s after preemption 2"), std::string::npos)
      << e_.Get(a)->message;
  auto r = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Snapshot(), e_.Snapshot());
  EXPECT_EQ((*r)->Get(a)->eligible_at, 171000);
  ASSERT_TRUE((*r)->policy().requeue_backoff.has_value());
  EXPECT_EQ((*r)->policy().requeue_backoff->max, 100000);
}

// requeuingStrategy.immediateRequeues 1: the first preemption is requeued at once (the victim
// restarts as soon as the node is free), the second backs off for the base. The time held out of
// the queue is a fact of the workload (WorkloadStatus::held_total, part of pending_total), the
// current hold included, and survives a snapshot.
TEST_F(Commands, ImmediateRequeueThenBackOffCountsTheTimeHeld) {
  PoolPolicy pp;
  pp.meta.name = "default";
  pp.requeue_backoff = PoolPolicy::RequeueBackoff{60000, 100000};
  pp.requeue_backoff->immediate = 1;
  ASSERT_TRUE(Do(0, UpsertPoolPolicy{pp}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("low", 0)}).ok());
  ASSERT_TRUE(Do(0, UpsertPriorityClass{Class("high", 100)}).ok());
  ASSERT_TRUE(Do(0, UpsertNode{GpuNode("n1", 1), 0}).ok());
  Pod lo = GpuPod("a", 1);
  lo.priority_class_name = "low";
  const WorkloadId a = Submit(0, lo);
  ASSERT_TRUE(Do(0, Tick{}).ok());
  auto preempt = [&](Millis t, const std::string& name) {
    Pod hi = GpuPod(name, 1);
    hi.priority_class_name = "high";
    const WorkloadId b = Submit(t, hi);
    EXPECT_TRUE(Do(t, Tick{}).ok());
    EXPECT_TRUE(Do(t + 1000, VictimExited{a}).ok());
    EXPECT_TRUE(Do(t + 1000, Tick{}).ok());
    EXPECT_EQ(PhaseOf(b), Phase::kRunning);
    EXPECT_TRUE(Do(t + 2000, PodFinished{b, 0}).ok());
    EXPECT_TRUE(Do(t + 2000, Tick{}).ok());
  };
  preempt(10000, "b");
  EXPECT_EQ(PhaseOf(a), Phase::kRunning) << "the first preemption is requeued at once";
  EXPECT_EQ(e_.Get(a)->held_total, 0);
  EXPECT_EQ(e_.Get(a)->pending_total, 1000);
  preempt(20000, "c");  // requeued at 21 s, held until 81 s
  EXPECT_EQ(PhaseOf(a), Phase::kPending) << "the second backs off";
  EXPECT_EQ(e_.Get(a)->eligible_at, 81000);
  EXPECT_EQ(e_.Get(a)->held_total, 1000) << "the current hold so far";
  ASSERT_TRUE(Do(50000, Tick{}).ok());
  EXPECT_EQ(e_.Get(a)->held_total, 29000);
  auto r = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)->Get(a)->held_total, 29000);
  EXPECT_EQ((*r)->policy().requeue_backoff->immediate, 1);
  ASSERT_TRUE(Do(81000, Tick{}).ok());
  EXPECT_EQ(PhaseOf(a), Phase::kRunning);
  EXPECT_EQ(e_.Get(a)->held_total, 60000);
  EXPECT_EQ(e_.Get(a)->pending_total, 1000 + 60000) << "held time is pending time";
  auto later = Engine::Restore(e_.Snapshot());
  ASSERT_TRUE(later.ok()) << later.message();
  EXPECT_EQ((*later)->Get(a)->held_total, 60000);
}

}  // namespace
}  // namespace arbiter::engine
