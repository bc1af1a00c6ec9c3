#include "cmd_trace.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <tuple>

#include "adapters/yaml/manifest_loader.h"
#include "cli_flags.h"
#include "core/duration.h"
#include "core/plural.h"
#include "sim/trace/trace_report.h"
#include "sim/trace/trace_sim.h"

namespace arbiter::app {

namespace tr = arbiter::sim::trace;

namespace {

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) {
    std::cerr << "arbiter sim: cannot write " << path << "\n";
    return false;
  }
  return true;
}

struct Loaded {
  std::vector<tr::TraceNode> nodes;
  tr::PodTrace pods;
};

// 0 on success, else the exit code.
int Load(const std::string& nodes, const std::string& pods, int32_t tenants, uint64_t seed,
         Loaded* out) {
  if (nodes.empty() || pods.empty()) {
    std::cerr << "arbiter sim: a trace run needs both --nodes NODES.csv and --pods PODS.csv\n";
    return 2;
  }
  if (tenants < 1) {
    std::cerr << "arbiter sim: --tenants: must be at least 1, got " << tenants << "\n";
    return 2;
  }
  if (int rc = StdinOnce("arbiter sim", {{"--nodes", nodes}, {"--pods", pods}}); rc != kExitOk)
    return rc;
  auto n = tr::ReadOpenbNodes(nodes);
  if (!n.ok()) {
    std::cerr << "arbiter sim: --nodes: " << n.message() << "\n";
    return 1;
  }
  tr::PodMappingOptions mo;
  mo.tenants = tenants;
  mo.tenant_seed = seed;
  auto p = tr::ReadOpenbPods(pods, mo);
  if (!p.ok()) {
    std::cerr << "arbiter sim: --pods: " << p.message() << "\n";
    return 1;
  }
  out->nodes = std::move(n).value();
  out->pods = std::move(p).value();
  return 0;
}

bool Progress(bool quiet) { return !quiet && isatty(STDERR_FILENO); }

// With a policy file, the run's SimulationReport joins the trace's outputs: its summary after the
// trace's, its JSON as "policyRun", and the page becomes the simulation report's page with the
// trace's content first (`page` holds that content on entry). 0, or the exit code.
int PolicyRunOutputs(const tr::PolicyRun* run, const TraceSimOptions& o, const std::string& title,
                     std::string* text, nlohmann::json* json, std::string* page) {
  if (!run) return 0;
  auto report = tr::ReportPolicyRun(*run);
  if (!report.ok()) {
    std::cerr << "arbiter sim: " << report.message() << "\n";
    return 1;
  }
  *text += "Under policy file " + o.policy_file + ":\n" + report->text;
  (*json)["policyFile"] = o.policy_file;
  (*json)["policyRun"] = report->json;
  if (!o.report_html.empty()) *page = tr::PolicyRunHtml(report->json, title, *page);
  return 0;
}

}  // namespace

bool IsTraceSim(const TraceSimOptions& o) { return !o.nodes.empty() || !o.pods.empty(); }

void AddTraceOptions(CLI::App* sim, TraceSimOptions* o) {
  sim->add_option("--nodes", o->nodes,
                  "Trace node list CSV (openb: sn,cpu_milli,memory_mib,gpu,model)");
  sim->add_option("--pods", o->pods,
                  "Trace pod list CSV (openb: name,cpu_milli,memory_mib,num_gpu,gpu_milli,...)");
  sim->add_option("--mode", o->mode,
                  "Trace mode: timeline (default) or saturate (the FGD paper's protocol)");
  sim->add_option(
      "--target", o->target,
      "saturate: arrived GPU demand to reach: a ratio of the cluster's GPUs (1.3) or a percentage "
      "(130%), at most 10 (1000%); default 1.3");
  sim->add_option("--tenants", o->tenants,
                  "Spread trace pods over N tenants (namespaces tenant-0 .. tenant-N-1) by a "
                  "seeded rule (default 1)");
  sim->add_option("--policy-file", o->policy_file,
                  "Replay under these policy objects (YAML: PoolPolicy, PriorityClass, QoS, "
                  "Namespace, ResourceQuota, "
                  "ElasticQuota, LimitRange, PodDisruptionBudget, PriceBook for the tenant-K "
                  "namespaces): quotas, "
                  "preemption and invoices in the report");
  sim->add_option(
      "--unschedulable", o->unschedulable,
      "A pod that cannot start when it arrives: drop (fails, the FGD paper's protocol; the default "
      "without --policy-file) or wait (queues; the default with one)");
  sim->add_option(
      "--time-limits", o->time_limits,
      "timeline: give every pod a time limit (spec.activeDeadlineSeconds) of its duration x "
      "PERCENT "
      "(100 = exact, 150 = users over-estimate by half; rounded up to a second), which backfill "
      "reservations plan with; default none (ends unknown, no reservations)");
  sim->add_option("--checkpoint-interval", o->checkpoint_interval,
                  "timeline: a pod whose trace run time is longer than DUR saves its progress "
                  "every DUR (arbiter.dev/checkpoint-interval; a requeued run resumes from its "
                  "last checkpoint); default none (a preempted pod restarts from zero)");
  sim->add_option("--shutdown-time", o->shutdown_time,
                  "timeline, with --checkpoint-interval: the time a checkpointing pod needs after "
                  "SIGTERM to save (arbiter.dev/shutdown-time); longer than its grace period (30s) "
                  "it is killed and loses the work since its last checkpoint; default 0s");
}

void RegisterSimCompare(CLI::App* sim, int* exit_code) {
  auto o = std::make_shared<TraceCompareOptions>();
  auto* cmd = sim->add_subcommand("compare",
                                  "Compare placement policies on a trace with the FGD paper's "
                                  "saturate protocol: per policy, the GPU\n"
                                  "allocation at 100 % arrived load and the GPUs left unallocated "
                                  "at the target, averaged over seeds.");
  cmd->add_option("--nodes", o->nodes, "Trace node list CSV")->required();
  cmd->add_option("--pods", o->pods, "Trace pod list CSV")->required();
  cmd->add_option("--mode", o->mode, "Only saturate");
  cmd->add_option(
      "--target", o->target,
      "Arrived GPU demand to reach: a ratio of the cluster's GPUs (1.3) or a percentage (130%), at "
      "most 10 (1000%); default 1.3");
  cmd->add_option("--policies", o->policies,
                  "Comma-separated policies (default random,dotproduct,packing,bestfit,fgd)");
  cmd->add_option("--seeds", o->seeds,
                  "Seeds: 42, a range 42-51, or a list 1,5,10-12; default 42-51");
  cmd->add_option("--tenants", o->tenants, "Spread trace pods over N tenants (default 1)");
  cmd->add_option("--report-json", o->report_json, "Write the PolicyComparison JSON here");
  cmd->add_option("--report-html", o->report_html,
                  "Write a self-contained HTML report with SVG charts here");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress output");
  cmd->footer(
      "--seeds: one seed (42), a range FIRST-LAST with both ends included and FIRST <= LAST "
      "(42-51), or a\n"
      "  comma list of both (1,5,10-12). Each seed at most once, at most 100000 seeds in all; "
      "every seed is\n"
      "  one saturate run per policy (about 0.5 s each on the default trace).\n"
      "--target: a ratio of the cluster's GPU capacity (1.3, 0.5, 2; at most three decimals) or a\n"
      "  percentage (130%, 50%, 12.5%). Above 0 and at most 10 (1000%). A bare number above 10 is "
      "refused\n"
      "  rather than guessed: --target 50 would be 5000%; write 50% or 0.5.");
  cmd->callback([o, exit_code] { *exit_code = RunTraceCompare(*o); });
}

// Loads a --policy-file: policy objects only (0 on success, else the exit code).
int LoadPolicyFile(const std::string& path, bool quiet, ManifestSet* out) {
  auto load = yaml::LoadManifestFiles({path});
  load.diagnostics.Sort();
  for (const auto& d : load.diagnostics.items)
    if (d.severity == Severity::kError || !quiet) std::cerr << d.ToString() << "\n";
  if (!load.ok()) {
    std::cerr << "arbiter sim: --policy-file: " << Plural(load.diagnostics.ErrorCount(), "error")
              << " in " << path << "; nothing was simulated\n";
    return 1;
  }
  if (!load.set.nodes.empty() || !load.set.pods.empty()) {
    std::cerr << "arbiter sim: --policy-file " << path << ": holds "
              << Plural(load.set.nodes.size(), "Node") << " and "
              << Plural(load.set.pods.size(), "Pod")
              << "; a policy file holds policy objects only (the trace gives the nodes and pods)\n";
    return 1;
  }
  *out = std::move(load.set);
  return 0;
}

namespace {

// --policy and --unschedulable into `ro`: 0, or the exit code.
int ParsePlacementFlags(const TraceSimOptions& o, tr::TraceRunOptions* ro) {
  ro->policy.reset();  // the PoolPolicy of a policy file decides, unless --policy does
  if (!o.policy.empty() || o.policy_file.empty()) {
    auto policy = tr::ParsePolicyName(o.policy.empty() ? "bestfit" : o.policy);
    if (!policy.ok()) {
      std::cerr << "arbiter sim: --policy: " << policy.message() << "\n";
      return 2;
    }
    ro->policy = *policy;
  }
  if (o.unschedulable == "drop") {
    ro->unschedulable = tr::TraceRunOptions::Unschedulable::kDrop;
  } else if (o.unschedulable == "wait") {
    ro->unschedulable = tr::TraceRunOptions::Unschedulable::kWait;
  } else if (!o.unschedulable.empty()) {
    std::cerr << "arbiter sim: --unschedulable: expected drop or wait, got \"" << o.unschedulable
              << "\"\n";
    return 2;
  }
  return 0;
}

// --time-limits, --checkpoint-interval and --shutdown-time into `ro`: 0, or the exit code.
int ParseTimeFlags(const TraceSimOptions& o, tr::TraceRunOptions* ro) {
  if (o.time_limits < 0 || o.time_limits > 100000) {
    std::cerr << "arbiter sim: --time-limits: expected a percentage from 1 to 100000, got "
              << o.time_limits << "\n";
    return 2;
  }
  ro->time_limit_percent = o.time_limits;
  for (auto [flag, text, out] :
       {std::tuple{"--checkpoint-interval", &o.checkpoint_interval, &ro->checkpoint_interval},
        std::tuple{"--shutdown-time", &o.shutdown_time, &ro->checkpoint_shutdown}}) {
    if (text->empty()) continue;
    auto d = ParseDuration(*text);
    if (!d.ok() || *d <= 0 || *d > tr::kMaxTraceCheckpoint) {
      std::cerr << "arbiter sim: " << flag << ": expected a duration from 1ms to "
                << FormatDuration(tr::kMaxTraceCheckpoint) << " (30m, 1h), got \"" << *text << "\""
                << (d.ok() ? "" : ": " + d.message()) << "\n";
      return 2;
    }
    *out = *d;
  }
  if (ro->checkpoint_shutdown > 0 && ro->checkpoint_interval == 0) {
    std::cerr << "arbiter sim: --shutdown-time needs --checkpoint-interval (it is the time a "
                 "checkpointing pod takes to save)\n";
    return 2;
  }
  return 0;
}

// The run options of a trace replay from its flags: 0, or the exit code.
int ParseTraceRunOptions(const TraceSimOptions& o, tr::TraceRunOptions* ro) {
  if (int rc = ParsePlacementFlags(o, ro)) return rc;
  if (int rc = ParseTimeFlags(o, ro)) return rc;
  ro->check_invariants = o.check_invariants;
  ro->seed = o.seed;
  if (auto t = tr::ParseTargetPermille(o.target); t.ok()) {
    ro->target_permille = *t;
  } else {
    std::cerr << "arbiter sim: --target: " << t.message() << "\n";
    return 2;
  }
  if (o.mode != "timeline" && o.mode != "saturate") {
    std::cerr << "arbiter sim: --mode: expected timeline or saturate, got \"" << o.mode << "\"\n";
    return 2;
  }
  return 0;
}

// What a report says about its trace: the files, the mode, the target and the sizes.
tr::TraceReportMeta TraceMeta(const std::string& nodes, const std::string& pods,
                              const std::string& mode, int64_t target_permille, const Loaded& in) {
  tr::TraceReportMeta meta;
  meta.nodes_path = nodes;
  meta.pods_path = pods;
  meta.mode = mode;
  meta.target_permille = target_permille;
  meta.node_count = static_cast<int64_t>(in.nodes.size());
  meta.pod_count = static_cast<int64_t>(in.pods.pods.size());
  return meta;
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The outputs of a trace replay: the summary, and the JSON and HTML reports when asked for.
struct TraceOutputs {
  std::string text, json, html;
};

// One mode of a trace replay: how it runs and how its result is reported.
template <typename R>
struct TraceMode {
  Result<R> (*run)(const std::vector<tr::TraceNode>&, const tr::PodTrace&,
                   const tr::TraceRunOptions&);
  std::string (*text)(const R&, const tr::TraceReportMeta&);
  nlohmann::json (*json)(const R&, const tr::TraceReportMeta&);
  std::string (*html)(const R&, const tr::TraceReportMeta&);       // the whole page
  std::string (*html_body)(const R&, const tr::TraceReportMeta&);  // with a policy run
  const char* policy_run_title;
};
const TraceMode<tr::SaturateResult> kSaturate{
    tr::RunSaturate,  tr::SaturateText,     tr::SaturateJson,
    tr::SaturateHtml, tr::SaturateHtmlBody, "Arbiter trace run (saturate) under a policy file"};
const TraceMode<tr::TimelineResult> kTimeline{
    tr::RunTimeline,  tr::TimelineText,     tr::TimelineJson,
    tr::TimelineHtml, tr::TimelineHtmlBody, "Arbiter trace replay (timeline) under a policy file"};

// Replays the trace in one mode and renders its outputs: 0, or the exit code.
template <typename R>
int ReplayTrace(const TraceMode<R>& mode, const Loaded& in, const tr::TraceRunOptions& ro,
                const TraceSimOptions& o, bool progress, tr::TraceReportMeta* meta,
                TraceOutputs* out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = mode.run(in.nodes, in.pods, ro);
  if (progress) std::cerr << "\n";
  if (!r.ok()) {
    std::cerr << "arbiter sim: " << r.message() << "\n";
    return 1;
  }
  meta->seconds = {{SecondsSince(t0)}};
  out->text = mode.text(*r, *meta);
  nlohmann::json j = mode.json(*r, *meta);
  std::string page;
  if (!o.report_html.empty())
    page = r->policy_run ? mode.html_body(*r, *meta) : mode.html(*r, *meta);
  if (int rc =
          PolicyRunOutputs(r->policy_run.get(), o, mode.policy_run_title, &out->text, &j, &page))
    return rc;
  if (!o.report_json.empty()) out->json = j.dump(2) + "\n";
  out->html = std::move(page);
  return 0;
}

// Prints the summary and writes the JSON and HTML reports asked for: 0, or the exit code.
int WriteTraceOutputs(const std::string& report_json, const std::string& report_html,
                      const TraceOutputs& out) {
  std::cout << out.text;
  if (!report_json.empty()) {
    if (!WriteFile(report_json, out.json)) return 1;
    std::cout << "report: " << report_json << "\n";
  }
  if (!report_html.empty()) {
    if (!WriteFile(report_html, out.html)) return 1;
    std::cout << "html report: " << report_html << "\n";
  }
  return 0;
}

}  // namespace

int RunTraceSim(const TraceSimOptions& o) {
  tr::TraceRunOptions ro;
  if (int rc = ParseTraceRunOptions(o, &ro)) return rc;
  ManifestSet policy_file;
  if (!o.policy_file.empty()) {
    if (int rc = LoadPolicyFile(o.policy_file, o.quiet, &policy_file)) return rc;
    ro.policy_file = &policy_file;
    if (!ro.policy && !policy_file.pool_policy) ro.policy = PlacementPolicyName::kBestFit;
  }
  Loaded in;
  if (int rc = Load(o.nodes, o.pods, o.tenants, o.seed, &in)) return rc;
  tr::TraceReportMeta meta = TraceMeta(o.nodes, o.pods, o.mode, ro.target_permille, in);
  const bool progress = Progress(o.quiet);
  if (progress)
    std::cerr << "  replaying " << in.pods.pods.size() << " pods (" << o.mode << ", "
              << (ro.policy ? tr::PolicyKey(*ro.policy)
                            : std::string("the policy file's placement"))
              << ") ..." << std::flush;
  TraceOutputs out;
  if (int rc = o.mode == "saturate" ? ReplayTrace(kSaturate, in, ro, o, progress, &meta, &out)
                                    : ReplayTrace(kTimeline, in, ro, o, progress, &meta, &out))
    return rc;
  return WriteTraceOutputs(o.report_json, o.report_html, out);
}

namespace {

// The --policies list (comma-separated, empty items skipped): 0, or the exit code.
int ParsePolicyList(const std::string& list, std::vector<PlacementPolicyName>* policies) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t c = list.find(',', start);
    std::string name = list.substr(start, c == std::string::npos ? std::string::npos : c - start);
    if (!name.empty()) {
      auto p = tr::ParsePolicyName(name);
      if (!p.ok()) {
        std::cerr << "arbiter sim compare: --policies: " << p.message() << "\n";
        return 2;
      }
      policies->push_back(*p);
    }
    if (c == std::string::npos) break;
    start = c + 1;
  }
  if (policies->empty()) {
    std::cerr << "arbiter sim compare: --policies: no policy given\n";
    return 2;
  }
  return 0;
}

// --mode, --target, --policies and --seeds of `sim compare`: 0, or the exit code.
int ParseCompareFlags(const TraceCompareOptions& o, tr::TraceRunOptions* base,
                      std::vector<PlacementPolicyName>* policies, std::vector<uint64_t>* seeds) {
  if (o.mode != "saturate") {
    std::cerr << "arbiter sim compare: --mode: only saturate is supported, got \"" << o.mode
              << "\"\n";
    return 2;
  }
  if (auto t = tr::ParseTargetPermille(o.target); t.ok()) {
    base->target_permille = *t;
  } else {
    std::cerr << "arbiter sim compare: --target: " << t.message() << "\n";
    return 2;
  }
  if (int rc = ParsePolicyList(o.policies, policies)) return rc;
  auto s = tr::ParseSeeds(o.seeds);
  if (!s.ok()) {
    std::cerr << "arbiter sim compare: --seeds: " << s.message() << "\n";
    return 2;
  }
  *seeds = std::move(s).value();
  return 0;
}

// Saturate runs of every policy on every seed, summarised per policy (and their wall-clock
// seconds in `meta`): 0, or the exit code.
int RunComparison(const Loaded& in, const tr::TraceRunOptions& base,
                  const std::vector<PlacementPolicyName>& policies,
                  const std::vector<uint64_t>& seeds, bool progress, tr::TraceReportMeta* meta,
                  std::vector<tr::PolicySummary>* summaries) {
  const size_t total = policies.size() * seeds.size();
  size_t done = 0;
  for (PlacementPolicyName p : policies) {
    std::vector<tr::SaturateResult> runs;
    std::vector<double> secs;
    for (uint64_t seed : seeds) {
      if (progress)
        std::cerr << "\r  " << tr::PolicyKey(p) << " seed " << seed << " (" << done + 1 << "/"
                  << total << ")      " << std::flush;
      tr::TraceRunOptions ro = base;
      ro.policy = p;
      ro.seed = seed;
      const auto t0 = std::chrono::steady_clock::now();
      auto r = tr::RunSaturate(in.nodes, in.pods, ro);
      secs.push_back(SecondsSince(t0));
      if (!r.ok()) {
        if (progress) std::cerr << "\n";
        std::cerr << "arbiter sim compare: " << r.message() << "\n";
        return 1;
      }
      runs.push_back(std::move(r).value());
      ++done;
    }
    summaries->push_back(tr::SummariseRuns(tr::PolicyKey(p), seeds, std::move(runs)));
    meta->seconds.push_back(std::move(secs));
  }
  if (progress) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
  return 0;
}

}  // namespace

int RunTraceCompare(const TraceCompareOptions& o) {
  tr::TraceRunOptions base;
  std::vector<PlacementPolicyName> policies;
  std::vector<uint64_t> seeds;
  if (int rc = ParseCompareFlags(o, &base, &policies, &seeds)) return rc;
  Loaded in;
  if (int rc = Load(o.nodes, o.pods, o.tenants, seeds.front(), &in)) return rc;
  tr::TraceReportMeta meta = TraceMeta(o.nodes, o.pods, o.mode, base.target_permille, in);
  std::vector<tr::PolicySummary> summaries;
  if (int rc = RunComparison(in, base, policies, seeds, Progress(o.quiet), &meta, &summaries))
    return rc;
  std::cout << tr::ComparisonText(summaries, meta);
  if (!o.report_json.empty()) {
    if (!WriteFile(o.report_json, tr::ComparisonJson(summaries, meta).dump(2) + "\n")) return 1;
    std::cout << "report: " << o.report_json << "\n";
  }
  if (!o.report_html.empty()) {
    if (!WriteFile(o.report_html, tr::ComparisonHtml(summaries, meta))) return 1;
    std::cout << "html report: " << o.report_html << "\n";
  }
  return 0;
}

}  // namespace arbiter::app
