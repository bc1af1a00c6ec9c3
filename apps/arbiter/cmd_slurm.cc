// `arbiter slurm export|import|compare`: one policy on Slurm, sacct into the ledger, and a
// side-by-side comparison of a real Slurm run with `arbiter sim`. See docs/slurm.md.
// Exit 0 success, 1 invalid input (or differences, for compare), 2 usage error.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "adapters/slurm/conformance.h"
#include "adapters/slurm/name_map.h"
#include "adapters/slurm/policy_export.h"
#include "adapters/slurm/sacct_import.h"
#include "adapters/slurm/sacct_parser.h"
#include "adapters/slurm/sacct_runner.h"
#include "adapters/slurm/slurm_names.h"
#include "adapters/yaml/manifest_loader.h"
#include "commands.h"
#include "core/plural.h"
#include "ledger_write.h"

namespace arbiter::app {

namespace {

namespace fs = std::filesystem;

bool Readable(const std::string& path, const char* who) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || !std::ifstream(path)) {
    std::cerr << who << ": cannot read " << path << ": "
              << (fs::exists(path, ec) ? "not a readable file" : "no such file") << "\n";
    return false;
  }
  return true;
}

// Loads manifests; prints their diagnostics (errors always, warnings unless quiet). nullopt on
// errors.
std::optional<yaml::ManifestLoad> LoadPolicy(const std::vector<std::string>& files, const char* who,
                                             bool quiet) {
  for (const auto& f : files)
    if (!Readable(f, who)) return std::nullopt;
  yaml::ManifestLoad load = yaml::LoadManifestFiles(files);
  load.diagnostics.Sort();
  for (const auto& d : load.diagnostics.items)
    if (d.severity == Severity::kError || !quiet) std::cerr << d.ToString() << "\n";
  if (!load.ok()) {
    std::cerr << who << ": " << Plural(load.diagnostics.ErrorCount(), "error")
              << " in the manifests (run `arbiter validate` for details)\n";
    return std::nullopt;
  }
  return load;
}

// The name map: --account-map, plus every namespace / GPU model of the policy.
std::optional<slurm::NameMap> BuildNames(const std::string& map_file, const ManifestSet* set,
                                         const char* who) {
  slurm::NameMap names;
  if (!map_file.empty()) {
    auto m = slurm::NameMap::Load(map_file);
    if (!m.ok()) {
      std::cerr << who << ": --account-map: " << m.message() << "\n";
      return std::nullopt;
    }
    names = std::move(*m);
  }
  if (set) {
    std::set<std::string> nss;
    for (const auto& n : set->namespaces) nss.insert(n.meta.name);
    for (const auto& q : set->resource_quotas) nss.insert(q.meta.namespace_);
    for (const auto& q : set->elastic_quotas) nss.insert(q.meta.namespace_);
    for (const auto& l : set->limit_ranges) nss.insert(l.meta.namespace_);
    for (const auto& p : set->pods) nss.insert(p.meta.namespace_);
    for (const auto& ns : nss)
      if (Status s = names.AddNamespace(ns); !s.ok()) {
        std::cerr << who << ": " << s.message() << "\n";
        return std::nullopt;
      }
    std::set<std::string> products, migs;
    for (const auto& n : set->nodes) {
      auto it = n.meta.labels.find("nvidia.com/gpu.product");
      if (it != n.meta.labels.end()) products.insert(it->second);
      for (const auto& [r, v] : n.capacity.entries())
        if (IsMigResourceName(r)) migs.insert(r);
    }
    for (const auto& b : set->price_books) {
      for (const auto& [p, v] : b.gpu_models) products.insert(p);
      for (const auto& [r, v] : b.prices)
        if (IsMigResourceName(r)) migs.insert(r);
    }
    for (const auto& p : products)
      if (Status s = names.AddGpuProduct(p); !s.ok()) {
        std::cerr << who << ": " << s.message() << "\n";
        return std::nullopt;
      }
    for (const auto& r : migs)
      if (Status s = names.AddMigResource(r); !s.ok()) {
        std::cerr << who << ": " << s.message() << "\n";
        return std::nullopt;
      }
  }
  return names;
}

// RFC 3339, or Unix seconds.
std::optional<Millis> ParseInstant(const std::string& text, const char* flag, const char* who) {
  if (!text.empty() &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      text.size() <= 12)
    return std::stoll(text) * 1000;
  auto t = ParseRfc3339(text);
  if (!t.ok()) {
    std::cerr << who << ": " << flag << ": " << t.message()
              << " (RFC 3339, e.g. 2026-01-01T00:00:00Z, or Unix seconds)\n";
    return std::nullopt;
  }
  return *t;
}

Millis NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<std::vector<slurm::SacctRun>> ReadSacctFile(const std::string& path,
                                                          Millis utc_offset, const char* who) {
  if (!Readable(path, who)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  slurm::SacctParseOptions po;
  po.utc_offset_ms = utc_offset;
  auto runs = slurm::ParseSacct(in, path, po);
  if (!runs.ok()) {
    std::cerr << who << ": " << runs.message() << "\n";
    return std::nullopt;
  }
  return std::move(runs).value();
}

// ------------------------------------------------------------------ export

struct ExportCli {
  std::vector<std::string> files, users;
  std::string cluster, out_dir, account_map, price_at;
  bool strict = false;
};

// --cluster and --user: Slurm names, checked before anything is exported: 0, or the exit code.
int CheckExportNames(const ExportCli& o, const char* who) {
  if (!o.cluster.empty() && !slurm::IsValidSlurmName(o.cluster)) {
    std::cerr << who << ": --cluster " << o.cluster
              << ": not a valid Slurm name (lowercase letters, digits, '_', '-'; at most 64)\n";
    return 2;
  }
  for (const auto& u : o.users)
    if (u.empty() || u.find_first_of(" ,=|'\"\\$`") != std::string::npos) {
      std::cerr << who << ": --user " << u << ": not a plain user name\n";
      return 2;
    }
  return 0;
}

// The export options of the flags (the PriceBook version: at --price-at, else now): 0, or the
// exit code.
int ExportOptionsOf(const ExportCli& o, const char* who, slurm::ExportOptions* opts) {
  opts->cluster = o.cluster;
  opts->users = o.users;
  opts->source_label = o.files.size() == 1
                           ? o.files[0]
                           : o.files[0] + " (+" + std::to_string(o.files.size() - 1) + ")";
  if (o.price_at.empty()) {
    opts->price_at = NowMs();
    return 0;
  }
  auto t = ParseInstant(o.price_at, "--price-at", who);
  if (!t) return 1;
  opts->price_at = *t;
  return 0;
}

// Writes sacctmgr.sh (executable) and slurm-policy.conf into -o DIR and says so on stderr: 0, or
// the exit code.
int WriteExportDir(const ExportCli& o, const slurm::ExportResult& r, const char* who) {
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec || !fs::is_directory(o.out_dir)) {
    std::cerr << who << ": -o " << o.out_dir << ": cannot create the directory\n";
    return 1;
  }
  const fs::path script = fs::path(o.out_dir) / "sacctmgr.sh",
                 conf = fs::path(o.out_dir) / "slurm-policy.conf";
  for (const auto& [path, text] :
       {std::pair<fs::path, const std::string&>{script, r.sacctmgr_script}, {conf, r.slurm_conf}}) {
    std::ofstream f(path);
    f << text;
    f.close();
    if (!f) {
      std::cerr << who << ": cannot write " << path.string() << "\n";
      return 1;
    }
  }
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add, ec);
  std::cerr << who << ": " << Plural(r.qos_count, "QoS", "QoS") << ", "
            << Plural(r.account_count, "account")
            << (o.users.empty() ? "" : ", " + Plural(r.user_count, "user")) << " in "
            << script.string() << "; slurm.conf fragment in " << conf.string() << "; "
            << Plural(r.diagnostics.WarningCount(), "warning") << "\n";
  return 0;
}

int RunExport(const ExportCli& o) {
  const char* who = "arbiter slurm export";
  auto load = LoadPolicy(o.files, who, /*quiet=*/true);
  if (!load) return 1;
  if (int rc = CheckExportNames(o, who)) return rc;
  auto names = BuildNames(o.account_map, /*set=*/nullptr, who);  // --account-map only
  if (!names) return 1;
  slurm::ExportOptions opts;
  if (int rc = ExportOptionsOf(o, who, &opts)) return rc;
  slurm::ExportResult r = slurm::ExportPolicy(load->set, &load->locator, std::move(*names), opts);
  for (const auto& d : r.diagnostics.items) std::cerr << d.ToString() << "\n";
  if (!r.ok()) {
    std::cerr << who << ": " << Plural(r.diagnostics.ErrorCount(), "error")
              << "; nothing written\n";
    return 1;
  }
  const size_t warnings = r.diagnostics.WarningCount();
  if (o.strict && warnings > 0) {
    std::cerr << who << ": --strict: " << Plural(warnings, "warning")
              << " (policy Slurm cannot express); nothing written\n";
    return 1;
  }
  if (!o.out_dir.empty()) return WriteExportDir(o, r, who);
  std::cout << r.sacctmgr_script << "\n# ==== slurm.conf fragment ====\n" << r.slurm_conf;
  return 0;
}

// ------------------------------------------------------------------ import

struct ImportCli {
  std::string sacct_file, since, until, sacct = "sacct", save_sacct, db, account_map, cluster,
                                        utc_offset = "Z";
  std::string scrape, seal_before, segments_out;  // scrape: "" = the policy's, else 30s
  std::vector<std::string> files;
  bool dry_run = false;
};

// The cards of MIG instances (ImportOptions): each Node's gpu.product, and per MIG resource the
// model of the Nodes that carry it when they all agree.
void SetMigCards(const ManifestSet& set, slurm::ImportOptions& io) {
  std::map<std::string, std::set<std::string>> models_of_mig;
  for (const auto& n : set.nodes) {
    auto it = n.meta.labels.find("nvidia.com/gpu.product");
    if (it == n.meta.labels.end()) continue;
    io.node_gpu_product[n.meta.name] = it->second;
    for (const auto& [r, v] : n.capacity.entries())
      if (IsMigResourceName(r) && v > 0) models_of_mig[r].insert(it->second);
  }
  for (const auto& [r, models] : models_of_mig)
    if (models.size() == 1) io.mig_gpu_product[r] = *models.begin();
}

// --sacct-file or --since, --db, --utc-offset and --seal-before: 0, or the exit code.
int CheckImportFlags(const ImportCli& o, const char* who, Millis* offset,
                     std::optional<Millis>* seal) {
  if (o.sacct_file.empty() == o.since.empty()) {
    std::cerr << who << ": give either --sacct-file FILE or --since TIME\n";
    return 2;
  }
  if (o.db.empty() && !o.dry_run && o.segments_out.empty()) {
    std::cerr << who << ": --db LEDGER is required (or --dry-run / --segments-out)\n";
    return 2;
  }
  auto off = slurm::ParseUtcOffset(o.utc_offset);
  if (!off.ok()) {
    std::cerr << who << ": --utc-offset: " << off.message() << "\n";
    return 2;
  }
  *offset = *off;
  if (!o.seal_before.empty()) {
    auto t = ParseInstant(o.seal_before, "--seal-before", who);
    if (!t) return 1;
    *seal = *t;
  }
  return 0;
}

// The usage track's sampling interval: --scrape-interval, else the policy's (PoolPolicy
// metering.scrapeInterval), else 30 s. 0, or the exit code.
int ScrapeInterval(const ImportCli& o, const yaml::ManifestLoad* load, const char* who,
                   Millis* interval) {
  *interval = load && load->set.pool_policy ? load->set.pool_policy->scrape_interval : 30000;
  if (o.scrape.empty()) return 0;
  auto d = ParseDuration(o.scrape);
  if (!d.ok() || *d <= 0) {
    std::cerr << who << ": --scrape-interval: " << (d.ok() ? "must be positive" : d.message())
              << "\n";
    return 1;
  }
  *interval = *d;
  return 0;
}

// Runs sacct for the jobs since --since (its output in --save-sacct, else in a temporary file,
// named in *temp): the output's path, or nullopt (the temporary file removed).
std::optional<std::string> RunSacctSince(const ImportCli& o, const char* who,
                                         std::optional<std::string>* temp) {
  auto since = ParseInstant(o.since, "--since", who);
  if (!since) return std::nullopt;
  slurm::SacctQuery q;
  q.sacct = o.sacct;
  q.since = *since;
  if (!o.until.empty()) {
    auto until = ParseInstant(o.until, "--until", who);
    if (!until) return std::nullopt;
    q.until = *until;
  }
  if (!o.save_sacct.empty()) {
    q.output_path = o.save_sacct;
  } else {
    char tmpl[] = "/tmp/arbiter-sacct-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
      std::cerr << who << ": cannot create a temporary file\n";
      return std::nullopt;
    }
    close(fd);
    q.output_path = tmpl;
    *temp = q.output_path;
  }
  std::cerr << who << ": running";
  for (const auto& a : slurm::SacctArgv(q)) std::cerr << " " << a;
  std::cerr << "\n";
  if (Status s = slurm::RunSacct(q); !s.ok()) {
    if (*temp) std::remove((*temp)->c_str());
    std::cerr << who << ": " << s.message() << "\n";
    return std::nullopt;
  }
  return q.output_path;
}

// The runs of sacct's output: --sacct-file, or sacct run for --since (its temporary output
// removed once read). nullopt on errors.
std::optional<std::vector<slurm::SacctRun>> ReadImportRuns(const ImportCli& o, Millis offset,
                                                           const char* who) {
  std::string sacct_path = o.sacct_file;
  std::optional<std::string> temp;
  if (!o.since.empty()) {
    auto path = RunSacctSince(o, who, &temp);
    if (!path) return std::nullopt;
    sacct_path = *path;
  }
  auto runs = ReadSacctFile(sacct_path, offset, who);
  if (temp) std::remove(temp->c_str());
  return runs;
}

// What the policy tells the import: QoS priorities (and PriorityClass values under priority
// preemption), MIG cards; its PriceBooks into *books.
slurm::ImportOptions ImportOptionsOf(const ImportCli& o, const yaml::ManifestLoad* load,
                                     std::vector<PriceBook>* books) {
  slurm::ImportOptions io;
  if (!o.cluster.empty()) io.cluster = o.cluster;
  if (!load) return io;
  for (const auto& q : load->set.qos) io.qos_priority[slurm::QosNameOf(q.meta.name)] = q.priority;
  if (!load->set.pool_policy || load->set.pool_policy->preemption_type == PreemptionType::kPriority)
    for (const auto& pc : load->set.priority_classes)
      io.qos_priority[slurm::QosNameOf(pc.meta.name)] = pc.value;
  *books = load->set.price_books;
  SetMigCards(load->set, io);
  return io;
}

// Says what was imported, and writes the segments to --segments-out: 0, or the exit code.
int ReportImported(const ImportCli& o, const std::string& label,
                   const slurm::ImportResult& imported, const char* who) {
  std::cout << label << ": " << Plural(imported.jobs, "job") << ", " << Plural(imported.runs, "run")
            << " (" << imported.not_started << " not started, " << imported.running
            << " still running) -> " << Plural(imported.segments.size(), "segment") << "\n";
  for (const auto& n : imported.notes) std::cout << "note: " << n << "\n";
  if (o.segments_out.empty()) return 0;
  std::ofstream f(o.segments_out);
  for (const auto& s : imported.segments) f << report::SegmentToJson(s).dump() << "\n";
  f.close();
  if (!f) {
    std::cerr << who << ": cannot write " << o.segments_out << "\n";
    return 1;
  }
  return 0;
}

int RunImport(const ImportCli& o) {
  const char* who = "arbiter slurm import";
  Millis offset = 0;
  std::optional<Millis> seal;
  if (int rc = CheckImportFlags(o, who, &offset, &seal)) return rc;
  std::optional<yaml::ManifestLoad> load;
  if (!o.files.empty()) {
    load = LoadPolicy(o.files, who, /*quiet=*/true);
    if (!load) return 1;
  }
  const yaml::ManifestLoad* policy = load ? &*load : nullptr;
  auto names = BuildNames(o.account_map, policy ? &policy->set : nullptr, who);
  if (!names) return 1;
  Millis interval = 0;
  if (int rc = ScrapeInterval(o, policy, who, &interval)) return rc;
  auto runs = ReadImportRuns(o, offset, who);
  if (!runs) return 1;
  std::vector<PriceBook> books;
  const slurm::ImportOptions io = ImportOptionsOf(o, policy, &books);
  const std::string label = o.since.empty() ? o.sacct_file : "sacct since " + o.since;
  auto imported = slurm::SegmentsFromSacct(*runs, *names, io, label);
  if (!imported.ok()) {
    std::cerr << who << ": " << imported.message() << "\n";
    return 1;
  }
  if (int rc = ReportImported(o, label, *imported, who)) return rc;
  if (o.dry_run || o.db.empty()) return 0;
  return IngestSegments(o.db, imported->segments, std::move(books), interval, seal, who, label,
                        "-f POLICY.yaml with a PriceBook", std::cout, std::cerr);
}

// ------------------------------------------------------------------ compare

struct CompareCli {
  std::string sacct_file, report, log, expect, account_map, t0, utc_offset = "Z", output = "table";
  std::vector<std::string> files;
};

// The --report-json of `arbiter sim`: its JSON, or nullopt (said on stderr).
std::optional<nlohmann::json> ReadSimReport(const std::string& path, const char* who) {
  if (!Readable(path, who)) return std::nullopt;
  std::ifstream rf(path);
  auto report = nlohmann::json::parse(rf, nullptr, false);
  if (report.is_discarded()) {
    std::cerr << who << ": " << path << ": not valid JSON\n";
    return std::nullopt;
  }
  return report;
}

// --slurmctld-log, --expect (kept in *ex) and --t0 into `in`: 0, or the exit code.
int SetCompareExtras(const CompareCli& o, const char* who, slurm::ConformanceInputs* in,
                     std::optional<slurm::Expectations>* ex) {
  if (!o.log.empty()) {
    if (!Readable(o.log, who)) return 1;
    std::ifstream lf(o.log);
    std::stringstream ss;
    ss << lf.rdbuf();
    in->slurmctld_log = ss.str();
  }
  if (!o.expect.empty()) {
    auto e = slurm::Expectations::Load(o.expect);
    if (!e.ok()) {
      std::cerr << who << ": --expect: " << e.message() << "\n";
      return 1;
    }
    *ex = std::move(*e);
    in->expect = &**ex;
  }
  if (!o.t0.empty()) {
    auto t = ParseInstant(o.t0, "--t0", who);
    if (!t) return 1;
    in->t0 = *t;
  }
  return 0;
}

int RunCompare(const CompareCli& o) {
  const char* who = "arbiter slurm compare";
  if (o.output != "table" && o.output != "json") {
    std::cerr << who << ": -o must be table or json\n";
    return 2;
  }
  auto offset = slurm::ParseUtcOffset(o.utc_offset);
  if (!offset.ok()) {
    std::cerr << who << ": --utc-offset: " << offset.message() << "\n";
    return 2;
  }
  std::optional<yaml::ManifestLoad> load;
  if (!o.files.empty()) {
    load = LoadPolicy(o.files, who, true);
    if (!load) return 1;
  }
  auto names = BuildNames(o.account_map, load ? &load->set : nullptr, who);
  if (!names) return 1;
  auto runs = ReadSacctFile(o.sacct_file, *offset, who);
  if (!runs) return 1;
  auto report = ReadSimReport(o.report, who);
  if (!report) return 1;
  slurm::ConformanceInputs in;
  in.runs = &*runs;
  in.report = &*report;
  in.names = &*names;
  // Pod groups of the -f files: each is compared with the Slurm multi-node job of its name.
  slurm::GangMembers gangs;
  if (load) gangs = slurm::GangMembersOf(load->set);
  in.gangs = &gangs;
  std::optional<slurm::Expectations> ex;
  if (int rc = SetCompareExtras(o, who, &in, &ex)) return rc;
  auto r = slurm::CompareWithSlurm(in);
  if (!r.ok()) {
    std::cerr << who << ": " << r.message() << "\n";
    return 1;
  }
  if (o.output == "json")
    std::cout << slurm::ConformanceJson(*r).dump(2) << "\n";
  else
    std::cout << slurm::ConformanceTable(*r);
  return r->ok() ? 0 : 1;
}

}  // namespace

void RegisterSlurm(CLI::App& app, int* exit_code) {
  auto* slurm_cmd = app.add_subcommand("slurm",
                                       "Slurm: export a policy to a Slurm cluster, import its "
                                       "accounting, compare it with a simulation.\n"
                                       "See docs/slurm.md for the mapping.");
  slurm_cmd->require_subcommand(1);

  auto ea = std::make_shared<ExportCli>();
  auto* exp = slurm_cmd->add_subcommand(
      "export",
      "Translate a policy (PoolPolicy, QoS or PriorityClass tiers, Namespaces, ResourceQuotas,\n"
      "ElasticQuotas, PriceBook, Nodes) into what a Slurm admin applies:\n"
      "  sacctmgr.sh         idempotent `sacctmgr -i` commands: QoS (Priority, Preempt, "
      "PreemptMode,\n"
      "                      GraceTime, UsageFactor), one account per namespace under a parent "
      "per\n"
      "                      cohort, association limits (GrpTRES, GrpJobs), allowed QoS, users\n"
      "  slurm-policy.conf   slurm.conf fragment: priority/multifactor, preempt/qos, PreemptMode,\n"
      "                      PreemptExemptTime, JobAcctGather*, AccountingStorageTRES (GPU gres\n"
      "                      types), TRESBillingWeights from the PriceBook\n"
      "Every line says where it came from. What Slurm cannot express is a warning\n"
      "(FILE:LINE: Kind/name: field: warning: ...) on stderr. Without -o both go to stdout.\n"
      "Exit: 0 written (warnings allowed unless --strict), 1 invalid policy, 2 usage error.");
  exp->add_option("-f,--file", ea->files, "Policy manifests (multi-document YAML); repeatable")
      ->required();
  exp->add_option("--cluster", ea->cluster,
                  "Slurm cluster of the associations (default: every cluster)");
  exp->add_option("-o,--output-dir", ea->out_dir,
                  "Write sacctmgr.sh and slurm-policy.conf into this directory");
  exp->add_option("--user", ea->users, "Add this user to every namespace account; repeatable");
  exp->add_option(
      "--account-map", ea->account_map,
      "YAML map of Slurm names (accounts: {ACCOUNT: NAMESPACE}, gpuTypes: {TYPE: PRODUCT})");
  exp->add_option("--price-at", ea->price_at,
                  "Export the PriceBook version in force at this time (RFC 3339; default: now)");
  exp->add_flag("--strict", ea->strict, "Fail (exit 1) when anything cannot be expressed in Slurm");
  exp->callback([ea, exit_code] { *exit_code = RunExport(*ea); });

  auto ia = std::make_shared<ImportCli>();
  auto* imp = slurm_cmd->add_subcommand(
      "import",
      "Bill Slurm jobs: read `sacct -D --parsable2` output (every run of requeued jobs, "
      "AllocTRES,\n"
      "steps' TRESUsageInTot) and write the same hourly ledger as `arbiter invoice ingest`, one\n"
      "bill per tenant across Kubernetes and Slurm. Idempotent: importing the same jobs again\n"
      "changes nothing. Either a file:\n"
      "  sacct -D -a -P --noconvert --format=" +
          std::string(slurm::kSacctFormat) +
          " > F\n"
          "  arbiter slurm import --sacct-file F --db ledger.db -f policy.yaml\n"
          "or the real sacct (SLURM_CONF from the environment):\n"
          "  arbiter slurm import --since 2026-01-01T00:00:00Z --db ledger.db -f policy.yaml\n"
          "Accounts map to namespaces through the policy's namespaces and --account-map; "
          "PriceBooks\n"
          "come from -f, else from the ledger. A preempted run is billed until it released its\n"
          "resources (the latest End of the job record and its steps).");
  imp->add_option("--sacct-file", ia->sacct_file,
                  "sacct --parsable2 output (with its header line)");
  imp->add_option("--since", ia->since,
                  "Run sacct for jobs from this time (RFC 3339 or Unix seconds)");
  imp->add_option("--until", ia->until, "With --since: up to this time (default: now)");
  imp->add_option("--sacct", ia->sacct, "The sacct program (default: sacct in PATH)");
  imp->add_option("--save-sacct", ia->save_sacct, "With --since: keep sacct's output in this file");
  imp->add_option("--db", ia->db, "Ledger database (SQLite); created if missing");
  imp->add_option("-f,--file", ia->files,
                  "Policy manifests: namespaces, GPU models, QoS, PriceBooks; repeatable");
  imp->add_option("--account-map", ia->account_map,
                  "YAML map: accounts: {ACCOUNT: NAMESPACE}, gpuTypes: {TYPE: PRODUCT}");
  imp->add_option("--cluster", ia->cluster,
                  "Cluster name for the workload names when sacct has no Cluster field");
  imp->add_option("--utc-offset", ia->utc_offset,
                  "UTC offset of sacct's ISO times without a zone (+08:00; default Z: UTC)");
  imp->add_option("--scrape-interval", ia->scrape,
                  "Usage-track sampling interval (default: the PoolPolicy's "
                  "metering.scrapeInterval, else 30s)");
  imp->add_option("--seal-before", ia->seal_before, "Seal every hour before this time (RFC 3339)");
  imp->add_option("--segments-out", ia->segments_out, "Also write the run segments as JSON Lines");
  imp->add_flag("--dry-run", ia->dry_run, "Parse and convert only; write no ledger");
  imp->callback([ia, exit_code] { *exit_code = RunImport(*ia); });

  auto ca = std::make_shared<CompareCli>();
  auto* cmp = slurm_cmd->add_subcommand(
      "compare",
      "Compare a real Slurm run with `arbiter sim` of the same workload, job by job: who "
      "preempted\n"
      "it, final state, number of runs, start of each run, GPU-seconds. Jobs match by namespace\n"
      "(account) and name (JobName). Tolerances, allowances and the known disagreements come from\n"
      "--expect FILE (docs/slurm.md); a difference not listed there, or a listed one that no "
      "longer\n"
      "occurs, makes the exit status 1. A pod group (PodGroup; its pods in the -f files) is one\n"
      "job: the Slurm multi-node job named after the group.");
  cmp->add_option("--sacct-file", ca->sacct_file, "sacct -D --parsable2 output of the Slurm run")
      ->required();
  cmp->add_option("--report-json", ca->report, "arbiter sim --report-json of the same workload")
      ->required();
  cmp->add_option("-f,--file", ca->files,
                  "Policy manifests (namespaces for the account mapping) and the workload "
                  "(its pod groups); repeatable");
  cmp->add_option("--account-map", ca->account_map, "YAML map: accounts: {ACCOUNT: NAMESPACE}");
  cmp->add_option("--slurmctld-log", ca->log,
                  "slurmctld log (SlurmctldDebug=debug) to tell who preempted whom");
  cmp->add_option("--expect", ca->expect, "Tolerances, allowances and expected differences (YAML)");
  cmp->add_option("--t0", ca->t0, "Time of the first submission (default: the earliest Submit)");
  cmp->add_option("--utc-offset", ca->utc_offset, "UTC offset of sacct's ISO times (default Z)");
  cmp->add_option("-o,--output", ca->output, "table (default) or json");
  cmp->callback([ca, exit_code] { *exit_code = RunCompare(*ca); });
}

}  // namespace arbiter::app
