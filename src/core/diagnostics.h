// Diagnostics: one problem found in a manifest, printed as
// `FILE:LINE: Kind/name: field.path: message` (warnings say `warning:` before the message).
#pragma once

#include <string>
#include <vector>

namespace arbiter {

enum class Severity { kError, kWarning };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string file;
  int line = 0;
  std::string kind;        // "Pod", "" when the document has no kind
  std::string name;        // "team-a/train-1" for namespaced objects, "" when unknown
  std::string field_path;  // "spec.containers[0].resources.requests.cpu", "" for the document
  std::string message;

  // Parts taken from the input are capped (name 256 bytes, field path 512, message
  // kMaxMessageBytes) with "... (N bytes)".
  std::string ToString() const;
  static constexpr size_t kMaxMessageBytes = 4096;
};

struct Diagnostics {
  std::vector<Diagnostic> items;
  void Add(Diagnostic d) { items.push_back(std::move(d)); }
  bool HasErrors() const;
  size_t ErrorCount() const;
  size_t WarningCount() const;
  // Stable order: file, line, then insertion order.
  void Sort();
};

}  // namespace arbiter
