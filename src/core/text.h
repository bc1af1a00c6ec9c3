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

// A value from the input, shortened for an error message: at most `max_bytes` of it (cut at a
// UTF-8 character boundary) followed by "... (N bytes)" when it is longer. Error messages echo
// what the user wrote; a 50 MB field must not make a 50 MB message.
inline constexpr size_t kEchoBytes = 80;
inline std::string Echo(std::string_view text, size_t max_bytes = kEchoBytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;  // not inside a character
  std::string s(text.substr(0, cut));
  s.append("... (").append(std::to_string(text.size())).append(" bytes)");
  return s;
}

// Quoted(Echo(text)).
inline std::string QuotedEcho(std::string_view text, size_t max_bytes = kEchoBytes) {
  return Quoted(Echo(text, max_bytes));
}

}  // namespace arbiter
