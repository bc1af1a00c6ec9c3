// `arbiter invoice`, `arbiter invoice ingest`, `arbiter ledger export|seal` as a user runs them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_command.h"

namespace invoice_cli_test {

struct CliRun {
  int rc = -1;
  std::string out;
};

CliRun Arbiter(const std::string& args) {
  std::string cmd = std::string(ARBITER_BINARY) + " " + args + " 2>&1";
  CliRun r;
  {
    auto run = arbiter::testing::RunCommand(cmd);
    r.rc = run.rc;
    r.out = std::move(run.out);
  }
  return r;
}

std::string Data(const char* f) {
  return std::string(ARBITER_SOURCE_DIR) + "/tests/data/billing/" + f;
}

std::string FreshDb(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("arbiter-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string p = (dir / name).string();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(p + s);
  return p;
}

TEST(InvoiceCli, IngestTwiceThenInvoiceAsJson) {
  const std::string db = FreshDb("a.db");
  const std::string ingest = "invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                             " --pricebook " + Data("pricebook.json");
  CliRun first = Arbiter(ingest);
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("18 inserted, 0 unchanged"), std::string::npos) << first.out;
  CliRun again = Arbiter(ingest);
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find("0 inserted, 18 unchanged"), std::string::npos) << again.out;

  CliRun json =
      Arbiter("invoice --db " + db +
              " --namespace team-a --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z -o json");
  ASSERT_EQ(json.rc, 0) << json.out;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["namespace"], "team-a");
  EXPECT_EQ(j[0]["currency"], "CNY");
  // hoarder cpu 57600 + train cpu 8 × (3630 + 3600) = 115440 core-s at 0.05 -> 1.603333;
  // memory 64Gi × 3600 s at 0.01 -> 0.64; train GPU 7230 GPU-s at 14.00 -> 28.116667;
  // credits: cpu 8 × 1200 s -> -0.133333, GPU 1200 GPU-s -> -4.666667. Total 25.56.
  EXPECT_EQ(j[0]["total"], "25.560000");
  EXPECT_EQ(j[0]["creditTotal"], "-4.800000");
  bool saw_credit = false;
  for (const auto& l : j[0]["lines"])
    if (l["kind"] == "Credit" && l["resource"] == "nvidia.com/gpu") {
      saw_credit = true;
      EXPECT_EQ(l["amount"], "-4.666667");
      EXPECT_EQ(l["preemptor"], "team-b/serve");
    }
  EXPECT_TRUE(saw_credit);

  CliRun table = Arbiter("invoice --db " + db + " --namespace team-c");
  ASSERT_EQ(table.rc, 0) << table.out;
  EXPECT_NE(table.out.find("low coverage: team-c/notebook cpu"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("TOTAL 0.004861 CNY"), std::string::npos) << table.out;

  CliRun csv = Arbiter("invoice --db " + db + " --namespace team-b -o csv");
  ASSERT_EQ(csv.rc, 0);
  EXPECT_NE(csv.out.find(
                "team-b,CNY,Usage,nvidia.com/mig-3g.40gb,NVIDIA-H100-80GB-HBM3,instance-second,Max,"
                "standard@2026-01-01T00:00:00Z,7200,7200,7200,7,14.000000,"),
            std::string::npos)
      << csv.out;

  // The same input gives the same invoice, byte for byte, from a fresh ledger.
  const std::string db2 = FreshDb("b.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db2 + " --segments " + Data("segments.jsonl") +
                    " --pricebook " + Data("pricebook.json"))
                .rc,
            0);
  EXPECT_EQ(Arbiter("invoice --db " + db2 + " -o json").out,
            Arbiter("invoice --db " + db + " -o json").out);
}

TEST(InvoiceCli, LedgerExportAndSeal) {
  const std::string db = FreshDb("c.db");
  ASSERT_EQ(
      Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
              " --pricebook " + Data("pricebook.json") + " --seal-before 2026-01-01T02:00:00Z")
          .rc,
      0);
  CliRun csv = Arbiter("ledger export --db " + db + " --namespace team-b");
  ASSERT_EQ(csv.rc, 0) << csv.out;
  EXPECT_EQ(csv.out.rfind("BillingPeriodStart,", 0), 0u);
  EXPECT_NE(csv.out.find("ConsumedQuantity"), std::string::npos);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 1 + 6) << csv.out;  // 2 MIG × 3 hours
  CliRun jl = Arbiter("ledger export --db " + db +
                      " --format jsonl --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z");
  ASSERT_EQ(jl.rc, 0);
  auto first = nlohmann::json::parse(jl.out.substr(0, jl.out.find('\n')));
  EXPECT_EQ(first["x_Sealed"], "true");
  CliRun seal = Arbiter("ledger seal --db " + db + " --before 2026-01-01T04:00:00Z");
  EXPECT_EQ(seal.rc, 0) << seal.out;
  EXPECT_NE(seal.out.find("2026-01-01T04:00:00Z"), std::string::npos);
}

TEST(InvoiceCli, ExitCodes) {
  EXPECT_EQ(Arbiter("invoice --help").rc, 0);
  EXPECT_EQ(Arbiter("invoice ingest --help").rc, 0);
  EXPECT_EQ(Arbiter("ledger export --help").rc, 0);
  EXPECT_EQ(Arbiter("invoice").rc, 2);                    // no --db
  EXPECT_EQ(Arbiter("invoice --db x.db -o yaml").rc, 2);  // bad -o
  EXPECT_EQ(Arbiter("invoice --bogus").rc, 2);
  CliRun missing = Arbiter("invoice --db /nonexistent/ledger.db");
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("arbiter invoice: --db: /nonexistent/ledger.db: no such ledger"),
            std::string::npos)
      << missing.out;
  const std::string db = FreshDb("d.db");
  const std::string bad = FreshDb("bad.jsonl");
  std::ofstream(bad)
      << "{\"workload\":\"a/b\",\"requests\":{\"cpu\":\"1\"},\"start\":5000,\"end\":1000}\n";
  CliRun r = Arbiter("invoice ingest --db " + db + " --segments " + bad + " --pricebook " +
                     Data("pricebook.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("bad.jsonl:1:"), std::string::npos) << r.out;
  CliRun nobook = Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl"));
  EXPECT_EQ(nobook.rc, 1);
  EXPECT_NE(nobook.out.find("no PriceBook"), std::string::npos) << nobook.out;
  const std::string early = FreshDb("early.jsonl");
  std::ofstream(early) << "{\"workload\":\"a/"
                          "b\",\"requests\":{\"cpu\":\"1\"},\"start\":\"2025-12-31T23:00:00Z\","
                          "\"end\":\"2026-01-01T01:00:00Z\"}\n";
  CliRun unpriced = Arbiter("invoice ingest --db " + db + " --segments " + early + " --pricebook " +
                            Data("pricebook.json"));
  EXPECT_EQ(unpriced.rc, 1);
  EXPECT_NE(unpriced.out.find("no PriceBook is in force at 2025-12-31T23:00:00Z"),
            std::string::npos)
      << unpriced.out;
  // A malformed flag value is a usage error (exit 2), named by its flag (docs/user-guide.md,
  // "Command-line conventions").
  CliRun badtime = Arbiter("invoice --db " + db + " --from yesterday");
  EXPECT_EQ(badtime.rc, 2);
  EXPECT_NE(badtime.out.find("arbiter invoice: --from: timestamp \"yesterday\" is not RFC 3339"),
            std::string::npos)
      << badtime.out;
}

}  // namespace invoice_cli_test

namespace invoice_cli_test {

// Regression (issue 4 review): `--from` after `--to` is refused, not an empty invoice.
TEST(InvoiceCli, ReversedWindowIsRefused) {
  const std::string db = FreshDb("rev.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                    " --pricebook " + Data("pricebook.json"))
                .rc,
            0);
  CliRun r =
      Arbiter("invoice --db " + db + " --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(
                "arbiter invoice: --from: 2026-01-02T00:00:00Z is after --to 2026-01-01T00:00:00Z"),
            std::string::npos)
      << r.out;
  CliRun e = Arbiter("ledger export --db " + db +
                     " --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(e.rc, 2) << e.out;
  // An empty window [t, t) is not reversed: no usage, exit 0.
  CliRun empty =
      Arbiter("invoice --db " + db + " --from 2026-01-01T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(empty.rc, 0) << empty.out;
}

// Regression (issue 4 review): a failed ingest leaves no new ledger file behind, and an existing
// ledger exactly as it was.
TEST(InvoiceCli, FailedIngestLeavesNoNewFileAndExistingLedgerUntouched) {
  const std::string bad = FreshDb("before-pricebook.jsonl");
  std::ofstream(bad)
      << R"({"workload":"team-a/x","requests":{"cpu":"1"},"start":"2025-06-01T00:00:00Z","end":"2025-06-01T01:00:00Z"})"
      << "\n";
  const std::string fresh = FreshDb("fresh.db");
  CliRun r = Arbiter("invoice ingest --db " + fresh + " --segments " + bad + " --pricebook " +
                     Data("pricebook.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("no PriceBook is in force"), std::string::npos) << r.out;
  for (const char* s : {"", "-wal", "-shm"}) EXPECT_FALSE(std::filesystem::exists(fresh + s)) << s;
  CliRun nobook = Arbiter("invoice ingest --db " + fresh + " --segments " + Data("segments.jsonl"));
  EXPECT_EQ(nobook.rc, 1) << nobook.out;
  EXPECT_NE(nobook.out.find("no PriceBook given"), std::string::npos) << nobook.out;
  EXPECT_FALSE(std::filesystem::exists(fresh));

  const std::string db = FreshDb("existing.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                    " --pricebook " + Data("pricebook.json"))
                .rc,
            0);
  CliRun before = Arbiter("ledger export --db " + db + " --format jsonl --include-superseded");
  ASSERT_EQ(before.rc, 0);
  CliRun fail = Arbiter("invoice ingest --db " + db + " --segments " + bad);
  EXPECT_EQ(fail.rc, 1) << fail.out;
  EXPECT_TRUE(std::filesystem::exists(db));
  CliRun after = Arbiter("ledger export --db " + db + " --format jsonl --include-superseded");
  EXPECT_EQ(before.out, after.out);
}

}  // namespace invoice_cli_test

// ---------------------------------------------------------------- issue 14: reading ledgers

namespace invoice_cli_test {

namespace fs = std::filesystem;

std::string Ingested(const std::string& name) {
  const std::string db = FreshDb(name);
  CliRun r = Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                     " --pricebook " + Data("pricebook.json"));
  EXPECT_EQ(r.rc, 0) << r.out;
  return db;
}

bool NoSidecars(const std::string& db) {
  return !fs::exists(db + "-wal") && !fs::exists(db + "-shm");
}

// Runs `arbiter ARGS` as an unprivileged user when the test runs as root (root ignores file
// modes): a copy of the binary in a world-readable directory, run through setpriv as nobody.
CliRun AsReader(const fs::path& dir, const std::string& args) {
  if (geteuid() != 0) return Arbiter(args);
  const fs::path bin = dir / "arbiter-copy";
  if (!fs::exists(bin)) fs::copy_file(ARBITER_BINARY, bin);
  fs::permissions(bin, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  auto run = arbiter::testing::RunCommand("setpriv --reuid=65534 --regid=65534 --clear-groups " +
                                          bin.string() + " " + args + " 2>&1");
  return {run.rc, run.out};
}

TEST(LedgerReadOnly, AReadOnlyFileOrDirectoryCanBeReadAndNothingIsLeftBehind) {
  const fs::path dir = fs::temp_directory_path() / ("arbiter-ro-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // 777: the reader could create files here
  const std::string db = (dir / "ro.db").string();
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                    " --pricebook " + Data("pricebook.json"))
                .rc,
            0);
  const std::string want = Arbiter("invoice --db " + db + " -o json").out;
  ASSERT_TRUE(NoSidecars(db));
  // A read-only file in a writable directory.
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  CliRun inv = AsReader(dir, "invoice --db " + db + " -o json");
  EXPECT_EQ(inv.rc, 0) << inv.out;
  EXPECT_EQ(inv.out, want);
  EXPECT_EQ(AsReader(dir, "ledger export --db " + db).rc, 0);
  CliRun check = AsReader(dir, "ledger check --db " + db);
  EXPECT_EQ(check.rc, 0) << check.out;
  EXPECT_NE(check.out.find(": ok: schema 6, 18 hourly rows"), std::string::npos) << check.out;
  EXPECT_TRUE(NoSidecars(db))
      << "a reader left -wal/-shm files (owned by the reader) next to the ledger";
  // A read-only directory (the file writable or not).
  fs::permissions(db, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                          fs::perms::others_read);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  CliRun inv2 = AsReader(dir, "invoice --db " + db + " -o json");
  EXPECT_EQ(inv2.rc, 0) << inv2.out;
  EXPECT_EQ(inv2.out, want);
  EXPECT_TRUE(NoSidecars(db));
  // The writer can still write it afterwards (nothing with a wrong owner or mode is in the way).
  fs::permissions(dir, fs::perms::all);
  CliRun seal = Arbiter("ledger seal --db " + db + " --before 2026-01-01T01:00:00Z");
  EXPECT_EQ(seal.rc, 0) << seal.out;
  fs::remove_all(dir);
}

TEST(LedgerReadOnly, ReadingAWritableLedgerLeavesNoSidecars) {
  const std::string db = Ingested("rw.db");
  EXPECT_EQ(Arbiter("invoice --db " + db).rc, 0);
  EXPECT_EQ(Arbiter("ledger export --db " + db + " --format jsonl").rc, 0);
  EXPECT_EQ(Arbiter("ledger check --db " + db).rc, 0);
  EXPECT_TRUE(NoSidecars(db));
}

// Reads check the pages they touch, not the whole file (issue 28; a damaged page that a read does
// not touch: tests/adapters/ledger_integrity_test.cc): here every page of hourly rows is damaged.
TEST(LedgerDamage, ACorruptedLedgerPrintsNoInvoice) {
  const std::string db = FreshDb("corrupt.db");
  CliRun sim = Arbiter("sim -q -f " + std::string(ARBITER_SOURCE_DIR) +
                       "/examples/pool.yaml --ledger " + db);
  ASSERT_EQ(sim.rc, 0) << sim.out;
  ASSERT_EQ(Arbiter("invoice --db " + db + " --namespace team-c").rc, 0);
  // Random bytes over every leaf page of the hourly rows (pages from SQLite's dbstat).
  std::vector<int64_t> leaves;
  int64_t page_size = 0;
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(h, "SELECT pageno FROM dbstat WHERE name = 'hourly' AND pagetype = 'leaf'",
                       -1, &st, nullptr);
    while (st && sqlite3_step(st) == SQLITE_ROW) leaves.push_back(sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    sqlite3_prepare_v2(h, "PRAGMA page_size", -1, &st, nullptr);
    if (st && sqlite3_step(st) == SQLITE_ROW) page_size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
  }
  ASSERT_FALSE(leaves.empty());
  ASSERT_GT(page_size, 0);
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    uint64_t x = 14;
    for (int64_t page : leaves) {
      f.seekp(static_cast<std::streamoff>((page - 1) * page_size));
      for (int64_t i = 0; i < page_size; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        f.put(static_cast<char>(x >> 56));
      }
    }
  }
  CliRun inv = Arbiter("invoice --db " + db + " --namespace team-c");
  EXPECT_EQ(inv.rc, 1) << inv.out;
  EXPECT_EQ(inv.out.find("Invoice team-c"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("database disk image is malformed (the ledger is damaged where this "
                         "read looked; `arbiter ledger check --db " +
                         db + "` lists the problems)"),
            std::string::npos)
      << inv.out;
  CliRun exp = Arbiter("ledger export --db " + db);
  EXPECT_EQ(exp.rc, 1) << exp.out.substr(0, 500);
  CliRun check = Arbiter("ledger check --db " + db);
  EXPECT_EQ(check.rc, 1) << check.out;
  EXPECT_NE(check.out.find(db + ": damaged: PRAGMA integrity_check: "), std::string::npos)
      << check.out;
}

TEST(LedgerCheck, ReportsASoundLedger) {
  const std::string db = Ingested("check.db");
  ASSERT_EQ(Arbiter("ledger seal --db " + db + " --before 2026-01-01T02:00:00Z").rc, 0);
  CliRun r = Arbiter("ledger check --db " + db);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(
      r.out.find(db +
                 ": ok: schema 6, 18 hourly rows (18 current) in 3 namespaces, hours "
                 "2026-01-01T00:00:00Z .. 2026-01-01T03:00:00Z, 1 PriceBook version, sealed before "
                 "2026-01-01T02:00:00Z"),
      std::string::npos)
      << r.out;
  CliRun missing = Arbiter("ledger check --db " + FreshDb("nothing.db"));
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("no such ledger"), std::string::npos) << missing.out;
  EXPECT_FALSE(fs::exists(FreshDb("nothing.db")));
}

// ---------------------------------------------------------------- issue 14: what users tripped
// over

// 1. The table shows the unit price with its per-hour unit, columns never run together.
TEST(InvoiceTable, UnitPricesCarryTheirHourAndColumnsAreApart) {
  const std::string db = Ingested("table.db");
  CliRun r = Arbiter("invoice --db " + db + " --namespace team-b");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("  UNIT PRICE  "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("UNIT PRICE AMOUNT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("7/instance-hour  14.000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AMOUNT = BILLED / 3600 x UNIT PRICE"), std::string::npos) << r.out;
  // Every row of a table has its columns at the header's positions.
  std::istringstream in(r.out);
  std::string line;
  size_t header_amount = std::string::npos;
  while (std::getline(in, line)) {
    if (line.find("KIND ") != std::string::npos) header_amount = line.find("AMOUNT") + 6;
    if (line.rfind("  Usage ", 0) == 0 || line.rfind("  Credit ", 0) == 0) {
      ASSERT_NE(header_amount, std::string::npos);
      EXPECT_GE(line.size(), header_amount) << line;
      EXPECT_NE(line[header_amount - 1], ' ') << "amount not right-aligned under AMOUNT: " << line;
    }
  }
}

// 4. A mistyped namespace is named, with the closest one; exit 1.
TEST(InvoiceNamespace, UnknownNamespaceSuggestsTheClosest) {
  const std::string db = Ingested("ns.db");
  CliRun r = Arbiter("invoice --db " + db + " --namespace team-bb");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(
      r.out.find(
          "arbiter invoice: --namespace: the ledger has no namespace \"team-bb\"; did you mean "
          "\"team-b\"? (namespaces: team-a, team-b, team-c)"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("no billed usage"), std::string::npos);
  CliRun e = Arbiter("ledger export --db " + db + " --namespace tema-a");
  EXPECT_EQ(e.rc, 1);
  EXPECT_NE(e.out.find("did you mean \"team-a\"?"), std::string::npos) << e.out;
  // A known namespace with nothing in the window is not a mistake.
  CliRun empty = Arbiter("invoice --db " + db + " --namespace team-a --month 2026-02");
  EXPECT_EQ(empty.rc, 0) << empty.out;
  EXPECT_NE(empty.out.find("no billed usage for namespace team-a in the window"), std::string::npos)
      << empty.out;
}

// 6. --month YYYY-MM is the calendar month.
TEST(InvoiceMonth, MonthEqualsItsRfc3339Bounds) {
  const std::string db = Ingested("month.db");
  CliRun m = Arbiter("invoice --db " + db + " --month 2026-01 -o json");
  CliRun ft = Arbiter("invoice --db " + db +
                      " --from 2026-01-01T00:00:00Z --to 2026-02-01T00:00:00Z -o json");
  ASSERT_EQ(m.rc, 0) << m.out;
  EXPECT_EQ(m.out, ft.out);
  EXPECT_EQ(
      Arbiter("ledger export --db " + db + " --month 2026-01").out,
      Arbiter("ledger export --db " + db + " --from 2026-01-01T00:00:00Z --to 2026-02-01T00:00:00Z")
          .out);
  CliRun dec = Arbiter("invoice --db " + db + " --month 2025-12 -o json");
  EXPECT_EQ(dec.rc, 0);
  EXPECT_EQ(dec.out, "[]\n");
  for (const char* bad : {"2026-13", "2026-1", "january", "2026-01-01"}) {
    CliRun r = Arbiter("invoice --db " + db + " --month " + bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.out.find("arbiter invoice: --month: \"" + std::string(bad) +
                         "\" is not a month: expected YYYY-MM"),
              std::string::npos)
        << r.out;
  }
  CliRun both = Arbiter("invoice --db " + db + " --month 2026-01 --from 2026-01-01T00:00:00Z");
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.out.find("give either --month or --from/--to, not both"), std::string::npos)
      << both.out;
  CliRun date = Arbiter("invoice --db " + db + " --from 2026-01");
  EXPECT_EQ(date.rc, 2);
  EXPECT_NE(date.out.find("for a whole month use --month 2026-01"), std::string::npos) << date.out;
}

// 7. Seal times are on the hour; segments can come from standard input.
TEST(LedgerSeal, OffTheHourIsRefused) {
  const std::string db = Ingested("seal.db");
  CliRun r = Arbiter("ledger seal --db " + db + " --before 2026-01-01T01:30:00Z");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("arbiter ledger seal: --before: 2026-01-01T01:30:00Z is not on the hour: "
                       "hours are sealed "
                       "whole; use 2026-01-01T01:00:00Z or 2026-01-01T02:00:00Z"),
            std::string::npos)
      << r.out;
  CliRun check = Arbiter("ledger check --db " + db);
  EXPECT_NE(check.out.find("nothing sealed"), std::string::npos) << check.out;
  CliRun ing = Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
                       " --seal-before 2026-01-01T00:00:01Z");
  EXPECT_EQ(ing.rc, 2) << ing.out;
  EXPECT_NE(ing.out.find(
                "arbiter invoice ingest: --seal-before: 2026-01-01T00:00:01Z is not on the hour"),
            std::string::npos)
      << ing.out;
}

TEST(InvoiceIngest, SegmentsFromStandardInput) {
  const std::string db = FreshDb("stdin.db");
  CliRun r = Arbiter("invoice ingest --db " + db + " --segments - --pricebook " +
                     Data("pricebook.json") + " < " + Data("segments.jsonl"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("stdin: 5 segments, 18 hourly rows: 18 inserted"), std::string::npos)
      << r.out;
  EXPECT_EQ(Arbiter("invoice --db " + db + " -o json").out,
            Arbiter("invoice --db " + Ingested("file.db") + " -o json").out);
}

// The docs (billing.md): a failed ingest leaves no new file; a killed one leaves the ledger as of
// its last commit: for a new ledger nothing, or an empty ledger (schema, no rows), or every row.
TEST(LedgerCrash, KilledIngestLeavesTheLedgerAsOfItsLastCommit) {
  const std::string segs = FreshDb("kill.jsonl");
  {
    std::ofstream f(segs);
    for (int i = 0; i < 400; ++i)
      f << R"({"workload":"team-)" << i % 3 << "/w" << i
        << R"(","requests":{"cpu":"2","memory":"4Gi","nvidia.com/gpu":"1"},"gpuProduct":"NVIDIA-H100-80GB-HBM3",)"
        << R"("start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z"})"
        << "\n";
  }
  const std::string ref = FreshDb("kill-ref.db");
  const std::string ingest_args = " --segments " + segs + " --pricebook " + Data("pricebook.json");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Arbiter("invoice ingest --db " + ref + ingest_args).rc, 0);
  const double full_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string want = Arbiter("invoice --db " + ref + " -o json").out;
  int empty_ledgers = 0, complete = 0, no_file = 0;
  constexpr int kMoments = 10;
  for (int k = 0; k < kMoments; ++k) {
    const std::string db = FreshDb("kill-" + std::to_string(k) + ".db");
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execl(ARBITER_BINARY, "arbiter", "invoice", "ingest", "--db", db.c_str(), "--segments",
            segs.c_str(), "--pricebook", Data("pricebook.json").c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    usleep(static_cast<useconds_t>(full_s * 1e6 * k / kMoments));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!fs::exists(db)) {
      ++no_file;
      continue;
    }
    CliRun check = Arbiter("ledger check --db " + db);
    ASSERT_EQ(check.rc, 0) << "killed after " << k << "/" << kMoments
                           << " of the run: " << check.out;
    CliRun inv = Arbiter("invoice --db " + db + " -o json");
    ASSERT_EQ(inv.rc, 0) << "killed after " << k << "/" << kMoments << " of the run: " << inv.out;
    if (inv.out == "[]\n")
      ++empty_ledgers;
    else {
      EXPECT_EQ(inv.out, want) << "a partial ledger after a kill at " << k << "/" << kMoments;
      ++complete;
    }
    // Ingesting again completes it, with nothing twice.
    ASSERT_EQ(Arbiter("invoice ingest --db " + db + ingest_args).rc, 0);
    EXPECT_EQ(Arbiter("invoice --db " + db + " -o json").out, want);
  }
  std::cerr << "  killed ingests: " << no_file << " left no file, " << empty_ledgers
            << " an empty ledger, " << complete << " a complete one\n";
}

}  // namespace invoice_cli_test
