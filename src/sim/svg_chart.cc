#include "sim/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace arbiter::sim::svg {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::vector<double> OverlapWidths(size_t n) {
  std::vector<double> w;
  for (size_t k = 0; k < n; ++k) w.push_back(2.0 + 1.5 * static_cast<double>(n - 1 - k));
  return w;
}

void StepTo(Series& s, double x, double y) {
  if (!s.xy.empty() && s.xy.back().first != x) s.xy.push_back({x, s.xy.back().second});
  s.xy.push_back({x, y});
}

TimeUnit TimeUnitFor(double horizon_s) {
  if (horizon_s <= 180) return {1, "s"};
  if (horizon_s <= 3 * 3600) return {60, "min"};
  if (horizon_s <= 3 * 86400) return {3600, "h"};
  return {86400, "d"};
}

TimeAxis NiceTimeAxis(double horizon_s, int max_ticks) {
  TimeAxis a{TimeUnitFor(horizon_s), 0, 0};
  const double h = std::max(horizon_s / a.unit.seconds, 1.0);
  a.step = NiceStep(h, max_ticks);
  a.max = std::max(a.step, std::ceil(h / a.step - 1e-9) * a.step);
  return a;
}

double TextWidth(const std::string& text, double font_px) {
  // DejaVu Sans (Debian's default sans-serif) averages about 0.6 em per character; wide letters
  // and digits a little more: 0.62 em keeps a margin.
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8 characters
  return 0.62 * font_px * static_cast<double>(chars);
}

namespace {
// The root element: fixed size for the layout, scaled down to narrow windows.
std::string SvgOpen(double W, double H) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Fmt("%.0f", W) + "\" height=\"" +
         Fmt("%.0f", H) + "\" viewBox=\"0 0 " + Fmt("%.0f", W) + " " + Fmt("%.0f", H) +
         "\" style=\"max-width:100%;height:auto\" font-family=\"sans-serif\" font-size=\"12\">\n";
}

// The root element, a white background and the title at x = L.
std::string ChartHead(double W, double H, double L, const std::string& title) {
  std::string s = SvgOpen(W, H);
  s += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + Fmt("%.0f", L) + "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" +
       Esc(title) + "</text>\n";
  return s;
}

// The x axis' label, centred under the plot (from L, pw wide) at the bottom of a chart H high.
std::string XAxisLabel(double L, double pw, double H, const std::string& x_label) {
  return "<text x=\"" + Fmt("%.1f", L + pw / 2) + "\" y=\"" + Fmt("%.1f", H - 8) +
         "\" text-anchor=\"middle\">" + Esc(x_label) + "</text>\n";
}
}  // namespace

const char* const kColors[10] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string LineChart(const std::string& title, const std::string& x_label, const Axes& ax,
                      const std::vector<Series>& series) {
  // The legend column fits its longest entry (names cut at 40 characters).
  double legend_w = ax.diagonal && !ax.diagonal_label.empty() ? TextWidth(ax.diagonal_label) : 0;
  for (const auto& se : series) legend_w = std::max(legend_w, TextWidth(se.name.substr(0, 40)));
  const double W = kChartWidth, H = 440, L = 60, T = 36, B = 48;
  const double R = std::clamp(42 + legend_w + 12, 120.0, W / 2);
  const double pw = W - L - R, ph = H - T - B;
  const double xr = ax.x_max > ax.x_min ? ax.x_max - ax.x_min : 1;
  const double yr = ax.y_max > ax.y_min ? ax.y_max - ax.y_min : 1;
  auto X = [&](double x) { return L + std::clamp((x - ax.x_min) / xr, 0.0, 1.0) * pw; };
  auto Y = [&](double y) { return T + (1 - std::clamp((y - ax.y_min) / yr, 0.0, 1.0)) * ph; };
  std::string s = ChartHead(W, H, L, title);
  const int ny = static_cast<int>(yr / ax.y_step + 0.5);
  for (int i = 0; i <= ny; ++i) {
    const double y = ax.y_min + ax.y_step * i;
    s += "<line x1=\"" + Fmt("%.1f", L) + "\" y1=\"" + Fmt("%.1f", Y(y)) + "\" x2=\"" +
         Fmt("%.1f", L + pw) + "\" y2=\"" + Fmt("%.1f", Y(y)) + "\" stroke=\"#e5e5e5\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", L - 6) + "\" y=\"" + Fmt("%.1f", Y(y) + 4) +
         "\" text-anchor=\"end\">" +
         (ax.y_fmt ? Fmt(ax.y_fmt, y)
                   : Fmt(ax.y_step * 100 >= 0.999    ? "%.0f%%"
                         : ax.y_step * 100 >= 0.0999 ? "%.1f%%"
                                                     : "%.2f%%",
                         y * 100)) +
         "</text>\n";
  }
  const int nx = static_cast<int>(xr / ax.x_step + 1e-9);
  for (int i = 0; i <= nx; ++i) {
    const double x = ax.x_min + ax.x_step * i;
    s += "<text x=\"" + Fmt("%.1f", X(x)) + "\" y=\"" + Fmt("%.1f", T + ph + 16) +
         "\" text-anchor=\"middle\">" + Fmt(ax.x_fmt, x) + "</text>\n";
  }
  s += XAxisLabel(L, pw, H, x_label);
  s += "<rect x=\"" + Fmt("%.1f", L) + "\" y=\"" + Fmt("%.1f", T) + "\" width=\"" +
       Fmt("%.1f", pw) + "\" height=\"" + Fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  if (ax.diagonal) {
    const double x0 = std::max(ax.x_min, ax.y_min * 100), x1 = std::min(ax.x_max, ax.y_max * 100);
    if (x1 > x0)
      s += "<line x1=\"" + Fmt("%.1f", X(x0)) + "\" y1=\"" + Fmt("%.1f", Y(x0 / 100)) + "\" x2=\"" +
           Fmt("%.1f", X(x1)) + "\" y2=\"" + Fmt("%.1f", Y(x1 / 100)) +
           "\" stroke=\"#999\" stroke-dasharray=\"4 4\" class=\"diagonal\"/>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % 10];
    std::string pts;
    for (const auto& [x, y] : series[k].xy) {
      if (x < ax.x_min || x > ax.x_max) continue;
      pts += Fmt("%.1f", X(x)) + "," + Fmt("%.1f", Y(y)) + " ";
    }
    const std::string width = Fmt("%g", series[k].stroke_width);
    s += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"" + width +
         "\" stroke-linejoin=\"round\" points=\"" + pts + "\"/>\n";
    const double ly = T + 14 + 18.0 * static_cast<double>(k);
    s += "<line x1=\"" + Fmt("%.1f", L + pw + 12) + "\" y1=\"" + Fmt("%.1f", ly - 4) + "\" x2=\"" +
         Fmt("%.1f", L + pw + 36) + "\" y2=\"" + Fmt("%.1f", ly - 4) + "\" stroke=\"" + color +
         "\" stroke-width=\"" + Fmt("%g", std::max(3.0, series[k].stroke_width)) + "\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", L + pw + 42) + "\" y=\"" + Fmt("%.1f", ly) + "\">" +
         Esc(series[k].name.substr(0, 40)) + "</text>\n";
  }
  if (ax.diagonal && !ax.diagonal_label.empty()) {  // the dashed line's own legend entry
    const double ly = T + 14 + 18.0 * static_cast<double>(series.size());
    s += "<line x1=\"" + Fmt("%.1f", L + pw + 12) + "\" y1=\"" + Fmt("%.1f", ly - 4) + "\" x2=\"" +
         Fmt("%.1f", L + pw + 36) + "\" y2=\"" + Fmt("%.1f", ly - 4) +
         "\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", L + pw + 42) + "\" y=\"" + Fmt("%.1f", ly) + "\">" +
         Esc(ax.diagonal_label) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

namespace {

// Where HBarChart draws: the label column (L wide), the plot (pw × ph from L, T), a row's
// height, the value axis (0 to x_max in steps).
struct HBarLayout {
  size_t n = 1;  // bars per row
  double bar_h = 14, bar_gap = 3, row_gap = 12, row_h = 0;
  double W = kChartWidth, T = 0, B = 44, L = 0, R = 0, pw = 0, ph = 0, H = 0;
  bool any_muted = false, any_plain = false;
  double rule_gap = 0;  // between the ordinary rows and the muted ones
  double step = 1, x_max = 1;
  double X(double x) const { return L + std::clamp(x / x_max, 0.0, 1.0) * pw; }
};

HBarLayout LayOutHBars(const std::vector<std::string>& series_names,
                       const std::vector<HBarRow>& rows) {
  HBarLayout g;
  const bool legend = series_names.size() > 1;
  g.n = std::max<size_t>(1, series_names.size());
  g.row_h = static_cast<double>(g.n) * (g.bar_h + g.bar_gap) - g.bar_gap + g.row_gap;
  // Label column sized to the longest row label (about 7 px per character), within limits.
  size_t longest = 4;
  for (const auto& r : rows) longest = std::max(longest, r.label.size());
  size_t longest_value = 4;
  for (const auto& r : rows)
    for (const auto& v : r.value_labels)
      longest_value = std::max(longest_value, v.size() + (r.muted ? 12 : 0));
  g.T = legend ? 58 : 36;
  g.L = std::clamp(7.0 * static_cast<double>(longest) + 16, 90.0, 260.0);
  const double value_room = std::min(160.0, 6.5 * static_cast<double>(longest_value) + 10);
  g.R = 16 + value_room;
  g.pw = g.W - g.L - g.R;
  for (const auto& r : rows) (r.muted ? g.any_muted : g.any_plain) = true;
  g.rule_gap = g.any_muted && g.any_plain ? 10 : 0;
  g.ph = static_cast<double>(rows.size()) * g.row_h + g.rule_gap + (rows.empty() ? g.row_h : 0);
  g.H = g.T + g.ph + g.B;
  // The axis fits the ordinary rows; a muted bar longer than that is cut at the edge of the plot
  // with a break mark (so idle capacity does not squash the tenants into slivers).
  double peak = 0, muted_peak = 0;
  for (const auto& r : rows)
    for (double v : r.values)
      (r.muted ? muted_peak : peak) = std::max(r.muted ? muted_peak : peak, v);
  if (peak <= 0) peak = muted_peak;
  g.step = NiceStep(peak > 0 ? peak : 1, 6);
  g.x_max = std::max(g.step, std::ceil(peak / g.step - 1e-9) * g.step);
  return g;
}

// A row's label and bars from y; a muted row (idle capacity) in grey, its bars cut at the edge
// of the plot when off scale.
std::string HBarRowSvg(const HBarLayout& g, const HBarRow& r, double y) {
  const bool muted = r.muted;
  const double L = g.L, pw = g.pw, bar_h = g.bar_h;
  std::string s = muted ? "<g class=\"muted\">\n" : "<g class=\"row\">\n";
  const double mid = y + (g.row_h - g.row_gap) / 2;
  s += "<text x=\"" + Fmt("%.1f", L - 8) + "\" y=\"" + Fmt("%.1f", mid + 4) +
       "\" text-anchor=\"end\"" + (muted ? " fill=\"#666\" font-style=\"italic\"" : "") + ">" +
       Esc(r.label) + "</text>\n";
  for (size_t k = 0; k < r.values.size() && k < g.n; ++k) {
    const double v = std::max(0.0, r.values[k]);
    const double by = y + static_cast<double>(k) * (bar_h + g.bar_gap);
    const std::string fill = muted ? (k == 0 ? "#9e9e9e" : "#cfcfcf") : kColors[k % 10];
    const bool off_scale = v > g.x_max * (1 + 1e-9);
    s += "<rect x=\"" + Fmt("%.1f", L) + "\" y=\"" + Fmt("%.1f", by) + "\" width=\"" +
         Fmt("%.1f", g.X(v) - L) + "\" height=\"" + Fmt("%.1f", bar_h) + "\" fill=\"" + fill +
         "\"/>\n";
    if (off_scale)  // a white zig-zag across the bar, near its cut end
      s += "<polyline class=\"break\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"3\" "
           "points=\"" +
           Fmt("%.1f", L + pw - 22) + "," + Fmt("%.1f", by - 1) + " " + Fmt("%.1f", L + pw - 16) +
           "," + Fmt("%.1f", by + bar_h / 2) + " " + Fmt("%.1f", L + pw - 22) + "," +
           Fmt("%.1f", by + bar_h + 1) + "\"/>\n";
    if (k < r.value_labels.size() && !r.value_labels[k].empty())
      s += "<text x=\"" + Fmt("%.1f", g.X(v) + 4) + "\" y=\"" + Fmt("%.1f", by + bar_h - 3) +
           "\" font-size=\"11\"" + (muted ? " fill=\"#666\"" : "") + ">" + Esc(r.value_labels[k]) +
           (off_scale ? " (off scale)" : "") + "</text>\n";
  }
  s += "</g>\n";
  return s;
}

// The series' legend, one line under the title.
std::string HBarLegend(const HBarLayout& g, const std::vector<std::string>& series_names) {
  std::string s;
  double lx = g.L;
  for (size_t k = 0; k < series_names.size(); ++k) {
    s += "<rect x=\"" + Fmt("%.1f", lx) + "\" y=\"34\" width=\"24\" height=\"10\" fill=\"" +
         kColors[k % 10] + "\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", lx + 30) + "\" y=\"44\">" + Esc(series_names[k]) + "</text>\n";
    lx += 30 + 7.0 * static_cast<double>(series_names[k].size()) + 24;
  }
  return s;
}

}  // namespace

std::string HBarChart(const std::string& title, const std::string& x_label,
                      const std::vector<std::string>& series_names,
                      const std::vector<HBarRow>& rows, const char* x_fmt) {
  const HBarLayout g = LayOutHBars(series_names, rows);
  const double L = g.L, T = g.T, pw = g.pw, ph = g.ph;
  std::string s = ChartHead(g.W, g.H, L, title);
  const int nx = static_cast<int>(g.x_max / g.step + 0.5);
  for (int i = 0; i <= nx; ++i) {
    const double x = g.step * i;
    s += "<line x1=\"" + Fmt("%.1f", g.X(x)) + "\" y1=\"" + Fmt("%.1f", T) + "\" x2=\"" +
         Fmt("%.1f", g.X(x)) + "\" y2=\"" + Fmt("%.1f", T + ph) + "\" stroke=\"#e5e5e5\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", g.X(x)) + "\" y=\"" + Fmt("%.1f", T + ph + 16) +
         "\" text-anchor=\"middle\">" + Fmt(x_fmt, x) + "</text>\n";
  }
  s += XAxisLabel(L, pw, g.H, x_label);
  // Ordinary rows first, then the muted ones below a dashed rule.
  double y = T + g.row_gap / 2;
  for (int pass = 0; pass < 2; ++pass) {
    const bool muted = pass == 1;
    if (muted && g.any_muted && g.any_plain) {
      const double rule_y = y + g.rule_gap / 2 - g.row_gap / 2;
      s += "<line x1=\"4\" y1=\"" + Fmt("%.1f", rule_y) + "\" x2=\"" + Fmt("%.1f", L + pw) +
           "\" y2=\"" + Fmt("%.1f", rule_y) + "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n";
      y += g.rule_gap;
    }
    for (const auto& r : rows) {
      if (r.muted != muted) continue;
      s += HBarRowSvg(g, r, y);
      y += g.row_h;
    }
  }
  // Axis lines left and bottom only: value labels right of long bars cross no frame.
  s += "<path d=\"M" + Fmt("%.1f", L) + " " + Fmt("%.1f", T) + " V" + Fmt("%.1f", T + ph) + " H" +
       Fmt("%.1f", L + pw) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  if (series_names.size() > 1) s += HBarLegend(g, series_names);
  s += "</svg>\n";
  return s;
}

double NiceStep(double span, int max_ticks) {
  if (!(span > 0) || max_ticks < 1) return 1;
  const double raw = span / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

std::string BarChart(const std::string& title, const std::string& y_label,
                     const std::vector<std::string>& series_names,
                     const std::vector<BarGroup>& groups, const char* y_fmt, double min_step) {
  const bool legend = series_names.size() > 1;
  double legend_w = 0;
  for (const auto& n : series_names) legend_w = std::max(legend_w, TextWidth(n));
  const double W = kChartWidth, H = 360, L = 70, T = 36, B = 48;
  const double R = legend ? std::clamp(42 + legend_w + 12, 120.0, W / 2) : 20;
  const double pw = W - L - R, ph = H - T - B;
  double peak = 0;
  for (const auto& g : groups)
    for (double v : g.values) peak = std::max(peak, v);
  const double step = std::max(min_step, NiceStep(peak > 0 ? peak : 1, 5));
  const double y_max =
      std::max(step, std::ceil(peak * 1.08 / step - 1e-9) * step);  // room for the labels
  auto Y = [&](double y) { return T + (1 - std::clamp(y / y_max, 0.0, 1.0)) * ph; };
  std::string s = ChartHead(W, H, L, title);
  const int ny = static_cast<int>(y_max / step + 0.5);
  for (int i = 0; i <= ny; ++i) {
    const double y = step * i;
    s += "<line x1=\"" + Fmt("%.1f", L) + "\" y1=\"" + Fmt("%.1f", Y(y)) + "\" x2=\"" +
         Fmt("%.1f", L + pw) + "\" y2=\"" + Fmt("%.1f", Y(y)) + "\" stroke=\"#e5e5e5\"/>\n";
    s += "<text x=\"" + Fmt("%.1f", L - 6) + "\" y=\"" + Fmt("%.1f", Y(y) + 4) +
         "\" text-anchor=\"end\">" + Fmt(y_fmt, y) + "</text>\n";
  }
  s += "<text transform=\"translate(14 " + Fmt("%.1f", T + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + Esc(y_label) + "</text>\n";
  const size_t n = std::max<size_t>(1, series_names.size());
  const double gw = groups.empty() ? pw : pw / static_cast<double>(groups.size());
  const double bw = gw * 0.8 / static_cast<double>(n);
  // Label every k-th group so that the labels do not overlap (about 7 px per character).
  size_t longest = 1;
  for (const auto& g : groups) longest = std::max(longest, g.label.size());
  const size_t every =
      std::max<size_t>(1, static_cast<size_t>(std::ceil(7.0 * static_cast<double>(longest) / gw)));
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const BarGroup& g = groups[gi];
    const double gx = L + gw * static_cast<double>(gi);
    for (size_t k = 0; k < g.values.size() && k < n; ++k) {
      const double v = std::max(0.0, g.values[k]);
      const double x = gx + gw * 0.1 + bw * static_cast<double>(k);
      s += "<rect x=\"" + Fmt("%.1f", x) + "\" y=\"" + Fmt("%.1f", Y(v)) + "\" width=\"" +
           Fmt("%.1f", bw) + "\" height=\"" + Fmt("%.1f", T + ph - Y(v)) + "\" fill=\"" +
           kColors[k % 10] + "\"/>\n";
      if (k < g.value_labels.size() && !g.value_labels[k].empty())
        s += "<text x=\"" + Fmt("%.1f", x + bw / 2) + "\" y=\"" + Fmt("%.1f", Y(v) - 4) +
             "\" text-anchor=\"middle\" font-size=\"11\">" + Esc(g.value_labels[k]) + "</text>\n";
    }
    if (gi % every == 0)
      s += "<text x=\"" + Fmt("%.1f", gx + gw / 2) + "\" y=\"" + Fmt("%.1f", T + ph + 16) +
           "\" text-anchor=\"middle\">" + Esc(g.label) + "</text>\n";
  }
  s += "<rect x=\"" + Fmt("%.1f", L) + "\" y=\"" + Fmt("%.1f", T) + "\" width=\"" +
       Fmt("%.1f", pw) + "\" height=\"" + Fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  if (legend)
    for (size_t k = 0; k < series_names.size(); ++k) {
      const double ly = T + 14 + 18.0 * static_cast<double>(k);
      s += "<rect x=\"" + Fmt("%.1f", L + pw + 12) + "\" y=\"" + Fmt("%.1f", ly - 10) +
           "\" width=\"24\" height=\"10\" fill=\"" + kColors[k % 10] + "\"/>\n";
      s += "<text x=\"" + Fmt("%.1f", L + pw + 42) + "\" y=\"" + Fmt("%.1f", ly) + "\">" +
           Esc(series_names[k]) + "</text>\n";
    }
  s += "</svg>\n";
  return s;
}

}  // namespace arbiter::sim::svg
