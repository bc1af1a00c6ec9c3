#include "adapters/sqlite/ledger.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "adapters/io/input_file.h"
#include "adapters/report/invoice_json.h"
#include "adapters/sqlite/statement.h"
#include "core/text.h"

namespace arbiter::sqlite {

using billing::HourlyRow;
using billing::i128;
using billing::RowKind;

namespace {

// Schema 5: hourly rows keyed with gpu_replicas (time-sliced / MPS GPUs, schema 2), daily
// rollups of the current rows (schema 3), a change sequence number per row (schema 4: `seq`,
// meta.last_seq and meta.ledger_id, for `arbiter ledger sync`) and monthly rollups (schema 5,
// issue 28: a month's invoice reads a row per series, not per series and day). Older ledgers are
// migrated on open: schema-1 rows get gpu_replicas = 1, rows of schemas 1-3 get seq = 0, and the
// rollups are rebuilt from the hourly rows. Schema 6: meter_tracks keyed with the row kind.
constexpr int kSchemaVersion = 6;
constexpr Millis kDayMs = 24 * billing::kHourMs;
const char* kHourlyColumns =
    "namespace TEXT NOT NULL, workload TEXT NOT NULL, resource TEXT NOT NULL,"
    " gpu_product TEXT NOT NULL, gpu_replicas INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " preemptor TEXT NOT NULL, hour INTEGER NOT NULL, version INTEGER NOT NULL, current INTEGER "
    "NOT NULL,"
    " request_raw TEXT NOT NULL, usage_raw TEXT NOT NULL, max_raw TEXT NOT NULL,"
    " samples INTEGER NOT NULL, covered_ms INTEGER NOT NULL, run_ms INTEGER NOT NULL,"
    " unit TEXT NOT NULL, price_book TEXT NOT NULL, currency TEXT NOT NULL, mode TEXT NOT NULL,"
    " unit_price TEXT NOT NULL, billed_quantity TEXT NOT NULL, amount TEXT NOT NULL,"
    " seq INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, "
    "version)";

// A new ledger's id (meta.ledger_id): 128 random bits in hex. A warehouse keeps its sync
// position per ledger id, so that another ledger synced into it is copied whole.
std::string NewLedgerId() {
  std::random_device rd;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    id += buf;
  }
  return id;
}

std::string Schema() {
  return std::string(R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ')sql") +
         std::to_string(kSchemaVersion) + R"sql(');
INSERT OR IGNORE INTO meta(key, value) VALUES ('ledger_id', ')sql" +
         NewLedgerId() + R"sql(');
INSERT OR IGNORE INTO meta(key, value) VALUES ('last_seq', '0');
CREATE TABLE IF NOT EXISTS price_books(
  id TEXT PRIMARY KEY,
  effective_from INTEGER NOT NULL,
  canonical TEXT NOT NULL,
  json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hourly()sql" +
         kHourlyColumns + R"sql() WITHOUT ROWID;
-- Daily rollups of the current hourly rows (UTC days), maintained by every write in the same
-- transaction: invoices read whole days here and only partial days from hourly.
CREATE TABLE IF NOT EXISTS daily(
  namespace TEXT NOT NULL, workload TEXT NOT NULL, resource TEXT NOT NULL,
  gpu_product TEXT NOT NULL, gpu_replicas INTEGER NOT NULL, kind INTEGER NOT NULL,
  preemptor TEXT NOT NULL, day INTEGER NOT NULL,
  request_raw TEXT NOT NULL, usage_raw TEXT NOT NULL, max_raw TEXT NOT NULL,
  samples INTEGER NOT NULL, covered_ms INTEGER NOT NULL, run_ms INTEGER NOT NULL,
  min_hour INTEGER NOT NULL, max_hour INTEGER NOT NULL,
  PRIMARY KEY(namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, day)
) WITHOUT ROWID;
-- Monthly rollups (UTC calendar months, `month` its first ms), maintained like the daily ones:
-- keyed month first, so that a month is one range of rows in key order.
CREATE TABLE IF NOT EXISTS monthly(
  month INTEGER NOT NULL,
  namespace TEXT NOT NULL, workload TEXT NOT NULL, resource TEXT NOT NULL,
  gpu_product TEXT NOT NULL, gpu_replicas INTEGER NOT NULL, kind INTEGER NOT NULL,
  preemptor TEXT NOT NULL,
  request_raw TEXT NOT NULL, usage_raw TEXT NOT NULL, max_raw TEXT NOT NULL,
  samples INTEGER NOT NULL, covered_ms INTEGER NOT NULL, run_ms INTEGER NOT NULL,
  min_hour INTEGER NOT NULL, max_hour INTEGER NOT NULL,
  PRIMARY KEY(month, namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor)
) WITHOUT ROWID;
-- The days of a window outside its whole months are a range of this index (it holds every
-- column: one range scan), its partial days a range of the next: reading a window costs what
-- the window holds, not what the ledger holds.
CREATE INDEX IF NOT EXISTS daily_by_day ON daily(day, namespace, workload, resource, gpu_product,
  gpu_replicas, kind, preemptor, request_raw, usage_raw, max_raw, samples, covered_ms, run_ms,
  min_hour, max_hour);
CREATE INDEX IF NOT EXISTS hourly_by_hour ON hourly(hour);
)sql";
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(n);
}

// True when the ledger's -wal file holds frames while no connection has the ledger open: the last
// connection did not close (a killed writer, a machine that stopped), and the next one recovers
// the WAL. Every open connection holds a shared lock on byte 128 of the -shm file (SQLite's "dead
// man switch", UNIX_SHM_DMS); an open file description lock test sees it, this process's too.
bool LeftUnclean(const std::string& path) {
  if (FileBytes(path + "-wal") <= 0) return false;
  const int fd = ::open((path + "-shm").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // frames and no -shm: nobody has it open
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  lk.l_start = 128;
  lk.l_len = 1;
  const bool live = ::fcntl(fd, F_OFD_GETLK, &lk) == 0 && lk.l_type != F_UNLCK;
  ::close(fd);
  return !live;
}

Millis DayOf(Millis t) {
  Millis d = t / kDayMs;
  if (t % kDayMs < 0) --d;
  return d * kDayMs;
}

// meter_tracks (created by the first PutTracks): one entry per merged row, keyed as the row but
// for its GPU product, replicas and preemptor (schema 6 added `kind`).
constexpr const char* kCreateTracks =
    "CREATE TABLE IF NOT EXISTS meter_tracks(namespace TEXT NOT NULL, workload TEXT NOT NULL,"
    " resource TEXT NOT NULL, kind INTEGER NOT NULL, hour INTEGER NOT NULL,"
    " request TEXT NOT NULL, usage TEXT NOT NULL,"
    " PRIMARY KEY(namespace, workload, resource, kind, hour)) WITHOUT ROWID";

// Whether the ledger has the table meter_tracks (PutTracks creates it with its first entries).
Result<bool> HasTracksTable(sqlite3* db) {
  Stmt exists(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meter_tracks'");
  if (!exists.ok()) return Status::Error("ledger: read meter_tracks: " + exists.error());
  return exists.Step() == SQLITE_ROW;
}

// Schemas 1-5 -> 6: meter_tracks keyed with the row kind. Its entries had one per (namespace,
// workload, resource, hour), shown with that key's Usage row: kind 0 (Usage).
std::string MigrateTracksSql() {
  return std::string("ALTER TABLE meter_tracks RENAME TO meter_tracks_v5;") + kCreateTracks +
         ";INSERT INTO meter_tracks SELECT namespace, workload, resource, 0, hour, request, usage"
         " FROM meter_tracks_v5;"
         "DROP TABLE meter_tracks_v5;";
}

// Schema 1 -> 2: the key gains gpu_replicas (1 for every existing row).
std::string MigrateV1Sql() {
  return std::string(
             "ALTER TABLE hourly RENAME TO hourly_v1;"
             "CREATE TABLE hourly(") +
         kHourlyColumns +
         ") WITHOUT ROWID;"
         "INSERT INTO hourly SELECT namespace, workload, resource, gpu_product, 1, kind, preemptor,"
         " hour, version, current, request_raw, usage_raw, max_raw, samples, covered_ms, run_ms,"
         " unit, price_book, currency, mode, unit_price, billed_quantity, amount, 0 FROM hourly_v1;"
         "DROP TABLE hourly_v1;";
}

// An SQLite error; a page found damaged on the way (SQLite checks every page it reads) says where
// the full check is.
Status SqlError(sqlite3* db, const std::string& what) {
  std::string m = "ledger: " + what + ": " + sqlite3_errmsg(db);
  const int code = sqlite3_errcode(db) & 0xff;
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
    const char* file = sqlite3_db_filename(db, "main");
    m += " (the ledger is damaged where this read looked; `arbiter ledger check --db " +
         std::string(file && *file ? file : "LEDGER") + "` lists the problems)";
  }
  return Status::Error(m);
}

// WHERE / ORDER BY of a filtered read of `hourly` (after "... FROM hourly WHERE 1=1"), and its
// parameters; shared by the detailed and the lean read.
std::string FilterSql(const RowFilter& f) {
  std::string sql;
  if (f.namespace_) sql += " AND namespace = ?1";
  if (f.from) sql += " AND hour >= ?2";
  if (f.to) sql += " AND hour < ?3";
  if (!f.include_superseded) sql += " AND current = 1";
  sql +=
      " ORDER BY namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour, "
      "version";
  return sql;
}
void BindFilter(Stmt& s, const RowFilter& f) {
  if (f.namespace_) s.Text(1, *f.namespace_);
  if (f.from) s.Int(2, *f.from);
  if (f.to) s.Int(3, *f.to);
}

// Binds the 8 key columns at positions 1..8.
void BindKey(Stmt& s, const HourlyRow& r) {
  s.Text(1, r.namespace_);
  s.Text(2, r.workload);
  s.Text(3, r.resource);
  s.Text(4, r.gpu_product);
  s.Int(5, r.gpu_replicas);
  s.Int(6, static_cast<int64_t>(r.kind));
  s.Text(7, r.preemptor);
  s.Int(8, r.hour);
}

struct Content {
  std::string req, use, max, unit, book, currency, mode, unit_price, billed, amount;
  int64_t samples, covered, run;
};

// Rates rows like billing::RateRow, caching what depends only on (version, namespace,
// resource, gpu product): the same numbers, without re-resolving prices for every row.
class RowRater {
 public:
  explicit RowRater(const billing::PriceCatalog& c) : catalog_(c) {}

  Content Rate(const HourlyRow& r) {
    int book = catalog_.IndexAt(r.hour);
    if (!(have_ && book == book_ && r.resource == resource_ && r.gpu_product == product_ &&
          r.gpu_replicas == replicas_ && r.namespace_ == ns_)) {
      have_ = true;
      book_ = book;
      resource_ = r.resource;
      product_ = r.gpu_product;
      replicas_ = r.gpu_replicas;
      ns_ = r.namespace_;
      unit_ = billing::MeterUnitOf(r.resource, r.gpu_replicas);
      if (book >= 0) {
        const PriceBook& b = catalog_.books()[static_cast<size_t>(book)];
        id_ = billing::PriceBookId(b);
        currency_ = b.currency;
        mode_ = billing::ModeFor(b, r.namespace_);
        weight_ = b.blended_request_weight;
        credit_ = b.preemption_credit;
        price_ = billing::ResolvePrice(b, r.resource, r.gpu_product, r.gpu_replicas);
        price_text_ = billing::DecimalUnitsToString(price_.unit_price.units());
      } else {
        id_.clear();
        currency_.clear();
        price_ = billing::UnitPrice{};
        price_text_ = "0";
      }
    }
    Content c;
    c.req = billing::I128ToString(r.request_raw);
    c.use = billing::I128ToString(r.usage_raw);
    c.max = billing::I128ToString(r.max_raw);
    c.unit = unit_.unit;
    c.book = id_;
    c.currency = currency_;
    c.samples = r.samples;
    c.covered = r.covered_ms;
    c.run = r.run_ms;
    c.unit_price = price_text_;
    if (book_ < 0) {
      c.billed = billing::DecimalUnitsToString(
          billing::QuantityOf(r.request_raw, 1, unit_.divisor).units());
      c.amount = "0";
      return c;
    }
    c.mode = ToString(mode_);
    billing::Billed billed = billing::BilledOf(r, mode_, weight_, unit_.gpu);
    if (r.kind == RowKind::kCredit) billed.num = credit_ == CreditPolicy::kNone ? 0 : -billed.num;
    c.billed = billing::DecimalUnitsToString(
        billing::QuantityOf(billed.num, billed.den, unit_.divisor).units());
    c.amount = billing::DecimalUnitsToString(
        billing::AmountOf(billed.num, billed.den, price_, unit_.divisor, Decimal::kScale).units());
    return c;
  }

 private:
  const billing::PriceCatalog& catalog_;
  bool have_ = false;
  int book_ = -1;
  int64_t replicas_ = 1;
  std::string resource_, product_, ns_, id_, currency_, price_text_;
  billing::MeterUnit unit_;
  BillingMode mode_ = BillingMode::kMax;
  Decimal weight_;
  CreditPolicy credit_ = CreditPolicy::kLostWork;
  billing::UnitPrice price_;
};

// Binds content at positions from..from+12.
void BindContent(Stmt& s, int from, const Content& c) {
  s.Text(from, c.req);
  s.Text(from + 1, c.use);
  s.Text(from + 2, c.max);
  s.Int(from + 3, c.samples);
  s.Int(from + 4, c.covered);
  s.Int(from + 5, c.run);
  s.Text(from + 6, c.unit);
  s.Text(from + 7, c.book);
  s.Text(from + 8, c.currency);
  s.Text(from + 9, c.mode);
  s.Text(from + 10, c.unit_price);
  s.Text(from + 11, c.billed);
  s.Text(from + 12, c.amount);
}

// Adds the stored int128 text `t` times `sign` to *acc; false when the text is corrupt.
bool AddStored(const std::string& t, int sign, i128* acc) {
  auto v = billing::ParseI128(t);
  if (!v.ok()) return false;
  *acc += sign * *v;
  return true;
}

// A rollup table: `daily` by UTC day or `monthly` by UTC calendar month.
struct Rollup {
  const char* table;
  const char* column;
  Millis (*bucket_of)(Millis hour);
};
const Rollup kDaily{"daily", "day", &DayOf};
const Rollup kMonthly{"monthly", "month", &MonthStartOf};

// Keeps a rollup table equal to the sums of the current hourly rows: Add() takes the change of
// one hourly row (new content minus old), consecutive changes of one key and bucket are summed in
// memory, Flush() adds them to the stored bucket.
class RollupWriter {
 public:
  RollupWriter(sqlite3* db, const Rollup& r)
      : db_(db),
        rollup_(r),
        get_(db, (std::string("SELECT request_raw, usage_raw, max_raw, samples, covered_ms, "
                              "run_ms, min_hour, max_hour FROM ") +
                  r.table +
                  " WHERE namespace=?1 AND workload=?2 AND resource=?3 AND gpu_product=?4"
                  " AND gpu_replicas=?5 AND kind=?6 AND preemptor=?7 AND " +
                  r.column + "=?8")
                     .c_str()),
        put_(db, (std::string("INSERT OR REPLACE INTO ") + r.table +
                  "(namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, " +
                  r.column +
                  ", request_raw, usage_raw, max_raw, samples, covered_ms, run_ms, min_hour, "
                  "max_hour) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)")
                     .c_str()) {}
  bool ok() const { return get_.ok() && put_.ok(); }

  // delta.hour is the hour of the changed row; its raw tracks and counts are the change.
  Status Add(const HourlyRow& delta) {
    Millis day = rollup_.bucket_of(delta.hour);
    if (have_ && !(day == day_ && SameSeries(acc_, delta)))
      if (Status s = Flush(); !s.ok()) return s;
    if (!have_) {
      acc_ = delta;
      acc_.request_raw = acc_.usage_raw = acc_.max_raw = 0;
      acc_.samples = acc_.covered_ms = acc_.run_ms = 0;
      day_ = day;
      min_hour_ = max_hour_ = delta.hour;
      have_ = true;
    }
    acc_.AddQuantities(delta);
    min_hour_ = std::min(min_hour_, delta.hour);
    max_hour_ = std::max(max_hour_, delta.hour);
    return Status::Ok();
  }

  Status Flush() {
    if (!have_) return Status::Ok();
    have_ = false;
    HourlyRow& a = acc_;
    acc_.hour = day_;
    get_.Reset();
    BindDayKey(get_, a);
    int rc = get_.Step();
    if (rc == SQLITE_ROW) {
      if (!AddStored(get_.ColText(0), 1, &a.request_raw) ||
          !AddStored(get_.ColText(1), 1, &a.usage_raw) ||
          !AddStored(get_.ColText(2), 1, &a.max_raw))
        return Status::Error(std::string("ledger: corrupt quantity in the ") + rollup_.table +
                             " rollup of " + a.workload);
      a.samples += get_.ColInt(3);
      a.covered_ms += get_.ColInt(4);
      a.run_ms += get_.ColInt(5);
      min_hour_ = std::min(min_hour_, get_.ColInt(6));
      max_hour_ = std::max(max_hour_, get_.ColInt(7));
    } else if (rc != SQLITE_DONE) {
      return SqlError(db_, std::string("read ") + rollup_.table + " rollup of " + a.workload);
    }
    put_.Reset();
    BindDayKey(put_, a);
    put_.Text(9, billing::I128ToString(a.request_raw));
    put_.Text(10, billing::I128ToString(a.usage_raw));
    put_.Text(11, billing::I128ToString(a.max_raw));
    put_.Int(12, a.samples);
    put_.Int(13, a.covered_ms);
    put_.Int(14, a.run_ms);
    put_.Int(15, min_hour_);
    put_.Int(16, max_hour_);
    if (put_.Step() != SQLITE_DONE)
      return SqlError(db_, std::string("write ") + rollup_.table + " rollup of " + a.workload);
    return Status::Ok();
  }

 private:
  static bool SameSeries(const HourlyRow& a, const HourlyRow& b) {
    return a.kind == b.kind && a.gpu_replicas == b.gpu_replicas && a.resource == b.resource &&
           a.workload == b.workload && a.namespace_ == b.namespace_ &&
           a.gpu_product == b.gpu_product && a.preemptor == b.preemptor;
  }
  // The key with the day in place of the hour (acc_.hour holds the day when bound).
  static void BindDayKey(Stmt& s, const HourlyRow& r) { BindKey(s, r); }  // hour = day

  sqlite3* db_;
  Rollup rollup_;
  Stmt get_, put_;
  HourlyRow acc_;
  Millis day_ = 0, min_hour_ = 0, max_hour_ = 0;
  bool have_ = false;
};

// Both rollup tables, kept together.
class DailyWriter {
 public:
  explicit DailyWriter(sqlite3* db) : daily_(db, kDaily), monthly_(db, kMonthly) {}
  bool ok() const { return daily_.ok() && monthly_.ok(); }
  Status Add(const HourlyRow& delta) {
    if (Status s = daily_.Add(delta); !s.ok()) return s;
    return monthly_.Add(delta);
  }
  Status Flush() {
    if (Status s = daily_.Flush(); !s.ok()) return s;
    return monthly_.Flush();
  }

 private:
  RollupWriter daily_, monthly_;
};

Result<Millis> ReadWatermark(sqlite3* db) {
  Stmt s(db, "SELECT value FROM meta WHERE key = 'sealed_before'");
  if (!s.ok()) return SqlError(db, "read seal watermark");
  if (s.Step() == SQLITE_ROW) {
    const std::string t = s.ColText(0);
    Millis v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size())
      return Status::Error("ledger: the seal watermark is damaged (" + QuotedEcho(t, 40) + ")");
    return v;
  }
  return Millis{INT64_MIN};
}

Status WriteWatermark(sqlite3* db, Millis before) {
  auto cur = ReadWatermark(db);
  if (!cur.ok()) return cur.status();
  if (before <= *cur) return Status::Ok();
  Stmt s(db,
         "INSERT INTO meta(key, value) VALUES ('sealed_before', ?1) "
         "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!s.ok()) return SqlError(db, "write seal watermark");
  s.Text(1, std::to_string(before));
  if (s.Step() != SQLITE_DONE) return SqlError(db, "write seal watermark");
  return Status::Ok();
}

Status WriteMeta(sqlite3* db, const char* key, const std::string& value) {
  Stmt s(db,
         "INSERT INTO meta(key, value) VALUES (?1, ?2) "
         "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (!s.ok()) return SqlError(db, std::string("write meta.") + key);
  s.Text(1, key);
  s.Text(2, value);
  if (s.Step() != SQLITE_DONE) return SqlError(db, std::string("write meta.") + key);
  return Status::Ok();
}

// meta.last_seq: the last change sequence number given to a row (0: none yet).
Result<int64_t> ReadLastSeq(sqlite3* db) {
  Stmt s(db, "SELECT value FROM meta WHERE key = 'last_seq'");
  if (!s.ok()) return SqlError(db, "read change sequence");
  if (s.Step() != SQLITE_ROW) return int64_t{0};
  const std::string t = s.ColText(0);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || v < 0)
    return Status::Error("ledger: the change sequence is damaged (" + QuotedEcho(t, 40) + ")");
  return v;
}

// The row columns both invoice readers select, in this order: namespace, workload, resource,
// gpu_product, gpu_replicas, kind, preemptor, request_raw, usage_raw, max_raw, samples,
// covered_ms, run_ms (columns 0-12). Strings equal to the previous row's are copied from it
// (consecutive rows mostly share them). False when a stored quantity is corrupt.
constexpr const char* kRowColumns =
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor,"
    " request_raw, usage_raw, max_raw, samples, covered_ms, run_ms";
bool ReadRowColumns(Stmt& s, const HourlyRow* prev, HourlyRow* r) {
  auto view = [&](int col) {
    const unsigned char* t = sqlite3_column_text(s.get(), col);
    return std::string_view(t ? reinterpret_cast<const char*>(t) : "",
                            static_cast<size_t>(sqlite3_column_bytes(s.get(), col)));
  };
  auto text = [&](int col, std::string* dst, const std::string* p) {
    const std::string_view v = view(col);
    if (p && *p == v)
      *dst = *p;
    else
      dst->assign(v);
  };
  text(0, &r->namespace_, prev ? &prev->namespace_ : nullptr);
  text(1, &r->workload, prev ? &prev->workload : nullptr);
  text(2, &r->resource, prev ? &prev->resource : nullptr);
  text(3, &r->gpu_product, prev ? &prev->gpu_product : nullptr);
  r->gpu_replicas = s.ColInt(4);
  r->kind = s.ColInt(5) == 1 ? RowKind::kCredit : RowKind::kUsage;
  text(6, &r->preemptor, prev ? &prev->preemptor : nullptr);
  i128* dst[3] = {&r->request_raw, &r->usage_raw, &r->max_raw};
  for (int k = 0; k < 3; ++k) {
    auto v = billing::ParseI128(view(7 + k));
    if (!v.ok()) return false;
    *dst[k] = *v;
  }
  r->samples = s.ColInt(10);
  r->covered_ms = s.ColInt(11);
  r->run_ms = s.ColInt(12);
  return true;
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::Open(const std::string& path) {
  const bool unclean = LeftUnclean(path);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Result<std::unique_ptr<Ledger>>::Error("ledger: cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 10000);
  std::unique_ptr<Ledger> l(new Ledger(db));
  for (const char* sql : {"PRAGMA cell_size_check=ON", "PRAGMA journal_mode=WAL",
                          "PRAGMA synchronous=FULL", "PRAGMA cache_size=-131072"})
    if (Status s = l->Exec(sql); !s.ok())
      return Result<std::unique_ptr<Ledger>>::Error(s.message() + " (" + path + ")");
  if (unclean)
    if (Status s = l->CheckAfterUncleanShutdown(path); !s.ok()) return s;
  if (Status s = l->Migrate(); !s.ok())
    return Result<std::unique_ptr<Ledger>>::Error(s.message() + " (" + path + ")");
  return l;
}

namespace {

// A path as an SQLite URI ("file:" + the path with %, ? and # escaped).
std::string FileUri(const std::string& path, const char* query) {
  std::string u = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      static const char* kHex = "0123456789ABCDEF";
      u += '%';
      u += kHex[c >> 4];
      u += kHex[c & 15];
    } else {
      u += static_cast<char>(c);
    }
  }
  return u + "?" + query;
}

// How to open a ledger for reading: SQLite flags, the URI and whether to set query_only.
struct ReadOpenMode {
  int flags = SQLITE_OPEN_URI;
  std::string uri;
  bool query_only = false;
};

// Which way to open, so that reading leaves no file behind and never fails for lack of write
// access (SQLite's WAL mode needs a -shm file next to the database to read it):
//  - writable file (and a -shm there or creatable): read-write with query_only, so that the last
//    connection to close removes the -wal and -shm files it created (a read-only connection would
//    leave them, owned by the reader);
//  - a -shm exists (a writer is at work, or crashed): read-only through it;
//  - otherwise the file holds every commit (no -wal, or an empty one): read it as immutable,
//    creating nothing (the case of a read-only file or directory).
Result<ReadOpenMode> ReadOpenModeOf(const std::string& path, bool file_writable, bool dir_writable,
                                    bool has_shm, int64_t wal_bytes) {
  ReadOpenMode m;
  if (file_writable && (dir_writable || has_shm)) {
    m.flags |= SQLITE_OPEN_READWRITE;
    m.uri = FileUri(path, "mode=rw");
    m.query_only = true;
  } else if (has_shm) {
    m.flags |= SQLITE_OPEN_READONLY;
    m.uri = FileUri(path, "mode=ro");
  } else if (wal_bytes <= 0) {
    m.flags |= SQLITE_OPEN_READONLY;
    m.uri = FileUri(path, "mode=ro&immutable=1");
  } else {
    return Result<ReadOpenMode>::Error(
        "ledger: cannot read " + path + ": " + path +
        "-wal holds commits that are not in the ledger file yet, and reading them "
        "needs write access "
        "to the ledger (open it once with an account that can write it)");
  }
  return m;
}

// meta.schema of a ledger opened for reading (-1 when absent); an error when it has no tables.
Result<int> ReadSchemaVersion(sqlite3* db, const std::string& path) {
  int version = -1;
  Stmt v(db, "SELECT value FROM meta WHERE key = 'schema'");
  if (!v.ok()) {
    const std::string err = sqlite3_errmsg(db);
    if (err.find("no such table") != std::string::npos)
      return Result<int>::Error(
          "ledger: " + path + " is not an Arbiter ledger (an SQLite database without its tables)");
    return Result<int>::Error("ledger: cannot read " + path + ": " + err);
  }
  if (v.Step() == SQLITE_ROW) version = std::atoi(v.ColText(0).c_str());
  return version;
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::OpenForReading(const std::string& path, OpenCheck check) {
  using R = Result<std::unique_ptr<Ledger>>;
  if (std::string why = io::WhyNotReadable(path); !why.empty() || path == "-")
    return R::Error("ledger: cannot open " + path + ": " +
                    (path == "-" ? "a ledger cannot be read from stdin" : why));
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const bool file_writable = ::access(path.c_str(), W_OK) == 0;
  const bool dir_writable = ::access(dir.c_str(), W_OK) == 0;
  const bool has_shm = FileBytes(path + "-shm") >= 0;
  const int64_t wal_bytes = FileBytes(path + "-wal");
  const bool unclean = LeftUnclean(path);
  auto mode = ReadOpenModeOf(path, file_writable, dir_writable, has_shm, wal_bytes);
  if (!mode.ok()) return mode.status();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(mode->uri.c_str(), &db, mode->flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return R::Error("ledger: cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 10000);
  std::unique_ptr<Ledger> l(new Ledger(db));
  if (mode->query_only)
    if (Status s = l->Exec("PRAGMA query_only=1"); !s.ok())
      return R::Error(s.message() + " (" + path + ")");
  if (Status s = l->Exec("PRAGMA cell_size_check=ON"); !s.ok())
    return R::Error(s.message() + " (" + path + ")");
  if (unclean) {
    if (check == OpenCheck::kAfterUncleanShutdown) {
      if (Status s = l->CheckAfterUncleanShutdown(path); !s.ok()) return s;
    } else {
      l->KeepWal();  // unchecked: the next open still finds the WAL and checks
    }
  }
  {
    // A database without any table: a new ledger whose first write was killed before it committed
    // (docs/billing.md). It is read as the empty ledger it is: an in-memory one with the schema.
    Stmt t(db, "SELECT count(*) FROM sqlite_master");
    if (t.ok() && t.Step() == SQLITE_ROW && t.ColInt(0) == 0) {
      l.reset();
      sqlite3* mem = nullptr;
      if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        sqlite3_close(mem);
        return R::Error("ledger: cannot open " + path + ": out of memory");
      }
      std::unique_ptr<Ledger> empty(new Ledger(mem));
      if (Status st = empty->Exec(Schema().c_str()); !st.ok()) return st;
      if (Status st = empty->Exec("PRAGMA query_only=1"); !st.ok()) return st;
      empty->uncommitted_ = true;
      return empty;
    }
  }
  auto schema = ReadSchemaVersion(db, path);
  if (!schema.ok()) return schema.status();
  const int version = *schema;
  if (version > kSchemaVersion)
    return R::Error("ledger: " + path + ": schema " + std::to_string(version) +
                    " was written by a newer arbiter (this one reads schema " +
                    std::to_string(kSchemaVersion) + ")");
  if (version < kSchemaVersion) {
    // An older ledger is upgraded on its first open with write access (one transaction).
    if (!file_writable)
      return R::Error("ledger: " + path + ": schema " + std::to_string(version) +
                      " needs an upgrade to schema " + std::to_string(kSchemaVersion) +
                      ", and the ledger is read-only (open it once with write access)");
    l.reset();
    return Open(path);
  }
  return l;
}

void Ledger::KeepWal() {
  int keep = 1;
  sqlite3_file_control(db_, "main", SQLITE_FCNTL_PERSIST_WAL, &keep);
}

Status Ledger::CheckAfterUncleanShutdown(const std::string& path) {
  checked_at_open_ = true;
  auto problems = CheckIntegrity(/*full=*/false, 3);
  if (problems.ok() && problems->empty()) return Status::Ok();
  KeepWal();  // the evidence stays: every later open checks again
  return Status::Error(
      "ledger " + path + " is damaged (PRAGMA quick_check after an unclean shutdown: " +
      (problems.ok() ? problems->front() : problems.message()) +
      "); nothing was read from it. `arbiter ledger check --db " + path +
      "` lists the problems; restore the ledger from a backup, or ingest its segments again into "
      "a new one");
}

Result<std::vector<std::string>> Ledger::CheckIntegrity(bool full, size_t max_lines) {
  const std::string sql = std::string(full ? "PRAGMA integrity_check(" : "PRAGMA quick_check(") +
                          std::to_string(std::max<size_t>(1, max_lines)) + ")";
  Stmt s(db_, sql.c_str());
  if (!s.ok())
    return Result<std::vector<std::string>>::Error("ledger: " + std::string(sqlite3_errmsg(db_)));
  std::vector<std::string> problems;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    // One line per problem: SQLite's rows may hold several lines and a "*** in database main ***"
    // heading.
    std::string text = s.ColText(0), line;
    std::istringstream in(text);
    std::string joined;
    while (std::getline(in, line))
      if (!line.empty() && line != "ok" && line.rfind("*** in database", 0) != 0)
        joined += (joined.empty() ? "" : "; ") + line;
    if (!joined.empty()) problems.push_back(Echo(joined, 300));
  }
  if (rc != SQLITE_DONE)
    problems.push_back(std::string("the check stopped: ") + sqlite3_errmsg(db_));
  return problems;
}

Result<std::vector<std::string>> Ledger::Namespaces() {
  // One step of the primary key per namespace (a skip scan), not a scan of every row.
  Stmt s(db_,
         "WITH RECURSIVE ns(name) AS (SELECT (SELECT min(namespace) FROM hourly) UNION ALL"
         " SELECT (SELECT min(namespace) FROM hourly WHERE namespace > ns.name) FROM ns"
         " WHERE ns.name IS NOT NULL) SELECT name FROM ns WHERE name IS NOT NULL");
  if (!s.ok()) return SqlError(db_, "read namespaces");
  std::vector<std::string> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(s.ColText(0));
  if (rc != SQLITE_DONE) return SqlError(db_, "read namespaces");
  return out;
}

Result<LedgerStats> Ledger::Stats() {
  LedgerStats st;
  st.uncommitted = uncommitted_;
  {
    Stmt s(db_,
           "SELECT count(*), coalesce(sum(current), 0), count(DISTINCT namespace), min(hour), "
           "max(hour) FROM hourly");
    if (!s.ok() || s.Step() != SQLITE_ROW) return SqlError(db_, "count rows");
    st.rows = s.ColInt(0);
    st.current_rows = s.ColInt(1);
    st.namespaces = s.ColInt(2);
    if (st.rows > 0) {
      st.first_hour = s.ColInt(3);
      st.last_hour = s.ColInt(4);
    }
  }
  {
    Stmt s(db_, "SELECT count(*) FROM price_books");
    if (!s.ok() || s.Step() != SQLITE_ROW) return SqlError(db_, "count price books");
    st.price_books = s.ColInt(0);
  }
  {
    Stmt s(db_, "SELECT value FROM meta WHERE key = 'schema'");
    if (s.ok() && s.Step() == SQLITE_ROW) st.schema = std::atoi(s.ColText(0).c_str());
  }
  auto w = ReadWatermark(db_);
  if (!w.ok()) return w.status();
  st.sealed_before = *w;
  return st;
}

namespace {

// Sums of a key's bucket: of its current hourly rows, or as its rollup row stores them.
struct RollupSum {
  i128 req = 0, use = 0, max = 0;
  int64_t samples = 0, covered = 0, run = 0, min_hour = INT64_MAX, max_hour = INT64_MIN;
};
using RollupKey = std::tuple<std::string, std::string, std::string, std::string, int64_t, int64_t,
                             std::string, int64_t>;
using RollupSums = std::map<RollupKey, std::pair<RollupSum, RollupSum>>;  // hourly sums, rollup

// Adds every current hourly row to the first sum of its key and bucket.
Status SumCurrentHourlyRows(sqlite3* db_, const Rollup& rollup, RollupSums* by_day) {
  Stmt s(db_,
         "SELECT namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, "
         "hour, request_raw, "
         "usage_raw, max_raw, samples, covered_ms, run_ms FROM hourly WHERE current = 1");
  if (!s.ok()) return SqlError(db_, "read hourly rows");
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    const Millis hour = s.ColInt(7);
    RollupSum& h =
        (*by_day)[RollupKey{s.ColText(0), s.ColText(1), s.ColText(2), s.ColText(3), s.ColInt(4),
                            s.ColInt(5), s.ColText(6), rollup.bucket_of(hour)}]
            .first;
    if (!AddStored(s.ColText(8), 1, &h.req) || !AddStored(s.ColText(9), 1, &h.use) ||
        !AddStored(s.ColText(10), 1, &h.max))
      return Status::Error("ledger: an hourly row has a damaged quantity");
    h.samples += s.ColInt(11);
    h.covered += s.ColInt(12);
    h.run += s.ColInt(13);
    h.min_hour = std::min(h.min_hour, hour);
    h.max_hour = std::max(h.max_hour, hour);
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read hourly rows");
  return Status::Ok();
}

// Reads every row of the rollup table into the second sum of its key; *has_row marks the keys.
Status ReadRollupRows(sqlite3* db_, const Rollup& rollup, RollupSums* by_day,
                      std::map<RollupKey, bool>* has_row) {
  Stmt s(db_, (std::string("SELECT namespace, workload, resource, gpu_product, gpu_replicas, "
                           "kind, preemptor, ") +
               rollup.column +
               ", request_raw, usage_raw, max_raw, samples, covered_ms, run_ms, min_hour, "
               "max_hour FROM " +
               rollup.table)
                  .c_str());
  if (!s.ok()) return SqlError(db_, std::string("read ") + rollup.table + " rollups");
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    const RollupKey k{s.ColText(0), s.ColText(1), s.ColText(2), s.ColText(3),
                      s.ColInt(4),  s.ColInt(5),  s.ColText(6), s.ColInt(7)};
    RollupSum& d = (*by_day)[k].second;
    if (!AddStored(s.ColText(8), 1, &d.req) || !AddStored(s.ColText(9), 1, &d.use) ||
        !AddStored(s.ColText(10), 1, &d.max))
      return Status::Error(std::string("ledger: a ") + rollup.table +
                           " rollup has a damaged quantity");
    d.samples = s.ColInt(11);
    d.covered = s.ColInt(12);
    d.run = s.ColInt(13);
    d.min_hour = s.ColInt(14);
    d.max_hour = s.ColInt(15);
    (*has_row)[k] = true;
  }
  if (rc != SQLITE_DONE) return SqlError(db_, std::string("read ") + rollup.table + " rollups");
  return Status::Ok();
}

// Compares a rollup table with the sums of the current hourly rows per key and bucket; appends a
// line per difference (at most max_lines, then "...") to *problems.
Status CheckRollupTable(sqlite3* db_, const Rollup& rollup, size_t max_lines,
                        std::vector<std::string>* problems_out) {
  // Every rollup must equal the sums of its bucket's current hourly rows, and every bucket with
  // current rows must have its rollup. The raw tracks are int128 decimal text: compared exactly
  // in C++, summed per key and bucket.
  RollupSums by_day;  // hourly sums, daily row
  std::vector<std::string>& problems = *problems_out;
  if (Status s = SumCurrentHourlyRows(db_, rollup, &by_day); !s.ok()) return s;
  std::map<RollupKey, bool> has_daily;
  if (Status s = ReadRollupRows(db_, rollup, &by_day, &has_daily); !s.ok()) return s;
  for (const auto& [k, v] : by_day) {
    const RollupSum& h = v.first;
    const RollupSum& d = v.second;
    const bool same =
        h.req == d.req && h.use == d.use && h.max == d.max && h.samples == d.samples &&
        h.covered == d.covered && h.run == d.run &&
        (h.min_hour == INT64_MAX || (h.min_hour == d.min_hour && h.max_hour == d.max_hour));
    if (same && (has_daily.count(k) > 0 || h.min_hour == INT64_MAX)) continue;
    if (problems.size() == max_lines) {
      problems.push_back("...");
      break;
    }
    problems.push_back(std::string(rollup.table) + " rollup of " + std::get<0>(k) + " " +
                       std::get<1>(k) + " " + std::get<2>(k) + " on " +
                       FormatRfc3339(std::get<7>(k)) +
                       (has_daily.count(k) ? " differs from its hourly rows" : " is missing"));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> Ledger::CheckRollups(size_t max_lines) {
  std::vector<std::string> problems;
  for (const Rollup* r : {&kDaily, &kMonthly}) {
    if (Status s = CheckRollupTable(db_, *r, max_lines, &problems); !s.ok()) return s;
    if (problems.size() > max_lines) break;
  }
  return problems;
}

Ledger::~Ledger() { sqlite3_close(db_); }

Status Ledger::Migrate() {
  int version = 0;
  {
    Stmt v(db_, "SELECT value FROM meta WHERE key = 'schema'");
    if (v.ok() && v.Step() == SQLITE_ROW) version = std::atoi(v.ColText(0).c_str());
  }
  if (version > kSchemaVersion)
    return Status::Error("ledger: schema " + std::to_string(version) +
                         " was written by a newer arbiter (this one reads schema " +
                         std::to_string(kSchemaVersion) + ")");
  if (version == kSchemaVersion) return Exec(Schema().c_str());
  // A new ledger, or an older schema: one transaction creates or upgrades everything.
  Txn t(db_, "ledger");
  if (!t.ok()) return SqlError(db_, "begin migration");
  if (version == 1)
    if (Status s = Exec(MigrateV1Sql().c_str()); !s.ok())
      return Status::Error(s.message() + " (migrating schema 1)");
  // Schemas 2 and 3 -> 4: the change sequence (0 for every existing row; a warehouse synced by an
  // older arbiter has no sync position for this ledger's id and is copied whole once).
  if (version == 2 || version == 3)
    if (Status s = Exec("ALTER TABLE hourly ADD COLUMN seq INTEGER NOT NULL DEFAULT 0"); !s.ok())
      return Status::Error(s.message() + " (migrating schema " + std::to_string(version) + ")");
  if (version != 0) {  // schemas 1-5: meter_tracks without kind, if any was written
    auto tracks = HasTracksTable(db_);
    if (!tracks.ok()) return tracks.status();
    if (*tracks)
      if (Status s = Exec(MigrateTracksSql().c_str()); !s.ok())
        return Status::Error(s.message() + " (migrating meter_tracks)");
  }
  if (Status s = Exec(Schema().c_str()); !s.ok()) return s;
  if (version != 0) {
    if (version < 5)  // the rollups' tables are those of schema 5
      if (Status s = RebuildRollupsLocked(); !s.ok()) return s;
    if (Status s = Exec(("UPDATE meta SET value = '" + std::to_string(kSchemaVersion) +
                         "' WHERE key = 'schema'")
                            .c_str());
        !s.ok())
      return s;
  }
  return t.Commit();
}

Status Ledger::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::Error("ledger: " + m);
  }
  return Status::Ok();
}

Status Ledger::PutPriceBooksLocked(const std::vector<PriceBook>& books) {
  Stmt get(db_, "SELECT canonical FROM price_books WHERE id = ?1");
  Stmt put(db_,
           "INSERT INTO price_books(id, effective_from, canonical, json) VALUES (?1, ?2, ?3, ?4)");
  if (!get.ok() || !put.ok()) return SqlError(db_, "prepare price book statements");
  for (const PriceBook& b : books) {
    std::string id = billing::PriceBookId(b), canon = billing::CanonicalPriceBook(b);
    get.Reset();
    get.Text(1, id);
    int rc = get.Step();
    if (rc == SQLITE_ROW) {
      if (get.ColText(0) != canon)
        return Status::Error("ledger: PriceBook " + id +
                             " is already stored with different prices; a price change needs a "
                             "new version (a later effectiveFrom)");
      continue;
    }
    if (rc != SQLITE_DONE) return SqlError(db_, "read price book " + id);
    put.Reset();
    put.Text(1, id);
    put.Int(2, b.effective_from);
    put.Text(3, canon);
    put.Text(4, report::PriceBookToJson(b).dump());
    if (put.Step() != SQLITE_DONE) return SqlError(db_, "store price book " + id);
  }
  return Status::Ok();
}

Status Ledger::PutPriceBooks(const std::vector<PriceBook>& books) {
  Txn t(db_, "ledger");
  if (!t.ok()) return SqlError(db_, "begin");
  if (Status s = PutPriceBooksLocked(books); !s.ok()) return s;
  return t.Commit();
}

Result<std::vector<PriceBook>> Ledger::PriceBooks() {
  Stmt s(db_, "SELECT json FROM price_books ORDER BY effective_from, id");
  if (!s.ok()) return SqlError(db_, "read price books");
  std::vector<PriceBook> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    auto j = nlohmann::json::parse(s.ColText(0), nullptr, false);
    auto b = report::PriceBooksFromJson(j);
    if (!b.ok())
      return Result<std::vector<PriceBook>>::Error("ledger: stored price book unreadable: " +
                                                   b.message());
    for (auto& x : *b) out.push_back(std::move(x));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read price books");
  return out;
}

namespace {

constexpr const char* kInsertHourlySql =
    "INSERT INTO hourly(namespace, workload, resource, gpu_product, gpu_replicas, kind,"
    " preemptor, hour, version, current, request_raw, usage_raw, max_raw, samples,"
    " covered_ms, run_ms, unit, price_book, currency, mode, unit_price, billed_quantity, amount,"
    " seq) VALUES"
    " (?1,?2,?3,?4,?5,?6,?7,?8,?9,1,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)"
    " ON CONFLICT DO NOTHING";

constexpr const char* kCurrentHourlySql =
    "SELECT version, request_raw, usage_raw, max_raw, samples, covered_ms, run_ms, unit,"
    " price_book, currency, mode, unit_price, billed_quantity, amount FROM hourly"
    " WHERE namespace=?1 AND workload=?2 AND resource=?3 AND gpu_product=?4"
    " AND gpu_replicas=?5 AND kind=?6 AND preemptor=?7 AND hour=?8 AND current=1";

constexpr const char* kUpdateHourlySql =
    "UPDATE hourly SET request_raw=?10, usage_raw=?11, max_raw=?12, samples=?13,"
    " covered_ms=?14, run_ms=?15, unit=?16, price_book=?17, currency=?18, mode=?19,"
    " unit_price=?20, billed_quantity=?21, amount=?22, seq=?23 WHERE namespace=?1"
    " AND workload=?2"
    " AND resource=?3 AND gpu_product=?4 AND gpu_replicas=?5 AND kind=?6 AND preemptor=?7"
    " AND hour=?8 AND version=?9";

constexpr const char* kSupersedeHourlySql =
    "UPDATE hourly SET current=0 WHERE namespace=?1 AND workload=?2 AND resource=?3"
    " AND gpu_product=?4 AND gpu_replicas=?5 AND kind=?6 AND preemptor=?7 AND hour=?8"
    " AND version=?9";

// The statements that write `hourly` rows.
struct HourlyStatements {
  Stmt insert, current, update, supersede;

  explicit HourlyStatements(sqlite3* db)
      : insert(db, kInsertHourlySql),
        current(db, kCurrentHourlySql),
        update(db, kUpdateHourlySql),
        supersede(db, kSupersedeHourlySql) {}
  bool ok() const { return insert.ok() && current.ok() && update.ok() && supersede.ok(); }
};

// Writes rated hourly rows within the caller's transaction: a new key is inserted; a changed row
// of an unsealed hour is updated in place, one of a sealed hour superseded by a correction (its
// next version). Every row inserted or changed gets the next change sequence number, and its
// change goes to the rollups.
class HourlyRowWriter {
 public:
  HourlyRowWriter(sqlite3* db, HourlyStatements& s, DailyWriter& daily,
                  const billing::PriceCatalog& catalog, int64_t seq, Millis sealed_before)
      : db_(db), s_(s), daily_(daily), rater_(catalog), seq_(seq), sealed_before_(sealed_before) {}

  Status Write(const HourlyRow& r) {
    Content c = rater_.Rate(r);
    BindInsert(r, 1, c, seq_ + 1);
    if (s_.insert.Step() != SQLITE_DONE) return SqlError(db_, "insert hourly row of " + r.workload);
    if (sqlite3_changes(db_) == 1) {
      ++seq_;
      ++stats_.inserted;
      return AddChange(r, nullptr);
    }
    // The key exists: compare with its current version.
    s_.current.Reset();
    BindKey(s_.current, r);
    if (s_.current.Step() != SQLITE_ROW) return SqlError(db_, "read current row of " + r.workload);
    Stmt& cur = s_.current;
    const int64_t version = cur.ColInt(0);
    const Content old{cur.ColText(1),  cur.ColText(2),  cur.ColText(3),  cur.ColText(7),
                      cur.ColText(8),  cur.ColText(9),  cur.ColText(10), cur.ColText(11),
                      cur.ColText(12), cur.ColText(13), cur.ColInt(4),   cur.ColInt(5),
                      cur.ColInt(6)};
    auto tie = [](const Content& x) {
      return std::tie(x.req, x.use, x.max, x.unit, x.book, x.currency, x.mode, x.unit_price,
                      x.billed, x.amount, x.samples, x.covered, x.run);
    };
    if (tie(old) == tie(c)) {
      ++stats_.unchanged;
      return Status::Ok();
    }
    if (r.hour >= sealed_before_) return Replace(r, version, c, old);
    return Correct(r, version, c, old);
  }

  int64_t seq() const { return seq_; }
  const WriteStats& stats() const { return stats_; }

 private:
  void BindInsert(const HourlyRow& r, int64_t version, const Content& c, int64_t seq) {
    s_.insert.Reset();
    BindKey(s_.insert, r);
    s_.insert.Int(9, version);
    BindContent(s_.insert, 10, c);
    s_.insert.Int(23, seq);
  }

  // An unsealed hour: the current version takes the new content.
  Status Replace(const HourlyRow& r, int64_t version, const Content& c, const Content& old) {
    s_.update.Reset();
    BindKey(s_.update, r);
    s_.update.Int(9, version);
    BindContent(s_.update, 10, c);
    s_.update.Int(23, ++seq_);
    if (s_.update.Step() != SQLITE_DONE) return SqlError(db_, "update hourly row of " + r.workload);
    ++stats_.replaced;
    return AddChange(r, &old);
  }

  // A sealed hour: the current version is superseded by a new one.
  Status Correct(const HourlyRow& r, int64_t version, const Content& c, const Content& old) {
    s_.supersede.Reset();
    BindKey(s_.supersede, r);
    s_.supersede.Int(9, version);
    if (s_.supersede.Step() != SQLITE_DONE)
      return SqlError(db_, "supersede hourly row of " + r.workload);
    BindInsert(r, version + 1, c, ++seq_);
    if (s_.insert.Step() != SQLITE_DONE || sqlite3_changes(db_) != 1)
      return SqlError(db_, "insert correction of " + r.workload);
    ++stats_.corrected;
    return AddChange(r, &old);
  }

  // The change a write makes to the current row of its key, for the daily rollups.
  Status AddChange(const HourlyRow& r, const Content* old) {
    if (!old) return daily_.Add(r);
    HourlyRow d = r;
    if (!AddStored(old->req, -1, &d.request_raw) || !AddStored(old->use, -1, &d.usage_raw) ||
        !AddStored(old->max, -1, &d.max_raw))
      return Status::Error("ledger: corrupt quantity in a stored row of " + r.workload);
    d.samples -= old->samples;
    d.covered_ms -= old->covered;
    d.run_ms -= old->run;
    return daily_.Add(d);
  }

  sqlite3* db_;
  HourlyStatements& s_;
  DailyWriter& daily_;
  RowRater rater_;
  int64_t seq_;
  const Millis sealed_before_;
  WriteStats stats_;
};

}  // namespace

Result<WriteStats> Ledger::Write(const std::vector<HourlyRow>& rows,
                                 const billing::PriceCatalog& catalog,
                                 std::optional<Millis> seal_before) {
  Txn t(db_, "ledger");
  if (!t.ok()) return SqlError(db_, "begin");
  if (Status s = PutPriceBooksLocked(catalog.books()); !s.ok()) return s;
  auto wm = ReadWatermark(db_);
  if (!wm.ok()) return wm.status();
  const Millis sealed_before = *wm;
  // Every row this write inserts or changes gets the next change sequence number.
  auto seq0 = ReadLastSeq(db_);
  if (!seq0.ok()) return seq0.status();
  HourlyStatements statements(db_);
  if (!statements.ok()) return SqlError(db_, "prepare write statements");
  // Rows must have unique keys; input that is not strictly increasing in key order is rolled
  // up first (rows with the same key summed), so a duplicate never overwrites its twin.
  bool strictly_sorted = true;
  for (size_t i = 1; i < rows.size() && strictly_sorted; ++i)
    strictly_sorted = HourlyRow::KeyLess(rows[i - 1], rows[i]);
  std::vector<HourlyRow> rolled;
  if (!strictly_sorted) {
    rolled = rows;
    billing::Rollup(&rolled);
  }
  const std::vector<HourlyRow>& input = strictly_sorted ? rows : rolled;
  DailyWriter daily(db_);
  if (!daily.ok()) return SqlError(db_, "prepare daily rollup statements");
  HourlyRowWriter writer(db_, statements, daily, catalog, *seq0, sealed_before);
  for (const HourlyRow& r : input)
    if (Status s = writer.Write(r); !s.ok()) return s;
  if (Status s = daily.Flush(); !s.ok()) return s;
  if (writer.seq() != *seq0)
    if (Status s = WriteMeta(db_, "last_seq", std::to_string(writer.seq())); !s.ok()) return s;
  if (seal_before)
    if (Status s = WriteWatermark(db_, *seal_before); !s.ok()) return s;
  if (Status s = t.Commit(); !s.ok()) return s;
  return writer.stats();
}

Status Ledger::RebuildRollupsLocked() {
  if (Status s = Exec("DELETE FROM daily; DELETE FROM monthly"); !s.ok()) return s;
  DailyWriter daily(db_);
  if (!daily.ok()) return SqlError(db_, "prepare daily rollup statements");
  // Row by row in key order: a 10M-row ledger is not held in memory.
  const std::string sql =
      std::string("SELECT ") + kRowColumns + ", hour FROM hourly WHERE 1=1" + FilterSql({});
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return SqlError(db_, "read hourly rows");
  HourlyRow rows[2];
  size_t n = 0;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    HourlyRow& r = rows[n % 2];
    if (!ReadRowColumns(s, n > 0 ? &rows[(n + 1) % 2] : nullptr, &r))
      return Status::Error("ledger: corrupt quantity in a row of " + r.workload);
    r.hour = s.ColInt(13);
    if (Status st = daily.Add(r); !st.ok()) return st;
    ++n;
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read hourly rows");
  return daily.Flush();
}

Status Ledger::RebuildRollups() {
  Txn t(db_, "ledger");
  if (!t.ok()) return SqlError(db_, "begin");
  if (Status s = RebuildRollupsLocked(); !s.ok()) return s;
  return t.Commit();
}

Status Ledger::Seal(Millis before) {
  Txn t(db_, "ledger");
  if (!t.ok()) return SqlError(db_, "begin");
  if (Status s = WriteWatermark(db_, before); !s.ok()) return s;
  return t.Commit();
}

Result<Millis> Ledger::SealedBefore() { return ReadWatermark(db_); }

Result<ChangeMark> Ledger::Changes() {
  ChangeMark m;
  auto seq = ReadLastSeq(db_);
  if (!seq.ok()) return seq.status();
  m.last_seq = *seq;
  Stmt s(db_, "SELECT value FROM meta WHERE key = 'ledger_id'");
  if (!s.ok() || s.Step() != SQLITE_ROW) return SqlError(db_, "read the ledger id");
  m.ledger_id = s.ColText(0);
  return m;
}

Result<std::vector<LedgerRow>> Ledger::ReadDetailed(const RowFilter& f) {
  std::vector<LedgerRow> out;
  Status s = ForEachDetailed(f, [&](const LedgerRow& lr) {
    out.push_back(lr);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

Status Ledger::ForEachDetailed(const RowFilter& f,
                               const std::function<Status(const LedgerRow&)>& visit) {
  auto wm = ReadWatermark(db_);
  if (!wm.ok()) return wm.status();
  std::string sql =
      "SELECT namespace, workload, resource, gpu_product, kind, preemptor, hour, version, current,"
      " request_raw, usage_raw, max_raw, samples, covered_ms, run_ms, unit, price_book, currency,"
      " mode, unit_price, billed_quantity, amount, gpu_replicas FROM hourly WHERE 1=1";
  sql += FilterSql(f);
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return SqlError(db_, "read hourly rows");
  BindFilter(s, f);
  LedgerRow lr;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    HourlyRow& r = lr.row;
    r.namespace_ = s.ColText(0);
    r.workload = s.ColText(1);
    r.resource = s.ColText(2);
    r.gpu_product = s.ColText(3);
    r.gpu_replicas = s.ColInt(22);
    r.kind = s.ColInt(4) == 1 ? RowKind::kCredit : RowKind::kUsage;
    r.preemptor = s.ColText(5);
    r.hour = s.ColInt(6);
    lr.version = s.ColInt(7);
    lr.current = s.ColInt(8) == 1;
    lr.sealed = r.hour < *wm;
    auto req = billing::ParseI128(s.ColText(9));
    auto use = billing::ParseI128(s.ColText(10));
    auto mx = billing::ParseI128(s.ColText(11));
    if (!req.ok() || !use.ok() || !mx.ok())
      return Status::Error("ledger: corrupt quantity in a row of " + r.workload);
    r.request_raw = *req;
    r.usage_raw = *use;
    r.max_raw = *mx;
    r.samples = s.ColInt(12);
    r.covered_ms = s.ColInt(13);
    r.run_ms = s.ColInt(14);
    lr.unit = s.ColText(15);
    lr.rated.price_book = s.ColText(16);
    lr.rated.currency = s.ColText(17);
    std::string mode = s.ColText(18);
    lr.rated.mode = billing::RatedRow{}.mode;
    for (BillingMode m :
         {BillingMode::kRequest, BillingMode::kUsage, BillingMode::kMax, BillingMode::kBlended})
      if (mode == ToString(m)) lr.rated.mode = m;
    auto up = Decimal::Parse(s.ColText(19));
    auto bq = Decimal::Parse(s.ColText(20));
    auto am = Decimal::Parse(s.ColText(21));
    if (!up.ok() || !bq.ok() || !am.ok())
      return Status::Error("ledger: corrupt rating in a row of " + r.workload);
    lr.rated.unit_price = *up;
    lr.rated.billed_quantity = *bq;
    lr.rated.amount = *am;
    if (Status v = visit(lr); !v.ok()) return v;
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read hourly rows");
  return Status::Ok();
}

Result<std::vector<HourlyRow>> Ledger::Read(const RowFilter& f) {
  // The lean path for invoices: key and raw tracks only.
  std::string sql = std::string("SELECT ") + kRowColumns + ", hour FROM hourly WHERE 1=1";
  sql += FilterSql(f);
  Stmt s(db_, sql.c_str());
  if (!s.ok()) return SqlError(db_, "read hourly rows");
  BindFilter(s, f);
  std::vector<HourlyRow> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    HourlyRow& r = out.emplace_back();
    if (!ReadRowColumns(s, out.size() > 1 ? &out[out.size() - 2] : nullptr, &r))
      return Result<std::vector<HourlyRow>>::Error("ledger: corrupt quantity in a row of " +
                                                   r.workload);
    r.hour = s.ColInt(13);
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read hourly rows");
  return out;
}

namespace {

// Appends the rows of a rollup table with buckets in [from, to) to *out.
Status ReadRollup(sqlite3* db, const Rollup& rollup, const std::optional<std::string>& namespace_,
                  Millis from, Millis to, std::vector<billing::RowSpan>* out) {
  std::string sql = std::string("SELECT ") + kRowColumns + ", min_hour, max_hour FROM " +
                    rollup.table + " WHERE " + rollup.column + " >= ?2 AND " + rollup.column +
                    " < ?3";
  if (namespace_) sql += " AND namespace = ?1";
  const std::string what = std::string("read ") + rollup.table + " rollups";
  Stmt s(db, sql.c_str());
  if (!s.ok()) return SqlError(db, what);
  if (namespace_) s.Text(1, *namespace_);
  s.Int(2, from);
  s.Int(3, to);
  const size_t first = out->size();
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    billing::RowSpan& sp = out->emplace_back();
    HourlyRow& r = sp.sum;
    if (!ReadRowColumns(s, out->size() > first + 1 ? &(*out)[out->size() - 2].sum : nullptr, &r))
      return Status::Error(std::string("ledger: corrupt ") + rollup.table + " rollup of " +
                           sp.sum.workload);
    r.hour = s.ColInt(13);
    sp.last_hour = s.ColInt(14);
  }
  if (rc != SQLITE_DONE) return SqlError(db, what);
  return Status::Ok();
}

}  // namespace

Result<std::vector<billing::RowSpan>> Ledger::ReadDaily(
    const std::optional<std::string>& namespace_, Millis from_day, Millis to_day) {
  std::vector<billing::RowSpan> out;
  if (Status s = ReadRollup(db_, kDaily, namespace_, from_day, to_day, &out); !s.ok()) return s;
  return out;
}

Result<std::vector<billing::RowSpan>> Ledger::ReadMonthly(
    const std::optional<std::string>& namespace_, Millis from_month, Millis to_month) {
  std::vector<billing::RowSpan> out;
  if (Status s = ReadRollup(db_, kMonthly, namespace_, from_month, to_month, &out); !s.ok())
    return s;
  return out;
}

// ------------------------------------------------------------------ exports

const std::vector<std::string>& FocusColumns() {
  static const std::vector<std::string> kCols = {
      "BillingPeriodStart", "BillingPeriodEnd",   "ChargePeriodStart",
      "ChargePeriodEnd",    "BillingCurrency",    "ProviderName",
      "SubAccountId",       "ResourceId",         "ResourceType",
      "ChargeCategory",     "ChargeDescription",  "SkuId",
      "ConsumedQuantity",   "ConsumedUnit",       "PricingQuantity",
      "PricingUnit",        "ListUnitPrice",      "ContractedUnitPrice",
      "BilledCost",         "EffectiveCost",      "ListCost",
      "x_RequestQuantity",  "x_UsageQuantity",    "x_BillingMode",
      "x_PriceBook",        "x_UnitPricePerHour", "x_GpuModel",
      "x_Preemptor",        "x_Samples",          "x_CoveredSeconds",
      "x_RunSeconds",       "x_Version",          "x_Current",
      "x_Sealed",           "x_GpuReplicas"};
  return kCols;
}

namespace {

std::vector<std::string> FocusValues(const LedgerRow& lr) {
  const HourlyRow& r = lr.row;
  billing::MeterUnit unit = billing::MeterUnitOf(r.resource, r.gpu_replicas);
  std::string start = FormatRfc3339(r.hour), end = FormatRfc3339(r.hour + billing::kHourMs);
  // Per metering unit (per second) list price: hourly price / 3600, 9 decimals.
  Decimal per_unit =
      Decimal::FromUnits(billing::MulDivRoundHalfUp(lr.rated.unit_price.units(), 1, 3600));
  std::string sku = r.resource + (r.gpu_product.empty() ? "" : "@" + r.gpu_product);
  const bool idle = r.namespace_ == billing::kIdleNamespace;
  std::string desc =
      idle ? "Idle capacity of " + r.resource + " on node " + r.workload
           : std::string(r.kind == RowKind::kCredit ? "Preemption credit" : "Usage") + " of " +
                 r.resource + " by " + r.workload +
                 (r.kind == RowKind::kCredit ? " (lost work, preempted by " + r.preemptor + ")"
                                             : "");
  return {start,
          end,
          start,
          end,
          lr.rated.currency,
          "arbiter",
          r.namespace_,
          r.workload,
          idle ? "IdleCapacity" : "Workload",
          r.kind == RowKind::kCredit ? "Credit" : "Usage",
          desc,
          sku,
          billing::QuantityOf(r.usage_raw, 1, unit.divisor).ToString(),
          lr.unit,
          lr.rated.billed_quantity.ToString(),
          lr.unit,
          per_unit.ToString(),
          per_unit.ToString(),
          lr.rated.amount.ToString(),
          lr.rated.amount.ToString(),
          lr.rated.amount.ToString(),
          billing::QuantityOf(r.request_raw, 1, unit.divisor).ToString(),
          billing::QuantityOf(r.usage_raw, 1, unit.divisor).ToString(),
          lr.rated.price_book.empty() ? "" : ToString(lr.rated.mode),
          lr.rated.price_book,
          lr.rated.unit_price.ToString(),
          r.gpu_product,
          r.preemptor,
          std::to_string(r.samples),
          report::SecondsText(r.covered_ms),
          report::SecondsText(r.run_ms),
          std::to_string(lr.version),
          lr.current ? "true" : "false",
          lr.sealed ? "true" : "false",
          std::to_string(r.gpu_replicas)};
}

std::string CsvField(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

}  // namespace

Status Ledger::ExportCsv(const RowFilter& f, std::ostream& out) {
  const auto& cols = FocusColumns();
  for (size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << "\n";
  std::string line;
  Status s = ForEachDetailed(f, [&](const LedgerRow& lr) {
    auto v = FocusValues(lr);
    line.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) line += ',';
      line += CsvField(v[i]);
    }
    line += '\n';
    out << line;
    return out ? Status::Ok() : Status::Error("ledger export: write failed");
  });
  if (!s.ok()) return s;
  return out ? Status::Ok() : Status::Error("ledger export: write failed");
}

Status Ledger::ExportJsonl(const RowFilter& f, std::ostream& out) {
  const auto& cols = FocusColumns();
  Status s = ForEachDetailed(f, [&](const LedgerRow& lr) {
    auto v = FocusValues(lr);
    nlohmann::ordered_json j;
    for (size_t i = 0; i < v.size(); ++i) j[cols[i]] = v[i];
    out << j.dump() << "\n";
    return out ? Status::Ok() : Status::Error("ledger export: write failed");
  });
  if (!s.ok()) return s;
  return out ? Status::Ok() : Status::Error("ledger export: write failed");
}

namespace {

using Range = std::pair<Millis, Millis>;  // [first, second)

// Removes [from, to) from the ranges (splitting the one that holds it).
void CarveOut(std::vector<Range>* ranges, Millis from, Millis to) {
  std::vector<Range> out;
  for (const auto& [a, b] : *ranges) {
    if (to <= a || b <= from) {
      out.emplace_back(a, b);
      continue;
    }
    if (a < from) out.emplace_back(a, from);
    if (to < b) out.emplace_back(to, b);
  }
  *ranges = std::move(out);
}

// Where each part of an invoice window is read from: whole UTC calendar months from the monthly
// rollups, the other whole UTC days from the daily ones, partial days from the hourly rows. A
// month in which a PriceBook version takes effect after its first instant is read by days, and a
// day in which one takes effect after midnight by hours. Billing is linear per version, so the
// sums give the same invoices, byte for byte.
struct ReadPlan {
  std::vector<Range> months, days, hours;
};

ReadPlan PlanRead(std::optional<Millis> from, std::optional<Millis> to,
                  const std::vector<Millis>& cuts) {
  ReadPlan p;
  const Millis day_from = from ? -DayOf(-*from) : INT64_MIN;  // first whole day
  const Millis day_to = to ? DayOf(*to) : INT64_MAX;          // end of the last whole day
  if (day_from >= day_to) {
    p.hours.emplace_back(from.value_or(INT64_MIN), to.value_or(INT64_MAX));
    return p;
  }
  if (from && *from < day_from) p.hours.emplace_back(*from, day_from);
  if (to && day_to < *to) p.hours.emplace_back(day_to, *to);
  Millis month_from = INT64_MIN, month_to = INT64_MAX;  // the whole months
  if (from) month_from = MonthStartOf(day_from) == day_from ? day_from : NextMonthStart(day_from);
  if (to) month_to = MonthStartOf(day_to);
  if (month_from < month_to) {
    p.months.emplace_back(month_from, month_to);
    if (from && day_from < month_from) p.days.emplace_back(day_from, month_from);
    if (to && month_to < day_to) p.days.emplace_back(month_to, day_to);
  } else {
    p.days.emplace_back(day_from, day_to);
  }
  for (Millis c : cuts) {
    const Millis m = MonthStartOf(c);
    if (c == m) continue;  // in force from the month's first instant: months stay whole
    for (const auto& [a, b] : p.months)
      if (a <= m && m < b) {
        CarveOut(&p.months, m, NextMonthStart(m));
        p.days.emplace_back(m, NextMonthStart(m));
        break;
      }
  }
  for (Millis c : cuts) {
    const Millis d = DayOf(c);
    if (c == d) continue;
    for (const auto& [a, b] : p.days)
      if (a <= d && d < b) {
        CarveOut(&p.days, d, d + kDayMs);
        p.hours.emplace_back(d, d + kDayMs);
        break;
      }
  }
  return p;
}

}  // namespace

Result<std::vector<billing::Invoice>> LedgerInvoices(Ledger& ledger,
                                                     const std::optional<std::string>& namespace_,
                                                     std::optional<Millis> from,
                                                     std::optional<Millis> to, InvoiceRead path) {
  auto books = ledger.PriceBooks();
  if (!books.ok()) return books.status();
  if (books->empty()) {
    // A ledger with no rows yet (e.g. a new one whose first ingest was killed before its commit)
    // bills nothing; rows without a PriceBook would be a damaged ledger.
    auto st = ledger.Stats();
    if (st.ok() && st->rows == 0) return std::vector<billing::Invoice>{};
    return Result<std::vector<billing::Invoice>>::Error("ledger has rows but no PriceBook");
  }
  // Spreading idle cost weighs every tenant of the window: read them all, keep the one asked.
  bool spread = false;
  std::vector<Millis> cuts;  // PriceBook version changes inside the window
  for (const PriceBook& b : *books) {
    spread |= b.share_idle != IdleSharing::kNone;
    if ((!from || b.effective_from > *from) && (!to || b.effective_from < *to))
      cuts.push_back(b.effective_from);
  }
  auto cat = billing::PriceCatalog::Create(std::move(*books));
  if (!cat.ok()) return cat.status();
  std::optional<std::string> ns = spread ? std::nullopt : namespace_;
  billing::InvoiceOptions opts;
  opts.from = from;
  opts.to = to;
  Result<std::vector<billing::Invoice>> invs = std::vector<billing::Invoice>{};
  if (path == InvoiceRead::kHourlyRows) {
    RowFilter f;
    f.namespace_ = ns;
    f.from = from;
    f.to = to;
    auto rows = ledger.Read(f);
    if (!rows.ok()) return rows.status();
    invs = billing::BuildInvoices(*rows, *cat, opts);
  } else {
    const ReadPlan plan = PlanRead(from, to, cuts);
    std::vector<billing::RowSpan> spans;
    for (const auto& [a, b] : plan.months)
      if (Status s = ReadRollup(ledger.handle(), kMonthly, ns, a, b, &spans); !s.ok()) return s;
    for (const auto& [a, b] : plan.days)
      if (Status s = ReadRollup(ledger.handle(), kDaily, ns, a, b, &spans); !s.ok()) return s;
    for (const auto& [a, b] : plan.hours) {
      RowFilter f;
      f.namespace_ = ns;
      f.from = a;
      f.to = b;
      auto rows = ledger.Read(f);
      if (!rows.ok()) return rows.status();
      std::vector<HourlyRow> part = std::move(rows).value();
      for (HourlyRow& r : part) {
        Millis h = r.hour;
        spans.push_back({std::move(r), h});
      }
    }
    invs = billing::BuildInvoicesFromSpans(spans, *cat, opts);
  }
  if (!invs.ok() || !spread || !namespace_) return invs;
  std::vector<billing::Invoice> one;
  for (auto& inv : *invs)
    if (inv.namespace_ == *namespace_) one.push_back(std::move(inv));
  return one;
}

namespace {
// A stored usage source ("prometheus", "none", "request") as billing::UsageSource.
Status ReadUsageSource(const std::string& text, billing::UsageSource* out) {
  for (auto u : {billing::UsageSource::kUsageSource, billing::UsageSource::kNone,
                 billing::UsageSource::kRequest})
    if (text == billing::ToString(u)) {
      *out = u;
      return Status::Ok();
    }
  return Status::Error("ledger: meter_tracks: unknown usage source \"" + text + "\"");
}

// A stored row kind (0 Usage, 1 Credit) as billing::RowKind.
Status ReadTrackKind(int64_t stored, billing::RowKind* out) {
  if (stored != static_cast<int64_t>(RowKind::kUsage) &&
      stored != static_cast<int64_t>(RowKind::kCredit))
    return Status::Error("ledger: meter_tracks: unknown row kind " + std::to_string(stored));
  *out = static_cast<RowKind>(stored);
  return Status::Ok();
}
}  // namespace

Status Ledger::PutTracks(const std::vector<billing::TrackNote>& notes) {
  if (notes.empty()) return Status::Ok();
  Txn txn(db_, "ledger");
  if (!txn.ok()) return txn.status();
  if (Status s = Exec(kCreateTracks); !s.ok()) return s;
  Stmt st(db_,
          "INSERT OR REPLACE INTO meter_tracks(namespace, workload, resource, kind, hour, request,"
          " usage) VALUES (?1,?2,?3,?6,?4,'informers',?5)");
  for (const billing::TrackNote& n : notes) {
    st.Reset();
    st.TextRef(1, n.namespace_);
    st.TextRef(2, n.workload);
    st.TextRef(3, n.resource);
    st.Int(4, n.hour);
    st.TextRef(5, billing::ToString(n.usage));
    st.Int(6, static_cast<int64_t>(n.kind));
    if (Status s = st.Run("ledger: write meter_tracks"); !s.ok()) return s;  // rolled back
  }
  return txn.Commit();
}

Result<std::vector<billing::TrackNote>> Ledger::ReadTracks() {
  std::vector<billing::TrackNote> out;
  auto written = HasTracksTable(db_);
  if (!written.ok()) return written.status();
  if (!*written) return out;
  Stmt st(db_,
          "SELECT namespace, workload, resource, hour, usage, kind FROM meter_tracks"
          " ORDER BY namespace, workload, resource, kind, hour");
  if (!st.ok()) return Status::Error("ledger: read meter_tracks: " + st.error());
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    billing::TrackNote n;
    n.namespace_ = st.ColText(0);
    n.workload = st.ColText(1);
    n.resource = st.ColText(2);
    n.hour = st.ColInt(3);
    if (Status s = ReadUsageSource(st.ColText(4), &n.usage); !s.ok()) return s;
    if (Status s = ReadTrackKind(st.ColInt(5), &n.kind); !s.ok()) return s;
    out.push_back(std::move(n));
  }
  if (rc != SQLITE_DONE)
    return Status::Error("ledger: read meter_tracks: " + std::string(sqlite3_errmsg(db_)));
  return out;
}

Result<TrackView> Ledger::ReadTrackRows(const RowFilter& f) {
  TrackView out;
  auto written = HasTracksTable(db_);
  if (!written.ok()) return written.status();
  out.written = *written;
  if (!out.written) return out;
  // The row's columns in ReadRowColumns' order (its key from the entry), then the entry's hour
  // and sources, and whether a row matched (LEFT JOIN: its columns are NULL when none did).
  std::string sql =
      "SELECT t.namespace, t.workload, t.resource, h.gpu_product, h.gpu_replicas, h.kind,"
      " h.preemptor, h.request_raw, h.usage_raw, h.max_raw, h.samples, h.covered_ms, h.run_ms,"
      " t.hour, t.request, t.usage, h.hour IS NOT NULL, h.unit, t.kind FROM meter_tracks t"
      " LEFT JOIN hourly h ON h.namespace = t.namespace AND h.workload = t.workload"
      " AND h.resource = t.resource AND h.hour = t.hour AND h.kind = t.kind AND h.current = 1"
      " WHERE 1=1";
  if (f.namespace_) sql += " AND t.namespace = ?1";
  if (f.from) sql += " AND t.hour >= ?2";
  if (f.to) sql += " AND t.hour < ?3";
  sql +=
      " ORDER BY t.namespace, t.workload, t.resource, t.kind, t.hour, h.gpu_product,"
      " h.gpu_replicas, h.preemptor";
  Stmt st(db_, sql.c_str());
  if (!st.ok()) return Status::Error("ledger: read meter_tracks: " + st.error());
  BindFilter(st, f);
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    TrackRow& t = out.rows.emplace_back();
    t.note.namespace_ = st.ColText(0);
    t.note.workload = st.ColText(1);
    t.note.resource = st.ColText(2);
    t.note.hour = st.ColInt(13);
    t.request_source = st.ColText(14);
    if (Status s = ReadUsageSource(st.ColText(15), &t.note.usage); !s.ok()) return s;
    if (Status s = ReadTrackKind(st.ColInt(18), &t.note.kind); !s.ok()) return s;
    if (st.ColInt(16) == 0) continue;
    HourlyRow& r = t.row.emplace();
    if (!ReadRowColumns(st, nullptr, &r))
      return Status::Error("ledger: corrupt quantity in a row of " + t.note.workload);
    r.hour = t.note.hour;
    t.unit = st.ColText(17);
  }
  if (rc != SQLITE_DONE)
    return Status::Error("ledger: read meter_tracks: " + std::string(sqlite3_errmsg(db_)));
  return out;
}

}  // namespace arbiter::sqlite
