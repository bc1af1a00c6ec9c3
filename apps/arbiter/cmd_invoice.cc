// `arbiter invoice` (invoices from a ledger), `arbiter invoice ingest` (segments -> ledger) and
// `arbiter ledger export|seal|check`. Exit codes and messages follow cli_flags.h: 0 success, 1
// invalid input, 2 usage error.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "adapters/io/input_file.h"
#include "adapters/report/invoice_csv.h"
#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "adapters/warehouse/warehouse.h"
#include "adapters/yaml/manifest_loader.h"
#include "cli_flags.h"
#include "commands.h"
#include "core/plural.h"
#include "core/text.h"
#include "ledger_read.h"
#include "ledger_write.h"

namespace arbiter::app {

namespace {

constexpr const char* kInvoice = "arbiter invoice";
constexpr const char* kIngest = "arbiter invoice ingest";
constexpr const char* kExport = "arbiter ledger export";
constexpr const char* kSeal = "arbiter ledger seal";
constexpr const char* kCheck = "arbiter ledger check";

// The most hourly rows one ingest meters (about 300 bytes each in memory): a segments file that
// would make more is refused before anything is metered. Ingest a longer history in parts.

struct InvoiceArgs {
  std::string db, ns, from, to, month, output = "table";
};
struct IngestArgs {
  std::string db, segments, scrape = "30s", seal_before;
  std::vector<std::string> pricebooks;
};
struct ExportArgs : LedgerWindowFlags {
  std::string format = "csv", out;
  bool superseded = false;
};
struct SealArgs {
  std::string db, before;
};
struct CheckArgs {
  std::string db;
};

// "GPU-second" -> "GPU-hour": the unit a price is written per.
std::string PerHourUnit(const std::string& unit) {
  const std::string sfx = "-second";
  if (unit.size() > sfx.size() && unit.compare(unit.size() - sfx.size(), sfx.size(), sfx) == 0)
    return unit.substr(0, unit.size() - sfx.size()) + "-hour";
  return unit + "-hour";
}

void PrintTable(const std::vector<billing::Invoice>& invs, std::ostream& out) {
  for (const auto& inv : invs) {
    out << "Invoice " << inv.namespace_ << "  " << inv.currency << "  " << FormatRfc3339(inv.from)
        << " .. " << FormatRfc3339(inv.to) << "\n";
    out << "  price books: ";
    for (size_t i = 0; i < inv.price_books.size(); ++i)
      out << (i ? ", " : "") << inv.price_books[i];
    out << "\n  digest: " << inv.digest << "\n";
    // Quantities in the metering unit (seconds); the price per unit-hour as the PriceBook writes
    // it, with its unit, so that "7200 GPU-second" next to "7/GPU-hour" reads right.
    TextTable t({{"KIND", false},
                 {"RESOURCE", false},
                 {"UNIT", false},
                 {"MODE", false},
                 {"REQUEST", true},
                 {"USAGE", true},
                 {"BILLED", true},
                 {"UNIT PRICE", true},
                 {"AMOUNT", true}});
    std::vector<std::string> notes;
    for (const auto& l : inv.lines) {
      std::string res = l.resource + (l.gpu_product.empty() ? "" : " @" + l.gpu_product);
      t.Row({billing::ToString(l.kind), res, l.unit, ToString(l.mode),
             l.request_quantity.ToString(), l.usage_quantity.ToString(),
             l.billed_quantity.ToString(),
             l.price.unit_price.ToString() + "/" + PerHourUnit(l.unit),
             l.amount.ToFixed(billing::kAmountDigits)});
      std::string note;
      if (l.price.mig_rule) note += "  (" + l.price.source + ")";
      if (!l.preemptor.empty()) note += "  (preempted by " + l.preemptor + ")";
      if (l.share_rule)
        note += "  (" + std::string(ToString(*l.share_rule)) + " share of idle " +
                l.idle_amount.ToFixed(billing::kAmountDigits) + ")";
      notes.push_back(note);
    }
    t.Print(out, "  ", notes);
    out << "  request track " << inv.request_total.ToFixed(billing::kAmountDigits)
        << "  usage track " << inv.usage_total.ToFixed(billing::kAmountDigits) << "  credits "
        << inv.credit_total.ToFixed(billing::kAmountDigits);
    if (!inv.idle_share_total.is_zero())
      out << "  idle " << (inv.namespace_ == billing::kIdleNamespace ? "spread " : "share ")
          << inv.idle_share_total.ToFixed(billing::kAmountDigits);
    out << "  TOTAL " << inv.total.ToFixed(billing::kAmountDigits) << " " << inv.currency << "\n";
    for (const auto& p : inv.provenance)
      if (p.usage_from_request)
        out << "  usage = request: " << p.workload << " " << p.resource
            << ": nothing measured its usage; its usage track is its request track\n";
      else if (p.low_coverage)
        out << "  low coverage: " << p.workload << " " << p.resource << ": " << p.samples
            << " samples saw " << report::SecondsText(p.covered_ms) << "s of "
            << report::SecondsText(p.run_ms) << "s run; its usage track is an estimate\n";
    out << "\n";
  }
  if (!invs.empty())
    out << "Quantities are in unit-seconds, unit prices per unit-hour as the PriceBook writes "
           "them:\n"
           "AMOUNT = BILLED / 3600 x UNIT PRICE, rounded once per line (half-up, 6 decimals).\n";
}

// PriceBooks from files: *.json (PriceBooksFromJson) or YAML manifests (PriceBook kinds).
bool LoadBooks(const std::vector<std::string>& files, std::vector<PriceBook>* out) {
  std::vector<std::string> yaml;
  for (const auto& f : files) {
    if (f.size() >= 5 && f.substr(f.size() - 5) == ".json") {
      auto text = io::ReadInputFile(f, io::kPriceBookJsonInput);
      if (!text.ok()) {
        InputError(kIngest, "--pricebook: " + text.message());
        return false;
      }
      auto j = nlohmann::json::parse(*text, nullptr, false);
      if (j.is_discarded()) {
        std::cerr << f << ": not valid JSON\n";
        return false;
      }
      auto b = report::PriceBooksFromJson(j);
      if (!b.ok()) {
        std::cerr << f << ": " << b.message() << "\n";
        return false;
      }
      for (auto& x : *b) out->push_back(std::move(x));
    } else {
      yaml.push_back(f);
    }
  }
  if (!yaml.empty()) {
    yaml::ManifestLoad load = yaml::LoadManifestFiles(yaml);
    if (!load.ok()) {
      load.diagnostics.Sort();
      for (const auto& d : load.diagnostics.items) std::cerr << d.ToString() << "\n";
      return false;
    }
    for (auto& b : load.set.price_books) out->push_back(std::move(b));
  }
  return true;
}

int RunIngest(const IngestArgs& a) {
  if (a.db.empty() || a.segments.empty()) {
    std::cerr << kIngest
              << ": --db and --segments are required\nRun `arbiter invoice ingest --help` for the "
                 "options.\n";
    return kExitUsage;
  }
  auto interval = ParseDuration(a.scrape);
  if (!interval.ok()) return FlagError(kIngest, "--scrape-interval", interval.message());
  billing::MeterConfig cfg;
  cfg.scrape_interval = *interval;
  if (Status v = billing::ValidateMeterConfig(cfg); !v.ok())
    return FlagError(kIngest, "--scrape-interval", v.message());
  std::optional<Millis> seal;
  if (int rc = HourFlag(kIngest, "--seal-before", a.seal_before, &seal); rc != kExitOk) return rc;
  std::vector<std::pair<std::string, std::string>> inputs = {{"--segments", a.segments}};
  for (const auto& p : a.pricebooks) inputs.push_back({"--pricebook", p});
  if (int rc = StdinOnce(kIngest, inputs); rc != kExitOk) return rc;
  if (a.db == "-") return FlagError(kIngest, "--db", "a ledger is a file, not standard input");
  auto segs = report::ReadSegmentsJsonl(a.segments);
  if (!segs.ok()) return InputError(kIngest, segs.message());
  std::vector<PriceBook> books;
  if (!LoadBooks(a.pricebooks, &books)) return kExitInvalidInput;
  return IngestSegments(a.db, *segs, std::move(books), cfg.scrape_interval, seal,
                        std::string(kIngest), io::InputName(a.segments), "--pricebook", std::cout,
                        std::cerr);
}

int RunInvoice(const InvoiceArgs& a) {
  if (a.db.empty()) {
    std::cerr << kInvoice
              << ": missing required option --db\nRun `arbiter invoice --help` for the options.\n";
    return kExitUsage;
  }
  if (a.output != "table" && a.output != "csv" && a.output != "json")
    return FlagError(kInvoice, "-o",
                     QuotedEcho(a.output) + " is not an output format: table, csv or json");
  std::optional<Millis> from, to;
  if (int rc = WindowFlags(kInvoice, a.month, a.from, a.to, &from, &to); rc != kExitOk) return rc;
  std::optional<std::string> ns;
  Result<std::vector<billing::Invoice>> invs = std::vector<billing::Invoice>{};
  if (warehouse::IsWarehouseUrl(a.db)) {  // a warehouse written by `arbiter ledger sync`
    auto wh = warehouse::OpenWarehouse(a.db);
    if (!wh.ok()) return InputError(kInvoice, wh.message());
    if (!a.ns.empty()) ns = a.ns;
    invs = billing::StoreInvoices(**wh, ns, from, to);
  } else {
    int rc = kExitOk;
    auto ledger = OpenExisting(kInvoice, a.db, /*check=*/true, &rc);
    if (!ledger) return rc;
    if (!a.ns.empty()) {
      if (!KnownNamespace(kInvoice, *ledger, a.ns, &rc)) return rc;
      ns = a.ns;
    }
    invs = sqlite::LedgerInvoices(*ledger, ns, from, to);
  }
  if (!invs.ok()) return InputError(kInvoice, invs.message());
  if (a.output == "json")
    std::cout << report::InvoicesToJson(*invs).dump(2) << "\n";
  else if (a.output == "csv")
    report::WriteInvoicesCsv(*invs, std::cout);
  else {
    if (invs->empty())
      std::cout << "no billed usage" << (ns ? " for namespace " + *ns : "") << " in the window\n";
    PrintTable(*invs, std::cout);
  }
  return kExitOk;
}

int RunExport(const ExportArgs& a) {
  if (a.db.empty()) {
    std::cerr
        << kExport
        << ": missing required option --db\nRun `arbiter ledger export --help` for the options.\n";
    return kExitUsage;
  }
  if (a.format != "csv" && a.format != "jsonl")
    return FlagError(kExport, "--format",
                     QuotedEcho(a.format) + " is not an export format: csv or jsonl");
  sqlite::RowFilter f;
  f.include_superseded = a.superseded;
  int rc = kExitOk;
  auto ledger = OpenWindow(kExport, a, &f, &rc);
  if (!ledger) return rc;
  std::ofstream file;
  if (!a.out.empty()) {
    file.open(a.out);
    if (!file) return FlagError(kExport, "--out", a.out + ": cannot be written");
  }
  std::ostream& out = a.out.empty() ? std::cout : file;
  Status s = a.format == "csv" ? ledger->ExportCsv(f, out) : ledger->ExportJsonl(f, out);
  if (!s.ok()) return InputError(kExport, s.message());
  return kExitOk;
}

int RunSeal(const SealArgs& a) {
  std::optional<Millis> t;
  if (int rc = HourFlag(kSeal, "--before", a.before, &t); rc != kExitOk) return rc;
  if (!std::filesystem::exists(a.db))
    return InputError(kSeal, "--db: " + a.db + ": no such ledger");
  if (std::string why = io::WhyNotReadable(a.db); !why.empty())
    return InputError(kSeal, "--db: " + a.db + ": " + why);
  auto l = sqlite::Ledger::Open(a.db);
  if (!l.ok()) return InputError(kSeal, l.message());
  if (Status s = (*l)->Seal(*t); !s.ok()) return InputError(kSeal, s.message());
  auto w = (*l)->SealedBefore();
  if (!w.ok()) return InputError(kSeal, w.message());
  std::cout << "sealed every hour before " << FormatRfc3339(*w) << "\n";
  return kExitOk;
}

int RunCheck(const CheckArgs& a) {
  int rc = kExitOk;
  auto ledger = OpenExisting(kCheck, a.db, /*check=*/false, &rc);
  if (!ledger) return rc;
  std::vector<std::string> problems;
  auto integrity = ledger->CheckIntegrity(/*full=*/true, 20);
  if (!integrity.ok())
    problems.push_back(integrity.message());
  else
    for (auto& p : *integrity) problems.push_back("PRAGMA integrity_check: " + p);
  auto stats = ledger->Stats();
  if (problems.empty()) {
    if (!stats.ok()) problems.push_back(stats.message());
    auto rollups = ledger->CheckRollups(20);
    if (!rollups.ok())
      problems.push_back(rollups.message());
    else
      for (auto& p : *rollups) problems.push_back(p);
  }
  if (!problems.empty()) {
    for (const auto& p : problems) std::cout << a.db << ": damaged: " << p << "\n";
    std::cout
        << a.db << ": " << Plural(problems.size(), "problem")
        << "; restore the ledger from a backup, or ingest its segments again into a new one\n";
    return kExitInvalidInput;
  }
  const sqlite::LedgerStats& s = *stats;
  if (s.uncommitted) {
    std::cout << a.db
              << ": ok: an empty ledger (created, but its first write never committed: no rows)\n";
    return kExitOk;
  }
  std::cout << a.db << ": ok: schema " << s.schema << ", " << Plural(s.rows, "hourly row") << " ("
            << s.current_rows << " current) in " << Plural(s.namespaces, "namespace");
  if (s.first_hour)
    std::cout << ", hours " << FormatRfc3339(*s.first_hour) << " .. "
              << FormatRfc3339(*s.last_hour);
  std::cout << ", " << Plural(s.price_books, "PriceBook version") << ", "
            << (s.sealed_before == INT64_MIN ? std::string("nothing sealed")
                                             : "sealed before " + FormatRfc3339(s.sealed_before))
            << "\n";
  return kExitOk;
}

}  // namespace

void RegisterInvoice(CLI::App& app, int* exit_code) {
  const std::string footer =
      "Windows: --month YYYY-MM is that calendar month in UTC; --from/--to are RFC 3339\n"
      "(2026-01-01T00:00:00Z); an hour belongs to the window when it starts in [from, to).\n"
      "The ledger is opened read-only; SQLite checks every page a read touches, and the whole "
      "file\n"
      "(PRAGMA quick_check) when it was not closed cleanly (`ledger check` checks everything).\n"
      "Exit status: 0 ok, 1 invalid input (missing or damaged ledger, unknown namespace), 2 usage "
      "error.";
  auto ia = std::make_shared<InvoiceArgs>();
  auto* inv = app.add_subcommand(
      "invoice",
      "Print invoices from a billing ledger (SQLite) or its warehouse copy, or ingest run "
      "segments.\n"
      "  arbiter invoice --db PATH|clickhouse://...|postgresql://... [--namespace NS]\n"
      "                  [--month YYYY-MM | --from T --to T] [-o table|csv|json]\n"
      "  arbiter invoice ingest --db PATH --segments FILE.jsonl [--pricebook FILE ...]\n"
      "Quantities are in unit-seconds (core-second, GiB-second, GPU-second), unit prices per\n"
      "unit-hour as the PriceBook writes them; amounts are exact, rounded once per line (half-up,\n"
      "6 decimals). See docs/billing.md.");
  inv->footer(footer);
  inv->require_subcommand(0, 1);
  inv->add_option(
      "--db", ia->db,
      "Ledger database (SQLite), or a warehouse written by `ledger sync`: clickhouse://... | "
      "postgresql://... (required)");
  inv->add_option("--namespace", ia->ns,
                  "Only this namespace (default: every namespace); one the ledger has");
  inv->add_option("--month", ia->month, "Bill this calendar month (UTC), e.g. 2026-01");
  inv->add_option("--from", ia->from, "Window start, RFC 3339 (default: first hour)");
  inv->add_option("--to", ia->to, "Window end, RFC 3339, exclusive (default: last hour)");
  inv->add_option("-o,--output", ia->output, "table (default), csv or json");

  auto ga = std::make_shared<IngestArgs>();
  auto* ing = inv->add_subcommand(
      "ingest",
      "Meter run segments (JSON Lines, one RunSegment a line: workload, namespace, node,\n"
      "gpuProduct, requests, usage, start, end, lost{from,to,preemptor}) and write their hourly\n"
      "rows to the ledger. Idempotent: ingesting the same file again adds nothing. Hours before\n"
      "--seal-before are sealed: a later different content becomes a new version.");
  ing->footer(
      "Limits: the segments file (or - for standard input) at most 1 GiB; times from 1970-01-01 "
      "to\n"
      "2100-01-01 (UTC), each segment starting when a PriceBook is in force; at most 10 million "
      "hourly\n"
      "rows per ingest (ingest a longer history in parts); PriceBook JSON at most 16 MiB, YAML 512 "
      "MiB.\n"
      "A failed ingest writes nothing and leaves no new ledger file; a killed one leaves the "
      "ledger as\n"
      "of its last commit (for a new ledger: an empty one).\n"
      "Exit status: 0 ok, 1 invalid input, 2 usage error.");
  ing->add_option("--db", ga->db, "Ledger database (SQLite); created if missing (required)");
  ing->add_option("--segments", ga->segments,
                  "Run segments, JSON Lines (- for standard input) (required)");
  ing->add_option("--pricebook", ga->pricebooks,
                  "PriceBook manifest (YAML) or JSON; repeatable (default: those in the ledger)");
  ing->add_option("--scrape-interval", ga->scrape, "Usage scrape interval (default 30s)");
  ing->add_option("--seal-before", ga->seal_before,
                  "Seal every hour before this time (RFC 3339, on the hour)");

  ing->callback([ga, exit_code] { *exit_code = RunIngest(*ga); });
  inv->callback([ia, ing, exit_code] {
    if (ing->parsed()) return;
    *exit_code = RunInvoice(*ia);
  });

  auto* ledger = app.add_subcommand(
      "ledger", "Billing ledger maintenance: export, seal, check, sync, tracks.");
  ledger->require_subcommand(1);
  auto ea = std::make_shared<ExportArgs>();
  auto* exp = ledger->add_subcommand(
      "export",
      "Export hourly ledger rows with FOCUS column names (BilledCost, EffectiveCost,\n"
      "ConsumedQuantity, ConsumedUnit, PricingQuantity, ResourceId, ChargePeriodStart, ...).");
  exp->footer(footer);
  exp->add_option("--db", ea->db, "Ledger database (SQLite) (required)");
  exp->add_option("--namespace", ea->ns, "Only this namespace");
  exp->add_option("--month", ea->month, "Only this calendar month (UTC), e.g. 2026-01");
  exp->add_option("--from", ea->from, "Window start, RFC 3339");
  exp->add_option("--to", ea->to, "Window end, RFC 3339, exclusive");
  // -o is the output *format* everywhere (as in `arbiter invoice -o csv`); the file is --out.
  exp->add_option("-o,--format", ea->format, "csv (default) or jsonl");
  exp->add_option("--out", ea->out, "Output file (default: stdout)");
  exp->add_flag("--include-superseded", ea->superseded, "Also rows replaced by a later version");
  exp->callback([ea, exit_code] { *exit_code = RunExport(*ea); });

  auto sa = std::make_shared<SealArgs>();
  auto* seal = ledger->add_subcommand(
      "seal", "Seal every hour before a time: later corrections become new versions.");
  seal->add_option("--db", sa->db, "Ledger database (SQLite)")->required();
  seal->add_option("--before", sa->before, "RFC 3339 time on the hour (hours are sealed whole)")
      ->required();
  seal->footer(
      "Exit status: 0 ok, 1 invalid input (missing ledger), 2 usage error (a time not on the "
      "hour).");
  seal->callback([sa, exit_code] { *exit_code = RunSeal(*sa); });

  auto ca = std::make_shared<CheckArgs>();
  auto* check = ledger->add_subcommand(
      "check",
      "Check a ledger for operators: SQLite's full PRAGMA integrity_check, then every daily "
      "rollup\n"
      "against the sums of its hourly rows. Prints a one-line summary (schema, rows, namespaces,\n"
      "hours, PriceBook versions, seal watermark), or one line per problem. Read-only.");
  check->add_option("--db", ca->db, "Ledger database (SQLite)")->required();
  check->footer("Exit status: 0 the ledger is sound, 1 it is damaged or missing, 2 usage error.");
  check->callback([ca, exit_code] { *exit_code = RunCheck(*ca); });
}

}  // namespace arbiter::app
