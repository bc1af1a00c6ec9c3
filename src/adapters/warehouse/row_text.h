// The text form in which both warehouses take ledger rows in bulk: one line per stored hourly row,
// fields separated by tabs — ClickHouse's TabSeparated input and PostgreSQL's COPY text format,
// which escape a field's tab, newline, carriage return and backslash the same way.
#pragma once

#include <string>
#include <string_view>

#include "core/billing/ledger_store.h"

namespace arbiter::warehouse {

// Appends `s` with \t, \n, \r and \\ escaped as both formats read them back.
void AppendEscapedField(std::string* out, std::string_view s);

// How the hour column is written: ClickHouse's DateTime holds whole seconds since 1970,
// PostgreSQL's bigint column milliseconds (the ledger's own unit).
enum class HourColumn { kSeconds, kMillis };

// Appends one line for `row` in the column order of the arbiter_hourly tables: namespace,
// workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, version, request_raw,
// usage_raw, max_raw, samples, covered_ms, run_ms, unit, price_book, currency, mode, unit_price,
// billed_quantity, amount. Under kSeconds the row's hour must be a whole second (the caller
// checks).
void AppendHourlyRow(std::string* out, const billing::StoredRow& row, HourColumn hour);

}  // namespace arbiter::warehouse
