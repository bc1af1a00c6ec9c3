#include "adapters/warehouse/warehouse.h"

#include <sqlite3.h>

#include <optional>
#include <string_view>
#include <vector>

#include "adapters/clickhouse/clickhouse_store.h"
#include "adapters/postgres/postgres_store.h"
#include "adapters/sqlite/statement.h"

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

// The ledger's key (its primary key), in its order.
constexpr const char* kKeyColumns =
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, version";

// A row's key as one text (SyncProgress::last_key): each field length-prefixed, so that any
// text round-trips.
std::string EncodeKey(const billing::StoredRow& s) {
  const billing::HourlyRow& r = s.row;
  std::string k;
  auto add = [&](const std::string& f) { k += std::to_string(f.size()) + ":" + f; };
  add(r.namespace_);
  add(r.workload);
  add(r.resource);
  add(r.gpu_product);
  add(std::to_string(r.gpu_replicas));
  add(r.kind == billing::RowKind::kCredit ? "1" : "0");
  add(r.preemptor);
  add(std::to_string(r.hour));
  add(std::to_string(s.version));
  return k;
}

// The 9 fields of an encoded key; nullopt when it is not one.
std::optional<std::vector<std::string>> DecodeKey(std::string_view k) {
  std::vector<std::string> f;
  while (!k.empty() && f.size() < 9) {
    const size_t colon = k.find(':');
    if (colon == 0 || colon > 9 || colon == std::string_view::npos) return std::nullopt;
    size_t n = 0;
    for (char c : k.substr(0, colon)) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n > k.size() - colon - 1) return std::nullopt;
    f.emplace_back(k.substr(colon + 1, n));
    k.remove_prefix(colon + 1 + n);
  }
  if (f.size() != 9 || !k.empty()) return std::nullopt;
  for (size_t i : {4, 5, 7, 8}) {  // the integer columns
    const std::string& x = f[i];
    const size_t start = !x.empty() && x[0] == '-' ? 1 : 0;
    if (x.size() <= start || x.size() > 19 + start ||
        x.find_first_not_of("0123456789", start) != std::string::npos)
      return std::nullopt;
  }
  return f;
}

// Streams current rows matching `where` in key order, in batches to `put`; `bind` binds its
// parameters.
Status Stream(sqlite3* db, const std::string& where, const std::function<void(sqlite::Stmt&)>& bind,
              size_t batch,
              const std::function<Status(std::vector<billing::StoredRow>&&, bool last)>& put) {
  std::string sql = std::string("SELECT ") + kColumns + " FROM hourly WHERE current = 1 AND " +
                    where + " ORDER BY " + kKeyColumns;
  sqlite::Stmt st(db, sql.c_str());
  if (!st.ok()) return Status::Error("ledger: read rows to sync: " + st.error());
  bind(st);
  std::vector<billing::StoredRow> rows;
  rows.reserve(batch);
  auto text = [&](int c) { return st.ColText(c); };
  int rc;
  Status status = Status::Ok();
  while ((rc = st.Step()) == SQLITE_ROW) {
    billing::StoredRow s;
    billing::HourlyRow& r = s.row;
    r.namespace_ = text(0);
    r.workload = text(1);
    r.resource = text(2);
    r.gpu_product = text(3);
    r.gpu_replicas = st.ColInt(4);
    r.kind = st.ColInt(5) == 1 ? billing::RowKind::kCredit : billing::RowKind::kUsage;
    r.preemptor = text(6);
    r.hour = st.ColInt(7);
    s.version = st.ColInt(8);
    auto req = billing::ParseI128(text(9)), use = billing::ParseI128(text(10)),
         mx = billing::ParseI128(text(11));
    if (!req.ok() || !use.ok() || !mx.ok()) {
      status = Status::Error("ledger: corrupt quantity in a row of " + r.workload);
      break;
    }
    r.request_raw = *req;
    r.usage_raw = *use;
    r.max_raw = *mx;
    r.samples = st.ColInt(12);
    r.covered_ms = st.ColInt(13);
    r.run_ms = st.ColInt(14);
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

// Whether the latest progress recorded is that of an interrupted sync this one may resume: same
// window start (from, after), a target this one's covers (seals and the change sequence only
// grow), a readable key.
bool Resumable(const billing::SyncProgress& x, const billing::SyncMark& to, Millis from,
               int64_t after) {
  return x.from == from && x.after == after && x.target_before <= to.synced_before &&
         x.target_seq <= to.seq && DecodeKey(x.last_key).has_value();
}

// Streams the window's rows (hours before to.synced_before that are >= from or changed after
// `after`) to the warehouse, resuming an interrupted sync of the same window; the last batch
// moves the mark to `to`.
Status CopyRows(sqlite::Ledger& ledger, billing::WarehouseStore& wh, const SyncOptions& opts,
                Millis from, int64_t after, const billing::SyncMark& to, SyncStats& st) {
  auto say = [&](const std::string& s) {
    if (opts.progress) opts.progress(s);
  };
  // A sync of the same window killed before its end: its committed batches are not sent again.
  auto latest = wh.ProgressOf(to.ledger);
  if (!latest.ok()) return latest.status();
  std::optional<billing::SyncProgress> resume;
  if (*latest && Resumable(**latest, to, from, after)) resume = **latest;
  std::string where = "hour < ?2 AND (hour >= ?1 OR seq > ?3)";
  if (resume) {
    where += std::string(" AND NOT (hour < ?4 AND seq <= ?5 AND (") + kKeyColumns +
             ") <= (?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))";
    st.resumed = true;
    say("resuming an interrupted sync: the rows of its committed batches are not sent again");
  }
  auto bind = [&](sqlite::Stmt& q) {
    q.Int(1, from);
    q.Int(2, to.synced_before);
    q.Int(3, after);
    if (!resume) return;
    q.Int(4, resume->target_before);
    q.Int(5, resume->target_seq);
    const auto key = DecodeKey(resume->last_key);  // checked by Resumable
    for (int k = 0; k < 9; ++k) {
      const std::string& f = (*key)[static_cast<size_t>(k)];
      if (k == 4 || k == 5 || k == 7 || k == 8)  // integer columns
        q.Int(6 + k, std::stoll(f));
      else
        q.Text(6 + k, f);
    }
  };
  // Steps go on from the latest recorded, whatever its window: the latest record is the one read.
  billing::SyncProgress progress{
      to.ledger, from, after, to.synced_before, to.seq, *latest ? (*latest)->step : 0, ""};
  const size_t batch = std::max<size_t>(1, opts.batch_rows);
  Status s = Stream(ledger.handle(), where, bind, batch,
                    [&](std::vector<billing::StoredRow>&& rows, bool last) {
                      for (const auto& r : rows) ++(r.row.hour < from ? st.late : st.rows);
                      ++st.batches;
                      if (last) return wh.PutRows(rows, to, std::nullopt);
                      ++progress.step;
                      progress.last_key = EncodeKey(rows.back());
                      Status p = wh.PutRows(rows, std::nullopt, progress);
                      if (p.ok()) say(std::to_string(st.rows + st.late) + " rows copied");
                      return p;
                    });
  return s;
}

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
  if (Status s = CopyRows(ledger, wh, opts, from, after, to, st); !s.ok()) return s;
  return st;
}

}  // namespace arbiter::warehouse
