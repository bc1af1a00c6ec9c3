// Reading an existing ledger from a command (`arbiter invoice`, `ledger export|check|tracks`):
// opening it with the commands' messages, checking a --namespace, and the text table they print.
#pragma once

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "adapters/sqlite/ledger.h"

namespace arbiter::app {

// Opens an existing ledger for a reading command (read-only, see Ledger::OpenForReading). With
// `check`, one left by an unclean shutdown is checked whole (PRAGMA quick_check) and refused when
// damaged before anything is printed from it (sqlite::OpenCheck); every read checks the pages it
// touches. Without (`ledger check`, which checks everything itself), nothing is refused. On an
// error: nullptr, the message printed and *exit_code set.
std::unique_ptr<sqlite::Ledger> OpenExisting(const char* cmd, const std::string& path, bool check,
                                             int* exit_code);

// A --namespace the ledger has never seen is a mistake (exit 1, *exit_code set), not an empty
// result.
bool KnownNamespace(const char* cmd, sqlite::Ledger& ledger, const std::string& ns, int* exit_code);

// The flags of a command that reads a window of a ledger's rows (`ledger export`, `ledger
// tracks`): --db, --namespace, and --month or --from/--to.
struct LedgerWindowFlags {
  std::string db, ns, from, to, month;
};

// Their steps, in order: the window (WindowFlags) into f->from and f->to, the ledger opened
// (OpenExisting, checked), a --namespace it knows (KnownNamespace) into f->namespace_. On an
// error: nullptr, the message printed and *exit_code set.
std::unique_ptr<sqlite::Ledger> OpenWindow(const char* cmd, const LedgerWindowFlags& flags,
                                           sqlite::RowFilter* f, int* exit_code);

// A text table: columns as wide as their widest cell, two spaces apart, numbers right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::pair<std::string, bool>> columns)
      : cols_(std::move(columns)) {
    for (const auto& [h, right] : cols_) width_.push_back(h.size());
  }
  void Row(std::vector<std::string> cells) {
    for (size_t i = 0; i < cells.size() && i < width_.size(); ++i)
      width_[i] = std::max(width_[i], cells[i].size());
    rows_.push_back(std::move(cells));
  }
  void Print(std::ostream& out, const std::string& indent,
             const std::vector<std::string>& notes) const {
    std::vector<std::string> head;
    for (const auto& c : cols_) head.push_back(c.first);
    Line(out, indent, head, "");
    for (size_t r = 0; r < rows_.size(); ++r)
      Line(out, indent, rows_[r], r < notes.size() ? notes[r] : "");
  }

 private:
  void Line(std::ostream& out, const std::string& indent, const std::vector<std::string>& cells,
            const std::string& note) const {
    std::string line = indent;
    for (size_t i = 0; i < cols_.size(); ++i) {
      const std::string& c = i < cells.size() ? cells[i] : std::string();
      const std::string pad(width_[i] - c.size(), ' ');
      if (i) line += "  ";
      line += cols_[i].second ? pad + c : (i + 1 == cols_.size() ? c : c + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << note << "\n";
  }
  std::vector<std::pair<std::string, bool>> cols_;
  std::vector<size_t> width_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace arbiter::app
