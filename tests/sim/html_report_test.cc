// The HTML report of manifest simulations: structure, escaping, determinism, the report JSON's
// timeline, the CLI's --report-html, and rendering in headless Chromium (skipped when no
// chromium binary is installed).
#include "sim/html_report.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "chromium.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/svg_chart.h"

namespace arbiter::sim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

json PoolReport(const json& invoices = json::array(), bool billed = false) {
  auto load = yaml::LoadManifestFiles({kPool});
  EXPECT_TRUE(load.ok());
  auto r = RunSimulation(load.set, SimOptions{});
  EXPECT_TRUE(r.ok()) << r.message();
  auto s = Summarise(load.set, *r);
  if (billed) {  // what `arbiter sim` puts in the report
    auto bill = BillSimulation(load.set, *r, DefaultEpoch(load.set));
    EXPECT_TRUE(bill.ok()) << bill.message();
    return json::parse(ReportJson(load.set, *r, s, BillJson(*bill)).dump());
  }
  // Through text and back, as a report read from a file would be.
  return json::parse(ReportJson(load.set, *r, s, invoices).dump());
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

bool Has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

void ExpectWellFormed(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n<html", 0), 0u);
  EXPECT_TRUE(html.ends_with("</body></html>\n"));
  EXPECT_TRUE(Has(html, "<meta charset=\"utf-8\">"));
  for (const char* tag : {"svg", "table", "tr", "h2", "style", "head", "body", "text"})
    EXPECT_EQ(Count(html, std::string("<") + tag + ">") + Count(html, std::string("<") + tag + " "),
              Count(html, std::string("</") + tag + ">"))
        << "unbalanced <" << tag << ">";
  // Self-contained: no scripts, no links, and the only URL is the SVG namespace.
  EXPECT_FALSE(Has(html, "<script"));
  EXPECT_FALSE(Has(html, "<link"));
  EXPECT_FALSE(Has(html, "<img"));
  EXPECT_FALSE(Has(html, "@import"));
  EXPECT_EQ(Count(html, "http"), Count(html, "http://www.w3.org/2000/svg"));
}

TEST(HtmlReportTest, TimelineIsInTheReportJson) {
  const json r = PoolReport();
  const json& tl = r["timeline"];
  ASSERT_TRUE(tl.is_array());
  ASSERT_GE(tl.size(), 3u);
  EXPECT_EQ(tl.front()["time"], 0);
  EXPECT_EQ(tl.back()["time"], r["endTime"]);
  double last = -1;
  for (const auto& p : tl) {
    const double t = p["time"].get<double>();
    EXPECT_GT(t, last) << "timeline times must increase";
    last = t;
    for (const char* res : {"cpu", "memory", "nvidia.com/gpu"}) {
      ASSERT_TRUE(p["allocated"][res].is_string()) << p.dump();
      const double v = std::stod(p["allocated"][res].get<std::string>());
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.2 + 1e-9) << "more than the overcommit allows: " << p.dump();
    }
    EXPECT_GE(p["pending"].get<int>(), 0);
    EXPECT_GE(p["running"].get<int>(), 0);
  }
  // The workloads still running at the end hold resources at the last point.
  EXPECT_EQ(tl.back()["running"], r["summary"]["phases"]["Running"]);
  EXPECT_EQ(tl.back()["pending"], r["summary"]["phases"]["Pending"]);
  // Every Scheduled event's time has a point.
  for (const auto& ev : r["events"]) {
    bool found = false;
    for (const auto& p : tl) found = found || p["time"] == ev["time"];
    EXPECT_TRUE(found) << ev.dump();
  }
  EXPECT_EQ(r["pool"]["capacity"]["nvidia.com/gpu"], "56");
}

TEST(HtmlReportTest, HasChartsTablesAndHeader) {
  const json r = PoolReport();
  const std::string html = SimulationHtml(r);
  ExpectWellFormed(html);
  // Allocation share, pending/running, pending per tier, preemptions.
  EXPECT_GE(Count(html, "<svg "), 4u);
  EXPECT_GE(Count(html, "<polyline"), 5u);
  EXPECT_TRUE(Has(html, "Allocated share of the pool over time"));
  EXPECT_TRUE(Has(html, "Pending time per priority tier"));
  EXPECT_TRUE(Has(html, "Preemptions over time"));
  EXPECT_TRUE(Has(html, "Reclaimed (quota)"));
  EXPECT_TRUE(Has(html, "No price book"));
  EXPECT_TRUE(Has(html, "BestFit"));
  // Every workload has a row; the first events are listed.
  for (const auto& w : r["workloads"]) {
    std::string cell = ">";  // appended, not ">" + std::string&& (GCC 12 -O3 false -Wrestrict)
    cell += w["name"].get<std::string>();
    cell += "<";
    EXPECT_TRUE(Has(html, cell)) << w["name"];
  }
  EXPECT_TRUE(Has(html, "cancelled after preemption by team-c/finetune-c-0"));
  EXPECT_TRUE(Has(html, "All " + std::to_string(r["events"].size()) + " events"));
  EXPECT_EQ(Count(html, "<tr>"), 1 + r["workloads"].size() + 1 + r["events"].size());

  HtmlReportOptions few;
  few.max_events = 5;
  few.max_workloads = 3;
  const std::string small = SimulationHtml(r, few);
  EXPECT_TRUE(Has(small, "The first 5 of " + std::to_string(r["events"].size()) + " events"));
  EXPECT_TRUE(Has(small, "The first 3 of " + std::to_string(r["workloads"].size()) + " workloads"));
  EXPECT_EQ(Count(small, "<tr>"), 1 + 3 + 1 + 5u);
}

TEST(HtmlReportTest, IsDeterministic) {
  const std::string a = SimulationHtml(PoolReport());
  const std::string b = SimulationHtml(PoolReport());
  EXPECT_EQ(a, b);
  EXPECT_EQ(SimulationHtml(json::parse(PoolReport().dump(2))), a);
}

TEST(HtmlReportTest, EscapesNamesAndMessages) {
  json r = PoolReport();
  r["workloads"][0]["name"] = "evil/<script>alert(\"x\")</script>&amp;";
  r["workloads"][0]["message"] = "<b>bold</b> & \"quoted\"";
  r["events"][0]["workload"] = "evil/<img src=x>";
  r["events"][0]["message"] = "</table><h1>";
  r["pool"]["placement"] = "<i>BestFit</i>";
  r["invoices"] = json::array({{{"namespace", "<ns>"},
                                {"currency", "C<N>Y"},
                                {"requestTotal", "1.00"},
                                {"usageTotal", "0.50"},
                                {"total", "1.00"}}});
  const std::string html = SimulationHtml(r);
  ExpectWellFormed(html);
  EXPECT_TRUE(Has(html, "evil/&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;"));
  EXPECT_TRUE(Has(html, "&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"));
  EXPECT_TRUE(Has(html, "evil/&lt;img src=x&gt;"));
  EXPECT_TRUE(Has(html, "&lt;/table&gt;&lt;h1&gt;"));
  EXPECT_TRUE(Has(html, "&lt;i&gt;BestFit&lt;/i&gt;"));
  EXPECT_TRUE(Has(html, "&lt;ns&gt;"));
  EXPECT_TRUE(Has(html, "C&lt;N&gt;Y"));
  EXPECT_FALSE(Has(html, "<b>bold"));
  EXPECT_FALSE(Has(html, "<i>"));
}

TEST(HtmlReportTest, CostPerTenantFromInvoices) {
  const json invoices = json::array({{{"namespace", "team-a"},
                                      {"currency", "CNY"},
                                      {"lines", json::array()},
                                      {"requestTotal", "1234.50"},
                                      {"usageTotal", "987.25"},
                                      {"total", "1234.50"}},
                                     {{"namespace", "team-b"},
                                      {"currency", "CNY"},
                                      {"lines", json::array()},
                                      {"requestTotal", "400.00"},
                                      {"usageTotal", "410.10"},
                                      {"total", "410.10"}}});
  const std::string html = SimulationHtml(PoolReport(invoices));
  ExpectWellFormed(html);
  EXPECT_FALSE(Has(html, "No price book"));
  EXPECT_TRUE(Has(html, "Cost per tenant: request and usage track"));
  EXPECT_TRUE(Has(html, "amount (CNY)"));
  for (const char* v : {"1234.50", "987.25", "400.00", "410.10", "team-a", "team-b"})
    EXPECT_TRUE(Has(html, v)) << v;
  EXPECT_GE(Count(html, "<svg "), 5u);
}

// The SVG chart whose title is `title`.
std::string SvgWithTitle(const std::string& html, const std::string& title) {
  const size_t t = html.find(">" + title + "<");
  if (t == std::string::npos) return "";
  const size_t b = html.rfind("<svg ", t), e = html.find("</svg>", t);
  return html.substr(b, e + 6 - b);
}

struct TextBox {
  double x0, x1, y0, y1;
  std::string text;
};

// Every <text> with a font-size of 11 (value labels), as approximate boxes: 6.5 px per character
// (wider than the sans-serif average at 11 px), 11 px high above the baseline.
std::vector<TextBox> ValueLabels(const std::string& svg) {
  std::vector<TextBox> out;
  for (size_t at = svg.find("<text "); at != std::string::npos; at = svg.find("<text ", at + 1)) {
    const size_t close = svg.find('>', at), end = svg.find("</text>", at);
    const std::string tag = svg.substr(at, close - at);
    if (tag.find("font-size=\"11\"") == std::string::npos) continue;
    auto attr = [&](const char* name) {
      const size_t p = tag.find(std::string(" ") + name + "=\"");
      return p == std::string::npos ? -1.0 : std::stod(tag.substr(p + std::strlen(name) + 3));
    };
    const std::string text = svg.substr(close + 1, end - close - 1);
    const double w = 6.5 * static_cast<double>(text.size());
    double x = attr("x");
    if (tag.find("text-anchor=\"middle\"") != std::string::npos) x -= w / 2;
    const double y = attr("y");
    out.push_back({x, x + w, y - 11, y, text});
  }
  return out;
}

json Invoice(const std::string& ns, const std::string& request, const std::string& usage) {
  return {{"namespace", ns},         {"currency", "CNY"},   {"lines", json::array()},
          {"requestTotal", request}, {"usageTotal", usage}, {"total", request}};
}

// Regression (new-user trial): tenants with small costs had their two value labels drawn on top
// of each other (and of their neighbours'); the __idle__ pseudo-tenant was drawn as a tenant.
TEST(HtmlReportTest, CostLabelsDoNotOverlapAndIdleIsApart) {
  const json invoices = json::array({Invoice("team-a", "0.013333", "0.012000"),
                                     Invoice("team-b", "0.020000", "0.019500"),
                                     Invoice("team-c", "2338.357334", "2267.114833"),
                                     Invoice("team-d", "0.000000", "0.000000"),
                                     {{"namespace", "__idle__"},
                                      {"currency", "CNY"},
                                      {"lines", json::array()},
                                      {"requestTotal", "5120.400000"},
                                      {"usageTotal", "0"},
                                      {"total", "5120.400000"}}});
  const std::string html = SimulationHtml(PoolReport(invoices));
  ExpectWellFormed(html);
  const std::string svg = SvgWithTitle(html, "Cost per tenant: request and usage track");
  ASSERT_FALSE(svg.empty());
  const auto labels = ValueLabels(svg);
  ASSERT_EQ(labels.size(), 4u * 2 + 1) << svg;  // two tracks per tenant, the request track of idle
  for (size_t i = 0; i < labels.size(); ++i) {
    EXPECT_LE(labels[i].x1, svg::kChartWidth) << labels[i].text << " runs off the chart";
    for (size_t j = i + 1; j < labels.size(); ++j) {
      const TextBox &a = labels[i], &b = labels[j];
      const bool overlap = a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
      EXPECT_FALSE(overlap) << a.text << " overlaps " << b.text;
    }
  }
  // Idle capacity: named for people, grey, after the tenants, not a tenant row.
  EXPECT_FALSE(Has(svg, ">__idle__<"));
  EXPECT_FALSE(Has(html, ">__idle__<"));
  EXPECT_EQ(Count(svg, "<g class=\"row\">"), 4u);
  EXPECT_EQ(Count(svg, "<g class=\"muted\">"), 1u);
  const size_t muted = svg.find("<g class=\"muted\">");
  EXPECT_GT(muted, svg.rfind("<g class=\"row\">"));
  const std::string idle = svg.substr(muted, svg.find("</g>", muted) - muted);
  EXPECT_TRUE(Has(idle, "idle capacity (not billed)")) << idle;
  EXPECT_TRUE(Has(idle, "5120.400000")) << idle;
  EXPECT_EQ(Count(idle, "<rect "), 1u) << "idle capacity has no usage track: " << idle;
  EXPECT_TRUE(Has(idle, "fill=\"#9e9e9e\"")) << idle;
  for (const char* c : {"#1f77b4", "#d62728"})
    EXPECT_FALSE(Has(idle, c)) << "idle drawn in a tenant colour";
  EXPECT_TRUE(Has(svg, "stroke-dasharray")) << "no rule between tenants and idle capacity";
  // The axis fits the tenants (2338.36 -> 2500): idle capacity is cut, with a break mark.
  EXPECT_TRUE(Has(svg, ">2500<")) << svg;
  EXPECT_FALSE(Has(svg, ">6000<")) << svg;
  EXPECT_TRUE(Has(idle, "<polyline class=\"break\"")) << idle;
  EXPECT_TRUE(Has(idle, "5120.400000 (off scale)")) << idle;
  // The table: idle last, marked, named the same way.
  EXPECT_TRUE(Has(html, "<tr class=\"idle\"><td>idle capacity (not billed)</td>"));
  EXPECT_GT(html.find("<tr class=\"idle\">"), html.find("<td class=\"w\">team-d</td>"));
  EXPECT_TRUE(Has(html, "not billed to anyone"));
}

TEST(HtmlReportTest, CostChartWithoutIdleHasNoIdleRow) {
  const std::string html =
      SimulationHtml(PoolReport(json::array({Invoice("team-a", "1.00", "0.50")})));
  const std::string svg = SvgWithTitle(html, "Cost per tenant: request and usage track");
  EXPECT_EQ(Count(svg, "<g class=\"row\">"), 1u);
  EXPECT_EQ(Count(svg, "<g class=\"muted\">"), 0u);
  EXPECT_FALSE(Has(svg, "stroke-dasharray"));
  EXPECT_FALSE(Has(html, "idle capacity"));
}

TEST(HtmlReportTest, RendersAnyJson) {
  for (const json& j : {json(), json::object(), json::array(), json{{"kind", "SimulationReport"}},
                        json{{"kind", "Other"},
                             {"workloads", 3},
                             {"events", json::array({1, "x", nullptr})},
                             {"timeline", json::array({{{"time", "bad"}}})}}}) {
    const std::string html = SimulationHtml(j);
    ExpectWellFormed(html);
  }
  // An old report without a timeline still renders, with a note.
  json r = PoolReport();
  r.erase("timeline");
  const std::string html = SimulationHtml(r);
  ExpectWellFormed(html);
  EXPECT_TRUE(Has(html, "has no <code>timeline</code>"));
}

std::string TempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("arbiter_html_report_" + std::to_string(::getpid()) + "_" + name);
  fs::create_directories(dir);
  return dir.string();
}

TEST(HtmlReportTest, CliWritesTheReport) {
  const std::string dir = TempDir("cli");
  const std::string out = dir + "/report.html";
  const std::string cmd = std::string(ARBITER_BINARY) + " sim -q -f " + kPool + " --report-html " +
                          out + " > " + dir + "/stdout 2> " + dir + "/stderr";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  ExpectWellFormed(ss.str());
  EXPECT_EQ(ss.str(), SimulationHtml(PoolReport(json::array(), /*billed=*/true)));
  EXPECT_TRUE(Has(ss.str(), "Cost per tenant"));

  const std::string bad = std::string(ARBITER_BINARY) + " sim -q -f " + kPool +
                          " --report-html /nonexistent-dir/x/report.html > /dev/null 2> " + dir +
                          "/stderr";
  const int rc = std::system(bad.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2);  // refused before simulating
  std::ifstream e(dir + "/stderr");
  std::stringstream es;
  es << e.rdbuf();
  EXPECT_TRUE(Has(es.str(),
                  "arbiter sim: --report-html: /nonexistent-dir/x/report.html: directory "
                  "/nonexistent-dir/x does not exist"))
      << es.str();
  fs::remove_all(dir);
}

// Size of the PNG screenshot of `html` in headless Chromium (0 on failure).
uintmax_t Screenshot(const std::string& chromium, const std::string& dir, const std::string& html,
                     const std::string& name) {
  const fs::path page = fs::path(dir) / (name + ".html"), png = fs::path(dir) / (name + ".png");
  const fs::path profile = fs::path(dir) / ("profile-" + name);
  fs::create_directories(profile);
  std::ofstream(page) << html;
  const std::string cmd =
      "timeout 180 " + chromium +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --hide-scrollbars --user-data-dir=" +
      profile.string() + " --screenshot=" + png.string() + " --window-size=1200,1600 file://" +
      page.string() + " > /dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(png)) return 0;
  return fs::file_size(png);
}

TEST(HtmlReportTest, RendersInHeadlessChromium) {
  ARBITER_NEED_CHROMIUM(chromium);  // fails instead of skipping under ARBITER_REQUIRE_CHROMIUM
  const std::string dir = TempDir("chromium");
  const uintmax_t blank =
      Screenshot(chromium, dir, "<!DOCTYPE html><html><body></body></html>", "blank");
  const uintmax_t report = Screenshot(chromium, dir, SimulationHtml(PoolReport()), "report");
  ASSERT_GT(blank, 0u) << "chromium failed to take a screenshot";
  ASSERT_GT(report, 0u) << "chromium failed to take a screenshot of the report";
  // A white page compresses to a few KB; the header cards, charts and tables do not.
  EXPECT_GT(report, 8 * blank) << "blank-looking screenshot: " << report << " vs " << blank
                               << " bytes";
  EXPECT_GT(report, 30u * 1024) << report;
  if (std::getenv("ARBITER_KEEP_SCREENSHOTS") == nullptr)
    fs::remove_all(dir);
  else
    std::cerr << "screenshots kept in " << dir << "\n";
}

// ---------------------------------------------------------------- issue 14, item 8

// The report of examples/pool.yaml as `arbiter sim` writes it, with a long resource name in the
// timeline (a MIG profile's legend entry is the longest a report has).
json LongLegendReport() {
  json r = PoolReport(json::array(), /*billed=*/true);
  for (auto& p : r["timeline"]) p["allocated"]["nvidia.com/mig-3g.40gb"] = "0.5000";
  r["summary"]["utilisation"]["nvidia.com/mig-3g.40gb"] = "0.5000";
  return r;
}

TEST(HtmlReportTest, ChartsUseTheWindowAndNoTextIsClippedOrWrapped) {
  ARBITER_NEED_CHROMIUM(chromium);
  const fs::path dir = TempDir("measure");
  const std::string html = SimulationHtml(LongLegendReport());
  // At 1400 px every chart is drawn at its full 1100 px (it used 760 of them, 640 for the plot).
  arbiter::testing::ExpectRendersCleanly(
      arbiter::testing::MeasureInChromium(chromium, dir, html, 1400, "wide"), 1000,
      "1400 px window");
  // At 800 px the charts shrink with the window (no horizontal scroll), node and workload names
  // still on one line each.
  const json narrow = arbiter::testing::MeasureInChromium(chromium, dir, html, 800, "narrow");
  arbiter::testing::ExpectRendersCleanly(narrow, 500, "800 px window");
  for (const auto& s : narrow["svgs"]) EXPECT_LE(s["width"].get<double>(), 800.0);
  EXPECT_GT(narrow["cells"].get<int>(), 50) << "the node/name cells were not measured";
  if (std::getenv("ARBITER_KEEP_SCREENSHOTS") == nullptr) fs::remove_all(dir);
}

TEST(HtmlReportTest, LegendsAreSizedToTheirNames) {
  const std::string html = SimulationHtml(LongLegendReport());
  const std::string svg = SvgWithTitle(html, "Allocated share of the pool over time");
  ASSERT_FALSE(svg.empty());
  const size_t at = svg.find(">nvidia.com/mig-3g.40gb (mean 50.0 %)</text>");
  ASSERT_NE(at, std::string::npos) << svg;
  const size_t x = svg.rfind("<text x=\"", at);
  const double left = std::atof(svg.c_str() + x + 9);
  // About 0.62 em a character in 12 px sans-serif: the text must end inside the 1100 px chart.
  EXPECT_LE(left + 0.62 * 12 * 36, svg::kChartWidth) << "legend text starts at " << left;
}

TEST(HtmlReportTest, CardsCountEachWorkloadOnceAndTheTenantTableHasCredits) {
  const std::string html = SimulationHtml(PoolReport(json::array(), /*billed=*/true));
  // eval-b-1 was cancelled after a preemption: one card says so, no second "cancelled" card.
  EXPECT_EQ(Count(html, "<span>cancelled after preemption</span>"), 1u);
  EXPECT_EQ(Count(html, "<span>cancelled</span>"), 0u);
  EXPECT_TRUE(Has(html, "<span>requeued after preemption</span>"));
  // The tenant table has every column of the invoice totals: team-b's credits are in it.
  EXPECT_TRUE(Has(html, "<th>credits</th>"));
  EXPECT_TRUE(Has(html, "<td class=\"n\">-27.226666</td>")) << "team-b's credit total is missing";
  EXPECT_TRUE(Has(html, "<th>last reason (why it waits, or waited)</th>"));
}

TEST(HtmlReportTest, PendingTimesAgreeWithTheTerminalSummary) {
  auto load = yaml::LoadManifestFiles({kPool});
  ASSERT_TRUE(load.ok());
  auto r = RunSimulation(load.set, SimOptions{});
  ASSERT_TRUE(r.ok());
  const auto s = Summarise(load.set, *r);
  const std::string text = TextSummary(load.set, *r, s);
  const std::string svg =
      SvgWithTitle(SimulationHtml(json::parse(ReportJson(load.set, *r, s, json::array()).dump())),
                   "Pending time per priority tier (workloads)");
  ASSERT_FALSE(svg.empty());
  // "[5000: 11 workloads, mean 42m24s, max 3h30m]": each printed duration is a bar label.
  size_t checked = 0;
  for (size_t at = text.find(", mean "); at != std::string::npos;
       at = text.find(", mean ", at + 1)) {
    const size_t a = at + 7, b = text.find(", max ", a), c = text.find(']', b);
    const std::string mean = text.substr(a, b - a), max = text.substr(b + 6, c - b - 6);
    EXPECT_TRUE(Has(svg, ">" + mean + "</text>")) << "mean " << mean << " not in the chart:\n"
                                                  << svg;
    EXPECT_TRUE(Has(svg, ">" + max + "</text>")) << "max " << max << " not in the chart";
    ++checked;
  }
  EXPECT_EQ(checked, 3u) << text;
  // The case that disagreed: a mean of 3.75 s was "3s" in the summary and "4s" in the chart.
  json j = json::parse(ReportJson(load.set, *r, s, json::array()).dump());
  j["summary"]["pendingByTier"] = json::array({{{"priority", 1000},
                                                {"workloads", 2},
                                                {"pendingSecondsTotal", 7.5},
                                                {"pendingSecondsMean", "3.750"},
                                                {"pendingSecondsMax", 7.5}}});
  const std::string one =
      SvgWithTitle(SimulationHtml(j), "Pending time per priority tier (workloads)");
  EXPECT_TRUE(Has(one, ">4s</text>")) << one;
  EXPECT_TRUE(Has(one, ">8s</text>")) << one;
  EXPECT_EQ(FormatDuration(MeanToSecond(7500, 2)), "4s");
}

}  // namespace
}  // namespace arbiter::sim
