// `arbiter invoice` (invoices from a ledger), `arbiter invoice ingest` (segments -> ledger) and
// `arbiter ledger export|seal`. Exit 0 success, 1 invalid input, 2 usage error.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "adapters/warehouse/warehouse.h"
#include "adapters/yaml/manifest_loader.h"
#include "commands.h"
#include "ledger_write.h"

namespace arbiter::app {

namespace {

struct InvoiceArgs {
  std::string db, ns, from, to, output = "table";
};
struct IngestArgs {
  std::string db, segments, scrape = "30s", seal_before;
  std::vector<std::string> pricebooks;
};
struct ExportArgs {
  std::string db, ns, from, to, format = "csv", out;
  bool superseded = false;
};
struct SealArgs {
  std::string db, before;
};

// Parses an optional RFC 3339 time; false (with a message) when malformed.
bool OptTime(const std::string& text, const char* flag, std::optional<Millis>* out) {
  if (text.empty()) return true;
  auto t = ParseRfc3339(text);
  if (!t.ok()) {
    std::cerr << "arbiter: " << flag << ": " << t.message() << "\n";
    return false;
  }
  *out = *t;
  return true;
}

// A window whose start is after its end is a mistake (swapped flags), not an empty invoice.
bool WindowInOrder(const std::optional<Millis>& from, const std::optional<Millis>& to, const char* who) {
  if (from && to && *from > *to) {
    std::cerr << who << ": --from " << FormatRfc3339(*from) << " is after --to " << FormatRfc3339(*to)
              << ": the window [from, to) must not be reversed\n";
    return false;
  }
  return true;
}

std::unique_ptr<sqlite::Ledger> OpenLedger(const std::string& path, bool must_exist, int* exit_code) {
  if (must_exist && !std::filesystem::exists(path)) {
    std::cerr << "arbiter: ledger " << path << " does not exist\n";
    *exit_code = 1;
    return nullptr;
  }
  auto l = sqlite::Ledger::Open(path);
  if (!l.ok()) {
    std::cerr << "arbiter: " << l.message() << "\n";
    *exit_code = 1;
    return nullptr;
  }
  return std::move(l).value();
}

std::string Pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

void PrintTable(const std::vector<billing::Invoice>& invs, std::ostream& out) {
  for (const auto& inv : invs) {
    out << "Invoice " << inv.namespace_ << "  " << inv.currency << "  " << FormatRfc3339(inv.from)
        << " .. " << FormatRfc3339(inv.to) << "\n";
    out << "  price books: ";
    for (size_t i = 0; i < inv.price_books.size(); ++i) out << (i ? ", " : "") << inv.price_books[i];
    out << "\n  digest: " << inv.digest << "\n";
    size_t rw = 10;
    for (const auto& l : inv.lines)
      rw = std::max(rw, l.resource.size() + (l.gpu_product.empty() ? 0 : l.gpu_product.size() + 2) + 1);
    out << "  " << Pad("KIND", 7) << Pad("RESOURCE", rw) << Pad("UNIT", 16) << Pad("MODE", 8)
        << Pad("REQUEST", 16) << Pad("USAGE", 16) << Pad("BILLED", 16) << Pad("UNIT PRICE", 11)
        << "AMOUNT\n";
    for (const auto& l : inv.lines) {
      std::string res = l.resource + (l.gpu_product.empty() ? "" : " @" + l.gpu_product);
      out << "  " << Pad(billing::ToString(l.kind), 7) << Pad(res, rw) << Pad(l.unit, 16)
          << Pad(ToString(l.mode), 8) << Pad(l.request_quantity.ToString(), 16)
          << Pad(l.usage_quantity.ToString(), 16) << Pad(l.billed_quantity.ToString(), 16)
          << Pad(l.price.unit_price.ToString(), 11) << l.amount.ToFixed(billing::kAmountDigits);
      if (l.price.mig_rule) out << "  (" << l.price.source << ")";
      if (!l.preemptor.empty()) out << "  (preempted by " << l.preemptor << ")";
      if (l.share_rule)
        out << "  (" << ToString(*l.share_rule) << " share of idle " << l.idle_amount.ToFixed(billing::kAmountDigits)
            << ")";
      out << "\n";
    }
    out << "  request track " << inv.request_total.ToFixed(billing::kAmountDigits) << "  usage track "
        << inv.usage_total.ToFixed(billing::kAmountDigits) << "  credits "
        << inv.credit_total.ToFixed(billing::kAmountDigits);
    if (!inv.idle_share_total.is_zero())
      out << "  idle " << (inv.namespace_ == billing::kIdleNamespace ? "spread " : "share ")
          << inv.idle_share_total.ToFixed(billing::kAmountDigits);
    out << "  TOTAL "
        << inv.total.ToFixed(billing::kAmountDigits) << " " << inv.currency << "\n";
    for (const auto& p : inv.provenance)
      if (p.low_coverage)
        out << "  low coverage: " << p.workload << " " << p.resource << ": " << p.samples
            << " samples saw " << report::SecondsText(p.covered_ms) << "s of "
            << report::SecondsText(p.run_ms) << "s run; its usage track is an estimate\n";
    out << "\n";
  }
}

std::string Csv(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void PrintCsv(const std::vector<billing::Invoice>& invs, std::ostream& out) {
  out << "namespace,currency,kind,resource,gpuModel,unit,mode,priceBook,requestQuantity,"
         "usageQuantity,billedQuantity,unitPrice,amount,preemptor,digest\n";
  for (const auto& inv : invs)
    for (const auto& l : inv.lines)
      out << Csv(inv.namespace_) << "," << inv.currency << "," << billing::ToString(l.kind) << ","
          << Csv(l.resource) << "," << Csv(l.gpu_product) << "," << l.unit << "," << ToString(l.mode)
          << "," << Csv(l.price_book) << "," << l.request_quantity.ToString() << ","
          << l.usage_quantity.ToString() << "," << l.billed_quantity.ToString() << ","
          << l.price.unit_price.ToString() << "," << l.amount.ToFixed(billing::kAmountDigits) << ","
          << Csv(l.preemptor) << "," << inv.digest << "\n";
}

// PriceBooks from files: *.json (PriceBooksFromJson) or YAML manifests (PriceBook kinds).
bool LoadBooks(const std::vector<std::string>& files, std::vector<PriceBook>* out) {
  std::vector<std::string> yaml;
  for (const auto& f : files) {
    if (f.size() >= 5 && f.substr(f.size() - 5) == ".json") {
      std::ifstream in(f);
      if (!in) {
        std::cerr << "arbiter invoice ingest: cannot read " << f << "\n";
        return false;
      }
      std::stringstream ss;
      ss << in.rdbuf();
      auto j = nlohmann::json::parse(ss.str(), nullptr, false);
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

void RunIngest(const IngestArgs& a, int* exit_code) {
  if (a.db.empty() || a.segments.empty()) {
    std::cerr << "arbiter invoice ingest: --db and --segments are required\n";
    *exit_code = 2;
    return;
  }
  auto interval = ParseDuration(a.scrape);
  if (!interval.ok()) {
    std::cerr << "arbiter invoice ingest: --scrape-interval: " << interval.message() << "\n";
    *exit_code = 1;
    return;
  }
  std::optional<Millis> seal;
  if (!OptTime(a.seal_before, "--seal-before", &seal)) {
    *exit_code = 1;
    return;
  }
  auto segs = report::ReadSegmentsJsonl(a.segments);
  if (!segs.ok()) {
    std::cerr << "arbiter invoice ingest: " << segs.message() << "\n";
    *exit_code = 1;
    return;
  }
  std::vector<PriceBook> books;
  if (!LoadBooks(a.pricebooks, &books)) {
    *exit_code = 1;
    return;
  }
  *exit_code = IngestSegments(a.db, *segs, std::move(books), *interval, seal, "arbiter invoice ingest", a.segments,
                              std::cout, std::cerr);
}

void RunInvoice(const InvoiceArgs& a, int* exit_code) {
  if (a.db.empty()) {
    std::cerr << "arbiter invoice: --db is required\n";
    *exit_code = 2;
    return;
  }
  if (a.output != "table" && a.output != "csv" && a.output != "json") {
    std::cerr << "arbiter invoice: -o must be table, csv or json\n";
    *exit_code = 2;
    return;
  }
  std::optional<Millis> from, to;
  if (!OptTime(a.from, "--from", &from) || !OptTime(a.to, "--to", &to)) {
    *exit_code = 1;
    return;
  }
  if (!WindowInOrder(from, to, "arbiter invoice")) {
    *exit_code = 2;
    return;
  }
  std::optional<std::string> ns;
  if (!a.ns.empty()) ns = a.ns;
  Result<std::vector<billing::Invoice>> invs = std::vector<billing::Invoice>{};
  if (warehouse::IsWarehouseUrl(a.db)) {  // a warehouse written by `arbiter ledger sync`
    auto wh = warehouse::OpenWarehouse(a.db);
    if (!wh.ok()) {
      std::cerr << "arbiter invoice: " << wh.message() << "\n";
      *exit_code = 1;
      return;
    }
    invs = billing::StoreInvoices(**wh, ns, from, to);
  } else {
    auto ledger = OpenLedger(a.db, true, exit_code);
    if (!ledger) return;
    invs = sqlite::LedgerInvoices(*ledger, ns, from, to);
  }
  if (!invs.ok()) {
    std::cerr << "arbiter invoice: " << invs.message() << "\n";
    *exit_code = 1;
    return;
  }
  if (a.output == "json") std::cout << report::InvoicesToJson(*invs).dump(2) << "\n";
  else if (a.output == "csv") PrintCsv(*invs, std::cout);
  else {
    if (invs->empty()) std::cout << "no billed usage" << (ns ? " for namespace " + *ns : "") << " in the window\n";
    PrintTable(*invs, std::cout);
  }
  *exit_code = 0;
}

void RunExport(const ExportArgs& a, int* exit_code) {
  if (a.db.empty()) {
    std::cerr << "arbiter ledger export: --db is required\n";
    *exit_code = 2;
    return;
  }
  if (a.format != "csv" && a.format != "jsonl") {
    std::cerr << "arbiter ledger export: --format must be csv or jsonl\n";
    *exit_code = 2;
    return;
  }
  sqlite::RowFilter f;
  if (!a.ns.empty()) f.namespace_ = a.ns;
  f.include_superseded = a.superseded;
  if (!OptTime(a.from, "--from", &f.from) || !OptTime(a.to, "--to", &f.to)) {
    *exit_code = 1;
    return;
  }
  if (!WindowInOrder(f.from, f.to, "arbiter ledger export")) {
    *exit_code = 2;
    return;
  }
  auto ledger = OpenLedger(a.db, true, exit_code);
  if (!ledger) return;
  std::ofstream file;
  if (!a.out.empty()) {
    file.open(a.out);
    if (!file) {
      std::cerr << "arbiter ledger export: cannot write " << a.out << "\n";
      *exit_code = 1;
      return;
    }
  }
  std::ostream& out = a.out.empty() ? std::cout : file;
  Status s = a.format == "csv" ? ledger->ExportCsv(f, out) : ledger->ExportJsonl(f, out);
  if (!s.ok()) {
    std::cerr << "arbiter ledger export: " << s.message() << "\n";
    *exit_code = 1;
    return;
  }
  *exit_code = 0;
}

}  // namespace

void RegisterInvoice(CLI::App& app, int* exit_code) {
  auto ia = std::make_shared<InvoiceArgs>();
  auto* inv = app.add_subcommand(
      "invoice",
      "Print invoices from a billing ledger (SQLite) or its warehouse copy, or ingest run segments.\n"
      "  arbiter invoice --db PATH|clickhouse://...|postgresql://... [--namespace NS] [--from T] [--to T] [-o table|csv|json]\n"
      "  arbiter invoice ingest --db PATH --segments FILE.jsonl [--pricebook FILE ...]\n"
      "Times are RFC 3339 (2026-01-01T00:00:00Z); an hour belongs to the window when it starts\n"
      "in [from, to). Amounts are exact, rounded once per line (half-up, 6 decimals).\n"
      "See docs/billing.md.");
  inv->require_subcommand(0, 1);
  inv->add_option("--db", ia->db, "Ledger database (SQLite), or a warehouse written by `ledger sync`: clickhouse://... | postgresql://...");
  inv->add_option("--namespace", ia->ns, "Only this namespace (default: every namespace)");
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
  ing->add_option("--db", ga->db, "Ledger database (SQLite); created if missing");
  ing->add_option("--segments", ga->segments, "Run segments, JSON Lines");
  ing->add_option("--pricebook", ga->pricebooks,
                  "PriceBook manifest (YAML) or JSON; repeatable (default: those in the ledger)");
  ing->add_option("--scrape-interval", ga->scrape, "Usage scrape interval (default 30s)");
  ing->add_option("--seal-before", ga->seal_before, "Seal every hour before this time (RFC 3339)");

  ing->callback([ga, exit_code] { RunIngest(*ga, exit_code); });
  inv->callback([ia, ing, exit_code] {
    if (ing->parsed()) return;
    RunInvoice(*ia, exit_code);
  });

  auto* ledger = app.add_subcommand("ledger", "Billing ledger maintenance: export, seal.");
  ledger->require_subcommand(1);
  auto ea = std::make_shared<ExportArgs>();
  auto* exp = ledger->add_subcommand(
      "export",
      "Export hourly ledger rows with FOCUS column names (BilledCost, EffectiveCost,\n"
      "ConsumedQuantity, ConsumedUnit, PricingQuantity, ResourceId, ChargePeriodStart, ...).");
  exp->add_option("--db", ea->db, "Ledger database (SQLite)");
  exp->add_option("--namespace", ea->ns, "Only this namespace");
  exp->add_option("--from", ea->from, "Window start, RFC 3339");
  exp->add_option("--to", ea->to, "Window end, RFC 3339, exclusive");
  // -o is the output *format* everywhere (as in `arbiter invoice -o csv`); the file is --out.
  exp->add_option("-o,--format", ea->format, "csv (default) or jsonl");
  exp->add_option("--out", ea->out, "Output file (default: stdout)");
  exp->add_flag("--include-superseded", ea->superseded, "Also rows replaced by a later version");
  exp->callback([ea, exit_code] { RunExport(*ea, exit_code); });

  auto sa = std::make_shared<SealArgs>();
  auto* seal = ledger->add_subcommand("seal", "Seal every hour before a time: later corrections become new versions.");
  seal->add_option("--db", sa->db, "Ledger database (SQLite)")->required();
  seal->add_option("--before", sa->before, "RFC 3339 time")->required();
  seal->callback([sa, exit_code] {
    auto t = ParseRfc3339(sa->before);
    if (!t.ok()) {
      std::cerr << "arbiter ledger seal: --before: " << t.message() << "\n";
      *exit_code = 1;
      return;
    }
    auto l = OpenLedger(sa->db, true, exit_code);
    if (!l) return;
    if (Status s = l->Seal(*t); !s.ok()) {
      std::cerr << "arbiter ledger seal: " << s.message() << "\n";
      *exit_code = 1;
      return;
    }
    std::cout << "sealed every hour before " << FormatRfc3339(*l->SealedBefore()) << "\n";
    *exit_code = 0;
  });
}

}  // namespace arbiter::app
