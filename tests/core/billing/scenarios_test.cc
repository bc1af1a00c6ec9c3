// Hand-computed invoices of issue 4. Every expected number is worked out in the comment above it.
#include <gtest/gtest.h>

#include "billing_test_util.h"

namespace arbiter::billing {
namespace {

using namespace testing;  // NOLINT

// A pod requests 16 cores and uses 4 for one hour, [00:00, 01:00), scrape 30 s, cpu 0.05/core-h.
// Request track: 16 × 3600 = 57600 core-s -> 0.80.
// Usage track: counter samples at 0, 30, ..., 3570 s (120 samples); the increase between the
// first and the last is 4 × 3570 = 14280 core-s -> 14280/3600 × 0.05 = 0.198333(3) -> 0.198333.
// Max: every interval max(16, 4) = 16 -> 57600 core-s -> 0.80.
// Blended 0.5: 0.5 × 57600 + 0.5 × 14280 = 35940 core-s -> 0.4991666.. -> 0.499167.
struct ModeCase {
  BillingMode mode;
  const char* billed;
  const char* amount;
};
class HoarderTest : public ::testing::TestWithParam<ModeCase> {};

TEST_P(HoarderTest, SixteenRequestedFourUsedForAnHour) {
  const ModeCase& c = GetParam();
  Invoice inv = InvoiceOf({Seg("team-a/hoarder", "cpu=16", "cpu=4", kEpoch, kEpoch + kHour)},
                          {Book("standard", kEpoch, c.mode)});
  ASSERT_EQ(inv.lines.size(), 1u);
  const InvoiceLine& l = inv.lines[0];
  EXPECT_EQ(l.resource, "cpu");
  EXPECT_EQ(l.unit, "core-second");
  EXPECT_EQ(l.mode, c.mode);
  EXPECT_EQ(l.request_quantity.ToString(), "57600");
  EXPECT_EQ(l.usage_quantity.ToString(), "14280");
  EXPECT_EQ(l.billed_quantity.ToString(), c.billed);
  EXPECT_EQ(l.unit_price().ToString(), "0.05");
  EXPECT_EQ(l.amount.ToFixed(6), c.amount);
  EXPECT_EQ(inv.request_total.ToFixed(6), "0.800000");
  EXPECT_EQ(inv.usage_total.ToFixed(6), "0.198333");
  EXPECT_EQ(inv.total.ToFixed(6), c.amount);
  EXPECT_EQ(l.samples, 120);
  EXPECT_EQ(l.covered_ms, 3570 * kSec);
  EXPECT_EQ(l.run_ms, kHour);
  ASSERT_EQ(inv.provenance.size(), 1u);
  EXPECT_FALSE(inv.provenance[0].low_coverage);
}

INSTANTIATE_TEST_SUITE_P(Modes, HoarderTest,
                         ::testing::Values(ModeCase{BillingMode::kRequest, "57600", "0.800000"},
                                           ModeCase{BillingMode::kUsage, "14280", "0.198333"},
                                           ModeCase{BillingMode::kMax, "57600", "0.800000"},
                                           ModeCase{BillingMode::kBlended, "35940", "0.499167"}));

// Usage above the request (a burst): Max bills usage where it is larger, per interval.
// Request 1 core, usage 3 cores for one hour: request 3600 core-s, usage 3 × 3570 = 10710 core-s.
// Max per interval: first sample at 0 s, pieces [0,30), ..., [3540,3570) each 90 core-s usage vs
// 30 request -> 119 × 90 = 10710; the last piece [3570, 3600) has no counter increase -> 30.
// Max = 10740 core-s -> 10740/3600 × 0.05 = 0.149166.. -> 0.149167.
TEST(BillingScenario, MaxTakesTheLargerTrackPerInterval) {
  Invoice inv =
      InvoiceOf({Seg("team-a/burst", "cpu=1", "cpu=3", kEpoch, kEpoch + kHour)}, {Book()});
  const InvoiceLine* l = FindLine(inv, "cpu");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->billed_quantity.ToString(), "10740");
  EXPECT_EQ(l->amount.ToFixed(6), "0.149167");
}

// Memory is a gauge held for the interval: request 64Gi, usage 16Gi for one hour.
// Samples at 0..3570 s each held 30 s -> the whole hour is covered.
// Request 64 × 3600 = 230400 GiB-s -> × 0.01/3600 = 0.64; usage 16 × 3600 = 57600 -> 0.16.
TEST(BillingScenario, MemoryGibSeconds) {
  Invoice inv = InvoiceOf({Seg("team-a/mem", "memory=64Gi", "memory=16Gi", kEpoch, kEpoch + kHour)},
                          {Book("standard", kEpoch, BillingMode::kUsage)});
  const InvoiceLine* l = FindLine(inv, "memory");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->unit, "GiB-second");
  EXPECT_EQ(l->request_quantity.ToString(), "230400");
  EXPECT_EQ(l->usage_quantity.ToString(), "57600");
  EXPECT_EQ(l->billed_quantity.ToString(), "57600");
  EXPECT_EQ(l->amount.ToFixed(6), "0.160000");
  EXPECT_EQ(l->request_amount.ToFixed(6), "0.640000");
  EXPECT_EQ(l->covered_ms, kHour);
}

// 1536Mi = 1.5 GiB for 10 s: 15 GiB-s exactly; 100 MiB for 1 s = 0.09765625 GiB-s (exact).
TEST(BillingScenario, MemoryFractionsOfAGibAreExact) {
  Invoice inv =
      InvoiceOf({Seg("team-a/a", "memory=1536Mi", "", kEpoch, kEpoch + 10 * kSec),
                 Seg("team-a/b", "memory=100Mi", "", kEpoch + 20 * kSec, kEpoch + 21 * kSec)},
                {Book("standard", kEpoch, BillingMode::kRequest)});
  const InvoiceLine* l = FindLine(inv, "memory");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->request_quantity.ToString(), "15.09765625");
}

// MIG on an H100 (14.00 per GPU-hour), two hours each, default rule Max:
// 1g.10gb: max(1/7, 1/8) = 1/7 -> 2.00 per instance-hour -> 7200 instance-s -> 4.00.
// 3g.40gb: max(3/7, 4/8) = 1/2 -> 7.00 per instance-hour -> 14.00.
TEST(BillingScenario, MigInstancesByMaxRule) {
  const std::string h100 = "NVIDIA-H100-80GB-HBM3";
  Invoice inv = InvoiceOf(
      {Seg("team-b/small", "nvidia.com/mig-1g.10gb=1", "", kEpoch, kEpoch + 2 * kHour, h100),
       Seg("team-b/large", "nvidia.com/mig-3g.40gb=1", "", kEpoch, kEpoch + 2 * kHour, h100)},
      {Book()});
  const InvoiceLine* small = FindLine(inv, "nvidia.com/mig-1g.10gb");
  const InvoiceLine* large = FindLine(inv, "nvidia.com/mig-3g.40gb");
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(small->unit, "instance-second");
  EXPECT_EQ(small->billed_quantity.ToString(), "7200");
  EXPECT_EQ(small->price.mig_fraction, "1/7");
  EXPECT_EQ(small->unit_price().ToString(), "2");
  EXPECT_EQ(small->amount.ToFixed(6), "4.000000");
  EXPECT_EQ(large->price.mig_fraction, "1/2");
  EXPECT_EQ(large->unit_price().ToString(), "7");
  EXPECT_EQ(large->amount.ToFixed(6), "14.000000");
  ASSERT_TRUE(large->price.mig_rule.has_value());
  EXPECT_EQ(*large->price.mig_rule, MigRule::kMax);
  EXPECT_EQ(inv.total.ToFixed(6), "18.000000");
}

// The other rules: Compute 3g -> 3/7 × 14 = 6/h -> 12.00; Memory 1g.10gb -> 1/8 × 14 = 1.75/h
// -> 3.50.
TEST(BillingScenario, MigRulesComputeAndMemory) {
  const std::string h100 = "NVIDIA-H100-80GB-HBM3";
  PriceBook compute = Book();
  compute.mig_rule = MigRule::kCompute;
  Invoice a = InvoiceOf(
      {Seg("team-b/large", "nvidia.com/mig-3g.40gb=1", "", kEpoch, kEpoch + 2 * kHour, h100)},
      {compute});
  EXPECT_EQ(FindLine(a, "nvidia.com/mig-3g.40gb")->amount.ToFixed(6), "12.000000");
  PriceBook memory = Book();
  memory.mig_rule = MigRule::kMemory;
  Invoice b = InvoiceOf(
      {Seg("team-b/small", "nvidia.com/mig-1g.10gb=1", "", kEpoch, kEpoch + 2 * kHour, h100)},
      {memory});
  EXPECT_EQ(FindLine(b, "nvidia.com/mig-1g.10gb")->amount.ToFixed(6), "3.500000");
  EXPECT_EQ(FindLine(b, "nvidia.com/mig-1g.10gb")->unit_price().ToString(), "1.75");
}

// A MIG card without a model price falls back to prices[nvidia.com/gpu] = 7.00; an A100-40GB
// 1g.10gb is 1 compute / 2 memory slices: max(1/7, 2/8) = 1/4 -> 1.75/h -> one hour 1.75.
TEST(BillingScenario, MigOnA100FortyUsesItsFamilyTable) {
  Invoice inv = InvoiceOf({Seg("team-b/x", "nvidia.com/mig-1g.10gb=1", "", kEpoch, kEpoch + kHour,
                               "NVIDIA-A100-SXM4-40GB")},
                          {Book()});
  const InvoiceLine* l = FindLine(inv, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(l->price.mig_fraction, "1/4");
  EXPECT_EQ(l->amount.ToFixed(6), "1.750000");
}

// A half-shared GPU (500m) for one hour at 7.00: 1800 GPU-s -> 3.50. The H100 model price
// (14.00) applies on an H100 node: 7.00.
TEST(BillingScenario, HalfSharedGpu) {
  Invoice inv = InvoiceOf(
      {Seg("team-c/share", "nvidia.com/gpu=500m", "", kEpoch, kEpoch + kHour, "Tesla-T4")},
      {Book()});
  const InvoiceLine* l = FindLine(inv, "nvidia.com/gpu");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->unit, "GPU-second");
  EXPECT_EQ(l->billed_quantity.ToString(), "1800");
  EXPECT_EQ(l->amount.ToFixed(6), "3.500000");
  EXPECT_EQ(l->price.source, "prices[nvidia.com/gpu]");
  Invoice h = InvoiceOf({Seg("team-c/share", "nvidia.com/gpu=500m", "", kEpoch, kEpoch + kHour,
                             "NVIDIA-H100-80GB-HBM3")},
                        {Book()});
  EXPECT_EQ(FindLine(h, "nvidia.com/gpu")->amount.ToFixed(6), "7.000000");
}

// GPUs bill their request in Max mode even when the usage gauge is lower (OpenCost's rule).
TEST(BillingScenario, GpuBillsRequestUnderMax) {
  Invoice inv = InvoiceOf(
      {Seg("team-c/idle-gpu", "nvidia.com/gpu=2", "nvidia.com/gpu=500m", kEpoch, kEpoch + kHour)},
      {Book()});
  const InvoiceLine* l = FindLine(inv, "nvidia.com/gpu");
  EXPECT_EQ(l->request_quantity.ToString(), "7200");
  EXPECT_EQ(l->usage_quantity.ToString(), "1800");
  EXPECT_EQ(l->billed_quantity.ToString(), "7200");
  EXPECT_EQ(l->amount.ToFixed(6), "14.000000");
}

// A 20-second job [00:00:50, 00:01:10) under a 60 s scrape: one sample (at 00:01:00).
// cpu: a counter needs two samples -> usage 0, covered 0 of 20 s -> low coverage.
// memory: the gauge sample is held to the end -> 10 of 20 s -> low coverage.
// Request track is exact: 2 cores × 20 s = 40 core-s; Max bills 40 -> 40/3600 × 0.05 = 0.000556.
TEST(BillingScenario, ShortJobUnderSlowScrapeIsFlaggedLowCoverage) {
  Invoice inv = InvoiceOf(
      {Seg("team-a/quick", "cpu=2,memory=4Gi", "", kEpoch + 50 * kSec, kEpoch + 70 * kSec)},
      {Book()}, 60 * kSec);
  const InvoiceLine* cpu = FindLine(inv, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->request_quantity.ToString(), "40");
  EXPECT_EQ(cpu->usage_quantity.ToString(), "0");
  EXPECT_EQ(cpu->billed_quantity.ToString(), "40");
  EXPECT_EQ(cpu->amount.ToFixed(6), "0.000556");
  EXPECT_EQ(cpu->samples, 1);
  ASSERT_EQ(inv.provenance.size(), 2u);
  EXPECT_EQ(inv.provenance[0].resource, "cpu");
  EXPECT_EQ(inv.provenance[0].samples, 1);
  EXPECT_EQ(inv.provenance[0].covered_ms, 0);
  EXPECT_EQ(inv.provenance[0].run_ms, 20 * kSec);
  EXPECT_TRUE(inv.provenance[0].low_coverage);
  EXPECT_EQ(inv.provenance[1].resource, "memory");
  EXPECT_EQ(inv.provenance[1].covered_ms, 10 * kSec);
  EXPECT_TRUE(inv.provenance[1].low_coverage);
  // A job that starts and ends between two samples has no sample at all, still a request track.
  Invoice none =
      InvoiceOf({Seg("team-a/quicker", "cpu=2", "", kEpoch + 5 * kSec, kEpoch + 25 * kSec)},
                {Book()}, 60 * kSec);
  EXPECT_EQ(none.provenance[0].samples, 0);
  EXPECT_TRUE(none.provenance[0].low_coverage);
  EXPECT_EQ(FindLine(none, "cpu")->request_quantity.ToString(), "40");
}

// A training job with 1 GPU at 7.00: first run [00:00, 01:00:30) preempted at 01:00 by
// team-x/urgent, exits after a 30 s grace; last checkpoint at 00:40 -> 20 min lost. Requeued
// run [02:00, 03:00). Request track: 3630 + 3600 = 7230 GPU-s -> 7230/3600 × 7 = 14.058333(3).
// Credit: -1200 GPU-s -> -2.333333(3) -> -2.333333. Total 14.058333 - 2.333333 = 11.725000.
TEST(BillingScenario, PreemptedAndRequeuedJobGetsCreditLine) {
  RunSegment first =
      Seg("team-a/train", "nvidia.com/gpu=1", "", kEpoch, kEpoch + kHour + 30 * kSec);
  first.lost = LostWork{kEpoch + 40 * kMin, kEpoch + kHour, "team-x/urgent"};
  RunSegment second =
      Seg("team-a/train", "nvidia.com/gpu=1", "", kEpoch + 2 * kHour, kEpoch + 3 * kHour);
  Invoice inv = InvoiceOf({first, second}, {Book()});
  ASSERT_EQ(inv.lines.size(), 2u);
  const InvoiceLine* use = FindLine(inv, "nvidia.com/gpu");
  const InvoiceLine* credit = FindLine(inv, "nvidia.com/gpu", RowKind::kCredit);
  ASSERT_NE(credit, nullptr);
  EXPECT_EQ(use->billed_quantity.ToString(), "7230");
  EXPECT_EQ(use->amount.ToFixed(6), "14.058333");
  EXPECT_EQ(credit->preemptor, "team-x/urgent");
  EXPECT_EQ(credit->billed_quantity.ToString(), "-1200");
  EXPECT_EQ(credit->amount.ToFixed(6), "-2.333333");
  EXPECT_EQ(inv.credit_total.ToFixed(6), "-2.333333");
  EXPECT_EQ(inv.total.ToFixed(6), "11.725000");
  EXPECT_EQ(inv.lines.back().kind, RowKind::kCredit);  // credits after usage lines

  PriceBook no_credit = Book();
  no_credit.preemption_credit = CreditPolicy::kNone;
  Invoice without = InvoiceOf({first, second}, {no_credit});
  EXPECT_EQ(without.lines.size(), 1u);
  EXPECT_EQ(without.total.ToFixed(6), "14.058333");
}

// Price change in the middle of a run: v1 (cpu 0.05) from 00:00, v2 (cpu 0.10) from 01:30.
// A 1-core run [00:00, 03:00): hours 00 and 01 start before 01:30 -> v1: 7200 core-s -> 0.10;
// hour 02 -> v2: 3600 core-s -> 0.10. Two lines, total 0.20.
TEST(BillingScenario, PriceChangeInTheMiddleOfARun) {
  PriceBook v1 = Book("standard", kEpoch, BillingMode::kRequest);
  PriceBook v2 = Book("standard-v2", kEpoch + 90 * kMin, BillingMode::kRequest);
  v2.prices["cpu"] = D("0.10");
  Invoice inv = InvoiceOf({Seg("team-a/long", "cpu=1", "", kEpoch, kEpoch + 3 * kHour)}, {v2, v1});
  ASSERT_EQ(inv.lines.size(), 2u);
  EXPECT_EQ(inv.lines[0].price_book, "standard@2026-01-01T00:00:00Z");
  EXPECT_EQ(inv.lines[0].billed_quantity.ToString(), "7200");
  EXPECT_EQ(inv.lines[0].amount.ToFixed(6), "0.100000");
  EXPECT_EQ(inv.lines[1].price_book, "standard-v2@2026-01-01T01:30:00Z");
  EXPECT_EQ(inv.lines[1].unit_price().ToString(), "0.1");
  EXPECT_EQ(inv.lines[1].billed_quantity.ToString(), "3600");
  EXPECT_EQ(inv.lines[1].amount.ToFixed(6), "0.100000");
  EXPECT_EQ(inv.total.ToFixed(6), "0.200000");
  EXPECT_EQ(inv.price_books.size(), 2u);
}

// Lines are rounded once each; the total is the sum of the rounded lines.
// cpu: 1 core × 1 s at 0.0018/core-h = 0.0000005 -> 0.000001; memory 1Gi × 1 s at 0.0018 -> the
// same. Total 0.000002 (rounding the exact sum 0.000001 would give 0.000001).
TEST(BillingScenario, TotalIsTheSumOfRoundedLines) {
  PriceBook b = Book("tiny", kEpoch, BillingMode::kRequest);
  b.prices["cpu"] = D("0.0018");
  b.prices["memory"] = D("0.0018");
  Invoice inv = InvoiceOf({Seg("team-a/blip", "cpu=1,memory=1Gi", "", kEpoch, kEpoch + kSec)}, {b});
  ASSERT_EQ(inv.lines.size(), 2u);
  EXPECT_EQ(inv.lines[0].amount.ToFixed(6), "0.000001");
  EXPECT_EQ(inv.lines[1].amount.ToFixed(6), "0.000001");
  EXPECT_EQ(inv.total.ToFixed(6), "0.000002");
  Decimal sum;
  for (const auto& l : inv.lines) sum += l.amount;
  EXPECT_EQ(sum, inv.total);
}

// Per-namespace mode override: team-c bills Usage under a Max book.
TEST(BillingScenario, NamespaceModeOverride) {
  PriceBook b = Book();
  b.namespace_modes["team-c"] = BillingMode::kUsage;
  MeterConfig cfg;
  auto rows = MeterSegments({Seg("team-a/x", "cpu=16", "cpu=4", kEpoch, kEpoch + kHour),
                             Seg("team-c/x", "cpu=16", "cpu=4", kEpoch, kEpoch + kHour)},
                            cfg);
  ASSERT_TRUE(rows.ok());
  auto invs = BuildInvoices(*rows, *PriceCatalog::Create({b}));
  ASSERT_TRUE(invs.ok());
  ASSERT_EQ(invs->size(), 2u);
  EXPECT_EQ((*invs)[0].namespace_, "team-a");
  EXPECT_EQ((*invs)[0].total.ToFixed(6), "0.800000");
  EXPECT_EQ((*invs)[1].namespace_, "team-c");
  EXPECT_EQ((*invs)[1].lines[0].mode, BillingMode::kUsage);
  EXPECT_EQ((*invs)[1].total.ToFixed(6), "0.198333");
}

// Idle capacity: a node with 32 cores and one H100 for one hour, a pod holding 16 cores for the
// hour: idle 16 × 3600 core-s -> 0.80, idle GPU 3600 GPU-s at 14.00 -> 14.00.
TEST(BillingScenario, IdleCapacityIsReportedSeparately) {
  NodeCapacity n{"node-1", "NVIDIA-H100-80GB-HBM3", Res("cpu=32,nvidia.com/gpu=1,pods=110"), kEpoch,
                 kEpoch + kHour};
  auto idle = BuildIdleInvoice({n}, {Seg("team-a/x", "cpu=16", "", kEpoch, kEpoch + kHour)},
                               *PriceCatalog::Create({Book()}), kEpoch, kEpoch + kHour);
  ASSERT_TRUE(idle.ok()) << idle.message();
  EXPECT_EQ(idle->namespace_, "__idle__");
  ASSERT_EQ(idle->lines.size(), 2u);
  EXPECT_EQ(idle->lines[0].resource, "cpu");
  EXPECT_EQ(idle->lines[0].billed_quantity.ToString(), "57600");
  EXPECT_EQ(idle->lines[0].amount.ToFixed(6), "0.800000");
  EXPECT_EQ(idle->lines[1].amount.ToFixed(6), "14.000000");
  EXPECT_EQ(idle->total.ToFixed(6), "14.800000");
}

// Idle cost spread by share (PriceBook shareIdle). Node: 32 cores and 2 H100 (14.00/h) for one
// hour, Request mode. team-a holds 16 cores (0.80), team-b 4 cores (0.20) and 1 GPU (14.00).
// Idle: 12 cores x 1 h = 0.60, 1 GPU x 1 h = 14.00.
std::vector<Invoice> SpreadCase(IdleSharing rule) {
  NodeCapacity n{"node-1", "NVIDIA-H100-80GB-HBM3", Res("cpu=32,nvidia.com/gpu=2"), kEpoch,
                 kEpoch + kHour};
  std::vector<RunSegment> segs = {Seg("team-a/x", "cpu=16", "", kEpoch, kEpoch + kHour),
                                  Seg("team-b/y", "cpu=4,nvidia.com/gpu=1", "", kEpoch,
                                      kEpoch + kHour, "NVIDIA-H100-80GB-HBM3")};
  auto rows = *MeterSegments(segs, MeterConfig{});
  auto idle = *IdleRows({n}, segs, kEpoch, kEpoch + kHour);
  rows.insert(rows.end(), idle.begin(), idle.end());
  PriceBook b = Book("standard", kEpoch, BillingMode::kRequest);
  b.share_idle = rule;
  auto invs = BuildInvoices(rows, *PriceCatalog::Create({b}));
  EXPECT_TRUE(invs.ok()) << invs.message();
  EXPECT_EQ(invs->size(), 3u);
  return *invs;
}

Decimal SumOfLines(const Invoice& inv) {
  Decimal sum;
  for (const auto& l : inv.lines) sum += l.amount;
  return sum;
}

// Weighted: idle cpu 0.60 split by cpu cost 0.80 : 0.20 -> 0.48 and 0.12; idle GPU 14.00 all
// to team-b, the only tenant with GPU cost. team-a 0.80 + 0.48 = 1.28; team-b 0.20 + 14.00 +
// 0.12 + 14.00 = 28.32. The spread adds up to the idle total 14.60.
TEST(BillingScenario, IdleSpreadWeightedByBilledCost) {
  auto invs = SpreadCase(IdleSharing::kWeighted);
  ASSERT_EQ(invs.size(), 3u);
  const Invoice& idle = invs[0];
  const Invoice& a = invs[1];
  const Invoice& b = invs[2];
  EXPECT_EQ(idle.namespace_, "__idle__");
  EXPECT_EQ(idle.total.ToFixed(6), "14.600000");
  EXPECT_EQ(idle.idle_share_total.ToFixed(6), "14.600000");
  const InvoiceLine* share = FindLine(a, "cpu", RowKind::kIdleShare);
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->amount.ToFixed(6), "0.480000");
  EXPECT_EQ(share->idle_amount.ToFixed(6), "0.600000");
  EXPECT_EQ(FindLine(a, "nvidia.com/gpu", RowKind::kIdleShare), nullptr);
  EXPECT_EQ(a.total.ToFixed(6), "1.280000");
  EXPECT_EQ(a.idle_share_total.ToFixed(6), "0.480000");
  EXPECT_EQ(FindLine(b, "cpu", RowKind::kIdleShare)->amount.ToFixed(6), "0.120000");
  EXPECT_EQ(FindLine(b, "nvidia.com/gpu", RowKind::kIdleShare)->amount.ToFixed(6), "14.000000");
  EXPECT_EQ(b.total.ToFixed(6), "28.320000");
  // Idle share lines come last; totals are the sums of the rounded lines.
  EXPECT_EQ(a.lines.back().kind, RowKind::kIdleShare);
  EXPECT_EQ(SumOfLines(a), a.total);
  EXPECT_EQ(SumOfLines(b), b.total);
  EXPECT_EQ((a.idle_share_total + b.idle_share_total).ToFixed(6), "14.600000");
  EXPECT_NE(a.Canonical().find("share Weighted"), std::string::npos);
  // The digest covers the spread: the same rows without it give another digest.
  auto plain = SpreadCase(IdleSharing::kNone);
  EXPECT_NE(plain[1].digest, a.digest);
  EXPECT_EQ(plain[1].total.ToFixed(6), "0.800000");
  EXPECT_TRUE(plain[0].idle_share_total.is_zero());
}

// Even: each of the two tenants gets half of each idle line: cpu 0.30, GPU 7.00.
// team-a 0.80 + 0.30 + 7.00 = 8.10; team-b 0.20 + 14.00 + 0.30 + 7.00 = 21.50.
TEST(BillingScenario, IdleSpreadEvenly) {
  auto invs = SpreadCase(IdleSharing::kEven);
  ASSERT_EQ(invs.size(), 3u);
  EXPECT_EQ(invs[1].total.ToFixed(6), "8.100000");
  EXPECT_EQ(invs[2].total.ToFixed(6), "21.500000");
}

// Largest remainder: 1.000000 of idle cpu over three equal tenants is 0.333334 + 0.333333 +
// 0.333333 (the extra millionth to the first namespace), never 0.999999 or 1.000001.
TEST(BillingScenario, IdleSpreadAddsUpExactly) {
  // 20 idle cores x 1 h at 0.05 = 1.00; three tenants with 1 core each (equal cpu cost).
  NodeCapacity n{"node-1", "", Res("cpu=23"), kEpoch, kEpoch + kHour};
  std::vector<RunSegment> segs = {Seg("team-a/x", "cpu=1", "", kEpoch, kEpoch + kHour),
                                  Seg("team-b/x", "cpu=1", "", kEpoch, kEpoch + kHour),
                                  Seg("team-c/x", "cpu=1", "", kEpoch, kEpoch + kHour)};
  auto rows = *MeterSegments(segs, MeterConfig{});
  auto idle = *IdleRows({n}, segs, kEpoch, kEpoch + kHour);
  rows.insert(rows.end(), idle.begin(), idle.end());
  PriceBook b = Book();
  b.share_idle = IdleSharing::kWeighted;
  auto invs = *BuildInvoices(rows, *PriceCatalog::Create({b}));
  ASSERT_EQ(invs.size(), 4u);
  EXPECT_EQ(invs[0].total.ToFixed(6), "1.000000");
  EXPECT_EQ(FindLine(invs[1], "cpu", RowKind::kIdleShare)->amount.ToFixed(6), "0.333334");
  EXPECT_EQ(FindLine(invs[2], "cpu", RowKind::kIdleShare)->amount.ToFixed(6), "0.333333");
  EXPECT_EQ(FindLine(invs[3], "cpu", RowKind::kIdleShare)->amount.ToFixed(6), "0.333333");
}

TEST(BillingErrors, NoPriceBookInForce) {
  MeterConfig cfg;
  auto rows = MeterSegments({Seg("team-a/x", "cpu=1", "", kEpoch - kHour, kEpoch)}, cfg);
  auto invs = BuildInvoices(*rows, *PriceCatalog::Create({Book()}));
  ASSERT_FALSE(invs.ok());
  EXPECT_NE(invs.message().find("no PriceBook is in force"), std::string::npos);
}

TEST(BillingErrors, BadInputsAreErrorsNotCrashes) {
  MeterConfig cfg;
  cfg.scrape_interval = 7000;
  EXPECT_FALSE(MeterSegments({}, cfg).ok());
  EXPECT_FALSE(
      MeterSegments({Seg("team-a/x", "cpu=1", "", kEpoch, kEpoch - 1)}, MeterConfig{}).ok());
  RunSegment s = Seg("team-a/x", "cpu=1", "", kEpoch, kEpoch + kHour);
  s.lost = LostWork{kEpoch - kHour, kEpoch, "x"};
  EXPECT_FALSE(MeterSegments({s}, MeterConfig{}).ok());
  EXPECT_FALSE(PriceCatalog::Create({}).ok());
  EXPECT_FALSE(PriceCatalog::Create({Book("a"), Book("b")}).ok());
  PriceBook neg = Book();
  neg.prices["cpu"] = D("-1");
  EXPECT_FALSE(PriceCatalog::Create({neg}).ok());
  PriceBook usd = Book("usd", kEpoch + kHour);
  usd.currency = "USD";
  auto rows =
      MeterSegments({Seg("team-a/x", "cpu=1", "", kEpoch, kEpoch + 2 * kHour)}, MeterConfig{});
  EXPECT_FALSE(BuildInvoices(*rows, *PriceCatalog::Create({Book(), usd})).ok());
}

}  // namespace
}  // namespace arbiter::billing

namespace arbiter::billing {
namespace {

using namespace testing;  // NOLINT

TEST(BillingApi, InvoiceSegmentsInOneCall) {
  MeterConfig cfg;
  cfg.scrape_interval = 60000;
  auto invs =
      InvoiceSegments({Seg("team-a/x", "cpu=16", "cpu=4", kEpoch, kEpoch + kHour)}, {Book()}, cfg);
  ASSERT_TRUE(invs.ok()) << invs.message();
  ASSERT_EQ(invs->size(), 1u);
  EXPECT_EQ((*invs)[0].total.ToFixed(6), "0.800000");
  EXPECT_EQ((*invs)[0].lines[0].usage_quantity.ToString(), "14160");  // 4 × (3600 - 60)
  auto none = InvoiceSegments({Seg("team-a/x", "cpu=1", "", kEpoch, kEpoch + kHour)}, {}, cfg);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(BillingApi, RatedRowsForTheLedger) {
  RunSegment s = Seg("team-a/t", "nvidia.com/gpu=1", "", kEpoch, kEpoch + kHour);
  s.lost = LostWork{kEpoch, kEpoch + kHour / 2, "team-b/p"};
  auto rows = *MeterSegments({s}, MeterConfig{});
  ASSERT_EQ(rows.size(), 2u);
  auto cat = *PriceCatalog::Create({Book()});
  RatedRow use = RateRow(rows[0], cat);
  RatedRow credit = RateRow(rows[1], cat);
  EXPECT_EQ(use.price_book, "standard@2026-01-01T00:00:00Z");
  EXPECT_EQ(use.amount.ToString(), "7");
  EXPECT_EQ(credit.amount.ToString(), "-3.5");
  PriceBook none = Book();
  none.preemption_credit = CreditPolicy::kNone;
  EXPECT_TRUE(RateRow(rows[1], *PriceCatalog::Create({none})).amount.is_zero());
}

}  // namespace
}  // namespace arbiter::billing
