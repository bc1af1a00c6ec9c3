// Trace reports: PolicyComparison JSON shape, text, and the HTML page rendering in headless
// Chromium (skipped when no chromium binary is installed).
#include "sim/trace/trace_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../sim/chromium.h"
#include "sim/svg_chart.h"
#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace trace_report_test {

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

// Screenshot size of `html` rendered by headless Chromium (0 on failure).
uintmax_t Screenshot(const std::string& chromium, const std::string& html,
                     const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arbiter_trace_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto page = dir / (name + ".html"), png = dir / (name + ".png");
  std::ofstream(page) << html;
  const std::string cmd = chromium +
                          " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                          "--window-size=900,1000 --screenshot=" +
                          png.string() + " file://" + page.string() + " > /dev/null 2>&1";
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
  for (size_t at = html.find("http"); at != std::string::npos; at = html.find("http", at + 1))
    ++urls;
  for (size_t at = html.find("http://www.w3.org/2000/svg"); at != std::string::npos;
       at = html.find("http://www.w3.org/2000/svg", at + 1))
    ++ns;
  EXPECT_EQ(urls, ns);
  ARBITER_NEED_CHROMIUM(chromium);  // fails instead of skipping under ARBITER_REQUIRE_CHROMIUM
  const uintmax_t blank =
      Screenshot(chromium, "<!DOCTYPE html><html><body></body></html>", "blank");
  const uintmax_t report = Screenshot(chromium, html, "report");
  ASSERT_GT(blank, 0u) << "chromium failed to take a screenshot";
  // A white page compresses to a few KB; the charts and table do not.
  EXPECT_GT(report, 4 * blank) << "blank-looking screenshot: " << report << " vs " << blank
                               << " bytes";
}

// ---------------------------------------------------------------- issue 14, item 8

std::vector<std::pair<double, double>> Points(const std::string& polyline_points) {
  std::vector<std::pair<double, double>> pts;
  std::istringstream in(polyline_points);
  std::string xy;
  while (in >> xy) pts.push_back({std::atof(xy.c_str()), std::atof(xy.c_str() + xy.find(',') + 1)});
  return pts;
}

std::vector<std::string> Attr(const std::string& html, const std::string& tag,
                              const std::string& attr) {
  std::vector<std::string> v;
  for (size_t at = html.find("<" + tag + " "); at != std::string::npos;
       at = html.find("<" + tag + " ", at + 1)) {
    const size_t end = html.find('>', at);
    const size_t a = html.find(attr + "=\"", at);
    if (a == std::string::npos || a > end) continue;
    const size_t b = html.find('"', a + attr.size() + 2);
    v.push_back(html.substr(a + attr.size() + 2, b - a - attr.size() - 2));
  }
  return v;
}

// 1, 2 or 5 × 10^k.
bool NiceStep(double v) {
  if (v <= 0) return false;
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  const double m = v / mag;
  return std::fabs(m - 1) < 1e-6 || std::fabs(m - 2) < 1e-6 || std::fabs(m - 5) < 1e-6;
}

TEST(TraceReportTest, TimelineIsAStepChartWithRoundTicks) {
  auto n = ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  auto p = ReadOpenbPods(kData + "openb_pod_list_default.csv");
  ASSERT_TRUE(n.ok() && p.ok());
  auto r = RunTimeline(*n, *p, TraceRunOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  TraceReportMeta m = Meta();
  m.mode = "timeline";
  const std::string html = TimelineHtml(*r, m);
  // Steps: consecutive points share x (a jump) or y (a hold), never both changing (a ramp).
  const auto lines = Attr(html, "polyline", "points");
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    const auto pts = Points(l);
    ASSERT_GT(pts.size(), 100u);
    for (size_t i = 1; i < pts.size(); ++i)
      EXPECT_TRUE(pts[i].first == pts[i - 1].first || pts[i].second == pts[i - 1].second)
          << "a diagonal from " << pts[i - 1].first << "," << pts[i - 1].second << " to "
          << pts[i].first << "," << pts[i].second;
  }
  // Round ticks: 3584 h is shown in days, every 20 d (it was every 358.4 h: 358, 717, ...).
  EXPECT_NE(html.find("time since the first arrival (d)"), std::string::npos);
  for (const char* tick : {">0</text>", ">20</text>", ">40</text>", ">140</text>"})
    EXPECT_NE(html.find(tick), std::string::npos) << tick;
  EXPECT_EQ(html.find(">358</text>"), std::string::npos);
  std::vector<double> ticks;
  for (size_t at = html.find("text-anchor=\"middle\">"); at != std::string::npos;
       at = html.find("text-anchor=\"middle\">", at + 1)) {
    const std::string label = html.substr(at + 21, html.find('<', at) - at - 21);
    if (!label.empty() && std::isdigit(static_cast<unsigned char>(label[0])) != 0)
      ticks.push_back(std::atof(label.c_str()));
  }
  ASSERT_GE(ticks.size(), 3u);
  const double step = ticks[1] - ticks[0];
  EXPECT_TRUE(NiceStep(step)) << step;
  for (size_t i = 0; i < ticks.size(); ++i)
    EXPECT_DOUBLE_EQ(ticks[i], step * static_cast<double>(i)) << i;
  ARBITER_NEED_CHROMIUM(chromium);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arbiter_trace_measure_" + std::to_string(::getpid()));
  arbiter::testing::ExpectRendersCleanly(
      arbiter::testing::MeasureInChromium(chromium, dir, html, 1400, "timeline"), 1000,
      "timeline.html");
  std::filesystem::remove_all(dir);
}

TEST(TraceReportTest, ComparisonLabelsItsLinesAndColumns) {
  const std::string html = ComparisonHtml(SmallComparison(), Meta());
  // The dashed y = x line has a legend entry.
  EXPECT_NE(html.find(">ideal (y = x)</text>"), std::string::npos);
  EXPECT_NE(html.find("class=\"diagonal\""), std::string::npos);
  // The min/max columns say what they are, and a note explains them.
  EXPECT_NE(html.find("<th>best seed</th><th>worst seed</th>"), std::string::npos);
  EXPECT_NE(html.find("the best (min) and worst (max) seed"), std::string::npos);
  // No policy hidden under another: series drawn widest first, each narrower than the one before.
  const auto widths = Attr(html, "polyline", "stroke-width");
  ASSERT_EQ(widths.size(), 4u);  // 2 policies × 2 charts
  EXPECT_GT(std::atof(widths[0].c_str()), std::atof(widths[1].c_str()));
  EXPECT_GT(std::atof(widths[2].c_str()), std::atof(widths[3].c_str()));
  ARBITER_NEED_CHROMIUM(chromium);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("arbiter_compare_measure_" + std::to_string(::getpid()));
  arbiter::testing::ExpectRendersCleanly(
      arbiter::testing::MeasureInChromium(chromium, dir, html, 1400, "compare"), 1000,
      "compare.html");
  std::filesystem::remove_all(dir);
}

}  // namespace trace_report_test
}  // namespace arbiter::sim::trace
