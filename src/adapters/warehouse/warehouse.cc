#include "adapters/warehouse/warehouse.h"

#include <sqlite3.h>

#include "adapters/clickhouse/clickhouse_store.h"
#include "adapters/postgres/postgres_store.h"

namespace arbiter::warehouse {

bool IsWarehouseUrl(const std::string& s) {
  for (const char* p : {"clickhouse://", "postgresql://", "postgres://"})
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

Result<std::unique_ptr<billing::WarehouseStore>> OpenWarehouse(const std::string& url) {
  using R = Result<std::unique_ptr<billing::WarehouseStore>>;
  if (url.rfind("clickhouse://", 0) == 0) {
    http::Options o;
    o.read_timeout = 300000;  // a month's aggregation or a large insert
    auto s = clickhouse::ClickHouseStore::Open(url, o);
    if (!s.ok()) return s.status();
    return std::unique_ptr<billing::WarehouseStore>(std::move(s).value());
  }
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    auto s = postgres::PostgresStore::Open(url);
    if (!s.ok()) return s.status();
    return std::unique_ptr<billing::WarehouseStore>(std::move(s).value());
  }
  return R::Error("unknown warehouse URL \"" + url +
                  "\": expected clickhouse://HOST:PORT[/DB] or postgresql://...");
}

namespace {

constexpr const char* kColumns =
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, version,"
    " request_raw, usage_raw, max_raw, samples, covered_ms, run_ms, unit, price_book, currency, "
    "mode,"
    " unit_price, billed_quantity, amount";

// Streams current rows matching `where` (with ?1, ?2, ?3 bound to a, b, c) in batches to `put`.
Status Stream(sqlite3* db, const std::string& where, Millis a, Millis b, int64_t c, size_t batch,
              const std::function<Status(std::vector<billing::StoredRow>&&, bool last)>& put) {
  std::string sql =
      std::string("SELECT ") + kColumns + " FROM hourly WHERE current = 1 AND " + where;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    return Status::Error(std::string("ledger: read rows to sync: ") + sqlite3_errmsg(db));
  sqlite3_bind_int64(st, 1, a);
  sqlite3_bind_int64(st, 2, b);
  sqlite3_bind_int64(st, 3, c);
  std::vector<billing::StoredRow> rows;
  rows.reserve(batch);
  auto text = [&](int c) {
    const unsigned char* t = sqlite3_column_text(st, c);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(st, c)))
             : std::string();
  };
  int rc;
  Status status = Status::Ok();
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    billing::StoredRow s;
    billing::HourlyRow& r = s.row;
    r.namespace_ = text(0);
    r.workload = text(1);
    r.resource = text(2);
    r.gpu_product = text(3);
    r.gpu_replicas = sqlite3_column_int64(st, 4);
    r.kind =
        sqlite3_column_int64(st, 5) == 1 ? billing::RowKind::kCredit : billing::RowKind::kUsage;
    r.preemptor = text(6);
    r.hour = sqlite3_column_int64(st, 7);
    s.version = sqlite3_column_int64(st, 8);
    auto req = billing::ParseI128(text(9)), use = billing::ParseI128(text(10)),
         mx = billing::ParseI128(text(11));
    if (!req.ok() || !use.ok() || !mx.ok()) {
      status = Status::Error("ledger: corrupt quantity in a row of " + r.workload);
      break;
    }
    r.request_raw = *req;
    r.usage_raw = *use;
    r.max_raw = *mx;
    r.samples = sqlite3_column_int64(st, 12);
    r.covered_ms = sqlite3_column_int64(st, 13);
    r.run_ms = sqlite3_column_int64(st, 14);
    s.unit = text(15);
    s.rated.price_book = text(16);
    s.rated.currency = text(17);
    std::string mode = text(18);
    for (BillingMode m :
         {BillingMode::kRequest, BillingMode::kUsage, BillingMode::kMax, BillingMode::kBlended})
      if (mode == ToString(m)) s.rated.mode = m;
    auto up = Decimal::Parse(text(19)), bq = Decimal::Parse(text(20)),
         am = Decimal::Parse(text(21));
    if (!up.ok() || !bq.ok() || !am.ok()) {
      status = Status::Error("ledger: corrupt rating in a row of " + r.workload);
      break;
    }
    s.rated.unit_price = *up;
    s.rated.billed_quantity = *bq;
    s.rated.amount = *am;
    rows.push_back(std::move(s));
    if (rows.size() >= batch) {
      status = put(std::move(rows), false);
      rows.clear();
      rows.reserve(batch);
      if (!status.ok()) break;
    }
  }
  if (status.ok() && rc != SQLITE_DONE)
    status = Status::Error(std::string("ledger: read rows to sync: ") + sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (!status.ok()) return status;
  return put(std::move(rows), true);
}

// One read transaction around a sync's reads of the ledger: its watermark, change sequence and
// rows are one snapshot (WAL), whatever writers commit meanwhile.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(sqlite3* db) : db_(db) {
    ok_ = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~ReadSnapshot() {
    if (ok_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  bool ok() const { return ok_; }

 private:
  sqlite3* db_;
  bool ok_;
};

}  // namespace

Result<SyncStats> SyncLedger(sqlite::Ledger& ledger, billing::WarehouseStore& wh,
                             const SyncOptions& opts) {
  SyncStats st;
  auto say = [&](const std::string& s) {
    if (opts.progress) opts.progress(s);
  };
  ReadSnapshot snapshot(ledger.handle());
  if (!snapshot.ok())
    return Status::Error(std::string("ledger: begin reading: ") + sqlite3_errmsg(ledger.handle()));
  auto sealed = ledger.SealedBefore();
  if (!sealed.ok()) return sealed.status();
  st.sealed_before = *sealed;
  auto changes = ledger.Changes();
  if (!changes.ok()) return changes.status();
  if (Status s = wh.EnsureSchema(); !s.ok()) return s;
  auto books = ledger.PriceBooks();
  if (!books.ok()) return books.status();
  if (Status s = wh.PutPriceBooks(*books); !s.ok()) return s;
  st.price_books = static_cast<int64_t>(books->size());
  auto mark = wh.MarkOf(changes->ledger_id);
  if (!mark.ok()) return mark.status();
  if (*mark) {
    st.synced_before_was = (*mark)->synced_before;
    st.seq_was = (*mark)->seq;
  }
  st.seq = changes->last_seq;
  if (*sealed == INT64_MIN) {
    say("nothing is sealed in the ledger yet (arbiter ledger seal): nothing to copy");
    return st;
  }
  if (*mark && (*mark)->synced_before >= *sealed && (*mark)->seq >= changes->last_seq) {
    say("the warehouse is up to date (sealed before " + FormatRfc3339(*sealed) + ", change " +
        std::to_string(changes->last_seq) + ")");
    return st;
  }
  // What to copy: every current row of the hours sealed since the last sync ([from, sealed)),
  // and the rows of hours copied before (< from) that changed after it (seq > the mark's): new
  // versions and new keys alike. A warehouse that never saw this ledger gets every sealed hour.
  const Millis from = *mark ? std::min((*mark)->synced_before, *sealed) : INT64_MIN;
  const int64_t after = *mark ? (*mark)->seq : -1;
  const billing::SyncMark to{changes->ledger_id, *sealed, changes->last_seq};
  const size_t batch = std::max<size_t>(1, opts.batch_rows);
  Status s = Stream(ledger.handle(), "hour < ?2 AND (hour >= ?1 OR seq > ?3)", from, *sealed, after,
                    batch, [&](std::vector<billing::StoredRow>&& rows, bool last) {
                      for (const auto& r : rows) ++(r.row.hour < from ? st.late : st.rows);
                      ++st.batches;
                      Status p = wh.PutRows(rows, last ? std::optional(to) : std::nullopt);
                      if (p.ok() && !last) say(std::to_string(st.rows + st.late) + " rows copied");
                      return p;
                    });
  if (!s.ok()) return s;
  return st;
}

}  // namespace arbiter::warehouse
