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

int RunTraceSim(const TraceSimOptions& o) {
  tr::TraceRunOptions ro;
  ro.policy.reset();  // the PoolPolicy of a policy file decides, unless --policy does
  if (!o.policy.empty() || o.policy_file.empty()) {
    auto policy = tr::ParsePolicyName(o.policy.empty() ? "bestfit" : o.policy);
    if (!policy.ok()) {
      std::cerr << "arbiter sim: --policy: " << policy.message() << "\n";
      return 2;
    }
    ro.policy = *policy;
  }
  if (o.unschedulable == "drop") {
    ro.unschedulable = tr::TraceRunOptions::Unschedulable::kDrop;
  } else if (o.unschedulable == "wait") {
    ro.unschedulable = tr::TraceRunOptions::Unschedulable::kWait;
  } else if (!o.unschedulable.empty()) {
    std::cerr << "arbiter sim: --unschedulable: expected drop or wait, got \"" << o.unschedulable
              << "\"\n";
    return 2;
  }
  if (o.time_limits < 0 || o.time_limits > 100000) {
    std::cerr << "arbiter sim: --time-limits: expected a percentage from 1 to 100000, got "
              << o.time_limits << "\n";
    return 2;
  }
  ro.time_limit_percent = o.time_limits;
  for (auto [flag, text, out] :
       {std::tuple{"--checkpoint-interval", &o.checkpoint_interval, &ro.checkpoint_interval},
        std::tuple{"--shutdown-time", &o.shutdown_time, &ro.checkpoint_shutdown}}) {
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
  if (ro.checkpoint_shutdown > 0 && ro.checkpoint_interval == 0) {
    std::cerr << "arbiter sim: --shutdown-time needs --checkpoint-interval (it is the time a "
                 "checkpointing pod takes to save)\n";
    return 2;
  }
  ro.check_invariants = o.check_invariants;
  ro.seed = o.seed;
  if (auto t = tr::ParseTargetPermille(o.target); t.ok()) {
    ro.target_permille = *t;
  } else {
    std::cerr << "arbiter sim: --target: " << t.message() << "\n";
    return 2;
  }
  if (o.mode != "timeline" && o.mode != "saturate") {
    std::cerr << "arbiter sim: --mode: expected timeline or saturate, got \"" << o.mode << "\"\n";
    return 2;
  }
  ManifestSet policy_file;
  if (!o.policy_file.empty()) {
    if (int rc = LoadPolicyFile(o.policy_file, o.quiet, &policy_file)) return rc;
    ro.policy_file = &policy_file;
    if (!ro.policy && !policy_file.pool_policy) ro.policy = PlacementPolicyName::kBestFit;
  }
  Loaded in;
  if (int rc = Load(o.nodes, o.pods, o.tenants, o.seed, &in)) return rc;
  tr::TraceReportMeta meta;
  meta.nodes_path = o.nodes;
  meta.pods_path = o.pods;
  meta.mode = o.mode;
  meta.target_permille = ro.target_permille;
  meta.node_count = static_cast<int64_t>(in.nodes.size());
  meta.pod_count = static_cast<int64_t>(in.pods.pods.size());
  const bool progress = Progress(o.quiet);
  if (progress)
    std::cerr << "  replaying " << in.pods.pods.size() << " pods (" << o.mode << ", "
              << (ro.policy ? tr::PolicyKey(*ro.policy)
                            : std::string("the policy file's placement"))
              << ") ..." << std::flush;
  const auto t0 = std::chrono::steady_clock::now();
  std::string text, json, html;
  if (o.mode == "saturate") {
    auto r = tr::RunSaturate(in.nodes, in.pods, ro);
    if (progress) std::cerr << "\n";
    if (!r.ok()) {
      std::cerr << "arbiter sim: " << r.message() << "\n";
      return 1;
    }
    meta.seconds = {{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    text = tr::SaturateText(*r, meta);
    nlohmann::json j = tr::SaturateJson(*r, meta);
    std::string page;
    if (!o.report_html.empty())
      page = r->policy_run ? tr::SaturateHtmlBody(*r, meta) : tr::SaturateHtml(*r, meta);
    if (int rc =
            PolicyRunOutputs(r->policy_run.get(), o,
                             "Arbiter trace run (saturate) under a policy file", &text, &j, &page))
      return rc;
    if (!o.report_json.empty()) json = j.dump(2) + "\n";
    html = std::move(page);
  } else {
    auto r = tr::RunTimeline(in.nodes, in.pods, ro);
    if (progress) std::cerr << "\n";
    if (!r.ok()) {
      std::cerr << "arbiter sim: " << r.message() << "\n";
      return 1;
    }
    meta.seconds = {{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    text = tr::TimelineText(*r, meta);
    nlohmann::json j = tr::TimelineJson(*r, meta);
    std::string page;
    if (!o.report_html.empty())
      page = r->policy_run ? tr::TimelineHtmlBody(*r, meta) : tr::TimelineHtml(*r, meta);
    if (int rc = PolicyRunOutputs(r->policy_run.get(), o,
                                  "Arbiter trace replay (timeline) under a policy file", &text, &j,
                                  &page))
      return rc;
    if (!o.report_json.empty()) json = j.dump(2) + "\n";
    html = std::move(page);
  }
  std::cout << text;
  if (!o.report_json.empty()) {
    if (!WriteFile(o.report_json, json)) return 1;
    std::cout << "report: " << o.report_json << "\n";
  }
  if (!o.report_html.empty()) {
    if (!WriteFile(o.report_html, html)) return 1;
    std::cout << "html report: " << o.report_html << "\n";
  }
  return 0;
}

int RunTraceCompare(const TraceCompareOptions& o) {
  if (o.mode != "saturate") {
    std::cerr << "arbiter sim compare: --mode: only saturate is supported, got \"" << o.mode
              << "\"\n";
    return 2;
  }
  tr::TraceRunOptions base;
  if (auto t = tr::ParseTargetPermille(o.target); t.ok()) {
    base.target_permille = *t;
  } else {
    std::cerr << "arbiter sim compare: --target: " << t.message() << "\n";
    return 2;
  }
  std::vector<PlacementPolicyName> policies;
  std::vector<std::string> names;
  {
    size_t start = 0;
    while (start <= o.policies.size()) {
      size_t c = o.policies.find(',', start);
      std::string name =
          o.policies.substr(start, c == std::string::npos ? std::string::npos : c - start);
      if (!name.empty()) {
        auto p = tr::ParsePolicyName(name);
        if (!p.ok()) {
          std::cerr << "arbiter sim compare: --policies: " << p.message() << "\n";
          return 2;
        }
        policies.push_back(*p);
      }
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  if (policies.empty()) {
    std::cerr << "arbiter sim compare: --policies: no policy given\n";
    return 2;
  }
  auto seeds = tr::ParseSeeds(o.seeds);
  if (!seeds.ok()) {
    std::cerr << "arbiter sim compare: --seeds: " << seeds.message() << "\n";
    return 2;
  }
  Loaded in;
  if (int rc = Load(o.nodes, o.pods, o.tenants, seeds->front(), &in)) return rc;
  const bool progress = Progress(o.quiet);
  tr::TraceReportMeta meta;
  meta.nodes_path = o.nodes;
  meta.pods_path = o.pods;
  meta.mode = o.mode;
  meta.target_permille = base.target_permille;
  meta.node_count = static_cast<int64_t>(in.nodes.size());
  meta.pod_count = static_cast<int64_t>(in.pods.pods.size());
  std::vector<tr::PolicySummary> summaries;
  const size_t total = policies.size() * seeds->size();
  size_t done = 0;
  for (PlacementPolicyName p : policies) {
    std::vector<tr::SaturateResult> runs;
    std::vector<double> secs;
    for (uint64_t seed : *seeds) {
      if (progress)
        std::cerr << "\r  " << tr::PolicyKey(p) << " seed " << seed << " (" << done + 1 << "/"
                  << total << ")      " << std::flush;
      tr::TraceRunOptions ro = base;
      ro.policy = p;
      ro.seed = seed;
      const auto t0 = std::chrono::steady_clock::now();
      auto r = tr::RunSaturate(in.nodes, in.pods, ro);
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!r.ok()) {
        if (progress) std::cerr << "\n";
        std::cerr << "arbiter sim compare: " << r.message() << "\n";
        return 1;
      }
      runs.push_back(std::move(r).value());
      ++done;
    }
    summaries.push_back(tr::SummariseRuns(tr::PolicyKey(p), *seeds, std::move(runs)));
    meta.seconds.push_back(std::move(secs));
  }
  if (progress) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
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
