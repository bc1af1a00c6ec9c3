// `arbiter serve`'s meter job flags and failures without a Prometheus (the job against a real
// one: tests/integration/prometheus_serve_*_test.cc): wrong flags are usage errors; a job without
// a PriceBook or with an unreachable Prometheus logs why, once while it repeats, and moves nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "adapters/prometheus/meter_ledger.h"
#include "adapters/sqlite/ledger.h"
#include "server/serve_process.h"

namespace arbiter::testing {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

bool WaitForLog(const ServeProcess& s, const std::string& what, int seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (s.log().find(what) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(ServeMeterJob, WrongMeterFlagsAreUsageErrors) {
  auto dir = ScratchDir("meter-flags");
  auto serve = [&](const std::string& args) {
    return RunCommand(std::string(ARBITER_BINARY) + " serve --data " + (dir / "d").string() +
                      " --listen 127.0.0.1:0 " + args + " 2>&1");
  };
  auto no_ledger = serve("--meter-prometheus http://127.0.0.1:1");
  EXPECT_EQ(no_ledger.rc, 2) << no_ledger.out;
  EXPECT_NE(no_ledger.out.find("--meter-prometheus: needs --ledger DB"), std::string::npos)
      << no_ledger.out;
  auto delay = serve("--ledger " + (dir / "l.db").string() +
                     " --meter-prometheus http://127.0.0.1:1 --meter-delay soon");
  EXPECT_EQ(delay.rc, 2) << delay.out;
  EXPECT_NE(delay.out.find("--meter-delay"), std::string::npos) << delay.out;
  auto batch = serve("--ledger " + (dir / "l.db").string() +
                     " --meter-prometheus http://127.0.0.1:1 --meter-batch 90m");
  EXPECT_EQ(batch.rc, 2) << batch.out;
  EXPECT_NE(batch.out.find("--meter-batch: must be whole hours"), std::string::npos) << batch.out;
  auto url = serve("--ledger " + (dir / "l.db").string() + " --meter-prometheus ftp://x");
  EXPECT_EQ(url.rc, 1) << url.out;
  EXPECT_NE(url.out.find("--meter-prometheus"), std::string::npos) << url.out;
}

TEST(ServeMeterJob, NoPriceBookThenAnUnreachablePrometheusAreLoggedOnceAndMoveNothing) {
  auto dir = ScratchDir("meter-failures");
  std::ofstream(dir / "metering.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: "
         "PrometheusMetering\nspec:\n  retries: 0\n  timeout: 2s\n";
  const std::string db = (dir / "ledger.db").string();
  ServeProcess serve(dir / "serve",
                     {"--ledger", db, "--meter-prometheus", "http://127.0.0.1:1", "--meter-every",
                      "1s", "--meter-config", (dir / "metering.yaml").string()});
  ASSERT_TRUE(serve.Start()) << serve.log();
  ASSERT_TRUE(WaitForLog(serve, "no PriceBook to rate with")) << serve.log();
  // A PriceBook applied through the API is what the job rates with next.
  std::ofstream(dir / "pb.yaml") << "apiVersion: arbiter.dev/v1alpha1\nkind: PriceBook\n"
                                    "metadata: {name: p}\nspec:\n  currency: EUR\n"
                                    "  effectiveFrom: \"2026-01-01T00:00:00Z\"\n"
                                    "  prices: {cpu: \"1\"}\n";
  auto apply = serve.Kubectl("apply -f " + (dir / "pb.yaml").string());
  ASSERT_EQ(apply.rc, 0) << apply.out;
  ASSERT_TRUE(WaitForLog(serve, "unreachable")) << serve.log();
  EXPECT_EQ(serve.Stop(), 0);
  const std::string log = serve.log();
  EXPECT_EQ(Count(log, "no PriceBook to rate with"), 1u) << log;
  EXPECT_EQ(Count(log, "unreachable"), 1u) << log;
  EXPECT_EQ(Count(log, "\"level\":\"warning\",\"msg\":\"meter\""), 2u) << log;
  EXPECT_EQ(Count(log, "\"level\":\"info\",\"msg\":\"meter\""), 0u) << log;
  // Nothing moved: no rows, no watermark.
  auto inv = RunCommand(std::string(ARBITER_BINARY) + " invoice --db " + db + " 2>&1");
  EXPECT_NE(inv.out.find("no billed usage"), std::string::npos) << inv.out;
}

// Issue 28: Prometheus down for a day. The job cannot meter, and /metrics says how far behind it
// is (the closed hours after its watermark) and that its runs fail; the watermark stays.
TEST(ServeMeterJob, PrometheusDownForADayShowsTheLagOnMetrics) {
  auto dir = ScratchDir("meter-lag");
  std::ofstream(dir / "metering.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: "
         "PrometheusMetering\nspec:\n  retries: 0\n  timeout: 2s\n";
  std::ofstream(dir / "pb.yaml") << "apiVersion: arbiter.dev/v1alpha1\nkind: PriceBook\n"
                                    "metadata: {name: p}\nspec:\n  currency: EUR\n"
                                    "  effectiveFrom: \"2026-01-01T00:00:00Z\"\n"
                                    "  prices: {cpu: \"1\"}\n";
  const std::string db = (dir / "ledger.db").string();
  constexpr int64_t kHourMs = 3600000;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t closable = (now - 300000) / kHourMs * kHourMs;  // --meter-delay 5m
  const int64_t watermark = closable - 24 * kHourMs;
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    ASSERT_TRUE(prometheus::WriteMeterWatermark((*l)->handle(), watermark).ok());
  }
  ServeProcess serve(dir / "serve",
                     {"--ledger", db, "--meter-prometheus", "http://127.0.0.1:1", "--meter-config",
                      (dir / "metering.yaml").string(), "--price-book", (dir / "pb.yaml").string(),
                      "--meter-batch", "6h", "--meter-every", "1s"});
  ASSERT_TRUE(serve.Start()) << serve.log();
  ASSERT_TRUE(WaitForLog(serve, "unreachable")) << serve.log();
  auto metrics = RunCommand("curl -s " + serve.url() + "/metrics");
  EXPECT_EQ(serve.Stop(), 0);
  ASSERT_EQ(metrics.rc, 0) << metrics.out;
  // 24 closed hours behind (25 if an hour closed while the test ran).
  const bool lag = metrics.out.find("\narbiter_meter_lag_seconds 86400\n") != std::string::npos ||
                   metrics.out.find("\narbiter_meter_lag_seconds 90000\n") != std::string::npos;
  EXPECT_TRUE(lag) << metrics.out.substr(metrics.out.find("arbiter_meter"));
  EXPECT_NE(metrics.out.find("# TYPE arbiter_meter_lag_seconds gauge\n"), std::string::npos);
  EXPECT_NE(metrics.out.find("\narbiter_meter_watermark_seconds " +
                             std::to_string(watermark / 1000) + "\n"),
            std::string::npos)
      << metrics.out.substr(metrics.out.find("arbiter_meter"));
  EXPECT_EQ(metrics.out.find("\narbiter_meter_failures_total 0\n"), std::string::npos);
  EXPECT_NE(metrics.out.find("\narbiter_meter_windows_total 0\n"), std::string::npos);
  // Nothing moved.
  auto l = sqlite::Ledger::OpenForReading(db);
  ASSERT_TRUE(l.ok()) << l.message();
  EXPECT_EQ(*prometheus::ReadMeterWatermark((*l)->handle()), watermark);
}

}  // namespace
}  // namespace arbiter::testing
