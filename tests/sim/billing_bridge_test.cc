// The simulator's bill: run records -> segments -> invoices, for behaviour that needs the
// engine (node labels, idle capacity).
#include "sim/billing_bridge.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "sim/simulator.h"

namespace arbiter::sim {
namespace {

ManifestSet Load(const std::string& text) {
  yaml::ManifestLoad load;
  yaml::LoadManifestText(text, "test.yaml", &load);
  for (const auto& d : load.diagnostics.items) ADD_FAILURE() << d.ToString();
  return load.set;
}

const billing::InvoiceLine* GpuLine(const billing::Invoice& inv) {
  for (const auto& l : inv.lines)
    if (l.resource == "nvidia.com/gpu" && l.kind == billing::RowKind::kUsage) return &l;
  return nullptr;
}

// Issue 4: a time-sliced node (4 cards x 4 replicas = nvidia.com/gpu: 16, labelled by GPU
// feature discovery) bills one replica as 1/4 of the card. The pod holds 1 replica for 1 h on
// an H100 at 14.00/h: 3600 replica-s x 3.50/h = 3.500000.
TEST(BillingBridge, TimeSlicedReplicaBillsAQuarterCard) {
  ManifestSet m = Load(R"(
apiVersion: v1
kind: Node
metadata:
  name: h100-ts
  labels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3-SHARED
    nvidia.com/gpu.count: "4"
    nvidia.com/gpu.replicas: "4"
    nvidia.com/gpu.sharing-strategy: time-slicing
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "16"}
---
apiVersion: v1
kind: Pod
metadata:
  name: infer
  namespace: team-a
  annotations: {arbiter.dev/duration: 1h}
spec:
  containers:
  - name: c
    resources:
      requests: {nvidia.com/gpu: "1"}
      limits: {nvidia.com/gpu: "1"}
---
apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: standard}
spec:
  currency: CNY
  effectiveFrom: "2026-01-01T00:00:00Z"
  prices: {nvidia.com/gpu: "7.00"}
  gpuModels: {NVIDIA-H100-80GB-HBM3: "14.00"}
)");
  auto r = RunSimulation(m, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->runs().size(), 1u);
  EXPECT_EQ(r->runs()[0].gpu_replicas, 4);
  auto bill = BillSimulation(m, *r, DefaultEpoch(m));
  ASSERT_TRUE(bill.ok()) << bill.message();
  ASSERT_EQ(bill->invoices.size(), 1u);
  const billing::InvoiceLine* l = GpuLine(bill->invoices[0]);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->gpu_replicas, 4);
  EXPECT_EQ(l->unit, "replica-second");
  EXPECT_EQ(l->billed_quantity.ToString(), "3600");
  EXPECT_EQ(l->price.unit_price.ToString(), "3.5");
  EXPECT_EQ(l->amount.ToFixed(6), "3.500000");
  EXPECT_EQ(bill->invoices[0].total.ToFixed(6), "3.500000");
  // Idle: 15 replicas x 1 h x 3.50 = 52.50 (cpu and memory are unpriced).
  ASSERT_TRUE(bill->idle.has_value());
  EXPECT_EQ(bill->idle->request_total.ToFixed(6), "52.500000");
}

// The device plugin's renameByDefault: true advertises the replicas as nvidia.com/gpu.shared
// (and no nvidia.com/gpu); a replica still costs 1/N of the card: 1 of 4 on an H100 for 1 h =
// 3.500000, and the 15 idle replicas 52.500000.
TEST(BillingBridge, RenamedSharedGpuReplicaBillsAQuarterCard) {
  ManifestSet m = Load(R"(
apiVersion: v1
kind: Node
metadata:
  name: h100-ts
  labels:
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.replicas: "4"
    nvidia.com/gpu.sharing-strategy: mps
status:
  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu.shared: "16"}
---
apiVersion: v1
kind: Pod
metadata:
  name: infer
  namespace: team-a
  annotations: {arbiter.dev/duration: 1h}
spec:
  containers:
  - name: c
    resources:
      requests: {nvidia.com/gpu.shared: "1"}
      limits: {nvidia.com/gpu.shared: "1"}
---
apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: standard}
spec:
  currency: CNY
  effectiveFrom: "2026-01-01T00:00:00Z"
  gpuModels: {NVIDIA-H100-80GB-HBM3: "14.00"}
)");
  auto r = RunSimulation(m, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  auto bill = BillSimulation(m, *r, DefaultEpoch(m));
  ASSERT_TRUE(bill.ok()) << bill.message();
  ASSERT_EQ(bill->invoices.size(), 1u);
  const auto& lines = bill->invoices[0].lines;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].resource, "nvidia.com/gpu.shared");
  EXPECT_EQ(lines[0].unit, "replica-second");
  EXPECT_EQ(lines[0].amount.ToFixed(6), "3.500000");
  ASSERT_TRUE(bill->idle.has_value());
  EXPECT_EQ(bill->idle->request_total.ToFixed(6), "52.500000");
}

// Without --ledger the simulator meters one namespace at a time (InvoiceBuilder); the invoices
// are byte for byte those of metering every row at once, with and without idle cost spread.
TEST(BillingBridge, NamespaceAtATimeGivesTheSameInvoices) {
  std::ifstream f(std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  for (const char* share : {"", "  shareIdle: Weighted\n", "  shareIdle: Even\n"}) {
    std::string t = text;
    const std::string anchor = "  migRule: Max\n";
    const size_t at = t.find(anchor);
    ASSERT_NE(at, std::string::npos);
    t.insert(at + anchor.size(), share);
    yaml::ManifestLoad load;  // the example pool has one intended warning
    yaml::LoadManifestText(t, "pool.yaml", &load);
    ASSERT_TRUE(load.ok());
    const ManifestSet& m = load.set;
    auto r = RunSimulation(m, {});
    ASSERT_TRUE(r.ok()) << r.message();
    auto all = BillSimulation(m, *r, DefaultEpoch(m), /*keep_rows=*/true);
    auto parts = BillSimulation(m, *r, DefaultEpoch(m), /*keep_rows=*/false);
    ASSERT_TRUE(all.ok() && parts.ok());
    EXPECT_FALSE(all->rows.empty());
    EXPECT_TRUE(parts->rows.empty());
    ASSERT_GE(all->invoices.size(), 3u);
    ASSERT_TRUE(all->idle.has_value());
    EXPECT_EQ(*share != '\0', !all->idle->idle_share_total.is_zero()) << share;
    EXPECT_EQ(BillJson(*all).dump(), BillJson(*parts).dump()) << share;
    // A namespace metered a few runs at a time (a part ends after a workload's last run): the
    // same bytes, on one thread or two.
    for (size_t part : {size_t{1}, size_t{2}, size_t{3}, size_t{7}})
      for (int threads : {1, 2}) {
        auto small = BillSimulation(m, *r, DefaultEpoch(m), /*keep_rows=*/false, threads, part);
        ASSERT_TRUE(small.ok()) << small.message();
        EXPECT_EQ(BillJson(*all).dump(), BillJson(*small).dump())
            << share << " parts of " << part << " runs, " << threads << " threads";
      }
  }
}

// arbiter sim bills the namespaces on two threads (each its own namespaces' rows and invoices,
// combined in namespace order): the invoices are those of one thread, byte for byte, whatever the
// thread count (more threads than jobs included), with and without idle cost spread.
TEST(BillingBridge, ThreadedBillEqualsOneThread) {
  std::ifstream f(std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  for (const char* share : {"", "  shareIdle: Weighted\n"}) {
    std::string t = ss.str();
    const std::string anchor = "  migRule: Max\n";
    const size_t at = t.find(anchor);
    ASSERT_NE(at, std::string::npos);
    t.insert(at + anchor.size(), share);
    yaml::ManifestLoad load;  // the example pool has one intended warning
    yaml::LoadManifestText(t, "pool.yaml", &load);
    ASSERT_TRUE(load.ok());
    const ManifestSet& m = load.set;
    auto r = RunSimulation(m, {});
    ASSERT_TRUE(r.ok()) << r.message();
    auto one = BillSimulation(m, *r, DefaultEpoch(m), /*keep_rows=*/false, /*threads=*/1);
    ASSERT_TRUE(one.ok()) << one.message();
    ASSERT_GE(one->invoices.size(), 3u);
    ASSERT_TRUE(one->idle.has_value());
    for (int threads : {2, 3, 16}) {
      auto many = BillSimulation(m, *r, DefaultEpoch(m), /*keep_rows=*/false, threads);
      ASSERT_TRUE(many.ok()) << many.message();
      EXPECT_EQ(BillJson(*one).dump(), BillJson(*many).dump()) << share << threads;
      ASSERT_EQ(one->invoices.size(), many->invoices.size());
      for (size_t i = 0; i < one->invoices.size(); ++i)
        EXPECT_EQ(one->invoices[i].digest, many->invoices[i].digest) << i;
    }
  }
}

// A billing error on two threads is the one a single thread reports: here every hour precedes the
// PriceBook (--start before its effectiveFrom), and the first job in the one-thread order
// (the namespaces by name, before the idle invoice) names its hour.
TEST(BillingBridge, ThreadedBillReportsTheOneThreadError) {
  std::ifstream f(std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml");
  std::stringstream ss;
  ss << f.rdbuf();
  yaml::ManifestLoad load;
  yaml::LoadManifestText(ss.str(), "pool.yaml", &load);
  ASSERT_TRUE(load.ok());
  const ManifestSet& m = load.set;
  auto r = RunSimulation(m, {});
  ASSERT_TRUE(r.ok()) << r.message();
  const Millis early = DefaultEpoch(m) - 30 * 24 * billing::kHourMs;
  auto one = BillSimulation(m, *r, early, /*keep_rows=*/false, /*threads=*/1);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.message().find("no PriceBook is in force"), std::string::npos) << one.message();
  for (int threads : {2, 4}) {
    auto many = BillSimulation(m, *r, early, /*keep_rows=*/false, threads);
    ASSERT_FALSE(many.ok());
    EXPECT_EQ(one.message(), many.message()) << threads;
  }
}

}  // namespace
}  // namespace arbiter::sim
