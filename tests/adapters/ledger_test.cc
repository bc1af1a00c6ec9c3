// SQLite ledger (idempotence, sealed-hour versions, crash safety with a real SIGKILL of a child
// writer, FOCUS exports) and the billing JSON adapter.
#include "adapters/sqlite/ledger.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "adapters/report/invoice_json.h"
#include "support/hourly_rows.h"

namespace arbiter {
namespace {

using billing::HourlyRow;
using billing::PriceCatalog;
using billing::RunSegment;
using sqlite::Ledger;
using sqlite::RowFilter;

constexpr Millis kEpoch = 1767225600000;
constexpr Millis kHour = 3600000;

std::string TempPath(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-ledger-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
  return p.string();
}

PriceBook Book(Millis from = kEpoch, const char* cpu = "0.05") {
  PriceBook b;
  b.meta.name = "standard";
  b.currency = "CNY";
  b.effective_from = from;
  b.prices = {{"cpu", *Decimal::Parse(cpu)},
              {"memory", *Decimal::Parse("0.01")},
              {"nvidia.com/gpu", *Decimal::Parse("7.00")}};
  b.gpu_models = {{"NVIDIA-H100-80GB-HBM3", *Decimal::Parse("14.00")}};
  return b;
}

RunSegment Seg(const std::string& w, int64_t cpu_milli, Millis start, Millis end) {
  RunSegment s;
  s.workload = w;
  s.namespace_ = w.substr(0, w.find('/'));
  s.node = "node-1";
  s.requests.Set("cpu", cpu_milli);
  s.requests.Set("memory", int64_t{8} << 30);
  s.usage.Set("cpu", cpu_milli / 4);
  s.usage.Set("memory", int64_t{2} << 30);
  s.start = start;
  s.end = end;
  return s;
}

std::vector<HourlyRow> Rows(const std::vector<RunSegment>& segs) {
  auto r = billing::MeterSegments(segs, billing::MeterConfig{});
  EXPECT_TRUE(r.ok()) << r.message();
  return *r;
}

std::vector<RunSegment> SomeRun() {
  RunSegment train = Seg("team-a/train", 8000, kEpoch, kEpoch + 2 * kHour + 30000);
  train.requests.Set("nvidia.com/gpu", 2000);
  train.gpu_product = "NVIDIA-H100-80GB-HBM3";
  train.lost = billing::LostWork{kEpoch + kHour, kEpoch + 2 * kHour, "team-b/urgent"};
  return {train, Seg("team-a/nb", 2000, kEpoch + 10 * 60000, kEpoch + 3 * kHour),
          Seg("team-b/urgent", 16000, kEpoch + 2 * kHour, kEpoch + 5 * kHour)};
}

std::unique_ptr<Ledger> OpenLedger(const std::string& path) {
  auto r = Ledger::Open(path);
  if (!r.ok()) {
    ADD_FAILURE() << r.message();
    std::abort();
  }
  return std::move(r).value();
}

int64_t CountAll(Ledger& l) {
  RowFilter f;
  f.include_superseded = true;
  return static_cast<int64_t>(l.Read(f)->size());
}

TEST(LedgerTest, WritingTheSameInputTwiceAddsNothing) {
  auto l = OpenLedger(TempPath("idem.db"));
  auto cat = *PriceCatalog::Create({Book()});
  auto rows = Rows(SomeRun());
  auto first = l->Write(rows, cat);
  ASSERT_TRUE(first.ok()) << first.message();
  EXPECT_EQ(first->inserted, static_cast<int64_t>(rows.size()));
  auto inv1 = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  auto second = *l->Write(rows, cat);
  EXPECT_EQ(second.inserted, 0);
  EXPECT_EQ(second.unchanged, static_cast<int64_t>(rows.size()));
  EXPECT_EQ(CountAll(*l), static_cast<int64_t>(rows.size()));
  auto inv2 = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  ASSERT_EQ(inv1.size(), inv2.size());
  for (size_t i = 0; i < inv1.size(); ++i) EXPECT_EQ(inv1[i].digest, inv2[i].digest);
}

TEST(LedgerTest, UnsortedOrDuplicateRowsAreRolledUpNotOverwritten) {
  auto l = OpenLedger(TempPath("dups.db"));
  auto cat = *PriceCatalog::Create({Book()});
  auto rows = Rows({Seg("team-a/x", 1000, kEpoch, kEpoch + kHour)});
  std::vector<HourlyRow> doubled = rows;
  doubled.insert(doubled.end(), rows.begin(), rows.end());  // the same rows twice, unsorted
  ASSERT_TRUE(l->Write(doubled, cat).ok());
  auto stored = *l->Read(RowFilter{});
  ASSERT_EQ(stored.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
    EXPECT_TRUE(stored[i].request_raw == 2 * rows[i].request_raw);
}

TEST(LedgerTest, LedgerInvoicesEqualInMemoryInvoices) {
  auto l = OpenLedger(TempPath("same.db"));
  auto cat = *PriceCatalog::Create({Book(), Book(kEpoch + 2 * kHour, "0.07")});
  auto rows = Rows(SomeRun());
  ASSERT_TRUE(l->Write(rows, cat).ok());
  auto mem = *billing::BuildInvoices(rows, cat);
  auto led = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  ASSERT_EQ(mem.size(), led.size());
  for (size_t i = 0; i < mem.size(); ++i) {
    EXPECT_EQ(mem[i].Canonical(), led[i].Canonical());
    EXPECT_EQ(mem[i].digest, led[i].digest);
    EXPECT_EQ(report::InvoiceToJson(mem[i]).dump(), report::InvoiceToJson(led[i]).dump());
  }
  // A namespace and window filter.
  auto a = *sqlite::LedgerInvoices(*l, std::string("team-a"), kEpoch, kEpoch + kHour);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].namespace_, "team-a");
  EXPECT_EQ(a[0].from, kEpoch);
  EXPECT_EQ(a[0].to, kEpoch + kHour);
}

// Time-sliced GPUs: gpu_replicas is part of the key and survives the round trip; invoices from
// the ledger price the replica at 1/N of the card like the in-memory ones.
TEST(LedgerTest, GpuReplicasRoundTrip) {
  auto l = OpenLedger(TempPath("replicas.db"));
  auto cat = *PriceCatalog::Create({Book()});
  RunSegment shared = Seg("team-a/infer", 1000, kEpoch, kEpoch + kHour);
  shared.requests.Set("nvidia.com/gpu", 1000);
  shared.gpu_product = "NVIDIA-H100-80GB-HBM3-SHARED";
  shared.gpu_replicas = 4;
  RunSegment whole = shared;
  whole.node = "node-2";
  whole.gpu_replicas = 1;
  auto rows = Rows({shared, whole});
  ASSERT_TRUE(l->Write(rows, cat).ok());
  EXPECT_EQ(*l->Read(RowFilter{}), rows);
  auto led = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  auto mem = *billing::BuildInvoices(rows, cat);
  ASSERT_EQ(led.size(), 1u);
  EXPECT_EQ(led[0].digest, mem[0].digest);
  int gpu_lines = 0;
  for (const auto& line : led[0].lines)
    if (line.resource == "nvidia.com/gpu") {
      ++gpu_lines;
      EXPECT_EQ(line.amount.ToFixed(6), line.gpu_replicas == 4 ? "3.500000" : "14.000000");
    }
  EXPECT_EQ(gpu_lines, 2);
  std::ostringstream csv;
  ASSERT_TRUE(l->ExportCsv(RowFilter{}, csv).ok());
  EXPECT_NE(csv.str().find(",replica-second,"), std::string::npos);
}

// A ledger written by schema 1 (no gpu_replicas column) is migrated on open: its rows keep
// their content and get gpu_replicas = 1.
TEST(LedgerTest, SchemaOneLedgerIsMigrated) {
  const std::string path = TempPath("v1.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* v1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
CREATE TABLE price_books(id TEXT PRIMARY KEY, effective_from INTEGER NOT NULL, canonical TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE hourly(
  namespace TEXT NOT NULL, workload TEXT NOT NULL, resource TEXT NOT NULL,
  gpu_product TEXT NOT NULL, kind INTEGER NOT NULL, preemptor TEXT NOT NULL,
  hour INTEGER NOT NULL, version INTEGER NOT NULL, current INTEGER NOT NULL,
  request_raw TEXT NOT NULL, usage_raw TEXT NOT NULL, max_raw TEXT NOT NULL,
  samples INTEGER NOT NULL, covered_ms INTEGER NOT NULL, run_ms INTEGER NOT NULL,
  unit TEXT NOT NULL, price_book TEXT NOT NULL, currency TEXT NOT NULL, mode TEXT NOT NULL,
  unit_price TEXT NOT NULL, billed_quantity TEXT NOT NULL, amount TEXT NOT NULL,
  PRIMARY KEY(namespace, workload, resource, gpu_product, kind, preemptor, hour, version)
) WITHOUT ROWID;
INSERT INTO hourly VALUES ('team-a', 'team-a/x', 'cpu', '', 0, '', 1767225600000, 1, 1,
  '3600000000', '900000000', '3600000000', 120, 3570000, 3600000, 'core-second', '', '', '',
  '0', '3600', '0');
)sql";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto l = OpenLedger(path);
  auto rows = *l->Read(RowFilter{});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].workload, "team-a/x");
  EXPECT_EQ(rows[0].gpu_replicas, 1);
  EXPECT_TRUE(rows[0].request_raw == 3600000000);
  // Writing the same key again is a no-op on the migrated table.
  l.reset();
  auto again = OpenLedger(path);
  EXPECT_EQ(again->Read(RowFilter{})->size(), 1u);
}

// Idle rows in the ledger: the "__idle__" invoice, and with shareIdle the tenants' shares,
// weighed over every tenant even when one namespace is asked for.
TEST(LedgerTest, IdleSpreadFromTheLedgerEqualsInMemory) {
  auto l = OpenLedger(TempPath("idle.db"));
  PriceBook b = Book();
  b.share_idle = IdleSharing::kWeighted;
  auto cat = *PriceCatalog::Create({b});
  auto segs = SomeRun();
  auto rows = Rows(segs);
  billing::NodeCapacity n{"node-1", "NVIDIA-H100-80GB-HBM3",
                          ResourceList{{"cpu", 64000}, {"nvidia.com/gpu", 4000}}, kEpoch,
                          kEpoch + 6 * kHour};
  auto idle = *billing::IdleRows({n}, segs, kEpoch, kEpoch + 6 * kHour);
  rows.insert(rows.end(), idle.begin(), idle.end());
  billing::Rollup(&rows);
  ASSERT_TRUE(l->Write(rows, cat).ok());
  auto mem = *billing::BuildInvoices(rows, cat);
  ASSERT_EQ(mem.size(), 3u);
  EXPECT_FALSE(mem[1].idle_share_total.is_zero());
  auto led = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  ASSERT_EQ(led.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(report::InvoiceToJson(led[i]).dump(), report::InvoiceToJson(mem[i]).dump());
  auto a = *sqlite::LedgerInvoices(*l, std::string("team-a"), std::nullopt, std::nullopt);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].digest, mem[1].digest);
  // Exports say what an idle row is.
  RowFilter idle_only;
  idle_only.namespace_ = "__idle__";
  std::ostringstream csv;
  ASSERT_TRUE(l->ExportCsv(idle_only, csv).ok());
  EXPECT_NE(
      csv.str().find(",__idle__,node-1,IdleCapacity,Usage,Idle capacity of cpu on node node-1,"),
      std::string::npos)
      << csv.str().substr(0, 600);
}

TEST(LedgerTest, UnsealedHoursAreUpdatedSealedHoursGetNewVersions) {
  auto l = OpenLedger(TempPath("seal.db"));
  auto cat = *PriceCatalog::Create({Book()});
  auto rows = Rows({Seg("team-a/x", 1000, kEpoch, kEpoch + 3 * kHour)});
  ASSERT_TRUE(l->Write(rows, cat).ok());
  // Correct hour 2 (unsealed): in place.
  std::vector<HourlyRow> fix = rows;
  for (auto& r : fix)
    if (r.hour == kEpoch + 2 * kHour) r.usage_raw += 1000;
  auto st = *l->Write(fix, cat);
  EXPECT_EQ(st.replaced, 2);  // cpu and memory rows of hour 2
  EXPECT_EQ(CountAll(*l), static_cast<int64_t>(rows.size()));
  // Seal hours before 02:00, then correct hour 0: a new version, the old one kept.
  ASSERT_TRUE(l->Seal(kEpoch + 2 * kHour).ok());
  EXPECT_EQ(*l->SealedBefore(), kEpoch + 2 * kHour);
  ASSERT_TRUE(l->Seal(kEpoch).ok());  // never moves back
  EXPECT_EQ(*l->SealedBefore(), kEpoch + 2 * kHour);
  for (auto& r : fix)
    if (r.hour == kEpoch && r.resource == "cpu") r.usage_raw += 5000;
  st = *l->Write(fix, cat);
  EXPECT_EQ(st.corrected, 1);
  EXPECT_EQ(st.unchanged, static_cast<int64_t>(rows.size()) - 1);
  EXPECT_EQ(CountAll(*l), static_cast<int64_t>(rows.size()) + 1);
  RowFilter all;
  all.include_superseded = true;
  all.from = kEpoch;
  all.to = kEpoch + 1;
  auto detailed = *l->ReadDetailed(all);
  int versions = 0;
  for (const auto& lr : detailed)
    if (lr.row.resource == "cpu") {
      ++versions;
      EXPECT_TRUE(lr.sealed);
      EXPECT_EQ(lr.current, lr.version == 2);
    }
  EXPECT_EQ(versions, 2);
  // Current rows carry the correction; writing it again is a no-op.
  auto current = *l->Read(RowFilter{});
  EXPECT_EQ(current, fix);
  EXPECT_EQ(l->Write(fix, cat)->unchanged, static_cast<int64_t>(rows.size()));
}

// Seq of every row of `l` by (workload, resource, hour, version).
std::map<std::tuple<std::string, std::string, Millis, int64_t>, int64_t> Seqs(Ledger& l) {
  std::map<std::tuple<std::string, std::string, Millis, int64_t>, int64_t> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(
      sqlite3_prepare_v2(l.handle(), "SELECT workload, resource, hour, version, seq FROM hourly",
                         -1, &st, nullptr),
      SQLITE_OK);
  while (sqlite3_step(st) == SQLITE_ROW)
    out[{reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
         reinterpret_cast<const char*>(sqlite3_column_text(st, 1)), sqlite3_column_int64(st, 2),
         sqlite3_column_int64(st, 3)}] = sqlite3_column_int64(st, 4);
  sqlite3_finalize(st);
  return out;
}

// The change sequence that `arbiter ledger sync` copies by: every inserted row, in-place update
// and new version gets the next number; an unchanged row keeps its own; a late new key of a
// sealed hour gets a number like any other write.
TEST(LedgerTest, EveryChangeGetsTheNextChangeSequenceNumber) {
  const std::string path = TempPath("seq.db");
  auto l = OpenLedger(path);
  auto cat = *PriceCatalog::Create({Book()});
  auto first = *l->Changes();
  EXPECT_EQ(first.last_seq, 0);
  EXPECT_EQ(first.ledger_id.size(), 32u);
  auto rows = Rows({Seg("team-a/x", 1000, kEpoch, kEpoch + 3 * kHour)});
  ASSERT_TRUE(l->Write(rows, cat, kEpoch + 2 * kHour).ok());
  const auto n = static_cast<int64_t>(rows.size());
  EXPECT_EQ(l->Changes()->last_seq, n);
  auto seqs = Seqs(*l);
  std::set<int64_t> distinct;
  for (const auto& [k, v] : seqs) distinct.insert(v);
  EXPECT_EQ(distinct, (std::set<int64_t>{1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(l->Write(rows, cat).ok());  // unchanged: no number
  EXPECT_EQ(l->Changes()->last_seq, n);
  EXPECT_EQ(Seqs(*l), seqs);
  // An update in place (hour 2, unsealed), a new version (hour 0, sealed), a late new key (hour 1).
  for (auto& r : rows)
    if (r.resource == "cpu" && (r.hour == kEpoch + 2 * kHour || r.hour == kEpoch)) r.usage_raw += 7;
  auto late = Rows({Seg("team-b/late", 500, kEpoch + kHour, kEpoch + 2 * kHour)});
  rows.insert(rows.end(), late.begin(), late.end());
  auto st = *l->Write(rows, cat);
  EXPECT_EQ(st.replaced, 1);
  EXPECT_EQ(st.corrected, 1);
  EXPECT_EQ(st.inserted, static_cast<int64_t>(late.size()));
  EXPECT_EQ(l->Changes()->last_seq, n + 2 + static_cast<int64_t>(late.size()));
  auto after = Seqs(*l);
  EXPECT_GT((after[{"team-a/x", "cpu", kEpoch + 2 * kHour, 1}]), n);
  EXPECT_GT((after[{"team-a/x", "cpu", kEpoch, 2}]), n);
  EXPECT_EQ((after[{"team-a/x", "cpu", kEpoch, 1}]), (seqs[{"team-a/x", "cpu", kEpoch, 1}]));
  EXPECT_GT((after[{"team-b/late", "cpu", kEpoch + kHour, 1}]), n);
  EXPECT_EQ((after[{"team-a/x", "memory", kEpoch, 1}]), (seqs[{"team-a/x", "memory", kEpoch, 1}]));
  // The id is the ledger's: the same after reopening.
  l.reset();
  EXPECT_EQ(OpenLedger(path)->Changes()->ledger_id, first.ledger_id);
}

// A schema-3 ledger (no change sequence) is migrated on open: its rows get seq 0, the ledger an
// id, and writes go on numbering from 1.
TEST(LedgerTest, SchemaThreeLedgerGetsTheChangeSequence) {
  const std::string path = TempPath("v3.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* v3 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '3');
CREATE TABLE price_books(id TEXT PRIMARY KEY, effective_from INTEGER NOT NULL, canonical TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE hourly(
  namespace TEXT NOT NULL, workload TEXT NOT NULL, resource TEXT NOT NULL,
  gpu_product TEXT NOT NULL, gpu_replicas INTEGER NOT NULL, kind INTEGER NOT NULL, preemptor TEXT NOT NULL,
  hour INTEGER NOT NULL, version INTEGER NOT NULL, current INTEGER NOT NULL,
  request_raw TEXT NOT NULL, usage_raw TEXT NOT NULL, max_raw TEXT NOT NULL,
  samples INTEGER NOT NULL, covered_ms INTEGER NOT NULL, run_ms INTEGER NOT NULL,
  unit TEXT NOT NULL, price_book TEXT NOT NULL, currency TEXT NOT NULL, mode TEXT NOT NULL,
  unit_price TEXT NOT NULL, billed_quantity TEXT NOT NULL, amount TEXT NOT NULL,
  PRIMARY KEY(namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, version)
) WITHOUT ROWID;
INSERT INTO hourly VALUES ('team-a', 'team-a/x', 'cpu', '', 1, 0, '', 1767225600000, 1, 1,
  '3600000000', '900000000', '3600000000', 120, 3570000, 3600000, 'core-second', '', '', '',
  '0', '3600', '0');
)sql";
  ASSERT_EQ(sqlite3_exec(db, v3, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto l = OpenLedger(path);
  EXPECT_EQ(l->Stats()->schema, 6);
  EXPECT_EQ(l->Changes()->last_seq, 0);
  EXPECT_EQ(l->Changes()->ledger_id.size(), 32u);
  EXPECT_EQ((Seqs(*l)[{"team-a/x", "cpu", kEpoch, 1}]), 0);
  EXPECT_TRUE(l->CheckRollups()->empty());
  auto cat = *PriceCatalog::Create({Book()});
  ASSERT_TRUE(l->Write(Rows({Seg("team-b/y", 1000, kEpoch, kEpoch + kHour)}), cat).ok());
  EXPECT_EQ(l->Changes()->last_seq, 2);
}

TEST(LedgerTest, APriceBookVersionIsImmutable) {
  auto l = OpenLedger(TempPath("books.db"));
  ASSERT_TRUE(l->PutPriceBooks({Book()}).ok());
  ASSERT_TRUE(l->PutPriceBooks({Book()}).ok());
  Status s = l->PutPriceBooks({Book(kEpoch, "0.06")});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("new version"), std::string::npos);
  auto books = *l->PriceBooks();
  ASSERT_EQ(books.size(), 1u);
  EXPECT_EQ(billing::CanonicalPriceBook(books[0]), billing::CanonicalPriceBook(Book()));
}

TEST(LedgerTest, ExportsFocusColumns) {
  auto l = OpenLedger(TempPath("export.db"));
  auto cat = *PriceCatalog::Create({Book()});
  ASSERT_TRUE(
      l->Write(Rows({Seg("team-a/x", 16000, kEpoch, kEpoch + kHour)}), cat, kEpoch + kHour).ok());
  std::ostringstream csv;
  ASSERT_TRUE(l->ExportCsv(RowFilter{}, csv).ok());
  std::istringstream in(csv.str());
  std::string header, cpu, mem, extra;
  std::getline(in, header);
  std::getline(in, cpu);
  std::getline(in, mem);
  EXPECT_FALSE(std::getline(in, extra));
  for (const char* col : {"BilledCost", "EffectiveCost", "ConsumedQuantity", "ConsumedUnit",
                          "PricingQuantity", "ResourceId", "ChargePeriodStart", "ChargePeriodEnd"})
    EXPECT_NE(header.find(col), std::string::npos) << col;
  EXPECT_EQ(
      cpu.substr(0, 80),
      std::string(
          "2026-01-01T00:00:00Z,2026-01-01T01:00:00Z,2026-01-01T00:00:00Z,2026-01-01T01:00:00Z,CNY")
          .substr(0, 80));
  EXPECT_NE(cpu.find(",team-a,team-a/x,Workload,Usage,"), std::string::npos);
  // 16 cores, usage 4 -> counter sees 4 × 3570 core-s; Max bills 57600 core-s = 0.8 CNY.
  EXPECT_NE(cpu.find(",14280,core-second,57600,core-second,"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find(",0.8,0.8,0.8,"), std::string::npos) << cpu;
  std::ostringstream jl;
  ASSERT_TRUE(l->ExportJsonl(RowFilter{}, jl).ok());
  std::istringstream jin(jl.str());
  std::string line;
  std::getline(jin, line);
  auto j = nlohmann::ordered_json::parse(line);
  EXPECT_EQ(j["BilledCost"], "0.8");
  EXPECT_EQ(j["ConsumedUnit"], "core-second");
  EXPECT_EQ(j["ResourceId"], "team-a/x");
  EXPECT_EQ(j["x_Sealed"], "true");
  EXPECT_EQ(j.begin().key(), "BillingPeriodStart");  // column order kept
}

// Property: for seeded random runs, re-ingesting is a no-op, the ledger gives back exactly the
// rows written, and invoices from the ledger have the in-memory digests.
class LedgerProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(LedgerProperty, ReingestIsANoOpAndRoundTripsExactly) {
  std::mt19937_64 rng(GetParam());
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<RunSegment> segs;
  for (int i = 0; i < 25; ++i) {
    RunSegment s = Seg("team-" + std::to_string(pick(0, 2)) + "/w" + std::to_string(pick(0, 6)),
                       pick(1, 64000), 0, 0);
    s.start = kEpoch + pick(0, 30 * kHour);
    s.end = s.start + pick(0, 6 * kHour);
    s.requests.Set("memory", pick(1, int64_t{1} << 42));  // up to 4 TiB: raw exceeds int64
    if (pick(0, 1)) {
      s.requests.Set("nvidia.com/gpu", pick(1, 8) * 1000);
      s.gpu_product = "NVIDIA-H100-80GB-HBM3";
    }
    if (pick(0, 2) == 0 && s.end > s.start)
      s.lost = billing::LostWork{s.start, pick(s.start, s.end), "team-z/p"};
    segs.push_back(s);
  }
  auto rows = Rows(segs);
  auto cat = *PriceCatalog::Create({Book(), Book(kEpoch + 12 * kHour, "0.08")});
  auto l = OpenLedger(TempPath("prop-" + std::to_string(GetParam()) + ".db"));
  ASSERT_EQ(l->Write(rows, cat, kEpoch + 10 * kHour)->inserted, static_cast<int64_t>(rows.size()));
  auto again = *l->Write(rows, cat, kEpoch + 20 * kHour);
  EXPECT_EQ(again.unchanged, static_cast<int64_t>(rows.size()));
  EXPECT_EQ(again.inserted + again.replaced + again.corrected, 0);
  EXPECT_EQ(*l->Read(RowFilter{}), rows);
  auto mem = *billing::BuildInvoices(rows, cat);
  auto led = *sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
  ASSERT_EQ(mem.size(), led.size());
  for (size_t i = 0; i < mem.size(); ++i) EXPECT_EQ(mem[i].digest, led[i].digest);
}

INSTANTIATE_TEST_SUITE_P(Seeds, LedgerProperty, ::testing::Values(7u, 8u, 9u, 2026u));

// Issue 4, month invoices from SQLite: invoices read through the daily rollups (whole days) plus
// hourly rows (partial days, days where a PriceBook version takes effect mid-day) are byte for
// byte the invoices of every hourly row, and of the rows in memory — for random multi-day runs
// with credits, GPU replicas, idle rows, updates and sealed-hour corrections, three PriceBook
// versions (one taking effect mid-day, one at midnight), random windows and namespaces.
class LedgerRollupProperty : public ::testing::TestWithParam<uint64_t> {};

TEST_P(LedgerRollupProperty, RollupInvoicesEqualHourlyInvoicesByteForByte) {
  std::mt19937_64 rng(GetParam());
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  constexpr Millis kDay = 24 * kHour;
  auto random_run = [&](int n) {
    std::vector<RunSegment> segs;
    for (int i = 0; i < n; ++i) {
      RunSegment s = Seg("team-" + std::to_string(pick(0, 2)) + "/w" + std::to_string(pick(0, 5)),
                         pick(1, 64000), 0, 0);
      s.start = kEpoch + pick(0, 4 * kDay);
      s.end = s.start + pick(0, 2 * kDay);
      if (pick(0, 1)) {
        s.requests.Set("nvidia.com/gpu", pick(1, 4) * 1000);
        s.gpu_product = "NVIDIA-H100-80GB-HBM3";
        s.gpu_replicas = pick(0, 2) == 0 ? 4 : 1;
      }
      if (pick(0, 2) == 0 && s.end > s.start)
        s.lost = billing::LostWork{s.start, pick(s.start, s.end), "team-z/p"};
      segs.push_back(s);
    }
    return segs;
  };
  auto segs = random_run(30);
  auto rows = Rows(segs);
  billing::NodeCapacity node{"node-1", "NVIDIA-H100-80GB-HBM3",
                             ResourceList{{"cpu", 512000}, {"nvidia.com/gpu", 16000}}, kEpoch,
                             kEpoch + 6 * kDay};
  auto idle = *billing::IdleRows({node}, segs, kEpoch, kEpoch + 6 * kDay);
  rows.insert(rows.end(), idle.begin(), idle.end());
  billing::Rollup(&rows);
  PriceBook mid = Book(kEpoch + kDay + 13 * kHour, "0.08");
  mid.meta.name = "mid";
  mid.share_idle = GetParam() % 2 ? IdleSharing::kWeighted : IdleSharing::kNone;
  PriceBook midnight = Book(kEpoch + 3 * kDay, "0.09");
  midnight.mode = BillingMode::kBlended;
  auto cat = *PriceCatalog::Create({Book(), mid, midnight});
  auto l = OpenLedger(TempPath("rollup-" + std::to_string(GetParam()) + ".db"));
  ASSERT_TRUE(l->Write(rows, cat, kEpoch + 2 * kDay).ok());
  // Rewrite some rows with new content: unsealed ones are updated, sealed ones corrected.
  std::vector<HourlyRow> changed;
  for (const HourlyRow& r : rows)
    if (pick(0, 4) == 0) {
      HourlyRow c = r;
      c.request_raw += pick(1, 1000000);
      c.usage_raw += pick(0, 1000);
      c.max_raw = c.request_raw + c.usage_raw;
      c.samples += 1;
      changed.push_back(c);
    }
  auto st = *l->Write(changed, cat);
  EXPECT_EQ(st.replaced + st.corrected, static_cast<int64_t>(changed.size()));
  auto current = *l->Read(RowFilter{});
  auto check = [&](std::optional<std::string> ns, std::optional<Millis> from,
                   std::optional<Millis> to) {
    SCOPED_TRACE((ns ? *ns : "*") + " " + (from ? FormatRfc3339(*from) : "-") + " " +
                 (to ? FormatRfc3339(*to) : "-"));
    auto fast = sqlite::LedgerInvoices(*l, ns, from, to);
    auto slow = sqlite::LedgerInvoices(*l, ns, from, to, sqlite::InvoiceRead::kHourlyRows);
    ASSERT_EQ(fast.ok(), slow.ok()) << (fast.ok() ? slow.message() : fast.message());
    if (!fast.ok()) {
      EXPECT_EQ(fast.message(), slow.message());
      return;
    }
    EXPECT_EQ(report::InvoicesToJson(*fast).dump(), report::InvoicesToJson(*slow).dump());
    billing::InvoiceOptions opts;
    opts.from = from;
    opts.to = to;
    auto mem = *billing::BuildInvoices(current, cat, opts);
    if (ns) std::erase_if(mem, [&](const billing::Invoice& i) { return i.namespace_ != *ns; });
    EXPECT_EQ(report::InvoicesToJson(*fast).dump(), report::InvoicesToJson(mem).dump());
  };
  check(std::nullopt, std::nullopt, std::nullopt);
  check(std::string("team-1"), std::nullopt, std::nullopt);
  check(std::nullopt, kEpoch - kDay, std::nullopt);
  for (int i = 0; i < 12; ++i) {
    Millis a = kEpoch + pick(0, 6 * 24) * kHour;
    Millis b = a + pick(0, 5 * 24) * kHour;
    std::optional<std::string> ns;
    if (pick(0, 1)) ns = "team-" + std::to_string(pick(0, 2));
    check(ns, a, b);
    check(ns, std::nullopt, b);
    check(ns, a, std::nullopt);
  }
  // The incrementally maintained rollups equal rollups rebuilt from the hourly rows.
  auto before = *l->ReadDaily(std::nullopt, INT64_MIN, INT64_MAX);
  EXPECT_GT(before.size(), 20u);
  EXPECT_LT(before.size(), current.size());
  ASSERT_TRUE(l->RebuildRollups().ok());
  auto after = *l->ReadDaily(std::nullopt, INT64_MIN, INT64_MAX);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].sum, after[i].sum);
    EXPECT_EQ(before[i].last_hour, after[i].last_hour);
  }
  // Rows two days before the first PriceBook: both reads refuse with the same message.
  ASSERT_TRUE(
      l->Write(Rows({Seg("team-0/early", 1000, kEpoch - 2 * kDay, kEpoch - kDay - kHour)}), cat)
          .ok());
  check(std::nullopt, std::nullopt, std::nullopt);
  check(std::string("team-0"), kEpoch - 3 * kDay, kEpoch + kDay);
  EXPECT_FALSE(sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt).ok());
}

INSTANTIATE_TEST_SUITE_P(Seeds, LedgerRollupProperty, ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u));

// ---------------------------------------------------------------- crash safety

constexpr int kRowsPerHour = 3000;

std::vector<HourlyRow> HourRows(int h) {
  std::vector<HourlyRow> rows;
  for (int w = 0; w < kRowsPerHour; ++w) {
    HourlyRow r;
    r.namespace_ = "team-" + std::to_string(w % 7);
    r.workload = r.namespace_ + "/w" + std::to_string(w);
    r.resource = "cpu";
    r.hour = kEpoch + h * kHour;
    r.request_raw = static_cast<billing::i128>(1000 + w) * kHour;
    r.usage_raw = r.max_raw = r.request_raw;
    r.samples = 120;
    r.covered_ms = r.run_ms = kHour;
    rows.push_back(r);
  }
  billing::Rollup(&rows);
  return rows;
}

// The child writes one hour per transaction and seals it in the same transaction, reporting each
// commit on a pipe; the parent SIGKILLs it mid-stream, then checks the ledger and re-ingests.
TEST(LedgerCrash, KilledWriterLosesNoSealedHourAndDuplicatesNothing) {
  auto cat = *PriceCatalog::Create({Book()});
  for (int trial = 0; trial < 4; ++trial) {
    const std::string path = TempPath("kill-" + std::to_string(trial) + ".db");
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto l = Ledger::Open(path);
      if (!l.ok()) _exit(3);
      for (int h = 0; h < 1000; ++h) {
        if (!(*l)->Write(HourRows(h), cat, kEpoch + (h + 1) * kHour).ok()) _exit(4);
        if (write(fds[1], &h, sizeof h) != sizeof h) _exit(5);
      }
      _exit(0);
    }
    close(fds[1]);
    int acked = -1, h;
    while (acked < trial + 1 && read(fds[0], &h, sizeof h) == sizeof h) acked = h;
    usleep(static_cast<useconds_t>(trial * 7000 + 1500));  // land somewhere inside a later write
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (read(fds[0], &h, sizeof h) == sizeof h) acked = h;  // commits reported before death
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer finished before the kill; make it slower";
    ASSERT_GE(acked, trial + 1);

    auto l = OpenLedger(path);
    {
      sqlite3_stmt* st = nullptr;
      ASSERT_EQ(sqlite3_prepare_v2(l->handle(), "PRAGMA integrity_check", -1, &st, nullptr),
                SQLITE_OK);
      ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
      EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
      sqlite3_finalize(st);
    }
    const Millis wm = *l->SealedBefore();
    const int sealed_hours = static_cast<int>((wm - kEpoch) / kHour);
    EXPECT_GE(sealed_hours, acked + 1) << "an acknowledged sealed hour was lost";
    RowFilter all;
    all.include_superseded = true;
    auto rows = *l->ReadDetailed(all);
    // Exactly the sealed hours, complete, each row once, version 1: nothing partial, nothing twice.
    EXPECT_EQ(static_cast<int64_t>(rows.size()), int64_t{sealed_hours} * kRowsPerHour);
    for (const auto& lr : rows) {
      ASSERT_EQ(lr.version, 1);
      ASSERT_LT(lr.row.hour, wm);
    }
    // Re-ingest everything the writer meant to write up to two hours past the watermark.
    sqlite::WriteStats total;
    for (int k = 0; k < sealed_hours + 2; ++k) {
      auto st = *l->Write(HourRows(k), cat, kEpoch + (k + 1) * kHour);
      total.inserted += st.inserted;
      total.unchanged += st.unchanged;
      total.corrected += st.corrected + st.replaced;
    }
    EXPECT_EQ(total.unchanged, int64_t{sealed_hours} * kRowsPerHour);
    EXPECT_EQ(total.inserted, int64_t{2} * kRowsPerHour);
    EXPECT_EQ(total.corrected, 0);
    EXPECT_EQ(CountAll(*l), int64_t{sealed_hours + 2} * kRowsPerHour);
  }
}

// ---------------------------------------------------------------- JSON

TEST(InvoiceJson, HasTheReportShapeWithExactStrings) {
  auto cat = *PriceCatalog::Create({Book()});
  auto invs = *billing::BuildInvoices(Rows(SomeRun()), cat);
  auto j = report::InvoicesToJson(invs);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  const auto& a = j[0];
  EXPECT_EQ(a["namespace"], "team-a");
  EXPECT_EQ(a["currency"], "CNY");
  for (const char* k : {"requestTotal", "usageTotal", "total", "digest"})
    EXPECT_TRUE(a[k].is_string()) << k;
  bool credit = false;
  for (const auto& l : a["lines"]) {
    for (const char* k : {"resource", "unit", "requestQuantity", "usageQuantity", "billedQuantity",
                          "unitPrice", "amount"})
      EXPECT_TRUE(l[k].is_string()) << k;
    std::string amount = l["amount"];
    EXPECT_EQ(amount.size() - amount.find('.'), 7u) << amount;  // 6 decimals
    if (l["kind"] == "Credit") {
      credit = true;
      EXPECT_EQ(l["preemptor"], "team-b/urgent");
      EXPECT_EQ(amount[0], '-');
    }
  }
  EXPECT_TRUE(credit);
  // GPU credit: 2 GPUs × 1 h lost at 14.00 -> -28.000000.
  bool gpu_credit = false;
  for (const auto& l : a["lines"])
    if (l["kind"] == "Credit" && l["resource"] == "nvidia.com/gpu") {
      gpu_credit = true;
      EXPECT_EQ(l["amount"], "-28.000000");
      EXPECT_EQ(l["billedQuantity"], "-7200");
      EXPECT_EQ(l["gpuModel"], "NVIDIA-H100-80GB-HBM3");
    }
  EXPECT_TRUE(gpu_credit);
}

TEST(InvoiceJson, SegmentsRoundTripAndBadInputIsAnError) {
  RunSegment s = SomeRun()[0];
  auto back = report::SegmentFromJson(report::SegmentToJson(s));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back->workload, s.workload);
  EXPECT_EQ(back->requests, s.requests);
  EXPECT_EQ(back->usage, s.usage);
  EXPECT_EQ(back->start, s.start);
  EXPECT_EQ(back->end, s.end);
  ASSERT_TRUE(back->lost.has_value());
  EXPECT_EQ(back->lost->preemptor, "team-b/urgent");

  auto bad = [](const char* text) { return report::SegmentFromJson(nlohmann::json::parse(text)); };
  EXPECT_TRUE(bad(R"({"workload":"a/b","requests":{"cpu":"1"},"start":0,"end":1000})").ok());
  EXPECT_FALSE(bad(R"({"workload":"ab","requests":{"cpu":"1"},"start":0,"end":1000})").ok());
  EXPECT_FALSE(bad(R"({"workload":"a/b","requests":{"cpu":"0.0001"},"start":0,"end":1000})").ok());
  EXPECT_FALSE(
      bad(R"({"workload":"a/b","requests":{"cpu":"1"},"start":"yesterday","end":1000})").ok());
  EXPECT_FALSE(bad(R"({"workload":"a/b","requests":{"cpu":"1"},"start":2000,"end":1000})").ok());
  EXPECT_FALSE(bad(R"({"workload":"a/b","start":0,"end":1000})").ok());

  const std::string path = TempPath("segs.jsonl");
  {
    std::ofstream out(path);
    out << report::SegmentToJson(s).dump() << "\n\n{not json}\n";
  }
  auto r = report::ReadSegmentsJsonl(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find(":3:"), std::string::npos) << r.message();
}

TEST(InvoiceJson, PriceBooksRoundTrip) {
  PriceBook b = Book();
  b.mode = BillingMode::kBlended;
  b.blended_request_weight = *Decimal::Parse("0.3");
  b.mig_rule = MigRule::kMemory;
  b.preemption_credit = CreditPolicy::kNone;
  b.namespace_modes["team-c"] = BillingMode::kUsage;
  b.share_idle = IdleSharing::kWeighted;
  auto back = report::PriceBooksFromJson(report::PriceBookToJson(b));
  ASSERT_TRUE(back.ok()) << back.message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(billing::CanonicalPriceBook((*back)[0]), billing::CanonicalPriceBook(b));
  EXPECT_NE(billing::CanonicalPriceBook(b).find("shareIdle Weighted"), std::string::npos);
  EXPECT_FALSE(
      report::PriceBooksFromJson(
          nlohmann::json::parse(R"({"metadata":{"name":"x"},"spec":{"shareIdle":"Always"}})"))
          .ok());
  EXPECT_FALSE(report::PriceBooksFromJson(
                   nlohmann::json::parse(R"({"metadata":{"name":"x"},"spec":{"mode":"Cheapest"}})"))
                   .ok());
}

// ---------------------------------------------------------------- reading (issue 14)

bool Exists(const std::string& p) { return std::filesystem::exists(p); }

TEST(LedgerReading, OpenForReadingLeavesNoFilesAndRefusesWrites) {
  const std::string path = TempPath("read.db");
  {
    auto l = OpenLedger(path);
    ASSERT_TRUE(l->Write(Rows(SomeRun()), *PriceCatalog::Create({Book()})).ok());
  }
  ASSERT_FALSE(Exists(path + "-wal"));  // the writer closed cleanly: one file
  auto before =
      *sqlite::LedgerInvoices(*OpenLedger(path), std::nullopt, std::nullopt, std::nullopt);
  {
    auto r = Ledger::OpenForReading(path);
    ASSERT_TRUE(r.ok()) << r.message();
    auto invs = sqlite::LedgerInvoices(**r, std::nullopt, std::nullopt, std::nullopt);
    ASSERT_TRUE(invs.ok());
    ASSERT_EQ(invs->size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ((*invs)[i].digest, before[i].digest);
    EXPECT_FALSE((*r)->Seal(kEpoch + kHour).ok()) << "a reading ledger must refuse writes";
  }
  EXPECT_FALSE(Exists(path + "-wal"));
  EXPECT_FALSE(Exists(path + "-shm"));
}

TEST(LedgerReading, MissingOrForeignFilesAreErrors) {
  auto missing = Ledger::OpenForReading(TempPath("none.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no such file"), std::string::npos) << missing.message();
  EXPECT_FALSE(Exists(TempPath("none.db")));
  const std::string text = TempPath("text.db");
  std::ofstream(text) << "not a database\n";
  auto t = Ledger::OpenForReading(text);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("not a database"), std::string::npos) << t.message();
  const std::string other = TempPath("other.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  auto o = Ledger::OpenForReading(other);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.message().find("is not an Arbiter ledger"), std::string::npos) << o.message();
}

TEST(LedgerReading, IntegrityAndRollupChecksFindDamage) {
  const std::string path = TempPath("damage.db");
  {
    auto l = OpenLedger(path);
    std::vector<RunSegment> segs;
    for (int i = 0; i < 200; ++i)
      segs.push_back(Seg("team-a/w" + std::to_string(i), 1000, kEpoch, kEpoch + 30 * kHour));
    ASSERT_TRUE(l->Write(Rows(segs), *PriceCatalog::Create({Book()})).ok());
    EXPECT_TRUE(l->CheckIntegrity(true)->empty());
    EXPECT_TRUE(l->CheckRollups()->empty());
    auto st = l->Stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->namespaces, 1);
    EXPECT_EQ(st->rows, st->current_rows);
    EXPECT_EQ(*l->Namespaces(), std::vector<std::string>{"team-a"});
    // A rollup that no longer matches its hourly rows.
    sqlite3_exec(
        l->handle(),
        "UPDATE daily SET run_ms = run_ms + 1 WHERE rowid IN (SELECT rowid FROM daily LIMIT 1)",
        nullptr, nullptr, nullptr);
    sqlite3_exec(l->handle(), "UPDATE daily SET run_ms = run_ms + 1 WHERE workload = 'team-a/w7'",
                 nullptr, nullptr, nullptr);
    auto rollups = l->CheckRollups();
    ASSERT_TRUE(rollups.ok());
    ASSERT_FALSE(rollups->empty());
    EXPECT_NE(rollups->front().find("differs from its hourly rows"), std::string::npos)
        << rollups->front();
  }
  // Random bytes in the middle of the file, where invoices need not look.
  const auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    std::mt19937 rng(14);
    for (int i = 0; i < 2048; ++i) f.put(static_cast<char>(rng() & 0xff));
  }
  auto r = Ledger::OpenForReading(path);
  ASSERT_TRUE(r.ok()) << r.message();
  auto quick = (*r)->CheckIntegrity(false);
  ASSERT_TRUE(quick.ok());
  EXPECT_FALSE(quick->empty()) << "PRAGMA quick_check missed random bytes mid-file";
}

// The sources of merged rows (arbiter scheduler --ledger --meter-prometheus): meter_tracks,
// upserted per (namespace, workload, resource, hour), read back in key order; a ledger that
// never had any reads none.
TEST(LedgerTest, TrackSourcesRoundTripAndAreReplaced) {
  auto l = OpenLedger(TempPath("tracks.db"));
  auto none = l->ReadTracks();
  ASSERT_TRUE(none.ok()) << none.message();
  EXPECT_TRUE(none->empty());
  using billing::TrackNote;
  using billing::UsageSource;
  const TrackNote b{"a", "a/p", "memory", kEpoch, UsageSource::kNone};
  const TrackNote a{"a", "a/p", "cpu", kEpoch + kHour, UsageSource::kUsageSource};
  ASSERT_TRUE(l->PutTracks({b, a}).ok());
  TrackNote b2 = b;
  b2.usage = UsageSource::kRequest;
  ASSERT_TRUE(l->PutTracks({b2}).ok());
  auto read = l->ReadTracks();
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(*read, (std::vector<TrackNote>{a, b2}));
  EXPECT_EQ((*read)[0].Text(), "request=informers usage=prometheus");
}

}  // namespace
}  // namespace arbiter

namespace arbiter {
namespace {

// `arbiter ledger tracks` reads meter_tracks with the row each entry describes: the current Usage
// row of its (namespace, workload, resource, hour), never a Credit row of the same key nor a
// superseded version; an entry without such a row has none; the namespace and window filter the
// entries; a ledger that never had tracks says so (written false).
TEST(LedgerTest, TrackRowsJoinEachEntryWithItsCurrentUsageRow) {
  auto l = OpenLedger(TempPath("track-rows.db"));
  auto never = l->ReadTrackRows({});
  ASSERT_TRUE(never.ok()) << never.message();
  EXPECT_FALSE(never->written);
  EXPECT_TRUE(never->rows.empty());

  auto cat = *PriceCatalog::Create({Book()});
  using testing::HourRow;
  // 4 cores requested, 1 used: core-seconds
  HourlyRow cpu = HourRow("a", "cpu", kEpoch, 4000, 1000);
  HourlyRow credit = HourRow("a", "cpu", kEpoch, 500, 500);
  credit.kind = billing::RowKind::kCredit;
  credit.preemptor = "b/q";
  HourlyRow gpu = HourRow("a", "nvidia.com/gpu", kEpoch, 2000, 0);
  gpu.gpu_product = "NVIDIA-H100-80GB-HBM3";
  HourlyRow other = HourRow("b", "cpu", kEpoch + kHour, 1000, 1000);
  ASSERT_TRUE(l->Write({cpu, credit, gpu, other}, cat, kEpoch + kHour).ok());
  HourlyRow corrected = cpu;  // a sealed hour metered again: version 2
  corrected.usage_raw = static_cast<billing::i128>(1500) * kHour;
  auto w = l->Write({corrected}, cat);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_EQ(w->corrected, 1);

  using billing::TrackNote;
  using billing::UsageSource;
  const TrackNote n_cpu{"a", "a/p", "cpu", kEpoch, UsageSource::kUsageSource};
  const TrackNote n_gpu{"a", "a/p", "nvidia.com/gpu", kEpoch, UsageSource::kNone};
  const TrackNote n_lone{"a", "a/p", "memory", kEpoch, UsageSource::kRequest};  // no row
  const TrackNote n_other{"b", "b/p", "cpu", kEpoch + kHour, UsageSource::kUsageSource};
  ASSERT_TRUE(l->PutTracks({n_other, n_lone, n_gpu, n_cpu}).ok());

  auto all = l->ReadTrackRows({});
  ASSERT_TRUE(all.ok()) << all.message();
  EXPECT_TRUE(all->written);
  ASSERT_EQ(all->rows.size(), 4u);
  const auto& r = all->rows;
  EXPECT_EQ(r[0].note, n_cpu);
  EXPECT_EQ(r[0].request_source, "informers");
  ASSERT_TRUE(r[0].row.has_value());
  EXPECT_EQ(r[0].row->kind, billing::RowKind::kUsage);
  EXPECT_EQ(r[0].row->request_raw, cpu.request_raw);
  EXPECT_EQ(r[0].row->usage_raw, corrected.usage_raw);  // the current version
  EXPECT_EQ(r[0].unit, "core-second");
  EXPECT_EQ(r[1].note, n_lone);
  EXPECT_FALSE(r[1].row.has_value());
  EXPECT_EQ(r[1].unit, "");
  EXPECT_EQ(r[2].note, n_gpu);
  ASSERT_TRUE(r[2].row.has_value());
  EXPECT_EQ(r[2].row->gpu_product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(r[2].unit, "GPU-second");
  EXPECT_EQ(r[3].note, n_other);

  RowFilter f;
  f.namespace_ = "b";
  auto b = l->ReadTrackRows(f);
  ASSERT_TRUE(b.ok()) << b.message();
  ASSERT_EQ(b->rows.size(), 1u);
  EXPECT_EQ(b->rows[0].note, n_other);
  RowFilter window;
  window.from = kEpoch;
  window.to = kEpoch + kHour;
  auto first_hour = l->ReadTrackRows(window);
  ASSERT_TRUE(first_hour.ok()) << first_hour.message();
  EXPECT_EQ(first_hour->rows.size(), 3u);
}

}  // namespace
}  // namespace arbiter

namespace arbiter {
namespace {

// Issue 26: meter_tracks is keyed with the row kind. A Credit row's note (lost work, its request
// track only: usage=request) and the Usage row's note of the same workload, resource and hour are
// two entries; before, the second written replaced the first, and the Usage row was shown with
// the Credit row's sources. Each entry is read with the row of its kind.
TEST(LedgerTest, CreditAndUsageNotesOfOneKeyAreKeptApart) {
  auto l = OpenLedger(TempPath("tracks-kind.db"));
  auto cat = *PriceCatalog::Create({Book()});
  HourlyRow usage = testing::HourRow("a", "cpu", kEpoch, 4000, 1000);
  HourlyRow credit = testing::HourRow("a", "cpu", kEpoch, 500, 500);
  credit.kind = billing::RowKind::kCredit;
  credit.preemptor = "b/q";
  ASSERT_TRUE(l->Write({usage, credit}, cat).ok());
  using billing::TrackNote;
  using billing::UsageSource;
  const TrackNote n_usage{"a", "a/p", "cpu", kEpoch, UsageSource::kUsageSource};
  const TrackNote n_credit{
      "a", "a/p", "cpu", kEpoch, UsageSource::kRequest, billing::RowKind::kCredit};
  ASSERT_TRUE(l->PutTracks({n_usage, n_credit}).ok());
  auto read = l->ReadTracks();
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(*read, (std::vector<TrackNote>{n_usage, n_credit}));
  auto rows = l->ReadTrackRows({});
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->rows[0].note, n_usage);
  ASSERT_TRUE(rows->rows[0].row.has_value());
  EXPECT_EQ(rows->rows[0].row->kind, billing::RowKind::kUsage);
  EXPECT_EQ(rows->rows[0].row->usage_raw, usage.usage_raw);
  EXPECT_EQ(rows->rows[1].note, n_credit);
  ASSERT_TRUE(rows->rows[1].row.has_value());
  EXPECT_EQ(rows->rows[1].row->kind, billing::RowKind::kCredit);
  EXPECT_EQ(rows->rows[1].row->request_raw, credit.request_raw);
}

// A schema-5 ledger's meter_tracks (keyed without the kind) is migrated on open: its entries
// become the Usage rows' (as they were read), and a Credit note of the same key is then an entry
// of its own.
TEST(LedgerTest, SchemaFiveTrackEntriesBecomeTheUsageRowsEntries) {
  const std::string path = TempPath("v5-tracks.db");
  auto cat = *PriceCatalog::Create({Book()});
  ASSERT_TRUE(
      OpenLedger(path)->Write({testing::HourRow("a", "cpu", kEpoch, 4000, 1000)}, cat).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* v5 = R"sql(
UPDATE meta SET value = '5' WHERE key = 'schema';
CREATE TABLE meter_tracks(namespace TEXT NOT NULL, workload TEXT NOT NULL,
  resource TEXT NOT NULL, hour INTEGER NOT NULL, request TEXT NOT NULL, usage TEXT NOT NULL,
  PRIMARY KEY(namespace, workload, resource, hour)) WITHOUT ROWID;
INSERT INTO meter_tracks VALUES ('a', 'a/p', 'cpu', 1767225600000, 'informers', 'none');
INSERT INTO meter_tracks VALUES ('a', 'a/p', 'memory', 1767225600000, 'informers', 'request');
)sql";
  ASSERT_EQ(sqlite3_exec(db, v5, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
  auto l = OpenLedger(path);
  EXPECT_EQ(l->Stats()->schema, 6);
  using billing::TrackNote;
  using billing::UsageSource;
  const TrackNote cpu{"a", "a/p", "cpu", kEpoch, UsageSource::kNone};
  const TrackNote memory{"a", "a/p", "memory", kEpoch, UsageSource::kRequest};
  auto read = l->ReadTracks();
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(*read, (std::vector<TrackNote>{cpu, memory}));
  const TrackNote credit{
      "a", "a/p", "cpu", kEpoch, UsageSource::kRequest, billing::RowKind::kCredit};
  ASSERT_TRUE(l->PutTracks({credit}).ok());
  read = l->ReadTracks();
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(*read, (std::vector<TrackNote>{cpu, credit, memory}));
  auto rows = l->ReadTrackRows({});
  ASSERT_TRUE(rows.ok()) << rows.message();
  ASSERT_EQ(rows->rows.size(), 3u);
  ASSERT_TRUE(rows->rows[0].row.has_value());  // the Usage row, with the migrated entry
  EXPECT_EQ(rows->rows[0].note, cpu);
  EXPECT_FALSE(rows->rows[1].row.has_value());  // no Credit row in that hour
  EXPECT_TRUE(l->CheckRollups()->empty());
}

}  // namespace
}  // namespace arbiter
