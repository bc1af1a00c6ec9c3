// LedgerStore: the seam between billing and where the hourly ledger lives. The embedded default
// is SQLite (adapters/sqlite); at scale the sealed hours are copied to a warehouse, ClickHouse or
// PostgreSQL (adapters/clickhouse, adapters/postgres), by `arbiter ledger sync`. Invoices are the
// same, byte for byte, from any store holding the same current rows (StoreInvoices).
//
// A store holds, per ledger key (namespace, workload, resource, gpu_product, gpu_replicas, kind,
// preemptor, hour), the current version of the row: a row with a higher version replaces it,
// one with the same or a lower version changes nothing, so writing is idempotent and can be
// repeated after any failure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/billing/invoice.h"

namespace arbiter::billing {

// One ledger row as stored: the hourly row, its version and its rating (for exports and
// analysts; invoices re-rate from the raw tracks).
struct StoredRow {
  HourlyRow row;
  int64_t version = 1;
  std::string unit;
  RatedRow rated;
};

// Current rows of hours [from, to) (and one namespace), summed per ledger series key (the key
// without hour) and per piece of the window between consecutive `cuts` (PriceBook versions taking
// effect inside the window, sorted): one RowSpan per key and piece, sum.hour its first hour with
// a row and last_hour the last.
struct SpanQuery {
  std::optional<std::string> namespace_;
  std::optional<Millis> from, to;
  std::vector<Millis> cuts;
};

// For stores that keep monthly rollups (sums per UTC calendar month and series key): the part of
// a query's window read from them, the whole months in it, [first, end) (unbounded where the
// window is), except those in which a PriceBook version takes effect after the month's first
// instant (`split`: a span lies in one version). The rest of the window is read from the hourly
// rows: before `first` when the window starts earlier (`before`), from `end` when it ends later
// (`after`), and the split months. `any`: the window holds a whole month.
struct MonthPlan {
  std::optional<Millis> first, end;
  std::vector<Millis> split;
  bool any = false, before = false, after = false;
  bool NeedsHourlyRows() const { return !any || before || after || !split.empty(); }
};
MonthPlan PlanWholeMonths(const SpanQuery& q);

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  virtual std::string Describe() const = 0;  // "clickhouse://127.0.0.1:18123/default"
  virtual Result<std::vector<PriceBook>> PriceBooks() = 0;
  virtual Result<std::vector<RowSpan>> ReadSpans(const SpanQuery& q) = 0;
};

// How far a warehouse holds one SQLite ledger (by its id): every current row of the hours before
// `synced_before`, and every change of the ledger's change sequence up to `seq` in those hours.
struct SyncMark {
  std::string ledger;
  Millis synced_before = INT64_MIN;
  int64_t seq = 0;
};

// A sync under way (issue 28: a killed sync resumes from its last committed batch). The sync from
// the mark (from, after) towards (target_before, target_seq) copies rows in the ledger's key
// order; every row of its window with a key up to `last_key` (encoded by the sync) is in the
// warehouse. `step` grows with every batch of every sync, so the latest record is the one kept.
struct SyncProgress {
  std::string ledger;
  Millis from = INT64_MIN;  // the window's mark: hours >= from, or rows with seq > after
  int64_t after = -1;
  Millis target_before = INT64_MIN;  // and hours < target_before, as of change target_seq
  int64_t target_seq = 0;
  int64_t step = 0;
  std::string last_key;
};

// A store that `arbiter ledger sync` copies sealed hours into.
class WarehouseStore : public LedgerStore {
 public:
  virtual Status EnsureSchema() = 0;
  // Stores PriceBook versions; a stored version never changes (a different text for a stored id
  // is an error).
  virtual Status PutPriceBooks(const std::vector<PriceBook>& books) = 0;
  // Upserts rows by key (the higher version wins) and, when given, then moves the ledger's sync
  // mark (each field only forward) and the warehouse's watermark (SyncedBefore) to
  // mark->synced_before, or records a sync's progress. Idempotent; PostgreSQL does it all in one
  // transaction, ClickHouse (no transactions) writes the rows first.
  virtual Status PutRows(const std::vector<StoredRow>& rows, const std::optional<SyncMark>& mark,
                         const std::optional<SyncProgress>& progress) = 0;
  // Every sealed hour before it has been copied from some ledger; INT64_MIN when nothing was.
  virtual Result<Millis> SyncedBefore() = 0;
  // The sync mark of the ledger with this id; nullopt when it was never synced here.
  virtual Result<std::optional<SyncMark>> MarkOf(const std::string& ledger) = 0;
  // The latest progress recorded for the ledger with this id (nullopt: none).
  virtual Result<std::optional<SyncProgress>> ProgressOf(const std::string& ledger) = 0;
};

// Invoices for a namespace (or all) and window from a store: like the SQLite ledger's, spreading
// idle cost over every tenant of the window when a PriceBook says shareIdle.
Result<std::vector<Invoice>> StoreInvoices(LedgerStore& store,
                                           const std::optional<std::string>& namespace_,
                                           std::optional<Millis> from, std::optional<Millis> to);

// Sums rows (sorted by HourlyRow::KeyLess, current only) into spans per key and piece of `cuts`.
std::vector<RowSpan> SpansOfRows(std::vector<HourlyRow> rows, const std::vector<Millis>& cuts);

}  // namespace arbiter::billing
