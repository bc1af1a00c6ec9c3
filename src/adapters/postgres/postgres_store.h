// The ledger's PostgreSQL warehouse, over libpq (Debian's libpq-dev).
//
// Tables (created by EnsureSchema):
//   arbiter_hourly       PRIMARY KEY the ledger key; raw tracks numeric(40,0); hour in Unix ms
//                        (as in the SQLite ledger). Rows are upserted with
//                        INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE the stored version is
//                        not newer, from a COPY into a temporary staging table (a batch whose keys
//                        are all new is COPied straight into the table).
//   arbiter_price_books  id PRIMARY KEY (PriceBook versions, immutable).
//   arbiter_sync         the sync watermark, moved in the same transaction as the rows.
//   arbiter_sync_ledger  ledger id PRIMARY KEY: its sync mark (watermark, change sequence number),
//                        moved in the same transaction as the rows.
#pragma once

#include <memory>

#include "core/billing/ledger_store.h"

typedef struct pg_conn PGconn;

namespace arbiter::postgres {

class PostgresStore : public billing::WarehouseStore {
 public:
  // postgresql://[user[:password]@]host[:port]/database[?...] (any libpq connection URI)
  static Result<std::unique_ptr<PostgresStore>> Open(const std::string& url);
  ~PostgresStore() override;
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
  Status Exec(const std::string& sql);

 private:
  PostgresStore(PGconn* c, std::string describe) : conn_(c), describe_(std::move(describe)) {}
  Status Error(const std::string& what);
  // COPY `text` (COPY text format) into `table`; on failure *sqlstate is the error's SQLSTATE.
  Status CopyIn(const std::string& table, const std::string& text, std::string* sqlstate);
  PGconn* conn_;
  std::string describe_;
};

}  // namespace arbiter::postgres
