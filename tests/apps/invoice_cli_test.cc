// `arbiter invoice`, `arbiter invoice ingest`, `arbiter ledger export|seal` as a user runs them.
#include <gtest/gtest.h>

#include "run_command.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace {

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

std::string Data(const char* f) { return std::string(ARBITER_SOURCE_DIR) + "/tests/data/billing/" + f; }

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

  CliRun json = Arbiter("invoice --db " + db +
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
  EXPECT_NE(csv.out.find("team-b,CNY,Usage,nvidia.com/mig-3g.40gb,NVIDIA-H100-80GB-HBM3,instance-second,Max,"
                         "standard@2026-01-01T00:00:00Z,7200,7200,7200,7,14.000000,"),
            std::string::npos)
      << csv.out;

  // The same input gives the same invoice, byte for byte, from a fresh ledger.
  const std::string db2 = FreshDb("b.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db2 + " --segments " + Data("segments.jsonl") +
                    " --pricebook " + Data("pricebook.json"))
                .rc,
            0);
  EXPECT_EQ(Arbiter("invoice --db " + db2 + " -o json").out, Arbiter("invoice --db " + db + " -o json").out);
}

TEST(InvoiceCli, LedgerExportAndSeal) {
  const std::string db = FreshDb("c.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") +
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
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos);
  const std::string db = FreshDb("d.db");
  const std::string bad = FreshDb("bad.jsonl");
  std::ofstream(bad) << "{\"workload\":\"a/b\",\"requests\":{\"cpu\":\"1\"},\"start\":5000,\"end\":1000}\n";
  CliRun r = Arbiter("invoice ingest --db " + db + " --segments " + bad + " --pricebook " + Data("pricebook.json"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("bad.jsonl:1:"), std::string::npos) << r.out;
  CliRun nobook = Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl"));
  EXPECT_EQ(nobook.rc, 1);
  EXPECT_NE(nobook.out.find("no PriceBook"), std::string::npos) << nobook.out;
  const std::string early = FreshDb("early.jsonl");
  std::ofstream(early) << "{\"workload\":\"a/b\",\"requests\":{\"cpu\":\"1\"},\"start\":\"2025-12-31T23:00:00Z\",\"end\":\"2026-01-01T01:00:00Z\"}\n";
  CliRun unpriced = Arbiter("invoice ingest --db " + db + " --segments " + early + " --pricebook " + Data("pricebook.json"));
  EXPECT_EQ(unpriced.rc, 1);
  EXPECT_NE(unpriced.out.find("no PriceBook is in force at 2025-12-31T23:00:00Z"), std::string::npos) << unpriced.out;
  CliRun badtime = Arbiter("invoice --db " + db + " --from yesterday");
  EXPECT_EQ(badtime.rc, 1);
}

}  // namespace

namespace {

// Regression (issue 4 review): `--from` after `--to` is refused, not an empty invoice.
TEST(InvoiceCli, ReversedWindowIsRefused) {
  const std::string db = FreshDb("rev.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") + " --pricebook " +
                    Data("pricebook.json"))
                .rc,
            0);
  CliRun r = Arbiter("invoice --db " + db + " --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--from 2026-01-02T00:00:00Z is after --to 2026-01-01T00:00:00Z"), std::string::npos)
      << r.out;
  CliRun e = Arbiter("ledger export --db " + db + " --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(e.rc, 2) << e.out;
  // An empty window [t, t) is not reversed: no usage, exit 0.
  CliRun empty = Arbiter("invoice --db " + db + " --from 2026-01-01T00:00:00Z --to 2026-01-01T00:00:00Z");
  EXPECT_EQ(empty.rc, 0) << empty.out;
}

// Regression (issue 4 review): a failed ingest leaves no new ledger file behind, and an existing
// ledger exactly as it was.
TEST(InvoiceCli, FailedIngestLeavesNoNewFileAndExistingLedgerUntouched) {
  const std::string bad = FreshDb("before-pricebook.jsonl");
  std::ofstream(bad) << R"({"workload":"team-a/x","requests":{"cpu":"1"},"start":"2025-06-01T00:00:00Z","end":"2025-06-01T01:00:00Z"})"
                     << "\n";
  const std::string fresh = FreshDb("fresh.db");
  CliRun r = Arbiter("invoice ingest --db " + fresh + " --segments " + bad + " --pricebook " + Data("pricebook.json"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("no PriceBook is in force"), std::string::npos) << r.out;
  for (const char* s : {"", "-wal", "-shm"}) EXPECT_FALSE(std::filesystem::exists(fresh + s)) << s;
  CliRun nobook = Arbiter("invoice ingest --db " + fresh + " --segments " + Data("segments.jsonl"));
  EXPECT_EQ(nobook.rc, 1) << nobook.out;
  EXPECT_NE(nobook.out.find("no PriceBook given"), std::string::npos) << nobook.out;
  EXPECT_FALSE(std::filesystem::exists(fresh));

  const std::string db = FreshDb("existing.db");
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + " --segments " + Data("segments.jsonl") + " --pricebook " +
                    Data("pricebook.json"))
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

}  // namespace
