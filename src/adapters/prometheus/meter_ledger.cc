#include "adapters/prometheus/meter_ledger.h"

#include <sqlite3.h>

#include <functional>
#include <string_view>

#include "adapters/sqlite/statement.h"

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
  sqlite::Stmt info(db, "PRAGMA table_info(meter_provenance)");
  if (!info.ok()) return Status::Error("ledger: read meter_provenance columns: " + info.error());
  int rc;
  while ((rc = info.Step()) == SQLITE_ROW) has_dups |= info.ColText(1) == "duplicate_points";
  if (rc != SQLITE_DONE) return Err(db, "read meter_provenance columns");
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
  sqlite::Txn txn(db_, "ledger");
  if (!txn.ok()) return txn.status();
  sqlite::Stmt st(db_,
                  "INSERT OR REPLACE INTO meter_provenance(namespace, workload, resource, hour, "
                  "usage_gaps, request_gaps, counter_resets, outside_samples, duplicate_points)"
                  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  for (const auto& r : rows) {
    st.Reset();
    st.TextRef(1, r.namespace_);
    st.TextRef(2, r.workload);
    st.TextRef(3, r.resource);
    st.Int(4, r.hour);
    st.Int(5, r.usage_gaps);
    st.Int(6, r.request_gaps);
    st.Int(7, r.counter_resets);
    st.Int(8, r.outside_samples);
    st.Int(9, r.duplicate_points);
    if (Status s = st.Run("ledger: write meter_provenance"); !s.ok()) return s;  // rolled back
  }
  return txn.Commit();
}

Result<std::vector<MeterProvenance>> MeterProvenanceTable::Read() {
  std::vector<MeterProvenance> out;
  sqlite::Stmt st(db_,
                  "SELECT namespace, workload, resource, hour, usage_gaps, request_gaps, "
                  "counter_resets, outside_samples, duplicate_points FROM meter_provenance"
                  " ORDER BY namespace, workload, resource, hour");
  if (!st.ok()) return Status::Error("ledger: read meter_provenance: " + st.error());
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    MeterProvenance m;
    m.namespace_ = st.ColText(0);
    m.workload = st.ColText(1);
    m.resource = st.ColText(2);
    m.hour = st.ColInt(3);
    m.usage_gaps = st.ColInt(4);
    m.request_gaps = st.ColInt(5);
    m.counter_resets = st.ColInt(6);
    m.outside_samples = st.ColInt(7);
    m.duplicate_points = st.ColInt(8);
    out.push_back(std::move(m));
  }
  if (rc != SQLITE_DONE) return Err(db_, "read meter_provenance");  // never a partial answer
  return out;
}

}  // namespace arbiter::prometheus

namespace arbiter::prometheus {

Result<std::optional<Millis>> ReadMeterWatermark(sqlite3* db) {
  // No table (a ledger the job never sealed, or one opened for reading): no watermark.
  sqlite::Stmt st(db, "SELECT metered_until FROM meter_watermark WHERE id = 1");
  if (!st.ok()) return std::optional<Millis>();
  std::optional<Millis> out;
  const int rc = st.Step();
  if (rc == SQLITE_ROW)
    out = st.ColInt(0);
  else if (rc != SQLITE_DONE)
    return Err(db, "read meter_watermark");
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
                                         const Progress& progress, billing::TrackMerger* merge) {
  auto prov = MeterProvenanceTable::Open(ledger.handle());
  if (!prov.ok()) return prov.status();
  MeterLedgerStats out;
  auto write = [&](const std::vector<billing::HourlyRow>& rows) -> Status {
    auto st = ledger.Write(rows, catalog);
    if (!st.ok()) return st.status();
    out.written.inserted += st->inserted;
    out.written.unchanged += st->unchanged;
    out.written.replaced += st->replaced;
    out.written.corrected += st->corrected;
    return Status::Ok();
  };
  // The merged rows and their sources (rows and notes of one batch together).
  auto write_merged = [&](const std::function<void(std::vector<billing::HourlyRow>*,
                                                   std::vector<billing::TrackNote>*)>& make) {
    std::vector<billing::HourlyRow> rows;
    std::vector<billing::TrackNote> notes;
    make(&rows, &notes);
    if (rows.empty()) return Status::Ok();
    if (Status s = write(rows); !s.ok()) return s;
    return ledger.PutTracks(notes);
  };
  BatchSink sink = [&](MeterBatch&& b) -> Status {
    Status s = merge ? write_merged([&](auto* rows, auto* notes) {
      merge->Merge(std::move(b.rows), rows, notes);
    })
                     : write(b.rows);
    if (!s.ok()) return s;
    out.provenance_rows += static_cast<int64_t>(b.provenance.size());
    return (*prov)->Put(b.provenance);
  };
  auto stats = MeterPrometheus(client, cfg, from, to, sink, progress);
  if (!stats.ok()) return stats.status();
  out.meter = *stats;
  if (merge) {
    if (Status s = write_merged([&](auto* rows, auto* notes) { merge->Finish(rows, notes); });
        !s.ok())
      return s;
    out.merged = merge->stats();
  }
  if (seal_before)
    if (Status s = ledger.Seal(*seal_before); !s.ok()) return s;
  return out;
}

}  // namespace arbiter::prometheus
