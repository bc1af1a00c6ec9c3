// `arbiter sim --nodes N.csv --pods P.csv ...` (trace replay) and `arbiter sim compare ...`
// (placement policy comparison on a trace, the FGD paper's saturate protocol).
//
// Wiring in cmd_sim.cc (RegisterSim):
//   auto trace = std::make_shared<TraceSimOptions>();
//   AddTraceOptions(cmd, trace.get());     // --nodes --pods --mode --target --tenants ...
//   RegisterSimCompare(cmd, exit_code);    // the `compare` sub-subcommand
//   cmd->callback([=] {
//     if (cmd->got_subcommand("compare")) return;  // compare ran its own callback
//     *exit_code = RunSim(*o, *trace);
//   });
// where RunSim, when IsTraceSim(*trace), copies the shared flags (--policy, --seed,
// --check-invariants, --report-json, --report-html, --quiet) into *trace and calls RunTraceSim;
// else it runs the manifest simulation.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace arbiter::app {

struct TraceSimOptions {
  std::string nodes;              // node list CSV (sn,cpu_milli,memory_mib,gpu,model)
  std::string pods;               // pod list CSV
  std::string mode = "timeline";  // timeline | saturate
  std::string target = "1.3";     // saturate: arrived GPU demand / cluster GPUs ("1.3" or "130%")
  uint64_t seed = 42;             // node order, sampling, Random policy, tenants
  std::string
      policy;  // bestfit (default) | fgd | leastallocated | ...; "": default, or the policy file's
  std::string policy_file;  // --policy-file: PoolPolicy, PriorityClasses, quotas, ... for tenant-K
                            // namespaces
  std::string unschedulable;        // drop | wait ("": drop without a policy file, wait with one)
  int64_t time_limits = 0;          // --time-limits PERCENT (0: none)
  std::string checkpoint_interval;  // --checkpoint-interval DUR ("": none)
  std::string shutdown_time;        // --shutdown-time DUR ("": 0s)
  bool check_invariants = false;
  int32_t tenants = 1;  // pods are spread over this many tenants by a seeded rule
  std::string report_json;
  std::string report_html;
  bool quiet = false;  // no progress output
};

struct TraceCompareOptions {
  std::string nodes;
  std::string pods;
  std::string mode = "saturate";  // only saturate
  std::string target = "1.3";
  std::string policies = "random,dotproduct,packing,bestfit,fgd";
  std::string seeds = "42-51";
  int32_t tenants = 1;
  std::string report_json;
  std::string report_html;
  bool quiet = false;
};

// True when the trace flags were given (dispatch to RunTraceSim).
bool IsTraceSim(const TraceSimOptions& o);
// Adds --nodes, --pods, --mode, --target, --tenants to `sim` (the flags the manifest simulation
// does not have; --policy, --seed, --report-json, --report-html, --quiet are the caller's).
void AddTraceOptions(CLI::App* sim, TraceSimOptions* opts);
// Adds `sim compare` with all of its flags; its callback sets *exit_code.
void RegisterSimCompare(CLI::App* sim, int* exit_code);

// Exit codes: 0 ok, 1 invalid input (unreadable or malformed trace), 2 usage error.
int RunTraceSim(const TraceSimOptions& o);
int RunTraceCompare(const TraceCompareOptions& o);

}  // namespace arbiter::app
