#include "ledger_write.h"

#include <algorithm>
#include <filesystem>

#include "adapters/io/input_file.h"
#include "core/duration.h"

namespace arbiter::app {

NewFileGuard::NewFileGuard(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  existed_ = std::filesystem::exists(path_, ec);
}

NewFileGuard::~NewFileGuard() {
  if (keep_ || existed_) return;
  std::error_code ec;
  for (const char* sfx : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + sfx, ec);
}

int WriteLedgerFile(const std::string& path, const std::vector<billing::HourlyRow>& rows,
                    const billing::PriceCatalog& catalog, std::optional<Millis> seal_before,
                    const std::string& who, std::ostream& out, std::ostream& err) {
  NewFileGuard guard(path);
  auto ledger = sqlite::Ledger::Open(path);
  if (!ledger.ok()) {
    err << who << ": " << ledger.message() << "\n";
    return 1;
  }
  auto st = (*ledger)->Write(rows, catalog, seal_before);
  if (!st.ok()) {
    err << who << ": " << st.message() << "\n";
    return 1;
  }
  guard.Keep();
  out << rows.size() << " hourly rows: " << st->inserted << " inserted, " << st->unchanged
      << " unchanged, " << st->replaced << " replaced, " << st->corrected
      << " corrected (new versions)\n";
  return 0;
}

// Every segment must start when some PriceBook version is in force: checked before metering, so
// that nothing is metered (or allocated) for input that is refused anyway.
static std::string UnpricedSegment(const std::vector<billing::RunSegment>& segs,
                                   const billing::PriceCatalog& cat) {
  Millis first = INT64_MAX;
  for (const auto& b : cat.books()) first = std::min(first, b.effective_from);
  for (const auto& s : segs)
    if (s.start < first)
      return "segment of " + s.workload + " starts at " + FormatRfc3339(s.start) +
             ": no PriceBook is in force at " + FormatRfc3339(s.start) +
             " (the first takes effect " + FormatRfc3339(first) + "); nothing was written";
  return "";
}

int IngestSegments(const std::string& db, const std::vector<billing::RunSegment>& segments,
                   std::vector<PriceBook> books, Millis scrape_interval,
                   std::optional<Millis> seal_before, const std::string& who,
                   const std::string& label, const std::string& price_option, std::ostream& out,
                   std::ostream& err) {
  // Bounds before anything is metered or allocated: the rows the segments can span.
  if (const size_t bound = billing::RowBoundOf(segments); bound > kMaxIngestRows) {
    err << who << ": " << label << ": the segments span up to " << bound
        << " hourly rows, more than the " << kMaxIngestRows
        << " one ingest meters; ingest them in parts (e.g. a file per month)\n";
    return 1;
  }
  if (std::string why = io::WhyNotReadable(db); std::filesystem::exists(db) && !why.empty()) {
    err << who << ": --db: " << db << ": " << why << "\n";
    return 1;
  }
  // From here on a failure must leave no new ledger file behind (an existing ledger is only
  // changed by the final write, one transaction).
  NewFileGuard guard(db);
  if (books.empty() && !guard.existed()) {
    err << who << ": no PriceBook given (" << price_option << ") and " << db
        << " does not exist yet to hold one\n";
    return 1;
  }
  auto ledger = sqlite::Ledger::Open(db);
  if (!ledger.ok()) {
    err << who << ": " << ledger.message() << "\n";
    return 1;
  }
  if (books.empty()) {
    auto stored = (*ledger)->PriceBooks();
    if (stored.ok()) books = std::move(*stored);
  }
  if (books.empty()) {
    err << who << ": no PriceBook given (" << price_option << ") and none stored in " << db << "\n";
    return 1;
  }
  auto cat = billing::PriceCatalog::Create(std::move(books));
  if (!cat.ok()) {
    err << who << ": " << cat.message() << "\n";
    return 1;
  }
  if (std::string why = UnpricedSegment(segments, *cat); !why.empty()) {
    err << who << ": " << why << "\n";
    return 1;
  }
  billing::MeterConfig cfg;
  cfg.scrape_interval = scrape_interval;
  auto rows = billing::MeterSegments(segments, cfg);
  if (!rows.ok()) {
    err << who << ": " << rows.message() << "\n";
    return 1;
  }
  // Every hour must be priceable before anything is written.
  if (auto check = billing::BuildInvoices(*rows, *cat); !check.ok()) {
    err << who << ": " << check.message() << "\n";
    return 1;
  }
  auto st = (*ledger)->Write(*rows, *cat, seal_before);
  if (!st.ok()) {
    err << who << ": " << st.message() << "\n";
    return 1;
  }
  guard.Keep();
  out << label << ": " << segments.size() << " segments, " << rows->size()
      << " hourly rows: " << st->inserted << " inserted, " << st->unchanged << " unchanged, "
      << st->replaced << " replaced, " << st->corrected << " corrected (new versions)\n";
  return 0;
}

}  // namespace arbiter::app
