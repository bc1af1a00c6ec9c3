// The Prometheus adapter's parsers: value text -> exact integers (property test against exact
// decimal arithmetic), URLs, KSM resource labels, the metering config file, and the queries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "adapters/http/http_client.h"
#include "adapters/prometheus/live_meter.h"
#include "adapters/prometheus/metering_config.h"
#include "adapters/prometheus/prometheus_client.h"

namespace arbiter::prometheus {
namespace {

using billing::i128;

i128 V(const char* text, i128 mul, i128 div = 1) {
  auto r = ScaleValue(text, mul, div);
  EXPECT_TRUE(r.ok()) << text << ": " << r.message();
  return r.ok() ? *r : -1;
}

TEST(PrometheusValue, DecimalsAndExponentsBecomeExactIntegers) {
  EXPECT_EQ(V("12.5", 1000000), 12500000);
  EXPECT_EQ(V("0.5", 1000), 500);
  EXPECT_EQ(V("0.30000000000000004", 1000), 300);  // float noise rounds away
  EXPECT_EQ(V("1e+06", 1), 1000000);
  EXPECT_EQ(V("4.2E-3", 1000000), 4200);
  EXPECT_EQ(V("17179869184", 1), 17179869184);
  EXPECT_EQ(V("-2.5", 1), -3);  // half away from zero
  EXPECT_EQ(V("2.5", 1), 3);
  EXPECT_EQ(V("0.0005", 1000), 1);
  EXPECT_EQ(V("0.0004999", 1000), 0);
  EXPECT_EQ(V("99", 10, 100), 10);  // 9.9 -> 10
  EXPECT_EQ(V("0.000000000000000000000000000000000000000001", 1000), 0);
  for (const char* bad : {"NaN", "+Inf", "-Inf", "", "1.2.3", "abc", "1e", "--1", "1e400"})
    EXPECT_FALSE(ScaleValue(bad, 1, 1).ok()) << bad;
}

TEST(PrometheusValue, RandomDecimalsRoundLikeExactArithmetic) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const int64_t whole = static_cast<int64_t>(rng() % 1000000000);
    const int frac_digits = static_cast<int>(rng() % 12);
    int64_t frac = 0, pow = 1;
    for (int k = 0; k < frac_digits; ++k) pow *= 10;
    if (frac_digits) frac = static_cast<int64_t>(rng() % static_cast<uint64_t>(pow));
    std::string f = std::to_string(frac);
    while (static_cast<int>(f.size()) < frac_digits) f = "0" + f;
    std::string text = std::to_string(whole) + (frac_digits ? "." + f : "");
    // value × 10^6 rounded half up, computed on integers.
    i128 num = static_cast<i128>(whole) * pow + frac;  // value × pow
    i128 scaled = num * 1000000;
    i128 q = scaled / pow, r = scaled % pow;
    if (2 * r >= pow) ++q;
    ASSERT_EQ(V(text.c_str(), 1000000), q) << text;
  }
}

TEST(PrometheusTime, MillisecondsAsSecondsText) {
  EXPECT_EQ(PromTime(1767571200000), "1767571200.000");
  EXPECT_EQ(PromTime(1767571200005), "1767571200.005");
  EXPECT_EQ(PromTime(-1500), "-1.500");
}

TEST(HttpUrl, ParsesTheFormsTheCommandsTake) {
  auto u = http::ParseUrl("clickhouse://bob:p%40ss@ch.example:8123/billing?secure=true");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, "clickhouse");
  EXPECT_EQ(u->user, "bob");
  EXPECT_EQ(u->password, "p@ss");
  EXPECT_EQ(u->host, "ch.example");
  EXPECT_EQ(u->port, 8123);
  EXPECT_EQ(u->path, "/billing");
  EXPECT_EQ(u->query.at("secure"), "true");
  auto v6 = http::ParseUrl("http://[::1]:9090/prom");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9090);
  for (const char* bad :
       {"127.0.0.1:9090", "http://", "http://h:99999", "http://h:x", "http://[::1"})
    EXPECT_FALSE(http::ParseUrl(bad).ok()) << bad;
}

TEST(KsmResourceLabel, MapsBackToKubernetesNames) {
  MeteringConfig c;
  EXPECT_EQ(ResourceFromKsmLabel("cpu", c), "cpu");
  EXPECT_EQ(ResourceFromKsmLabel("nvidia_com_gpu", c), "nvidia.com/gpu");
  EXPECT_EQ(ResourceFromKsmLabel("nvidia_com_gpu_shared", c), "nvidia.com/gpu.shared");
  EXPECT_EQ(ResourceFromKsmLabel("nvidia_com_mig_1g_10gb", c), "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(ResourceFromKsmLabel("nvidia_com_mig_1g_10gb_me", c), "nvidia.com/mig-1g.10gb+me");
  EXPECT_EQ(ResourceFromKsmLabel("ephemeral_storage", c), "ephemeral-storage");
  EXPECT_EQ(ResourceFromKsmLabel("hugepages_2Mi", c), "hugepages-2Mi");
  c.resources["example_com_fpga"] = "example.com/fpga";
  EXPECT_EQ(ResourceFromKsmLabel("example_com_fpga", c), "example.com/fpga");
}

std::string WriteFile(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("arbiter-metering-" + name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(MeteringConfigFile, ReadsEveryFieldAndNamesMistakes) {
  auto ok = LoadMeteringConfig(WriteFile("ok.yaml", R"(apiVersion: arbiter.dev/v1alpha1
kind: PrometheusMetering
spec:
  scrapeInterval: 15s
  page: 2h
  requestGapBridge: 1m
  timeout: 10s
  retries: 1
  selector: 'cluster="prod"'
  series: {cpuUsage: my_cpu_total}
  gpuUsage: {metric: DCGM_FI_DEV_GPU_UTIL, scale: Percent}
  labels: {namespace: exported_namespace, pod: exported_pod}
  resources: {example_com_fpga: example.com/fpga}
)"));
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_EQ(ok->scrape_interval, 15000);
  EXPECT_EQ(ok->page, 7200000);
  EXPECT_EQ(ok->request_gap_bridge, 60000);
  EXPECT_EQ(ok->retries, 1);
  EXPECT_EQ(ok->cpu_usage, "my_cpu_total");
  EXPECT_TRUE(ok->gpu_percent);
  EXPECT_EQ(ok->label_namespace, "exported_namespace");
  EXPECT_EQ(ok->resources.at("example_com_fpga"), "example.com/fpga");
  auto queries = MeterQueries(*ok);
  ASSERT_EQ(queries.size(), 8u);
  EXPECT_EQ(queries[2].first, "requests");
  // Copies of a series (replicas of kube-state-metrics, two scrape jobs) are one series: max by
  // the labels that identify it, then the sum by pod.
  EXPECT_EQ(queries[2].second.rfind("sum by (exported_namespace, exported_pod, resource) (max by "
                                    "(exported_namespace, exported_pod, container, resource) (",
                                    0),
            0u)
      << queries[2].second;
  EXPECT_EQ(queries[7].first, "dups");
  EXPECT_EQ(queries[4].first, "cpu");
  EXPECT_EQ(queries[4].second,
            "max by (exported_namespace, exported_pod, container) "
            "((my_cpu_total{container!=\"\",container!=\"POD\","
            "cluster=\"prod\"} and "
            "timestamp(my_cpu_total{container!=\"\",container!=\"POD\",cluster=\"prod\"}) > "
            "time() - 15))");

  struct Bad {
    const char* yaml;
    const char* message;
  } bad[] = {
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  scrapeIntervl: 15s\n",
       "did you mean \"scrapeInterval\""},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  scrapeInterval: 7s\n",
       "divide one hour evenly"},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  page: 45s\n",
       "multiple of scrapeInterval"},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  scrapeInterval: 1s\n  "
       "page: 4h\n",
       "11000 points"},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  gpuUsage: {scale: "
       "Fraction}\n",
       "Ratio (0..1) or Percent"},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PriceBook\n", "kind must be PrometheusMetering"},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  labels: {nmespace: "
       "ns}\n",
       "did you mean \"namespace\""},
      {"apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  retries: many\n",
       "whole number"},
      {"kind: [", "not valid YAML"},
  };
  for (const auto& b : bad) {
    auto r = LoadMeteringConfig(WriteFile("bad.yaml", b.yaml));
    ASSERT_FALSE(r.ok()) << b.yaml;
    EXPECT_NE(r.message().find(b.message), std::string::npos) << r.message();
  }
  EXPECT_NE(LoadMeteringConfig("/nonexistent/x.yaml").message().find("cannot read"),
            std::string::npos);
}

}  // namespace
}  // namespace arbiter::prometheus
