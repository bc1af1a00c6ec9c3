// Property tests over seeded random runs (std::mt19937_64: the same sequence everywhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "billing_test_util.h"
#include "core/billing/sha256.h"

namespace arbiter::billing {
namespace {

using namespace testing;  // NOLINT

std::vector<RunSegment> RandomRun(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  const char* products[] = {"", "NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"};
  std::vector<RunSegment> out;
  for (int i = 0; i < n; ++i) {
    RunSegment s;
    s.namespace_ = "team-" + std::string(1, static_cast<char>('a' + pick(0, 2)));
    s.workload = s.namespace_ + "/w" + std::to_string(pick(0, 5));
    s.node = "node-" + std::to_string(pick(0, 3));
    s.gpu_product = products[pick(0, 2)];
    s.start = kEpoch + pick(0, 20 * kHour);
    s.end = s.start + pick(0, 5 * kHour);
    s.requests.Set("cpu", pick(1, 64000));
    s.requests.Set("memory", pick(1, int64_t{1} << 40));
    if (pick(0, 1)) s.requests.Set("nvidia.com/gpu", pick(0, 1) ? 1000 * pick(1, 8) : pick(1, 999));
    if (pick(0, 3) == 0) s.requests.Set("nvidia.com/mig-3g.40gb", pick(1, 2));
    s.usage.Set("cpu", pick(0, 80000));
    s.usage.Set("memory", pick(0, int64_t{1} << 40));
    if (s.requests.Has("nvidia.com/gpu"))
      s.usage.Set("nvidia.com/gpu", pick(0, s.requests.Get("nvidia.com/gpu")));
    if (pick(0, 2) == 0 && s.end > s.start) {
      Millis from = pick(s.start, s.end);
      s.lost = LostWork{from, pick(from, s.end), "team-z/p" + std::to_string(pick(0, 1))};
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Whole-run totals straight from the sampling definition, with no hours.
struct Totals {
  i128 request = 0, usage = 0;
  int64_t samples = 0;
};
Totals WholeRun(const RunSegment& s, const std::string& res, Millis interval) {
  Totals t;
  t.request = static_cast<i128>(s.requests.Get(res)) * (s.end - s.start);
  int64_t u = s.usage.Has(res) ? s.usage.Get(res) : s.requests.Get(res);  // absent: = request
  Millis first = ((s.start + interval - 1) / interval) * interval;
  if (first >= s.end) return t;
  int64_t n = (s.end - 1 - first) / interval + 1;
  Millis last = first + (n - 1) * interval;
  t.samples = n;
  if (res == "cpu") {
    t.usage = static_cast<i128>(u) * (last - first);
  } else {
    t.usage = static_cast<i128>(u) * ((n - 1) * interval + std::min(interval, s.end - last));
  }
  return t;
}

class BillingProperties : public ::testing::TestWithParam<uint64_t> {};

TEST_P(BillingProperties, HourlyRowsSumToTheWholeRun) {
  for (Millis interval : {15 * kSec, 30 * kSec, 60 * kSec}) {
    auto segs = RandomRun(GetParam(), 40);
    MeterConfig cfg;
    cfg.scrape_interval = interval;
    auto rows = MeterSegments(segs, cfg);
    ASSERT_TRUE(rows.ok()) << rows.message();
    std::map<std::pair<std::string, std::string>, Totals> want, got;
    for (const auto& s : segs)
      for (const auto& [res, v] : s.requests.entries()) {
        Totals t = WholeRun(s, res, interval);
        Totals& w = want[{s.workload, res}];
        w.request += t.request;
        w.usage += t.usage;
        w.samples += t.samples;
      }
    for (const auto& r : *rows) {
      EXPECT_EQ(r.hour % kHour, 0);
      if (r.kind != RowKind::kUsage) continue;
      EXPECT_GE(r.max_raw, r.request_raw);
      EXPECT_GE(r.max_raw, r.usage_raw);
      EXPECT_LE(r.run_ms, kHour * 10);  // several segments of one workload may share an hour
      Totals& g = got[{r.workload, r.resource}];
      g.request += r.request_raw;
      g.usage += r.usage_raw;
      g.samples += r.samples;
    }
    for (auto& [k, w] : want) {
      if (w.request == 0 && w.usage == 0) continue;
      Totals& g = got[k];
      EXPECT_TRUE(g.request == w.request) << k.first << " " << k.second;
      EXPECT_TRUE(g.usage == w.usage) << k.first << " " << k.second;
      EXPECT_EQ(g.samples, w.samples) << k.first << " " << k.second;
    }
  }
}

TEST_P(BillingProperties, InvoiceWindowsPartitionTheRawTracks) {
  auto segs = RandomRun(GetParam(), 30);
  auto rows = MeterSegments(segs, MeterConfig{});
  ASSERT_TRUE(rows.ok());
  auto cat = *PriceCatalog::Create({Book(), Book("v2", kEpoch + 7 * kHour, BillingMode::kBlended)});
  auto whole = BuildInvoices(*rows, cat);
  ASSERT_TRUE(whole.ok()) << whole.message();
  const Millis cut = kEpoch + 11 * kHour;
  InvoiceOptions a, b;
  a.to = cut;
  b.from = cut;
  auto first = *BuildInvoices(*rows, cat, a);
  auto second = *BuildInvoices(*rows, cat, b);
  for (const Invoice& inv : *whole) {
    i128 req = 0, use = 0, req_parts = 0, use_parts = 0;
    Decimal sum;
    for (const auto& l : inv.lines) {
      req += l.request_raw;
      use += l.usage_raw;
      sum += l.amount;
    }
    EXPECT_EQ(sum, inv.total);
    for (const auto* part : {&first, &second})
      for (const Invoice& p : *part)
        if (p.namespace_ == inv.namespace_)
          for (const auto& l : p.lines) {
            req_parts += l.request_raw;
            use_parts += l.usage_raw;
          }
    EXPECT_TRUE(req == req_parts);
    EXPECT_TRUE(use == use_parts);
  }
}

TEST_P(BillingProperties, SameRunSameDigestWhateverTheInputOrder) {
  auto segs = RandomRun(GetParam(), 30);
  auto cat = *PriceCatalog::Create({Book()});
  auto one = *BuildInvoices(*MeterSegments(segs, MeterConfig{}), cat);
  std::mt19937_64 rng(GetParam() ^ 0x5eed);
  std::shuffle(segs.begin(), segs.end(), rng);
  auto two = *BuildInvoices(*MeterSegments(segs, MeterConfig{}), cat);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].digest, two[i].digest);
    EXPECT_EQ(one[i].Canonical(), two[i].Canonical());
    EXPECT_EQ(one[i].digest.substr(0, 7), "sha256:");
    EXPECT_EQ(one[i].digest.size(), 7u + 64u);
  }
  // A different price book version gives a different digest, even when no line uses the change.
  PriceBook changed = Book();
  changed.prices["ephemeral-storage"] = D("1");
  auto three =
      *BuildInvoices(*MeterSegments(segs, MeterConfig{}), *PriceCatalog::Create({changed}));
  EXPECT_NE(one[0].digest, three[0].digest);
}

// The reference roll-up: every segment metered on its own, all rows sorted and same-key rows
// summed, written out here without MeterSegmentsInto's per-workload order or Rollup's shortcut.
std::vector<HourlyRow> ReferenceRows(const std::vector<RunSegment>& segs,
                                     std::vector<HourlyRow> rows = {}) {
  for (const RunSegment& s : segs) MeterSegment(s, MeterConfig{}, &rows);
  std::stable_sort(rows.begin(), rows.end(), HourlyRow::KeyLess);
  std::vector<HourlyRow> out;
  for (HourlyRow& r : rows) {
    if (!out.empty() && HourlyRow::SameKey(out.back(), r)) {
      out.back().AddQuantities(r);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

TEST_P(BillingProperties, MeteredRowsAreEverySegmentsRowsRolledUpInKeyOrder) {
  auto segs = RandomRun(GetParam(), 40);  // several segments per workload, lost work, products
  std::mt19937_64 rng(GetParam() ^ 0x0dde);
  std::shuffle(segs.begin(), segs.end(), rng);
  auto rows = MeterSegments(segs, MeterConfig{});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, ReferenceRows(segs));
  EXPECT_TRUE(std::is_sorted(rows->begin(), rows->end(), HourlyRow::KeyLess));
  for (size_t i = 1; i < rows->size(); ++i)
    EXPECT_TRUE(HourlyRow::KeyLess((*rows)[i - 1], (*rows)[i])) << "row " << i << " repeats a key";
  // Rows already in the vector (here unsorted: the second half's, reversed) are rolled up with
  // the new ones.
  std::vector<RunSegment> first(segs.begin(), segs.begin() + 20);
  std::vector<RunSegment> second(segs.begin() + 20, segs.end());
  std::vector<HourlyRow> before;
  for (const RunSegment& s : second) MeterSegment(s, MeterConfig{}, &before);
  std::reverse(before.begin(), before.end());
  std::vector<HourlyRow> into = before;
  ASSERT_TRUE(MeterSegmentsInto(first, MeterConfig{}, &into).ok());
  EXPECT_EQ(into, ReferenceRows(first, before));
  EXPECT_EQ(into, *rows);
}

// A namespace's rows given to InvoiceBuilder in parts (AddPart, split at random workload
// boundaries, in key order; EndParts after each namespace) build the invoices BuildInvoices
// builds from all of them at once. The digest is the SHA-256 of the canonical text and the
// PriceBook's, written in pieces (WriteCanonical) here: a text far longer than one piece.
TEST_P(BillingProperties, InvoicesBuiltInPartsAreTheWholeInvoices) {
  auto segs = RandomRun(GetParam(), 2000);
  for (size_t i = 0; i < segs.size(); ++i)  // many workloads: a long provenance list
    segs[i].workload = segs[i].namespace_ + "/w" + std::to_string(i % 700);
  const PriceBook book = Book();
  auto cat = *PriceCatalog::Create({book});
  auto rows = *MeterSegments(segs, MeterConfig{});
  std::stable_sort(rows.begin(), rows.end(), HourlyRow::KeyLess);
  auto whole = *BuildInvoices(rows, cat);
  InvoiceBuilder builder(cat, {});
  std::mt19937_64 rng(GetParam() ^ 0x9a27);
  std::vector<HourlyRow> part;
  size_t parts = 0;
  for (size_t i = 0; i <= rows.size(); ++i) {
    const bool end = i == rows.size();
    const bool new_ns = end || (i > 0 && rows[i].namespace_ != rows[i - 1].namespace_);
    const bool new_workload = new_ns || (i > 0 && rows[i].workload != rows[i - 1].workload);
    if (new_ns || (new_workload && rng() % 4 == 0)) {
      ASSERT_TRUE(builder.AddPart(part).ok());
      part.clear();
      ++parts;
    }
    if (new_ns) {
      ASSERT_TRUE(builder.EndParts().ok());
    }
    if (!end) part.push_back(rows[i]);
  }
  EXPECT_GT(parts, 100u);
  auto built = builder.Finish();
  ASSERT_TRUE(built.ok()) << built.message();
  ASSERT_EQ(built->size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    const std::string text = whole[i].Canonical();
    EXPECT_GT(text.size(), size_t{64 << 10});
    EXPECT_EQ((*built)[i].Canonical(), text);
    EXPECT_EQ((*built)[i].digest, whole[i].digest);
    EXPECT_EQ(whole[i].digest, "sha256:" + Sha256Hex(text + CanonicalPriceBook(book)));
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, BillingProperties,
                         ::testing::Values(1u, 2u, 3u, 42u, 1234u, 99991u));

}  // namespace
}  // namespace arbiter::billing
