#include "ledger_read.h"

#include <algorithm>
#include <filesystem>

#include "cli_flags.h"
#include "core/text.h"

namespace arbiter::app {

std::unique_ptr<sqlite::Ledger> OpenExisting(const char* cmd, const std::string& path, bool check,
                                             int* exit_code) {
  if (!std::filesystem::exists(path) && path != "-") {
    *exit_code =
        InputError(cmd, "--db: " + path + ": no such ledger (`arbiter invoice ingest --db " + path +
                            " ...` or `arbiter sim --ledger " + path + "` creates one)");
    return nullptr;
  }
  auto l = sqlite::Ledger::OpenForReading(
      path, check ? sqlite::OpenCheck::kAfterUncleanShutdown : sqlite::OpenCheck::kNone);
  if (!l.ok()) {
    *exit_code = InputError(cmd, l.message());
    return nullptr;
  }
  return std::move(l).value();
}

bool KnownNamespace(const char* cmd, sqlite::Ledger& ledger, const std::string& ns,
                    int* exit_code) {
  auto names = ledger.Namespaces();
  if (!names.ok()) {
    *exit_code = InputError(cmd, names.message());
    return false;
  }
  if (std::find(names->begin(), names->end(), ns) != names->end()) return true;
  std::string msg = "--namespace: the ledger has no namespace " + QuotedEcho(ns);
  if (names->empty()) {
    msg += " (it has no rows yet)";
  } else {
    msg += DidYouMeanText(ns, *names);
    std::string list;
    for (size_t i = 0; i < names->size() && i < 20; ++i) list += (i ? ", " : "") + (*names)[i];
    if (names->size() > 20) list += ", ... (" + std::to_string(names->size()) + " in all)";
    msg += " (namespaces: " + list + ")";
  }
  *exit_code = InputError(cmd, msg);
  return false;
}

std::unique_ptr<sqlite::Ledger> OpenWindow(const char* cmd, const LedgerWindowFlags& flags,
                                           sqlite::RowFilter* f, int* exit_code) {
  if (int rc = WindowFlags(cmd, flags.month, flags.from, flags.to, &f->from, &f->to);
      rc != kExitOk) {
    *exit_code = rc;
    return nullptr;
  }
  auto ledger = OpenExisting(cmd, flags.db, /*check=*/true, exit_code);
  if (!ledger || flags.ns.empty()) return ledger;
  if (!KnownNamespace(cmd, *ledger, flags.ns, exit_code)) return nullptr;
  f->namespace_ = flags.ns;
  return ledger;
}

}  // namespace arbiter::app
