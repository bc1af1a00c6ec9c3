// Opening a warehouse by URL, and `arbiter ledger sync`: copying the sealed hours of the SQLite
// ledger into it, incrementally.
//
// Sync, step by step (each step idempotent, so a sync killed at any moment and run again leaves
// exactly the SQLite ledger's current rows of the sealed hours in the warehouse):
//  1. PriceBook versions (immutable; a different text for a stored version is an error).
//  2. Corrections: current rows with version > 1 of hours before the warehouse's watermark
//     (a sealed hour corrected after it was copied), upserted: the higher version wins.
//  3. New sealed hours: current rows of [watermark, sealed_before), streamed in batches of
//     `batch_rows`, upserted; then the watermark moves to sealed_before (with the last batch,
//     in one transaction on PostgreSQL).
// Unsealed hours are never copied: they may still change in place.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "adapters/sqlite/ledger.h"
#include "core/billing/ledger_store.h"

namespace arbiter::warehouse {

// clickhouse://... or postgresql://... (postgres://)
bool IsWarehouseUrl(const std::string& s);
Result<std::unique_ptr<billing::WarehouseStore>> OpenWarehouse(const std::string& url);

struct SyncStats {
  Millis sealed_before = INT64_MIN;      // the SQLite ledger's seal watermark
  Millis synced_before_was = INT64_MIN;  // the warehouse's watermark before this sync
  int64_t rows = 0, corrections = 0, batches = 0, price_books = 0;
};

struct SyncOptions {
  size_t batch_rows = 200000;
  std::function<void(const std::string&)> progress;
};

Result<SyncStats> SyncLedger(sqlite::Ledger& ledger, billing::WarehouseStore& wh,
                             const SyncOptions& opts = {});

}  // namespace arbiter::warehouse
