// The HTML report of a manifest simulation (`arbiter sim -f ... --report-html PATH`): one
// self-contained page (no scripts, fonts, stylesheets or images from elsewhere; charts are inline
// SVG) built from the SimulationReport JSON alone, so it renders any report, including one read
// back from a file. Deterministic: the same JSON gives the same bytes.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace arbiter::sim {

struct HtmlReportOptions {
  size_t max_workloads = 1000;  // rows of the workload table
  size_t max_events = 200;      // the first N events
  std::string title = "Arbiter simulation report";
  std::string preamble_html;  // shown after the title (trace replay: the trace run's charts)
};

std::string SimulationHtml(const nlohmann::json& report, const HtmlReportOptions& options = {});

}  // namespace arbiter::sim
