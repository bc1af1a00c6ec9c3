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
//   arbiter_monthly      PRIMARY KEY (month, series key): per UTC calendar month (first instant,
//                        Unix ms) the sums of the current hourly rows, so that a month's invoice
//                        reads one row per series (issue 28). Each batch adds its change in its
//                        transaction: the monthly sums of its rows when all keys are new, else
//                        each staged row minus the row it replaces.
//   arbiter_schema       'monthly_rollups' once arbiter_monthly holds every month (a warehouse
//                        written before it existed is backfilled by EnsureSchema); reads use the
//                        rollups only then.
#pragma once

#include <memory>

#include "core/billing/ledger_store.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

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
  // Reads every window from the hourly rows, ignoring the monthly rollups (tests compare both
  // paths; benchmarks time both).
  void ReadHourlyOnly(bool on) { hourly_only_ = on; }

 private:
  PostgresStore(PGconn* c, std::string describe) : conn_(c), describe_(std::move(describe)) {}
  Status Error(const std::string& what);
  Status CreateTables();
  // Inside PutRows' transaction: upserts the rows and adds their change to arbiter_monthly.
  Status WriteRows(const std::vector<billing::StoredRow>& rows);
  // The upsert of rows (COPY text) some of whose keys are stored, through a staging table; stages
  // the rollups' change (each row's sums minus those of the row it replaces).
  Status UpsertStaged(const std::string& text);
  // Whether arbiter_monthly holds every month (the 'monthly_rollups' row of arbiter_schema); if
  // not, sums every month of arbiter_hourly into it and marks it.
  Result<bool> RollupsReady();
  Status BackfillRollups();
  // Appends the spans of an answer (16 columns: the key, a piece, the sums as text, the first and
  // last hour).
  Status AppendSpans(PGresult* r, std::vector<billing::RowSpan>* out);
  // COPY `text` (COPY text format) into `table`; on failure *sqlstate is the error's SQLSTATE.
  Status CopyIn(const std::string& table, const std::string& text, std::string* sqlstate);
  PGconn* conn_;
  std::string describe_;
  bool hourly_only_ = false, rollups_ready_ = false;
};

}  // namespace arbiter::postgres
