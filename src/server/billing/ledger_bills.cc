#include "server/billing/ledger_bills.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "adapters/prometheus/meter_ledger.h"
#include "adapters/report/invoice_csv.h"
#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/ledger.h"

namespace arbiter::server {

namespace {

std::string MonthOf(Millis t) { return FormatRfc3339(t).substr(0, 7); }

std::string NextMonth(const std::string& m) {
  int y = std::stoi(m.substr(0, 4)), mon = std::stoi(m.substr(5, 2));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d", mon == 12 ? y + 1 : y, mon == 12 ? 1 : mon + 1);
  return buf;
}

// The month's invoices the viewer sees, and what the JSON says around them.
struct MonthBills {
  std::vector<std::string> months;
  std::string month;  // "" when the ledger has no rows and none was asked for
  Millis from = 0, to = 0;
  std::optional<Millis> sealed_before, metered_until;
  std::vector<billing::Invoice> invoices;
};

Result<MonthBills> Read(const std::string& path, const std::string& month,
                        const BillsViewer& viewer, bool with_invoices = true) {
  MonthBills b;
  if (!month.empty()) {
    auto w = MonthWindow(month);
    if (!w.ok()) return w.status();
    b.month = month;
    std::tie(b.from, b.to) = *w;
  }
  if (!std::filesystem::exists(path)) return b;  // nothing metered yet
  auto ledger = sqlite::Ledger::OpenForReading(path);
  if (!ledger.ok()) return ledger.status();
  auto stats = (*ledger)->Stats();
  if (!stats.ok()) return stats.status();
  if (stats->first_hour && stats->last_hour)
    for (std::string m = MonthOf(*stats->first_hour); m <= MonthOf(*stats->last_hour);
         m = NextMonth(m))
      b.months.push_back(m);
  if (stats->sealed_before != INT64_MIN) b.sealed_before = stats->sealed_before;
  auto wm = prometheus::ReadMeterWatermark((*ledger)->handle());
  if (wm.ok()) b.metered_until = *wm;
  if (b.month.empty()) {
    if (b.months.empty()) return b;
    b.month = b.months.back();
    std::tie(b.from, b.to) = *MonthWindow(b.month);
  }
  if (!with_invoices) return b;
  auto invs = sqlite::LedgerInvoices(**ledger, std::nullopt, b.from, b.to);
  if (!invs.ok()) return invs.status();
  for (auto& inv : *invs)
    if (viewer.all || (inv.namespace_ != "__idle__" && viewer.sees && viewer.sees(inv.namespace_)))
      b.invoices.push_back(std::move(inv));
  return b;
}

Json TimeOrNull(const std::optional<Millis>& t) {
  return t ? Json(FormatRfc3339(*t)) : Json(nullptr);
}

}  // namespace

Result<std::pair<Millis, Millis>> MonthWindow(const std::string& month) {
  const bool shape = month.size() == 7 && month[4] == '-' &&
                     month.find_first_not_of("0123456789") == 4 &&
                     month.find_first_not_of("0123456789", 5) == std::string::npos;
  const int year = shape ? std::stoi(month.substr(0, 4)) : 0;
  const int mon = shape ? std::stoi(month.substr(5, 2)) : 0;
  if (!shape || mon < 1 || mon > 12 || year < 1970 || year > 9998)
    return Status::InvalidArgument("month \"" + month +
                                   "\" is not a month: expected YYYY-MM (e.g. 2026-01)");
  auto from = ParseRfc3339(month + "-01T00:00:00Z");
  auto to = ParseRfc3339(NextMonth(month) + "-01T00:00:00Z");
  if (!from.ok()) return from.status();
  if (!to.ok()) return to.status();
  return std::pair<Millis, Millis>{*from, *to};
}

Result<Json> LedgerBills(const std::string& path, const std::string& month,
                         const BillsViewer& viewer) {
  if (path.empty())
    return Json{{"available", false},
                {"why",
                 "the daemon runs without a ledger (arbiter serve --ledger DB, with "
                 "--meter-prometheus URL to meter into it)"}};
  auto b = Read(path, month, viewer);
  if (!b.ok()) return b.status();
  Json out = {{"available", true},
              {"months", b->months},
              {"month", b->month.empty() ? Json(nullptr) : Json(b->month)},
              {"from", b->month.empty() ? Json(nullptr) : Json(FormatRfc3339(b->from))},
              {"to", b->month.empty() ? Json(nullptr) : Json(FormatRfc3339(b->to))},
              {"sealedBefore", TimeOrNull(b->sealed_before)},
              {"meteredUntil", TimeOrNull(b->metered_until)},
              {"invoices", report::InvoicesToJson(b->invoices)}};
  return out;
}

Result<std::string> LedgerBillsCsv(const std::string& path, const std::string& month,
                                   const BillsViewer& viewer) {
  if (path.empty())
    return Status::FailedPrecondition("the daemon runs without a ledger (arbiter serve --ledger)");
  auto b = Read(path, month, viewer);
  if (!b.ok()) return b.status();
  std::ostringstream out;
  report::WriteInvoicesCsv(b->invoices, out);
  return out.str();
}

Result<std::string> LedgerBillsFocusCsv(const std::string& path, const std::string& month,
                                        const BillsViewer& viewer) {
  if (path.empty())
    return Status::FailedPrecondition("the daemon runs without a ledger (arbiter serve --ledger)");
  auto b = Read(path, month, viewer, /*with_invoices=*/false);
  if (!b.ok()) return b.status();
  std::string header;
  for (const std::string& c : sqlite::FocusColumns()) header += (header.empty() ? "" : ",") + c;
  header += "\n";
  if (b->month.empty() || !std::filesystem::exists(path)) return header;  // no rows
  auto ledger = sqlite::Ledger::OpenForReading(path);
  if (!ledger.ok()) return ledger.status();
  sqlite::RowFilter f;
  f.from = b->from;
  f.to = b->to;
  std::ostringstream out;
  if (viewer.all) {
    if (Status s = (*ledger)->ExportCsv(f, out); !s.ok()) return s;
    return out.str();
  }
  // The export is ordered by namespace first: each visible namespace's rows, without its header.
  auto names = (*ledger)->Namespaces();
  if (!names.ok()) return names.status();
  out << header;
  for (const std::string& ns : *names) {
    if (ns == billing::kIdleNamespace || !viewer.sees || !viewer.sees(ns)) continue;
    f.namespace_ = ns;
    std::ostringstream one;
    if (Status s = (*ledger)->ExportCsv(f, one); !s.ok()) return s;
    out << one.str().substr(header.size());
  }
  return out.str();
}

}  // namespace arbiter::server
