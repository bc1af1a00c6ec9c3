// The billing ledger: hourly rows in an embedded SQLite database (WAL, one transaction per write).
//
// Guarantees:
//  - Idempotent: a row is keyed by (namespace, workload, resource, gpu_product, gpu_replicas, kind,
//    preemptor, hour); writing the same content again changes nothing.
//  - Sealed hours are immutable: hours before the seal watermark are never overwritten. A
//    different content for a sealed hour is stored as a new version (version + 1, the old one
//    kept and marked superseded). Unsealed hours are updated in place.
//  - Change sequence: every row a write inserts or changes (new key, in-place update, new version)
//    gets the next number of the ledger's change sequence (column seq, meta.last_seq), in the
//    same transaction; `arbiter ledger sync` copies what changed after its last position, so a
//    late row of an hour that was already copied reaches the warehouse too.
//  - Crash-safe: rows, their price books and the seal watermark move together in one
//    transaction; a killed writer leaves the ledger as of its last commit.
// Every row is stored with its rating (price book version, mode, unit price, billed quantity,
// amount to 9 decimals) for exports; invoices are re-rated exactly from the raw tracks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/billing/invoice.h"
#include "core/billing/track_merge.h"
#include "core/status.h"

struct sqlite3;

namespace arbiter::sqlite {

struct WriteStats {
  int64_t inserted = 0;   // new keys
  int64_t unchanged = 0;  // same content as stored: nothing written
  int64_t replaced = 0;   // unsealed hour, new content, updated in place
  int64_t corrected = 0;  // sealed hour, new content, stored as a new version
};

struct RowFilter {
  std::optional<std::string> namespace_;
  std::optional<Millis> from, to;  // hours in [from, to)
  bool include_superseded = false;
};

struct LedgerRow {
  billing::HourlyRow row;
  int64_t version = 1;
  bool current = true;
  bool sealed = false;
  std::string unit;
  billing::RatedRow rated;
};

// Where the ledger's change sequence stands: its id (random, made with the ledger) and the last
// sequence number given to a row (0: none; rows of ledgers migrated from schema 3 or older have 0).
struct ChangeMark {
  std::string ledger_id;
  int64_t last_seq = 0;
};

// An entry of meter_tracks with the hourly row it describes: the current Usage row of its
// (namespace, workload, resource, hour); several when that key has rows of several GPU products or
// replica counts (one TrackRow each), none when the ledger has no such row (row empty).
struct TrackRow {
  billing::TrackNote note;     // the key and where the usage track came from
  std::string request_source;  // where the request track came from, as stored: "informers"
  std::optional<billing::HourlyRow> row;
  std::string unit;  // the row's metering unit as stored ("GPU-second", "core-second", ...)
};
struct TrackView {
  bool written = false;  // the ledger has the table meter_tracks (something wrote tracks once)
  std::vector<TrackRow> rows;
};

// What `arbiter ledger check` reports.
struct LedgerStats {
  int schema = 0;
  int64_t rows = 0, current_rows = 0, namespaces = 0, price_books = 0;
  std::optional<Millis> first_hour, last_hour;
  Millis sealed_before = INT64_MIN;  // INT64_MIN: nothing sealed
  bool uncommitted = false;          // a file with no table yet: its first write never committed
};

// What opening a ledger checks. Reads never run a whole-file check: SQLite checks every page a
// read touches as it decodes it (PRAGMA cell_size_check=ON), the ledger every value it decodes,
// and a damaged page fails that read. The whole file is checked (PRAGMA quick_check) when the
// ledger was not closed cleanly: its -wal file holds frames while no connection has it open (a
// killed writer, a machine that stopped). A damaged ledger found so then fails the open, and its
// -wal is kept so that every later open checks again. `arbiter ledger check` runs the full
// integrity_check itself (kNone: it reports what it finds instead of failing the open).
enum class OpenCheck { kAfterUncleanShutdown, kNone };

class Ledger {
 public:
  // Opens the ledger for writing, creating it (and its schema) if missing, upgrading an older
  // schema; checks it after an unclean shutdown (OpenCheck).
  static Result<std::unique_ptr<Ledger>> Open(const std::string& path);
  // Opens an existing ledger for the reading commands (invoice, export, check): never creates,
  // changes or upgrades it... except an older schema, upgraded as by Open when the file is
  // writable. Works on a read-only file or in a read-only directory, and leaves no -wal / -shm
  // file behind (a writable ledger is opened read-write with PRAGMA query_only, so that the last
  // connection removes them; one that cannot be written is read as immutable when it holds every
  // commit, i.e. has no -wal content). Do not make a ledger read-only while something writes it.
  // A database with no table at all (a new ledger whose first write was killed before it
  // committed) reads as an empty ledger.
  static Result<std::unique_ptr<Ledger>> OpenForReading(
      const std::string& path, OpenCheck check = OpenCheck::kAfterUncleanShutdown);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Writes hourly rows (rows sharing a key are summed first, as billing::Rollup does), rated
  // with `catalog`, whose
  // versions are stored too. With `seal_before`, the watermark moves to it in the same
  // transaction (it never moves back).
  Result<WriteStats> Write(const std::vector<billing::HourlyRow>& rows,
                           const billing::PriceCatalog& catalog,
                           std::optional<Millis> seal_before = std::nullopt);
  Status Seal(Millis before);
  Result<Millis> SealedBefore();  // INT64_MIN when nothing is sealed
  Result<ChangeMark> Changes();

  // PriceBook versions stored; a version (name@effectiveFrom) never changes once stored.
  Status PutPriceBooks(const std::vector<PriceBook>& books);
  Result<std::vector<PriceBook>> PriceBooks();

  // Where the tracks of merged rows came from (`arbiter scheduler --ledger --meter-prometheus`,
  // billing::TrackMerger): table meter_tracks, one entry per (namespace, workload, resource,
  // hour), upserted (metering again replaces it). A row without an entry has both tracks from the
  // one source that wrote it.
  Status PutTracks(const std::vector<billing::TrackNote>& notes);
  Result<std::vector<billing::TrackNote>> ReadTracks();  // key order; none when never written
  // The entries of meter_tracks in f's namespace and window (hours in [from, to); superseded rows
  // are never read), each with the row it describes (`arbiter ledger tracks`), in key order.
  Result<TrackView> ReadTrackRows(const RowFilter& f);

  // Recomputes the daily and monthly rollups from the current hourly rows (writes keep them up to
  // date; this is for migrations and checks).
  Status RebuildRollups();
  // Summed current rows per (key, UTC day) in [from_day, to_day) (days as Unix ms): sum.hour
  // is the first hour with a row that day, last_hour the last.
  Result<std::vector<billing::RowSpan>> ReadDaily(const std::optional<std::string>& namespace_,
                                                  Millis from_day, Millis to_day);
  // The same per (key, UTC calendar month) in [from_month, to_month) (months as Unix ms of their
  // first day), in key order within a month.
  Result<std::vector<billing::RowSpan>> ReadMonthly(const std::optional<std::string>& namespace_,
                                                    Millis from_month, Millis to_month);

  // Current rows (and superseded ones on request) in key order.
  Result<std::vector<billing::HourlyRow>> Read(const RowFilter& f);
  Result<std::vector<LedgerRow>> ReadDetailed(const RowFilter& f);
  // ReadDetailed(f)'s rows handed to `visit` one at a time, none kept; stops at its first error.
  Status ForEachDetailed(const RowFilter& f, const std::function<Status(const LedgerRow&)>& visit);

  // FOCUS-style exports of ReadDetailed(f), streamed row by row (a damaged row met on the way
  // ends the export with an error after the rows before it): CSV with a header, or one JSON
  // object a line.
  Status ExportCsv(const RowFilter& f, std::ostream& out);
  Status ExportJsonl(const RowFilter& f, std::ostream& out);

  // PRAGMA quick_check (integrity_check when `full`): the problems SQLite finds (at most
  // `max_lines`), empty when the file is sound.
  Result<std::vector<std::string>> CheckIntegrity(bool full, size_t max_lines = 20);
  // Daily rollups that differ from the sums of their current hourly rows, or are missing.
  Result<std::vector<std::string>> CheckRollups(size_t max_lines = 20);
  // Namespaces with hourly rows, sorted.
  Result<std::vector<std::string>> Namespaces();
  Result<LedgerStats> Stats();

  sqlite3* handle() { return db_; }
  // Whether opening it ran the whole-file check (it had not been closed cleanly).
  bool checked_at_open() const { return checked_at_open_; }

 private:
  explicit Ledger(sqlite3* db) : db_(db) {}
  Status Exec(const char* sql);
  Status Migrate();  // creates the schema, or upgrades an older one in one transaction
  Status RebuildRollupsLocked();
  Status PutPriceBooksLocked(const std::vector<PriceBook>& books);
  Status CheckAfterUncleanShutdown(const std::string& path);
  void KeepWal();  // SQLITE_FCNTL_PERSIST_WAL: closing leaves the -wal file
  sqlite3* db_;
  bool checked_at_open_ = false;
  bool uncommitted_ = false;  // OpenForReading of a database with no table: an empty ledger
};

// Column names of the exports, in order.
const std::vector<std::string>& FocusColumns();

// Invoices for a namespace (or all with nullopt) and window from the ledger's current rows and
// stored price books. Rows of the idle pseudo-namespace ("__idle__") give its invoice and, when
// a PriceBook spreads idle cost (shareIdle), the tenants' IdleShare lines, weighed over every
// tenant in the window.
//
// The default read takes whole UTC days from the daily rollups and only partial days (and days
// in which a PriceBook version takes effect) from the hourly rows; kHourlyRows reads every
// hourly row. Both give the same invoices, byte for byte.
enum class InvoiceRead { kRollups, kHourlyRows };
Result<std::vector<billing::Invoice>> LedgerInvoices(Ledger& ledger,
                                                     const std::optional<std::string>& namespace_,
                                                     std::optional<Millis> from,
                                                     std::optional<Millis> to,
                                                     InvoiceRead path = InvoiceRead::kRollups);

}  // namespace arbiter::sqlite
