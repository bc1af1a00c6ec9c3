// Issue 28: where the ledger checks its integrity. Reads do not check the whole file (that cost
// grew with the ledger: 0.84 s of a 1.1 s invoice at 1.12M rows); SQLite checks the pages a read
// touches, so a damaged page a month's invoice does not touch fails neither the invoice nor
// escapes `ledger check`. A ledger left by an unclean shutdown (a writer killed with SIGKILL) is
// checked whole when it is next opened, and a damaged one is refused, at every open, until it is
// repaired; a ledger that a live writer holds open is not taken for one left unclean.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "apps/run_command.h"
#include "core/billing/metering.h"

namespace arbiter {
namespace ledger_integrity_test {

using sqlite::Ledger;
using sqlite::OpenCheck;

constexpr Millis kJan1 = 1767225600000;  // 2026-01-01T00:00:00Z
constexpr Millis kHour = 3600000;
constexpr Millis kFeb1 = kJan1 + 31 * 24 * kHour;

std::string Path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("arbiter-ledger-integrity-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string p = (dir / name).string();
  for (const char* sfx : {"", "-wal", "-shm"}) std::filesystem::remove(p + sfx);
  return p;
}

int64_t Bytes(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(n);
}

PriceBook Book() {
  PriceBook b;
  b.meta.name = "standard";
  b.currency = "CNY";
  b.effective_from = kJan1;
  b.prices = {{"cpu", *Decimal::Parse("0.05")}, {"memory", *Decimal::Parse("0.01")}};
  return b;
}

// January for 40 workloads of two tenants, every hour (about 60,000 hourly rows), closed cleanly.
std::string JanuaryLedger(const std::string& name) {
  const std::string path = Path(name);
  std::vector<billing::RunSegment> segs;
  for (int i = 0; i < 40; ++i) {
    billing::RunSegment s;
    s.workload = std::string(i % 2 ? "team-a" : "team-b") + "/w" + std::to_string(i);
    s.namespace_ = s.workload.substr(0, 6);
    s.node = "node-1";
    s.requests.Set("cpu", 1000 + 10 * i);
    s.requests.Set("memory", int64_t{4} << 30);
    s.usage.Set("cpu", 250 + i);
    s.usage.Set("memory", int64_t{1} << 30);
    s.start = kJan1;
    s.end = kFeb1;
    segs.push_back(s);
  }
  auto rows = billing::MeterSegments(segs, billing::MeterConfig{});
  EXPECT_TRUE(rows.ok()) << rows.message();
  auto l = Ledger::Open(path);
  EXPECT_TRUE(l.ok()) << l.message();
  auto w = (*l)->Write(*rows, *billing::PriceCatalog::Create({Book()}));
  EXPECT_TRUE(w.ok()) << w.message();
  return path;
}

// January's invoices for every tenant, as `arbiter invoice --month 2026-01 -o json` prints them.
Result<std::string> MonthJson(Ledger& l) {
  auto invs = sqlite::LedgerInvoices(l, std::nullopt, kJan1, kFeb1);
  if (!invs.ok()) return invs.status();
  return report::InvoicesToJson(*invs).dump(2);
}

// Random bytes over the middle leaf page of the hourly rows: whole-day invoices read the daily
// rollups, never this page.
void DamageAnHourlyPage(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<int64_t> pages;
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT pageno FROM dbstat WHERE name = 'hourly' AND pagetype = "
                               "'leaf' ORDER BY pageno",
                               -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  while (sqlite3_step(st) == SQLITE_ROW) pages.push_back(sqlite3_column_int64(st, 0));
  sqlite3_finalize(st);
  int64_t page_size = 0;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, nullptr), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) page_size = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_GT(pages.size(), 20u);
  ASSERT_GT(page_size, 0);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>((pages[pages.size() / 2] - 1) * page_size));
  std::mt19937 rng(28);
  for (int64_t i = 0; i < page_size; ++i) f.put(static_cast<char>(rng() & 0xff));
}

// A writer that seals the hours before `seal` and is killed with SIGKILL before it closes the
// ledger: its -wal file holds the commit, and nobody has the ledger open.
void KillAWriter(const std::string& path, Millis seal = kJan1 + kHour) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    auto l = Ledger::Open(path);
    const bool ok = l.ok() && (*l)->Seal(seal).ok();
    const char c = ok ? 'y' : 'n';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  close(ready[1]);
  EXPECT_EQ(c, 'y');
  // Alive, it holds the ledger open: that is not an unclean shutdown, nothing is checked.
  {
    auto r = Ledger::OpenForReading(path);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_FALSE((*r)->checked_at_open());
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_GT(Bytes(path + "-wal"), 0) << "the killed writer left no WAL frames";
}

// The command's exit code, a newline, then what it printed (stdout and stderr).
std::string Cli(const std::string& args) {
  auto r = testing::RunCommand(std::string(ARBITER_BINARY) + " " + args + " 2>&1");
  return std::to_string(r.rc) + "\n" + r.out;
}

TEST(LedgerIntegrity, ADamagedPageAMonthsInvoiceDoesNotTouchFailsNeitherInvoiceNorCheck) {
  const std::string path = JanuaryLedger("untouched.db");
  std::string want;
  {
    auto l = Ledger::OpenForReading(path);
    ASSERT_TRUE(l.ok()) << l.message();
    auto j = MonthJson(**l);
    ASSERT_TRUE(j.ok()) << j.message();
    want = *j;
  }
  const std::string cli_want = Cli("invoice --db " + path + " --month 2026-01 -o json");
  ASSERT_EQ(cli_want.substr(0, 2), "0\n") << cli_want;
  DamageAnHourlyPage(path);

  {
    // The month's invoices read the rollups only: the same bytes as before the damage.
    auto l = Ledger::OpenForReading(path);
    ASSERT_TRUE(l.ok()) << l.message();
    EXPECT_FALSE((*l)->checked_at_open());
    auto j = MonthJson(**l);
    ASSERT_TRUE(j.ok()) << j.message();
    EXPECT_EQ(*j, want);
    EXPECT_EQ(Cli("invoice --db " + path + " --month 2026-01 -o json"), cli_want);
    // A read that touches the page fails, and says where the full check is.
    std::ostringstream csv;
    Status exp = (*l)->ExportCsv(sqlite::RowFilter{}, csv);
    ASSERT_FALSE(exp.ok());
    EXPECT_NE(exp.message().find("`arbiter ledger check --db " + path + "` lists the problems"),
              std::string::npos)
        << exp.message();
  }
  // The check finds it.
  const std::string check = Cli("ledger check --db " + path);
  EXPECT_EQ(check.substr(0, 2), "1\n") << check;
  EXPECT_NE(check.find(path + ": damaged: PRAGMA integrity_check: "), std::string::npos) << check;
}

TEST(LedgerIntegrity, AnOpenAfterAnUncleanShutdownChecksAndRefusesADamagedLedgerEveryTime) {
  const std::string path = JanuaryLedger("unclean-damaged.db");
  DamageAnHourlyPage(path);
  KillAWriter(path);
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto r = Ledger::OpenForReading(path);
    ASSERT_FALSE(r.ok()) << "attempt " << attempt;
    EXPECT_NE(r.message().find("ledger " + path +
                               " is damaged (PRAGMA quick_check after an unclean shutdown: "),
              std::string::npos)
        << r.message();
    EXPECT_GT(Bytes(path + "-wal"), 0) << "the evidence of the unclean shutdown was removed";
  }
  EXPECT_FALSE(Ledger::Open(path).ok()) << "a writer wrote into a damaged ledger";
  const std::string inv = Cli("invoice --db " + path + " --month 2026-01");
  EXPECT_EQ(inv.substr(0, 2), "1\n") << inv;
  EXPECT_NE(inv.find("after an unclean shutdown"), std::string::npos) << inv;
  EXPECT_EQ(inv.find("Invoice team-a"), std::string::npos) << inv;
  // `ledger check` opens it anyway, and lists the problems.
  EXPECT_TRUE(Ledger::OpenForReading(path, OpenCheck::kNone).ok());
  const std::string check = Cli("ledger check --db " + path);
  EXPECT_EQ(check.substr(0, 2), "1\n") << check;
  EXPECT_NE(check.find(path + ": damaged: PRAGMA integrity_check: "), std::string::npos) << check;
  // ... and does not hide the unclean shutdown from the next reader.
  EXPECT_FALSE(Ledger::OpenForReading(path).ok());
}

TEST(LedgerIntegrity, ASoundLedgerLeftUncleanIsCheckedOnceThenReadAsUsual) {
  const std::string path = JanuaryLedger("unclean-sound.db");
  KillAWriter(path);
  {
    auto r = Ledger::OpenForReading(path);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_TRUE((*r)->checked_at_open());
    auto wm = (*r)->SealedBefore();
    ASSERT_TRUE(wm.ok());
    EXPECT_EQ(*wm, kJan1 + kHour) << "the killed writer's last commit is lost";
  }
  // The reader that checked it closed it cleanly: the next one does not check again.
  EXPECT_LT(Bytes(path + "-wal"), 1);
  {
    auto again = Ledger::OpenForReading(path);
    ASSERT_TRUE(again.ok()) << again.message();
    EXPECT_FALSE((*again)->checked_at_open());
  }
  // A writer that opens it after a crash checks it too.
  KillAWriter(path, kJan1 + 3 * kHour);
  auto w = Ledger::Open(path);
  ASSERT_TRUE(w.ok()) << w.message();
  EXPECT_TRUE((*w)->checked_at_open());
}

TEST(LedgerIntegrity, AWriterOpenInThisProcessIsNotAnUncleanShutdown) {
  const std::string path = JanuaryLedger("live.db");
  auto w = Ledger::Open(path);
  ASSERT_TRUE(w.ok()) << w.message();
  ASSERT_TRUE((*w)->Seal(kJan1 + 2 * kHour).ok());
  ASSERT_GT(Bytes(path + "-wal"), 0);
  auto r = Ledger::OpenForReading(path);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_FALSE((*r)->checked_at_open());
  EXPECT_EQ(*(*r)->SealedBefore(), kJan1 + 2 * kHour);
}

}  // namespace ledger_integrity_test
}  // namespace arbiter
