// A pod's scheduling status and Events from the engine's facts (src/driver/pod_scheduling.h):
// the tables below are the derivation `arbiter serve` and `arbiter scheduler` share, one row per
// engine state, readable as its documentation.
#include "driver/pod_scheduling.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/engine/reasons.h"

namespace arbiter::driver {
namespace pod_scheduling_test {

using engine::EventType;
using engine::Phase;
namespace reason = engine::reason;

struct Row {
  const char* what;
  engine::WorkloadStatus in;
  PodScheduling want;
};

engine::WorkloadStatus Status(Phase phase, std::string node, std::string last_node,
                              Millis first_start, std::string_view why = "",
                              std::string message = "", std::string nominated = "") {
  engine::WorkloadStatus s;
  s.phase = phase;
  s.node = std::move(node);
  s.last_node = std::move(last_node);
  s.first_start = first_start;
  s.reason = std::string(why);
  s.message = std::move(message);
  s.nominated_node = std::move(nominated);
  return s;
}

//                  bound  node   on_node requeued PodScheduled{status, reason, message}
//                  nominated  status.reason  status.message
PodScheduling Want(bool bound, std::string node, bool on_node, bool requeued, PodCondition c,
                   std::string nominated, std::string reason, std::string message) {
  return {bound,        std::move(node),      on_node,           requeued,
          std::move(c), std::move(nominated), std::move(reason), std::move(message)};
}

const std::string kNoFit = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
const std::string kQuota = "namespace team-a: nvidia.com/gpu 8 of min 8 in use, cannot borrow";

std::vector<Row> Rows() {
  return {
      {"not tried yet: Unschedulable, no message", Status(Phase::kPending, "", "", -1),
       Want(false, "", false, false, {false, "Unschedulable", ""}, "", "", "")},
      {"no node fits: Unschedulable (what kube-scheduler writes; autoscalers act on it)",
       Status(Phase::kPending, "", "", -1, reason::kUnschedulable, kNoFit),
       Want(false, "", false, false, {false, "Unschedulable", kNoFit}, "", "", kNoFit)},
      {"over quota: the engine's code, QuotaExceeded (more nodes would not help)",
       Status(Phase::kPending, "", "", -1, reason::kQuotaExceeded, kQuota),
       Want(false, "", false, false, {false, "QuotaExceeded", kQuota}, "", "", kQuota)},
      {"reclaiming lent quota: Reclaiming",
       Status(Phase::kPending, "", "", -1, reason::kReclaiming, "reclaiming"),
       Want(false, "", false, false, {false, "Reclaiming", "reclaiming"}, "", "", "reclaiming")},
      {"victims exiting: WaitingForVictims, the nominated node",
       Status(Phase::kPending, "", "", -1, reason::kWaitingForVictims, "waiting", "n1"),
       Want(false, "", false, false, {false, "WaitingForVictims", "waiting"}, "n1", "", "waiting")},
      {"running: bound to its node, PodScheduled True, no message",
       Status(Phase::kRunning, "n1", "n1", 5000, reason::kUnschedulable, "old"),
       Want(true, "n1", true, false, {true, "", ""}, "", "", "")},
      {"terminating (preempted, in its grace period): still bound, the stop said",
       Status(Phase::kTerminating, "n1", "n1", 5000, reason::kPreempted, "preempted by a/b"),
       Want(true, "n1", true, false, {true, "", ""}, "", "", "preempted by a/b")},
      {"requeued after a preemption: unbound again, waits with the engine's reason",
       Status(Phase::kPending, "", "n1", 5000, reason::kQuotaExceeded, kQuota),
       Want(false, "", false, true, {false, "QuotaExceeded", kQuota}, "", "", kQuota)},
      {"succeeded: bound to where it ran", Status(Phase::kSucceeded, "", "n1", 5000),
       Want(true, "n1", false, false, {true, "", ""}, "", "", "")},
      {"preempted for good (Never requeue): status.reason Preempted",
       Status(Phase::kPreempted, "", "n1", 5000, reason::kPreempted, "preempted by a/b"),
       Want(true, "n1", false, false, {true, "", ""}, "", "Preempted", "preempted by a/b")},
      {"rejected at admission: never bound, status.reason Rejected, PodScheduled the code",
       Status(Phase::kRejected, "", "", -1, reason::kUnknownPriorityClass, "no class x"),
       Want(false, "", false, false, {false, "UnknownPriorityClass", "no class x"}, "", "Rejected",
            "no class x")},
      {"deleted before it ran: unbound",
       Status(Phase::kDeleted, "", "", -1, reason::kDeleted, "deleted"),
       Want(false, "", false, false, {false, "", "deleted"}, "", "", "deleted")},
  };
}

TEST(DriverPodScheduling, TheTableOfEngineStatuses) {
  for (const Row& r : Rows()) EXPECT_EQ(PodSchedulingOf(r.in), r.want) << r.what;
}

// What the pending reason is NOT: a fixed "Unschedulable" for every wait (what `arbiter
// scheduler` wrote before), nor a reason read out of the engine's text.
TEST(DriverPodScheduling, ThePendingReasonIsTheEnginesCodeNotItsText) {
  auto s = Status(Phase::kPending, "", "", -1, reason::kQuotaExceeded,
                  "0/3 nodes are available: Unschedulable-looking text");
  EXPECT_EQ(PodSchedulingOf(s).scheduled.reason, "QuotaExceeded");
  s.reason = std::string(reason::kUnschedulable);
  s.message = "exceeded quota: team-a";
  EXPECT_EQ(PodSchedulingOf(s).scheduled.reason, "Unschedulable");
}

engine::Event Ev(EventType t, std::string node = "", std::string by = "", std::string_view why = "",
                 std::string message = "") {
  engine::Event e;
  e.type = t;
  e.workload = engine::WorkloadId{7};
  e.node = std::move(node);
  e.by = std::move(by);
  e.reason = why;
  e.message = std::move(message);
  return e;
}

struct EventRow {
  const char* what;
  engine::Event in;
  PodEvent want;
};

PodEvent Pe(bool warning, std::string reason, std::string action, std::string note,
            std::string_view engine_reason = "", std::string related = "") {
  return {PodEvent::Regarding::kPod, warning,         std::move(reason),
          std::move(action),         std::move(note), std::string(engine_reason),
          std::move(related)};
}

TEST(DriverPodScheduling, TheTableOfEngineEvents) {
  const std::vector<EventRow> rows = {
      {"bound: Normal Scheduled, kube-scheduler's note", Ev(EventType::kScheduled, "n1"),
       Pe(false, "Scheduled", "Binding", "Successfully assigned team-a/p to n1")},
      {"no node fits: Warning FailedScheduling, the engine's text and code",
       Ev(EventType::kFailedScheduling, "", "", reason::kUnschedulable, kNoFit),
       Pe(true, "FailedScheduling", "Scheduling", kNoFit, reason::kUnschedulable)},
      {"over quota: Warning QuotaExceeded",
       Ev(EventType::kQuotaExceeded, "", "", reason::kQuotaExceeded, kQuota),
       Pe(true, "QuotaExceeded", "Scheduling", kQuota, reason::kQuotaExceeded)},
      {"preempted by a pod: Normal Preempted, the preemptor related",
       Ev(EventType::kPreempted, "n1", "team-b/hi", reason::kPreempted,
          "preempted by team-b/hi; SIGTERM, grace 30s"),
       Pe(false, "Preempted", "Preempting", "preempted by team-b/hi; SIGTERM, grace 30s",
          reason::kPreempted, "team-b/hi")},
      {"reclaimed: Normal Reclaimed, the borrower's lender's pod related",
       Ev(EventType::kReclaimed, "n1", "team-a/back", reason::kReclaimed, "reclaimed"),
       Pe(false, "Reclaimed", "Preempting", "reclaimed", reason::kReclaimed, "team-a/back")},
      {"evicted by a NoExecute taint: no related pod",
       Ev(EventType::kPreempted, "n1", "node/n1", reason::kTaintEviction, "taint"),
       Pe(false, "Preempted", "Preempting", "taint", reason::kTaintEviction)},
      {"rejected at admission: Warning Rejected",
       Ev(EventType::kRejected, "", "", reason::kUnknownPriorityClass, "no class x"),
       Pe(true, "Rejected", "Scheduling", "no class x", reason::kUnknownPriorityClass)},
      {"exited non-zero: Warning Failed",
       Ev(EventType::kFailed, "n1", "", reason::kError, "exit 1"),
       Pe(true, "Failed", "Finishing", "exit 1", reason::kError)},
  };
  for (const EventRow& r : rows) {
    auto got = PodEventOf(r.in, "team-a", "p");
    ASSERT_TRUE(got) << r.what;
    EXPECT_EQ(*got, r.want) << r.what;
  }
  EXPECT_FALSE(PodEventOf(Ev(EventType::kSubmitted), "team-a", "p"));  // no Kubernetes event
  engine::Event node = Ev(EventType::kNodeAdded, "n1", "", reason::kNodeAdded, "added");
  node.workload = engine::kNoWorkload;
  EXPECT_EQ(PodEventOf(node, "", "n1")->regarding, PodEvent::Regarding::kNode);
}

TEST(DriverPodScheduling, DisruptionTargetOnlyWhenARunIsStoppedForAnother) {
  const auto d = DisruptionTarget(
      Ev(EventType::kPreempted, "n1", "team-b/hi", reason::kPreempted, "preempted by team-b/hi"));
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, (PodCondition{true, "PreemptionByScheduler", "preempted by team-b/hi"}));
  EXPECT_TRUE(DisruptionTarget(Ev(EventType::kReclaimed, "n1", "a/b")));
  EXPECT_FALSE(DisruptionTarget(Ev(EventType::kScheduled, "n1")));
  EXPECT_FALSE(DisruptionTarget(Ev(EventType::kFailedScheduling)));
}

}  // namespace pod_scheduling_test
}  // namespace arbiter::driver
