// Bills a simulation: turns the engine's run records into billing segments on an absolute clock
// (virtual time 0 = the epoch) and prices them with the manifests' PriceBooks.
#pragma once

#include <nlohmann/json.hpp>

#include "core/billing/invoice.h"
#include "sim/simulator.h"

namespace arbiter::sim {

// Default epoch: the earliest PriceBook effectiveFrom, else 2026-01-01T00:00:00Z.
Millis DefaultEpoch(const ManifestSet& m);

std::vector<billing::RunSegment> SegmentsOf(const driver::SimResult& r, Millis epoch);

struct SimBill {
  std::vector<billing::Invoice> invoices;  // one per namespace; empty without a PriceBook
  std::optional<billing::Invoice> idle;    // the pool's unallocated capacity, priced
  // What the invoices were built from (and what `arbiter sim --ledger` writes): the tenants'
  // hourly rows and the idle capacity's ("__idle__"), and the invoice window, the whole hours
  // the simulation covers: [epoch floored to the hour, end ceiled to the hour).
  std::vector<billing::HourlyRow> rows;
  Millis from = 0, to = 0;
};
// Every invoice (tenants and idle) covers the simulation window; idle cost is spread to the
// tenants when the PriceBook says shareIdle. Without `keep_rows`, `rows` stays empty and the
// namespaces are metered one at a time (the same invoices, in a fraction of the memory), on
// `threads` threads: the idle capacity and each namespace are metered and invoiced on whichever
// thread takes them; the invoices are the same bytes for any number of threads. A namespace is
// metered `part_runs` runs at a time (rounded up to a workload's last run): the same invoices for
// any part size.
inline constexpr size_t kBillPartRuns = 8192;
Result<SimBill> BillSimulation(const ManifestSet& m, const driver::SimResult& r, Millis epoch,
                               bool keep_rows = true, int threads = 1,
                               size_t part_runs = kBillPartRuns);

// invoices[] of the report (tenant invoices, then the "__idle__" one when present).
nlohmann::json BillJson(const SimBill& bill);

// The summary's invoice lines ("  invoice team-a: ... CNY (request track ..."), or that nothing
// was billed when `has_price_books` is false.
std::string BillText(const SimBill& bill, bool has_price_books);

}  // namespace arbiter::sim
