// The daemon's ledger (`arbiter serve --ledger DB`) for the dashboard's bills page: a month's
// invoices with their lines (both tracks, billed quantity, unit price per hour, amount) as JSON,
// and the downloads: the invoices' CSV, the very bytes of `arbiter invoice --db DB --month M -o
// csv` (report::WriteInvoicesCsv over sqlite::LedgerInvoices, as the command), and the hourly
// rows as FOCUS CSV, those of `arbiter ledger export --db DB --month M` (Ledger::ExportCsv). Each
// call opens the ledger for reading (WAL: never in the way of the meter job writing it); call it
// outside the daemon's lock. Shape agreed with the dashboard: /work/notes/s3/ledger-api.md,
// docs/serve.md.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "core/duration.h"
#include "core/status.h"
#include "server/state/object_store.h"

namespace arbiter::server {

// Whom the bills are for: an invoice is shown when all, or when sees(namespace); the idle
// pseudo-namespace ("__idle__") only when all.
struct BillsViewer {
  bool all = true;
  std::function<bool(const std::string&)> sees;
};

// "YYYY-MM" -> [first instant of the month, first instant of the next), as `arbiter invoice
// --month`. kInvalidArgument for anything else.
Result<std::pair<Millis, Millis>> MonthWindow(const std::string& month);

// {"available": true, "months": ["2026-11", ...] (months with rows, oldest first), "month": M
// (null when the ledger has no rows), "from", "to", "sealedBefore" (or null), "meteredUntil" (the
// meter job's watermark, or null), "invoices": [report::InvoiceToJson ...]}. month "": the newest
// month with rows. Without a ledger (path ""): {"available": false, "why": ...}.
Result<Json> LedgerBills(const std::string& ledger_path, const std::string& month,
                         const BillsViewer& viewer);

// The month's invoices the viewer sees as CSV (month "": the newest with rows).
Result<std::string> LedgerBillsCsv(const std::string& ledger_path, const std::string& month,
                                   const BillsViewer& viewer);

// The month's hourly rows the viewer sees as FOCUS CSV (month "": the newest with rows): for
// all, the bytes of `arbiter ledger export --db DB --month M`; for a tenant, its namespaces'
// rows of that export (the header, then each namespace's rows in the export's order): with one
// namespace, the bytes of the same command with `--namespace NS`. No idle rows for a tenant.
Result<std::string> LedgerBillsFocusCsv(const std::string& ledger_path, const std::string& month,
                                        const BillsViewer& viewer);

}  // namespace arbiter::server
