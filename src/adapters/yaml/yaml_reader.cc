#include "adapters/yaml/yaml_reader.h"

#include <algorithm>
#include <set>

#include "core/int128.h"
#include "core/resources.h"
#include "core/text.h"

namespace arbiter::yaml {

namespace {

std::string Quote(std::string_view text) {
  const std::string capped = Echo(text, 120);  // a 50 MB value is not echoed whole
  const std::string_view s = capped;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

const char* TypeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "an empty value";
    default:
      return "nothing";
  }
}

const char* PlainTypeName(PlainType t) {
  switch (t) {
    case PlainType::kBool:
      return "a boolean";
    case PlainType::kInt:
      return "an integer";
    case PlainType::kFloat:
      return "a number";
    case PlainType::kString:
      return "a string";
  }
  return "a string";
}

std::string Lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return r;
}

}  // namespace

std::string ChildPath(const std::string& path, std::string_view key) {
  return FieldPathChild(path, key);
}

std::string IndexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

namespace {
thread_local int g_line_offset = 0;
}  // namespace

LineOffsetScope::LineOffsetScope(int lines_before) : saved_(g_line_offset) {
  g_line_offset = lines_before;
}
LineOffsetScope::~LineOffsetScope() { g_line_offset = saved_; }

int NodeLine(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  YAML::Mark m = node.Mark();
  return m.line >= 0 ? m.line + 1 + g_line_offset : 0;
}

bool IsQuotedScalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag == "!" || tag == "tag:yaml.org,2002:str";
}

PlainType ResolvePlain(std::string_view t) {
  // The single letters y / n are YAML 1.1 booleans too, but read as strings here: names such as
  // `n` are more likely than a boolean meant as a label value.
  static const std::set<std::string_view> kBools = {
      "yes",   "Yes",   "YES",   "no", "No", "NO", "true", "True", "TRUE",
      "false", "False", "FALSE", "on", "On", "ON", "off",  "Off",  "OFF"};
  if (kBools.count(t)) return PlainType::kBool;
  std::string_view s = t;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  if (AllDigits(s)) return PlainType::kInt;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) return PlainType::kInt;
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN")
    return PlainType::kFloat;
  // [0-9]*(\.[0-9]*)?([eE][-+]?[0-9]+)? with at least one digit before the exponent.
  size_t i = 0;
  bool digits = false;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, digits = true;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, digits = true;
  }
  if (!digits) return PlainType::kString;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!AllDigits(s.substr(i))) return PlainType::kString;
    return PlainType::kFloat;
  }
  return i == s.size() ? PlainType::kFloat : PlainType::kString;
}

// ------------------------------------------------------------------ DocReader

void DocReader::Report(Severity sev, int line, const std::string& path, std::string message) {
  if (line <= 0) line = locator_ ? locator_->LineOf(source_, path) : source_.line;
  if (line <= 0) line = source_.line;
  if (sev == Severity::kError) ++errors_;
  diags_->Add({sev, file_, line, kind_, name_, path, std::move(message)});
}

void DocReader::Error(const YAML::Node& at, const std::string& path, std::string message) {
  int line = (at.IsDefined() && !at.IsNull()) ? NodeLine(at) : 0;
  Report(Severity::kError, line, path, std::move(message));
}

void DocReader::Warn(const YAML::Node& at, const std::string& path, std::string message) {
  int line = (at.IsDefined() && !at.IsNull()) ? NodeLine(at) : 0;
  Report(Severity::kWarning, line, path, std::move(message));
}

void DocReader::ErrorAtLine(int line, const std::string& path, std::string message) {
  Report(Severity::kError, line, path, std::move(message));
}

bool DocReader::ReadStruct(const YAML::Node& node, const std::string& path,
                           const std::vector<Field>& fields,
                           const std::vector<std::string_view>& ignored,
                           const std::vector<std::string_view>& ignored_warn) {
  if (node.IsNull()) return true;
  if (!node.IsMap()) {
    Error(node, path, std::string("expected a mapping, got ") + TypeName(node));
    return false;
  }
  std::vector<std::string_view> seen;  // a struct has a few fields: a list beats a set
  for (auto it = node.begin(); it != node.end(); ++it) {
    // yaml-cpp's iterator returns its pair by value: copy the node handles, never bind
    // references to it->first / it->second (they would dangle).
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Error(key, path, std::string("field names must be scalars, got ") + TypeName(key));
      continue;
    }
    const std::string& k = key.Scalar();  // the node (and its text) lives as long as `node`
    std::string child = ChildPath(path, k);
    const bool again = std::find(seen.begin(), seen.end(), k) != seen.end();
    if (!again) seen.push_back(k);
    if (again) {
      Error(key, child, "duplicate field " + Quote(k));
      continue;
    }
    auto f =
        std::find_if(fields.begin(), fields.end(), [&](const Field& x) { return x.name == k; });
    if (f != fields.end()) {
      f->read(value, child);
      continue;
    }
    if (std::find(ignored.begin(), ignored.end(), k) != ignored.end()) continue;
    if (std::find(ignored_warn.begin(), ignored_warn.end(), k) != ignored_warn.end()) {
      Warn(key, child, "is not modelled by Arbiter and is ignored");
      continue;
    }
    std::vector<std::string> names;
    for (const auto& x : fields) names.emplace_back(x.name);
    std::string msg = "unknown field " + Quote(k);
    if (auto s = DidYouMean(k, names)) {
      msg += "; did you mean " + Quote(*s) + "?";
    } else if (!names.empty()) {
      msg += " (valid fields: ";
      for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
      msg += ")";
    }
    Error(key, child, msg);
  }
  return true;
}

bool DocReader::ForEachEntry(const YAML::Node& node, const std::string& path,
                             const std::function<void(const std::string&, const YAML::Node&,
                                                      const YAML::Node&, const std::string&)>& fn) {
  if (node.IsNull()) return true;
  if (!node.IsMap()) {
    Error(node, path, std::string("expected a mapping, got ") + TypeName(node));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;  // copies: see ReadStruct
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Error(key, path, std::string("keys must be scalars, got ") + TypeName(key));
      continue;
    }
    const std::string k = key.Scalar();
    std::string child = ChildPath(path, k);
    if (!seen.insert(k).second) {
      Error(key, child, "duplicate key " + Quote(k));
      continue;
    }
    fn(k, key, value, child);
  }
  return true;
}

bool DocReader::ForEachItem(const YAML::Node& node, const std::string& path,
                            const std::function<void(const YAML::Node&, const std::string&)>& fn) {
  if (node.IsNull()) return true;
  if (!node.IsSequence()) {
    Error(node, path, std::string("expected a list, got ") + TypeName(node));
    return false;
  }
  size_t i = 0;
  for (auto it = node.begin(); it != node.end(); ++it, ++i) {
    std::string child = IndexPath(path, i);
    const YAML::Node item = *it;
    fn(item, child);
  }
  return true;
}

std::optional<std::string> DocReader::Text(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) {
    Error(node, path, "value is missing");
    return std::nullopt;
  }
  if (!node.IsScalar()) {
    Error(node, path, std::string("expected a scalar value, got ") + TypeName(node));
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::string> DocReader::String(const YAML::Node& node, const std::string& path) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  if (!IsQuotedScalar(node)) {
    PlainType pt = ResolvePlain(*t);
    if (pt != PlainType::kString) {
      Error(node, path,
            std::string("expected a string, got ") + PlainTypeName(pt) + " " + Echo(*t, 120) +
                "; quote it (" + Quote(*t) + ")");
      return std::nullopt;
    }
  }
  return t;
}

std::optional<int64_t> DocReader::Int(const YAML::Node& node, const std::string& path, int64_t min,
                                      int64_t max) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  if (IsQuotedScalar(node)) {
    Error(node, path, "expected an integer, got the string " + Quote(*t) + "; remove the quotes");
    return std::nullopt;
  }
  std::string_view s = *t;
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (!AllDigits(s)) {
    Error(node, path, "expected an integer, got " + Quote(*t));
    return std::nullopt;
  }
  int128 v = 0;
  for (char c : s) {
    v = v * 10 + (c - '0');
    if (v > (static_cast<int128>(1) << 64)) break;
  }
  if (neg) v = -v;
  if (v < min || v > max) {
    Error(node, path,
          "integer " + Echo(*t) + " is out of range [" + std::to_string(min) + ", " +
              std::to_string(max) + "]");
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

std::optional<bool> DocReader::Bool(const YAML::Node& node, const std::string& path) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  if (!IsQuotedScalar(node)) {
    if (*t == "true" || *t == "True" || *t == "TRUE") return true;
    if (*t == "false" || *t == "False" || *t == "FALSE") return false;
  }
  Error(node, path, "expected a boolean (true or false), got " + Quote(*t));
  return std::nullopt;
}

std::optional<int64_t> DocReader::Quantity(std::string_view resource, const YAML::Node& node,
                                           const std::string& path) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  if (!IsQuotedScalar(node) && ResolvePlain(*t) == PlainType::kBool) {
    Error(node, path, "expected a quantity, got the boolean " + Echo(*t));
    return std::nullopt;
  }
  auto v = ParseResourceQuantity(resource, *t);
  if (!v.ok()) {
    Error(node, path, v.message());
    return std::nullopt;
  }
  return *v;
}

std::optional<Millis> DocReader::Duration(const YAML::Node& node, const std::string& path) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  auto d = ParseDuration(*t);
  if (!d.ok()) {
    Error(node, path, d.message());
    return std::nullopt;
  }
  if (*d < 0) {
    Error(node, path, "duration " + Quote(*t) + " must not be negative");
    return std::nullopt;
  }
  return *d;
}

std::optional<Decimal> DocReader::NonNegativeDecimal(const YAML::Node& node,
                                                     const std::string& path) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  auto d = Decimal::Parse(*t);
  if (!d.ok()) {
    Error(node, path, d.message());
    return std::nullopt;
  }
  if (d->negative()) {
    Error(node, path, Quote(*t) + " must not be negative");
    return std::nullopt;
  }
  return *d;
}

std::optional<size_t> DocReader::Enum(const YAML::Node& node, const std::string& path,
                                      const std::vector<std::string>& allowed) {
  auto t = Text(node, path);
  if (!t) return std::nullopt;
  for (size_t i = 0; i < allowed.size(); ++i)
    if (allowed[i] == *t) return i;
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) list += (i ? " | " : "") + allowed[i];
  std::string msg = "unknown value " + Quote(*t) + " (allowed: " + list + ")";
  for (const auto& a : allowed)
    if (Lower(a) == Lower(*t)) {
      msg = "unknown value " + Quote(*t) + "; did you mean " + Quote(a) +
            "? (values are case-sensitive)";
      break;
    }
  Error(node, path, msg);
  return std::nullopt;
}

std::vector<std::string> DocReader::StringList(const YAML::Node& node, const std::string& path) {
  std::vector<std::string> out;
  ForEachItem(node, path, [&](const YAML::Node& item, const std::string& p) {
    if (auto s = String(item, p)) out.push_back(*s);
  });
  return out;
}

std::map<std::string, std::string> DocReader::StringMap(const YAML::Node& node,
                                                        const std::string& path,
                                                        bool label_values) {
  std::map<std::string, std::string> out;
  ForEachEntry(
      node, path,
      [&](const std::string& k, const YAML::Node&, const YAML::Node& v, const std::string& p) {
        if (label_values && v.IsNull()) {  // `key:` is the empty label value
          out[k] = "";
          return;
        }
        if (auto s = String(v, p)) out[k] = *s;
      });
  return out;
}

ResourceList DocReader::Resources(const YAML::Node& node, const std::string& path) {
  ResourceList out;
  ForEachEntry(
      node, path,
      [&](const std::string& k, const YAML::Node& key, const YAML::Node& v, const std::string& p) {
        auto info = ClassifyResource(k);
        if (!info.ok()) {
          std::string msg = info.message();
          if (auto s =
                  DidYouMean(k, {"cpu", "memory", "ephemeral-storage", "pods", "nvidia.com/gpu"}))
            msg += "; did you mean " + Quote(*s) + "?";
          Error(key, p, msg);
          return;
        }
        if (auto q = Quantity(k, v, p)) out.Set(k, *q);
      });
  return out;
}

}  // namespace arbiter::yaml
