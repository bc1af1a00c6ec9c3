// Invoices: hourly rows of one namespace, rated line by line, with both tracks, credits,
// provenance and a SHA-256 digest of their inputs.
//
// A line groups rows with the same (kind, resource, gpu product, gpu replicas, PriceBook version,
// preemptor);
// its amount is Σ billed raw × unit price / (divisor × 3600), exact, rounded once half-up to 6
// decimals. The invoice total is the sum of its rounded lines; requestTotal / usageTotal are the
// same sums had every line been billed on the request / usage track.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/billing/rating.h"

namespace arbiter::billing {

inline constexpr int kAmountDigits = 6;

struct InvoiceLine {
  RowKind kind = RowKind::kUsage;
  std::string resource;
  std::string unit;          // metering unit: core-second, GiB-second, GPU-second, instance-second
  std::string gpu_product;   // GPU and MIG lines
  int64_t gpu_replicas = 1;  // nvidia.com/gpu on a time-sliced / MPS node: replicas per card
  std::string price_book;    // PriceBookId of the version the rows' hours were billed with
  std::string preemptor;     // credit lines
  BillingMode mode = BillingMode::kMax;
  UnitPrice price;
  // Exact raw sums (canonical unit × ms); billed = billed_num / billed_den. Credits are negative.
  i128 request_raw = 0, usage_raw = 0, billed_num = 0, billed_den = 1;
  Decimal request_quantity, usage_quantity, billed_quantity;  // metering unit, 9 decimals
  Decimal amount;                                             // 6 decimals, the only rounding step
  Decimal request_amount;  // had this line been billed on the request track (6 decimals)
  Decimal usage_amount;    // ... on the usage track
  // Provenance of the usage track.
  int64_t samples = 0;
  Millis covered_ms = 0, run_ms = 0;
  int64_t workloads = 0;  // distinct workloads in the line
  // IdleShare lines (no quantities): this tenant's part of an idle line's amount, apportioned
  // by `share_rule` with weight share_weight / share_weight_total.
  std::optional<IdleSharing> share_rule;
  Decimal idle_amount;  // the idle line's whole amount (6 decimals)
  i128 share_weight = 0,
       share_weight_total = 0;  // Weighted: Decimal units of billed cost; Even: 1 / tenants
  Decimal unit_price() const { return price.unit_price; }
};

// Usage-track provenance of one workload and resource over the invoice window.
// Provenance views its workload's name in its Invoice's `names`: a copy must not outlive the
// invoice (copy the invoice, which shares them).
struct Provenance {
  std::string_view workload;  // in Invoice::names, once for all of the workload's resources
  std::string resource;
  int64_t samples = 0;
  Millis covered_ms = 0;
  Millis run_ms = 0;
  bool low_coverage = false;  // covered < threshold × run (an estimate with a large error)
  // Nothing measured the usage of some of its time: the usage track there is the request track
  // (a Slurm run without step usage, a time-sliced / MPS GPU replica, a MIG instance without a
  // utilisation series). Recognised from the rows: covered time without any sample.
  bool usage_from_request = false;
};

struct Invoice {
  std::string namespace_;
  std::string currency;
  Millis from = 0, to = 0;               // hours [from, to) billed
  std::vector<std::string> price_books;  // versions used, in effective order
  std::vector<InvoiceLine> lines;        // usage lines, credit lines, then idle share lines, sorted
  Decimal request_total, usage_total, total, credit_total;  // 6 decimals
  // Tenants: the sum of their IdleShare lines. The idle invoice: how much of it was spread.
  Decimal idle_share_total;
  // Sorted by workload, resource. A deque: a million workloads' entries grow without a vector's
  // doubling, which held the old and the new array at once (3x the entries at the peak).
  std::deque<Provenance> provenance;
  // The workload names `provenance` views, each kept once (shared by copies of the invoice).
  std::shared_ptr<const std::deque<std::string>> names;
  std::string digest;             // "sha256:<hex>" of the canonical inputs
  std::string Canonical() const;  // the text the digest is computed over
  // The same text in pieces of about 64 KiB (a million provenance lines are never one string).
  void WriteCanonical(const std::function<void(std::string_view)>& out) const;
};

struct InvoiceOptions {
  std::optional<Millis> from;  // rows whose hour starts in [from, to); none: unbounded
  std::optional<Millis> to;
  int64_t low_coverage_permille = 900;
};

// One invoice per namespace present in `rows`, sorted by namespace. Rows need not be sorted or
// merged. Fails when an hour has no PriceBook in force or the versions used disagree on currency.
//
// Rows of the idle pseudo-namespace (kIdleNamespace, see IdleRows) give the "__idle__" invoice,
// billed in Request mode. When the PriceBook version of an idle line says shareIdle Weighted or
// Even, its amount is spread to the tenant invoices as IdleShare lines (SpreadIdle below),
// before digests are taken; tenants' totals include them.
Result<std::vector<Invoice>> BuildInvoices(const std::vector<HourlyRow>& rows,
                                           const PriceCatalog& catalog,
                                           const InvoiceOptions& opts = {});

// BuildInvoices in parts, for callers that meter one namespace at a time and never hold every
// row (a simulation of a million workloads): Add the rows of some namespaces (all rows of a
// namespace in one call), then Finish. Same invoices, byte for byte, as BuildInvoices over the
// union of the rows.
class InvoiceBuilder {
 public:
  InvoiceBuilder(const PriceCatalog& catalog, InvoiceOptions opts);
  InvoiceBuilder(InvoiceBuilder&&) noexcept;
  ~InvoiceBuilder();
  Status Add(const std::vector<HourlyRow>& rows);
  // One namespace's rows in parts, so that they are never all held at once: AddPart the parts one
  // after another, then EndParts builds the invoice(s) of the namespace(s) they held. The rows of
  // the parts, taken in order, must be in key order (HourlyRow::KeyLess): a workload's rows all
  // in one part, the parts in workload order. The invoices are those Add builds from the union.
  Status AddPart(const std::vector<HourlyRow>& rows);
  Status EndParts();
  // Takes over the invoices `other` built (from other namespaces: a namespace in both is an
  // error). Builders that took disjoint namespaces, one per thread of a caller, combine into
  // one; Finish does not depend on the order of the Adds.
  Status Absorb(InvoiceBuilder&& other);
  Result<std::vector<Invoice>> Finish();

 private:
  struct Open;  // the accumulated parts (invoice.cc)
  Status Close(Open& acc);
  const PriceCatalog& catalog_;
  InvoiceOptions opts_;
  std::vector<Invoice> invoices_;
  std::unique_ptr<Open> open_;
};

// A run of hourly rows of one key, summed (request, usage, max, samples, covered, run), for
// readers that aggregate before rating (the ledger's daily rollups): sum.hour is the first
// hour, last_hour the last. The rows of a span must lie in one PriceBook version and in the
// window. Billing is linear in the raw tracks per version, so the invoices of spans are the
// invoices of their rows, byte for byte.
struct RowSpan {
  HourlyRow sum;
  Millis last_hour = 0;
};
Result<std::vector<Invoice>> BuildInvoicesFromSpans(const std::vector<RowSpan>& spans,
                                                    const PriceCatalog& catalog,
                                                    const InvoiceOptions& opts = {});

// One call for a simulation or any caller holding segments: meters them with `cfg` (use the
// PoolPolicy's scrape interval; its low-coverage threshold overrides opts'), builds the catalog
// from `books` and the invoices. No books: no
// invoices (an empty list), since nothing can be priced.
Result<std::vector<Invoice>> InvoiceSegments(const std::vector<RunSegment>& segments,
                                             const std::vector<PriceBook>& books,
                                             const MeterConfig& cfg = {},
                                             const InvoiceOptions& opts = {});

// Idle cost: capacity of each node not covered by any segment's requests, per resource and
// hour, priced like a Request-mode line. Reported as an invoice for the pseudo-namespace
// "__idle__"; billed to tenants only when the PriceBook spreads it (shareIdle).
struct NodeCapacity {
  std::string node;
  std::string gpu_product;
  ResourceList allocatable;
  Millis from = 0, to = 0;   // when the node was in the pool
  int64_t gpu_replicas = 1;  // nvidia.com/gpu.replicas: allocatable GPUs are replicas
};
// Hourly rows of the idle capacity in [from, to): namespace kIdleNamespace, workload = node,
// request_raw = max_raw = allocatable minus the segments' requests on the node (never below 0).
Result<std::vector<HourlyRow>> IdleRows(const std::vector<NodeCapacity>& nodes,
                                        const std::vector<RunSegment>& segments, Millis from,
                                        Millis to);
// The same from what IdleRows reads of a segment, without a segment: `use(i)` for i in
// [0, uses) gives the i-th one's node, requests and interval (a caller with a million runs need
// not copy them into segments). The node name and requests must outlive the call.
struct IdleUse {
  std::string_view node;
  const ResourceList* requests = nullptr;
  Millis start = 0, end = 0;
};
Result<std::vector<HourlyRow>> IdleRows(const std::vector<NodeCapacity>& nodes, size_t uses,
                                        const std::function<IdleUse(size_t)>& use, Millis from,
                                        Millis to);
// The "__idle__" invoice of IdleRows over [from, to), not spread.
Result<Invoice> BuildIdleInvoice(const std::vector<NodeCapacity>& nodes,
                                 const std::vector<RunSegment>& segments,
                                 const PriceCatalog& catalog, Millis from, Millis to);

// Spreads the idle invoice's lines over the tenant invoices (all of `invoices` but the idle
// one), per line by its PriceBook version's shareIdle:
//   Weighted: in proportion to each tenant's billed cost of the same resource under the same
//             version (the sum of its Usage line amounts; credits do not count);
//   Even:     equally among the tenants with any Usage line under that version.
// Shares are apportioned in millionths by largest remainder (ties: namespace name), so the
// IdleShare lines of one idle line add up to its amount exactly. A line nobody carries weight
// for stays unspread. Recomputes tenant totals; digests must be taken afterwards.
void SpreadIdle(std::vector<Invoice>* invoices, const PriceCatalog& catalog);

}  // namespace arbiter::billing
