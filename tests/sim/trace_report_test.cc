// Trace reports: PolicyComparison JSON shape, text, and the HTML page rendering in headless
// Chromium (skipped when no chromium binary is installed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/trace/trace_report.h"

namespace arbiter::sim::trace {
namespace {

const std::string kData = std::string(ARBITER_SOURCE_DIR) + "/data/openb/";

std::vector<PolicySummary> SmallComparison() {
  auto n = ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  auto p = ReadOpenbPods(kData + "openb_pod_list_default.csv");
  EXPECT_TRUE(n.ok() && p.ok());
  auto s = ComparePolicies(*n, *p, {PlacementPolicyName::kBestFit, PlacementPolicyName::kPacking},
                           {42}, TraceRunOptions{});
  EXPECT_TRUE(s.ok()) << s.message();
  return *s;
}

TraceReportMeta Meta() {
  TraceReportMeta m;
  m.nodes_path = "nodes.csv";
  m.pods_path = "pods.csv";
  m.mode = "saturate";
  m.node_count = 1213;
  m.pod_count = 8152;
  m.seconds = {{0.1}, {0.2}};
  return m;
}

TEST(TraceReportTest, ComparisonJsonHasTheContractFields) {
  const auto s = SmallComparison();
  const nlohmann::json j = ComparisonJson(s, Meta());
  EXPECT_EQ(j["kind"], "PolicyComparison");
  ASSERT_EQ(j["policies"].size(), 2u);
  const auto& bf = j["policies"][0];
  EXPECT_EQ(bf["policy"], "bestfit");
  EXPECT_EQ(bf["seeds"], nlohmann::json::array({42}));
  const double a = bf["gpuAllocationAt100"], u = bf["unallocatedGpuShareAt130"];
  EXPECT_GT(a, 0.8);
  EXPECT_LT(a, 1.0);
  EXPECT_GT(u, 0.0);
  EXPECT_LT(u, 0.2);
  EXPECT_EQ(bf["runs"].size(), 1u);
  // 0..129 %: the last pod that would pass 130 % is not submitted.
  EXPECT_EQ(bf["gpuAllocationByArrivedPercent"].size(), 130u);
  EXPECT_DOUBLE_EQ(bf["secondsPerRunMedian"].get<double>(), 0.1);
  // Deterministic: the same runs give the same JSON (timings aside).
  EXPECT_EQ(ComparisonJson(SmallComparison(), Meta()).dump(), j.dump());
  const std::string text = ComparisonText(s, Meta());
  EXPECT_NE(text.find("bestfit"), std::string::npos);
  EXPECT_NE(text.find("packing"), std::string::npos);
}

std::string FindChromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

// Screenshot size of `html` rendered by headless Chromium (0 on failure).
uintmax_t Screenshot(const std::string& chromium, const std::string& html, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("arbiter_trace_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto page = dir / (name + ".html"), png = dir / (name + ".png");
  std::ofstream(page) << html;
  const std::string cmd = chromium + " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--window-size=900,1000 --screenshot=" + png.string() + " file://" +
                          page.string() + " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(png)) return 0;
  const uintmax_t size = std::filesystem::file_size(png);
  std::filesystem::remove_all(dir);
  return size;
}

TEST(TraceReportTest, HtmlIsSelfContainedAndRendersInHeadlessChromium) {
  const std::string html = ComparisonHtml(SmallComparison(), Meta());
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Self-contained: the only URL is the SVG namespace.
  size_t urls = 0, ns = 0;
  for (size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1)) ++urls;
  for (size_t at = html.find("http://www.w3.org/2000/svg"); at != std::string::npos;
       at = html.find("http://www.w3.org/2000/svg", at + 1))
    ++ns;
  EXPECT_EQ(urls, ns);
  const std::string chromium = FindChromium();
  if (chromium.empty()) GTEST_SKIP() << "no chromium installed (Debian package: chromium)";
  const uintmax_t blank = Screenshot(chromium, "<!DOCTYPE html><html><body></body></html>", "blank");
  const uintmax_t report = Screenshot(chromium, html, "report");
  ASSERT_GT(blank, 0u) << "chromium failed to take a screenshot";
  // A white page compresses to a few KB; the charts and table do not.
  EXPECT_GT(report, 4 * blank) << "blank-looking screenshot: " << report << " vs " << blank << " bytes";
}

}  // namespace
}  // namespace arbiter::sim::trace
