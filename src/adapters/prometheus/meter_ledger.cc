#include "adapters/prometheus/meter_ledger.h"

#include <sqlite3.h>

#include <string_view>

namespace arbiter::prometheus {

namespace {
Status Err(sqlite3* db, const std::string& what) {
  return Status::Error("ledger: " + what + ": " + sqlite3_errmsg(db));
}
}  // namespace

Result<std::unique_ptr<MeterProvenanceTable>> MeterProvenanceTable::Open(sqlite3* db) {
  const char* sql =
      "CREATE TABLE IF NOT EXISTS meter_provenance(namespace TEXT NOT NULL, workload TEXT NOT NULL,"
      " resource TEXT NOT NULL, hour INTEGER NOT NULL, usage_gaps INTEGER NOT NULL,"
      " request_gaps INTEGER NOT NULL, counter_resets INTEGER NOT NULL, outside_samples INTEGER "
      "NOT NULL, duplicate_points INTEGER NOT NULL DEFAULT 0,"
      " PRIMARY KEY(namespace, workload, resource, hour)) WITHOUT ROWID";
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db, "create meter_provenance");
  // Tables made before duplicate series were counted get the column (0: none were seen).
  bool has_dups = false;
  sqlite3_stmt* info = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA table_info(meter_provenance)", -1, &info, nullptr) !=
      SQLITE_OK)
    return Err(db, "read meter_provenance columns");
  while (sqlite3_step(info) == SQLITE_ROW)
    has_dups |= std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(info, 1))) ==
                "duplicate_points";
  sqlite3_finalize(info);
  if (!has_dups &&
      sqlite3_exec(db,
                   "ALTER TABLE meter_provenance ADD COLUMN duplicate_points INTEGER NOT NULL "
                   "DEFAULT 0",
                   nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db, "add meter_provenance.duplicate_points");
  return std::unique_ptr<MeterProvenanceTable>(new MeterProvenanceTable(db));
}

Status MeterProvenanceTable::Put(const std::vector<MeterProvenance>& rows) {
  if (rows.empty()) return Status::Ok();
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db_, "begin");
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(
          db_,
          "INSERT OR REPLACE INTO meter_provenance(namespace, workload, resource, hour, usage_gaps,"
          " request_gaps, counter_resets, outside_samples, duplicate_points)"
          " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
          -1, &st, nullptr) != SQLITE_OK) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return Err(db_, "prepare meter_provenance insert");
  }
  for (const auto& r : rows) {
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, r.namespace_.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, r.workload.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, r.resource.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, r.hour);
    sqlite3_bind_int64(st, 5, r.usage_gaps);
    sqlite3_bind_int64(st, 6, r.request_gaps);
    sqlite3_bind_int64(st, 7, r.counter_resets);
    sqlite3_bind_int64(st, 8, r.outside_samples);
    sqlite3_bind_int64(st, 9, r.duplicate_points);
    if (sqlite3_step(st) != SQLITE_DONE) {
      sqlite3_finalize(st);
      Status s = Err(db_, "write meter_provenance");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    }
  }
  sqlite3_finalize(st);
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    Status s = Err(db_, "commit meter_provenance");
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }
  return Status::Ok();
}

Result<std::vector<MeterProvenance>> MeterProvenanceTable::Read() {
  std::vector<MeterProvenance> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(
          db_,
          "SELECT namespace, workload, resource, hour, usage_gaps, request_gaps, counter_resets,"
          " outside_samples, duplicate_points FROM meter_provenance"
          " ORDER BY namespace, workload, resource, hour",
          -1, &st, nullptr) != SQLITE_OK)
    return Err(db_, "read meter_provenance");
  while (sqlite3_step(st) == SQLITE_ROW) {
    MeterProvenance m;
    m.namespace_ = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    m.workload = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    m.resource = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
    m.hour = sqlite3_column_int64(st, 3);
    m.usage_gaps = sqlite3_column_int64(st, 4);
    m.request_gaps = sqlite3_column_int64(st, 5);
    m.counter_resets = sqlite3_column_int64(st, 6);
    m.outside_samples = sqlite3_column_int64(st, 7);
    m.duplicate_points = sqlite3_column_int64(st, 8);
    out.push_back(std::move(m));
  }
  sqlite3_finalize(st);
  return out;
}

}  // namespace arbiter::prometheus

namespace arbiter::prometheus {

Result<std::optional<Millis>> ReadMeterWatermark(sqlite3* db) {
  // No table (a ledger the job never sealed, or one opened for reading): no watermark.
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT metered_until FROM meter_watermark WHERE id = 1", -1, &st,
                         nullptr) != SQLITE_OK)
    return std::optional<Millis>();
  std::optional<Millis> out;
  if (sqlite3_step(st) == SQLITE_ROW) out = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return out;
}

Status WriteMeterWatermark(sqlite3* db, Millis metered_until) {
  const char* create =
      "CREATE TABLE IF NOT EXISTS meter_watermark(id INTEGER PRIMARY KEY CHECK (id = 1),"
      " metered_until INTEGER NOT NULL)";
  if (sqlite3_exec(db, create, nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db, "create meter_watermark");
  const std::string sql =
      "INSERT INTO meter_watermark VALUES (1, " + std::to_string(metered_until) +
      ") ON CONFLICT(id) DO UPDATE SET metered_until = MAX(metered_until, excluded.metered_until)";
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db, "write meter_watermark");
  return Status::Ok();
}

Result<MeterLedgerStats> MeterIntoLedger(Client& client, const MeteringConfig& cfg,
                                         const billing::PriceCatalog& catalog,
                                         sqlite::Ledger& ledger, Millis from, Millis to,
                                         std::optional<Millis> seal_before,
                                         const Progress& progress) {
  auto prov = MeterProvenanceTable::Open(ledger.handle());
  if (!prov.ok()) return prov.status();
  MeterLedgerStats out;
  BatchSink sink = [&](MeterBatch&& b) -> Status {
    auto st = ledger.Write(b.rows, catalog);
    if (!st.ok()) return st.status();
    out.written.inserted += st->inserted;
    out.written.unchanged += st->unchanged;
    out.written.replaced += st->replaced;
    out.written.corrected += st->corrected;
    out.provenance_rows += static_cast<int64_t>(b.provenance.size());
    return (*prov)->Put(b.provenance);
  };
  auto stats = MeterPrometheus(client, cfg, from, to, sink, progress);
  if (!stats.ok()) return stats.status();
  out.meter = *stats;
  if (seal_before)
    if (Status s = ledger.Seal(*seal_before); !s.ok()) return s;
  return out;
}

}  // namespace arbiter::prometheus
