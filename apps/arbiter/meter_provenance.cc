#include "meter_provenance.h"

#include <sqlite3.h>

namespace arbiter::app {

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
      "NOT NULL,"
      " PRIMARY KEY(namespace, workload, resource, hour)) WITHOUT ROWID";
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db, "create meter_provenance");
  return std::unique_ptr<MeterProvenanceTable>(new MeterProvenanceTable(db));
}

Status MeterProvenanceTable::Put(const std::vector<prometheus::MeterProvenance>& rows) {
  if (rows.empty()) return Status::Ok();
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
    return Err(db_, "begin");
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "INSERT OR REPLACE INTO meter_provenance VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
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

Result<std::vector<prometheus::MeterProvenance>> MeterProvenanceTable::Read() {
  std::vector<prometheus::MeterProvenance> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(
          db_, "SELECT * FROM meter_provenance ORDER BY namespace, workload, resource, hour", -1,
          &st, nullptr) != SQLITE_OK)
    return Err(db_, "read meter_provenance");
  while (sqlite3_step(st) == SQLITE_ROW) {
    prometheus::MeterProvenance m;
    m.namespace_ = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    m.workload = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    m.resource = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
    m.hour = sqlite3_column_int64(st, 3);
    m.usage_gaps = sqlite3_column_int64(st, 4);
    m.request_gaps = sqlite3_column_int64(st, 5);
    m.counter_resets = sqlite3_column_int64(st, 6);
    m.outside_samples = sqlite3_column_int64(st, 7);
    out.push_back(std::move(m));
  }
  sqlite3_finalize(st);
  return out;
}

}  // namespace arbiter::app
