#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include "adapters/io/input_file.h"
#include "adapters/io/output_file.h"
#include "adapters/yaml/manifest_loader.h"
#include "cli_flags.h"
#include "cmd_trace.h"
#include "commands.h"
#include "core/plural.h"
#include "core/policy_names.h"
#include "core/text.h"
#include "ledger_write.h"
#include "sim/billing_bridge.h"
#include "sim/html_report.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter::app {

namespace {

struct SimCli {
  std::vector<std::string> files;
  std::string report_json;
  std::string report_html;
  std::string until;
  std::string start;
  std::string policy;
  std::string ledger;
  std::string save_state;
  std::string resume;
  std::string explain;  // NS/POD (or POD in namespace default)
  int64_t seed = 0;
  bool seed_given = false;
  bool check_invariants = false;
  bool quiet = false;
};

// A simulation allocates gigabytes (manifests, engine state, run records, billing rows) and frees
// most of it only at exit. With glibc's defaults the heap gives memory back to the kernel and
// takes it again (top trimming; blocks over 128 KiB mmapped and unmapped one by one), and every
// page of it comes back as a page fault: much of a million-pod run's system time. For `arbiter
// sim`: blocks up to 32 MiB come from the heap, which is never trimmed and grows 1 GiB of address
// space at a time (untouched address space costs no memory; less under an address-space limit);
// every thread allocates from that one heap. The heap is not advised to use transparent huge
// pages: on the 2-core VM of docs/scheduling.md a fresh 2 MiB page cost 10-25 times what its 512
// small pages cost (1 GiB first touched in 20-34 s against 0.9-2.3 s), and the million-pod run
// took 3.8-7.2 s of system time without the advice against 15.9-17.3 s with it.
void TuneHeap() {
  // One arena: the billing threads' allocations share the main heap instead of each holding an
  // arena of its own (a million-pod run: 2,120,364 KiB peak with two, 2,012,632 with one).
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  // Under an address-space limit (ulimit -v) a 1 GiB step could exceed it on the first
  // allocation, and every allocation would fail: the step is then a sixteenth of the limit.
  size_t pad = size_t{1} << 30;
  if (rlimit as{}; getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    pad = std::min<size_t>(pad, as.rlim_cur / 16);
  mallopt(M_TOP_PAD, static_cast<int>(pad));
}

// The JSON report, written on its own thread while the run is billed: the writer does the keys
// before the invoices (the events above all) meanwhile, then waits for the bill (Give). On a
// machine with two cores the report and the billing share them instead of following each other.
class BackgroundReport {
 public:
  BackgroundReport() = default;
  BackgroundReport(const BackgroundReport&) = delete;
  BackgroundReport& operator=(const BackgroundReport&) = delete;
  ~BackgroundReport() { Finish(); }

  // Opens `path` (through a 1 MiB buffer, the file dropped from the page cache as it is written:
  // io::DroppingFileBuf) and starts the writer; false when the file cannot be opened.
  bool Start(const std::string& path, const ManifestSet& m, const driver::SimResult& r,
             const sim::Summary& s) {
    if (!file_.Open(path)) return false;
    bill_ = promise_.get_future();
    writer_ = std::thread([this, &m, &r, &s] {
      complete_ = sim::WriteReportJson(out_, m, r, s, [this] { return bill_.get(); });
      out_.flush();
    });
    return true;
  }
  // The bill for the invoices; nullptr when billing failed (the writer stops there).
  void Give(const sim::SimBill* bill) {
    if (given_) return;
    given_ = true;
    promise_.set_value(bill);
  }
  // Waits for the writer: true when the whole report was written.
  bool Finish() {
    Give(nullptr);
    if (writer_.joinable()) writer_.join();
    const bool written = out_.good();
    return file_.Close() && complete_ && written;
  }

 private:
  io::DroppingFileBuf file_;
  std::ostream out_{&file_};
  std::promise<const sim::SimBill*> promise_;
  std::future<const sim::SimBill*> bill_;
  std::thread writer_;
  bool given_ = false;
  bool complete_ = false;
};

// What a finished run leaves behind (the engine, the manifests, the results, the bill), handed to
// the process exit instead of freed: a million-pod run's millions of allocations freed one by one
// took about 2 s of the main thread after the report was written. Kept reachable from a static
// (no leak for LeakSanitizer); `arbiter sim` runs once a process.
struct LeftToExit {
  std::unique_ptr<sim::Simulation> simulation;
  std::optional<driver::SimResult> result;
  std::optional<Result<sim::SimBill>> billed;
};
void LeaveToExit(LeftToExit left) {
  static LeftToExit* kept = nullptr;
  if (kept == nullptr) kept = new LeftToExit;
  *kept = std::move(left);  // a second run in one process frees the first one's here
}

// Why `path` cannot be written (without creating or changing anything), or nothing; "" is fine.
std::optional<std::string> UnwritablePath(const std::string& path) {
  if (path.empty()) return std::nullopt;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return "is a directory";
  if (fs::exists(p, ec)) {
    if (access(path.c_str(), W_OK) != 0) return "not writable";
    return std::nullopt;
  }
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec)) return "directory " + dir.string() + " does not exist";
  if (access(dir.c_str(), W_OK) != 0) return "directory " + dir.string() + " is not writable";
  return std::nullopt;
}

// Writes `bytes` to `path` whole or not at all (a temporary file next to it, then a rename).
bool WriteAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

// The flags that go together or not at all, and standard input read once: 0, or the exit code.
int CheckSimInputs(const SimCli& o) {
  const bool resume = !o.resume.empty();
  if (resume && !o.files.empty()) {
    std::cerr << "arbiter sim: give either manifests (-f) or a saved state (--resume), not both: a "
                 "saved state "
                 "holds its manifests\n";
    return 2;
  }
  if (!resume && o.files.empty()) {
    std::cerr << "arbiter sim: give manifests with -f FILE (or a trace with --nodes and --pods, or "
                 "a saved state "
                 "with --resume FILE)\n";
    return 2;
  }
  if (resume && o.seed_given) {
    std::cerr << "arbiter sim: --seed: a resumed run keeps the seed it was started with\n";
    return 2;
  }
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& f : o.files) inputs.push_back({"-f", f});
  return StdinOnce("arbiter sim", inputs);
}

// The output paths, checked before a simulation that may take minutes, not after it: 0, or the
// exit code.
int CheckSimOutputs(const SimCli& o) {
  for (const auto& [flag, path] :
       {std::pair<const char*, const std::string&>{"--report-json", o.report_json},
        {"--report-html", o.report_html},
        {"--ledger", o.ledger},
        {"--save-state", o.save_state}}) {
    if (auto why = UnwritablePath(path)) {
      std::cerr << "arbiter sim: " << flag << ": " << path << ": " << *why << "\n";
      return 2;
    }
  }
  // A ledger is a database file: /dev/null or a FIFO would swallow the bill and report success.
  if (!o.ledger.empty() && std::filesystem::exists(o.ledger))
    if (std::string why = io::WhyNotReadable(o.ledger); !why.empty() || o.ledger == "-")
      return FlagError("arbiter sim", "--ledger",
                       o.ledger + ": " + (why.empty() ? "a ledger is a file" : why));
  return 0;
}

// --start, --until, --policy and the run's other options: 0, or the exit code.
int ParseSimOptions(const SimCli& o, std::optional<Millis>* start, sim::SimOptions* so) {
  if (!o.start.empty()) {
    auto t = ParseRfc3339(o.start);
    if (!t.ok()) {
      std::cerr << "arbiter sim: --start: " << t.message() << "\n";
      return 2;
    }
    *start = *t;
  }
  so->seed = static_cast<uint64_t>(o.seed);
  so->check_invariants = o.check_invariants;
  if (!o.until.empty()) {
    auto u = ParseDuration(o.until);
    if (!u.ok()) {
      std::cerr << "arbiter sim: --until: " << u.message() << "\n";
      return 2;
    }
    if (*u < 0) {
      std::cerr << "arbiter sim: --until: must not be negative, got " << o.until << "\n";
      return 2;
    }
    so->until = *u;
  }
  if (!o.policy.empty()) {
    auto p = ParsePlacementPolicy(o.policy);
    if (!p.ok()) {
      std::cerr << "arbiter sim: --policy: " << p.message() << "\n";
      return 2;
    }
    so->placement = *p;
  }
  return 0;
}

// Loads the -f manifests and prints their diagnostics: 0, or the exit code.
int LoadSimManifests(const SimCli& o, std::optional<yaml::ManifestLoad>* out) {
  auto& load = out->emplace(yaml::LoadManifestFiles(o.files));
  load.diagnostics.Sort();
  for (const auto& d : load.diagnostics.items)
    if (d.severity == Severity::kError || !o.quiet) std::cerr << d.ToString() << "\n";
  if (!load.ok()) {
    std::cerr << "arbiter sim: " << Plural(load.diagnostics.ErrorCount(), "error")
              << " in the manifests; nothing was simulated (run `arbiter validate` for details)\n";
    return 1;
  }
  load.ReleaseSources();  // every message is out: the manifest text is not needed any more
  if (!o.ledger.empty() && load.set.price_books.empty()) {
    std::cerr
        << "arbiter sim: --ledger: the manifests have no PriceBook, so there is nothing to bill "
           "into the ledger\n";
    return 1;
  }
  return 0;
}

// The --explain key: NS/POD, or POD in namespace default ("" without --explain).
std::string ExplainKey(const SimCli& o) {
  if (o.explain.empty()) return "";
  return o.explain.find('/') == std::string::npos ? "default/" + o.explain : o.explain;
}

// Continues the run saved in --resume: 0, or the exit code.
int ResumeSimulation(const SimCli& o, const sim::SimOptions& so,
                     std::unique_ptr<sim::Simulation>* out) {
  // A state file is binary (not text: no ReadInputFile), but still a regular file: a FIFO or a
  // device is refused without being opened.
  if (std::string why = io::WhyNotReadable(o.resume); !why.empty() || o.resume == "-") {
    std::cerr << "arbiter sim: --resume: " << o.resume << ": cannot read the file: "
              << (why.empty() ? "a saved state is a file, not standard input" : why) << "\n";
    return 1;
  }
  std::ifstream f(o.resume, std::ios::binary);
  std::stringstream bytes;
  bytes << f.rdbuf();
  if (!f) {
    std::cerr << "arbiter sim: --resume " << o.resume << ": cannot read the file\n";
    return 1;
  }
  auto r = sim::Simulation::Resume(bytes.str(), so);
  if (!r.ok()) {
    std::cerr << "arbiter sim: --resume " << o.resume << ": " << r.message() << "\n";
    return 1;
  }
  *out = std::move(r).value();
  if (!o.ledger.empty() && (*out)->manifests().price_books.empty()) {
    std::cerr << "arbiter sim: --ledger: the saved run has no PriceBook, so there is nothing to "
                 "bill into the "
                 "ledger\n";
    return 1;
  }
  return 0;
}

// Starts a simulation of the loaded manifests (it owns them from here: the Pods wait encoded,
// given back once submitted): 0, or the exit code.
int CreateSimulation(const sim::SimOptions& so, const std::string& explain_key,
                     yaml::ManifestLoad* load, std::unique_ptr<sim::Simulation>* out) {
  if (!explain_key.empty()) {
    // Named in the manifests? Checked before a simulation that may take minutes. (A saved run
    // keeps only the Pods still to come: it is checked against the run's workloads at the end.)
    std::vector<std::string> keys;
    for (const auto& p : load->set.pods) keys.push_back(p.meta.namespace_ + "/" + p.meta.name);
    if (std::find(keys.begin(), keys.end(), explain_key) == keys.end()) {
      std::string msg = "--explain: no Pod " + QuotedEcho(explain_key) + " in the manifests" +
                        DidYouMeanText(explain_key, keys);
      if (keys.empty()) msg += " (they have no Pods)";
      return InputError("arbiter sim", msg);
    }
  }
  auto r = sim::Simulation::Create(std::move(load->set), so);
  if (!r.ok()) {
    std::cerr << "arbiter sim: " << r.message() << "\n";
    return 1;
  }
  *out = std::move(r).value();
  return 0;
}

// Runs the simulation to --until (or the end) and saves it with --save-state: 0, or the exit
// code.
int RunAndSave(const SimCli& o, const sim::SimOptions& so, sim::Simulation& simulation) {
  Status ran = simulation.Run(so.until);
  if (so.progress) std::cerr << "\n";
  if (!ran.ok()) {
    std::cerr << "arbiter sim: " << ran.message() << "\n";
    return 1;
  }
  if (o.save_state.empty()) return 0;
  if (!WriteAtomically(o.save_state, simulation.Save())) {
    std::cerr << "arbiter sim: --save-state: cannot write " << o.save_state << "\n";
    return 1;
  }
  std::cout << "state: " << o.save_state << " (paused at virtual time "
            << FormatDuration(simulation.clock()) << ", " << simulation.submitted() << "/"
            << simulation.total_pods() << " pods submitted; continue with: arbiter sim --resume "
            << o.save_state << ")\n";
  return 0;
}

// After the summary, the --explain timeline of one workload: 0, or the exit code.
int PrintExplanation(const driver::SimResult& result, const std::string& explain_key,
                     bool resumed) {
  if (explain_key.empty()) return 0;
  if (auto id = sim::FindWorkload(result, explain_key))
    std::cout << "\n" << sim::ExplainWorkload(result, *id) << "\n";
  else if (resumed)
    return InputError("arbiter sim",
                      "--explain: no Pod " + QuotedEcho(explain_key) + " in the saved run");
  return 0;
}

// Writes the run's hourly billing rows to --ledger: 0, or the exit code.
int WriteSimLedger(const SimCli& o, const ManifestSet& manifests, const sim::SimBill& bill) {
  auto catalog = billing::PriceCatalog::Create(manifests.price_books);
  if (!catalog.ok()) {
    std::cerr << "arbiter sim: " << catalog.message() << "\n";
    return 1;
  }
  std::cout << "ledger: " << o.ledger << ": ";
  std::cout.flush();
  if (int rc = WriteLedgerFile(o.ledger, bill.rows, *catalog, std::nullopt, "arbiter sim: --ledger",
                               std::cout, std::cerr);
      rc != 0) {
    std::cout << "not written\n";
    return rc;
  }
  return 0;
}

// Writes --report-html (built whole in memory): 0, or the exit code.
int WriteHtmlReport(const SimCli& o, const ManifestSet& manifests, const driver::SimResult& result,
                    const sim::Summary& summary, const sim::SimBill& bill) {
  constexpr size_t kLargeForHtml = 100000;
  if (result.workloads().size() > kLargeForHtml && !o.quiet)
    std::cerr << "arbiter sim: note: --report-html builds the whole report in memory (about 15 "
                 "KB per workload, "
              << result.workloads().size() << " workloads); --report-json streams it\n";
  std::ofstream f(o.report_html);
  f << sim::SimulationHtml(sim::ReportJson(manifests, result, summary, sim::BillJson(bill)));
  f.flush();
  if (!f) {
    std::cerr << "arbiter sim: cannot write " << o.report_html << "\n";
    return 1;
  }
  std::cout << "report: " << o.report_html << "\n";
  return 0;
}

// Bills the finished run and writes what was asked: the bill, --report-json (on its own thread
// while the run is billed), --ledger, --report-html. What the run leaves behind goes to the
// process exit. 0, or the exit code.
int BillAndReport(const SimCli& o, Millis epoch, std::unique_ptr<sim::Simulation>& simulation,
                  std::optional<driver::SimResult>& result, const sim::Summary& summary) {
  const ManifestSet& manifests = simulation->manifests();
  std::optional<Result<sim::SimBill>> billed;  // declared first: outlives the report's writer
  BackgroundReport report;
  if (!o.report_json.empty() && !report.Start(o.report_json, manifests, *result, summary)) {
    std::cerr << "arbiter sim: cannot write " << o.report_json << "\n";
    return 1;
  }
  // Without --ledger the namespaces are billed on two threads (the invoices do not depend on it).
  const int bill_threads = std::thread::hardware_concurrency() > 1 ? 2 : 1;
  auto& bill = billed.emplace(sim::BillSimulation(manifests, *result, epoch,
                                                  /*keep_rows=*/!o.ledger.empty(), bill_threads));
  if (!bill.ok()) {
    report.Finish();  // stops at the invoices: a partial report file goes
    if (std::error_code ec; std::filesystem::is_regular_file(o.report_json, ec))
      std::remove(o.report_json.c_str());
    std::cerr << "arbiter sim: " << bill.message() << "\n";
    return 1;
  }
  report.Give(&bill.value());  // the writer reads the invoices; the rows stay this thread's
  std::cout << sim::BillText(*bill, !manifests.price_books.empty());
  if (!o.ledger.empty())
    if (int rc = WriteSimLedger(o, manifests, *bill); rc != 0) return rc;
  bill.value().rows = {};  // written to the ledger if asked; the invoices are built
  if (!o.report_json.empty()) {
    if (!report.Finish()) {
      std::cerr << "arbiter sim: cannot write " << o.report_json << "\n";
      return 1;
    }
    std::cout << "report: " << o.report_json << "\n";
  }
  if (!o.report_html.empty())
    if (int rc = WriteHtmlReport(o, manifests, *result, summary, *bill); rc != 0) return rc;
  LeaveToExit({std::move(simulation), std::move(result), std::move(billed)});
  return 0;
}

int RunManifestSim(const SimCli& o) {
  TuneHeap();
  const bool resume = !o.resume.empty();
  // Flags first (a usage error reads nothing), and output paths before a simulation that may take
  // minutes, not after it.
  if (int rc = CheckSimInputs(o); rc != kExitOk) return rc;
  if (int rc = CheckSimOutputs(o); rc != kExitOk) return rc;
  std::optional<Millis> start;
  sim::SimOptions so;
  if (int rc = ParseSimOptions(o, &start, &so); rc != kExitOk) return rc;
  std::optional<yaml::ManifestLoad> load;
  if (!resume)
    if (int rc = LoadSimManifests(o, &load); rc != kExitOk) return rc;
  if (isatty(STDERR_FILENO) && !o.quiet)
    so.progress = [](Millis now, size_t submitted, size_t total) {
      std::cerr << "\r  virtual time " << FormatDuration(now) << ", " << submitted << "/" << total
                << " submitted   " << std::flush;
    };
  const std::string explain_key = ExplainKey(o);
  std::unique_ptr<sim::Simulation> simulation;
  if (int rc = resume ? ResumeSimulation(o, so, &simulation)
                      : CreateSimulation(so, explain_key, &*load, &simulation);
      rc != kExitOk)
    return rc;
  if (int rc = RunAndSave(o, so, *simulation); rc != kExitOk) return rc;
  const ManifestSet& manifests = simulation->manifests();  // its pods go as they are submitted
  const Millis end = so.until ? *so.until : simulation->now();
  auto result = std::make_optional(simulation->Finish(end));
  auto summary = sim::Summarise(manifests, *result);
  std::cout << sim::TextSummary(manifests, *result, summary);
  if (int rc = PrintExplanation(*result, explain_key, resume); rc != kExitOk) return rc;
  Millis epoch = start.value_or(sim::DefaultEpoch(manifests));
  return BillAndReport(o, epoch, simulation, result, summary);
}

// `arbiter sim` without `compare`: a trace replay when the trace flags are given (with the flags
// it shares with the manifest simulation), else the manifest simulation.
int RunSim(const SimCli& o, TraceSimOptions& trace) {
  if (o.seed < 0) {
    std::cerr << "arbiter sim: --seed: must be a non-negative integer, got " << o.seed
              << " (seeds are unsigned)\n";
    return 2;
  }
  if (!IsTraceSim(trace)) return RunManifestSim(o);
  if (!o.save_state.empty() || !o.resume.empty()) {
    std::cerr << "arbiter sim: --save-state and --resume work with manifests (-f), not with a "
                 "trace\n";
    return 2;
  }
  if (!o.files.empty()) {
    std::cerr << "arbiter sim: give either manifests (-f) or a trace (--nodes/--pods), not both\n";
    return 2;
  }
  if (!o.explain.empty()) {
    std::cerr << "arbiter sim: --explain: works on manifests (-f), not on a trace replay\n";
    return 2;
  }
  if (!o.policy.empty()) trace.policy = o.policy;
  if (o.seed_given) trace.seed = static_cast<uint64_t>(o.seed);
  trace.check_invariants = o.check_invariants;
  trace.report_json = o.report_json;
  trace.report_html = o.report_html;
  trace.quiet = o.quiet;
  return RunTraceSim(trace);
}

}  // namespace

void RegisterSim(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "sim",
      "Simulate workloads on a pool under a virtual clock.\n"
      "  arbiter sim -f pool.yaml ...            manifests: Pods arrive at arbiter.dev/submit-time "
      "and run\n"
      "                                          for arbiter.dev/duration (see docs/manifests.md)\n"
      "  arbiter sim --nodes N.csv --pods P.csv  replay an Alibaba GPU trace (see "
      "docs/simulator.md)\n"
      "  arbiter sim compare ...                 compare placement policies on a trace\n"
      "  arbiter sim -f pool.yaml --until 2h --save-state s.bin   pause; arbiter sim --resume "
      "s.bin continues\n"
      "The summary goes to stdout, the full report to --report-json / --report-html.");
  cmd->footer(
      "Inputs: regular files or - for standard input (once): manifests (-f) at most 512 MiB each, "
      "trace CSVs\n"
      "(--nodes, --pods) at most 1 GiB; trace numbers at most 10^9 millicores, 2^30 MiB, 10^10 s.\n"
      "Exit status: 0 ok, 1 invalid input (unreadable or malformed input), 2 usage error (a bad "
      "flag value).");
  auto o = std::make_shared<SimCli>();
  cmd->add_option("-f,--file", o->files,
                  "Manifest file (multi-document YAML; - for standard input); repeatable");
  cmd->add_option("--report-json", o->report_json, "Write the SimulationReport JSON here");
  cmd->add_option("--report-html", o->report_html, "Write a self-contained HTML report here");
  cmd->add_option("--until", o->until,
                  "Stop the virtual clock at this time (e.g. 2h); default: when idle");
  cmd->add_option(
      "--start", o->start,
      "Wall-clock instant of virtual time 0, for billing (RFC 3339); default: the earliest "
      "PriceBook effectiveFrom");
  cmd->add_option("--policy", o->policy,
                  "Override the placement policy (bestfit, leastallocated, fgd, ...)");
  cmd->add_option(
      "--ledger", o->ledger,
      "Write the run's hourly billing rows (tenants and idle capacity) to this SQLite ledger "
      "(created if missing; idempotent); `arbiter invoice --db PATH --from/--to` with the "
      "printed window reproduces the invoices");
  cmd->add_option(
      "--save-state", o->save_state,
      "After the run (with --until: when the clock stops there), save the whole simulation to this "
      "file; `arbiter sim --resume FILE` continues it");
  cmd->add_option("--resume", o->resume,
                  "Continue a simulation saved with --save-state (instead of -f); with --policy "
                  "the rest of the run "
                  "uses that placement policy (a branch)");
  auto* seed_opt = cmd->add_option("--seed", o->seed,
                                   "Seed for seeded policies (Random); trace mode: default 42");
  cmd->add_option(
      "--explain", o->explain,
      "After the summary, print the timeline of reasons of one workload: NAMESPACE/POD (or POD in "
      "namespace default): when it was submitted, why it waited, where it ran, who preempted it");
  cmd->add_flag("--check-invariants", o->check_invariants,
                "Check the engine's invariants after every step");
  cmd->add_flag("-q,--quiet", o->quiet, "No warnings or progress output");
  auto trace = std::make_shared<TraceSimOptions>();
  AddTraceOptions(cmd, trace.get());
  RegisterSimCompare(cmd, exit_code);
  cmd->callback([cmd, o, trace, seed_opt, exit_code] {
    if (cmd->got_subcommand("compare")) return;  // ran its own callback
    o->seed_given = seed_opt->count() > 0;
    *exit_code = RunSim(*o, *trace);
  });
}

}  // namespace arbiter::app
