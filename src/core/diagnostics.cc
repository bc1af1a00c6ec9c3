#include "core/diagnostics.h"

#include <algorithm>

namespace arbiter {

std::string Diagnostic::ToString() const {
  std::string s = line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";  // 0: the file itself
  if (!kind.empty()) s += kind + "/" + (name.empty() ? "<unnamed>" : name) + ": ";
  if (!field_path.empty()) s += field_path + ": ";
  if (severity == Severity::kWarning) s += "warning: ";
  s += message;
  return s;
}

bool Diagnostics::HasErrors() const { return ErrorCount() > 0; }

size_t Diagnostics::ErrorCount() const {
  return std::count_if(items.begin(), items.end(),
                       [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

size_t Diagnostics::WarningCount() const { return items.size() - ErrorCount(); }

void Diagnostics::Sort() {
  std::stable_sort(items.begin(), items.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.file != b.file) return a.file < b.file;
    return a.line < b.line;
  });
}

}  // namespace arbiter
