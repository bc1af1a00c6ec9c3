// The ledger's ClickHouse warehouse, over the HTTP interface. Written for the oldest server we
// test against, Debian 12's 18.16: no DateTime64, no Map, no query parameters (values are
// escaped into the SQL text), no LowCardinality by default.
//
// Tables (created by EnsureSchema):
//   arbiter_hourly       ReplacingMergeTree(version), PARTITION BY toYYYYMM(hour), ORDER BY the
//                        ledger key: one row per key after merges, the highest version; read
//                        with FINAL, so a retried or repeated insert never counts twice.
//   arbiter_price_books  ReplacingMergeTree ORDER BY id (PriceBook versions, immutable).
//   arbiter_sync         ReplacingMergeTree(synced_before) ORDER BY id: the sync watermark.
//   arbiter_sync_ledger  ReplacingMergeTree(seq) ORDER BY ledger: per SQLite ledger id, its sync
//                        mark (watermark and change sequence number copied).
//   arbiter_monthly      ReplacingMergeTree(state) ORDER BY (month, series key): per UTC calendar
//                        month (YYYYMM) and series key, the sums of the current hourly rows, so
//                        that a month's invoice reads one row per series (issue 28). Every PutRows
//                        recomputes, after its rows are in, the months of the series it wrote
//                        from arbiter_hourly FINAL; `state` is the sum of the versions of the rows
//                        summed, which only grows as rows arrive or get new versions, so the
//                        latest recomputation wins, and a repeated one (a retry, a re-run after a
//                        kill) is the same row again.
//   arbiter_schema       ReplacingMergeTree(value) ORDER BY name: 'monthly_rollups' once
//                        arbiter_monthly holds every month of arbiter_hourly (a warehouse written
//                        before it existed is backfilled by EnsureSchema); reads use the rollups
//                        only then.
// Raw tracks are Decimal(38,0) (int128 fits: |v| < 1.7e38), summed exactly by the server.
#pragma once

#include <memory>

#include "adapters/http/http_client.h"
#include "core/billing/ledger_store.h"

namespace arbiter::clickhouse {

class ClickHouseStore : public billing::WarehouseStore {
 public:
  // clickhouse://[user[:password]@]host[:port][/database]   (HTTP port, default 8123)
  static Result<std::unique_ptr<ClickHouseStore>> Open(const std::string& url,
                                                       http::Options opts = {});
  std::string Describe() const override { return describe_; }
  Status EnsureSchema() override;
  Result<std::vector<PriceBook>> PriceBooks() override;
  Result<std::vector<billing::RowSpan>> ReadSpans(const billing::SpanQuery& q) override;
  Status PutPriceBooks(const std::vector<PriceBook>& books) override;
  Status PutRows(const std::vector<billing::StoredRow>& rows,
                 const std::optional<billing::SyncMark>& mark,
                 const std::optional<billing::SyncProgress>& progress) override;
  Result<Millis> SyncedBefore() override;
  Result<std::optional<billing::SyncMark>> MarkOf(const std::string& ledger) override;
  Result<std::optional<billing::SyncProgress>> ProgressOf(const std::string& ledger) override;
  // Runs a statement; the answer body (TabSeparated unless the SQL says otherwise).
  Result<std::string> Query(const std::string& sql, const std::string& body = {});
  // OPTIMIZE ... FINAL: merges parts (tests and benchmarks; reads are exact without it).
  Status Optimize();
  // Reads every window from the hourly rows, ignoring the monthly rollups (tests compare both
  // paths; benchmarks time both).
  void ReadHourlyOnly(bool on) { hourly_only_ = on; }

 private:
  ClickHouseStore(std::string describe, std::string db, std::unique_ptr<http::Client> c)
      : describe_(std::move(describe)), db_(std::move(db)), http_(std::move(c)) {}
  // Recomputes arbiter_monthly for the series and months of `rows` (already inserted).
  Status RefreshMonthly(const std::vector<billing::StoredRow>& rows);
  // Whether arbiter_monthly holds every month (the marker row of arbiter_schema).
  Result<bool> RollupsReady();
  // Spans of the query's answer (16 TabSeparated columns: the key, a piece, the sums, the first
  // and last hour), appended to *out.
  Status ParseSpans(std::string_view text, std::vector<billing::RowSpan>* out) const;
  std::string describe_, db_;
  std::unique_ptr<http::Client> http_;
  bool hourly_only_ = false, rollups_ready_ = false;
};

// SQL string literal: 'it''s' style escaping for ClickHouse ('\'' and '\\').
std::string Literal(const std::string& s);

}  // namespace arbiter::clickhouse
