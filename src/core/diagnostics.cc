#include "core/diagnostics.h"

#include <algorithm>

#include "core/text.h"

namespace arbiter {

std::string Diagnostic::ToString() const {
  // Every part that comes from the input is capped: a huge key or name (the loaders already cap
  // the values they quote) never makes a huge line.
  std::string s =
      line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";  // 0: the file itself
  if (!kind.empty())
    s += Echo(kind, 64) + "/" + (name.empty() ? "<unnamed>" : Echo(name, 256)) + ": ";
  if (!field_path.empty()) s += Echo(field_path, 512) + ": ";
  if (severity == Severity::kWarning) s += "warning: ";
  s += Echo(message, kMaxMessageBytes);
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
