#include "adapters/yaml/fast_yaml.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace arbiter::yaml {

namespace {

// Printable ASCII only, as FastParser::Split takes.
bool Printable(std::string_view s) {
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

bool IsNullWord(std::string_view s) {
  return s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// Characters that cannot start a plain scalar here ('-' can, before a non-space).
bool PlainStart(std::string_view l, size_t pos) {
  if (pos >= l.size()) return false;
  const char c = l[pos];
  if (c == '-') return pos + 1 < l.size() && l[pos + 1] != ' ';
  static constexpr std::string_view kIndicators = "?:,[]{}#&*!|>'\"%@`";
  return kIndicators.find(c) == std::string_view::npos;
}

}  // namespace

class FastParser {
 public:
  explicit FastParser(FastReader& r)
      : r_(r), lines_(r.lines_), indent_(r.indent_), nodes_(r.nodes_) {
    lines_.clear();
    indent_.clear();
    nodes_.clear();
    r.owned_.clear();
  }

  // Splits the text into lines; false when a byte is outside the subset (tabs, control
  // characters, non-ASCII, CR, a BOM) or a line is a directive or a document marker after the
  // first line.
  bool Split(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string_view::npos) eol = text.size();
      const std::string_view l = text.substr(pos, eol - pos);
      for (char ch : l) {
        const auto u = static_cast<unsigned char>(ch);
        if (u < 0x20 || u >= 0x7f) return false;
      }
      int indent = -1;
      const size_t first = l.find_first_not_of(' ');
      if (first != std::string_view::npos && l[first] != '#') indent = static_cast<int>(first);
      if (l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ')) {
        if (!lines_.empty()) return false;
        const size_t rest = l.find_first_not_of(' ', 3);
        if (rest != std::string_view::npos && l[rest] != '#') return false;
        indent = -1;
      } else if (l.substr(0, 3) == "..." || (!l.empty() && l[0] == '%')) {
        return false;
      }
      lines_.push_back(l);
      indent_.push_back(indent);
      pos = eol + 1;
    }
    return true;
  }

  bool Document() {
    li_ = NextContent(0);
    if (li_ >= lines_.size()) return false;
    r_.line_ = static_cast<int>(li_);
    const uint32_t root = New();
    const int col = indent_[li_];
    const std::string_view l = lines_[li_];
    const size_t pos = static_cast<size_t>(col);
    if (l[pos] == '{' || l[pos] == '[') {
      if (!InlineToEnd(root, pol(col))) return false;
    } else if (!Block(root, col)) {
      return false;
    }
    return li_ >= lines_.size();  // else more content than one node
  }

 private:
  using Type = FastNode::Type;
  static size_t pol(int col) { return static_cast<size_t>(col); }

  uint32_t New() {
    nodes_.emplace_back();
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  // Appends a new child to `parent` after `last` (kNoNode: the first child).
  uint32_t Child(uint32_t parent, uint32_t& last) {
    const uint32_t c = New();
    if (last == kNoNode)
      nodes_[parent].first = c;
    else
      nodes_[last].next = c;
    last = c;
    return c;
  }
  void SetScalar(uint32_t v, std::string_view text, bool quoted) {
    FastNode& n = nodes_[v];
    if (!quoted && IsNullWord(text)) {
      n.type = Type::kNull;
      return;
    }
    n.type = Type::kScalar;
    n.text = text;
    n.quoted = quoted;
  }
  // True when a mapping's keys (children of v) hold `key` already.
  bool HasKey(uint32_t v, std::string_view key) const {
    for (uint32_t k = nodes_[v].first; k != kNoNode; k = nodes_[nodes_[k].next].next)
      if (nodes_[k].text == key) return true;
    return false;
  }

  size_t NextContent(size_t i) const {
    while (i < lines_.size() && indent_[i] < 0) ++i;
    return i;
  }

  bool IsSeqLine(size_t i, int col) const {
    const std::string_view l = lines_[i];
    const size_t c = pol(col);
    return indent_[i] == col && l[c] == '-' && (c + 1 == l.size() || l[c + 1] == ' ');
  }

  // The node that starts at line li_, column col: a block list or a block mapping.
  bool Block(uint32_t v, int col) {
    if (IsSeqLine(li_, col)) return BlockSeq(v, col);
    if (!LooksLikeKey(lines_[li_], pol(col))) return false;
    return BlockMap(v, col);
  }

  // True when the text at pos is a mapping key: a plain or quoted scalar, then ':' and a space
  // or the end of the line.
  bool LooksLikeKey(std::string_view l, size_t pos) {
    if (pos >= l.size()) return false;
    if (l[pos] == '"' || l[pos] == '\'') {
      size_t p = pos;
      if (!Quoted(l, p, nullptr)) return false;
      return p < l.size() && l[p] == ':' && (p + 1 == l.size() || l[p + 1] == ' ');
    }
    for (size_t i = pos; i < l.size(); ++i) {
      if (l[i] == ':' && (i + 1 == l.size() || l[i + 1] == ' ')) return true;
      if (l[i] == '#' && i > pos && l[i - 1] == ' ') return false;
    }
    return false;
  }

  // A key at pos (LooksLikeKey was true); pos ends after the ':'.
  bool Key(std::string_view l, size_t& pos, std::string_view* key) {
    if (l[pos] == '"' || l[pos] == '\'') {
      if (!Quoted(l, pos, key)) return false;
    } else {
      if (!PlainStart(l, pos)) return false;
      const size_t colon = l.find(": ", pos);
      const size_t end = colon == std::string_view::npos ? l.size() - 1 : colon;
      if (end <= pos || l[end] != ':') return false;
      const std::string_view k = l.substr(pos, end - pos);
      if (k.back() == ' ' || k.find_first_of(",[]{}#") != std::string_view::npos) return false;
      if (IsNullWord(k) || k == "<<") return false;
      *key = k;
      pos = end;
    }
    if (pos >= l.size() || l[pos] != ':') return false;
    ++pos;
    return pos == l.size() || l[pos] == ' ';
  }

  bool BlockMap(uint32_t v, int col) {
    nodes_[v].type = Type::kMap;
    uint32_t last = kNoNode;
    while (true) {
      const std::string_view l = lines_[li_];
      size_t pos = pol(col);
      std::string_view key;
      if (!LooksLikeKey(l, pos) || !Key(l, pos, &key)) return false;
      if (HasKey(v, key)) return false;  // yaml-cpp keeps both; the slow path reports it
      const uint32_t k = Child(v, last);
      nodes_[k].type = Type::kScalar;
      nodes_[k].text = key;
      const uint32_t value = Child(v, last);
      ++nodes_[v].size;
      if (!Value(value, l, pos, col)) return false;
      if (li_ >= lines_.size()) break;
      const int ind = indent_[li_];
      if (ind < col) break;
      if (ind > col) return false;
    }
    return true;
  }

  // The value after a block mapping key ending at pos, on line li_ of a mapping at column col.
  // Leaves li_ at the next content line.
  bool Value(uint32_t value, std::string_view l, size_t pos, int col) {
    while (pos < l.size() && l[pos] == ' ') ++pos;
    if (pos == l.size() || l[pos] == '#') {
      li_ = NextContent(li_ + 1);
      if (li_ < lines_.size() && indent_[li_] > col) return Block(value, indent_[li_]);
      if (li_ < lines_.size() && IsSeqLine(li_, col)) return BlockSeq(value, col);
      return true;  // null
    }
    return InlineToEnd(value, pos) && NotDeeper(col);
  }

  // After a one-line value: the next content line must not be indented deeper than `col` (it
  // would continue a plain scalar, or be an error).
  bool NotDeeper(int col) const { return li_ >= lines_.size() || indent_[li_] <= col; }

  bool BlockSeq(uint32_t v, int col) {
    nodes_[v].type = Type::kSeq;
    uint32_t last = kNoNode;
    while (true) {
      const std::string_view l = lines_[li_];
      const uint32_t item = Child(v, last);
      ++nodes_[v].size;
      size_t pos = pol(col) + 1;
      while (pos < l.size() && l[pos] == ' ') ++pos;
      if (pos == l.size() || l[pos] == '#') {
        li_ = NextContent(li_ + 1);
        if (li_ < lines_.size() && indent_[li_] > col) {
          if (!Block(item, indent_[li_])) return false;
        }  // else null
      } else if (l[pos] == '-' && (pos + 1 == l.size() || l[pos + 1] == ' ')) {
        return false;  // "- - x"
      } else if (l[pos] != '{' && l[pos] != '[' && LooksLikeKey(l, pos)) {
        if (!BlockMap(item, static_cast<int>(pos))) return false;
        if (!NotDeeper(col)) return false;
      } else {
        if (!InlineToEnd(item, pos) || !NotDeeper(col)) return false;
      }
      if (li_ >= lines_.size()) break;
      const int ind = indent_[li_];
      if (ind < col) break;
      if (ind > col) return false;
      if (!IsSeqLine(li_, col)) break;  // a key of the mapping around, at the same column
    }
    return true;
  }

  // A flow collection, quoted or plain scalar from pos to the end of line li_ (a comment
  // may follow); moves li_ to the next content line.
  bool InlineToEnd(uint32_t v, size_t pos) {
    const std::string_view l = lines_[li_];
    if (l[pos] == '{' || l[pos] == '[' || l[pos] == '"' || l[pos] == '\'') {
      if (!Flow(v, l, pos)) return false;
      const size_t end = pos;
      while (pos < l.size() && l[pos] == ' ') ++pos;
      if (pos < l.size() && !(l[pos] == '#' && pos > end)) return false;
    } else {
      if (!PlainStart(l, pos)) return false;
      size_t end = l.find(" #", pos);
      if (end == std::string_view::npos) end = l.size();
      std::string_view s = l.substr(pos, end - pos);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      if (s.find(": ") != std::string_view::npos || s.back() == ':' ||
          s.find_first_of(",[]{}") != std::string_view::npos)
        return false;
      SetScalar(v, s, false);
    }
    li_ = NextContent(li_ + 1);
    return true;
  }

  // A flow node at pos (mapping, list, quoted or plain scalar) on one line; pos ends after it.
  bool Flow(uint32_t v, std::string_view l, size_t& pos) {
    if (pos >= l.size()) return false;
    const char c = l[pos];
    if (c == '"' || c == '\'') {
      std::string_view s;
      if (!Quoted(l, pos, &s)) return false;
      SetScalar(v, s, true);
      return true;
    }
    if (c == '{' || c == '[') {
      const bool map = c == '{';
      const char close = map ? '}' : ']';
      nodes_[v].type = map ? Type::kMap : Type::kSeq;
      ++pos;
      SkipSpaces(l, pos);
      if (pos < l.size() && l[pos] == close) {
        ++pos;
        return true;
      }
      uint32_t last = kNoNode;
      while (true) {
        if (map) {
          std::string_view key;
          if (pos < l.size() && (l[pos] == '"' || l[pos] == '\'')) {
            if (!Quoted(l, pos, &key)) return false;
          } else if (!FlowPlain(l, pos, &key) || IsNullWord(key) || key == "<<") {
            return false;
          }
          if (pos + 1 >= l.size() || l[pos] != ':' || l[pos + 1] != ' ') return false;
          pos += 2;
          SkipSpaces(l, pos);
          if (HasKey(v, key)) return false;
          const uint32_t k = Child(v, last);
          nodes_[k].type = Type::kScalar;
          nodes_[k].text = key;
          const uint32_t value = Child(v, last);
          ++nodes_[v].size;
          if (!Flow(value, l, pos)) return false;
        } else {
          const uint32_t item = Child(v, last);
          ++nodes_[v].size;
          if (!Flow(item, l, pos)) return false;
        }
        SkipSpaces(l, pos);
        if (pos >= l.size()) return false;
        if (l[pos] == close) {
          ++pos;
          break;
        }
        if (l[pos] != ',') return false;
        ++pos;
        SkipSpaces(l, pos);
        if (pos >= l.size() || l[pos] == close) return false;  // a trailing comma
      }
      return true;
    }
    std::string_view s;
    if (!FlowPlain(l, pos, &s)) return false;
    if (pos < l.size() && l[pos] == ':') return false;  // a single-pair mapping in a list
    SetScalar(v, s, false);
    return true;
  }

  // A plain scalar inside a flow collection: up to , ] } or ':' (which must then be a key's).
  static bool FlowPlain(std::string_view l, size_t& pos, std::string_view* out) {
    if (!PlainStart(l, pos)) return false;
    size_t i = pos;
    while (i < l.size() && l[i] != ',' && l[i] != ']' && l[i] != '}' && l[i] != ':') {
      if (l[i] == '#' && l[i - 1] == ' ') return false;
      if (l[i] == '[' || l[i] == '{' || l[i] == '"' || l[i] == '\'') return false;
      ++i;
    }
    if (i < l.size() && l[i] == ':' && (i + 1 >= l.size() || l[i + 1] != ' ')) return false;
    std::string_view s = l.substr(pos, i - pos);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    if (s.empty()) return false;
    *out = s;
    pos = i;
    return true;
  }

  // A single- or double-quoted scalar closed on the same line; escapes \\ and \" only. `out`
  // (when not null) views the text, or the unescaped copy kept by the reader.
  bool Quoted(std::string_view l, size_t& pos, std::string_view* out) {
    const char q = l[pos];
    bool escaped = false;
    size_t i = pos + 1;
    for (; i < l.size(); ++i) {
      const char c = l[i];
      if (q == '\'' && c == '\'') {
        if (i + 1 < l.size() && l[i + 1] == '\'') {
          escaped = true;
          ++i;
          continue;
        }
        break;
      }
      if (q == '"' && c == '\\') {
        if (i + 1 >= l.size() || (l[i + 1] != '\\' && l[i + 1] != '"')) return false;
        escaped = true;
        ++i;
        continue;
      }
      if (q == '"' && c == '"') break;
    }
    if (i >= l.size()) return false;  // never closed on this line
    if (out != nullptr) {
      const std::string_view body = l.substr(pos + 1, i - pos - 1);
      if (!escaped) {
        *out = body;
      } else {
        std::string s;
        for (size_t j = 0; j < body.size(); ++j) {
          if ((q == '\'' && body[j] == '\'') || (q == '"' && body[j] == '\\')) ++j;
          s += body[j];
        }
        *out = r_.owned_.emplace_back(std::move(s));
      }
    }
    pos = i + 1;
    return true;
  }

  static void SkipSpaces(std::string_view l, size_t& pos) {
    while (pos < l.size() && l[pos] == ' ') ++pos;
  }

  FastReader& r_;
  std::vector<std::string_view>& lines_;
  std::vector<int>& indent_;
  std::vector<FastNode>& nodes_;
  size_t li_ = 0;
};

bool FastReader::Parse(std::string_view text) {
  FastParser p(*this);
  return p.Split(text) && p.Document();
}

bool FastReader::ParseJson(const nlohmann::json& object) {
  lines_.clear();
  indent_.clear();
  nodes_.clear();
  owned_.clear();
  line_ = 0;
  nodes_.emplace_back();
  return object.is_object() && AddJson(object, 0);
}

// Node v (already in nodes_) as j; children are appended, so no reference into nodes_ is held
// across a call.
bool FastReader::AddJson(const nlohmann::json& j, uint32_t v) {
  using Type = FastNode::Type;
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      nodes_[v].type = Type::kNull;
      return true;
    case nlohmann::json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      if (!Printable(s)) return false;
      nodes_[v].type = Type::kScalar;
      nodes_[v].quoted = true;
      nodes_[v].text = s;
      return true;
    }
    case nlohmann::json::value_t::boolean:
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      nodes_[v].type = Type::kScalar;
      nodes_[v].text = owned_.emplace_back(j.dump());
      return true;
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::array: {
      const bool map = j.is_object();
      nodes_[v].type = map ? Type::kMap : Type::kSeq;
      nodes_[v].size = static_cast<uint32_t>(j.size());
      uint32_t last = kNoNode;
      auto append = [&] {
        const auto c = static_cast<uint32_t>(nodes_.size());
        nodes_.emplace_back();
        (last == kNoNode ? nodes_[v].first : nodes_[last].next) = c;
        last = c;
        return c;
      };
      if (!map) {
        for (const auto& item : j)
          if (!AddJson(item, append())) return false;
        return true;
      }
      for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& k = it.key();
        if (k.empty() || !Printable(k)) return false;
        const uint32_t kn = append();
        nodes_[kn].type = Type::kScalar;
        nodes_[kn].text = k;
        if (!AddJson(it.value(), append())) return false;
      }
      return true;
    }
    default:  // binary, discarded: not from a parsed request
      return false;
  }
}

void FastReader::ToYaml(uint32_t i, YAML::Node& v) const {
  const FastNode& n = nodes_[i];
  switch (n.type) {
    case FastNode::Type::kNull:
      v = YAML::Null;
      return;
    case FastNode::Type::kScalar:
      v = std::string(n.text);
      v.SetTag(n.quoted ? "!" : "?");
      return;
    case FastNode::Type::kMap:
      if (n.size == 0) v = YAML::Node(YAML::NodeType::Map);
      for (uint32_t k = n.first; k != kNoNode; k = nodes_[nodes_[k].next].next) {
        YAML::Node value = v[std::string(nodes_[k].text)];
        ToYaml(nodes_[k].next, value);
      }
      break;
    case FastNode::Type::kSeq: {
      if (n.size == 0) v = YAML::Node(YAML::NodeType::Sequence);
      size_t idx = 0;
      for (uint32_t c = n.first; c != kNoNode; c = nodes_[c].next) {
        YAML::Node item = v[idx++];
        ToYaml(c, item);
      }
      break;
    }
  }
  v.SetTag("?");
}

std::optional<FastDocument> ParseFastDocument(std::string_view text) {
  FastReader reader;
  if (!reader.Parse(text)) return std::nullopt;
  FastDocument d;
  d.line = reader.line();
  reader.ToYaml(0, d.root);
  return d;
}

}  // namespace arbiter::yaml
