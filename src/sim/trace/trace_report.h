// Reports of trace runs: terminal text, JSON (kinds PolicyComparison, TraceSaturate,
// TraceTimeline) and a self-contained HTML page with inline SVG charts. Pure formatting: the
// caller writes the strings where it wants.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {

struct TraceReportMeta {
  std::string nodes_path;
  std::string pods_path;
  std::string mode;  // "saturate" | "timeline"
  int64_t target_permille = 1300;
  int64_t node_count = 0;
  int64_t pod_count = 0;  // pods in the trace file
  // Wall-clock seconds per run, measured by the caller (not part of the deterministic result).
  // For comparisons: per policy, per seed, in the order of the summaries; may be empty.
  std::vector<std::vector<double>> seconds;
};

// Mean GPU allocation ratio (0..1) at each whole percent of arrived load, over a policy's runs
// (index k = k % arrived; entry 0 is 0).
std::vector<double> MeanCurve(const PolicySummary& s);

nlohmann::json ComparisonJson(const std::vector<PolicySummary>& summaries,
                              const TraceReportMeta& meta);
std::string ComparisonText(const std::vector<PolicySummary>& summaries,
                           const TraceReportMeta& meta);
std::string ComparisonHtml(const std::vector<PolicySummary>& summaries,
                           const TraceReportMeta& meta);

nlohmann::json SaturateJson(const SaturateResult& r, const TraceReportMeta& meta);
std::string SaturateText(const SaturateResult& r, const TraceReportMeta& meta);
std::string SaturateHtml(const SaturateResult& r, const TraceReportMeta& meta);

nlohmann::json TimelineJson(const TimelineResult& r, const TraceReportMeta& meta);
std::string TimelineText(const TimelineResult& r, const TraceReportMeta& meta);
std::string TimelineHtml(const TimelineResult& r, const TraceReportMeta& meta);

// The pages' contents without the page (for a report that shows more around them).
std::string SaturateHtmlBody(const SaturateResult& r, const TraceReportMeta& meta);
std::string TimelineHtmlBody(const TimelineResult& r, const TraceReportMeta& meta);

// A replay under a policy file (PolicyRun) as a SimulationReport: the text summary (phases,
// utilisation, preemptions, pending time, invoices), the JSON (kind SimulationReport, as
// `arbiter sim -f` writes it) and a page: the simulation report's page with the trace run's
// content (`trace_body`) first. Billing starts at the policy file's earliest PriceBook.
struct PolicyRunReport {
  std::string text;
  nlohmann::json json;
};
Result<PolicyRunReport> ReportPolicyRun(const PolicyRun& run);
std::string PolicyRunHtml(const nlohmann::json& report, const std::string& title,
                          const std::string& trace_body);

}  // namespace arbiter::sim::trace
