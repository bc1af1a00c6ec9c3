#include "ledger_write.h"

#include <filesystem>

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
      << " unchanged, " << st->replaced << " replaced, " << st->corrected << " corrected (new versions)\n";
  return 0;
}

}  // namespace arbiter::app
