// Opening a warehouse by URL, and `arbiter ledger sync`: copying the sealed hours of the SQLite
// ledger into it, incrementally, by the ledger's change sequence.
//
// The warehouse keeps a sync mark per ledger id: the ledger's seal watermark and the last number
// of its change sequence (sqlite::Ledger::Changes) as of the last complete sync. A sync reads one
// snapshot of the ledger and copies
//  1. PriceBook versions (immutable; a different text for a stored version is an error);
//  2. the current rows of the hours sealed since (hours in [mark.synced_before, sealed_before)),
//     and the current rows of hours copied before that changed since (seq > mark.seq): late new
//     keys and new versions alike. With no mark for this ledger (a new warehouse, one synced by
//     an arbiter before the change sequence, or from another ledger) every sealed hour is copied.
//  Rows are streamed in the ledger's key order in batches of `batch_rows` and upserted (the
//  higher version wins); each batch but the last records the sync's progress (the last key
//  copied, billing::SyncProgress), the last moves the mark (in one transaction on PostgreSQL).
//  Each step is idempotent, so a sync killed at any moment and run again leaves exactly the
//  SQLite ledger's current rows of the sealed hours in the warehouse, whatever the order in which
//  rows reached the ledger. A sync killed mid-way resumes from its last committed batch (issue
//  28): the next sync of the same window skips the rows that batch's progress covers (key up to
//  its last key, hour before its target, change number up to its target's: unchanged since), and
//  copies everything else (later keys, newly sealed hours, rows changed since).
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
  Millis synced_before_was = INT64_MIN;  // the ledger's mark in the warehouse before this sync
  int64_t seq_was = -1;                  // -1: no mark for this ledger
  int64_t seq = 0;                       // the ledger's change sequence copied up to
  // rows: of hours sealed since the last sync; late: of hours copied before (late new keys and
  // new versions).
  int64_t rows = 0, late = 0, batches = 0, price_books = 0;
  bool resumed = false;  // an interrupted sync's committed batches were not sent again
};

struct SyncOptions {
  size_t batch_rows = 200000;
  std::function<void(const std::string&)> progress;
};

Result<SyncStats> SyncLedger(sqlite::Ledger& ledger, billing::WarehouseStore& wh,
                             const SyncOptions& opts = {});

}  // namespace arbiter::warehouse
