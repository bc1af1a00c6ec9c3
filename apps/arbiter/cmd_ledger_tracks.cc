// `arbiter ledger tracks --db L.db`: the ledger's table meter_tracks (where the tracks of the rows
// that `arbiter scheduler --ledger --meter-prometheus` merged came from), one line per entry with
// the request and usage of the hourly row it describes (sqlite::Ledger::ReadTrackRows).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_flags.h"
#include "commands.h"
#include "core/billing/rating.h"
#include "core/text.h"
#include "ledger_read.h"

namespace arbiter::app {

namespace {

constexpr const char* kTracks = "arbiter ledger tracks";

struct TracksArgs : LedgerWindowFlags {
  std::string output = "table";
};

// One output line: the entry's key and sources, the row's quantities in its metering unit (empty
// when the ledger has no current row of the entry's kind).
struct TrackLine {
  std::string namespace_, workload, resource, kind, gpu_product, hour, unit, request, usage,
      request_source, usage_source;
};

TrackLine LineOf(const sqlite::TrackRow& t) {
  TrackLine l{t.note.namespace_,
              t.note.workload,
              t.note.resource,
              billing::ToString(t.note.kind),
              "",
              FormatRfc3339(t.note.hour),
              t.unit,
              "",
              "",
              t.request_source,
              billing::ToString(t.note.usage)};
  if (!t.row) return l;
  const auto divisor = billing::MeterUnitOf(t.row->resource, t.row->gpu_replicas).divisor;
  l.gpu_product = t.row->gpu_product;
  l.request = billing::QuantityOf(t.row->request_raw, 1, divisor).ToString();
  l.usage = billing::QuantityOf(t.row->usage_raw, 1, divisor).ToString();
  return l;
}

std::string Csv(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

void PrintCsv(const std::vector<TrackLine>& lines, std::ostream& out) {
  out << "namespace,workload,resource,kind,gpuProduct,hour,unit,request,usage,requestSource,"
         "usageSource\n";
  for (const TrackLine& l : lines)
    out << Csv(l.namespace_) << "," << Csv(l.workload) << "," << Csv(l.resource) << "," << l.kind
        << "," << Csv(l.gpu_product) << "," << l.hour << "," << Csv(l.unit) << "," << l.request
        << "," << l.usage << "," << Csv(l.request_source) << "," << l.usage_source << "\n";
}

void PrintJson(const std::vector<TrackLine>& lines, std::ostream& out) {
  nlohmann::json a = nlohmann::json::array();
  auto text_or_null = [](const std::string& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(v);
  };
  for (const TrackLine& l : lines)
    a.push_back({{"namespace", l.namespace_},
                 {"workload", l.workload},
                 {"resource", l.resource},
                 {"kind", l.kind},
                 {"gpuProduct", l.gpu_product},
                 {"hour", l.hour},
                 {"unit", text_or_null(l.unit)},
                 {"request", text_or_null(l.request)},
                 {"usage", text_or_null(l.usage)},
                 {"requestSource", l.request_source},
                 {"usageSource", l.usage_source}});
  out << a.dump(2) << "\n";
}

void PrintTable(const std::vector<TrackLine>& lines, std::ostream& out) {
  TextTable t({{"NAMESPACE", false},
               {"WORKLOAD", false},
               {"RESOURCE", false},
               {"KIND", false},
               {"HOUR", false},
               {"UNIT", false},
               {"REQUEST", true},
               {"USAGE", true},
               {"REQUEST FROM", false},
               {"USAGE FROM", false}});
  bool missing = false;
  for (const TrackLine& l : lines) {
    missing = missing || l.unit.empty();
    t.Row({l.namespace_, l.workload,
           l.resource + (l.gpu_product.empty() ? "" : " @" + l.gpu_product), l.kind, l.hour,
           l.unit.empty() ? "-" : l.unit, l.request.empty() ? "-" : l.request,
           l.usage.empty() ? "-" : l.usage, l.request_source, l.usage_source});
  }
  t.Print(out, "", {});
  out << "REQUEST and USAGE: the hour's tracks in the row's metering unit (unit-seconds).\n";
  if (missing) out << "-: the ledger has no current row of that kind for that entry.\n";
}

int RunTracks(const TracksArgs& a) {
  if (a.output != "table" && a.output != "csv" && a.output != "json")
    return FlagError(kTracks, "-o",
                     QuotedEcho(a.output) + " is not an output format: table, csv or json");
  sqlite::RowFilter f;
  int rc = kExitOk;
  auto ledger = OpenWindow(kTracks, a, &f, &rc);
  if (!ledger) return rc;
  auto view = ledger->ReadTrackRows(f);
  if (!view.ok()) return InputError(kTracks, view.message());
  std::vector<TrackLine> lines;
  for (const sqlite::TrackRow& t : view->rows) lines.push_back(LineOf(t));
  if (a.output == "csv") {
    PrintCsv(lines, std::cout);
  } else if (a.output == "json") {
    PrintJson(lines, std::cout);
  } else if (!view->written) {
    std::cout << a.db
              << ": no merged tracks yet (only `arbiter scheduler --ledger --meter-prometheus` "
                 "writes them)\n";
  } else if (lines.empty()) {
    std::cout << a.db << ": no merged tracks"
              << (f.namespace_ ? " for namespace " + *f.namespace_ : "") << " in the window\n";
  } else {
    PrintTable(lines, std::cout);
  }
  return kExitOk;
}

}  // namespace

void RegisterLedgerTracks(CLI::App& app, int* exit_code) {
  CLI::App* ledger = app.get_subcommand("ledger");
  auto a = std::make_shared<TracksArgs>();
  auto* tracks = ledger->add_subcommand(
      "tracks",
      "Show where the tracks of merged rows came from (`arbiter scheduler --ledger\n"
      "--meter-prometheus`: the ledger table meter_tracks), one line per (namespace, workload,\n"
      "resource, kind, hour) in key order, with the request and usage of the hour's row of that\n"
      "kind (Usage, or Credit: lost work). Read-only.\n"
      "  arbiter ledger tracks --db PATH [--namespace NS] [--month YYYY-MM | --from T --to T]\n"
      "                        [-o table|csv|json]\n"
      "REQUEST and USAGE are the hourly row's tracks in its metering unit, in unit-seconds\n"
      "(core-second, GiB-second, GPU-second, replica-second, instance-second), exact decimals;\n"
      "REQUEST FROM is informers, USAGE FROM prometheus (measured), none (no series: usage 0) or\n"
      "request (nothing measures it: usage = request). A row without an entry has both tracks\n"
      "from Prometheus and is not listed. See docs/kubernetes.md, Metering.");
  tracks->footer(
      "Windows: --month YYYY-MM is that calendar month in UTC; --from/--to are RFC 3339\n"
      "(2026-01-01T00:00:00Z); an hour belongs to the window when it starts in [from, to).\n"
      "A ledger no scheduler merged tracks into prints that it has none (exit 0; csv: the header,\n"
      "json: []).\n"
      "Exit status: 0 ok, 1 invalid input (missing or damaged ledger, unknown namespace), 2 usage "
      "error.");
  tracks->add_option("--db", a->db, "Ledger database (SQLite)")->required();
  tracks->add_option("--namespace", a->ns, "Only this namespace; one the ledger has");
  tracks->add_option("--month", a->month, "Only this calendar month (UTC), e.g. 2026-01");
  tracks->add_option("--from", a->from, "Window start, RFC 3339 (default: first hour)");
  tracks->add_option("--to", a->to, "Window end, RFC 3339, exclusive (default: last hour)");
  tracks->add_option("-o,--output", a->output, "table (default), csv or json");
  tracks->callback([a, exit_code] { *exit_code = RunTracks(*a); });
}

}  // namespace arbiter::app
