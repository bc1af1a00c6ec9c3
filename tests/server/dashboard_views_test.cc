// The dashboard's JSON views (server/dashboard/views.h) and its token table
// (server/dashboard/viewer_tokens.h), on a real Cluster driven by mutations.
#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/dashboard/viewer_tokens.h"
#include "server/dashboard/views.h"

namespace arbiter::server::dashboard {
namespace {

using namespace server::fixtures;

Json Pod(const std::string& ns, const std::string& name, int gpus, const std::string& pc = "",
         const std::string& duration = "") {
  return PodIn(ns, name, gpus, duration, pc);
}
// team-a runs `a` (2 GPUs), team-b runs `b` (1 GPU) on one 4-GPU node.
void TwoTenants(Cluster& c) {
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Namespace("team-b")));
  Ok(c, Create(kT0, Node("gpu-0", 4)));
  Ok(c, Create(kT0 + 1000, Pod("team-a", "a", 2)));
  Ok(c, Create(kT0 + 2000, Pod("team-b", "b", 1)));
}

// Occupant names per device ("ns/name", "hidden" or "" when free).
std::vector<std::string> Occupants(const Json& pool) {
  std::vector<std::string> out;
  for (const Json& g : pool["nodes"][0]["gpus"]) {
    std::string o;
    for (const Json& x : g["occupants"])
      o += x.value("hidden", false)
               ? "hidden"
               : x["namespace"].get<std::string>() + "/" + x["name"].get<std::string>();
    out.push_back(o);
  }
  return out;
}

TEST(DashboardViews, PoolShowsEachDevicesOccupantAndAllocatedOfCapacity) {
  Cluster c("0000abcd");
  TwoTenants(c);
  const Json pool = PoolView(c, Viewer{});
  ASSERT_EQ(pool["nodes"].size(), 1u);
  EXPECT_EQ(pool["nodes"][0]["name"], "gpu-0");
  auto occ = Occupants(pool);
  std::sort(occ.begin(), occ.end());
  EXPECT_EQ(occ, (std::vector<std::string>{"", "team-a/a", "team-a/a", "team-b/b"}));
  for (const Json& g : pool["nodes"][0]["gpus"]) {
    const int64_t used = g["usedMilli"];
    EXPECT_EQ(used, g["occupants"].empty() ? 0 : 1000) << g;
  }
  EXPECT_EQ(pool["gpuMilli"]["allocated"], 3000);
  EXPECT_EQ(pool["gpuMilli"]["capacity"], 4000);
}

TEST(DashboardViews, TenantSeesOtherTenantsDevicesAsOccupiedWithoutNames) {
  Cluster c("0000abcd");
  TwoTenants(c);
  const Json pool = PoolView(c, Tenant("team-a"));
  auto occ = Occupants(pool);
  std::sort(occ.begin(), occ.end());
  EXPECT_EQ(occ, (std::vector<std::string>{"", "hidden", "team-a/a", "team-a/a"}));
  EXPECT_EQ(pool.dump().find("team-b"), std::string::npos) << pool;
}

TEST(DashboardViews, TenantsSumRunningRequestsAndListPendingWithTheEnginesReason) {
  Cluster c("0000abcd");
  TwoTenants(c);
  Ok(c, Create(kT0 + 3000, Pod("team-a", "big", 8)));
  const Json all = TenantsView(c, Viewer{});
  ASSERT_EQ(all["tenants"].size(), 2u);
  const Json& a = all["tenants"][0];
  EXPECT_EQ(a["namespace"], "team-a");
  EXPECT_EQ(a["running"], 1);
  EXPECT_EQ(a["pending"], 1);
  EXPECT_EQ(a["used"]["gpuMilli"], 2000);
  EXPECT_EQ(a["used"]["cpuMilli"], 1000);
  EXPECT_EQ(a["requests"]["nvidia.com/gpu"], 2000);  // canonical units: milli-GPU
  EXPECT_EQ(a["requests"]["cpu"], 1000);
  ASSERT_EQ(a["pendingWorkloads"].size(), 1u);
  EXPECT_EQ(a["pendingWorkloads"][0]["name"], "big");
  EXPECT_EQ(a["pendingWorkloads"][0]["reason"], "Unschedulable");
  EXPECT_NE(a["pendingWorkloads"][0]["message"].get<std::string>().find("nodes are available"),
            std::string::npos)
      << a;
  const Json mine = TenantsView(c, Tenant("team-b"));
  ASSERT_EQ(mine["tenants"].size(), 1u);
  EXPECT_EQ(mine["tenants"][0]["namespace"], "team-b");
  EXPECT_EQ(mine["tenants"][0]["used"]["gpuMilli"], 1000);
}

TEST(DashboardViews, QueueIsInPriorityThenSubmissionOrderAndKeepsPositionsForTenants) {
  Cluster c("0000abcd");
  TwoTenants(c);
  Ok(c, Create(kT0, PriorityClass("low", 10)));
  Ok(c, Create(kT0, PriorityClass("high", 100)));
  Ok(c, Create(kT0 + 3000, Pod("team-a", "low-1", 8, "low")));
  Ok(c, Create(kT0 + 4000, Pod("team-b", "high-1", 8, "high")));
  Ok(c, Create(kT0 + 5000, Pod("team-a", "low-2", 8, "low")));
  const Json q = QueueView(c, Viewer{}, kT0 + 5000);
  std::vector<std::string> order;
  for (const Json& p : q["pending"]) order.push_back(p["name"]);
  EXPECT_EQ(order, (std::vector<std::string>{"high-1", "low-1", "low-2"}));
  EXPECT_EQ(q["total"], 3);
  const Json mine = QueueView(c, Tenant("team-a"), kT0 + 5000);
  ASSERT_EQ(mine["pending"].size(), 2u);
  EXPECT_EQ(mine["pending"][0]["name"], "low-1");
  EXPECT_EQ(mine["pending"][0]["position"], 2);
  EXPECT_EQ(mine["pending"][1]["position"], 3);
}

// A page of rows, not the whole queue (issue 27: 20,000 rows took 81 ms): the first `limit` the
// viewer sees, in queue order, positions counting the hidden ones; `visible` and `total` count all.
TEST(DashboardViews, TheQueueShowsTheFirstRowsTheViewerSeesAndCountsTheRest) {
  Cluster c("0000abcd");
  TwoTenants(c);
  Ok(c, Create(kT0, PriorityClass("low", 10)));
  Ok(c, Create(kT0, PriorityClass("high", 100)));
  Ok(c, Create(kT0 + 1000, Pod("team-b", "b-high", 8, "high")));
  for (int i = 0; i < 5; ++i)
    Ok(c, Create(kT0 + 2000 + i, Pod("team-a", "a-" + std::to_string(i), 8, "low")));
  const Json page = QueueView(c, Tenant("team-a"), kT0 + 5000, 2);
  ASSERT_EQ(page["pending"].size(), 2u);
  EXPECT_EQ(page["pending"][0]["name"], "a-0");
  EXPECT_EQ(page["pending"][0]["position"], 2);
  EXPECT_EQ(page["pending"][1]["name"], "a-1");
  EXPECT_EQ(page["visible"], 5);
  EXPECT_EQ(page["total"], 6);
  const Json all = QueueView(c, Viewer{}, kT0 + 5000);  // (the default page holds them all)
  EXPECT_EQ(all["pending"].size(), 6u);
  EXPECT_EQ(all["visible"], 6);
}

// Regression (audit B9): the waiting time was measured to the engine's clock, which moves only
// on events, so a queue with no events showed 0 s for pods that had waited minutes.
TEST(DashboardViews, QueueWaitingTimeCountsToTheRequestsWallClock) {
  Cluster c("0000abcd");
  TwoTenants(c);
  Ok(c, Create(kT0 + 3000, Pod("team-a", "big", 8)));
  const Json later = QueueView(c, Viewer{}, kT0 + 3000 + 90'000);
  ASSERT_EQ(later["pending"].size(), 1u);
  EXPECT_EQ(later["pending"][0]["pendingSeconds"], 90);
  // A wall clock behind the engine's (clock skew at start-up) never gives a negative wait.
  const Json skewed = QueueView(c, Viewer{}, kT0);
  EXPECT_EQ(skewed["pending"][0]["pendingSeconds"], 0);
}

TEST(DashboardViews, TenantsCountPreemptionsSufferedByTheirLiveWorkloads) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team-a")));
  Ok(c, Create(kT0, Namespace("team-b")));
  Ok(c, Create(kT0, Node("gpu-0", 4)));
  Ok(c, Create(kT0, PriorityClass("low", 10)));
  Ok(c, Create(kT0, PriorityClass("high", 100)));
  Ok(c, Create(kT0 + 1000, Pod("team-a", "victim", 4, "low")));
  Ok(c, Create(kT0 + 2000, Pod("team-b", "preemptor", 4, "high")));
  const Json t = TenantsView(c, Viewer{});
  ASSERT_EQ(t["tenants"].size(), 2u);
  EXPECT_EQ(t["tenants"][0]["namespace"], "team-a");
  EXPECT_EQ(t["tenants"][0]["preemptions"], 1) << t;
  EXPECT_EQ(t["tenants"][1]["preemptions"], 0) << t;
}

TEST(DashboardViews, WorkloadShowsItsEventsOldestFirstAndOnlyToItsTenant) {
  Cluster c("0000abcd");
  TwoTenants(c);
  Ok(c, Create(kT0 + 3000, Pod("team-a", "short", 1, "", "10s")));
  Mutation adv;
  adv.op = Mutation::Op::kAdvance;
  adv.time = kT0 + 14000;
  Ok(c, adv);
  const Json w = WorkloadView(c, Tenant("team-a"), "team-a", "short");
  ASSERT_FALSE(w.is_null());
  EXPECT_EQ(w["phase"], "Succeeded");
  std::vector<std::string> reasons;
  for (const Json& e : w["events"]) reasons.push_back(e["reason"]);
  EXPECT_EQ(reasons, (std::vector<std::string>{"Scheduled", "Completed"}));
  EXPECT_TRUE(WorkloadView(c, Tenant("team-b"), "team-a", "short").is_null());
  EXPECT_TRUE(WorkloadView(c, Viewer{}, "team-a", "absent").is_null());
}

TEST(DashboardViewerTokens, GroupsOfThePolicyGiveNamespacesOrEverything) {
  auto t = kube::ParseTokenFile(
      "admin-tok,admin,1,\"system:masters\"\n"
      "alice-tok,alice,2,\"arbiter:editors:team-a,arbiter:viewers:team-c\"\n"
      "\n"
      "nobody-tok,nobody,3\n",
      "tokens.csv");
  ASSERT_TRUE(t.ok()) << t.message();
  auto admin = ViewerFor(t.value(), "Bearer admin-tok");
  ASSERT_TRUE(admin);
  EXPECT_TRUE(admin->all);
  auto alice = ViewerFor(t.value(), "Bearer alice-tok");
  ASSERT_TRUE(alice);
  EXPECT_FALSE(alice->all);
  EXPECT_EQ(alice->namespaces, (std::set<std::string>{"team-a", "team-c"}));
  EXPECT_TRUE(alice->Sees("team-a"));
  EXPECT_FALSE(alice->Sees("team-b"));
  auto nobody = ViewerFor(t.value(), "Bearer nobody-tok");
  ASSERT_TRUE(nobody);
  EXPECT_FALSE(nobody->Sees("team-a"));
  EXPECT_FALSE(ViewerFor(t.value(), "Bearer wrong"));
  EXPECT_FALSE(ViewerFor(t.value(), "admin-tok"));
  EXPECT_FALSE(ViewerFor(t.value(), ""));
}

// The dashboard takes the API's token table: the same parser, the same line-numbered error.
TEST(DashboardViewerTokens, ARecordWithFewerThanThreeColumnsIsRefusedWithItsLine) {
  auto t = kube::ParseTokenFile("a,b,c\nbroken,line\n", "tokens.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.message(),
            "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), "
            "found 2 (line 2)");
}

}  // namespace
}  // namespace arbiter::server::dashboard
