// Small text helpers for messages.
#pragma once

#include <string>
#include <string_view>

namespace arbiter {

// "\"" + text + "\"" for error messages, built by appending. GCC 12 at -O3 reports a false
// -Wrestrict overlap (an error under -Werror) for `"literal" + std::string&&`, which inserts at
// position 0 (GCC bug 105651); appending never inserts.
inline std::string Quoted(std::string_view text) {
  std::string s;
  s.reserve(text.size() + 2);
  s += '"';
  s.append(text);
  s += '"';
  return s;
}

}  // namespace arbiter
