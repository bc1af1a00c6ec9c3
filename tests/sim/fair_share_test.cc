// Fair sharing within a cohort (ElasticQuota spec.fairSharing): borrowing order follows weighted
// dominant-resource shares, and the report gives each namespace's share.
#include "core/engine/fair_share.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

yaml::ManifestLoad Load(const std::string& text) {
  yaml::ManifestLoad load;
  yaml::LoadManifestText(text, "fair.yaml", &load);
  for (const auto& d : load.diagnostics.items) ADD_FAILURE() << d.ToString();
  return load;
}

std::string Quota(const std::string& ns, int min, std::optional<int> weight_milli) {
  std::string s =
      "---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: " + ns +
      ", namespace: " + ns +
      "}\nspec: {cohort: pool, min: {nvidia.com/gpu: " + std::to_string(min) + "}";
  if (weight_milli) s += ", fairSharing: {weight: " + std::to_string(*weight_milli) + "m}";
  return s + "}\n";
}

std::string GpuPod(const std::string& ns, const std::string& name, int priority, int gpus,
                   int submit_s) {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns +
         ", annotations: {arbiter.dev/submit-time: " + std::to_string(submit_s) +
         "s, arbiter.dev/duration: 1h}}\nspec: {priority: " + std::to_string(priority) +
         ", containers: [{name: c, resources: {requests: {cpu: \"1\", nvidia.com/gpu: \"" +
         std::to_string(gpus) + "\"}}}]}\n";
}

// Four 64-GPU nodes: placement never decides here.
const char* kNode =
    "apiVersion: v1\nkind: Node\nmetadata: {name: n0}\nstatus: {capacity: {cpu: \"512\", memory: "
    "4Ti, nvidia.com/gpu: \"64\"}}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: \"512\", "
    "memory: 4Ti, nvidia.com/gpu: \"64\"}}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\nstatus: {capacity: {cpu: \"512\", "
    "memory: 4Ti, nvidia.com/gpu: \"64\"}}\n"
    "---\napiVersion: v1\nkind: Node\nmetadata: {name: n3}\nstatus: {capacity: {cpu: \"512\", "
    "memory: 4Ti, nvidia.com/gpu: \"64\"}}\n";

// Property: when several namespaces of a cohort compete for its idle quota at one instant, the
// lowest weighted share borrows first, so once the cohort is full no namespace that still waits
// could take one more GPU and stay at or below the share of any namespace that got one: for all
// i, j with pods still pending, share(i) <= share(j with one more GPU). Random mins, weights,
// priorities and demands; every pod asks for one GPU.
TEST(FairShare, BorrowingOrderFollowsWeightedShares) {
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int teams = pick(2, 4);
    std::ostringstream m;
    m << kNode << Quota("lender", pick(6, 30), std::nullopt);
    std::vector<std::string> names;
    for (int t = 0; t < teams; ++t) {
      names.push_back("team-" + std::to_string(t));
      m << Quota(names.back(), pick(0, 4), pick(1, 3) * 500);
    }
    for (int t = 0; t < teams; ++t)
      for (int k = 0, n = pick(15, 40); k < n; ++k)
        m << GpuPod(names[t], "p" + std::to_string(k), pick(0, 3) * 100, 1, 0);
    auto load = Load(m.str());
    ASSERT_TRUE(load.ok());
    sim::SimOptions opts;
    opts.check_invariants = true;
    opts.until = 0;
    auto r = sim::RunSimulation(load.set, opts);
    ASSERT_TRUE(r.ok()) << r.message();
    std::map<std::string, int64_t> used;
    std::map<std::string, bool> waiting;
    for (const auto& w : r->workloads()) {
      if (w.phase == engine::Phase::kRunning) used[std::string(w.namespace_)] += 1000;
      if (w.phase == engine::Phase::kPending) waiting[std::string(w.namespace_)] = true;
    }
    std::vector<const ElasticQuota*> members;
    std::map<std::string, const ElasticQuota*> quota;
    for (const auto& q : load.set.elastic_quotas) {
      members.push_back(&q);
      quota[q.meta.namespace_] = &q;
    }
    const ResourceList lendable = engine::CohortLendable(members);
    auto share = [&](const std::string& ns, int64_t extra) {
      ResourceList u;
      u.Set("nvidia.com/gpu", used[ns] + extra);
      return engine::WeightedShare(*quota[ns], u, lendable);
    };
    int pending_teams = 0;
    for (const auto& i : names) {
      pending_teams += waiting[i];
      for (const auto& j : names) {
        if (!waiting[i] || !waiting[j]) continue;
        EXPECT_LE(share(i, 0), share(j, 1000))
            << "seed " << seed << ": " << i << " has share " << engine::FormatShare(share(i, 0))
            << ", " << j << " would have " << engine::FormatShare(share(j, 1000))
            << " with one more GPU";
      }
    }
    EXPECT_GT(pending_teams, 0) << "seed " << seed << ": the cohort must be contended";
  }
}

// The same instant without fairSharing: queue order (priority) decides, so the share property does
// not hold — the test above can fail.
TEST(FairShare, WithoutFairSharingPriorityDecides) {
  std::ostringstream m;
  m << kNode << Quota("lender", 4, std::nullopt) << Quota("team-a", 0, std::nullopt)
    << Quota("team-b", 0, std::nullopt);
  for (int k = 0; k < 4; ++k) m << GpuPod("team-a", "a" + std::to_string(k), 100, 1, 0);
  for (int k = 0; k < 4; ++k) m << GpuPod("team-b", "b" + std::to_string(k), 0, 1, 0);
  auto load = Load(m.str());
  sim::SimOptions opts;
  opts.until = 0;
  auto r = sim::RunSimulation(load.set, opts);
  ASSERT_TRUE(r.ok());
  int a = 0, b = 0;
  for (const auto& w : r->workloads())
    if (w.phase == engine::Phase::kRunning) (w.namespace_ == "team-a" ? a : b)++;
  EXPECT_EQ(a, 4);
  EXPECT_EQ(b, 0);
}

TEST(FairShare, ReportGivesEachNamespacesShare) {
  std::ostringstream m;
  m << kNode << Quota("lender", 8, std::nullopt) << Quota("team-a", 2, 1000)
    << Quota("team-b", 2, 2000) << GpuPod("team-a", "a", 0, 5, 0)
    << GpuPod("team-b", "b", 0, 5, 600);
  auto load = Load(m.str());
  ASSERT_TRUE(load.ok());
  auto r = sim::RunSimulation(load.set, {});
  ASSERT_TRUE(r.ok()) << r.message();
  auto s = sim::Summarise(load.set, *r);
  auto bill = sim::BillSimulation(load.set, *r, sim::DefaultEpoch(load.set));
  ASSERT_TRUE(bill.ok());
  auto j = sim::ReportJson(load.set, *r, s, sim::BillJson(*bill));
  const auto& fs = j["summary"]["fairShares"];
  ASSERT_EQ(fs.size(), 3u) << fs.dump();
  // The cohort lends 12 GPUs. team-a borrows 3 (3/12 = 0.25, weight 1); team-b borrows 3 with
  // weight 2 (0.125).
  EXPECT_EQ(fs[1]["namespace"], "team-a");
  EXPECT_EQ(fs[1]["maxShare"], "0.25");
  EXPECT_EQ(fs[1]["maxShareTime"], 0);
  EXPECT_EQ(fs[1]["weight"], "1");
  EXPECT_EQ(fs[2]["namespace"], "team-b");
  EXPECT_EQ(fs[2]["maxShare"], "0.125");
  EXPECT_EQ(fs[2]["maxShareTime"], 600);
  EXPECT_EQ(fs[2]["weight"], "2");
  EXPECT_EQ(fs[2]["finalShare"], "0");
  EXPECT_EQ(fs[0]["namespace"], "lender");
  EXPECT_EQ(fs[0]["maxShare"], "0");
}

}  // namespace
}  // namespace arbiter
