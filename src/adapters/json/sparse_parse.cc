#include "adapters/json/sparse_parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

namespace arbiter::json_sparse {

namespace {

using nlohmann::json;

// Kept values nest at most this deep along the Keep (a stored object's text is checked to 64
// levels before it is stored); deeper text is refused rather than recursed into.
constexpr int kMaxDepth = 128;

// The bytes that end a run inside a string, and inside an object or array being skipped.
constexpr std::array<bool, 256> StopTable(std::string_view stops) {
  std::array<bool, 256> t{};
  for (char c : stops) t[static_cast<unsigned char>(c)] = true;
  return t;
}
constexpr std::array<bool, 256> kStringStop = StopTable("\"\\");
constexpr std::array<bool, 256> kNestedStop = StopTable("\"{}[]");

// A cursor over the text: whitespace skipped before each token.
class Reader {
 public:
  explicit Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  const char* At() {  // the next token's start
    Space();
    return p_;
  }
  const char* Pos() const { return p_; }  // just after the last token read
  bool AtEnd() {
    Space();
    return p_ == end_;
  }
  char Peek() {
    Space();
    return p_ < end_ ? *p_ : '\0';
  }
  bool Eat(char c) {
    Space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  // A string token: `raw` is what is between its quotes, `escaped` whether it holds a backslash.
  bool String(std::string_view& raw, bool& escaped) {
    Space();
    if (p_ == end_ || *p_ != '"') return false;
    const char* start = ++p_;
    escaped = false;
    for (;;) {
      while (p_ < end_ && !kStringStop[static_cast<unsigned char>(*p_)]) ++p_;
      if (p_ == end_) return false;
      if (*p_ == '"') break;
      escaped = true;
      if (end_ - p_ < 2) return false;
      p_ += 2;
    }
    raw = {start, static_cast<size_t>(p_ - start)};
    ++p_;
    return true;
  }
  // One value, not built: `raw` is its text. Objects and arrays are checked only for balance.
  bool Skip(std::string_view& raw) {
    Space();
    const char* start = p_;
    if (p_ == end_) return false;
    std::string_view s;
    bool escaped = false;
    if (*p_ == '"') {
      if (!String(s, escaped)) return false;
    } else if (*p_ == '{' || *p_ == '[') {
      if (!SkipNested()) return false;
    } else {
      while (p_ < end_ && !IsDelimiter(*p_)) ++p_;
      if (p_ == start) return false;
    }
    raw = {start, static_cast<size_t>(p_ - start)};
    return true;
  }

 private:
  static bool IsDelimiter(char c) {
    return c == ',' || c == '}' || c == ']' || c == ':' || c == ' ' || c == '\n' || c == '\r' ||
           c == '\t';
  }
  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool SkipNested() {
    size_t depth = 0;
    std::string_view s;
    bool escaped = false;
    while (p_ < end_) {
      while (p_ < end_ && !kNestedStop[static_cast<unsigned char>(*p_)]) ++p_;
      if (p_ == end_) break;
      const char c = *p_;
      if (c == '"') {
        if (!String(s, escaped)) return false;
        continue;
      }
      ++p_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if (--depth == 0) {
        return true;
      }
    }
    return false;
  }

  const char* p_;
  const char* end_;
};

// A scalar kept: strings without escapes, integers and the literals made directly (as json::parse
// makes them: a non-negative integer unsigned), the rest parsed. A plain string's bytes are taken
// as they are (not checked for UTF-8: the texts read here were written by a JSON serializer).
// Whether `s` holds a control byte, which JSON refuses unescaped in a string.
bool HasControl(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

bool ScalarOf(std::string_view raw, json& out) {
  if (raw.size() >= 2 && raw.front() == '"' && raw.find('\\') == std::string_view::npos &&
      !HasControl(raw)) {
    out = std::string(raw.substr(1, raw.size() - 2));
    return true;
  }
  if (raw == "true" || raw == "false") {
    out = raw == "true";
    return true;
  }
  if (raw == "null") {
    out = nullptr;
    return true;
  }
  const bool negative = !raw.empty() && raw.front() == '-';
  const std::string_view digits = raw.substr(negative ? 1 : 0);
  if (!digits.empty() && digits.size() <= 18 && (digits[0] != '0' || digits.size() == 1) &&
      digits.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t v = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (negative && v != 0)
      out = -v;
    else if (!negative)
      out = static_cast<uint64_t>(v);
    else
      out = int64_t{0};  // "-0" parses as the integer 0
    return true;
  }
  out = json::parse(raw, nullptr, /*allow_exceptions=*/false);
  return !out.is_discarded();
}

// A key's name: its raw text, or when it has escapes its unescaped text, kept in `storage`.
bool KeyName(std::string_view key, bool escaped, std::string& storage, std::string_view& name) {
  if (!escaped && !HasControl(key)) {
    name = key;
    return true;
  }
  json unescaped;
  if (!ScalarOf({key.data() - 1, key.size() + 2}, unescaped) || !unescaped.is_string())
    return false;
  storage = unescaped.get<std::string>();
  name = storage;
  return true;
}

// A value kept whole, built as it is read.
bool BuildWhole(Reader& r, int depth, json& out) {
  if (depth > kMaxDepth) return false;
  const char c = r.Peek();
  if (c == '[') {
    out = json::array();
    r.Eat('[');
    if (r.Eat(']')) return true;
    do {
      json element;
      if (!BuildWhole(r, depth + 1, element)) return false;
      out.push_back(std::move(element));
    } while (r.Eat(','));
    return r.Eat(']');
  }
  if (c == '{') {
    out = json::object();
    r.Eat('{');
    if (r.Eat('}')) return true;
    do {
      std::string_view key, name;
      std::string storage;
      bool escaped = false;
      json value;
      if (!r.String(key, escaped) || !r.Eat(':') || !KeyName(key, escaped, storage, name) ||
          !BuildWhole(r, depth + 1, value))
        return false;
      out[std::string(name)] = std::move(value);
    } while (r.Eat(','));
    return r.Eat('}');
  }
  std::string_view raw;
  return r.Skip(raw) && ScalarOf(raw, out);
}

const Keep* FindMember(const Keep& keep, std::string_view name) {
  for (const KeepMember& m : keep.members)
    if (m.name == name) return &m.keep;
  return nullptr;
}

bool Value(Reader& r, const Keep& keep, int depth, json& out);

bool CountedArray(Reader& r, json& out) {
  out = json::array();
  if (!r.Eat('[')) return false;
  if (r.Eat(']')) return true;
  std::string_view raw;
  do {
    if (!r.Skip(raw)) return false;
    out.push_back(nullptr);
  } while (r.Eat(','));
  return r.Eat(']');
}

bool KeptArray(Reader& r, const Keep& keep, int depth, json& out) {
  out = json::array();
  if (!r.Eat('[')) return false;
  if (r.Eat(']')) return true;
  do {
    json element;
    if (!Value(r, keep, depth + 1, element)) return false;
    out.push_back(std::move(element));
  } while (r.Eat(','));
  return r.Eat(']');
}

bool KeptMembers(Reader& r, const Keep& keep, int depth, json& out, RawMember* raw_member) {
  out = json::object();
  if (!r.Eat('{')) return false;
  if (r.Eat('}')) return true;
  do {
    std::string_view key, name, raw;
    std::string storage;
    bool escaped = false;
    if (!r.String(key, escaped) || !r.Eat(':') || !KeyName(key, escaped, storage, name))
      return false;
    const char* start = r.At();
    const Keep* sub = FindMember(keep, name);
    if (!sub) {
      if (!r.Skip(raw)) return false;
    } else {
      json value;
      if (!Value(r, *sub, depth + 1, value)) return false;
      out[std::string(name)] = std::move(value);
    }
    if (raw_member && name == raw_member->key) {
      raw_member->text = {start, static_cast<size_t>(r.Pos() - start)};
      raw_member->found = true;
    }
  } while (r.Eat(','));
  return r.Eat('}');
}

bool Value(Reader& r, const Keep& keep, int depth, json& out) {
  if (depth > kMaxDepth) return false;
  const char c = r.Peek();
  if (keep.mode == Keep::Mode::kCount && c == '[') return CountedArray(r, out);
  if (keep.mode == Keep::Mode::kMembers && c == '{')
    return KeptMembers(r, keep, depth, out, nullptr);
  if (keep.mode == Keep::Mode::kMembers && c == '[') return KeptArray(r, keep, depth, out);
  return BuildWhole(r, depth, out);
}

}  // namespace

Keep Members(std::vector<KeepMember> members) { return {Keep::Mode::kMembers, std::move(members)}; }

bool Parse(std::string_view text, const Keep& keep, json& out, RawMember* raw) {
  Reader r(text);
  if (raw) raw->found = false;
  if (raw && keep.mode == Keep::Mode::kMembers && r.Peek() == '{')
    return KeptMembers(r, keep, 0, out, raw) && r.AtEnd();
  return Value(r, keep, 0, out) && r.AtEnd();
}

json Prune(const json& value, const Keep& keep) {
  if (keep.mode == Keep::Mode::kCount && value.is_array())
    return json::array_t(value.size(), json(nullptr));
  if (keep.mode != Keep::Mode::kMembers) return value;
  if (value.is_array()) {
    json out = json::array();
    for (const json& element : value) out.push_back(Prune(element, keep));
    return out;
  }
  if (!value.is_object()) return value;
  json out = json::object();
  for (const KeepMember& m : keep.members)
    if (auto it = value.find(m.name); it != value.end()) out[m.name] = Prune(*it, m.keep);
  return out;
}

bool MemberText(std::string_view text, std::string_view key, std::string_view& value) {
  Reader r(text);
  if (!r.Eat('{') || r.Eat('}')) return false;
  bool found = false;
  do {
    std::string_view key_text, name, raw;
    std::string storage;
    bool escaped = false;
    if (!r.String(key_text, escaped) || !r.Eat(':') || !r.Skip(raw) ||
        !KeyName(key_text, escaped, storage, name))
      return false;
    if (name == key) {
      value = raw;
      found = true;
    }
  } while (r.Eat(','));
  return r.Eat('}') && r.AtEnd() && found;
}

}  // namespace arbiter::json_sparse
