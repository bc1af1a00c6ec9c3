// Counted nouns for text output: Plural(1, "workload") is "1 workload", Plural(3, "workload")
// "3 workloads", Plural(2, "GPU-second") "2 GPU-seconds"; irregular plurals are passed in
// (Plural(n, "entry", "entries")).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arbiter {

inline std::string Plural(int64_t n, std::string_view singular, std::string_view plural = {}) {
  std::string s = std::to_string(n) + " ";
  if (n == 1 || n == -1) return s.append(singular);
  if (!plural.empty()) return s.append(plural);
  return s.append(singular).append("s");
}

// For unsigned counts (container sizes).
inline std::string Plural(uint64_t n, std::string_view singular, std::string_view plural = {}) {
  return Plural(static_cast<int64_t>(n), singular, plural);
}
inline std::string Plural(int32_t n, std::string_view singular, std::string_view plural = {}) {
  return Plural(static_cast<int64_t>(n), singular, plural);
}

}  // namespace arbiter
