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

void RunMeter(const MeterArgs& a, int* exit_code) {
  const std::string who = "arbiter meter";
  auto fail = [&](const std::string& msg, int code = 1) {
    std::cerr << who << ": " << msg << "\n";
    *exit_code = code;
  };
  if (a.output != "table" && a.output != "json") return fail("-o must be table or json", 2);
  auto from = ParseRfc3339(a.from);
  if (!from.ok()) return fail("--from: " + from.message());
  auto to = ParseRfc3339(a.to);
  if (!to.ok()) return fail("--to: " + to.message());
  if (*to <= *from)
    return fail("--from " + FormatRfc3339(*from) + " must be before --to " + FormatRfc3339(*to) +
                    ": the window [from, to) is empty or reversed",
                2);
  if (*from % billing::kHourMs != 0 || *to % billing::kHourMs != 0)
    return fail(
        "--from and --to must be whole hours (the ledger holds hourly rows), e.g. "
        "2026-01-01T05:00:00Z");
  std::optional<Millis> seal;
  if (!a.seal_before.empty()) {
    auto s = ParseRfc3339(a.seal_before);
    if (!s.ok()) return fail("--seal-before: " + s.message());
    seal = *s;
  }
  prometheus::MeteringConfig cfg;
  if (!a.config.empty()) {
    auto c = prometheus::LoadMeteringConfig(a.config);
    if (!c.ok()) return fail(c.message());
    cfg = std::move(c).value();
  }
  std::vector<PriceBook> books;
  if (!LoadPriceBookFiles(a.pricebooks, who, &books, std::cerr)) {
    *exit_code = 1;
    return;
  }
  // The ledger: books from it when none are given; a new file only survives a successful run.
  std::unique_ptr<NewFileGuard> guard;
  std::unique_ptr<sqlite::Ledger> ledger;
  if (!a.db.empty()) {
    guard = std::make_unique<NewFileGuard>(a.db);
    if (books.empty() && !guard->existed())
      return fail("no PriceBook given (-f) and " + a.db + " does not exist yet to hold one");
    auto l = sqlite::Ledger::Open(a.db);
    if (!l.ok()) return fail(l.message());
    ledger = std::move(l).value();
    if (books.empty()) {
      auto stored = ledger->PriceBooks();
      if (!stored.ok()) return fail(stored.message());
      books = std::move(*stored);
    }
  }
  if (books.empty())
    return fail("no PriceBook: give one with -f PRICEBOOK.yaml" +
                std::string(a.db.empty() ? "" : " (none is stored in " + a.db + ")"));
  auto cat = billing::PriceCatalog::Create(std::move(books));
  if (!cat.ok()) return fail(cat.message());
  if (!cat->At(*from))
    return fail("no PriceBook version is in force at " + FormatRfc3339(*from) +
                " (the earliest takes effect " +
                FormatRfc3339(cat->books().front().effective_from) + ")");
  http::Options ho;
  ho.read_timeout = cfg.timeout;
  ho.retries = cfg.retries;
  auto client = prometheus::Client::Create(a.prometheus, ho);
  if (!client.ok()) return fail(client.message(), 2);

  prometheus::Progress progress;
  if (!a.quiet) progress = [](const std::string& line) { std::cerr << "meter: " << line << "\n"; };
  std::vector<billing::HourlyRow> all;  // without --db: kept for the invoices printed
  prometheus::MeterLedgerStats m;
  if (ledger) {
    auto r = prometheus::MeterIntoLedger(**client, cfg, *cat, *ledger, *from, *to, seal, progress);
    if (!r.ok()) return fail(r.message());
    m = *r;
  } else {
    auto stats = prometheus::MeterPrometheus(
        **client, cfg, *from, *to,
        [&](prometheus::MeterBatch&& b) {
          for (auto& r : b.rows) all.push_back(std::move(r));
          return Status::Ok();
        },
        progress);
    if (!stats.ok()) return fail(stats.message());
    m.meter = *stats;
  }
  const prometheus::MeterStats* stats = &m.meter;
  const sqlite::WriteStats& total = m.written;
  const int64_t prov_rows = m.provenance_rows;
  if (guard) guard->Keep();
  std::ostream& out = a.output == "json" && !ledger ? std::cerr : std::cout;
  out << "metered " << FormatRfc3339(*from) << " .. " << FormatRfc3339(*to) << " from "
      << a.prometheus << ": " << stats->pods << " pods, " << stats->segments << " run segments, "
      << stats->samples << " usage samples, " << stats->rows << " hourly rows (" << stats->pages
      << " pages, " << stats->requests << " HTTP requests)\n";
  out << "provenance: " << stats->usage_gaps << " usage gaps, " << stats->request_gaps
      << " bridged request gaps, " << stats->counter_resets << " counter resets, "
      << stats->outside_samples << " samples outside runs (not billed), " << stats->invalid_values
      << " invalid values, " << stats->duplicate_points
      << " duplicate series points (counted once)\n";
  if (ledger) {
    out << a.db << ": " << total.inserted << " inserted, " << total.unchanged << " unchanged, "
        << total.replaced << " replaced, " << total.corrected << " corrected (new versions); "
        << prov_rows << " provenance rows\n";
  } else {
    auto invs = billing::BuildInvoices(all, *cat, {*from, *to, 900});
    if (!invs.ok()) return fail(invs.message());
    if (a.output == "json")
      std::cout << report::InvoicesToJson(*invs).dump(2) << "\n";
    else
      for (const auto& inv : *invs)
        out << "invoice " << inv.namespace_ << ": " << inv.total.ToFixed(billing::kAmountDigits)
            << " " << inv.currency << " (request track "
            << inv.request_total.ToFixed(billing::kAmountDigits) << ", usage track "
            << inv.usage_total.ToFixed(billing::kAmountDigits) << ")\n";
  }
  *exit_code = 0;
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
  cmd->callback([a, exit_code] { RunMeter(*a, exit_code); });
}

}  // namespace arbiter::app
