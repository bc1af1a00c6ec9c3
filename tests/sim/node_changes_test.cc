// Pool changes (Node arbiter.dev/add-time / remove-time) keep runs, billing and the report
// consistent: runs on a removed node end at the removal, the lost work is recorded against
// "node/NAME" (and credited), the idle cost and utilisation count a node only while present.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "core/int128.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

// Scenario 46's manifests (gpu-2 leaves at 25m) with a PriceBook: GPUs at 3600 per GPU-hour, so
// one GPU-second costs 1.
yaml::ManifestLoad LoadScenario46WithPrices() {
  std::ifstream f(std::string(ARBITER_SOURCE_DIR) +
                  "/tests/scenarios/46_node_removed_workloads_requeue.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  text = text.substr(0, text.find("\n--- # expect\n") + 1);
  text += R"(---
apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: USD
  effectiveFrom: "2026-01-01T00:00:00Z"
  mode: Request
  preemptionCredit: LostWork
  prices: {cpu: "0", memory: "0", nvidia.com/gpu: "3600"}
)";
  yaml::ManifestLoad out;
  yaml::LoadManifestText(text, "46.yaml", &out);
  return out;
}

TEST(NodeChangesTest, RunsEndAtRemovalAndLostWorkIsRecorded) {
  auto load = LoadScenario46WithPrices();
  ASSERT_TRUE(load.ok());
  sim::SimOptions o;
  o.check_invariants = true;
  auto r = sim::RunSimulation(load.set, o);
  ASSERT_TRUE(r.ok()) << r.message();
  int on_gpu2 = 0;
  for (const auto& run : r->runs()) {
    const std::string& name = r->workloads()[engine::Value(run.workload)].key;
    if (run.node != "gpu-2") continue;
    ++on_gpu2;
    EXPECT_EQ(run.end, 1500000) << name;
    ASSERT_TRUE(run.lost_from.has_value()) << name;
    EXPECT_EQ(run.lost_to, 1500000);
    EXPECT_EQ(run.preemptor, "node/gpu-2");
    const Millis want = name == "ml/ckpt" ? 1200000 : 0;  // last checkpoint at 20m, or none
    EXPECT_EQ(*run.lost_from, want) << name;
  }
  EXPECT_EQ(on_gpu2, 3);
  auto s = sim::Summarise(load.set, *r);
  EXPECT_EQ(s.nodes_removed, 1u);
  EXPECT_EQ(s.preemptions, 0u);
  EXPECT_EQ(s.gpu_milli_ms_lost, 0);
  // ckpt lost 5m, no-ckpt and one-shot 25m each, 2 GPUs each: 6600 GPU-seconds.
  EXPECT_EQ(s.gpu_milli_ms_lost_node_removed, int64_t{6600} * 1000 * 1000);
  // Capacity: gpu-1 for the whole run (5100 s), gpu-2 for 1500 s, 8 GPUs each.
  for (const auto& u : s.utilisation) {
    if (u.resource == "nvidia.com/gpu") {
      EXPECT_TRUE(u.capacity == static_cast<int128>(8000) * (5100000 + 1500000));
    }
  }
  auto json = sim::ReportJson(load.set, *r, s, nullptr);
  EXPECT_EQ(json["summary"]["nodesRemoved"], 1);
  EXPECT_EQ(json["summary"]["gpuSecondsLostToNodeRemoval"], "6600.000");
}

TEST(NodeChangesTest, BillingStopsAtRemovalAndCreditsLostWork) {
  auto load = LoadScenario46WithPrices();
  ASSERT_TRUE(load.ok());
  auto r = sim::RunSimulation(load.set, sim::SimOptions{});
  ASSERT_TRUE(r.ok());
  auto bill = sim::BillSimulation(load.set, *r, sim::DefaultEpoch(load.set));
  ASSERT_TRUE(bill.ok()) << bill.message();
  ASSERT_EQ(bill->invoices.size(), 1u);
  const auto& inv = bill->invoices[0];
  Decimal gpu_usage, credits;
  for (const auto& l : inv.lines) {
    if (l.resource != "nvidia.com/gpu") continue;
    if (l.kind == billing::RowKind::kUsage) {
      gpu_usage = gpu_usage + l.amount;
    } else {
      EXPECT_EQ(l.preemptor, "node/gpu-2");
      credits = credits + l.amount;
    }
  }
  // Requests held: big 1500 s x 8, ckpt (1500 + 2400) s x 2, no-ckpt (1500 + 3600) s x 2,
  // one-shot 1500 s x 2 = 33000 GPU-seconds at 1 per GPU-second.
  EXPECT_EQ(gpu_usage.ToString(), "33000");
  EXPECT_EQ(credits.ToString(), "-6600");
  // The idle cost counts gpu-2 only until it left: (8 x 5100 + 8 x 1500) - 33000 = 19800 GPU-s.
  ASSERT_TRUE(bill->idle.has_value());
  Decimal idle_gpu;
  for (const auto& l : bill->idle->lines)
    if (l.resource == "nvidia.com/gpu") idle_gpu = idle_gpu + l.amount;
  EXPECT_EQ(idle_gpu.ToString(), "19800");
}

TEST(NodeChangesTest, LaterNodeIsCountedOnlyFromItsAddTime) {
  yaml::ManifestLoad load;
  yaml::LoadManifestText(R"(apiVersion: v1
kind: Node
metadata: {name: a}
status: {capacity: {cpu: "8", memory: 8Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Node
metadata: {name: b, annotations: {arbiter.dev/add-time: 1h}}
status: {capacity: {cpu: "8", memory: 8Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, annotations: {arbiter.dev/duration: 2h}}
spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: "2"}}}]}
)",
                         "m.yaml", &load);
  ASSERT_TRUE(load.ok());
  auto r = sim::RunSimulation(load.set, sim::SimOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->end_time, 7200000);
  auto tl = sim::TimelineJson(load.set, *r);
  // At 0 only node a exists: the pod holds all of its GPUs; from 1h it holds half the pool's.
  EXPECT_EQ(tl.front()["allocated"]["nvidia.com/gpu"], "1.0000");
  bool half = false;
  for (const auto& p : tl)
    if (p["time"] == 3600) half = p["allocated"]["nvidia.com/gpu"] == "0.5000";
  EXPECT_TRUE(half) << tl.dump();
  auto s = sim::Summarise(load.set, *r);
  EXPECT_EQ(s.nodes_added, 1u);
  for (const auto& u : s.utilisation) {
    if (u.resource == "nvidia.com/gpu") {
      EXPECT_TRUE(u.capacity == static_cast<int128>(2000) * (7200000 + 3600000));
    }
  }
}

}  // namespace
}  // namespace arbiter
