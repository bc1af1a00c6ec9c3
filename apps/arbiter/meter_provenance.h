// The ledger table `meter_provenance` that `arbiter meter` keeps beside the hourly rows: per
// (namespace, workload, resource, hour) the usage gaps, bridged request gaps, counter resets and
// samples outside runs (prometheus::MeterProvenance). Upserted: re-metering replaces the counts.
#pragma once

#include <memory>
#include <vector>

#include "adapters/prometheus/live_meter.h"

struct sqlite3;

namespace arbiter::app {

class MeterProvenanceTable {
 public:
  static Result<std::unique_ptr<MeterProvenanceTable>> Open(sqlite3* db);
  Status Put(const std::vector<prometheus::MeterProvenance>& rows);
  Result<std::vector<prometheus::MeterProvenance>> Read();

 private:
  explicit MeterProvenanceTable(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

}  // namespace arbiter::app
