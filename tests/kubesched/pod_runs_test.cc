// The request track of `arbiter scheduler --ledger` (src/kubesched/pod_runs.h,
// request_meter.h): Arbiter's pods' runs from the objects the informers deliver, and the hourly
// rows written for them. Against a real kube-apiserver: tests/integration/kube_metering_test.cc.
#include "kubesched/pod_runs.h"

#include <gtest/gtest.h>

#include "core/billing/metering.h"
#include "kubesched/controller.h"
#include "kubesched/request_meter.h"

namespace arbiter::kubesched {
namespace pod_runs_test {

// 2026-03-01T10:59:30Z: 30 s before an hour ends.
constexpr Millis kStart = 1772362770000;

Json Pod(const std::string& name, const std::string& scheduler, const std::string& node,
         const std::string& phase, Millis start = kStart, Millis finish = 0) {
  Json p = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}}},
            {"spec",
             {{"schedulerName", scheduler},
              {"containers",
               {{{"name", "main"},
                 {"resources", {{"requests", {{"cpu", "2"}, {"nvidia.com/gpu", "1"}}}}}}}}}},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (phase != "Pending") p["status"]["startTime"] = FormatRfc3339(start);
  if (finish)
    p["status"]["containerStatuses"] = {
        {{"name", "main"}, {"state", {{"terminated", {{"finishedAt", FormatRfc3339(finish)}}}}}}};
  return p;
}

Json Node(const std::string& name, const std::string& product) {
  return {{"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", product}}}}}};
}

TEST(KubeschedPodRuns, ARunIsFromStartTimeToTheLastContainersFinish) {
  PodRuns runs("arbiter");
  runs.SyncedNodes({Node("n1", "H100")});
  runs.SyncedPods(
      {Pod("pending", "arbiter", "", "Pending"), Pod("bound", "arbiter", "n1", "Pending"),
       Pod("theirs", "default-scheduler", "n1", "Running")},
      kStart);
  EXPECT_TRUE(runs.Segments(kStart + 5000).empty());
  runs.UpsertPod(Pod("a", "arbiter", "n1", "Running"), kStart + 1000);
  auto open = runs.Segments(kStart + 40000);  // a run going on is cut at now
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].start, kStart);
  EXPECT_EQ(open[0].end, kStart + 40000);
  runs.UpsertPod(Pod("a", "arbiter", "n1", "Succeeded", kStart, kStart + 90000), kStart + 95000);
  auto done = runs.Segments(kStart + 200000);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].workload, "team-a/a");
  EXPECT_EQ(done[0].namespace_, "team-a");
  EXPECT_EQ(done[0].node, "n1");
  EXPECT_EQ(done[0].gpu_product, "H100");
  EXPECT_EQ(done[0].start, kStart);
  EXPECT_EQ(done[0].end, kStart + 90000);  // finishedAt, not when it was seen
  EXPECT_TRUE(done[0].usage_from_request);
  EXPECT_EQ(done[0].requests.Get("cpu"), 2000);
  EXPECT_EQ(done[0].requests.Get("nvidia.com/gpu"), 1000);
  // Later deliveries do not move an end, and a deleted finished pod keeps it.
  runs.RemovePod(Pod("a", "arbiter", "n1", "Succeeded", kStart, kStart + 90000), kStart + 500000);
  EXPECT_EQ(runs.Segments(kStart + 600000)[0].end, kStart + 90000);
  runs.Retire(kStart + 90000);
  EXPECT_EQ(runs.size(), 0u);
}

TEST(KubeschedPodRuns, ARunningPodDeletedOrMissingFromARelistEndsWhenSeen) {
  PodRuns runs("arbiter");
  runs.UpsertPod(Pod("d", "arbiter", "n1", "Running"), kStart);
  runs.UpsertPod(Pod("m", "arbiter", "n1", "Running"), kStart);
  runs.RemovePod(Pod("d", "arbiter", "n1", "Running"), kStart + 7000);
  runs.SyncedPods({}, kStart + 9000);  // the watch was down when m went
  auto s = runs.Segments(kStart + 60000);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].workload, "team-a/d");
  EXPECT_EQ(s[0].end, kStart + 7000);
  EXPECT_EQ(s[1].workload, "team-a/m");
  EXPECT_EQ(s[1].end, kStart + 9000);
}

// 90 s of 2 cores and 1 GPU from 30 s before the hour: closed hours only, then open ones too.
TEST(KubeschedRequestMeter, RowsOfClosedHoursThenOfOpenOnes) {
  RequestSnapshot snap;
  snap.now = kStart + 30000 + 120000;  // 11:02
  PodRuns runs("arbiter");
  runs.UpsertPod(Pod("a", "arbiter", "n1", "Succeeded", kStart, kStart + 90000), snap.now);
  snap.runs = runs.Segments(snap.now);
  const Millis hour11 = kStart + 30000;
  auto closed = RequestMeter::PlanWrite(snap, 60000, false);
  ASSERT_TRUE(closed.ok()) << closed.message();
  EXPECT_EQ(closed->closed_before, hour11);  // 11:00 closed at 11:01 (delay 1 min)
  ASSERT_EQ(closed->rows.size(), 2u);        // cpu and GPU of the 10:00 hour
  for (const auto& r : closed->rows) {
    EXPECT_EQ(r.hour, hour11 - billing::kHourMs);
    EXPECT_EQ(r.workload, "team-a/a");
    EXPECT_EQ(r.run_ms, 30000);
    EXPECT_EQ(r.usage_raw, r.request_raw);  // usage = request
  }
  EXPECT_EQ(closed->rows[0].resource, "cpu");
  EXPECT_EQ(closed->rows[0].request_raw, billing::i128{2000} * 30000);
  auto open = RequestMeter::PlanWrite(snap, 60000, true);
  ASSERT_TRUE(open.ok()) << open.message();
  ASSERT_EQ(open->rows.size(), 4u);
  EXPECT_EQ(open->rows[1].hour, hour11);
  EXPECT_EQ(open->rows[1].request_raw, billing::i128{2000} * 60000);
  auto late = RequestMeter::PlanWrite(snap, 300000, false);  // 11:00 not closed before 11:05
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->closed_before, hour11 - billing::kHourMs);
  EXPECT_TRUE(late->rows.empty());
}

// --ledger with --meter-prometheus: the meter job asks for the request track of each window; a
// window to seal waits for a snapshot taken after its end, and asking for it says every hour
// before it is sealed (runs that ended then may be retired).
TEST(KubeschedPodRuns, TheRequestTrackOfAWindowForTheMeterJob) {
  PodRuns runs("arbiter");
  runs.SyncedNodes({Node("n1", "H100")});
  const Millis hour = billing::HourOf(kStart);  // 10:00
  runs.SyncedPods({Pod("a", "arbiter", "n1", "Succeeded", kStart, kStart + 90000),
                   Pod("b", "arbiter", "n1", "Running", kStart + 60000)},
                  kStart + 100000);
  RequestTrackSource src;
  EXPECT_FALSE(src.Track(hour, hour + billing::kHourMs, false));  // nothing submitted yet
  src.Submit({kStart + 100000, runs.Segments(kStart + 100000), {}});
  // The hour 11:00 is not over for this snapshot: it cannot be sealed yet.
  EXPECT_FALSE(src.Track(hour + billing::kHourMs, hour + 2 * billing::kHourMs, true));
  auto open = src.Track(hour + billing::kHourMs, hour + 2 * billing::kHourMs, false);
  ASSERT_TRUE(open);
  EXPECT_EQ(open->workloads, (std::vector<std::string>{"team-a/a", "team-a/b"}));
  ASSERT_EQ(open->rows.size(), 4u);  // a and b, cpu and GPU, 11:00 only
  for (const billing::HourlyRow& r : open->rows) EXPECT_EQ(r.hour, hour + billing::kHourMs);
  EXPECT_EQ(open->rows[0].workload, "team-a/a");
  EXPECT_EQ(open->rows[0].resource, "cpu");
  EXPECT_EQ(open->rows[0].run_ms, 60000);  // 11:00:00 .. finishedAt 11:01:00
  EXPECT_EQ(open->rows[0].request_raw, 2000 * billing::i128{60000});
  EXPECT_EQ(open->rows[0].usage_raw, open->rows[0].request_raw);  // usage = request until merged
  EXPECT_EQ(src.sealed_before(), INT64_MIN);
  auto closed = src.Track(hour, hour + billing::kHourMs, true);
  ASSERT_TRUE(closed);
  ASSERT_EQ(closed->rows.size(), 2u);  // a's 30 s before 11:00
  EXPECT_EQ(closed->rows[0].run_ms, 30000);
  EXPECT_EQ(src.sealed_before(), hour);
}

}  // namespace pod_runs_test
}  // namespace arbiter::kubesched
