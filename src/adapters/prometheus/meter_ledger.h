// Live metering into the SQLite ledger, shared by `arbiter meter` and the meter job of
// `arbiter serve`: MeterPrometheus's batches rated and written as they come, the ledger table
// `meter_provenance` beside the hourly rows (per (namespace, workload, resource, hour) the usage
// gaps, bridged request gaps, counter resets and samples outside runs; upserted: re-metering
// replaces the counts), and the meter job's watermark (`meter_watermark`: every hour before it
// is metered and sealed).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "adapters/prometheus/live_meter.h"
#include "adapters/sqlite/ledger.h"

struct sqlite3;

namespace arbiter::prometheus {

class MeterProvenanceTable {
 public:
  static Result<std::unique_ptr<MeterProvenanceTable>> Open(sqlite3* db);
  Status Put(const std::vector<MeterProvenance>& rows);
  Result<std::vector<MeterProvenance>> Read();

 private:
  explicit MeterProvenanceTable(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

struct MeterLedgerStats {
  MeterStats meter;
  sqlite::WriteStats written;
  int64_t provenance_rows = 0;
  billing::TrackMergeStats merged;  // with a request track (`merge`)
};

// Meters [from, to) (whole hours) into `ledger`, rated with `catalog`, provenance beside; then
// seals the hours before `seal_before`. Idempotent: re-running a window writes nothing new.
// With `merge` (the request track of [from, to) from `arbiter scheduler`'s informers), the
// rows of the workloads it knows take their request side from it and their usage side from
// Prometheus (billing::TrackMerger), the sources in the ledger's table meter_tracks.
Result<MeterLedgerStats> MeterIntoLedger(Client& client, const MeteringConfig& cfg,
                                         const billing::PriceCatalog& catalog,
                                         sqlite::Ledger& ledger, Millis from, Millis to,
                                         std::optional<Millis> seal_before,
                                         const Progress& progress = {},
                                         billing::TrackMerger* merge = nullptr);

// The meter job's watermark: nullopt before its first sealed window. It never moves back.
Result<std::optional<Millis>> ReadMeterWatermark(sqlite3* db);
Status WriteMeterWatermark(sqlite3* db, Millis metered_until);

}  // namespace arbiter::prometheus
