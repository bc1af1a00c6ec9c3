// `arbiter meter`: live metering from a real Prometheus into the billing ledger
// (docs/metering-live.md). Exit 0 success, 1 invalid input or a failed read/write, 2 usage error.
#include <sqlite3.h>

#include <filesystem>
#include <iostream>

#include "adapters/prometheus/live_meter.h"
#include "adapters/prometheus/meter_ledger.h"
#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"
#include "commands.h"
#include "ledger_write.h"
#include "price_books.h"

namespace arbiter::app {

namespace {

struct MeterArgs {
  std::string prometheus, from, to, db, config, seal_before, output = "table";
  std::vector<std::string> pricebooks;
  bool quiet = false;
};

const char* const kMeterWho = "arbiter meter";

// Prints "arbiter meter: MESSAGE" to stderr and returns `code`.
int MeterFail(const std::string& msg, int code = 1) {
  std::cerr << kMeterWho << ": " << msg << "\n";
  return code;
}

// The window [from, to) and the seal: whole hours, from before to.
struct MeterWindow {
  Millis from = 0, to = 0;
  std::optional<Millis> seal;
};

// -o, --from, --to and --seal-before: 0, or the exit code.
int ParseMeterWindow(const MeterArgs& a, MeterWindow* w) {
  if (a.output != "table" && a.output != "json") return MeterFail("-o must be table or json", 2);
  auto from = ParseRfc3339(a.from);
  if (!from.ok()) return MeterFail("--from: " + from.message());
  auto to = ParseRfc3339(a.to);
  if (!to.ok()) return MeterFail("--to: " + to.message());
  if (*to <= *from)
    return MeterFail("--from " + FormatRfc3339(*from) + " must be before --to " +
                         FormatRfc3339(*to) + ": the window [from, to) is empty or reversed",
                     2);
  if (*from % billing::kHourMs != 0 || *to % billing::kHourMs != 0)
    return MeterFail(
        "--from and --to must be whole hours (the ledger holds hourly rows), e.g. "
        "2026-01-01T05:00:00Z");
  w->from = *from;
  w->to = *to;
  if (!a.seal_before.empty()) {
    auto s = ParseRfc3339(a.seal_before);
    if (!s.ok()) return MeterFail("--seal-before: " + s.message());
    w->seal = *s;
  }
  return 0;
}

// The ledger of --db (a new file only survives a successful run), and the PriceBooks: those of
// -f, else the ledger's.
struct MeterLedger {
  std::unique_ptr<NewFileGuard> guard;
  std::unique_ptr<sqlite::Ledger> ledger;
};

// Opens --db (when given) and gathers the PriceBooks: 0, or the exit code.
int OpenLedgerAndBooks(const MeterArgs& a, MeterLedger* l, std::vector<PriceBook>* books) {
  if (!LoadPriceBookFiles(a.pricebooks, kMeterWho, books, std::cerr)) return 1;
  if (!a.db.empty()) {
    l->guard = std::make_unique<NewFileGuard>(a.db);
    if (books->empty() && !l->guard->existed())
      return MeterFail("no PriceBook given (-f) and " + a.db + " does not exist yet to hold one");
    auto opened = sqlite::Ledger::Open(a.db);
    if (!opened.ok()) return MeterFail(opened.message());
    l->ledger = std::move(opened).value();
    if (books->empty()) {
      auto stored = l->ledger->PriceBooks();
      if (!stored.ok()) return MeterFail(stored.message());
      *books = std::move(*stored);
    }
  }
  if (books->empty())
    return MeterFail("no PriceBook: give one with -f PRICEBOOK.yaml" +
                     std::string(a.db.empty() ? "" : " (none is stored in " + a.db + ")"));
  return 0;
}

// The price catalog of `books`, with a version in force at the window's start: 0, or the exit
// code.
int MakeCatalog(std::vector<PriceBook> books, Millis from,
                std::optional<billing::PriceCatalog>* out) {
  auto cat = billing::PriceCatalog::Create(std::move(books));
  if (!cat.ok()) return MeterFail(cat.message());
  if (!cat->At(from))
    return MeterFail("no PriceBook version is in force at " + FormatRfc3339(from) +
                     " (the earliest takes effect " +
                     FormatRfc3339(cat->books().front().effective_from) + ")");
  out->emplace(std::move(cat).value());
  return 0;
}

// Meters the window into the ledger, or (without one) into `rows` for the invoices printed: 0, or
// the exit code.
int MeterWindowFrom(const MeterArgs& a, const prometheus::MeteringConfig& cfg, const MeterWindow& w,
                    const billing::PriceCatalog& cat, sqlite::Ledger* ledger,
                    std::vector<billing::HourlyRow>* rows, prometheus::MeterLedgerStats* m) {
  http::Options ho;
  ho.read_timeout = cfg.timeout;
  ho.retries = cfg.retries;
  auto client = prometheus::Client::Create(a.prometheus, ho);
  if (!client.ok()) return MeterFail(client.message(), 2);
  prometheus::Progress progress;
  if (!a.quiet) progress = [](const std::string& line) { std::cerr << "meter: " << line << "\n"; };
  if (ledger) {
    auto r =
        prometheus::MeterIntoLedger(**client, cfg, cat, *ledger, w.from, w.to, w.seal, progress);
    if (!r.ok()) return MeterFail(r.message());
    *m = *r;
    return 0;
  }
  auto stats = prometheus::MeterPrometheus(
      **client, cfg, w.from, w.to,
      [&](prometheus::MeterBatch&& b) {
        for (auto& r : b.rows) rows->push_back(std::move(r));
        return Status::Ok();
      },
      progress);
  if (!stats.ok()) return MeterFail(stats.message());
  m->meter = *stats;
  return 0;
}

// The two lines of what was metered: counts, then provenance.
void PrintMeterStats(std::ostream& out, const MeterArgs& a, const MeterWindow& w,
                     const prometheus::MeterStats& stats) {
  out << "metered " << FormatRfc3339(w.from) << " .. " << FormatRfc3339(w.to) << " from "
      << a.prometheus << ": " << stats.pods << " pods, " << stats.segments << " run segments, "
      << stats.samples << " usage samples, " << stats.rows << " hourly rows (" << stats.pages
      << " pages, " << stats.requests << " HTTP requests)\n";
  out << "provenance: " << stats.usage_gaps << " usage gaps, " << stats.request_gaps
      << " bridged request gaps, " << stats.counter_resets << " counter resets, "
      << stats.outside_samples << " samples outside runs (not billed), " << stats.invalid_values
      << " invalid values, " << stats.duplicate_points
      << " duplicate series points (counted once)\n";
}

// Without --db: the invoices of the window, as a table on `out` or JSON on stdout: 0, or the exit
// code.
int PrintMeterInvoices(std::ostream& out, const MeterArgs& a, const MeterWindow& w,
                       const billing::PriceCatalog& cat,
                       const std::vector<billing::HourlyRow>& rows) {
  auto invs = billing::BuildInvoices(rows, cat, {w.from, w.to, 900});
  if (!invs.ok()) return MeterFail(invs.message());
  if (a.output == "json")
    std::cout << report::InvoicesToJson(*invs).dump(2) << "\n";
  else
    for (const auto& inv : *invs)
      out << "invoice " << inv.namespace_ << ": " << inv.total.ToFixed(billing::kAmountDigits)
          << " " << inv.currency << " (request track "
          << inv.request_total.ToFixed(billing::kAmountDigits) << ", usage track "
          << inv.usage_total.ToFixed(billing::kAmountDigits) << ")\n";
  return 0;
}

int RunMeter(const MeterArgs& a) {
  MeterWindow w;
  if (int rc = ParseMeterWindow(a, &w)) return rc;
  prometheus::MeteringConfig cfg;
  if (!a.config.empty()) {
    auto c = prometheus::LoadMeteringConfig(a.config);
    if (!c.ok()) return MeterFail(c.message());
    cfg = std::move(c).value();
  }
  MeterLedger l;
  std::vector<PriceBook> books;
  if (int rc = OpenLedgerAndBooks(a, &l, &books)) return rc;
  std::optional<billing::PriceCatalog> cat;
  if (int rc = MakeCatalog(std::move(books), w.from, &cat)) return rc;
  std::vector<billing::HourlyRow> rows;  // without --db: kept for the invoices printed
  prometheus::MeterLedgerStats m;
  if (int rc = MeterWindowFrom(a, cfg, w, *cat, l.ledger.get(), &rows, &m)) return rc;
  if (l.guard) l.guard->Keep();
  std::ostream& out = a.output == "json" && !l.ledger ? std::cerr : std::cout;
  PrintMeterStats(out, a, w, m.meter);
  if (!l.ledger) return PrintMeterInvoices(out, a, w, *cat, rows);
  out << a.db << ": " << m.written.inserted << " inserted, " << m.written.unchanged
      << " unchanged, " << m.written.replaced << " replaced, " << m.written.corrected
      << " corrected (new versions); " << m.provenance_rows << " provenance rows\n";
  return 0;
}

}  // namespace

void RegisterMeter(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<MeterArgs>();
  auto* cmd = app.add_subcommand(
      "meter",
      "Meter a window from a real Prometheus: kube-state-metrics requests and phases, cAdvisor "
      "CPU\n"
      "and memory, dcgm-exporter GPU utilisation (series, labels and units: "
      "docs/metering-live.md)\n"
      "become hourly rows with both tracks and provenance, rated with the PriceBook and written "
      "to\n"
      "the ledger. Re-running a window adds nothing; a changed sealed hour becomes a new version.\n"
      "  arbiter meter --prometheus http://127.0.0.1:9090 --from 2026-01-01T00:00:00Z \\\n"
      "                --to 2026-01-02T00:00:00Z --db ledger.db -f pricebook.yaml\n"
      "Without --db the invoices of the window are printed instead (nothing is written).");
  cmd->add_option("--prometheus", a->prometheus, "Prometheus base URL, e.g. http://127.0.0.1:9090")
      ->required();
  cmd->add_option("--from", a->from, "Window start, RFC 3339, a whole hour")->required();
  cmd->add_option("--to", a->to, "Window end, RFC 3339, a whole hour, exclusive")->required();
  cmd->add_option("--db", a->db, "Ledger database (SQLite); created if missing");
  cmd->add_option("-f,--pricebook", a->pricebooks,
                  "PriceBook manifest (YAML) or JSON; repeatable (default: those in the ledger)");
  cmd->add_option("--config", a->config,
                  "PrometheusMetering YAML: scrape interval, paging, series and label names");
  cmd->add_option("--seal-before", a->seal_before,
                  "After writing, seal every hour before this time (RFC 3339)");
  cmd->add_option("-o,--output", a->output, "Without --db: table (default) or json invoices");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress lines on stderr");
  cmd->callback([a, exit_code] { *exit_code = RunMeter(*a); });
}

}  // namespace arbiter::app
