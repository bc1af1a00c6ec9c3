// Billing benchmarks (issue 4): fold usage samples into hourly rollups, write ledger rows to
// SQLite, build a month's invoices for 10,000 workloads (7.2M hourly rows).
// Run: build/bench_billing --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <streambuf>

#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "core/billing/invoice.h"

namespace {

using namespace arbiter;           // NOLINT
using namespace arbiter::billing;  // NOLINT

constexpr Millis kEpoch = 1767225600000;

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

// 1000 series (500 cpu counters, 500 memory gauges), each a 24 h run scraped every 30 s:
// 2880 samples a series, 2.88M samples per iteration.
void BM_FoldSamplesIntoHourlyRollups(benchmark::State& state) {
  const Millis interval = 30000;
  const int series = 1000;
  std::vector<RunSegment> segs(series);
  std::vector<std::vector<std::pair<Millis, i128>>> samples(series);
  int64_t total = 0;
  for (int i = 0; i < series; ++i) {
    RunSegment& s = segs[static_cast<size_t>(i)];
    s.workload = "team-" + std::to_string(i % 10) + "/w" + std::to_string(i);
    s.namespace_ = "team-" + std::to_string(i % 10);
    s.requests = {{"cpu", 16000}, {"memory", int64_t{64} << 30}};
    s.usage = {{"cpu", 4000 + i}, {"memory", int64_t{16} << 30}};
    s.start = kEpoch;
    s.end = kEpoch + 24 * kHourMs;
    ScrapeSamples(s, i % 2 ? "memory" : "cpu", interval, &samples[static_cast<size_t>(i)]);
    total += static_cast<int64_t>(samples[static_cast<size_t>(i)].size());
  }
  std::vector<HourlyRow> out;
  out.reserve(static_cast<size_t>(series) * 25);
  for (auto _ : state) {
    out.clear();
    for (int i = 0; i < series; ++i) {
      SeriesFolder f(segs[static_cast<size_t>(i)], i % 2 ? "memory" : "cpu", &out, interval);
      for (const auto& [t, v] : samples[static_cast<size_t>(i)]) f.Add(t, v);
      f.Finish();
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * total);
  state.counters["rows"] = static_cast<double>(out.size());
}
BENCHMARK(BM_FoldSamplesIntoHourlyRollups)->Unit(benchmark::kMillisecond);

std::vector<HourlyRow> MonthRows(int workloads, int hours, int first = 0) {
  std::vector<HourlyRow> rows;
  rows.reserve(static_cast<size_t>(workloads) * static_cast<size_t>(hours));
  const char* res[] = {"cpu", "memory", "nvidia.com/gpu"};
  for (int w = first; w < first + workloads; ++w) {
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
  }
  std::sort(rows.begin(), rows.end(), HourlyRow::KeyLess);
  return rows;
}

// 1M hourly rows (10,000 workloads × 100 hours) written to a fresh SQLite ledger, one
// transaction, WAL, synchronous=FULL.
void BM_LedgerWriteOneMillionRows(benchmark::State& state) {
  auto rows = MonthRows(10000, 100);
  auto cat = *PriceCatalog::Create({Book()});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("bench-ledger-" + std::to_string(getpid()) + ".db"))
                               .string();
  for (auto _ : state) {
    state.PauseTiming();
    for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
    state.ResumeTiming();
    auto l = sqlite::Ledger::Open(path);
    if (!l.ok()) state.SkipWithError(l.message().c_str());
    auto st = (*l)->Write(rows, cat, kEpoch + 100 * kHourMs);
    if (!st.ok() || st->inserted != static_cast<int64_t>(rows.size()))
      state.SkipWithError("write failed");
  }
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows.size()));
}
BENCHMARK(BM_LedgerWriteOneMillionRows)->Unit(benchmark::kMillisecond)->Iterations(1);

// Invoices read back from a ledger holding 1M rows (10,000 workloads × 100 hours): SQLite read
// of every current row + exact re-rating.
void BM_LedgerInvoicesFromOneMillionRows(benchmark::State& state) {
  auto rows = MonthRows(10000, 100);
  auto cat = *PriceCatalog::Create({Book()});
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("bench-ledger-read-" + std::to_string(getpid()) + ".db"))
                               .string();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
  auto l = std::move(sqlite::Ledger::Open(path)).value();
  if (!l->Write(rows, cat).ok()) state.SkipWithError("write failed");
  for (auto _ : state) {
    auto invs = sqlite::LedgerInvoices(*l, std::nullopt, std::nullopt, std::nullopt);
    if (!invs.ok() || invs->size() != 10) state.SkipWithError("invoice failed");
    benchmark::DoNotOptimize(invs);
  }
  l.reset();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows.size()));
}
BENCHMARK(BM_LedgerInvoicesFromOneMillionRows)->Unit(benchmark::kMillisecond)->Iterations(1);

// A month (720 hours) for 10,000 workloads: 7.2M hourly rows -> one invoice per namespace.
void BM_MonthInvoice10kWorkloads(benchmark::State& state) {
  static const std::vector<HourlyRow> rows = MonthRows(10000, 720);
  auto cat = *PriceCatalog::Create({Book()});
  for (auto _ : state) {
    auto invs = BuildInvoices(rows, cat);
    if (!invs.ok() || invs->size() != 10) state.SkipWithError("invoice failed");
    benchmark::DoNotOptimize(invs);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(rows.size()));
}
BENCHMARK(BM_MonthInvoice10kWorkloads)->Unit(benchmark::kMillisecond)->Iterations(1);

// A benchmark ledger built by an earlier run (marked complete when its last row was written);
// otherwise any partial file is removed and false returned.
bool CachedBenchLedger(const std::string& path) {
  {
    auto l = sqlite::Ledger::Open(path);
    if (l.ok()) {
      sqlite3_stmt* st = nullptr;
      bool done = false;
      if (sqlite3_prepare_v2((*l)->handle(), "SELECT value FROM meta WHERE key = 'bench_complete'",
                             -1, &st, nullptr) == SQLITE_OK)
        done = sqlite3_step(st) == SQLITE_ROW;
      sqlite3_finalize(st);
      if (done) return true;
    }
  }
  for (const char* sfx : {"", "-wal", "-shm"}) std::filesystem::remove(path + sfx);
  return false;
}

// The month ledger of BM_MonthInvoice10kWorkloads as a SQLite file: 7.2M hourly rows written
// with Ledger::Write in batches of 1,000 workloads. Built once (about a minute) and kept in the
// temp directory for later runs; the name carries the schema.
std::string MonthLedgerFile() {
  const std::string path =
      (std::filesystem::temp_directory_path() / "arbiter-bench-month-7.2M-schema5.db").string();
  if (CachedBenchLedger(path)) return path;
  auto l = std::move(sqlite::Ledger::Open(path)).value();
  auto cat = *PriceCatalog::Create({Book()});
  for (int first = 0; first < 10000; first += 1000)
    if (!l->Write(MonthRows(1000, 720, first), cat).ok()) return "";
  sqlite3_exec(l->handle(),
               "INSERT INTO meta VALUES ('bench_complete', '1'); PRAGMA wal_checkpoint(TRUNCATE);",
               nullptr, nullptr, nullptr);
  return path;
}

// The real path of `arbiter invoice --db month.db -o json`: open the ledger file, read the month
// (daily rollups for whole days), re-rate exactly, render the JSON. Target: < 2 s.
void BM_MonthInvoiceFromLedgerFile(benchmark::State& state) {
  static const std::string path = MonthLedgerFile();
  if (path.empty()) {
    state.SkipWithError("building the month ledger failed");
    return;
  }
  const auto read =
      state.range(0) == 0 ? sqlite::InvoiceRead::kRollups : sqlite::InvoiceRead::kHourlyRows;
  size_t bytes = 0;
  for (auto _ : state) {
    auto l = sqlite::Ledger::Open(path);
    if (!l.ok()) state.SkipWithError(l.message().c_str());
    auto invs = sqlite::LedgerInvoices(**l, std::nullopt, std::nullopt, std::nullopt, read);
    if (!invs.ok() || invs->size() != 10) state.SkipWithError("invoice failed");
    bytes = report::InvoicesToJson(*invs).dump(2).size();
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations() * 7200000);
}
// 0: daily rollups + hourly edges (the default); 1: every hourly row (the old read).
BENCHMARK(BM_MonthInvoiceFromLedgerFile)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// ---- 10M rows (issue 28): a month's invoice costs what the month holds, not the ledger.
//
// Three months (2026-01-01 .. 2026-04-01, 2,160 hours) of 4,630 series (workloads of 10
// tenants, a resource each): 10,000,800 hourly rows, about 2.7 GB. Built once with
// Ledger::Write in batches of 250 workloads (several minutes) and kept in $ARBITER_BENCH_CACHE
// (default ~/.cache/arbiter/bench); the name carries the layout, so a changed generator builds
// a new file.
constexpr int kScaleWorkloads = 4630;
constexpr int kScaleHours = 2160;
constexpr Millis kFeb1 = kEpoch + 31 * 24 * kHourMs;
constexpr Millis kMar1 = kFeb1 + 28 * 24 * kHourMs;
constexpr Millis kApr1 = kMar1 + 31 * 24 * kHourMs;

std::string ScaleLedgerFile() {
  const char* env = std::getenv("ARBITER_BENCH_CACHE");
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir =
      env && *env ? std::filesystem::path(env)
                  : std::filesystem::path(home ? home : "/tmp") / ".cache" / "arbiter" / "bench";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ledger-10M-3months-schema5-v1.db").string();
  if (CachedBenchLedger(path)) return path;
  auto l = std::move(sqlite::Ledger::Open(path)).value();
  auto cat = *PriceCatalog::Create({Book()});
  for (int first = 0; first < kScaleWorkloads; first += 250)
    if (!l->Write(MonthRows(std::min(250, kScaleWorkloads - first), kScaleHours, first), cat, kFeb1)
             .ok())
      return "";
  sqlite3_exec(l->handle(),
               "INSERT INTO meta VALUES ('bench_complete', '1'); PRAGMA wal_checkpoint(TRUNCATE);",
               nullptr, nullptr, nullptr);
  return path;
}

// `arbiter invoice --db L --month M -o json` on the 10M-row ledger, for every tenant: open it as
// the command does, bill the month, render the JSON. Arg: 0 January, 1 March. Target: < 100 ms.
void BM_MonthInvoiceFrom10MRowLedger(benchmark::State& state) {
  static const std::string path = ScaleLedgerFile();
  if (path.empty()) {
    state.SkipWithError("building the 10M-row ledger failed");
    return;
  }
  const Millis from = state.range(0) == 0 ? kEpoch : kMar1;
  const Millis to = state.range(0) == 0 ? kFeb1 : kApr1;
  size_t bytes = 0;
  for (auto _ : state) {
    auto l = sqlite::Ledger::OpenForReading(path);
    if (!l.ok()) {
      state.SkipWithError(l.message().c_str());
      break;
    }
    auto invs = sqlite::LedgerInvoices(**l, std::nullopt, from, to);
    if (!invs.ok() || invs->size() != 10) {
      state.SkipWithError(invs.ok() ? "not 10 invoices" : invs.message().c_str());
      break;
    }
    bytes = report::InvoicesToJson(*invs).dump(2).size();
  }
  state.counters["json_bytes"] = static_cast<double>(bytes);
  state.counters["month_rows"] =
      static_cast<double>(kScaleWorkloads) * static_cast<double>((to - from) / kHourMs);
}
BENCHMARK(BM_MonthInvoiceFrom10MRowLedger)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// `arbiter ledger export --db L --month 2026-03 --namespace team-3` (FOCUS CSV, streamed) on the
// 10M-row ledger: 463 workloads x 744 hours, 344,472 rows.
void BM_MonthExportFrom10MRowLedger(benchmark::State& state) {
  static const std::string path = ScaleLedgerFile();
  if (path.empty()) {
    state.SkipWithError("building the 10M-row ledger failed");
    return;
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    auto l = sqlite::Ledger::OpenForReading(path);
    if (!l.ok()) {
      state.SkipWithError(l.message().c_str());
      break;
    }
    sqlite::RowFilter f;
    f.namespace_ = "team-3";
    f.from = kMar1;
    f.to = kApr1;
    // Counts what is written and keeps nothing: the export's own memory is what RSS shows.
    struct Counter : std::streambuf {
      int64_t n = 0;
      int_type overflow(int_type c) override {
        ++n;
        return c;
      }
      std::streamsize xsputn(const char*, std::streamsize k) override {
        n += k;
        return k;
      }
    } counter;
    std::ostream out(&counter);
    if (Status s = (*l)->ExportCsv(f, out); !s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
    bytes = counter.n;
  }
  state.counters["csv_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_MonthExportFrom10MRowLedger)->Unit(benchmark::kMillisecond)->Iterations(1);

// What every read paid before issue 28: PRAGMA quick_check of the whole 10M-row file (now only
// after an unclean shutdown and in `ledger check`).
void BM_QuickCheckOf10MRowLedger(benchmark::State& state) {
  static const std::string path = ScaleLedgerFile();
  if (path.empty()) {
    state.SkipWithError("building the 10M-row ledger failed");
    return;
  }
  for (auto _ : state) {
    auto l = sqlite::Ledger::OpenForReading(path);
    auto problems =
        l.ok() ? (*l)->CheckIntegrity(false) : Result<std::vector<std::string>>(l.status());
    if (!problems.ok() || !problems->empty()) state.SkipWithError("quick_check failed");
  }
  state.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(path));
}
BENCHMARK(BM_QuickCheckOf10MRowLedger)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
