// The SQLite ledger behind the LedgerStore seam: StoreInvoices over SqliteStore equals the
// ledger's own invoices (daily rollups), byte for byte, for several windows.
#include "adapters/sqlite/sqlite_store.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace arbiter::sqlite {
namespace {

constexpr Millis kEpoch = 1767225600000;
constexpr Millis kHour = 3600000;

TEST(SqliteStore, InvoicesThroughTheSeamEqualTheLedgersOwn) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("arbiter-sqlite-store-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  auto l = Ledger::Open(path.string());
  ASSERT_TRUE(l.ok());
  PriceBook a;
  a.meta.name = "a";
  a.currency = "CNY";
  a.effective_from = kEpoch;
  a.prices = {{"cpu", Decimal::FromUnits(50000000)}, {"memory", Decimal::FromUnits(10000000)}};
  PriceBook b = a;
  b.effective_from = kEpoch + 30 * kHour;  // mid-day
  b.prices["cpu"] = Decimal::FromUnits(70000000);
  std::vector<billing::RunSegment> segs;
  for (int i = 0; i < 9; ++i) {
    billing::RunSegment s;
    s.namespace_ = "ns-" + std::to_string(i % 3);
    s.workload = s.namespace_ + "/w" + std::to_string(i);
    s.node = "n";
    s.start = kEpoch + i * 600000;
    s.end = kEpoch + (50 + i) * kHour + 1234;
    s.requests.Set("cpu", 500 * (i + 1));
    s.requests.Set("memory", int64_t{1} << 31);
    s.usage.Set("cpu", 200 * (i + 1));
    segs.push_back(s);
  }
  auto rows = billing::MeterSegments(segs, {});
  ASSERT_TRUE(rows.ok());
  auto cat = billing::PriceCatalog::Create({a, b});
  ASSERT_TRUE((*l)->Write(*rows, *cat).ok());
  SqliteStore store(**l, path.string());
  for (auto [from, to] :
       {std::pair<std::optional<Millis>, std::optional<Millis>>{std::nullopt, std::nullopt},
        {kEpoch + 5 * kHour, kEpoch + 49 * kHour},
        {kEpoch + 24 * kHour, kEpoch + 48 * kHour}}) {
    for (auto ns : {std::optional<std::string>{}, std::optional<std::string>{"ns-1"}}) {
      auto want = LedgerInvoices(**l, ns, from, to);
      auto got = billing::StoreInvoices(store, ns, from, to);
      ASSERT_TRUE(want.ok() && got.ok());
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_EQ((*got)[i].Canonical(), (*want)[i].Canonical());
        EXPECT_EQ((*got)[i].digest, (*want)[i].digest);
      }
    }
  }
  l = Result<std::unique_ptr<Ledger>>::Error("closed");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace arbiter::sqlite
