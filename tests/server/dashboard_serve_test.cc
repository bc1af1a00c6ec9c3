// The dashboard's routes on a real `arbiter serve` (--dashboard-token-file): the embedded web/
// files at /ui/, and /ui/api/* answering 401 without a known token and each viewer's namespaces
// with one. (The pages themselves run in Chromium: tests/browser.)
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/serve_process.h"

namespace arbiter::testing {
namespace {

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

std::filesystem::path Tokens(const std::filesystem::path& dir) {
  Write(dir / "tokens.csv",
        "admin-token,admin,1,\"system:masters\"\n"
        "team-b-token,bob,3,\"arbiter:viewers:team-b\"\n");
  return dir / "tokens.csv";
}

httplib::Result Get(const ServeProcess& s, const std::string& path, const std::string& token) {
  httplib::Client c("127.0.0.1", s.port());
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return c.Get(path, h);
}

std::vector<std::string> TenantNames(const std::string& body) {
  std::vector<std::string> out;
  const nlohmann::json parsed = nlohmann::json::parse(body);
  for (const auto& t : parsed.at("tenants")) out.push_back(t.at("namespace"));
  return out;
}

TEST(DashboardServe, ServesTheEmbeddedPageAndRefusesDataWithoutAKnownToken) {
  const auto dir = ScratchDir("dashboard-static");
  ServeProcess s(dir, {"--dashboard-token-file", Tokens(dir).string()});
  ASSERT_TRUE(s.Start()) << s.log();
  auto index = Get(s, "/ui/", "");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<title>Arbiter dashboard</title>"), std::string::npos);
  auto js = Get(s, "/ui/app.js", "");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(Get(s, "/ui/no-such-file.js", "")->status, 404);
  EXPECT_EQ(Get(s, "/ui/api/pool", "")->status, 401);
  EXPECT_EQ(Get(s, "/ui/api/pool", "wrong-token")->status, 401);
  EXPECT_EQ(Get(s, "/ui/api/pool", "admin-token")->status, 200);
  EXPECT_EQ(s.Stop(), 0);
}

TEST(DashboardServe, ATenantTokenSeesOnlyItsNamespaceAfterKubectlApply) {
  const auto dir = ScratchDir("dashboard-tenant");
  ServeProcess s(dir, {"--dashboard-token-file", Tokens(dir).string()});
  ASSERT_TRUE(s.Start()) << s.log();
  auto apply = s.Kubectl("apply --validate=false -f " + kPool);
  ASSERT_EQ(apply.rc, 0) << apply.out;
  auto admin = Get(s, "/ui/api/tenants", "admin-token");
  ASSERT_EQ(admin->status, 200);
  EXPECT_EQ(TenantNames(admin->body),
            (std::vector<std::string>{"default", "team-a", "team-b", "team-c"}));
  auto bob = Get(s, "/ui/api/tenants", "team-b-token");
  ASSERT_EQ(bob->status, 200);
  EXPECT_EQ(TenantNames(bob->body), (std::vector<std::string>{"team-b"}));
  auto queue = Get(s, "/ui/api/queue", "team-b-token");
  ASSERT_EQ(queue->status, 200);
  EXPECT_EQ(queue->body.find("team-a"), std::string::npos) << queue->body;
  EXPECT_EQ(queue->body.find("team-c"), std::string::npos) << queue->body;
  for (const char* bad : {"0", "10001", "x", "-1", "5x"}) {  // ?limit= is a number of rows
    auto refused = Get(s, std::string("/ui/api/queue?limit=") + bad, "team-b-token");
    EXPECT_EQ(refused->status, 400) << bad;
    EXPECT_NE(refused->body.find("from 1 to 10000"), std::string::npos) << refused->body;
  }
  auto one = Get(s, "/ui/api/queue?limit=1", "admin-token");
  ASSERT_EQ(one->status, 200);
  const auto page = nlohmann::json::parse(one->body);
  EXPECT_LE(page["pending"].size(), 1u);
  EXPECT_GE(page["visible"].get<int>(), static_cast<int>(page["pending"].size()));
  EXPECT_EQ(Get(s, "/ui/api/workload?namespace=team-a&name=train-a-1", "team-b-token")->status,
            404);
  EXPECT_EQ(Get(s, "/ui/api/workload?namespace=team-a&name=train-a-1", "admin-token")->status, 200);
  EXPECT_EQ(s.Stop(), 0);
}

// The sampler thread records the applied pool (it samples within a second of a change): the
// history has every tenant for the admin, team-b's alone for its token, and prices idle GPUs
// with the applied PriceBook.
TEST(DashboardServe, TheDaemonKeepsAHistoryThatATenantSeesOnlyItsPartOf) {
  const auto dir = ScratchDir("dashboard-history");
  ServeProcess s(dir, {"--dashboard-token-file", Tokens(dir).string()});
  ASSERT_TRUE(s.Start()) << s.log();
  EXPECT_EQ(Get(s, "/ui/api/history", "")->status, 401);
  auto apply = s.Kubectl("apply --validate=false -f " + kPool);
  ASSERT_EQ(apply.rc, 0) << apply.out;
  nlohmann::json admin;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Get(s, "/ui/api/history", "admin-token");
    ASSERT_EQ(r->status, 200);
    admin = nlohmann::json::parse(r->body);
    if (admin["tenants"].contains("team-a") && admin["tenants"].contains("team-c")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(admin["tenants"].contains("team-b")) << admin.dump().substr(0, 2000);
  EXPECT_EQ(admin["idle"]["priceBook"], "standard");
  EXPECT_EQ(admin["idle"]["currency"], "CNY");
  EXPECT_FALSE(admin["pool"]["capacity"]["nvidia.com/gpu"].empty());
  auto bob = Get(s, "/ui/api/history", "team-b-token");
  ASSERT_EQ(bob->status, 200);
  const auto mine = nlohmann::json::parse(bob->body);
  ASSERT_EQ(mine["tenants"].size(), 1u) << bob->body.substr(0, 2000);
  EXPECT_TRUE(mine["tenants"].contains("team-b"));
  EXPECT_EQ(Get(s, "/ui/api/tenants", "team-b-token")->body.find("team-a/"), std::string::npos);
  EXPECT_EQ(s.Stop(), 0);
}

// The history is kept in the daemon's data directory (DIR/history.db, written by the sampler in
// batches and at the end): after a restart on the same --data /ui/api/history starts with the
// samples taken before, their seqs continued; ?since=SEQ answers only the newer ones.
TEST(DashboardServe, TheHistorySurvivesARestartOnTheSameDataAndSinceAnswersOnlyNewerSamples) {
  const auto dir = ScratchDir("dashboard-history-restart");
  ServeProcess s(dir, {"--dashboard-token-file", Tokens(dir).string()});
  ASSERT_TRUE(s.Start()) << s.log();
  auto apply = s.Kubectl("apply --validate=false -f " + kPool);
  ASSERT_EQ(apply.rc, 0) << apply.out;
  nlohmann::json before;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    before = nlohmann::json::parse(Get(s, "/ui/api/history", "admin-token")->body);
    if (before["tenants"].contains("team-a") && before["tenants"].contains("team-c")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(before["tenants"].contains("team-c")) << before.dump().substr(0, 2000);
  EXPECT_EQ(before["store"]["restored"], 0);
  EXPECT_EQ(before["store"]["error"], nullptr);
  EXPECT_EQ(s.Stop(), 0);  // what was sampled is written at the end, and nothing after it
  ASSERT_TRUE(std::filesystem::exists(dir / "data" / "history.db"));

  ASSERT_TRUE(s.Start()) << s.log();
  auto r = Get(s, "/ui/api/history", "admin-token");
  ASSERT_EQ(r->status, 200);
  const auto after = nlohmann::json::parse(r->body);
  const size_t n = before["times"].size();
  EXPECT_GE(after["store"]["restored"].get<size_t>(), n) << after["store"];
  ASSERT_GE(after["times"].size(), n);
  // A column the answer lacks (no sample had the resource) reads 0; null: the tenant is absent.
  auto at = [](const nlohmann::json& cols, const std::string& r, size_t i) {
    return cols.contains(r) ? cols[r][i] : nlohmann::json(0);
  };
  const auto& a_before = before["tenants"]["team-a"];
  const auto& a_after = after["tenants"]["team-a"];
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(after["times"][i], before["times"][i]) << i;
    EXPECT_EQ(at(after["pool"]["allocated"], "nvidia.com/gpu", i),
              at(before["pool"]["allocated"], "nvidia.com/gpu", i))
        << i;
    EXPECT_EQ(a_after["fairShare"][i], a_before["fairShare"][i]) << i;
    if (!a_before["fairShare"][i].is_null()) {
      EXPECT_EQ(at(a_after["used"], "nvidia.com/gpu", i), at(a_before["used"], "nvidia.com/gpu", i))
          << i;
    }
  }
  EXPECT_GE(after["seq"].get<int64_t>(), before["seq"].get<int64_t>());
  // A tenant's restored history is its own part.
  const auto bob = nlohmann::json::parse(Get(s, "/ui/api/history", "team-b-token")->body);
  EXPECT_EQ(bob["tenants"].size(), 1u);
  EXPECT_TRUE(bob["tenants"].contains("team-b"));
  EXPECT_FALSE(bob["store"].contains("path")) << bob["store"];  // the server's files: admins'
  EXPECT_EQ(after["store"]["path"], (dir / "data" / "history.db").string());
  EXPECT_GE(bob["times"].size(), n);

  // Since the seq the first daemon answered: only the samples after it (none, or what the new
  // daemon sampled), appended; malformed: 400.
  auto newer = Get(s, "/ui/api/history?since=" + before["seq"].dump(), "admin-token");
  ASSERT_EQ(newer->status, 200);
  const auto inc = nlohmann::json::parse(newer->body);
  EXPECT_EQ(inc["full"], false);
  for (const auto& t : inc["times"])
    EXPECT_GE(t.get<int64_t>(), before["times"].back().get<int64_t>());
  EXPECT_EQ(inc["times"].size(),
            static_cast<size_t>(inc["seq"].get<int64_t>() - before["seq"].get<int64_t>()));
  EXPECT_EQ(Get(s, "/ui/api/history?since=x1", "admin-token")->status, 400);
  EXPECT_EQ(Get(s, "/ui/api/history?since=-1", "admin-token")->status, 400);
  EXPECT_EQ(s.Stop(), 0);
}

// The bills page's endpoints on a daemon whose ledger `arbiter sim --ledger` wrote: a tenant gets
// its own invoice only, and the CSV is `arbiter invoice -o csv` of the same ledger and month.
TEST(DashboardServe, BillsComeFromTheLedgerAndATenantGetsOnlyItsOwnInvoice) {
  const auto dir = ScratchDir("dashboard-bills");
  const std::string db = (dir / "ledger.db").string();
  const std::string arbiter = ARBITER_BINARY;
  ASSERT_EQ(RunCommand(arbiter + " sim -f " + kPool + " --ledger " + db + " >/dev/null 2>&1").rc,
            0);
  ServeProcess s(dir, {"--dashboard-token-file", Tokens(dir).string(), "--ledger", db});
  ASSERT_TRUE(s.Start()) << s.log();
  EXPECT_EQ(Get(s, "/ui/api/bills?month=2026-01", "")->status, 401);
  EXPECT_EQ(Get(s, "/ui/api/bills.csv?month=2026-01", "")->status, 401);
  auto names = [](const std::string& body) {
    std::vector<std::string> out;
    const auto doc =
        nlohmann::json::parse(body);  // kept: a range-for over a temporary's member dangles
    for (const auto& inv : doc.at("invoices")) out.push_back(inv["namespace"]);
    return out;
  };
  auto admin = Get(s, "/ui/api/bills?month=2026-01", "admin-token");
  ASSERT_EQ(admin->status, 200) << admin->body;
  const auto all = names(admin->body);
  EXPECT_NE(std::find(all.begin(), all.end(), "team-a"), all.end()) << admin->body.substr(0, 500);
  auto bob = Get(s, "/ui/api/bills?month=2026-01", "team-b-token");
  ASSERT_EQ(bob->status, 200);
  EXPECT_EQ(names(bob->body), (std::vector<std::string>{"team-b"}));
  auto csv = Get(s, "/ui/api/bills.csv?month=2026-01", "team-b-token");
  ASSERT_EQ(csv->status, 200);
  EXPECT_EQ(csv->get_header_value("Content-Disposition"),
            "attachment; filename=\"invoices-2026-01.csv\"");
  const auto cli =
      RunCommand(arbiter + " invoice --db " + db + " --month 2026-01 --namespace team-b -o csv");
  ASSERT_EQ(cli.rc, 0);
  EXPECT_EQ(csv->body, cli.out);
  EXPECT_EQ(csv->body.find("team-a"), std::string::npos);
  // The FOCUS download: `arbiter ledger export` of the same month, a tenant's own namespace.
  EXPECT_EQ(Get(s, "/ui/api/bills.focus.csv?month=2026-01", "")->status, 401);
  auto focus = Get(s, "/ui/api/bills.focus.csv?month=2026-01", "team-b-token");
  ASSERT_EQ(focus->status, 200) << focus->body;
  EXPECT_EQ(focus->get_header_value("Content-Disposition"),
            "attachment; filename=\"focus-2026-01.csv\"");
  const auto export_b =
      RunCommand(arbiter + " ledger export --db " + db + " --month 2026-01 --namespace team-b");
  ASSERT_EQ(export_b.rc, 0);
  EXPECT_EQ(focus->body, export_b.out);
  auto focus_all = Get(s, "/ui/api/bills.focus.csv?month=2026-01", "admin-token");
  ASSERT_EQ(focus_all->status, 200);
  EXPECT_EQ(focus_all->body,
            RunCommand(arbiter + " ledger export --db " + db + " --month 2026-01").out);
  EXPECT_EQ(Get(s, "/ui/api/bills.focus.csv?month=2026-13", "admin-token")->status, 400);
  EXPECT_EQ(Get(s, "/ui/api/bills?month=2026-13", "admin-token")->status, 400);
  EXPECT_EQ(s.Stop(), 0);
}

TEST(DashboardServe, ABadTokenFileStopsTheDaemonWithItsLine) {
  const auto dir = ScratchDir("dashboard-badtokens");
  Write(dir / "tokens.csv", "ok,user,1\nbroken\n");
  ServeProcess s(dir, {"--dashboard-token-file", (dir / "tokens.csv").string()});
  EXPECT_FALSE(s.Start());
  EXPECT_NE(s.log().find("found 1 (line 2)"), std::string::npos) << s.log();
}

}  // namespace
}  // namespace arbiter::testing
