// The dashboard's history and the views added with it: quota state (borrowed, lent, fair share),
// samples and their ring, idle capacity's cost, preemptions suffered and caused, backfill
// reservations and MIG slices, on a real Cluster driven by mutations.
#include <gtest/gtest.h>

#include "core/duration.h"
#include "server/cluster_fixtures.h"
#include "server/dashboard/history.h"
#include "server/dashboard/quota_state.h"
#include "server/dashboard/views.h"

namespace arbiter::server::dashboard {
namespace {

using fixtures::Create;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Ok;
using fixtures::PriorityClass;
using fixtures::Tenant;
constexpr Millis kHour = 3600000;

// A node with an A100 product label (its GPU model) and `extra` capacity (MIG profiles).
Json Node(const std::string& name, int gpus, const Json& extra = Json::object()) {
  Json cap = {{"cpu", "16"}, {"memory", "64Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  for (const auto& [k, v] : extra.items()) cap[k] = v;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
          {"status", {{"capacity", cap}}}};
}
// A one-container pod with these requests (and equal limits).
Json Pod(const std::string& ns, const std::string& name, const Json& requests,
         const std::string& pc = "") {
  Json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec",
             {{"containers",
               {{{"name", "main"},
                 {"image", "busybox"},
                 {"resources", {{"requests", requests}, {"limits", requests}}}}}}}}};
  if (!pc.empty()) p["spec"]["priorityClassName"] = pc;
  return p;
}
Json Gpus(int n) { return {{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(n)}}; }
Json ElasticQuota(const std::string& ns, int min, int max) {
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "ElasticQuota"},
          {"metadata", {{"name", ns + "-quota"}, {"namespace", ns}}},
          {"spec",
           {{"cohort", "pool"},
            {"min", {{"nvidia.com/gpu", std::to_string(min)}}},
            {"max", {{"nvidia.com/gpu", std::to_string(max)}}}}}};
}
// team-a (min 4) lends to team-b (min 2, runs 5) and team-c (min 2, idle): 3 GPUs borrowed.
void Cohort(Cluster& c) {
  for (const char* ns : {"team-a", "team-b", "team-c"}) Ok(c, Create(kT0, Namespace(ns)));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Ok(c, Create(kT0, ElasticQuota("team-a", 4, 8)));
  Ok(c, Create(kT0, ElasticQuota("team-b", 2, 8)));
  Ok(c, Create(kT0, ElasticQuota("team-c", 2, 8)));
  Ok(c, Create(kT0 + 1000, Pod("team-b", "b", Gpus(5))));
}

TEST(DashboardQuotaState, BorrowedIsUseAboveMinAndLentGoesToIdleMinInProportion) {
  Cluster c("0000abcd");
  Cohort(c);
  const auto q = QuotaStates(c.engine());
  EXPECT_EQ(q.at("team-b").used.Get("nvidia.com/gpu"), 5000);
  EXPECT_EQ(q.at("team-b").borrowed.Get("nvidia.com/gpu"), 3000);
  EXPECT_EQ(q.at("team-b").lent.Get("nvidia.com/gpu"), 0);
  // Idle min: team-a 4, team-c 2 -> 3 GPUs borrowed split 2 : 1.
  EXPECT_EQ(q.at("team-a").lent.Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(q.at("team-c").lent.Get("nvidia.com/gpu"), 1000);
  // Fair share: borrowed 3 of the 8 the cohort lends.
  EXPECT_EQ(q.at("team-b").fair_share, 375000);
  EXPECT_EQ(q.at("team-a").fair_share, 0);
  const Json t = TenantsView(c, Tenant("team-b"));
  ASSERT_EQ(t["tenants"].size(), 1u);
  EXPECT_EQ(t["tenants"][0]["fairShare"], "0.375");
  EXPECT_EQ(t["tenants"][0]["borrowed"]["nvidia.com/gpu"], 3000);
}

TEST(DashboardHistory, AnUnchangedSampleIsKeptOnlyAsAHeartbeatAndTheRingIsBounded) {
  Cluster c("0000abcd");
  Cohort(c);
  History h(3, 60000);
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 2000)));
  EXPECT_FALSE(h.Add(TakeSample(c, kT0 + 3000)));  // nothing changed
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 62000)));  // a heartbeat later
  Ok(c, Create(kT0 + 63000, Pod("team-a", "a", Gpus(1))));
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 63000)));  // changed
  Ok(c, Create(kT0 + 64000, Pod("team-a", "a2", Gpus(1))));
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 64000)));
  ASSERT_EQ(h.samples().size(), 3u);
  EXPECT_EQ(h.samples().front().time, kT0 + 62000);
  EXPECT_EQ(h.samples().back().tenants.at("team-a").used.Get("nvidia.com/gpu"), 2000);
}

TEST(DashboardHistory, ATenantSeesItsOwnNamespacesSeriesAndThePoolTotals) {
  Cluster c("0000abcd");
  Cohort(c);
  History h;
  h.Add(TakeSample(c, kT0 + 2000));
  Ok(c, Create(kT0 + 3000, Pod("team-a", "a", Gpus(1))));
  h.Add(TakeSample(c, kT0 + 3000));
  const Json all = HistoryView(h, {}, Viewer{}, kT0 + 4000);
  EXPECT_EQ(all["times"], (Json{kT0 + 2000, kT0 + 3000}));
  EXPECT_EQ(all["pool"]["allocated"]["nvidia.com/gpu"], (Json{5000, 6000}));
  EXPECT_EQ(all["pool"]["capacity"]["nvidia.com/gpu"], (Json{8000, 8000}));
  EXPECT_EQ(all["tenants"].size(), 3u);
  EXPECT_EQ(all["tenants"]["team-a"]["lent"]["nvidia.com/gpu"], (Json{2000, 1800}));  // 3:2 now
  EXPECT_EQ(all["tenants"]["team-b"]["fairShare"], (Json{"0.375", "0.375"}));
  const Json mine = HistoryView(h, {}, Tenant("team-a"), kT0 + 4000);
  ASSERT_EQ(mine["tenants"].size(), 1u);
  EXPECT_EQ(mine["tenants"]["team-a"]["used"]["nvidia.com/gpu"], (Json{0, 1000}));
  EXPECT_EQ(mine["tenants"]["team-a"]["min"]["nvidia.com/gpu"], (Json{4000, 4000}));
  EXPECT_EQ(mine.dump().find("team-b"), std::string::npos) << mine;
  EXPECT_EQ(mine["idle"]["priceBook"], nullptr);
}

TEST(DashboardHistory, SinceASeqAnswersOnlyTheNewerSamplesAndTheSeqToAskNext) {
  Cluster c("0000abcd");
  Cohort(c);
  History h;
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 2000)));
  Ok(c, Create(kT0 + 3000, Pod("team-a", "a", Gpus(1))));
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 3000)));
  EXPECT_EQ(h.samples().front().seq, 1);
  EXPECT_EQ(h.last_seq(), 2);
  const Json first = HistoryView(h, {}, Viewer{}, kT0 + 4000);
  EXPECT_EQ(first["seq"], 2);
  EXPECT_EQ(first["full"], true);
  Ok(c, Create(kT0 + 5000, Pod("team-c", "c", Gpus(1))));
  EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 5000)));
  const Json next = HistoryView(h, {}, Viewer{}, kT0 + 6000, first["seq"]);
  EXPECT_EQ(next["full"], false);
  EXPECT_EQ(next["seq"], 3);
  EXPECT_EQ(next["times"], (Json{kT0 + 5000}));
  EXPECT_EQ(next["pool"]["allocated"]["nvidia.com/gpu"], (Json{7000}));
  EXPECT_EQ(next["tenants"]["team-c"]["used"]["nvidia.com/gpu"], (Json{1000}));
  EXPECT_EQ(next["idle"], HistoryView(h, {}, Viewer{}, kT0 + 6000)["idle"]);  // whole ring
  // Nothing newer: no samples, the same seq.
  const Json none = HistoryView(h, {}, Viewer{}, kT0 + 6000, 3);
  EXPECT_EQ(none["full"], false);
  EXPECT_EQ(none["times"], Json::array());
  EXPECT_EQ(none["seq"], 3);
  // A seq the ring has never reached (a new data directory): everything, to replace.
  const Json ahead = HistoryView(h, {}, Viewer{}, kT0 + 6000, 9);
  EXPECT_EQ(ahead["full"], true);
  EXPECT_EQ(ahead["times"].size(), 3u);
}

TEST(DashboardHistory, SinceASeqTheRingNoLongerHoldsAnswersEverything) {
  Cluster c("0000abcd");
  Cohort(c);
  History h(2, 60000);
  for (int i = 0; i < 4; ++i) {  // each sample one more CPU in use
    Ok(c, Create(kT0 + 2000 + i * 1000, Pod("team-a", "a" + std::to_string(i), {{"cpu", "1"}})));
    EXPECT_TRUE(h.Add(TakeSample(c, kT0 + 2000 + i * 1000)));
  }
  ASSERT_EQ(h.samples().front().seq, 3);
  EXPECT_EQ(HistoryView(h, {}, Viewer{}, kT0 + 9000, 2)["full"], false);  // 3 and 4 are new
  const Json gap = HistoryView(h, {}, Viewer{}, kT0 + 9000, 1);           // 2 was dropped
  EXPECT_EQ(gap["full"], true);
  EXPECT_EQ(gap["times"].size(), 2u);
}

TEST(DashboardHistory, RestoredSamplesKeepTheirSeqAndTheNextSampleContinuesIt) {
  Cluster c("0000abcd");
  Cohort(c);
  History before;
  before.Add(TakeSample(c, kT0 + 2000));
  Ok(c, Create(kT0 + 3000, Pod("team-a", "a", Gpus(1))));
  before.Add(TakeSample(c, kT0 + 3000));
  History after(1);
  for (const Sample& s : before.samples()) after.Restore(s);
  ASSERT_EQ(after.samples().size(), 1u);  // bounded by the capacity
  EXPECT_EQ(after.last_seq(), 2);
  after.Restore(before.samples().front());  // older than the newest: ignored
  EXPECT_EQ(after.last_seq(), 2);
  EXPECT_FALSE(after.Add(TakeSample(c, kT0 + 4000)));  // unchanged since the restored one
  Ok(c, Create(kT0 + 5000, Pod("team-a", "a2", Gpus(1))));
  EXPECT_TRUE(after.Add(TakeSample(c, kT0 + 5000)));
  EXPECT_EQ(after.last_seq(), 3);
}

TEST(DashboardHistory, PoolUseIsThePodsUsageAnnotationElseItsRequests) {
  Cluster c("0000abcd");
  Cohort(c);
  Json p = Pod("team-a", "light", Gpus(2));
  p["metadata"]["annotations"]["arbiter.dev/usage"] = "cpu=500m,nvidia.com/gpu=600m";
  Ok(c, Create(kT0 + 2000, p));
  const Sample s = TakeSample(c, kT0 + 2000);
  EXPECT_EQ(s.pool.allocated.Get("nvidia.com/gpu"), 7000);
  EXPECT_EQ(s.pool.used.Get("nvidia.com/gpu"), 5600);  // b: its requests, light: 0.6
  EXPECT_EQ(s.pool.used.Get("cpu"), 1500);
  EXPECT_EQ(s.pool.idle_gpu_milli.at("NVIDIA-A100-SXM4-80GB"), 1000);
}

TEST(DashboardHistory, IdleCostIsIdleGpuHoursTimesTheModelsPriceInTheBookInEffect) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Node("gpu-0", 4)));
  History h;
  h.Add(TakeSample(c, kT0));  // 4 idle for half an hour
  Ok(c, Create(kT0 + kHour / 2, Pod("team-a", "a", Gpus(2))));
  h.Add(TakeSample(c, kT0 + kHour / 2));  // then 2 idle for half an hour
  PriceBook old, current;
  old.meta.name = "old";
  old.effective_from = kT0 - 10 * kHour;
  old.gpu_models["NVIDIA-A100-SXM4-80GB"] = Decimal::Parse("100").value();
  current.meta.name = "current";
  current.currency = "CNY";
  current.effective_from = kT0 - kHour;
  current.gpu_models["NVIDIA-A100-SXM4-80GB"] = Decimal::Parse("2.50").value();
  const Json idle = HistoryView(h, {old, current}, Viewer{}, kT0 + kHour)["idle"];
  EXPECT_EQ(idle["priceBook"], "current");
  EXPECT_EQ(idle["currency"], "CNY");
  EXPECT_EQ(idle["gpuHours"], "3");
  EXPECT_EQ(idle["cost"], "7.50");
  EXPECT_EQ(idle["nowGpus"], 2);
  EXPECT_EQ(idle["nowCostPerHour"], "5.00");
  const Json none = HistoryView(h, {}, Viewer{}, kT0 + kHour)["idle"];
  EXPECT_EQ(none["priceBook"], nullptr);
  EXPECT_EQ(none["why"], "no PriceBook is applied");
}

// Two tenants, a 4-GPU node, classes low and high, and team-a/victim running on the node at low.
void AddTenantsAndVictim(Cluster& c) {
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Namespace("team-b")));
  Ok(c, Create(kT0, Node("gpu-0", 4)));
  Ok(c, Create(kT0, PriorityClass("low", 10)));
  Ok(c, Create(kT0, PriorityClass("high", 100)));
  Ok(c, Create(kT0 + 1000, Pod("team-a", "victim", Gpus(4), "low")));
}

TEST(DashboardViews, TenantsCountPreemptionsSufferedAndCausedAndHideOtherTenantsNames) {
  Cluster c("0000abcd");
  AddTenantsAndVictim(c);
  Ok(c, Create(kT0 + 2000, Pod("team-b", "preemptor", Gpus(4), "high")));
  const Json all = TenantsView(c, Viewer{});
  ASSERT_EQ(all["tenants"].size(), 2u);
  EXPECT_EQ(all["tenants"][0]["preemptionsSuffered"], 1) << all;
  EXPECT_EQ(all["tenants"][0]["preemptionsCaused"], 0);
  EXPECT_EQ(all["tenants"][1]["preemptionsSuffered"], 0);
  EXPECT_EQ(all["tenants"][1]["preemptionsCaused"], 1);
  EXPECT_EQ(all["tenants"][0]["recentPreemptions"][0]["by"], "team-b/preemptor");
  const Json b = TenantsView(c, Tenant("team-b"));
  ASSERT_EQ(b["tenants"].size(), 1u);
  const Json row = b["tenants"][0]["recentPreemptions"][0];
  EXPECT_EQ(row["victim"], nullptr);  // another tenant's workload
  EXPECT_EQ(row["by"], "team-b/preemptor");
  EXPECT_EQ(row["type"], "Preempted");
  // The engine's messages name the other side: redacted for a tenant, kept for the admin.
  const Json w = WorkloadView(c, Tenant("team-b"), "team-b", "preemptor");
  ASSERT_FALSE(w["events"].empty());
  EXPECT_EQ(w.dump().find("team-a/victim"), std::string::npos) << w;
  EXPECT_NE(w.dump().find("another tenant's workload"), std::string::npos) << w;
  EXPECT_NE(WorkloadView(c, Viewer{}, "team-b", "preemptor").dump().find("team-a/victim"),
            std::string::npos);
  const Json a = WorkloadView(c, Tenant("team-a"), "team-a", "victim");
  EXPECT_EQ(a.dump().find("team-b/preemptor"), std::string::npos) << a;
}

// The preemptions are the cluster's facts, kept beside its Events (kept as text): a restored
// snapshot gives the same, and the pod view the same Events.
TEST(DashboardViews, PreemptionsAndAPodsEventsAreTheSameAfterASnapshotRestore) {
  Cluster c("0000abcd");
  AddTenantsAndVictim(c);
  Ok(c, Create(kT0 + 1500, Pod("team-a", "victim.x", Gpus(1), "low")));  // its Events' prefix
  Ok(c, Create(kT0 + 2000, Pod("team-b", "preemptor", Gpus(4), "high")));
  ASSERT_EQ(c.preemptions().size(), 1u);
  EXPECT_EQ(c.preemptions()[0].victim, "victim");
  Cluster r("0000abcd");
  ASSERT_TRUE(r.Restore(c.Snapshot()).ok());
  EXPECT_EQ(r.preemptions(), c.preemptions());
  EXPECT_EQ(TenantsView(r, Viewer{}), TenantsView(c, Viewer{}));
  const Json victim = WorkloadView(c, Viewer{}, "team-a", "victim");
  EXPECT_GE(victim["events"].size(), 2u) << victim;  // Scheduled, Preempted, ...
  for (const Json& e : victim["events"])
    EXPECT_EQ(e["message"].get<std::string>().find("victim.x"), std::string::npos) << victim;
  EXPECT_EQ(WorkloadView(r, Viewer{}, "team-a", "victim"), victim);
}

TEST(DashboardViews, RedactReplacesOnlyWholeNamesOfHiddenNamespaces) {
  EXPECT_EQ(Redact("preempted by team-b/x-1; SIGTERM", {"team-b"}),
            "preempted by another tenant's workload; SIGTERM");
  EXPECT_EQ(Redact("preempting my-team-b/x and team-b/y", {"team-b"}),
            "preempting my-team-b/x and another tenant's workload");
  EXPECT_EQ(Redact("bound to node/gpu-0", {}), "bound to node/gpu-0");
}

TEST(DashboardViews, QueueShowsTheBackfillReservationWithItsNodesAndStart) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Node("gpu-0", 4)));
  Json running = Pod("team-a", "long", Gpus(4));
  running["spec"]["activeDeadlineSeconds"] = 3600;
  Ok(c, Create(kT0 + 1000, running));
  Ok(c, Create(kT0 + 2000, Pod("team-a", "big", Gpus(4))));
  const Json q = QueueView(c, Tenant("team-a"), kT0 + 2000);
  ASSERT_EQ(q["pending"].size(), 1u);
  EXPECT_EQ(q["pending"][0]["reservation"]["nodes"], (Json{"gpu-0"})) << q;
  EXPECT_EQ(q["pending"][0]["reservation"]["from"], FormatRfc3339(kT0 + 1000 + kHour));
  // From the engine's fields, never its text (issue 25).
  engine::WorkloadStatus none;
  none.message = "x; reserved on n3 from 2h";
  EXPECT_EQ(ReservationOf(none.reservation), nullptr);
  engine::WorkloadStatus two;
  two.reservation = engine::BackfillReservation{{"n3", "n4"}, kT0};
  EXPECT_EQ(ReservationOf(two.reservation)["nodes"], (Json{"n3", "n4"}));
  EXPECT_EQ(ReservationOf(two.reservation)["from"], FormatRfc3339(kT0));
}

TEST(DashboardViews, PoolShowsMigSlicesOfEachDeviceWithTheirOccupants) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Namespace("team-b")));
  Ok(c, Create(kT0, Node("mig-0", 1, {{"nvidia.com/mig-1g.10gb", "14"}})));
  Ok(c,
     Create(kT0 + 1000, Pod("team-a", "small", {{"cpu", "1"}, {"nvidia.com/mig-1g.10gb", "3"}})));
  Ok(c,
     Create(kT0 + 2000, Pod("team-b", "other", {{"cpu", "1"}, {"nvidia.com/mig-1g.10gb", "1"}})));
  const Json pool = PoolView(c, Tenant("team-a"));
  const Json& mig = pool["nodes"][0]["migDevices"];
  ASSERT_EQ(mig.size(), 2u) << pool;  // 14 slices of 1g.10gb: 7 per A100
  EXPECT_EQ(mig[0]["profile"], "1g.10gb");
  ASSERT_EQ(mig[0]["slots"].size(), 7u);
  EXPECT_EQ(mig[0]["slots"][0], (Json{{"namespace", "team-a"}, {"name", "small"}}));
  EXPECT_EQ(mig[0]["slots"][2]["name"], "small");
  EXPECT_EQ(mig[0]["slots"][3], (Json{{"hidden", true}}));
  EXPECT_EQ(mig[0]["slots"][4], nullptr);
  EXPECT_EQ(mig[1]["slots"].size(), 7u);
}

}  // namespace
}  // namespace arbiter::server::dashboard
