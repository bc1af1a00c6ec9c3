// Invoices as CSV: one line per invoice line, the bytes `arbiter invoice -o csv` prints (and the
// daemon's bills download, server/billing/ledger_bills.h). Columns: namespace, currency, kind,
// resource, gpuModel, unit, mode, priceBook, requestQuantity, usageQuantity, billedQuantity
// (unit-seconds), unitPrice (per unit-hour), amount (6 decimals), preemptor, digest. Fields with a
// comma, quote or newline are quoted (RFC 4180).
#pragma once

#include <ostream>
#include <vector>

#include "core/billing/invoice.h"

namespace arbiter::report {

void WriteInvoicesCsv(const std::vector<billing::Invoice>& invoices, std::ostream& out);

}  // namespace arbiter::report
