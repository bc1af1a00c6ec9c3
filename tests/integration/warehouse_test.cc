// `arbiter ledger sync` and `arbiter invoice --db clickhouse://|postgresql://` against real
// servers: ClickHouse 18.16 and PostgreSQL 15 (scripts/services/). Invoices from the warehouse
// equal the SQLite ledger's byte for byte (digest included); a sync killed with SIGKILL at many
// moments and re-run leaves exactly the SQLite totals.
#include "adapters/warehouse/warehouse.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "adapters/clickhouse/clickhouse_store.h"
#include "adapters/postgres/postgres_store.h"
#include "adapters/report/invoice_json.h"
#include "integration/services.h"
#include "integration/warehouse_fixture.h"

namespace arbiter {
namespace {

using testing::Arbiter;
using testing::RunCommandSplit;
using testing::Scratch;

enum class Backend { kClickHouse, kPostgres };

// A fresh database of its own per test (tests run in parallel): its URL.
std::string FreshDatabase(Backend b, const std::string& name) {
  const std::string db = "it_" + name + "_" + std::to_string(getpid());
  if (b == Backend::kClickHouse) {
    auto ch = clickhouse::ClickHouseStore::Open(testing::ClickHouseUrl());
    EXPECT_TRUE(ch.ok()) << ch.message();
    if (!ch.ok()) return "";
    auto d = (*ch)->Query("DROP DATABASE IF EXISTS " + db);
    EXPECT_TRUE(d.ok()) << d.message();
    auto c = (*ch)->Query("CREATE DATABASE " + db);
    EXPECT_TRUE(c.ok()) << c.message();
    return "clickhouse://127.0.0.1:" +
           testing::ClickHouseUrl().substr(
               testing::ClickHouseUrl().rfind(':') + 1,
               testing::ClickHouseUrl().rfind('/') - testing::ClickHouseUrl().rfind(':') - 1) +
           "/" + db;
  }
  const std::string base = testing::PostgresUrl();
  PGconn* c = PQconnectdb(base.c_str());
  EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  PQclear(PQexec(c, ("DROP DATABASE IF EXISTS " + db).c_str()));
  PGresult* r = PQexec(c, ("CREATE DATABASE " + db).c_str());
  EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(c);
  PQclear(r);
  PQfinish(c);
  return base.substr(0, base.rfind('/') + 1) + db;
}

const char* kFrom = "2026-03-01T00:00:00Z";

// Equal texts, or the first line where they differ (invoices are long).
::testing::AssertionResult Same(const std::string& a, const std::string& b) {
  if (a == b) return ::testing::AssertionSuccess();
  std::istringstream x(a), y(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool ea = !std::getline(x, la), eb = !std::getline(y, lb);
    if (ea || eb || la != lb)
      return ::testing::AssertionFailure() << "line " << n << ": \"" << (ea ? "<end>" : la)
                                           << "\" vs \"" << (eb ? "<end>" : lb) << "\"";
  }
}

// The "total" of every invoice, by namespace.
std::map<std::string, std::string> Totals(const std::string& json) {
  std::map<std::string, std::string> t;
  for (const auto& inv : nlohmann::json::parse(json)) t[inv["namespace"]] = inv["total"];
  return t;
}

std::string Invoices(const std::filesystem::path& dir, const std::string& db, const std::string& to,
                     const std::string& extra = "") {
  auto r = RunCommandSplit(Arbiter() + " invoice --db '" + db + "' --from " + kFrom + " --to " +
                               to + " -o json " + extra,
                           dir);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.out;
}

std::string Sync(const std::filesystem::path& dir, const std::string& db, const std::string& url,
                 const std::string& extra = "") {
  auto r = RunCommandSplit(
      Arbiter() + " ledger sync -q --db " + db + " --to '" + url + "' " + extra, dir);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r.out;
}

void SyncedInvoicesEqualTheLedgers(Backend b, const std::string& name) {
  auto dir = Scratch(name);
  const std::string url = FreshDatabase(b, name);
  ASSERT_FALSE(url.empty());
  const std::string db = (dir / "l.db").string();
  const Millis seal = testing::kWarehouseStart + 60 * billing::kHourMs;  // 2026-03-03T12:00Z
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    ASSERT_TRUE(testing::WriteWarehouseLedger(**l, 60, 72, seal).ok());
  }
  auto out = Sync(dir, db, url);
  EXPECT_NE(out.find("the warehouse holds every hour before 2026-03-03T12:00:00Z"),
            std::string::npos)
      << out;
  const std::string sealed = "2026-03-03T12:00:00Z";
  const std::string want = Invoices(dir, db, sealed);
  ASSERT_GT(want.size(), 1000u);
  EXPECT_TRUE(
      Same(Invoices(dir, url, sealed), want));  // every namespace, idle spread, two versions
  EXPECT_TRUE(Same(Invoices(dir, url, sealed, "--namespace ns-1"),
                   Invoices(dir, db, sealed, "--namespace ns-1")));
  // Inner windows, a partial day and one across the mid-day version change.
  for (auto [f, t] : {std::pair{"2026-03-01T05:00:00Z", "2026-03-02T07:00:00Z"},
                      std::pair{"2026-03-02T06:00:00Z", "2026-03-02T09:00:00Z"}}) {
    auto a = RunCommandSplit(
        Arbiter() + " invoice --db " + db + " --from " + f + " --to " + t + " -o json", dir);
    auto w = RunCommandSplit(
        Arbiter() + " invoice --db '" + url + "' --from " + f + " --to " + t + " -o json", dir);
    EXPECT_TRUE(Same(a.out, w.out)) << f << " .. " << t;
  }
  // Unsealed hours are not copied: the warehouse's whole history ends at the seal.
  EXPECT_EQ(Totals(Invoices(dir, url, "2026-03-05T00:00:00Z")), Totals(want));
  // A second sync copies nothing new.
  EXPECT_NE(Sync(dir, db, url).find(": 0 rows of new sealed hours, 0 late rows"),
            std::string::npos);
  // A late correction of a sealed hour (a new version in SQLite) reaches the warehouse; then
  // sealing more hours copies them incrementally.
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    auto read = (*l)->Read({std::string("ns-0"), testing::kWarehouseStart + 10 * billing::kHourMs,
                            testing::kWarehouseStart + 11 * billing::kHourMs, false});
    ASSERT_TRUE(read.ok());
    std::vector<billing::HourlyRow> rows = std::move(read).value();
    ASSERT_FALSE(rows.empty());
    for (auto& r : rows) r.usage_raw += 123456789;
    auto cat = billing::PriceCatalog::Create(testing::WarehouseBooks());
    auto st = (*l)->Write(rows, *cat, testing::kWarehouseStart + 72 * billing::kHourMs);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->corrected, static_cast<int64_t>(rows.size()));
  }
  auto again = Sync(dir, db, url);
  EXPECT_NE(again.find("late rows"), std::string::npos);
  EXPECT_EQ(again.find(" 0 late rows"), std::string::npos) << again;
  const std::string all = "2026-03-04T00:00:00Z";
  const std::string want2 = Invoices(dir, db, all);
  EXPECT_NE(want2, want);
  EXPECT_TRUE(Same(Invoices(dir, url, all), want2));
}

// SIGKILL a running `arbiter ledger sync` after `after_ms` (small batches: many inserts).
void KillSyncAfter(const std::string& db, const std::string& url, int after_ms) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(Arbiter().c_str(), "arbiter", "ledger", "sync", "-q", "--batch-rows", "700", "--db",
          db.c_str(), "--to", url.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

void KilledSyncsLeaveExactlyTheLedgersTotals(Backend b, const std::string& name) {
  auto dir = Scratch(name);
  const std::string url = FreshDatabase(b, name);
  ASSERT_FALSE(url.empty());
  const std::string db = (dir / "l.db").string();
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE(testing::WriteWarehouseLedger(**l, 150, 72,
                                              testing::kWarehouseStart + 72 * billing::kHourMs)
                    .ok());
  }
  const std::string to = "2026-03-04T00:00:00Z";
  const std::string want = Invoices(dir, db, to);
  // How long a whole sync takes (into a scratch database), to spread the kills over it.
  const std::string probe = FreshDatabase(b, name + "_probe");
  auto t0 = std::chrono::steady_clock::now();
  Sync(dir, db, probe, "--batch-rows 700");
  const int full_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  ASSERT_GT(full_ms, 0);
  // Three rounds on fresh databases; in each, five syncs killed at increasing moments (each
  // restarts from the warehouse's watermark, still unset), then one run to the end.
  int kills = 0, mid_sync = 0;
  for (int round = 0; round < 3; ++round) {
    const std::string url_r = round == 0 ? url : FreshDatabase(b, name + std::to_string(round));
    for (int k = 0; k < 5; ++k) {
      const int after = (round * 5 + k) * full_ms / 15 + 2;
      KillSyncAfter(db, url_r, after);
      ++kills;
      auto wh = warehouse::OpenWarehouse(url_r);
      ASSERT_TRUE(wh.ok()) << wh.message();
      auto wm = (*wh)->SyncedBefore();
      auto spans = (*wh)->ReadSpans({});
      if (wm.ok() && *wm == INT64_MIN && spans.ok() && !spans->empty())
        ++mid_sync;  // rows copied, not all
    }
    Sync(dir, db, url_r);
    EXPECT_TRUE(Same(Invoices(dir, url_r, to), want))
        << "round " << round << ", kills over " << full_ms << " ms";
    EXPECT_NE(Sync(dir, db, url_r).find(": 0 rows of new sealed hours"), std::string::npos);
  }
  EXPECT_GE(mid_sync, 3) << kills << " kills over " << full_ms
                         << " ms: too few landed in the middle of a sync";
  std::cout << kills << " kills over a " << full_ms << " ms sync, " << mid_sync
            << " in the middle of copying rows\n";
}

// The rows a sync reports copying ("synced ...: N rows of new sealed hours, L late rows").
int64_t CopiedRows(const std::string& out) {
  const auto p = out.find(": ");
  const auto q = out.find(" rows of new sealed hours, ");
  if (p == std::string::npos || q == std::string::npos) return -1;
  const auto l = q + 27;
  return std::stoll(out.substr(p + 2, q - p - 2)) + std::stoll(out.substr(l, out.find(' ', l) - l));
}

// Issue 28: a sync killed with SIGKILL in the middle resumes from its last committed batch: the
// re-run sends only what that batch's progress does not cover (plus rows changed since, here new
// versions of rows it had copied), and the warehouse still ends equal to the ledger.
void KilledSyncResumes(Backend b, const std::string& name) {
  auto dir = Scratch(name);
  const std::string db = (dir / "l.db").string();
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE(testing::WriteWarehouseLedger(**l, 150, 72,
                                              testing::kWarehouseStart + 72 * billing::kHourMs)
                    .ok());
  }
  std::string ledger_id;
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    auto c = (*l)->Changes();
    ASSERT_TRUE(c.ok());
    ledger_id = c->ledger_id;
  }
  const std::string probe = FreshDatabase(b, name + "_probe");
  auto t0 = std::chrono::steady_clock::now();
  const int64_t total = CopiedRows(Sync(dir, db, probe, "--batch-rows 700"));
  const int full_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  ASSERT_GT(total, 10000);
  // Kill until a kill lands after some batches and before the end (a progress, no mark).
  std::optional<billing::SyncProgress> progress;
  std::string url;  // the warehouse of the kill that landed mid-sync
  for (int k = 1; k <= 8 && !progress; ++k) {
    const std::string url_k = FreshDatabase(b, name + std::to_string(k));
    ASSERT_FALSE(url_k.empty());
    KillSyncAfter(db, url_k, full_ms * (k + 3) / 12);
    auto wh = warehouse::OpenWarehouse(url_k);
    ASSERT_TRUE(wh.ok()) << wh.message();
    auto mark = (*wh)->MarkOf(ledger_id);
    auto p = (*wh)->ProgressOf(ledger_id);
    if (mark.ok() && !*mark && p.ok() && *p) {
      progress = **p;
      url = url_k;
    }
  }
  ASSERT_TRUE(progress.has_value())
      << "no kill landed in the middle of a " << full_ms << " ms sync";
  // New versions of rows the killed sync had copied (ns-0 sorts first): they must be sent again.
  int64_t changed = 0;
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    auto read = (*l)->Read({std::string("ns-0"), testing::kWarehouseStart,
                            testing::kWarehouseStart + billing::kHourMs, false});
    ASSERT_TRUE(read.ok());
    std::vector<billing::HourlyRow> rows = std::move(read).value();
    ASSERT_FALSE(rows.empty());
    for (auto& r : rows) r.usage_raw += 987654321;
    auto cat = billing::PriceCatalog::Create(testing::WarehouseBooks());
    auto st = (*l)->Write(rows, *cat, testing::kWarehouseStart + 72 * billing::kHourMs);
    ASSERT_TRUE(st.ok());
    changed = st->corrected;
  }
  const std::string to = "2026-03-04T00:00:00Z";
  const std::string want = Invoices(dir, db, to);
  const std::string out = Sync(dir, db, url, "--batch-rows 700");
  EXPECT_NE(out.find("(resumed an interrupted sync)"), std::string::npos) << out;
  const int64_t resumed = CopiedRows(out);
  EXPECT_LT(resumed, total) << out;
  EXPECT_GE(resumed, changed) << out;
  EXPECT_TRUE(Same(Invoices(dir, url, to), want));
  EXPECT_NE(Sync(dir, db, url).find(": 0 rows of new sealed hours, 0 late rows"),
            std::string::npos);
  std::cout << "killed after step " << progress->step << " of a " << full_ms
            << " ms sync; the re-run sent " << resumed << " of " << total << " rows (" << changed
            << " changed since)\n";
}

void UnreachableServerIsAClearError(Backend b, const std::string& name) {
  auto dir = Scratch(name);
  const std::string db = (dir / "l.db").string();
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok());
    ASSERT_TRUE(
        testing::WriteWarehouseLedger(**l, 3, 2, testing::kWarehouseStart + billing::kHourMs).ok());
  }
  const std::string url = b == Backend::kClickHouse ? "clickhouse://127.0.0.1:1/default"
                                                    : "postgresql://postgres@127.0.0.1:1/arbiter";
  auto r = RunCommandSplit(Arbiter() + " ledger sync -q --db " + db + " --to '" + url + "'", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("unreachable"), std::string::npos) << r.err;
  auto i = RunCommandSplit(Arbiter() + " invoice --db '" + url + "'", dir);
  EXPECT_EQ(i.rc, 1);
  EXPECT_NE(i.err.find("unreachable"), std::string::npos) << i.err;
}

// A new key written into an hour that is already sealed and copied (a job that ran in a synced
// hour and reached the ledger late: `invoice ingest` of a late segment) reaches the warehouse on
// the next sync, and so does a late correction of a synced hour. Regression: sync used to copy by
// hour watermark plus rows with version > 1, and a late new key has version 1: the next sync said
// "up to date" and the warehouse billed less than the ledger.
void LateRowsReachTheWarehouse(Backend b, const std::string& name) {
  auto dir = Scratch(name);
  const std::string url = FreshDatabase(b, name);
  ASSERT_FALSE(url.empty());
  const std::string db = (dir / "l.db").string();
  const std::string book = testing::SourceDir() + "/tests/data/billing/pricebook.json";
  auto ingest = [&](const std::string& file, const std::string& lines, const std::string& extra) {
    std::ofstream(dir / file) << lines;
    auto r = RunCommandSplit(Arbiter() + " invoice ingest --db " + db + " --segments " +
                                 (dir / file).string() + " --pricebook " + book + " " + extra,
                             dir);
    EXPECT_EQ(r.rc, 0) << r.err;
  };
  ingest("on-time.jsonl",
         R"({"workload":"team-a/train","node":"n1","requests":{"cpu":"8","memory":"16Gi"},)"
         R"("start":"2026-01-01T00:00:00Z","end":"2026-01-01T04:00:00Z"})"
         "\n",
         "--seal-before 2026-01-01T03:00:00Z");
  Sync(dir, db, url);
  const std::string from = "2026-01-01T00:00:00Z", to = "2026-01-01T03:00:00Z";
  auto invoices = [&](const std::string& where) {
    auto r = RunCommandSplit(
        Arbiter() + " invoice --db '" + where + "' --from " + from + " --to " + to + " -o json",
        dir);
    EXPECT_EQ(r.rc, 0) << r.err;
    return r.out;
  };
  ASSERT_TRUE(Same(invoices(url), invoices(db)));
  // Late: a new workload of an existing tenant and a new tenant, both in sealed, synced hours.
  ingest("late.jsonl",
         R"({"workload":"team-a/late","node":"n2","requests":{"cpu":"2"},)"
         R"("start":"2026-01-01T01:00:00Z","end":"2026-01-01T02:30:00Z"})"
         "\n"
         R"({"workload":"team-b/late","node":"n2","requests":{"cpu":"4"},)"
         R"("start":"2026-01-01T00:00:00Z","end":"2026-01-01T01:00:00Z"})"
         "\n",
         "");
  const std::string want = invoices(db);
  ASSERT_NE(want.find("team-b"), std::string::npos);
  auto out = Sync(dir, db, url);
  EXPECT_EQ(out.find("up to date"), std::string::npos) << out;
  EXPECT_TRUE(Same(invoices(url), want)) << out;
  // Nothing new: nothing copied.
  EXPECT_NE(Sync(dir, db, url).find(": 0 rows of new sealed hours, 0 late rows"),
            std::string::npos);
}

// The property behind sync: after any interleaving of writes (new keys in sealed and unsealed
// hours, in-place updates, new versions of sealed hours), seals and syncs, each sync leaves the
// warehouse's invoices over the sealed hours byte-identical to the SQLite ledger's. Seeded random
// interleavings, one ledger and one fresh warehouse database per seed; run against each server,
// so SQLite, ClickHouse and PostgreSQL give the same bytes.
void RandomInterleavingsConverge(Backend b, const std::string& name) {
  const Millis t0 = testing::kWarehouseStart;
  auto cat = billing::PriceCatalog::Create(testing::WarehouseBooks());
  ASSERT_TRUE(cat.ok());
  int syncs = 0, late_rows = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    auto dir = Scratch(name + std::to_string(seed));
    const std::string url = FreshDatabase(b, name + std::to_string(seed));
    ASSERT_FALSE(url.empty());
    auto l = sqlite::Ledger::Open((dir / "l.db").string());
    ASSERT_TRUE(l.ok()) << l.message();
    auto wh = warehouse::OpenWarehouse(url);
    ASSERT_TRUE(wh.ok()) << wh.message();
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    Millis sealed = t0;
    for (int step = 0; step < 40; ++step) {
      const int op = pick(10);
      if (op < 6) {
        // A write: a few segments of random workloads over random hours of the first 40
        // (across the PriceBook change at hour 30), sealed or not; a workload written again gets
        // new content (an update in place, or a new version of a sealed hour).
        std::vector<billing::RunSegment> segs;
        for (int k = 0, n = 1 + pick(3); k < n; ++k) {
          billing::RunSegment g;
          g.namespace_ = "ns-" + std::to_string(pick(3));
          g.workload = g.namespace_ + "/w" + std::to_string(pick(5));
          g.node = "node-" + std::to_string(pick(2));
          g.start = t0 + pick(40) * billing::kHourMs + pick(4) * 900000;
          g.end = g.start + (1 + pick(150)) * 60000;
          g.requests.Set("cpu", 250 * (1 + pick(8)));
          g.usage.Set("cpu", 100 * (1 + pick(10)));
          if (pick(3) == 0) g.requests.Set("memory", (int64_t{1} << 30) * (1 + pick(4)));
          segs.push_back(std::move(g));
        }
        auto rows = billing::MeterSegments(segs, {});
        ASSERT_TRUE(rows.ok()) << rows.message();
        for (const auto& r : *rows) late_rows += r.hour < sealed ? 1 : 0;
        auto st = (*l)->Write(*rows, *cat, pick(4) == 0 ? std::optional(sealed) : std::nullopt);
        ASSERT_TRUE(st.ok()) << st.message();
      } else if (op < 8) {
        sealed = std::min(t0 + 44 * billing::kHourMs, sealed + pick(12) * billing::kHourMs);
        ASSERT_TRUE((*l)->Seal(sealed).ok());
      } else {
        auto st = warehouse::SyncLedger(**l, **wh, {static_cast<size_t>(1 + pick(50)), {}});
        ASSERT_TRUE(st.ok()) << st.message();
        ++syncs;
        if (sealed == t0) continue;
        auto want = sqlite::LedgerInvoices(**l, std::nullopt, t0, sealed);
        auto got = billing::StoreInvoices(**wh, std::nullopt, t0, sealed);
        ASSERT_TRUE(want.ok() && got.ok()) << want.message() << got.message();
        ASSERT_TRUE(
            Same(report::InvoicesToJson(*got).dump(1), report::InvoicesToJson(*want).dump(1)))
            << "seed " << seed << ", step " << step << ", sealed before " << FormatRfc3339(sealed);
      }
    }
  }
  std::cout << syncs << " syncs compared, " << late_rows << " rows written into sealed hours\n";
  EXPECT_GT(late_rows, 0);
}

// Issue 28: the warehouse's monthly rollups. A ledger over three calendar months, its PriceBook
// versions taking effect on Jan 1 and Feb 1 (months' first instants: the months stay whole) and
// mid-March (March is read hourly). Seeded random interleavings of writes (runs of up to three
// days, across month boundaries, some into sealed hours: late new keys and new versions), seals
// and syncs in random batch sizes; after every sync the invoices of whole months, of windows
// with partial months and of the whole history read through the rollups equal those read from
// the hourly rows, and SQLite's, byte for byte. Then syncs killed at several moments into a
// fresh database, a last sync, and the same comparisons.
const Millis kJan1 = 1767225600000, kFeb1 = kJan1 + 31 * 24 * billing::kHourMs,
             kMar1 = kFeb1 + 28 * 24 * billing::kHourMs, kApr1 = kMar1 + 31 * 24 * billing::kHourMs;

std::vector<PriceBook> MonthBooks() {
  std::vector<PriceBook> books = testing::WarehouseBooks();
  books[0].effective_from = kJan1;
  books[1].effective_from = kFeb1;
  PriceBook c = books[1];
  c.effective_from = kMar1 + (9 * 24 + 6) * billing::kHourMs;  // 2026-03-10T06:00Z
  c.prices["memory"] = Decimal::FromUnits(12000000);
  books.push_back(c);
  return books;
}

// The same invoices from SQLite, from the warehouse through its rollups and from its hourly rows,
// for windows inside the sealed hours; the whole history from the warehouse both ways.
void ExpectRollupsEqualRows(sqlite::Ledger& l, const std::string& url, Millis sealed,
                            const std::string& where) {
  auto wh = warehouse::OpenWarehouse(url);
  ASSERT_TRUE(wh.ok()) << wh.message();
  // The same warehouse read from its hourly rows only.
  auto rows = warehouse::OpenWarehouse(url);
  ASSERT_TRUE(rows.ok()) << rows.message();
  if (auto* ch = dynamic_cast<clickhouse::ClickHouseStore*>(rows->get())) ch->ReadHourlyOnly(true);
  if (auto* pg = dynamic_cast<postgres::PostgresStore*>(rows->get())) pg->ReadHourlyOnly(true);
  billing::LedgerStore& hourly = **rows;
  auto json = [](const Result<std::vector<billing::Invoice>>& r) {
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? report::InvoicesToJson(*r).dump(1) : std::string();
  };
  const std::pair<Millis, Millis> windows[] = {{kJan1, kFeb1},
                                               {kFeb1, kMar1},
                                               {kJan1, kMar1},
                                               {kMar1, kApr1},
                                               {kJan1, kApr1},
                                               {kJan1, sealed},
                                               {kJan1 + 33 * billing::kHourMs, sealed}};
  int compared = 0;
  for (auto [from, to] : windows) {
    if (to > sealed || from >= to) continue;
    const std::string want = json(sqlite::LedgerInvoices(l, std::nullopt, from, to));
    ASSERT_TRUE(Same(json(billing::StoreInvoices(**wh, std::nullopt, from, to)), want))
        << where << ", " << FormatRfc3339(from) << " .. " << FormatRfc3339(to);
    ASSERT_TRUE(Same(json(billing::StoreInvoices(hourly, std::nullopt, from, to)), want))
        << where << ", hourly rows, " << FormatRfc3339(from) << " .. " << FormatRfc3339(to);
    ++compared;
  }
  ASSERT_TRUE(Same(json(billing::StoreInvoices(**wh, std::nullopt, std::nullopt, std::nullopt)),
                   json(billing::StoreInvoices(hourly, std::nullopt, std::nullopt, std::nullopt))))
      << where << ", the whole history";
}

// A random write: runs of random workloads over the three months (some into sealed hours).
std::vector<billing::HourlyRow> RandomMonthRows(const std::function<int(int)>& pick) {
  std::vector<billing::RunSegment> segs;
  for (int k = 0, n = 1 + pick(3); k < n; ++k) {
    billing::RunSegment g;
    g.namespace_ = "ns-" + std::to_string(pick(3));
    g.workload = g.namespace_ + "/w" + std::to_string(pick(6));
    g.node = "node-" + std::to_string(pick(2));
    g.start = kJan1 + pick(2100) * billing::kHourMs + pick(4) * 900000;
    g.end = g.start + (1 + pick(72 * 4)) * 900000;
    g.requests.Set("cpu", 250 * (1 + pick(8)));
    g.usage.Set("cpu", 100 * (1 + pick(10)));
    if (pick(3) == 0) g.requests.Set("memory", (int64_t{1} << 30) * (1 + pick(4)));
    segs.push_back(std::move(g));
  }
  auto rows = billing::MeterSegments(segs, {});
  EXPECT_TRUE(rows.ok()) << rows.message();
  return rows.ok() ? std::move(rows).value() : std::vector<billing::HourlyRow>{};
}

void RollupsEqualTheHourlyRows(Backend b, const std::string& name) {
  auto cat = billing::PriceCatalog::Create(MonthBooks());
  ASSERT_TRUE(cat.ok()) << cat.message();
  int syncs = 0, late_rows = 0;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    auto dir = Scratch(name + std::to_string(seed));
    const std::string url = FreshDatabase(b, name + std::to_string(seed));
    ASSERT_FALSE(url.empty());
    const std::string db = (dir / "l.db").string();
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    auto wh = warehouse::OpenWarehouse(url);
    ASSERT_TRUE(wh.ok()) << wh.message();
    std::mt19937 rng(seed);
    std::function<int(int)> pick = [&](int n) {
      return static_cast<int>(rng() % static_cast<uint32_t>(n));
    };
    Millis sealed = kJan1;
    bool written = false;  // a ledger without rows has no PriceBook to bill with
    for (int step = 0; step < 40; ++step) {
      const int op = pick(10);
      if (op < 6) {
        written = true;
        auto rows = RandomMonthRows(pick);
        for (const auto& r : rows) late_rows += r.hour < sealed ? 1 : 0;
        auto st = (*l)->Write(rows, *cat, pick(4) == 0 ? std::optional(sealed) : std::nullopt);
        ASSERT_TRUE(st.ok()) << st.message();
      } else if (op < 8) {
        sealed = std::min(kApr1, sealed + pick(30 * 24) * billing::kHourMs);
        ASSERT_TRUE((*l)->Seal(sealed).ok());
      } else {
        auto st = warehouse::SyncLedger(**l, **wh, {static_cast<size_t>(1 + pick(300)), {}});
        ASSERT_TRUE(st.ok()) << st.message();
        if (!written) continue;
        ++syncs;
        ExpectRollupsEqualRows(**l, url, sealed,
                               "seed " + std::to_string(seed) + ", step " + std::to_string(step));
      }
    }
    // Syncs of the whole ledger killed at several moments into a fresh database, then a whole
    // one: the rollups of the batches a kill cut short are recomputed when they are sent again.
    auto& last = **l;
    ASSERT_TRUE(last.Seal(kApr1).ok());
    const std::string killed = FreshDatabase(b, name + "_kill" + std::to_string(seed));
    for (int after : {5, 20, 60, 150}) KillSyncAfter(db, killed, after);
    auto w2 = warehouse::OpenWarehouse(killed);
    ASSERT_TRUE(w2.ok()) << w2.message();
    ASSERT_TRUE(warehouse::SyncLedger(last, **w2).ok());
    ExpectRollupsEqualRows(last, killed, kApr1, "after kills, seed " + std::to_string(seed));
  }
  std::cout << syncs << " syncs compared, " << late_rows << " rows written into sealed hours\n";
  EXPECT_GT(late_rows, 0);
}

// A warehouse written by an arbiter before the monthly rollups (no arbiter_monthly, no
// arbiter_schema): invoices read its hourly rows until the next sync, which sums every month into
// the rollups once; then the rollups give the same bytes.
void WarehouseWithoutRollupsIsBackfilled(Backend b, const std::string& name) {
  auto cat = billing::PriceCatalog::Create(MonthBooks());
  ASSERT_TRUE(cat.ok()) << cat.message();
  auto dir = Scratch(name);
  const std::string url = FreshDatabase(b, name);
  ASSERT_FALSE(url.empty());
  auto l = sqlite::Ledger::Open((dir / "l.db").string());
  ASSERT_TRUE(l.ok()) << l.message();
  std::mt19937 rng(7);
  std::function<int(int)> pick = [&](int n) {
    return static_cast<int>(rng() % static_cast<uint32_t>(n));
  };
  for (int k = 0; k < 12; ++k) ASSERT_TRUE((*l)->Write(RandomMonthRows(pick), *cat).ok());
  ASSERT_TRUE((*l)->Seal(kMar1).ok());
  auto wh = warehouse::OpenWarehouse(url);
  ASSERT_TRUE(wh.ok()) << wh.message();
  ASSERT_TRUE(warehouse::SyncLedger(**l, **wh).ok());
  // As an older arbiter left it.
  if (b == Backend::kClickHouse) {
    auto ch = clickhouse::ClickHouseStore::Open(url);
    ASSERT_TRUE(ch.ok());
    for (const char* t : {"arbiter_monthly", "arbiter_schema"})
      ASSERT_TRUE((*ch)->Query(std::string("DROP TABLE ") + t).ok());
  } else {
    auto pg = postgres::PostgresStore::Open(url);
    ASSERT_TRUE(pg.ok());
    ASSERT_TRUE((*pg)->Exec("DROP TABLE arbiter_monthly; DROP TABLE arbiter_schema").ok());
  }
  ExpectRollupsEqualRows(**l, url, kMar1, "without rollups");
  ASSERT_TRUE((*l)->Seal(kApr1).ok());
  auto again = warehouse::OpenWarehouse(url);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(warehouse::SyncLedger(**l, **again).ok());
  ExpectRollupsEqualRows(**l, url, kApr1, "backfilled");
}

TEST(ClickHouseWarehouse, SyncedInvoicesEqualTheSqliteLedgersByteForByte) {
  SyncedInvoicesEqualTheLedgers(Backend::kClickHouse, "ch_equal");
}
TEST(ClickHouseWarehouse, SyncKilledAtManyMomentsThenRerunLeavesExactlyTheLedgersTotals) {
  KilledSyncsLeaveExactlyTheLedgersTotals(Backend::kClickHouse, "ch_kill");
}
TEST(ClickHouseWarehouse, KilledSyncResumesFromItsLastCommittedBatch) {
  KilledSyncResumes(Backend::kClickHouse, "ch_resume");
}
TEST(ClickHouseWarehouse, LateRowsOfSyncedHoursReachTheWarehouse) {
  LateRowsReachTheWarehouse(Backend::kClickHouse, "ch_late");
}
TEST(ClickHouseWarehouse, RandomInterleavingsOfWritesSealsAndSyncsConverge) {
  RandomInterleavingsConverge(Backend::kClickHouse, "ch_prop");
}
TEST(ClickHouseWarehouse, MonthlyRollupsEqualTheHourlyRowsAfterLateRowsCorrectionsAndKills) {
  RollupsEqualTheHourlyRows(Backend::kClickHouse, "ch_rollup");
}
TEST(ClickHouseWarehouse, AWarehouseWrittenBeforeTheRollupsIsBackfilledByTheNextSync) {
  WarehouseWithoutRollupsIsBackfilled(Backend::kClickHouse, "ch_backfill");
}
TEST(ClickHouseWarehouse, UnreachableServerIsAClearError) {
  UnreachableServerIsAClearError(Backend::kClickHouse, "ch_down");
}
TEST(ClickHouseWarehouse, RepeatedInsertsNeverCountTwice) {
  // The same rows inserted three times (a retried insert, a re-run after a kill): FINAL reads
  // one row per key, before and after the parts are merged.
  auto dir = Scratch("ch_dup");
  const std::string url = FreshDatabase(Backend::kClickHouse, "ch_dup");
  auto wh = clickhouse::ClickHouseStore::Open(url);
  ASSERT_TRUE(wh.ok());
  ASSERT_TRUE((*wh)->EnsureSchema().ok());
  billing::StoredRow s;
  s.row.namespace_ = "a";
  s.row.workload = "a/w";
  s.row.resource = "cpu";
  s.row.hour = testing::kWarehouseStart;
  s.row.request_raw = static_cast<billing::i128>(1) << 100;  // beyond 64 bits
  s.row.usage_raw = 5;
  s.row.max_raw = s.row.request_raw;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*wh)->PutRows({s}, std::nullopt, std::nullopt).ok());
  billing::SpanQuery q;
  auto spans = (*wh)->ReadSpans(q);
  ASSERT_TRUE(spans.ok()) << spans.message();
  ASSERT_EQ(spans->size(), 1u);
  EXPECT_EQ(billing::I128ToString((*spans)[0].sum.request_raw),
            billing::I128ToString(s.row.request_raw));
  s.version = 2;
  s.row.usage_raw = 7;
  ASSERT_TRUE((*wh)->PutRows({s}, std::nullopt, std::nullopt).ok());
  ASSERT_TRUE((*wh)->Optimize().ok());
  spans = (*wh)->ReadSpans(q);
  ASSERT_EQ(spans->size(), 1u);
  EXPECT_EQ(billing::I128ToString((*spans)[0].sum.usage_raw), "7");
}

TEST(PostgresWarehouse, SyncedInvoicesEqualTheSqliteLedgersByteForByte) {
  SyncedInvoicesEqualTheLedgers(Backend::kPostgres, "pg_equal");
}
TEST(PostgresWarehouse, SyncKilledAtManyMomentsThenRerunLeavesExactlyTheLedgersTotals) {
  KilledSyncsLeaveExactlyTheLedgersTotals(Backend::kPostgres, "pg_kill");
}
TEST(PostgresWarehouse, KilledSyncResumesFromItsLastCommittedBatch) {
  KilledSyncResumes(Backend::kPostgres, "pg_resume");
}
TEST(PostgresWarehouse, LateRowsOfSyncedHoursReachTheWarehouse) {
  LateRowsReachTheWarehouse(Backend::kPostgres, "pg_late");
}
TEST(PostgresWarehouse, RandomInterleavingsOfWritesSealsAndSyncsConverge) {
  RandomInterleavingsConverge(Backend::kPostgres, "pg_prop");
}
TEST(PostgresWarehouse, MonthlyRollupsEqualTheHourlyRowsAfterLateRowsCorrectionsAndKills) {
  RollupsEqualTheHourlyRows(Backend::kPostgres, "pg_rollup");
}
TEST(PostgresWarehouse, AWarehouseWrittenBeforeTheRollupsIsBackfilledByTheNextSync) {
  WarehouseWithoutRollupsIsBackfilled(Backend::kPostgres, "pg_backfill");
}
TEST(PostgresWarehouse, UnreachableServerIsAClearError) {
  UnreachableServerIsAClearError(Backend::kPostgres, "pg_down");
}

}  // namespace
}  // namespace arbiter
