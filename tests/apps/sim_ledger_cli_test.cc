// `arbiter sim --ledger`: a simulation's bill written to the SQLite ledger reproduces the
// report's invoices through `arbiter invoice --db`, byte for byte (digests included), and
// writing the same run again adds nothing. Also the sim's refusals of bad flags.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_command.h"

namespace sim_ledger_cli_test {

namespace fs = std::filesystem;

struct CliRun {
  int rc = -1;
  std::string out;
};

CliRun Arbiter(const std::string& args, bool with_stderr = true) {
  std::string cmd =
      std::string(ARBITER_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliRun r;
  {
    auto run = arbiter::testing::RunCommand(cmd);
    r.rc = run.rc;
    r.out = std::move(run.out);
  }
  return r;
}

fs::path Scratch() {
  auto dir = fs::temp_directory_path() / ("arbiter-simledger-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

nlohmann::json ReadJson(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Runs the pool with --ledger and checks every report invoice (tenants and __idle__) against
// `arbiter invoice --db --namespace NS --from --to -o json`.
void ExpectLedgerReproducesReport(const std::string& pool, const std::string& name) {
  const fs::path dir = Scratch();
  const std::string db = (dir / (name + ".db")).string(),
                    report = (dir / (name + ".json")).string();
  for (const char* s : {"", "-wal", "-shm"}) fs::remove(db + s);
  CliRun sim = Arbiter("sim -q -f " + pool + " --report-json " + report + " --ledger " + db);
  ASSERT_EQ(sim.rc, 0) << sim.out;
  EXPECT_NE(sim.out.find("ledger: " + db + ": "), std::string::npos) << sim.out;
  EXPECT_NE(sim.out.find(" inserted, 0 unchanged"), std::string::npos) << sim.out;
  auto invoices = ReadJson(report)["invoices"];
  ASSERT_GE(invoices.size(), 3u);
  for (const auto& want : invoices) {
    std::string ns = want["namespace"], from = want["from"], to = want["to"];
    SCOPED_TRACE(ns);
    CliRun inv = Arbiter("invoice --db " + db + " --namespace " + ns + " --from " + from +
                             " --to " + to + " -o json",
                         false);
    ASSERT_EQ(inv.rc, 0) << inv.out;
    auto got = nlohmann::json::parse(inv.out);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["digest"], want["digest"]);
    EXPECT_EQ(got[0].dump(), want.dump());
  }
  // The same run again: nothing new, the same invoices.
  CliRun again = Arbiter("sim -q -f " + pool + " --ledger " + db);
  ASSERT_EQ(again.rc, 0) << again.out;
  EXPECT_NE(again.out.find(" 0 inserted, "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(" 0 replaced, 0 corrected"), std::string::npos) << again.out;
}

TEST(SimLedgerCli, LedgerInvoicesEqualTheSimulationReport) {
  ExpectLedgerReproducesReport(kPool, "pool");
}

// With idle cost spread by share, the ledger reproduces the tenants' IdleShare lines too.
TEST(SimLedgerCli, LedgerReproducesIdleSpread) {
  std::ifstream in(kPool);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string anchor = "  mode: Max\n  blendedRequestWeight: \"0.5\"\n";
  auto at = text.find(anchor);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + anchor.size(), "  shareIdle: Weighted\n");
  const fs::path pool = Scratch() / "pool-shared-idle.yaml";
  std::ofstream(pool) << text;
  CliRun sim = Arbiter("sim -q -f " + pool.string());
  ASSERT_EQ(sim.rc, 0) << sim.out;
  EXPECT_NE(sim.out.find("spread to tenants (PriceBook shareIdle)"), std::string::npos) << sim.out;
  ExpectLedgerReproducesReport(pool.string(), "shared-idle");
}

TEST(SimLedgerCli, RefusesNegativeSeedAndLedgerWithoutPriceBook) {
  CliRun neg = Arbiter("sim -q -f " + kPool + " --seed -1");
  EXPECT_EQ(neg.rc, 2) << neg.out;
  EXPECT_NE(neg.out.find("arbiter sim: --seed: must be a non-negative integer, got -1"),
            std::string::npos)
      << neg.out;
  CliRun trace = Arbiter("sim --nodes x.csv --pods y.csv --seed -5");
  EXPECT_EQ(trace.rc, 2) << trace.out;
  EXPECT_NE(trace.out.find("arbiter sim: --seed: must be a non-negative integer, got -5"),
            std::string::npos)
      << trace.out;
  // A pool without a PriceBook has nothing to bill: --ledger is refused and no file appears.
  const fs::path dir = Scratch();
  const fs::path pool = dir / "no-pricebook.yaml";
  std::ofstream(pool)
      << "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity: {cpu: \"4\"}\n";
  const std::string db = (dir / "none.db").string();
  CliRun r = Arbiter("sim -q -f " + pool.string() + " --ledger " + db);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("no PriceBook"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(db));
}

}  // namespace sim_ledger_cli_test
