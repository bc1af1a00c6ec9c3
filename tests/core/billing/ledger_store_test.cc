// The LedgerStore seam: invoices from any store that sums its current rows into spans per key and
// version piece equal the invoices of the rows, byte for byte (property test over random rows,
// windows and version changes); SeriesFolder's gauge_scale.
#include "core/billing/ledger_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "billing_test_util.h"
#include "core/duration.h"

namespace arbiter::billing {
namespace {

using testing::Book;
using testing::kEpoch;
using testing::kHour;

// An in-memory store of our own interface (the rows in a vector), as a warehouse would answer.
class MemoryStore : public LedgerStore {
 public:
  MemoryStore(std::vector<HourlyRow> rows, std::vector<PriceBook> books)
      : rows_(std::move(rows)), books_(std::move(books)) {}
  std::string Describe() const override { return "memory"; }
  Result<std::vector<PriceBook>> PriceBooks() override { return books_; }
  Result<std::vector<RowSpan>> ReadSpans(const SpanQuery& q) override {
    std::vector<HourlyRow> sel;
    for (const auto& r : rows_)
      if ((!q.namespace_ || r.namespace_ == *q.namespace_) && (!q.from || r.hour >= *q.from) &&
          (!q.to || r.hour < *q.to))
        sel.push_back(r);
    std::sort(sel.begin(), sel.end(), HourlyRow::KeyLess);
    last_query = q;
    return SpansOfRows(std::move(sel), q.cuts);
  }
  SpanQuery last_query;

 private:
  std::vector<HourlyRow> rows_;
  std::vector<PriceBook> books_;
};

std::string Text(const std::vector<Invoice>& invs) {
  std::string s;
  for (const auto& i : invs) s += i.Canonical() + i.digest + "\n";
  return s;
}

TEST(LedgerStore, InvoicesFromSpansEqualInvoicesFromRowsForRandomWindowsAndVersions) {
  std::mt19937_64 rng(12);
  for (int round = 0; round < 40; ++round) {
    std::vector<HourlyRow> rows;
    const int hours = 30 + static_cast<int>(rng() % 50);
    for (int w = 0; w < 12; ++w)
      for (int h = 0; h < hours; ++h) {
        if (rng() % 5 == 0) continue;
        HourlyRow r;
        r.namespace_ = w % 4 == 3 ? std::string(kIdleNamespace) : "ns-" + std::to_string(w % 3);
        r.workload = r.namespace_ == kIdleNamespace ? "node-" + std::to_string(w)
                                                    : r.namespace_ + "/w" + std::to_string(w);
        r.resource = w % 2 ? "cpu" : "memory";
        r.kind = (w % 5 == 0 && h % 7 == 0) ? RowKind::kCredit : RowKind::kUsage;
        if (r.kind == RowKind::kCredit) r.preemptor = "ns-9/p";
        r.hour = kEpoch + h * kHour;
        r.request_raw = static_cast<i128>(1 + rng() % 4000) * kHour;
        r.usage_raw = static_cast<i128>(rng() % 4000) * kHour;
        r.max_raw = std::max(r.request_raw, r.usage_raw);
        r.samples = static_cast<int64_t>(rng() % 120);
        r.covered_ms = r.samples * 30000;
        r.run_ms = kHour;
        rows.push_back(r);
      }
    std::vector<PriceBook> books = {Book("a", kEpoch - kHour)};
    PriceBook b2 =
        Book("b", kEpoch + static_cast<Millis>(rng() % static_cast<uint64_t>(hours)) * kHour +
                      (round % 2 ? 0 : 0));
    b2.prices["cpu"] = testing::D("0.07");
    b2.share_idle = round % 3 == 0 ? IdleSharing::kWeighted : IdleSharing::kNone;
    b2.mode = round % 2 ? BillingMode::kBlended : BillingMode::kUsage;
    books.push_back(b2);
    auto cat = PriceCatalog::Create(books);
    ASSERT_TRUE(cat.ok());
    MemoryStore store(rows, books);
    std::optional<Millis> from, to;
    if (rng() % 3) from = kEpoch + static_cast<Millis>(rng() % 10) * kHour;
    if (rng() % 3)
      to = kEpoch + static_cast<Millis>(10 + rng() % static_cast<uint64_t>(hours)) * kHour;
    std::optional<std::string> ns;
    if (rng() % 2) ns = "ns-1";
    auto got = StoreInvoices(store, ns, from, to);
    ASSERT_TRUE(got.ok()) << got.message();
    InvoiceOptions o;
    o.from = from;
    o.to = to;
    auto want = BuildInvoices(rows, *cat, o);
    ASSERT_TRUE(want.ok());
    std::vector<Invoice> filtered;
    for (auto& i : *want)
      if (!ns || i.namespace_ == *ns) filtered.push_back(i);
    EXPECT_EQ(Text(*got), Text(filtered)) << "round " << round;
    // Spreading idle cost needs every tenant: the store is then asked for all namespaces.
    if (b2.share_idle != IdleSharing::kNone) {
      EXPECT_FALSE(store.last_query.namespace_.has_value());
    }
  }
}

// A store with monthly rollups, as the warehouses keep them (issue 28): the whole months of a
// window (PlanWholeMonths) come as one span per key and month, the rest as spans of rows.
class MonthlyStore : public MemoryStore {
 public:
  MonthlyStore(std::vector<HourlyRow> rows, std::vector<PriceBook> books)
      : MemoryStore({}, std::move(books)), rows_(std::move(rows)) {}
  Result<std::vector<RowSpan>> ReadSpans(const SpanQuery& q) override {
    const MonthPlan p = PlanWholeMonths(q);
    auto whole = [&](Millis h) {
      return p.any && (!p.first || h >= *p.first) && (!p.end || h < *p.end) &&
             std::find(p.split.begin(), p.split.end(), MonthStartOf(h)) == p.split.end();
    };
    std::vector<HourlyRow> months, rest;
    std::vector<Millis> bounds;
    for (const auto& r : rows_) {
      if ((q.namespace_ && r.namespace_ != *q.namespace_) || (q.from && r.hour < *q.from) ||
          (q.to && r.hour >= *q.to))
        continue;
      if (whole(r.hour)) {
        months.push_back(r);
        bounds.push_back(MonthStartOf(r.hour));
      } else {
        rest.push_back(r);
      }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::sort(months.begin(), months.end(), HourlyRow::KeyLess);
    std::sort(rest.begin(), rest.end(), HourlyRow::KeyLess);
    auto out = SpansOfRows(std::move(months), bounds);
    monthly_spans += out.size();
    for (auto& s : SpansOfRows(std::move(rest), q.cuts)) out.push_back(std::move(s));
    return out;
  }
  size_t monthly_spans = 0;

 private:
  std::vector<HourlyRow> rows_;
};

TEST(LedgerStore, MonthlyRollupsGiveTheInvoicesOfTheRowsForRandomWindowsAndVersions) {
  std::mt19937_64 rng(28);
  const Millis kFeb1 = kEpoch + 31 * 24 * kHour, kMar1 = kFeb1 + 28 * 24 * kHour;
  size_t monthly = 0;
  for (int round = 0; round < 30; ++round) {
    std::vector<HourlyRow> rows;
    for (int w = 0; w < 8; ++w)
      for (int h = static_cast<int>(rng() % 7); h < 100 * 24;
           h += 1 + static_cast<int>(rng() % 9)) {
        HourlyRow r;
        r.namespace_ = w % 4 == 3 ? std::string(kIdleNamespace) : "ns-" + std::to_string(w % 3);
        r.workload = r.namespace_ == kIdleNamespace ? "node-" + std::to_string(w)
                                                    : r.namespace_ + "/w" + std::to_string(w);
        r.resource = w % 2 ? "cpu" : "memory";
        r.hour = kEpoch + h * kHour;
        r.request_raw = static_cast<i128>(1 + rng() % 4000) * kHour;
        r.usage_raw = static_cast<i128>(rng() % 4000) * kHour;
        r.max_raw = std::max(r.request_raw, r.usage_raw);
        r.samples = static_cast<int64_t>(rng() % 120);
        r.covered_ms = r.samples * 30000;
        r.run_ms = kHour;
        rows.push_back(r);
      }
    // A version at a month's first instant (months stay whole) or inside one (that month is read
    // hourly).
    std::vector<PriceBook> books = {Book("a", kEpoch)};
    PriceBook b2 =
        Book("b", round % 3 == 0 ? kFeb1 : kEpoch + static_cast<Millis>(rng() % 2400) * kHour);
    b2.prices["cpu"] = testing::D("0.07");
    b2.share_idle = round % 4 == 0 ? IdleSharing::kWeighted : IdleSharing::kNone;
    b2.mode = round % 2 ? BillingMode::kBlended : BillingMode::kUsage;
    books.push_back(b2);
    auto cat = PriceCatalog::Create(books);
    ASSERT_TRUE(cat.ok());
    MonthlyStore store(rows, books);
    const Millis edges[] = {kEpoch, kFeb1, kMar1, kEpoch + 100 * 24 * kHour};
    std::optional<Millis> from, to;
    if (rng() % 4)
      from = rng() % 2 ? edges[rng() % 3] : kEpoch + static_cast<Millis>(rng() % 1500) * kHour;
    if (rng() % 4)
      to = rng() % 2 ? edges[1 + rng() % 3]
                     : kEpoch + static_cast<Millis>(1500 + rng() % 900) * kHour;
    std::optional<std::string> ns;
    if (rng() % 2) ns = "ns-1";
    auto got = StoreInvoices(store, ns, from, to);
    ASSERT_TRUE(got.ok()) << got.message();
    InvoiceOptions o;
    o.from = from;
    o.to = to;
    auto want = BuildInvoices(rows, *cat, o);
    ASSERT_TRUE(want.ok());
    std::vector<Invoice> filtered;
    for (auto& i : *want)
      if (!ns || i.namespace_ == *ns) filtered.push_back(i);
    EXPECT_EQ(Text(*got), Text(filtered)) << "round " << round;
    monthly += store.monthly_spans;
  }
  EXPECT_GT(monthly, 0u);
}

TEST(LedgerStore, WholeMonthsOfAWindowAreThoseNoVersionSplits) {
  const Millis kFeb1 = kEpoch + 31 * 24 * kHour, kMar1 = kFeb1 + 28 * 24 * kHour,
               kApr1 = kMar1 + 31 * 24 * kHour;
  SpanQuery q;
  q.from = kEpoch + 5 * kHour;  // January is partial
  q.to = kApr1 + 3 * kHour;
  q.cuts = {kFeb1, kMar1 + 30 * kHour};  // at February's first instant; inside March
  MonthPlan p = PlanWholeMonths(q);
  EXPECT_TRUE(p.any);
  EXPECT_EQ(p.first, kFeb1);
  EXPECT_EQ(p.end, kApr1);
  EXPECT_EQ(p.split, std::vector<Millis>{kMar1});
  EXPECT_TRUE(p.before);
  EXPECT_TRUE(p.after);
  // Exactly January: no hourly rows needed.
  p = PlanWholeMonths({std::nullopt, kEpoch, kFeb1, {}});
  EXPECT_TRUE(p.any && !p.NeedsHourlyRows());
  // Inside one month: no whole month.
  p = PlanWholeMonths({std::nullopt, kEpoch + kHour, kFeb1, {}});
  EXPECT_FALSE(p.any);
  EXPECT_TRUE(p.NeedsHourlyRows());
  // Unbounded: every month whole but a split one.
  p = PlanWholeMonths({std::nullopt, std::nullopt, std::nullopt, {kFeb1 + kHour}});
  EXPECT_TRUE(p.any && !p.first && !p.end && !p.before && !p.after);
  EXPECT_EQ(p.split, std::vector<Millis>{kFeb1});
}

TEST(LedgerStore, SpansSplitAtVersionCutsAndSumEveryTrack) {
  std::vector<HourlyRow> rows;
  for (int h = 0; h < 5; ++h) {
    HourlyRow r;
    r.namespace_ = "a";
    r.workload = "a/w";
    r.resource = "cpu";
    r.hour = kEpoch + h * kHour;
    r.request_raw = 10;
    r.usage_raw = 3;
    r.max_raw = 11;
    r.samples = 2;
    r.covered_ms = 5;
    r.run_ms = 7;
    rows.push_back(r);
  }
  auto spans = SpansOfRows(rows, {kEpoch + 2 * kHour});
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].sum.hour, kEpoch);
  EXPECT_EQ(spans[0].last_hour, kEpoch + kHour);
  EXPECT_EQ(spans[0].sum.request_raw, 20);
  EXPECT_EQ(spans[1].sum.hour, kEpoch + 2 * kHour);
  EXPECT_EQ(spans[1].last_hour, kEpoch + 4 * kHour);
  EXPECT_EQ(spans[1].sum.usage_raw, 9);
  EXPECT_EQ(spans[1].sum.max_raw, 33);
  EXPECT_EQ(spans[1].sum.samples, 6);
  EXPECT_EQ(spans[1].sum.run_ms, 21);
}

// A MIG instance's utilisation read in thousandths (gauge_scale 1000): 250 = a quarter of an
// instance, held 30 s per sample, is 7500 instance·ms per piece, exactly.
TEST(SeriesFolderGaugeScale, ThousandthsOfAnInstanceAreExactOnWholeSeconds) {
  RunSegment seg;
  seg.workload = "a/w";
  seg.namespace_ = "a";
  seg.gpu_product = "NVIDIA-A100-SXM4-80GB";
  seg.requests.Set("nvidia.com/mig-1g.10gb", 1);
  seg.start = kEpoch;
  seg.end = kEpoch + kHour;
  std::vector<HourlyRow> out;
  SeriesFolder f(seg, "nvidia.com/mig-1g.10gb", &out, 30000, 1000);
  for (Millis t = kEpoch; t < seg.end; t += 30000) f.Add(t, 250);
  f.Finish();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].usage_raw, static_cast<i128>(kHour) / 4);  // 900 instance-seconds
  EXPECT_EQ(out[0].request_raw, static_cast<i128>(kHour));
  EXPECT_EQ(out[0].samples, 120);
  // Without a scale the same folder counts whole instances.
  std::vector<HourlyRow> whole;
  SeriesFolder g(seg, "nvidia.com/mig-1g.10gb", &whole, 30000);
  for (Millis t = kEpoch; t < seg.end; t += 30000) g.Add(t, 1);
  g.Finish();
  EXPECT_EQ(whole[0].usage_raw, static_cast<i128>(kHour));
}

}  // namespace
}  // namespace arbiter::billing

namespace arbiter::billing {
namespace {

// A live pod whose requests change at 00:30 continues in a new segment: the CPU counter's piece
// that ends at the change is billed in the first segment, once.
TEST(SeriesFolderContinued, TheCounterPieceUpToTheSplitIsBilledOnce) {
  RunSegment a, b;
  a.workload = b.workload = "a/w";
  a.namespace_ = b.namespace_ = "a";
  a.requests.Set("cpu", 2000);
  b.requests.Set("cpu", 4000);
  a.start = testing::kEpoch;
  a.end = b.start = testing::kEpoch + 1800000;
  b.end = testing::kEpoch + testing::kHour;
  std::vector<HourlyRow> out;
  const i128 per_ms = 1000;  // one core: 1000 millicores × ms per ms
  SeriesFolder fa(a, "cpu", &out, 30000);
  for (Millis t = a.start; t < a.end; t += 30000) fa.Add(t, per_ms * (t - a.start));
  fa.FinishContinued(per_ms * (a.end - a.start));
  SeriesFolder fb(b, "cpu", &out, 30000);
  for (Millis t = b.start; t < b.end; t += 30000) fb.Add(t, per_ms * (t - a.start));
  fb.Finish();
  Rollup(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].request_raw, static_cast<i128>(2000 * 1800000LL + 4000 * 1800000LL));
  EXPECT_EQ(out[0].usage_raw, per_ms * 3570000);  // 00:00 .. 59:30, the split piece included
  EXPECT_EQ(out[0].covered_ms, 3570000);
  EXPECT_EQ(out[0].samples, 120);
}

}  // namespace
}  // namespace arbiter::billing
