// The daemon's ledger for the bills page (server/billing/ledger_bills.h): a month's invoices as
// JSON and the CSV download, byte for byte what `arbiter invoice --month M -o csv` prints, for what
// the viewer may see. The ledger is written by `arbiter sim --ledger` of the example pool.
#include "server/billing/ledger_bills.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/run_command.h"
#include "server/serve_process.h"

namespace arbiter::server {
namespace {

using arbiter::testing::RunCommand;

class LedgerBillsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(arbiter::testing::ScratchDir("ledger-bills"));
    auto r = RunCommand(std::string(ARBITER_BINARY) + " sim -f " + ARBITER_SOURCE_DIR +
                        "/examples/pool.yaml --ledger " + Db() + " 2>&1");
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Db() { return (*dir_ / "ledger.db").string(); }
  static std::string Cli(const std::string& args) {
    auto r = RunCommand(std::string(ARBITER_BINARY) + " invoice --db " + Db() + " " + args);
    EXPECT_EQ(r.rc, 0) << r.out;
    return r.out;
  }
  static std::string Export(const std::string& args) {
    auto r = RunCommand(std::string(ARBITER_BINARY) + " ledger export --db " + Db() + " " + args);
    EXPECT_EQ(r.rc, 0) << r.out;
    return r.out;
  }
  static std::filesystem::path* dir_;
};
std::filesystem::path* LedgerBillsTest::dir_ = nullptr;

BillsViewer Tenant(std::string ns) {
  return {false, [ns](const std::string& n) { return n == ns; }};
}

TEST_F(LedgerBillsTest, TheCsvIsTheBytesOfArbiterInvoiceCsv) {
  auto csv = LedgerBillsCsv(Db(), "2026-01", {});
  ASSERT_TRUE(csv.ok()) << csv.message();
  EXPECT_EQ(*csv, Cli("--month 2026-01 -o csv"));
  EXPECT_NE(csv->find("\nteam-b,CNY,"), std::string::npos);
  // No month: the newest month with rows.
  EXPECT_EQ(*LedgerBillsCsv(Db(), "", {}), *csv);
}

TEST_F(LedgerBillsTest, TheJsonHasTheMonthsAndTheInvoicesOfArbiterInvoiceJson) {
  auto j = LedgerBills(Db(), "2026-01", {});
  ASSERT_TRUE(j.ok()) << j.message();
  EXPECT_EQ((*j)["available"], true);
  EXPECT_EQ((*j)["months"], nlohmann::json::array({"2026-01"}));
  EXPECT_EQ((*j)["month"], "2026-01");
  EXPECT_EQ((*j)["from"], "2026-01-01T00:00:00Z");
  EXPECT_EQ((*j)["to"], "2026-02-01T00:00:00Z");
  EXPECT_TRUE((*j)["meteredUntil"].is_null());  // no meter job wrote this ledger
  EXPECT_EQ((*j)["invoices"], nlohmann::json::parse(Cli("--month 2026-01 -o json")));
  const auto& line = (*j)["invoices"][1]["lines"][0];
  for (const char* field : {"requestQuantity", "usageQuantity", "billedQuantity", "unitPrice",
                            "amount", "unit", "resource", "mode"})
    EXPECT_TRUE(line.contains(field)) << field << " " << line.dump();
  // A month without rows: no invoices.
  auto empty = LedgerBills(Db(), "2026-02", {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)["invoices"], nlohmann::json::array());
}

TEST_F(LedgerBillsTest, ATenantSeesOnlyItsNamespacesInvoicesAndNoIdleCost) {
  auto j = LedgerBills(Db(), "2026-01", Tenant("team-a"));
  ASSERT_TRUE(j.ok());
  ASSERT_EQ((*j)["invoices"].size(), 1u) << j->dump();
  EXPECT_EQ((*j)["invoices"][0]["namespace"], "team-a");
  auto csv = LedgerBillsCsv(Db(), "2026-01", Tenant("team-a"));
  ASSERT_TRUE(csv.ok());
  // The header and team-a's lines of the command's CSV, in its order.
  std::string want;
  const std::string all = Cli("--month 2026-01 -o csv");
  want = all.substr(0, all.find('\n') + 1);
  for (size_t at = 0; (at = all.find("\nteam-a,", at)) != std::string::npos; ++at)
    want += all.substr(at + 1, all.find('\n', at + 1) - at);
  EXPECT_EQ(*csv, want);
  EXPECT_EQ(csv->find("__idle__"), std::string::npos);
  EXPECT_EQ(csv->find("team-b"), std::string::npos);
}

TEST_F(LedgerBillsTest, TheFocusCsvIsTheBytesOfArbiterLedgerExport) {
  auto all = LedgerBillsFocusCsv(Db(), "2026-01", {});
  ASSERT_TRUE(all.ok()) << all.message();
  EXPECT_EQ(*all, Export("--month 2026-01"));
  EXPECT_NE(all->find(",__idle__,"), std::string::npos);  // the admin sees the idle capacity
  EXPECT_EQ(*LedgerBillsFocusCsv(Db(), "", {}), *all);    // no month: the newest with rows
  // A month without rows: the header alone, as the command prints it.
  EXPECT_EQ(*LedgerBillsFocusCsv(Db(), "2026-02", {}), Export("--month 2026-02"));
}

TEST_F(LedgerBillsTest, ATenantsFocusCsvIsTheExportOfItsOwnNamespacesWithoutIdleRows) {
  const std::string a = Export("--month 2026-01 --namespace team-a");
  const std::string b = Export("--month 2026-01 --namespace team-b");
  const std::string header = a.substr(0, a.find('\n') + 1);
  ASSERT_GT(a.size(), header.size());
  ASSERT_GT(b.size(), header.size());
  EXPECT_EQ(*LedgerBillsFocusCsv(Db(), "2026-01", Tenant("team-b")), b);
  // Two namespaces: the header, then each one's rows in the export's (namespace) order.
  BillsViewer both{false, [](const std::string& n) { return n == "team-b" || n == "team-a"; }};
  auto two = LedgerBillsFocusCsv(Db(), "2026-01", both);
  ASSERT_TRUE(two.ok()) << two.message();
  EXPECT_EQ(*two, a + b.substr(header.size()));
  EXPECT_EQ(two->find("__idle__"), std::string::npos);
  // A namespace without rows: the header alone (the command refuses a namespace it never saw).
  EXPECT_EQ(*LedgerBillsFocusCsv(Db(), "2026-01", Tenant("team-z")), header);
  EXPECT_FALSE(LedgerBillsFocusCsv(Db(), "2026-1", Tenant("team-b")).ok());
  EXPECT_FALSE(LedgerBillsFocusCsv("", "2026-01", {}).ok());
}

TEST_F(LedgerBillsTest, AMalformedMonthIsRefusedAndNoLedgerSaysWhy) {
  auto bad = LedgerBills(Db(), "2026-13", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("\"2026-13\" is not a month: expected YYYY-MM"), std::string::npos);
  EXPECT_FALSE(LedgerBillsCsv(Db(), "26-01", {}).ok());
  auto none = LedgerBills("", "", {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)["available"], false);
  EXPECT_NE((*none)["why"].get<std::string>().find("--ledger"), std::string::npos);
  // A ledger the meter job has not created yet: available, nothing in it.
  auto missing = LedgerBills((*dir_ / "not-yet.db").string(), "", {});
  ASSERT_TRUE(missing.ok()) << missing.message();
  EXPECT_EQ((*missing)["months"], nlohmann::json::array());
  EXPECT_TRUE((*missing)["month"].is_null());
  EXPECT_FALSE(std::filesystem::exists(*dir_ / "not-yet.db"));
}

}  // namespace
}  // namespace arbiter::server
