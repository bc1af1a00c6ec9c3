// Inline SVG charts and HTML escaping shared by the simulator's HTML reports (trace replay and
// manifest simulations). Pure string formatting, deterministic: the same input gives the same
// bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace arbiter::sim::svg {

// snprintf of one double with the format `f`.
std::string Fmt(const char* f, double v);
// Escapes & < > " for HTML text and double-quoted attribute values.
std::string Esc(const std::string& s);

// Ten distinguishable colours (the d3 category10 palette).
extern const char* const kColors[10];

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> xy;  // x in x-units, y in y-units (0..1 by default)
  double stroke_width = 2;  // series that may coincide get decreasing widths (OverlapWidths)
};

// Stroke widths for `n` series drawn in order, widest first, so that where two lines coincide the
// one drawn earlier still shows around the later one (no series hidden under another).
std::vector<double> OverlapWidths(size_t n);

// Appends a step to a series: the last value holds until x, then jumps to y (for counts and
// allocations that change at events; a line between sparse points would draw ramps that never
// happened).
void StepTo(Series& s, double x, double y);

// Default chart width in px: the SVG scales down to narrower windows (max-width: 100%).
inline constexpr double kChartWidth = 1100;

struct Axes {
  double x_min = 0, x_max = 100, x_step = 10;  // x ticks every x_step
  double y_min = 0, y_max = 1, y_step = 0.1;   // y in 0..1, labelled as %
  const char* x_fmt = "%.0f%%";
  bool diagonal = false;       // dashed y = x/100 (ideal allocation)
  std::string diagonal_label;  // its legend entry ("" for none)
  // When set, y tick labels are Fmt(y_fmt, y) instead of percentages of 0..1.
  const char* y_fmt = nullptr;
};

// A kChartWidth×440 line chart with a legend on the right, as wide as its longest name.
std::string LineChart(const std::string& title, const std::string& x_label, const Axes& ax,
                      const std::vector<Series>& series);

struct BarGroup {
  std::string label;
  std::vector<double> values;             // one per series
  std::vector<std::string> value_labels;  // printed above the bars; empty entries print nothing
};

// A kChartWidth×H grouped vertical bar chart: one group per x label, one bar per series in each
// group, a legend on the right when there is more than one series. The y axis starts at 0 and ends
// at a round number above the largest value, ticks at least `min_step` apart; tick labels use
// `y_fmt`.
std::string BarChart(const std::string& title, const std::string& y_label,
                     const std::vector<std::string>& series_names,
                     const std::vector<BarGroup>& groups, const char* y_fmt = "%g",
                     double min_step = 0);

struct HBarRow {
  std::string label;
  std::vector<double> values;  // one per series; a missing value draws no bar
  std::vector<std::string>
      value_labels;  // printed right of each bar's end; empty entries print nothing
  // Not one of the compared items (e.g. idle capacity next to tenants): drawn after the others,
  // below a dashed rule, in grey with an italic label, inside <g class="muted">. The x axis fits
  // the other rows; a longer muted bar is cut at the plot's edge with a break mark
  // (<polyline class="break">) and its value label says "(off scale)".
  bool muted = false;
};

// A kChartWidth×H horizontal grouped bar chart: one row per entry (label on the left), one bar per
// series in each row, each bar's value label right of its end (never on top of another label: every
// bar has its own line), an x axis from 0 to a round number above the largest value, a legend under
// the title when there is more than one series. Ordinary rows are inside <g class="row">.
std::string HBarChart(const std::string& title, const std::string& x_label,
                      const std::vector<std::string>& series_names,
                      const std::vector<HBarRow>& rows, const char* x_fmt = "%g");

// A round tick step (1, 2 or 5 × 10^k) that divides `span` into at most about `max_ticks` parts.
double NiceStep(double span, int max_ticks = 8);

// A time axis for a horizon in seconds: the unit (s, min, h or d) and round ticks in it.
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit TimeUnitFor(double horizon_s);
struct TimeAxis {
  TimeUnit unit;
  double max;   // in units, a multiple of step
  double step;  // in units, NiceStep
};
TimeAxis NiceTimeAxis(double horizon_s, int max_ticks = 10);

// Approximate width in px of `text` in the charts' 12 px sans-serif (for laying out legends).
double TextWidth(const std::string& text, double font_px = 12);

}  // namespace arbiter::sim::svg
