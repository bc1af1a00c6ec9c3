// `arbiter ledger tracks` as a user runs it, on ledgers written by the adapter's own writers
// (sqlite::Ledger::Write for the hourly rows, PutTracks for meter_tracks, as `arbiter scheduler
// --ledger --meter-prometheus` writes them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "adapters/sqlite/ledger.h"
#include "core/billing/rating.h"
#include "run_command.h"
#include "support/hourly_rows.h"

namespace arbiter {
namespace {

constexpr Millis kEpoch = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr Millis kHour = 3600000;

std::string Db(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-tracks-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(p + s);
  return p;
}

testing::CommandOutput Arbiter(const std::string& args) {
  return testing::RunCommand(std::string(ARBITER_BINARY) + " " + args + " 2>&1");
}

// A ledger with rows of namespaces a and b; with `tracks`, entries for three of them.
std::string WriteLedger(const std::string& name, bool tracks) {
  const std::string path = Db(name);
  auto l = sqlite::Ledger::Open(path);
  EXPECT_TRUE(l.ok()) << l.message();
  PriceBook b;
  b.meta.name = "standard";
  b.currency = "CNY";
  b.effective_from = kEpoch;
  b.prices = {{"cpu", *Decimal::Parse("0.05")}, {"nvidia.com/gpu", *Decimal::Parse("7.00")}};
  auto cat = *billing::PriceCatalog::Create({b});
  billing::HourlyRow gpu = testing::HourRow("a", "nvidia.com/gpu", kEpoch, 2000, 0);
  gpu.gpu_product = "NVIDIA-H100-80GB-HBM3";
  billing::HourlyRow credit = testing::HourRow("a", "cpu", kEpoch, 500, 500);  // lost work
  credit.kind = billing::RowKind::kCredit;
  credit.preemptor = "b/q";
  const std::vector<billing::HourlyRow> rows = {
      testing::HourRow("a", "cpu", kEpoch, 4000, 1500), credit, gpu,
      testing::HourRow("b", "cpu", kEpoch + kHour, 1000, 250),
      // no entry: both tracks from Prometheus
      testing::HourRow("b", "cpu", kEpoch + 2 * kHour, 1000, 250)};
  EXPECT_TRUE((*l)->Write(rows, cat).ok());
  if (tracks) {
    using billing::UsageSource;
    EXPECT_TRUE((*l)->PutTracks({{"a", "a/p", "cpu", kEpoch, UsageSource::kUsageSource},
                                 {"a", "a/p", "cpu", kEpoch, UsageSource::kRequest,
                                  billing::RowKind::kCredit},
                                 {"a", "a/p", "nvidia.com/gpu", kEpoch, UsageSource::kNone},
                                 {"b", "b/p", "cpu", kEpoch + kHour, UsageSource::kRequest}})
                    .ok());
  }
  return path;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LedgerTracksCli, TableCsvAndJsonShowEachEntryWithItsRowsTracks) {
  const std::string db = WriteLedger("tracks.db", true);
  auto table = Arbiter("ledger tracks --db " + db);
  ASSERT_EQ(table.rc, 0) << table.out;
  // 4 cores requested for the hour, 1.5 used: 14400 and 5400 core-seconds.
  EXPECT_TRUE(Has(table.out,
                  "a          a/p       cpu                                    Usage   "
                  "2026-01-01T00:00:00Z  core-second    14400   5400  informers     prometheus"))
      << table.out;
  // Its lost work (a Credit row of the same key): an entry of its own, half a core for the hour.
  EXPECT_TRUE(Has(table.out,
                  "a          a/p       cpu                                    Credit  "
                  "2026-01-01T00:00:00Z  core-second     1800   1800  informers     request"))
      << table.out;
  EXPECT_TRUE(Has(table.out, "nvidia.com/gpu @NVIDIA-H100-80GB-HBM3")) << table.out;
  EXPECT_TRUE(Has(table.out, "GPU-second      7200      0  informers     none")) << table.out;
  EXPECT_FALSE(Has(table.out, "2026-01-01T02:00:00Z")) << "a row without an entry is not listed";

  auto csv = Arbiter("ledger tracks --db " + db + " -o csv");
  ASSERT_EQ(csv.rc, 0) << csv.out;
  EXPECT_EQ(csv.out,
            "namespace,workload,resource,kind,gpuProduct,hour,unit,request,usage,requestSource,"
            "usageSource\n"
            "a,a/p,cpu,Usage,,2026-01-01T00:00:00Z,core-second,14400,5400,informers,prometheus\n"
            "a,a/p,cpu,Credit,,2026-01-01T00:00:00Z,core-second,1800,1800,informers,request\n"
            "a,a/p,nvidia.com/gpu,Usage,NVIDIA-H100-80GB-HBM3,2026-01-01T00:00:00Z,GPU-second,"
            "7200,0,informers,none\n"
            "b,b/p,cpu,Usage,,2026-01-01T01:00:00Z,core-second,3600,900,informers,request\n");

  auto json = Arbiter("ledger tracks --db " + db + " --namespace b -o json");
  ASSERT_EQ(json.rc, 0) << json.out;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 1u) << json.out;
  EXPECT_EQ(j[0]["workload"], "b/p");
  EXPECT_EQ(j[0]["kind"], "Usage");
  EXPECT_EQ(j[0]["hour"], "2026-01-01T01:00:00Z");
  EXPECT_EQ(j[0]["unit"], "core-second");
  EXPECT_EQ(j[0]["request"], "3600");
  EXPECT_EQ(j[0]["usage"], "900");
  EXPECT_EQ(j[0]["requestSource"], "informers");
  EXPECT_EQ(j[0]["usageSource"], "request");

  auto window = Arbiter("ledger tracks --db " + db +
                        " --from 2026-01-01T01:00:00Z --to 2026-01-01T02:00:00Z -o csv");
  ASSERT_EQ(window.rc, 0) << window.out;
  EXPECT_FALSE(Has(window.out, "a/p")) << window.out;
  EXPECT_TRUE(Has(window.out, "b,b/p,cpu")) << window.out;
  auto empty = Arbiter("ledger tracks --db " + db + " --namespace a --month 2026-02");
  ASSERT_EQ(empty.rc, 0) << empty.out;
  EXPECT_EQ(empty.out, db + ": no merged tracks for namespace a in the window\n");
}

TEST(LedgerTracksCli, ALedgerWithoutTracksHasNoneAndExitsZero) {
  const std::string db = WriteLedger("no-tracks.db", false);
  auto table = Arbiter("ledger tracks --db " + db);
  ASSERT_EQ(table.rc, 0) << table.out;
  EXPECT_EQ(table.out, db + ": no merged tracks yet (only `arbiter scheduler --ledger "
                            "--meter-prometheus` writes them)\n");
  auto csv = Arbiter("ledger tracks --db " + db + " -o csv");
  ASSERT_EQ(csv.rc, 0) << csv.out;
  EXPECT_EQ(csv.out,
            "namespace,workload,resource,kind,gpuProduct,hour,unit,request,usage,requestSource,"
            "usageSource\n");
  auto json = Arbiter("ledger tracks --db " + db + " -o json");
  ASSERT_EQ(json.rc, 0) << json.out;
  EXPECT_EQ(json.out, "[]\n");
}

TEST(LedgerTracksCli, ClearErrors) {
  const std::string db = WriteLedger("errors.db", true);
  auto missing = Arbiter("ledger tracks --db " + Db("nowhere.db"));
  EXPECT_EQ(missing.rc, 1) << missing.out;
  EXPECT_TRUE(Has(missing.out, "arbiter ledger tracks: --db: ")) << missing.out;
  EXPECT_TRUE(Has(missing.out, "nowhere.db: no such ledger")) << missing.out;
  auto ns = Arbiter("ledger tracks --db " + db + " --namespace c");
  EXPECT_EQ(ns.rc, 1) << ns.out;
  EXPECT_TRUE(Has(ns.out, "arbiter ledger tracks: --namespace: the ledger has no namespace \"c\""))
      << ns.out;
  auto time = Arbiter("ledger tracks --db " + db + " --from yesterday");
  EXPECT_EQ(time.rc, 2) << time.out;
  EXPECT_TRUE(Has(time.out, "arbiter ledger tracks: --from: ")) << time.out;
  auto order = Arbiter("ledger tracks --db " + db +
                       " --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(order.rc, 2) << order.out;
  auto format = Arbiter("ledger tracks --db " + db + " -o xml");
  EXPECT_EQ(format.rc, 2) << format.out;
  EXPECT_TRUE(Has(format.out, "\"xml\" is not an output format: table, csv or json")) << format.out;
  auto no_db = Arbiter("ledger tracks");
  EXPECT_EQ(no_db.rc, 2) << no_db.out;
  auto help = Arbiter("ledger tracks --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_TRUE(Has(help.out, "unit-seconds")) << help.out;
}

}  // namespace
}  // namespace arbiter
