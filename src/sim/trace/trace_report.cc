#include "sim/trace/trace_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/plural.h"
#include "sim/billing_bridge.h"
#include "sim/html_report.h"
#include "sim/report.h"
#include "sim/svg_chart.h"

namespace arbiter::sim::trace {

namespace {

using svg::Axes;
using svg::Esc;
using svg::Fmt;
using svg::LineChart;
using svg::Series;

std::string Pct(double ratio) { return Fmt("%.1f %%", ratio * 100.0); }
double Round(double v, double scale = 1e6) {
  return static_cast<double>(static_cast<int64_t>(v * scale + (v >= 0 ? 0.5 : -0.5))) / scale;
}
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
// Unallocated share at 130 % arrived: the end of the run when the target is 130 %, otherwise the
// curve's 130 % point if the run got there; negative if unknown.
double UnallocatedAt130(const SaturateResult& r, int64_t target_permille) {
  if (target_permille == 1300) return r.unallocated_gpu_share_at_end();
  if (r.curve.size() >= 130)
    return 1.0 - static_cast<double>(r.curve[129].allocated_gpu_milli) / r.cluster_gpu_milli;
  return -1;
}

std::string Page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + Esc(title) +
         "</title>\n<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
         "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px "
         "10px;"
         "text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
         "p.note{color:#555;max-width:900px}svg{display:block;max-width:100%;height:auto}</style></"
         "head>\n<body>\n<h1>" +
         Esc(title) + "</h1>\n" + body + "</body></html>\n";
}

std::string MetaHtml(const TraceReportMeta& m) {
  return "<p>nodes: <code>" + Esc(m.nodes_path) + "</code> (" + std::to_string(m.node_count) +
         ")<br>pods: <code>" + Esc(m.pods_path) + "</code> (" + std::to_string(m.pod_count) +
         ")<br>mode: " + Esc(m.mode) +
         (m.mode == "saturate"
              ? ", target " + Fmt("%.0f", m.target_permille / 10.0) + " % of the cluster's GPUs"
              : std::string()) +
         "</p>\n";
}

Series CurveSeries(const std::string& name, const std::vector<double>& curve) {
  Series s{name, {}};
  for (size_t k = 0; k < curve.size(); ++k) s.xy.push_back({static_cast<double>(k), curve[k]});
  return s;
}

std::vector<double> RunCurve(const SaturateResult& r) {
  std::vector<double> c(1, 0.0);
  for (const auto& p : r.curve)
    c.push_back(static_cast<double>(p.allocated_gpu_milli) / r.cluster_gpu_milli);
  return c;
}

}  // namespace

std::vector<double> MeanCurve(const PolicySummary& s) {
  size_t n = 0;
  for (const auto& r : s.runs) n = std::max(n, r.curve.size());
  std::vector<double> sum(n + 1, 0.0);
  std::vector<int> cnt(n + 1, 0);
  cnt[0] = 1;
  for (const auto& r : s.runs)
    for (size_t k = 0; k < r.curve.size(); ++k) {
      sum[k + 1] += static_cast<double>(r.curve[k].allocated_gpu_milli) / r.cluster_gpu_milli;
      ++cnt[k + 1];
    }
  for (size_t k = 0; k <= n; ++k) sum[k] = cnt[k] ? sum[k] / cnt[k] : 0;
  return sum;
}

nlohmann::json ComparisonJson(const std::vector<PolicySummary>& summaries,
                              const TraceReportMeta& m) {
  nlohmann::json j;
  j["kind"] = "PolicyComparison";
  j["mode"] = m.mode;
  j["nodes"] = m.nodes_path;
  j["pods"] = m.pods_path;
  j["target"] = static_cast<double>(m.target_permille) / 1000.0;
  j["nodeCount"] = m.node_count;
  j["podCount"] = m.pod_count;
  j["clusterGpus"] = summaries.empty() || summaries[0].runs.empty()
                         ? 0.0
                         : static_cast<double>(summaries[0].runs[0].cluster_gpu_milli) / 1000.0;
  nlohmann::json ps = nlohmann::json::array();
  for (size_t i = 0; i < summaries.size(); ++i) {
    const PolicySummary& s = summaries[i];
    nlohmann::json p;
    p["policy"] = s.policy;
    p["seeds"] = s.seeds;
    p["gpuAllocationAt100"] = Round(s.gpu_allocation_at_100);
    double u130 = 0;
    bool have130 = true;
    for (const auto& r : s.runs) {
      const double u = UnallocatedAt130(r, m.target_permille);
      if (u < 0) have130 = false;
      u130 += u;
    }
    if (have130 && !s.runs.empty())
      p["unallocatedGpuShareAt130"] = Round(u130 / static_cast<double>(s.runs.size()));
    p["unallocatedGpuShareAtTarget"] = Round(s.unallocated_gpu_share_at_end);
    p["unallocatedGpuShareMin"] = Round(s.unallocated_gpu_share_min);
    p["unallocatedGpuShareMax"] = Round(s.unallocated_gpu_share_max);
    p["podsFailedMean"] = Round(s.pods_failed, 1e3);
    if (i < m.seconds.size() && !m.seconds[i].empty())
      p["secondsPerRunMedian"] = Round(Median(m.seconds[i]), 1e4);
    nlohmann::json runs = nlohmann::json::array();
    for (size_t k = 0; k < s.runs.size(); ++k) {
      const SaturateResult& r = s.runs[k];
      nlohmann::json rj;
      rj["seed"] = r.seed;
      rj["gpuAllocationAt100"] = Round(r.gpu_allocation_at_100());
      rj["unallocatedGpuShareAtTarget"] = Round(r.unallocated_gpu_share_at_end());
      rj["podsSubmitted"] = r.pods_submitted;
      rj["podsFailed"] = r.pods_failed;
      rj["arrivedGpu"] = static_cast<double>(r.arrived_gpu_milli) / 1000.0;
      rj["allocatedGpu"] = static_cast<double>(r.allocated_gpu_milli) / 1000.0;
      if (i < m.seconds.size() && k < m.seconds[i].size())
        rj["seconds"] = Round(m.seconds[i][k], 1e4);
      runs.push_back(rj);
    }
    p["runs"] = runs;
    nlohmann::json curve = nlohmann::json::array();
    for (double v : MeanCurve(s)) curve.push_back(Round(v));
    p["gpuAllocationByArrivedPercent"] = curve;
    ps.push_back(p);
  }
  j["policies"] = ps;
  return j;
}

std::string ComparisonText(const std::vector<PolicySummary>& summaries, const TraceReportMeta& m) {
  std::string s;
  const int64_t gpus = summaries.empty() || summaries[0].runs.empty()
                           ? 0
                           : summaries[0].runs[0].cluster_gpu_milli / 1000;
  const size_t seeds = summaries.empty() ? 0 : summaries[0].seeds.size();
  s += "Policy comparison: " + m.mode + ", arrived GPU demand up to " +
       Fmt("%.0f", m.target_permille / 10.0) + " % of " + Plural(gpus, "GPU") + " on " +
       Plural(m.node_count, "node") + ", " + Plural(seeds, "seed") + " each\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %18s %22s %16s %12s %10s\n", "policy", "GPU alloc @100%",
                "unallocated @target", "(min..max)", "failed pods", "s/run");
  s += line;
  for (size_t i = 0; i < summaries.size(); ++i) {
    const PolicySummary& p = summaries[i];
    const std::string range = Fmt("%.1f", p.unallocated_gpu_share_min * 100) + ".." +
                              Fmt("%.1f %%", p.unallocated_gpu_share_max * 100);
    const std::string secs =
        i < m.seconds.size() && !m.seconds[i].empty() ? Fmt("%.3f", Median(m.seconds[i])) : "-";
    std::snprintf(line, sizeof line, "%-16s %18s %22s %16s %12.1f %10s\n", p.policy.c_str(),
                  Pct(p.gpu_allocation_at_100).c_str(), Pct(p.unallocated_gpu_share_at_end).c_str(),
                  range.c_str(), p.pods_failed, secs.c_str());
    s += line;
  }
  return s;
}

std::string ComparisonHtml(const std::vector<PolicySummary>& summaries, const TraceReportMeta& m) {
  std::vector<Series> series;
  for (const auto& p : summaries) series.push_back(CurveSeries(p.policy, MeanCurve(p)));
  // Policies often coincide (every one allocates all arrived demand until the cluster fills up):
  // widest first, so that none hides under another.
  const std::vector<double> widths = svg::OverlapWidths(series.size());
  for (size_t k = 0; k < series.size(); ++k) series[k].stroke_width = widths[k];
  const double x_max = static_cast<double>(m.target_permille) / 10.0;
  std::string body = MetaHtml(m);
  Axes full;
  full.x_max = x_max;
  full.diagonal = true;
  full.diagonal_label = "ideal (y = x)";
  body += LineChart("GPU allocation vs. arrived GPU demand (mean over seeds)",
                    "arrived GPU demand, % of cluster GPU capacity", full, series);
  if (x_max > 80) {
    Axes zoom;
    zoom.x_min = 80;
    zoom.x_max = x_max;
    zoom.x_step = 5;
    zoom.y_min = 0.8;
    zoom.y_max = 1.0;
    zoom.y_step = 0.02;
    zoom.diagonal = true;
    zoom.diagonal_label = full.diagonal_label;
    body += "<br>" + LineChart("Zoom: the saturated end",
                               "arrived GPU demand, % of cluster GPU capacity", zoom, series);
  }
  const size_t seeds = summaries.empty() ? 0 : summaries[0].seeds.size();
  body +=
      "<table><tr><th>policy</th><th>seeds</th><th>GPU allocation at 100 %</th><th>unallocated "
      "GPUs at " +
      Fmt("%.0f", x_max) +
      " % (mean)</th><th>best seed</th><th>worst seed</th><th>failed pods (mean)</th></tr>\n";
  for (const auto& p : summaries)
    body += "<tr><td>" + Esc(p.policy) + "</td><td>" + std::to_string(p.seeds.size()) +
            "</td><td>" + Pct(p.gpu_allocation_at_100) + "</td><td>" +
            Pct(p.unallocated_gpu_share_at_end) + "</td><td>" + Pct(p.unallocated_gpu_share_min) +
            "</td><td>" + Pct(p.unallocated_gpu_share_max) + "</td><td>" +
            Fmt("%.1f", p.pods_failed) + "</td></tr>\n";
  body +=
      "</table>\n<p class=\"note\">Unallocated GPUs: the share of the cluster's GPUs that no pod "
      "holds when the "
      "arrived demand reaches " +
      Fmt("%.0f", x_max) + " % (lower is better); mean over the " + Plural(seeds, "seed") +
      ", and the best (min) and worst (max) seed. GPU allocation at 100 %: the allocated share "
      "when the arrived "
      "demand equals the cluster. The dashed line, ideal (y = x), is every arrived GPU "
      "allocated.</p>\n<p class=\"note\">Saturate protocol of the FGD paper (Weng et al., USENIX "
      "ATC 2023): the trace's pods "
      "in seeded random order, then pods sampled with replacement, no departures, until the "
      "arrived GPU demand "
      "reaches the target. Paper, default trace, unallocated at 130 %: Random 12.5 %, DotProduct "
      "9.2 %, "
      "Clustering 8.1 %, Packing 8.0 %, BestFit 6.9 %, FGD 4.6 %.</p>\n";
  return Page("Arbiter placement policy comparison", body);
}

namespace {
// The fields every single-run trace report starts with.
template <class Run>
nlohmann::json RunHeader(const char* kind, const Run& r, const TraceReportMeta& m) {
  nlohmann::json j;
  j["kind"] = kind;
  j["nodes"] = m.nodes_path;
  j["pods"] = m.pods_path;
  j["policy"] = r.policy;
  j["seed"] = r.seed;
  j["clusterGpus"] = static_cast<double>(r.cluster_gpu_milli) / 1000.0;
  j["podsSubmitted"] = r.pods_submitted;
  j["podsPlaced"] = r.pods_placed;
  j["podsFailed"] = r.pods_failed;
  return j;
}
}  // namespace

nlohmann::json SaturateJson(const SaturateResult& r, const TraceReportMeta& m) {
  nlohmann::json j = RunHeader("TraceSaturate", r, m);
  j["target"] = static_cast<double>(m.target_permille) / 1000.0;
  j["gpuPodsFailed"] = r.gpu_pods_failed;
  j["arrivedGpu"] = static_cast<double>(r.arrived_gpu_milli) / 1000.0;
  j["allocatedGpu"] = static_cast<double>(r.allocated_gpu_milli) / 1000.0;
  j["gpuAllocationAt100"] = Round(r.gpu_allocation_at_100());
  j["unallocatedGpuShareAtTarget"] = Round(r.unallocated_gpu_share_at_end());
  const double u = UnallocatedAt130(r, m.target_permille);
  if (u >= 0) j["unallocatedGpuShareAt130"] = Round(u);
  nlohmann::json curve = nlohmann::json::array();
  for (double v : RunCurve(r)) curve.push_back(Round(v));
  j["gpuAllocationByArrivedPercent"] = curve;
  if (!m.seconds.empty() && !m.seconds[0].empty()) j["seconds"] = Round(m.seconds[0][0], 1e4);
  return j;
}

std::string SaturateText(const SaturateResult& r, const TraceReportMeta& m) {
  std::string s;
  s += "Trace saturate run: policy " + r.policy + ", seed " + std::to_string(r.seed) + ", " +
       Plural(m.node_count, "node") + ", " + Plural(r.cluster_gpu_milli / 1000, "GPU") + "\n";
  s += "  pods submitted " + std::to_string(r.pods_submitted) + ", placed " +
       std::to_string(r.pods_placed) + ", failed " + std::to_string(r.pods_failed) + " (" +
       Plural(r.gpu_pods_failed, "GPU pod") + ")\n";
  s += "  arrived GPU demand " +
       Pct(static_cast<double>(r.arrived_gpu_milli) / r.cluster_gpu_milli) +
       " of capacity; GPU allocation at 100 % arrived: " + Pct(r.gpu_allocation_at_100()) + "\n";
  s += "  GPUs unallocated at the end: " + Pct(r.unallocated_gpu_share_at_end()) + "\n";
  return s;
}

std::string SaturateHtml(const SaturateResult& r, const TraceReportMeta& m) {
  return Page("Arbiter trace run (saturate)", SaturateHtmlBody(r, m));
}

std::string SaturateHtmlBody(const SaturateResult& r, const TraceReportMeta& m) {
  std::string body = MetaHtml(m);
  Axes ax;
  ax.x_max = static_cast<double>(m.target_permille) / 10.0;
  ax.diagonal = true;
  body += LineChart("GPU allocation vs. arrived GPU demand",
                    "arrived GPU demand, % of cluster GPU capacity", ax,
                    {CurveSeries(r.policy, RunCurve(r))});
  body += "<pre>" + Esc(SaturateText(r, m)) + "</pre>\n";
  return body;
}

nlohmann::json TimelineJson(const TimelineResult& r, const TraceReportMeta& m) {
  nlohmann::json j = RunHeader("TraceTimeline", r, m);
  j["podsFailedByTier"] = {{"1000", r.failed_by_priority_tier[0]},
                           {"5000", r.failed_by_priority_tier[1]},
                           {"10000", r.failed_by_priority_tier[2]},
                           {"other", r.failed_by_priority_tier[3]}};
  j["startSeconds"] = r.start_s;
  j["endSeconds"] = r.end_s;
  j["peakGpuAllocation"] = Round(
      r.cluster_gpu_milli ? static_cast<double>(r.peak_allocated_gpu_milli) / r.cluster_gpu_milli
                          : 0);
  j["averageGpuAllocation"] = Round(r.average_gpu_allocation());
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : r.points)
    pts.push_back({{"t", p.time_s},
                   {"gpu", static_cast<double>(p.allocated_gpu_milli) / 1000.0},
                   {"cpu", static_cast<double>(p.allocated_cpu_milli) / 1000.0},
                   {"running", p.running_pods}});
  j["points"] = pts;
  nlohmann::json ts = nlohmann::json::array();
  for (size_t i = 0; i < r.tenants.size(); ++i) {
    const auto& t = r.tenants[i];
    ts.push_back({{"tenant", "tenant-" + std::to_string(i)},
                  {"podsPlaced", t.pods_placed},
                  {"podsFailed", t.pods_failed},
                  {"gpuHours", Round(static_cast<double>(t.gpu_milli_seconds) / 3.6e6, 1e3)},
                  {"cpuCoreHours", Round(static_cast<double>(t.cpu_milli_seconds) / 3.6e6, 1e3)}});
  }
  j["tenants"] = ts;
  if (!m.seconds.empty() && !m.seconds[0].empty()) j["seconds"] = Round(m.seconds[0][0], 1e4);
  return j;
}

std::string TimelineText(const TimelineResult& r, const TraceReportMeta& m) {
  std::string s;
  s += "Trace timeline replay: policy " + r.policy + ", " + Plural(m.node_count, "node") + ", " +
       Plural(r.cluster_gpu_milli / 1000, "GPU") + ", " +
       Fmt("%.1f", (r.end_s - r.start_s) / 3600.0) + " h\n";
  s += "  pods submitted " + std::to_string(r.pods_submitted) + ", placed " +
       std::to_string(r.pods_placed) + ", failed " + std::to_string(r.pods_failed) +
       " (tier 1000: " + std::to_string(r.failed_by_priority_tier[0]) +
       ", 5000: " + std::to_string(r.failed_by_priority_tier[1]) +
       ", 10000: " + std::to_string(r.failed_by_priority_tier[2]) + ")\n";
  s += "  GPU allocation: average " + Pct(r.average_gpu_allocation()) + ", peak " +
       Pct(r.cluster_gpu_milli
               ? static_cast<double>(r.peak_allocated_gpu_milli) / r.cluster_gpu_milli
               : 0) +
       "\n";
  if (r.tenants.size() > 1)
    for (size_t i = 0; i < r.tenants.size(); ++i) {
      const auto& t = r.tenants[i];
      s += "  tenant-" + std::to_string(i) + ": " + std::to_string(t.pods_placed) + " placed, " +
           std::to_string(t.pods_failed) + " failed, " +
           Fmt("%.1f", static_cast<double>(t.gpu_milli_seconds) / 3.6e6) + " GPU-hours requested\n";
    }
  return s;
}

std::string TimelineHtml(const TimelineResult& r, const TraceReportMeta& m) {
  return Page("Arbiter trace replay (timeline)", TimelineHtmlBody(r, m));
}

std::string TimelineHtmlBody(const TimelineResult& r, const TraceReportMeta& m) {
  // Allocation changes only at arrivals and departures: a step series (a line between sparse
  // points would draw ramps that never happened), on a time axis with round ticks.
  const svg::TimeAxis ta =
      svg::NiceTimeAxis(std::max<double>(1, static_cast<double>(r.end_s - r.start_s)), 10);
  Series gpu{"GPU", {}}, cpu{"CPU", {}};
  for (const auto& p : r.points) {
    const double x = static_cast<double>(p.time_s - r.start_s) / ta.unit.seconds;
    svg::StepTo(
        gpu, x,
        r.cluster_gpu_milli ? static_cast<double>(p.allocated_gpu_milli) / r.cluster_gpu_milli : 0);
    svg::StepTo(
        cpu, x,
        r.cluster_cpu_milli ? static_cast<double>(p.allocated_cpu_milli) / r.cluster_cpu_milli : 0);
  }
  std::string body = MetaHtml(m);
  Axes ax;
  ax.x_max = ta.max;
  ax.x_step = ta.step;
  ax.x_fmt = "%g";
  double peak = 0;
  for (const auto& se : {gpu, cpu})
    for (const auto& [x, y] : se.xy) peak = std::max(peak, y);
  if (peak < 0.5) {  // sparse traces: zoom the y axis in, with round ticks
    ax.y_step = svg::NiceStep(std::max(0.001, peak * 1.1), 8);
    ax.y_max = std::max(ax.y_step, std::ceil(peak * 1.1 / ax.y_step - 1e-9) * ax.y_step);
  }
  body +=
      LineChart("Allocation over time (" + r.policy + ")",
                std::string("time since the first arrival (") + ta.unit.name + ")", ax, {gpu, cpu});
  body +=
      "<p class=\"note\">Shares of the cluster's GPUs and CPUs allocated to running pods, sampled "
      "at about 1000 of "
      "the trace's events and held between them.</p>\n";
  body += "<pre>" + Esc(TimelineText(r, m)) + "</pre>\n";
  return body;
}

Result<PolicyRunReport> ReportPolicyRun(const PolicyRun& run) {
  const ManifestSet& m = run.manifests;
  const driver::SimResult& r = run.result;
  auto bill = BillSimulation(m, r, DefaultEpoch(m), /*keep_rows=*/false);
  if (!bill.ok()) return bill.status();
  const Summary s = Summarise(m, r);
  PolicyRunReport out;
  out.text = TextSummary(m, r, s) + BillText(*bill, !m.price_books.empty());
  out.json = ReportJson(m, r, s, BillJson(*bill));
  return out;
}

std::string PolicyRunHtml(const nlohmann::json& report, const std::string& title,
                          const std::string& trace_body) {
  HtmlReportOptions o;
  o.title = title;
  o.preamble_html = trace_body + "<h2>Under the policy file</h2>\n";
  return SimulationHtml(report, o);
}

}  // namespace arbiter::sim::trace
