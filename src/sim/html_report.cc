#include "sim/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "adapters/json/member.h"
#include "core/duration.h"
#include "core/plural.h"
#include "sim/report.h"
#include "sim/svg_chart.h"

namespace arbiter::sim {

namespace {

using nlohmann::json;
using svg::Esc;
using svg::Fmt;

using json_member::Member;

const json& Array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Member(j, key);
  return v.is_array() ? v : kEmpty;
}

// A JSON value as text: strings verbatim, numbers as JSON writes them, null as "".
std::string Str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

// A number or a decimal string ("0.4123", "12.50") as a double; 0 otherwise.
double Num(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::strtod(v.get_ref<const std::string&>().c_str(), nullptr);
  return 0;
}

// Seconds (number or null) as a duration ("1h30m"), "-" for null.
std::string TimeText(const json& seconds) {
  if (!seconds.is_number()) return seconds.is_null() ? "-" : Str(seconds);
  return FormatDuration(static_cast<Millis>(std::llround(Num(seconds) * 1000)));
}

std::string Percent(const json& ratio) {
  return ratio.is_null() ? "-" : Fmt("%.1f %%", Num(ratio) * 100);
}

using svg::NiceTimeAxis;
using svg::StepTo;
using svg::TimeAxis;
using svg::TimeUnit;
TimeUnit UnitFor(double horizon_s) { return svg::TimeUnitFor(horizon_s); }
TimeAxis AxisFor(double horizon_s) { return NiceTimeAxis(horizon_s, 10); }

// Keeps at most ~`limit` of `n` indices (every k-th, always the last), so that huge timelines
// stay drawable.
std::vector<size_t> Sample(size_t n, size_t limit) {
  std::vector<size_t> idx;
  const size_t k = n > limit ? (n + limit - 1) / limit : 1;
  for (size_t i = 0; i < n; i += k) idx.push_back(i);
  if (n > 0 && idx.back() != n - 1) idx.push_back(n - 1);
  return idx;
}

const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}"
    "h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}"
    "table{border-collapse:collapse;margin:12px 0;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.n{text-align:right;white-space:nowrap}td.w{white-space:nowrap}"
    "p.note{color:#555;max-width:760px}"
    "div.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}"
    "div.card{border:1px solid #ccc;border-radius:6px;padding:8px "
    "14px;min-width:110px;background:#fafafa}"
    "div.card b{display:block;font-size:22px}div.card span{color:#555;font-size:12px}"
    "td.Succeeded{color:#2ca02c}td.Running{color:#1f77b4}td.Pending{color:#ff7f0e}"
    "td.Preempted,td.Rejected{color:#d62728}"
    "tr.idle td{color:#666;font-style:italic;background:#f7f7f7}"
    "svg{display:block;margin:12px 0;max-width:100%;height:auto}";

std::string Card(const std::string& value, const std::string& label) {
  return "<div class=\"card\"><b>" + Esc(value) + "</b><span>" + Esc(label) + "</span></div>\n";
}

std::string Header(const json& r) {
  const json& pool = Member(r, "pool");
  const json& sum = Member(r, "summary");
  const json& phases = Member(sum, "phases");
  std::string s = "<p>Pool: " + Esc(Str(Member(pool, "nodes"))) + " nodes";
  const json& cap = Member(pool, "capacity");
  if (cap.is_object() && !cap.empty()) {
    s += " (";
    bool first = true;
    for (auto it = cap.begin(); it != cap.end(); ++it) {
      s += (first ? "" : ", ") + Esc(it.key()) + " " + Esc(Str(it.value()));
      first = false;
    }
    s += ")";
  }
  s += "<br>Placement: " + Esc(Str(Member(pool, "placement"))) +
       ", preemption: " + Esc(Str(Member(pool, "preemption"))) + "<br>Simulated until " +
       Esc(TimeText(Member(r, "endTime"))) + " of virtual time</p>\n<div class=\"cards\">\n";
  s += Card(std::to_string(Array(r, "workloads").size()),
            Array(r, "workloads").size() == 1 ? "workload" : "workloads");
  for (const char* p : {"Succeeded", "Running", "Pending", "Preempted", "Rejected"})
    s += Card(Str(Member(phases, p)),
              std::string(p) == "Preempted" ? "cancelled after preemption" : p);
  const json& util = Member(sum, "utilisation");
  if (util.is_object())
    for (auto it = util.begin(); it != util.end(); ++it)
      s += Card(Percent(it.value()), it.key() + " utilisation");
  s += Card(Str(Member(sum, "preemptions")), "preemptions");
  s += Card(Str(Member(sum, "reclaims")), "quota reclaims");
  // Victims that were cancelled are the "cancelled after preemption" phase card above: not again.
  s += Card(Str(Member(sum, "requeued")), "requeued after preemption");
  s += Card(Str(Member(sum, "gpuSecondsLostToPreemption")), "GPU-seconds lost to preemption");
  s += "</div>\n";
  return s;
}

std::string AllocationCharts(const json& r, double horizon_s) {
  const json& tl = Array(r, "timeline");
  if (tl.empty())
    return "<p class=\"note\">This report has no <code>timeline</code>: allocation over time is "
           "not shown.</p>\n";
  const TimeAxis ta = AxisFor(horizon_s);
  const json& util = Member(Member(r, "summary"), "utilisation");
  std::vector<svg::Series> share;
  std::vector<std::string> resources;
  for (const auto& p : tl) {
    const json& a = Member(p, "allocated");
    if (!a.is_object()) continue;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (std::find(resources.begin(), resources.end(), it.key()) == resources.end())
        resources.push_back(it.key());
  }
  for (const auto& res : resources) {
    const json& u = Member(util, res.c_str());
    const std::string name = res == "nvidia.com/gpu" ? "GPU" : res;
    share.push_back({name + (u.is_null() ? "" : " (mean " + Percent(u) + ")"), {}});
  }
  svg::Series pending{"pending", {}}, running{"running", {}};
  double peak_share = 0, peak_count = 0;
  for (size_t i : Sample(tl.size(), 3000)) {
    const json& p = tl[i];
    const double x = Num(Member(p, "time")) / ta.unit.seconds;
    const json& a = Member(p, "allocated");
    for (size_t k = 0; k < resources.size(); ++k) {
      const double y = Num(Member(a, resources[k].c_str()));
      peak_share = std::max(peak_share, y);
      StepTo(share[k], x, y);
    }
    const double pe = Num(Member(p, "pending")), ru = Num(Member(p, "running"));
    peak_count = std::max({peak_count, pe, ru});
    StepTo(pending, x, pe);
    StepTo(running, x, ru);
  }
  const std::string x_label = std::string("virtual time (") + ta.unit.name + ")";
  svg::Axes ax;
  ax.x_max = ta.max;
  ax.x_step = ta.step;
  ax.x_fmt = "%g";
  if (peak_share > 1) {  // cpu or memory overcommit
    ax.y_max = std::ceil(peak_share * 10 - 1e-9) / 10;
    ax.y_step = svg::NiceStep(ax.y_max, 10);
    ax.y_max = std::ceil(ax.y_max / ax.y_step - 1e-9) * ax.y_step;
  }
  std::string s = svg::LineChart("Allocated share of the pool over time", x_label, ax, share);
  svg::Axes cx = ax;
  cx.y_min = 0;
  cx.y_step = std::max(1.0, svg::NiceStep(std::max(peak_count, 1.0), 8));
  cx.y_max = std::max(cx.y_step, std::ceil(peak_count / cx.y_step - 1e-9) * cx.y_step);
  cx.y_fmt = "%g";
  s += svg::LineChart("Workloads pending and running", x_label, cx, {pending, running});
  return s;
}

std::string PendingByTierChart(const json& r) {
  const json& tiers = Array(Member(r, "summary"), "pendingByTier");
  if (tiers.empty()) return "<p class=\"note\">No workloads were admitted.</p>\n";
  double peak = 0;
  for (const auto& t : tiers)
    peak =
        std::max({peak, Num(Member(t, "pendingSecondsMax")), Num(Member(t, "pendingSecondsMean"))});
  const TimeUnit u = UnitFor(peak);
  std::vector<svg::BarGroup> groups;
  for (const auto& t : tiers) {
    const double mean = Num(Member(t, "pendingSecondsMean")),
                 max = Num(Member(t, "pendingSecondsMax"));
    // Labels rounded as the terminal summary rounds them (report.h), from the exact total.
    const Millis total_ms = std::llround(Num(Member(t, "pendingSecondsTotal")) * 1000);
    const int64_t n = static_cast<int64_t>(Num(Member(t, "workloads")));
    groups.push_back({Str(Member(t, "priority")) + " (" + Str(Member(t, "workloads")) + ")",
                      {mean / u.seconds, max / u.seconds},
                      {FormatDuration(MeanToSecond(total_ms, n)),
                       FormatDuration(RoundToSecond(std::llround(max * 1000)))}});
  }
  return svg::BarChart("Pending time per priority tier (workloads)",
                       std::string("pending time (") + u.name + ")", {"mean", "max"}, groups);
}

std::string PreemptionChart(const json& r, double horizon_s) {
  std::vector<double> preempted, reclaimed;
  size_t total = 0;
  for (const auto& ev : Array(r, "events")) {
    const std::string type = Str(Member(ev, "type"));
    if (type == "Preempted" || type == "Reclaimed") ++total;
  }
  if (total == 0) return "<p class=\"note\">No preemptions or quota reclaims in this run.</p>\n";
  const TimeUnit u = UnitFor(horizon_s);
  const double h = std::max(horizon_s / u.seconds, 1.0);
  const double bin = svg::NiceStep(h, 12);
  const size_t n = std::max<size_t>(1, static_cast<size_t>(std::ceil(h / bin - 1e-9)));
  preempted.assign(n, 0);
  reclaimed.assign(n, 0);
  for (const auto& ev : Array(r, "events")) {
    const std::string type = Str(Member(ev, "type"));
    if (type != "Preempted" && type != "Reclaimed") continue;
    const double x = Num(Member(ev, "time")) / u.seconds;
    const size_t b = std::min(n - 1, static_cast<size_t>(std::max(0.0, std::floor(x / bin))));
    (type == "Preempted" ? preempted : reclaimed)[b] += 1;
  }
  std::vector<svg::BarGroup> groups;
  for (size_t b = 0; b < n; ++b) {
    auto label = [](double v) { return v > 0 ? Fmt("%.0f", v) : std::string(); };
    groups.push_back({Fmt("%g", bin * static_cast<double>(b)) + u.name,
                      {preempted[b], reclaimed[b]},
                      {label(preempted[b]), label(reclaimed[b])}});
  }
  return svg::BarChart("Preemptions over time (" + Fmt("%g", bin) + " " + u.name + " bins)",
                       "victims", {"Preempted (priority)", "Reclaimed (quota)"}, groups, "%g", 1);
}

// The invoice of the pool's unallocated capacity (billing::BuildIdleInvoice): not a tenant.
constexpr const char* kIdleNamespace = "__idle__";
constexpr const char* kIdleLabel = "idle capacity (not billed)";

std::string CostSection(const json& r) {
  const json& inv = Array(r, "invoices");
  if (inv.empty())
    return "<p class=\"note\">No price book: this report has no invoices, so there is no "
           "per-tenant cost to "
           "show.</p>\n";
  std::string currency;
  std::vector<svg::HBarRow> rows;
  bool any_idle_share = false;
  for (const auto& i : inv) any_idle_share |= !Member(i, "idleShareTotal").is_null();
  // Every column of the invoice totals: total = request or usage track (by mode) + credits
  // (+ the share of idle cost when the PriceBook spreads it).
  std::string table =
      "<table><tr><th>namespace</th><th>currency</th><th>request track</th><th>usage "
      "track</th><th>credits</th>" +
      std::string(any_idle_share ? "<th>idle share</th>" : "") + "<th>total</th></tr>\n";
  std::string idle_rows;
  auto money = [](const json& v) { return v.is_null() ? std::string("-") : Esc(Str(v)); };
  for (const auto& i : inv) {
    if (currency.empty()) currency = Str(Member(i, "currency"));
    const json& rt = Member(i, "requestTotal");
    const json& ut = Member(i, "usageTotal");
    const bool idle = Str(Member(i, "namespace")) == kIdleNamespace;
    const std::string share =
        any_idle_share ? "<td class=\"n\">" + money(Member(i, "idleShareTotal")) + "</td>" : "";
    if (idle) {  // no usage track: nobody used it
      rows.push_back({kIdleLabel, {Num(rt)}, {Str(rt)}, /*muted=*/true});
      idle_rows += "<tr class=\"idle\"><td>" + std::string(kIdleLabel) + "</td><td>" +
                   Esc(Str(Member(i, "currency"))) + "</td><td class=\"n\">" + Esc(Str(rt)) +
                   "</td><td class=\"n\">-</td><td class=\"n\">-</td>" + share +
                   "<td class=\"n\">" + Esc(Str(Member(i, "total"))) + "</td></tr>\n";
      continue;
    }
    rows.push_back({Str(Member(i, "namespace")), {Num(rt), Num(ut)}, {Str(rt), Str(ut)}, false});
    table += "<tr><td class=\"w\">" + Esc(Str(Member(i, "namespace"))) + "</td><td>" +
             Esc(Str(Member(i, "currency"))) + "</td><td class=\"n\">" + Esc(Str(rt)) +
             "</td><td class=\"n\">" + Esc(Str(ut)) + "</td><td class=\"n\">" +
             money(Member(i, "creditTotal")) + "</td>" + share + "<td class=\"n\">" +
             Esc(Str(Member(i, "total"))) + "</td></tr>\n";
  }
  table += idle_rows + "</table>\n";
  std::string note;
  if (!idle_rows.empty())
    note =
        "<p class=\"note\">Grey, below the tenants: idle capacity, the pool's capacity that no "
        "workload held, "
        "priced like the request track. It is not billed to anyone; it shows what the unused part "
        "of the pool "
        "cost. The axis fits the tenants: a longer idle bar is cut, with its amount marked off "
        "scale.</p>\n";
  return svg::HBarChart("Cost per tenant: request and usage track",
                        "amount" + (currency.empty() ? std::string() : " (" + currency + ")"),
                        {"request track", "usage track"}, rows) +
         note + table;
}

std::string WorkloadTable(const json& r, size_t limit) {
  const json& ws = Array(r, "workloads");
  std::string s;
  if (ws.size() > limit)
    s += "<p class=\"note\">The first " + std::to_string(limit) + " of " +
         std::to_string(ws.size()) + " workloads.</p>\n";
  s += "<table><tr><th>name</th><th>priority</th><th>phase</th><th>node</th><th>start</"
       "th><th>finish</th>"
       "<th>pending</th><th>preemptions</th><th>last reason (why it waits, or waited)</th></tr>\n";
  for (size_t i = 0; i < ws.size() && i < limit; ++i) {
    const json& w = ws[i];
    const std::string phase = Str(Member(w, "phase"));
    const json& node = Member(w, "node");
    const json& pend = Member(w, "pendingSeconds");
    s += "<tr><td class=\"w\">" + Esc(Str(Member(w, "name"))) + "</td><td class=\"n\">" +
         Esc(Str(Member(w, "priority"))) + "</td><td class=\"" + Esc(phase) + "\">" + Esc(phase) +
         "</td><td class=\"w\">" + Esc(node.is_null() ? "-" : Str(node)) + "</td><td class=\"n\">" +
         Esc(TimeText(Member(w, "startTime"))) + "</td><td class=\"n\">" +
         Esc(TimeText(Member(w, "finishTime"))) + "</td><td class=\"n\">" +
         Esc(pend.is_null() ? "-" : TimeText(pend)) + "</td><td class=\"n\">" +
         Esc(Str(Member(w, "preemptions"))) + "</td><td>" + Esc(Str(Member(w, "message"))) +
         "</td></tr>\n";
  }
  s += "</table>\n";
  return s;
}

std::string EventTable(const json& r, size_t limit) {
  const json& evs = Array(r, "events");
  std::string s = "<p class=\"note\">" +
                  (evs.size() > limit
                       ? "The first " + std::to_string(limit) + " of " + Plural(evs.size(), "event")
                   : evs.size() == 1 ? std::string("1 event")
                                     : "All " + Plural(evs.size(), "event")) +
                  ", in time order.</p>\n";
  s += "<table><tr><th>time</th><th>type</th><th>workload</th><th>node</th><th>by</th><th>reason</"
       "th>"
       "<th>message</th></tr>\n";
  for (size_t i = 0; i < evs.size() && i < limit; ++i) {
    const json& e = evs[i];
    s += "<tr><td class=\"n\">" + Esc(TimeText(Member(e, "time"))) + "</td><td>" +
         Esc(Str(Member(e, "type"))) + "</td><td class=\"w\">" + Esc(Str(Member(e, "workload"))) +
         "</td><td class=\"w\">" + Esc(Str(Member(e, "node"))) + "</td><td class=\"w\">" +
         Esc(Str(Member(e, "by"))) + "</td><td>" + Esc(Str(Member(e, "reason"))) + "</td><td>" +
         Esc(Str(Member(e, "message"))) + "</td></tr>\n";
  }
  s += "</table>\n";
  return s;
}

}  // namespace

std::string SimulationHtml(const json& report, const HtmlReportOptions& options) {
  double horizon = Num(Member(report, "endTime"));
  const json& tl = Array(report, "timeline");
  if (!tl.empty()) horizon = std::max(horizon, Num(Member(tl.back(), "time")));
  const std::string title = Esc(options.title);
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                  title + "</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>" + title +
                  "</h1>\n" + options.preamble_html;
  if (Str(Member(report, "kind")) != "SimulationReport")
    s += "<p class=\"note\">This JSON is not a SimulationReport (kind: " +
         Esc(Str(Member(report, "kind"))) + "); what it has is shown below.</p>\n";
  s += Header(report);
  s += "<h2>Allocation over time</h2>\n" + AllocationCharts(report, horizon);
  s += "<h2>Pending time per priority tier</h2>\n" + PendingByTierChart(report);
  s += "<h2>Preemptions over time</h2>\n" + PreemptionChart(report, horizon);
  s += "<h2>Cost per tenant</h2>\n" + CostSection(report);
  s += "<h2>Workloads</h2>\n" + WorkloadTable(report, options.max_workloads);
  s += "<h2>Events</h2>\n" + EventTable(report, options.max_events);
  s += "</body></html>\n";
  return s;
}

}  // namespace arbiter::sim
