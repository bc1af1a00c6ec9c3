// Issue 28, a month's invoice at 10M ledger rows: invoices read whole UTC months from the monthly
// rollups, the other whole days from the daily ones and partial days from the hourly rows. For
// random runs over four months (crossing month ends, with credits, GPU replicas, updates and
// sealed-hour corrections), PriceBook versions taking effect at a month's start, mid-month at
// midnight and mid-day, and random windows (whole months, several months, partial days, open
// ends), they are byte for byte the invoices of every hourly row and of the rows in memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "core/billing/metering.h"

namespace arbiter {
namespace ledger_month_test {

using billing::HourlyRow;
using billing::PriceCatalog;
using billing::RunSegment;

constexpr Millis kHour = 3600000;
constexpr Millis kDay = 24 * kHour;
constexpr Millis kJan1 = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr Millis kFeb1 = kJan1 + 31 * kDay;
constexpr Millis kMar1 = kFeb1 + 28 * kDay;
constexpr Millis kApr1 = kMar1 + 31 * kDay;
constexpr Millis kMay1 = kApr1 + 30 * kDay;

PriceBook Book(const char* name, Millis from, const char* cpu, BillingMode mode) {
  PriceBook b;
  b.meta.name = name;
  b.currency = "CNY";
  b.effective_from = from;
  b.mode = mode;
  b.prices = {{"cpu", *Decimal::Parse(cpu)},
              {"memory", *Decimal::Parse("0.01")},
              {"nvidia.com/gpu", *Decimal::Parse("7.00")}};
  b.gpu_models = {{"NVIDIA-H100-80GB-HBM3", *Decimal::Parse("14.00")}};
  return b;
}

class LedgerMonthProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(LedgerMonthProperty, MonthRollupInvoicesEqualHourlyInvoicesByteForByte) {
  std::mt19937_64 rng(GetParam());
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<RunSegment> segs;
  for (int i = 0; i < 24; ++i) {
    RunSegment s;
    s.workload = "team-" + std::to_string(pick(0, 2)) + "/w" + std::to_string(pick(0, 4));
    s.namespace_ = s.workload.substr(0, 6);
    s.node = "node-1";
    s.requests.Set("cpu", pick(1, 64000));
    s.usage.Set("cpu", pick(0, 64000));
    s.start = kJan1 + pick(0, 115 * 24) * kHour + pick(0, 3599999);
    s.end = s.start + pick(1, 12 * 24) * kHour + pick(0, 3599999);
    if (pick(0, 2) == 0) {
      s.requests.Set("nvidia.com/gpu", pick(1, 4) * 1000);
      s.gpu_product = "NVIDIA-H100-80GB-HBM3";
      s.gpu_replicas = pick(0, 2) == 0 ? 4 : 1;
    }
    if (pick(0, 3) == 0) s.lost = billing::LostWork{s.start, pick(s.start, s.end), "team-z/p"};
    segs.push_back(s);
  }
  auto metered = billing::MeterSegments(segs, billing::MeterConfig{});
  ASSERT_TRUE(metered.ok()) << metered.message();
  std::vector<HourlyRow> rows = *metered;
  billing::Rollup(&rows);
  auto cat = *PriceCatalog::Create(
      {Book("jan", kJan1, "0.05", BillingMode::kMax),
       Book("feb", kFeb1, "0.06", BillingMode::kBlended),
       Book("midnight", kMar1 + 14 * kDay, "0.07", BillingMode::kMax),
       Book("midday", kMar1 + 19 * kDay + 13 * kHour, "0.08", BillingMode::kUsage)});
  auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-ledger-month-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / ("m" + std::to_string(GetParam()) + ".db")).string();
  for (const char* sfx : {"", "-wal", "-shm"}) std::filesystem::remove(path + sfx);
  auto l = std::move(sqlite::Ledger::Open(path)).value();
  ASSERT_TRUE(l->Write(rows, cat, kFeb1 + 10 * kDay).ok());
  std::vector<HourlyRow> changed;
  for (const HourlyRow& r : rows)
    if (pick(0, 6) == 0) {
      HourlyRow c = r;
      c.request_raw += pick(1, 1000000);
      c.max_raw = c.request_raw + c.usage_raw;
      c.samples += 1;
      changed.push_back(c);
    }
  ASSERT_TRUE(l->Write(changed, cat).ok());
  EXPECT_TRUE(l->CheckRollups()->empty());
  auto months = l->ReadMonthly(std::nullopt, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(months.ok());
  EXPECT_GT(months->size(), 10u);

  auto current = *l->Read(sqlite::RowFilter{});
  auto check = [&](std::optional<std::string> ns, std::optional<Millis> from,
                   std::optional<Millis> to) {
    SCOPED_TRACE((ns ? *ns : "*") + " " + (from ? FormatRfc3339(*from) : "-") + " " +
                 (to ? FormatRfc3339(*to) : "-"));
    auto fast = sqlite::LedgerInvoices(*l, ns, from, to);
    auto slow = sqlite::LedgerInvoices(*l, ns, from, to, sqlite::InvoiceRead::kHourlyRows);
    ASSERT_TRUE(fast.ok()) << fast.message();
    ASSERT_TRUE(slow.ok()) << slow.message();
    const std::string got = report::InvoicesToJson(*fast).dump();
    EXPECT_EQ(got, report::InvoicesToJson(*slow).dump());
    billing::InvoiceOptions opts;
    opts.from = from;
    opts.to = to;
    auto mem = *billing::BuildInvoices(current, cat, opts);
    if (ns) std::erase_if(mem, [&](const billing::Invoice& i) { return i.namespace_ != *ns; });
    EXPECT_EQ(got, report::InvoicesToJson(mem).dump());
  };
  const Millis starts[] = {kJan1, kFeb1, kMar1, kApr1, kMay1};
  for (int m = 0; m < 4; ++m) {
    check(std::nullopt, starts[m], starts[m + 1]);  // --month
    check(std::string("team-1"), starts[m], starts[m + 1]);
  }
  check(std::nullopt, kJan1, kMay1);
  check(std::nullopt, std::nullopt, std::nullopt);
  check(std::nullopt, kFeb1, std::nullopt);
  check(std::nullopt, std::nullopt, kMar1);
  for (int i = 0; i < 10; ++i) {
    const Millis a = kJan1 + pick(0, 119 * 24) * kHour;
    const Millis b = a + pick(0, 90 * 24) * kHour;
    std::optional<std::string> ns;
    if (pick(0, 1)) ns = "team-" + std::to_string(pick(0, 2));
    check(ns, a, b);
    check(ns, std::nullopt, b);
    check(ns, a, std::nullopt);
  }
  // Incremental monthly rollups equal rebuilt ones.
  ASSERT_TRUE(l->RebuildRollups().ok());
  auto rebuilt = *l->ReadMonthly(std::nullopt, INT64_MIN, INT64_MAX);
  ASSERT_EQ(rebuilt.size(), months->size());
  for (size_t i = 0; i < rebuilt.size(); ++i) {
    EXPECT_EQ(rebuilt[i].sum, (*months)[i].sum);
    EXPECT_EQ(rebuilt[i].last_hour, (*months)[i].last_hour);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, LedgerMonthProperty, ::testing::Values(1, 2, 3, 28));

}  // namespace ledger_month_test
}  // namespace arbiter
