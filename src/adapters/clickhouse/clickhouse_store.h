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

 private:
  ClickHouseStore(std::string describe, std::string db, std::unique_ptr<http::Client> c)
      : describe_(std::move(describe)), db_(std::move(db)), http_(std::move(c)) {}
  std::string describe_, db_;
  std::unique_ptr<http::Client> http_;
};

// SQL string literal: 'it''s' style escaping for ClickHouse ('\'' and '\\').
std::string Literal(const std::string& s);

}  // namespace arbiter::clickhouse
