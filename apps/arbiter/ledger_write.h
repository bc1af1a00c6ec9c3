// Writing hourly rows to a ledger file from a command: a failed write leaves no new file
// behind (a ledger that existed is left as its last commit, since writes are transactions).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "adapters/sqlite/ledger.h"
#include "core/billing/run_segment.h"

namespace arbiter::app {

// At most this many hourly rows are metered by one ingest (checked before metering).
inline constexpr size_t kMaxIngestRows = 10000000;

// Removes PATH and its -wal/-shm files unless Keep() was called, when the file did not exist
// at construction. Declare it before opening the ledger, so that the ledger is closed first.
class NewFileGuard {
 public:
  explicit NewFileGuard(std::string path);
  ~NewFileGuard();
  NewFileGuard(const NewFileGuard&) = delete;
  NewFileGuard& operator=(const NewFileGuard&) = delete;
  void Keep() { keep_ = true; }
  bool existed() const { return existed_; }

 private:
  std::string path_;
  bool existed_;
  bool keep_ = false;
};

// Opens (creating) the ledger at `path` and writes `rows`; prints
// "N hourly rows: I inserted, U unchanged, R replaced, C corrected (new versions)" to `out`.
// Exit code: 0, or 1 with the reason on `err` (and no new file left behind).
int WriteLedgerFile(const std::string& path, const std::vector<billing::HourlyRow>& rows,
                    const billing::PriceCatalog& catalog, std::optional<Millis> seal_before,
                    const std::string& who, std::ostream& out, std::ostream& err);

// The ingest pipeline of `arbiter invoice ingest` and `arbiter slurm import`: price books
// (`books`, else those stored in the ledger), metering with `scrape_interval`, a check that every
// hour can be priced, then one write (a new ledger file is removed again on any failure). Prints
// "LABEL: N segments, M hourly rows: I inserted, U unchanged, R replaced, C corrected (new
// versions)". Exit code: 0, or 1 with "WHO: reason" on `err`. `price_option` names the command's
// option that gives PriceBooks, for the error when there are none ("--pricebook", "-f").
int IngestSegments(const std::string& db, const std::vector<billing::RunSegment>& segments,
                   std::vector<PriceBook> books, Millis scrape_interval,
                   std::optional<Millis> seal_before, const std::string& who,
                   const std::string& label, const std::string& price_option, std::ostream& out,
                   std::ostream& err);

}  // namespace arbiter::app
