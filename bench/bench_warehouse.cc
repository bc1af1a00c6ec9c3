// Warehouse benchmarks against real servers (bench/run.sh warehouse, warehouse10m start them; or
//   scripts/services/clickhouse.sh start; scripts/services/postgres.sh start
// endpoints from ARBITER_CLICKHOUSE_URL / ARBITER_POSTGRES_URL, defaults as in the tests):
//   - a month of 10,000 workloads × 720 hours (7.2M sealed hourly rows) synced from the SQLite
//     ledger into a fresh database (target: < 60 s);
//   - that month's invoices (every namespace, JSON) read back from the warehouse (target for
//     ClickHouse: < 2 s), with the SQLite ledger's own month invoice as the baseline of the run.
// The SQLite month ledger is built once (about a minute) and kept in the temp directory.
#include <benchmark/benchmark.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>

#include "adapters/clickhouse/clickhouse_store.h"
#include "adapters/postgres/postgres_store.h"
#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "adapters/warehouse/warehouse.h"

namespace arbiter {
namespace {

using billing::HourlyRow;
using billing::i128;
using billing::kHourMs;

constexpr Millis kEpoch = 1767225600000;  // 2026-01-01T00:00:00Z

std::string Env(const char* n, const char* d) {
  const char* v = std::getenv(n);
  return v && *v ? v : d;
}

PriceBook Book() {
  PriceBook b;
  b.meta.name = "standard";
  b.currency = "CNY";
  b.effective_from = kEpoch;
  b.prices = {{"cpu", *Decimal::Parse("0.05")},
              {"memory", *Decimal::Parse("0.01")},
              {"nvidia.com/gpu", *Decimal::Parse("7.00")}};
  b.gpu_models = {{"NVIDIA-H100-80GB-HBM3", *Decimal::Parse("14.00")}};
  return b;
}

std::vector<HourlyRow> MonthRows(int workloads, int hours, int first) {
  std::vector<HourlyRow> rows;
  rows.reserve(static_cast<size_t>(workloads) * static_cast<size_t>(hours));
  const char* res[] = {"cpu", "memory", "nvidia.com/gpu"};
  for (int w = first; w < first + workloads; ++w)
    for (int h = 0; h < hours; ++h) {
      HourlyRow r;
      r.namespace_ = "team-" + std::to_string(w % 10);
      r.workload = r.namespace_ + "/w" + std::to_string(w);
      r.resource = res[w % 3];
      if (w % 3 == 2) r.gpu_product = "NVIDIA-H100-80GB-HBM3";
      r.hour = kEpoch + h * kHourMs;
      r.request_raw = static_cast<i128>(1000 + w) * kHourMs;
      r.usage_raw = r.request_raw / 3;
      r.max_raw = r.request_raw;
      r.samples = 120;
      r.covered_ms = 3570000;
      r.run_ms = kHourMs;
      rows.push_back(std::move(r));
    }
  std::sort(rows.begin(), rows.end(), HourlyRow::KeyLess);
  return rows;
}

// 10,000 workloads × 720 h, every hour sealed.
std::string MonthLedger() {
  const std::string path =
      (std::filesystem::temp_directory_path() / "arbiter-bench-warehouse-month-7.2M.db").string();
  {
    auto l = sqlite::Ledger::Open(path);
    if (l.ok()) {
      auto s = (*l)->SealedBefore();
      if (s.ok() && *s == kEpoch + 720 * kHourMs) return path;
    }
  }
  for (const char* sfx : {"", "-wal", "-shm"}) std::filesystem::remove(path + sfx);
  auto l = std::move(sqlite::Ledger::Open(path)).value();
  auto cat = *billing::PriceCatalog::Create({Book()});
  for (int first = 0; first < 10000; first += 1000)
    if (!l->Write(MonthRows(1000, 720, first), cat).ok()) return "";
  if (!l->Seal(kEpoch + 720 * kHourMs).ok()) return "";
  sqlite3_exec(l->handle(), "PRAGMA wal_checkpoint(TRUNCATE);", nullptr, nullptr, nullptr);
  return path;
}

// A fresh database "bench_month" on the server; its URL.
Result<std::string> FreshDatabase(bool clickhouse, const std::string& name = "bench_month") {
  if (clickhouse) {
    const std::string base = Env("ARBITER_CLICKHOUSE_URL", "clickhouse://127.0.0.1:18123/default");
    auto ch = clickhouse::ClickHouseStore::Open(base);
    if (!ch.ok()) return ch.status();
    if (auto r = (*ch)->Query("DROP DATABASE IF EXISTS " + name); !r.ok()) return r.status();
    if (auto r = (*ch)->Query("CREATE DATABASE " + name); !r.ok()) return r.status();
    return base.substr(0, base.rfind('/') + 1) + name;
  }
  const std::string base =
      Env("ARBITER_POSTGRES_URL", "postgresql://postgres@127.0.0.1:15432/arbiter");
  PGconn* c = PQconnectdb(base.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string m = PQerrorMessage(c);
    PQfinish(c);
    return Result<std::string>::Error("PostgreSQL: " + m);
  }
  PQclear(PQexec(c, ("DROP DATABASE IF EXISTS " + name).c_str()));
  PQclear(PQexec(c, ("CREATE DATABASE " + name).c_str()));
  PQfinish(c);
  return base.substr(0, base.rfind('/') + 1) + name;
}

std::string& SyncedUrl(bool clickhouse) {
  static std::string urls[2];
  return urls[clickhouse ? 0 : 1];
}

void BM_SyncMonth(benchmark::State& state) {
  const bool ch = state.range(0) == 0;
  static const std::string path = MonthLedger();
  if (path.empty()) return state.SkipWithError("building the month ledger failed");
  int64_t rows = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto url = FreshDatabase(ch);
    if (!url.ok()) return state.SkipWithError(url.message().c_str());
    state.ResumeTiming();
    auto l = sqlite::Ledger::Open(path);
    auto wh = warehouse::OpenWarehouse(*url);
    if (!l.ok() || !wh.ok()) return state.SkipWithError("open failed");
    auto st = warehouse::SyncLedger(**l, **wh);
    if (!st.ok()) return state.SkipWithError(st.message().c_str());
    rows = st->rows;
    SyncedUrl(ch) = *url;
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_SyncMonth)
    ->Arg(0)
    ->Arg(1)
    ->ArgNames({"pg"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->Repetitions(3);

void BM_MonthInvoiceFromWarehouse(benchmark::State& state) {
  const bool ch = state.range(0) == 0;
  const std::string url = SyncedUrl(ch);
  if (url.empty()) return state.SkipWithError("run BM_SyncMonth first");
  size_t bytes = 0;
  for (auto _ : state) {
    auto wh = warehouse::OpenWarehouse(url);
    if (!wh.ok()) return state.SkipWithError(wh.message().c_str());
    auto invs = billing::StoreInvoices(**wh, std::nullopt, std::nullopt, std::nullopt);
    if (!invs.ok() || invs->size() != 10)
      return state.SkipWithError(invs.ok() ? "wrong invoice count" : invs.message().c_str());
    bytes = report::InvoicesToJson(*invs).dump(2).size();
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MonthInvoiceFromWarehouse)
    ->Arg(0)
    ->Arg(1)
    ->ArgNames({"pg"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5);

// Baseline in the same run: the SQLite ledger's own month invoice (daily rollups).
void BM_MonthInvoiceFromSqlite(benchmark::State& state) {
  static const std::string path = MonthLedger();
  for (auto _ : state) {
    auto l = sqlite::Ledger::Open(path);
    if (!l.ok()) return state.SkipWithError(l.message().c_str());
    auto invs = sqlite::LedgerInvoices(**l, std::nullopt, std::nullopt, std::nullopt);
    if (!invs.ok() || invs->size() != 10) return state.SkipWithError("invoice failed");
    benchmark::DoNotOptimize(report::InvoicesToJson(*invs).dump(2).size());
  }
}
BENCHMARK(BM_MonthInvoiceFromSqlite)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(5);

// ---- 10M rows (issue 28): a month's invoice for every tenant from a warehouse holding the
// 10M-row ledger of bench_billing (3 months x 4,630 series, 10,000,800 rows; `bench/run.sh
// ledger10m` builds it once in $ARBITER_BENCH_CACHE, default ~/.cache/arbiter/bench). Its copy
// with every hour sealed (a sync copies sealed hours only) is kept beside it, and synced once
// per run into a fresh database "bench_10m" of each server (BM_SyncTenMillionRows; the
// servers' data directories are fresh on every start, so the warehouse is not kept). Target: a
// month's invoice under 300 ms from ClickHouse; `rollups:0` times the same invoice from the
// hourly rows (the read before the monthly rollups).
constexpr Millis kJan1 = kEpoch, kFeb1 = kJan1 + 31 * 24 * kHourMs,
                 kApr1 = kJan1 + 90 * 24 * kHourMs;

std::string BenchCache() {
  const char* env = std::getenv("ARBITER_BENCH_CACHE");
  const char* home = std::getenv("HOME");
  return env && *env ? env : std::string(home ? home : "/tmp") + "/.cache/arbiter/bench";
}

// The sealed copy of the 10M-row ledger ("" with a message when the ledger is not built).
std::string SealedTenMillionLedger(std::string* why) {
  const std::string base = BenchCache() + "/ledger-10M-3months-schema5-v1.db";
  const std::string path = BenchCache() + "/ledger-10M-3months-schema5-v1-sealed.db";
  {
    auto l = sqlite::Ledger::OpenForReading(path);
    if (l.ok()) {
      auto s = (*l)->SealedBefore();
      if (s.ok() && *s == kApr1) return path;
    }
  }
  if (!std::filesystem::exists(base)) {
    *why = base + " is not built: run bench/run.sh ledger10m first";
    return "";
  }
  for (const char* sfx : {"", "-wal", "-shm"}) std::filesystem::remove(path + sfx);
  std::error_code ec;
  std::filesystem::copy_file(base, path + ".tmp", std::filesystem::copy_options::overwrite_existing,
                             ec);
  if (ec) {
    *why = "copying " + base + ": " + ec.message();
    return "";
  }
  {
    auto l = sqlite::Ledger::Open(path + ".tmp");
    if (!l.ok() || !(*l)->Seal(kApr1).ok()) {
      *why = "sealing the copy of " + base + " failed";
      return "";
    }
    sqlite3_exec((*l)->handle(), "PRAGMA wal_checkpoint(TRUNCATE);", nullptr, nullptr, nullptr);
  }
  std::filesystem::rename(path + ".tmp", path);
  return path;
}

std::string& SyncedTenMillionUrl(bool clickhouse) {
  static std::string urls[2];
  return urls[clickhouse ? 0 : 1];
}

void BM_SyncTenMillionRows(benchmark::State& state) {
  const bool ch = state.range(0) == 0;
  std::string why;
  static const std::string path = SealedTenMillionLedger(&why);
  if (path.empty()) return state.SkipWithError(why.c_str());
  int64_t rows = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto url = FreshDatabase(ch, "bench_10m");
    if (!url.ok()) return state.SkipWithError(url.message().c_str());
    state.ResumeTiming();
    auto l = sqlite::Ledger::Open(path);
    auto wh = warehouse::OpenWarehouse(*url);
    if (!l.ok() || !wh.ok()) return state.SkipWithError("open failed");
    auto st = warehouse::SyncLedger(**l, **wh);
    if (!st.ok()) return state.SkipWithError(st.message().c_str());
    rows = st->rows;
    SyncedTenMillionUrl(ch) = *url;
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_SyncTenMillionRows)
    ->Arg(0)
    ->Arg(1)
    ->ArgNames({"pg"})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->Repetitions(1);

// January (3,444,720 of the 10,000,800 rows), every tenant, JSON: `arbiter invoice --db URL
// --month 2026-01 -o json` without the process start. Checked byte for byte against the SQLite
// ledger's invoice.
void BM_MonthInvoiceTenMillionRows(benchmark::State& state) {
  const bool ch = state.range(0) == 0, rollups = state.range(1) == 1;
  const std::string url = SyncedTenMillionUrl(ch);
  if (url.empty()) return state.SkipWithError("run BM_SyncTenMillionRows first");
  static std::string want;
  if (want.empty()) {
    std::string why;
    auto l = sqlite::Ledger::OpenForReading(SealedTenMillionLedger(&why));
    if (!l.ok()) return state.SkipWithError(l.message().c_str());
    auto invs = sqlite::LedgerInvoices(**l, std::nullopt, kJan1, kFeb1);
    if (!invs.ok()) return state.SkipWithError(invs.message().c_str());
    want = report::InvoicesToJson(*invs).dump(2);
  }
  std::string got;
  for (auto _ : state) {
    auto wh = warehouse::OpenWarehouse(url);
    if (!wh.ok()) return state.SkipWithError(wh.message().c_str());
    if (!rollups) {
      if (auto* c = dynamic_cast<clickhouse::ClickHouseStore*>(wh->get())) c->ReadHourlyOnly(true);
      if (auto* p = dynamic_cast<postgres::PostgresStore*>(wh->get())) p->ReadHourlyOnly(true);
    }
    auto invs = billing::StoreInvoices(**wh, std::nullopt, kJan1, kFeb1);
    if (!invs.ok() || invs->size() != 10)
      return state.SkipWithError(invs.ok() ? "wrong invoice count" : invs.message().c_str());
    got = report::InvoicesToJson(*invs).dump(2);
  }
  if (got != want) return state.SkipWithError("the invoice differs from the SQLite ledger's");
  state.counters["json_bytes"] = static_cast<double>(got.size());
}
BENCHMARK(BM_MonthInvoiceTenMillionRows)
    ->Args({0, 1})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Args({1, 0})
    ->ArgNames({"pg", "rollups"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5);

}  // namespace
}  // namespace arbiter

BENCHMARK_MAIN();
