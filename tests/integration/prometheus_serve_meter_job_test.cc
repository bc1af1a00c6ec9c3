// The meter job of `arbiter serve` (--meter-prometheus, --ledger; server/billing/meter_job.h)
// against the fixture's Prometheus (backfilled history, 2026-01-05..07): a ledger whose watermark
// says "metered and sealed until 2026-01-05T00:00Z" is caught up to the last closed hour, sealed,
// and holds exactly the rows `arbiter meter` writes for the same days. (Open, partial hours metered
// every few seconds: prometheus_serve_e2e_test.cc.)
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "adapters/prometheus/meter_ledger.h"
#include "adapters/sqlite/ledger.h"
#include "core/billing/metering.h"
#include "integration/services.h"
#include "server/serve_process.h"

namespace arbiter {
namespace prometheus_serve_meter_job_test {

using testing::Arbiter;
using testing::PrometheusUrl;
using testing::RunCommandSplit;
using testing::Scratch;

constexpr Millis kJan5 = 1767571200000;  // 2026-01-05T00:00:00Z

Millis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<Millis> Watermark(const std::string& db) {
  auto l = sqlite::Ledger::OpenForReading(db);
  if (!l.ok()) return std::nullopt;
  auto w = prometheus::ReadMeterWatermark((*l)->handle());
  return w.ok() ? *w : std::nullopt;
}

TEST(PrometheusServeMeterJob, CatchesUpFromItsWatermarkSealsAndWritesWhatArbiterMeterWrites) {
  auto dir = Scratch("meter-job");
  std::filesystem::copy_file(testing::PrometheusFixturePriceBook(), dir / "pricebook.yaml");
  // Pages of a day: the catch-up reads eleven months, mostly empty.
  std::ofstream(dir / "metering.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  page: 24h\n";
  const std::string db = (dir / "job.db").string();
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    ASSERT_TRUE(prometheus::WriteMeterWatermark((*l)->handle(), kJan5).ok());
  }
  testing::ServeProcess serve(
      dir / "serve", {"--ledger", db, "--meter-prometheus", PrometheusUrl(), "--price-book",
                      (dir / "pricebook.yaml").string(), "--meter-config",
                      (dir / "metering.yaml").string(), "--meter-delay", "5m"});
  ASSERT_TRUE(serve.Start()) << serve.log();
  // Caught up: the watermark reaches the last hour that ended 5 minutes ago (deadline 150 s).
  const Millis closable = (WallNow() - 300000) / billing::kHourMs * billing::kHourMs;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
       Watermark(db).value_or(0) < closable && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(serve.Stop(), 0);
  ASSERT_GE(Watermark(db).value_or(0), closable) << serve.log().substr(0, 4000);
  const std::string log = serve.log();
  // The first window starts at the watermark and is sealed.
  EXPECT_NE(log.find("\"from\":\"2026-01-05T00:00:00Z\",\"inserted\":"), std::string::npos)
      << log.substr(0, 4000);
  EXPECT_EQ(log.find("\"level\":\"warning\""), std::string::npos) << log.substr(0, 4000);
  EXPECT_EQ(log.find("\"level\":\"error\""), std::string::npos);

  // The same days metered by the command (every day of the fixture, gen_fixture.py), sealed
  // likewise: the same rows, versions and seals.
  const std::string cli = (dir / "cli.db").string();
  auto m = RunCommandSplit(Arbiter() + " meter -q --prometheus " + PrometheusUrl() +
                               " --from 2026-01-05T00:00:00Z --to 2026-01-09T00:00:00Z --db " +
                               cli + " -f " + (dir / "pricebook.yaml").string() +
                               " --seal-before 2026-01-09T00:00:00Z",
                           dir);
  ASSERT_EQ(m.rc, 0) << m.out << m.err;
  const std::string window = " --from 2026-01-05T00:00:00Z --to 2026-01-09T00:00:00Z";
  auto job_rows = RunCommandSplit(Arbiter() + " ledger export --db " + db + window, dir);
  auto cli_rows = RunCommandSplit(Arbiter() + " ledger export --db " + cli + window, dir);
  ASSERT_EQ(job_rows.rc, 0) << job_rows.err;
  EXPECT_GT(cli_rows.out.size(), 1000u);
  EXPECT_EQ(job_rows.out, cli_rows.out);
  auto job_inv =
      RunCommandSplit(Arbiter() + " invoice --db " + db + " --month 2026-01 -o csv", dir);
  auto cli_inv =
      RunCommandSplit(Arbiter() + " invoice --db " + cli + " --month 2026-01 -o csv", dir);
  EXPECT_EQ(job_inv.out, cli_inv.out);
  EXPECT_NE(job_inv.out.find("fx-a,CNY,"), std::string::npos) << job_inv.out;
}

// Issue 28: a job that fell a day behind (its watermark 30 closed hours back) catches up against
// the real Prometheus in bounded windows (--meter-batch 6h): each sealed and logged with the lag
// left, which reaches 0, as arbiter_meter_lag_seconds on /metrics does.
TEST(PrometheusServeMeterJob, CatchesUpADayInBoundedWindowsWithTheLagInTheLogAndOnMetrics) {
  auto dir = Scratch("meter-job-lag");
  std::filesystem::copy_file(testing::PrometheusFixturePriceBook(), dir / "pricebook.yaml");
  const std::string db = (dir / "lag.db").string();
  const Millis closable = (WallNow() - 300000) / billing::kHourMs * billing::kHourMs;
  const Millis start = closable - 30 * billing::kHourMs;
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    ASSERT_TRUE(prometheus::WriteMeterWatermark((*l)->handle(), start).ok());
  }
  testing::ServeProcess serve(dir / "serve", {"--ledger", db, "--meter-prometheus", PrometheusUrl(),
                                              "--price-book", (dir / "pricebook.yaml").string(),
                                              "--meter-delay", "5m", "--meter-batch", "6h"});
  ASSERT_TRUE(serve.Start()) << serve.log();
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       Watermark(db).value_or(0) < closable && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto metrics = testing::RunCommand("curl -s " + serve.url() + "/metrics");
  EXPECT_EQ(serve.Stop(), 0);
  ASSERT_GE(Watermark(db).value_or(0), closable) << serve.log().substr(0, 4000);
  EXPECT_NE(metrics.out.find("\narbiter_meter_lag_seconds 0\n"), std::string::npos)
      << metrics.out.substr(metrics.out.find("arbiter_meter"));
  // The windows: consecutive, at most 6 hours each, sealed, with the lag left decreasing to 0.
  const std::string log = serve.log();
  std::vector<std::pair<Millis, Millis>> windows;
  std::vector<double> lags;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("msg", "") != "meter" || !j.contains("lagSeconds")) continue;
    EXPECT_EQ(j.value("level", ""), "info") << line;
    EXPECT_TRUE(j.value("sealed", false)) << line;
    windows.emplace_back(*ParseRfc3339(j["from"].get<std::string>()),
                         *ParseRfc3339(j["to"].get<std::string>()));
    lags.push_back(j["lagSeconds"].get<double>());
  }
  ASSERT_GE(windows.size(), 5u) << log.substr(0, 4000);
  EXPECT_EQ(windows.front().first, start);
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_LE(windows[i].second - windows[i].first, 6 * billing::kHourMs) << i;
    if (i > 0) {
      EXPECT_EQ(windows[i].first, windows[i - 1].second) << i;
      EXPECT_LT(lags[i], lags[i - 1]) << i;
    }
  }
  EXPECT_EQ(lags.back(), 0) << log.substr(0, 4000);
  EXPECT_GE(lags.front(), 24 * 3600.0);
  EXPECT_EQ(log.find("\"level\":\"warning\""), std::string::npos) << log.substr(0, 4000);
}

}  // namespace prometheus_serve_meter_job_test
}  // namespace arbiter
