#include "adapters/kube/selectors.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>

#include "adapters/json/member.h"
#include "adapters/kube/status.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;
using Op = LabelRequirement::Op;

// ---------------------------------------------------------------- lexer (as labels/selector.go)

enum class Tok {
  kError,
  kEnd,
  kClosedPar,
  kComma,
  kNot,
  kDoubleEquals,
  kEquals,
  kGreater,
  kIdent,
  kIn,
  kLess,
  kNotEquals,
  kNotIn,
  kOpenPar
};

bool IsSpecial(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

struct Token {
  Tok tok;
  std::string lit;
};

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (true) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    if (i >= s.size()) break;
    char c = s[i];
    if (IsSpecial(c)) {
      std::string two(s.substr(i, 2));
      if (two == "!=")
        out.push_back({Tok::kNotEquals, two}), i += 2;
      else if (two == "==")
        out.push_back({Tok::kDoubleEquals, two}), i += 2;
      else {
        Tok t = c == '='   ? Tok::kEquals
                : c == '!' ? Tok::kNot
                : c == '(' ? Tok::kOpenPar
                : c == ')' ? Tok::kClosedPar
                : c == ',' ? Tok::kComma
                : c == '>' ? Tok::kGreater
                           : Tok::kLess;
        out.push_back({t, std::string(1, c)});
        ++i;
      }
      continue;
    }
    size_t j = i;
    while (j < s.size() && !IsSpace(s[j]) && !IsSpecial(s[j])) ++j;
    out.push_back({Tok::kIdent, std::string(s.substr(i, j - i))});
    i = j;
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

// ---------------------------------------------------------------- validation messages

const char* kQualifiedNameFmt =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const char* kLabelValueFmt =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
    "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const char* kDns1123SubdomainFmt =
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool IsLabelName(std::string_view s) {
  if (s.empty() || !Alnum(s.front()) || !Alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return Alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !std::isalnum(static_cast<unsigned char>(label.front())) ||
        !std::isalnum(static_cast<unsigned char>(label.back())))
      return false;
    for (char c : label)
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

std::string Q(std::string_view s) { return WireJson(json(std::string(s))); }

// "" when `key` is a qualified name, else kube's message.
std::string CheckKey(std::string_view key) {
  std::string_view name = key, prefix;
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (name.find('/') != std::string_view::npos)
      return "<nil>: Invalid value: " + Q(key) +
             ": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
             "must "
             "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
             "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
    if (prefix.empty())
      return "<nil>: Invalid value: " + Q(key) + ": prefix part must be non-empty";
    if (!IsDns1123Subdomain(prefix))
      return "<nil>: Invalid value: " + Q(key) + ": " + kDns1123SubdomainFmt;
  }
  if (name.empty()) return "<nil>: Invalid value: " + Q(key) + ": name part must be non-empty";
  if (name.size() > 63)
    return "<nil>: Invalid value: " + Q(key) + ": name part must be no more than 63 characters";
  if (!IsLabelName(name)) return "<nil>: Invalid value: " + Q(key) + ": " + kQualifiedNameFmt;
  return "";
}

std::string CheckValue(size_t index, std::string_view key, std::string_view v) {
  std::string where = "values[" + std::to_string(index) + "][" + std::string(key) +
                      "]: Invalid value: " + Q(v) + ": ";
  if (v.size() > 63) return where + "must be no more than 63 characters";
  if (!v.empty() && !IsLabelName(v)) return where + kLabelValueFmt;
  return "";
}

// ---------------------------------------------------------------- parser

class Parser {
 public:
  explicit Parser(std::string_view s) : toks_(Lex(s)) {}

  Result<LabelSelector> Parse() {
    LabelSelector sel;
    while (true) {
      const Token& t = Peek();
      if (t.tok == Tok::kIdent || t.tok == Tok::kNot) {
        auto r = Requirement();
        if (!r.ok()) return Status::InvalidArgument("unable to parse requirement: " + r.message());
        sel.requirements.push_back(std::move(r).value());
        Token n = Next();
        if (n.tok == Tok::kEnd) return sel;
        if (n.tok == Tok::kComma) {
          const Token& a = Peek();
          if (a.tok != Tok::kIdent && a.tok != Tok::kNot)
            return Status::InvalidArgument("found '" + a.lit + "', expected: identifier after ','");
          continue;
        }
        return Status::InvalidArgument("found '" + n.lit + "', expected: ',' or 'end of string'");
      }
      if (t.tok == Tok::kEnd) return sel;
      return Status::InvalidArgument("found '" + t.lit +
                                     "', expected: !, identifier, or 'end of string'");
    }
  }

 private:
  const Token& Peek() const { return toks_[pos_]; }
  Token Next() { return pos_ + 1 < toks_.size() ? toks_[pos_++] : toks_.back(); }

  Result<LabelRequirement> Requirement() {
    LabelRequirement r;
    Token t = Next();
    bool not_exists = false;
    if (t.tok == Tok::kNot) {
      not_exists = true;
      t = Next();
      if (t.tok != Tok::kIdent)
        return Status::InvalidArgument("found '" + t.lit + "', expected: identifier");
    }
    if (t.tok != Tok::kIdent)
      return Status::InvalidArgument("found '" + t.lit + "', expected: identifier");
    if (std::string e = CheckKey(t.lit); !e.empty()) return Status::InvalidArgument(e);
    r.key = t.lit;
    const Token& after = Peek();
    if (not_exists || after.tok == Tok::kEnd || after.tok == Tok::kComma) {
      r.op = not_exists ? Op::kDoesNotExist : Op::kExists;
      return r;
    }
    Token op = Next();
    switch (op.tok) {
      case Tok::kEquals:
      case Tok::kDoubleEquals:
        r.op = Op::kEquals;
        break;
      case Tok::kNotEquals:
        r.op = Op::kNotEquals;
        break;
      case Tok::kGreater:
        r.op = Op::kGreaterThan;
        break;
      case Tok::kLess:
        r.op = Op::kLessThan;
        break;
      case Tok::kIdent:
        if (op.lit == "in") {
          r.op = Op::kIn;
          break;
        }
        if (op.lit == "notin") {
          r.op = Op::kNotIn;
          break;
        }
        [[fallthrough]];
      default:
        return Status::InvalidArgument("found '" + op.lit +
                                       "', expected: in, notin, =, ==, !=, gt, lt");
    }
    if (r.op == Op::kIn || r.op == Op::kNotIn) {
      auto v = Values();
      if (!v.ok()) return v.status();
      r.values = std::move(v).value();
    } else {
      const Token& v = Peek();
      if (v.tok == Tok::kEnd || v.tok == Tok::kComma) {
        r.values = {""};
      } else {
        Token val = Next();
        if (val.tok != Tok::kIdent)
          return Status::InvalidArgument("found '" + val.lit + "', expected: identifier");
        r.values = {val.lit};
      }
    }
    for (size_t i = 0; i < r.values.size(); ++i)
      if (std::string e = CheckValue(i, r.key, r.values[i]); !e.empty())
        return Status::InvalidArgument(e);
    if (r.op == Op::kGreaterThan || r.op == Op::kLessThan) {
      int64_t n;
      const std::string& v = r.values[0];
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || p != v.data() + v.size())
        return Status::InvalidArgument("values[0]: Invalid value: " + Q(v) +
                                       ": for 'Gt', 'Lt' operators, the value must be an integer");
    }
    return r;
  }

  Result<std::vector<std::string>> Values() {
    Token t = Next();
    if (t.tok != Tok::kOpenPar)
      return Status::InvalidArgument("found '" + t.lit + "' expected: '('");
    std::vector<std::string> set;
    auto insert = [&set](const std::string& v) {
      if (std::find(set.begin(), set.end(), v) == set.end()) set.push_back(v);
    };
    const Token& first = Peek();
    if (first.tok == Tok::kClosedPar) {
      Next();
      return std::vector<std::string>{""};
    }
    if (first.tok != Tok::kIdent && first.tok != Tok::kComma)
      return Status::InvalidArgument("found '" + first.lit + "', expected: ',', ')' or identifier");
    while (true) {
      Token v = Next();
      if (v.tok == Tok::kIdent) {
        insert(v.lit);
        const Token& n = Peek();
        if (n.tok == Tok::kComma) {
          Next();
          if (Peek().tok == Tok::kClosedPar) {
            insert("");
            Next();
            break;
          }
          continue;
        }
        if (n.tok == Tok::kClosedPar) {
          Next();
          break;
        }
        return Status::InvalidArgument("found '" + n.lit + "', expected: ',' or ')'");
      }
      if (v.tok == Tok::kComma) {
        insert("");
        if (Peek().tok == Tok::kClosedPar) {
          Next();
          break;
        }
        continue;
      }
      return Status::InvalidArgument("found '" + v.lit + "', expected: ',', or identifier");
    }
    std::sort(set.begin(), set.end());
    return set;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
};

const json* Label(const json& labels, const std::string& key) {
  if (!labels.is_object()) return nullptr;
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return nullptr;
  return &*it;
}

std::string Scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  return "";
}

// Splits at unescaped commas; keeps escapes.
std::vector<std::string> SplitTerms(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      cur += s[i];
      cur += s[++i];
    } else if (s[i] == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::string> QualifiedNameErrors(std::string_view key) {
  std::vector<std::string> errs;
  std::string_view name = key;
  const size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos)
      return {std::string("a qualified name ") + (kQualifiedNameFmt + 10) +
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty())
      errs.push_back("prefix part must be non-empty");
    else if (prefix.size() > 253)
      errs.push_back("prefix part must be no more than 253 characters");
    if (!prefix.empty() && prefix.size() <= 253 && !IsDns1123Subdomain(prefix))
      errs.push_back(kDns1123SubdomainFmt);
  }
  if (name.empty()) errs.push_back("name part must be non-empty");
  if (name.size() > 63) errs.push_back("name part must be no more than 63 characters");
  if (!IsLabelName(name)) errs.push_back(kQualifiedNameFmt);
  return errs;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back("must be no more than 63 characters");
  if (!value.empty() && !IsLabelName(value)) errs.push_back(kLabelValueFmt);
  return errs;
}

bool LabelRequirement::Matches(const json& labels) const {
  const json* v = Label(labels, key);
  switch (op) {
    case Op::kExists:
      return v != nullptr;
    case Op::kDoesNotExist:
      return v == nullptr;
    case Op::kEquals:
    case Op::kIn:
      return v && std::find(values.begin(), values.end(), v->get<std::string>()) != values.end();
    case Op::kNotEquals:
    case Op::kNotIn:
      return !v || std::find(values.begin(), values.end(), v->get<std::string>()) == values.end();
    case Op::kGreaterThan:
    case Op::kLessThan: {
      if (!v || values.size() != 1) return false;
      const std::string& have = v->get<std::string>();
      int64_t a = 0, b = 0;  // (set before use; GCC 12 at -O1 cannot tell)
      auto [pa, ea] = std::from_chars(have.data(), have.data() + have.size(), a);
      auto [pb, eb] = std::from_chars(values[0].data(), values[0].data() + values[0].size(), b);
      if (ea != std::errc() || pa != have.data() + have.size() || eb != std::errc()) return false;
      return op == Op::kGreaterThan ? a > b : a < b;
    }
  }
  return false;
}

bool LabelSelector::Matches(const json& labels) const {
  for (const auto& r : requirements)
    if (!r.Matches(labels)) return false;
  return true;
}

bool LabelSelector::MatchesObject(const json& object) const {
  return Matches(json_member::MemberAt(object, {"metadata", "labels"}));
}

Result<LabelSelector> ParseLabelSelector(std::string_view text) { return Parser(text).Parse(); }

Result<LabelSelector> LabelSelectorFromJson(const json& selector) {
  LabelSelector sel;
  if (selector.is_null()) {
    // Selects nothing: a requirement no label set meets.
    sel.requirements.push_back({"arbiter.dev/nothing", Op::kIn, {}});
    return sel;
  }
  if (!selector.is_object()) return Status::InvalidArgument("a label selector must be an object");
  if (selector.contains("matchLabels")) {
    const json& ml = selector["matchLabels"];
    if (!ml.is_object()) return Status::InvalidArgument("matchLabels: must be an object");
    for (auto it = ml.begin(); it != ml.end(); ++it) {
      if (!it.value().is_string())
        return Status::InvalidArgument("matchLabels: values must be strings");
      sel.requirements.push_back({it.key(), Op::kEquals, {it.value().get<std::string>()}});
    }
  }
  if (selector.contains("matchExpressions")) {
    const json& me = selector["matchExpressions"];
    if (!me.is_array()) return Status::InvalidArgument("matchExpressions: must be a list");
    for (const auto& e : me) {
      if (!e.is_object())
        return Status::InvalidArgument("matchExpressions: each must be an object");
      LabelRequirement r;
      r.key = Scalar(e.contains("key") ? e["key"] : json());
      const std::string op = Scalar(e.contains("operator") ? e["operator"] : json());
      if (op == "In")
        r.op = Op::kIn;
      else if (op == "NotIn")
        r.op = Op::kNotIn;
      else if (op == "Exists")
        r.op = Op::kExists;
      else if (op == "DoesNotExist")
        r.op = Op::kDoesNotExist;
      else
        return Status::InvalidArgument(Q(op) + " is not a valid label selector operator");
      if (e.contains("values") && e["values"].is_array())
        for (const auto& v : e["values"]) r.values.push_back(Scalar(v));
      sel.requirements.push_back(std::move(r));
    }
  }
  return sel;
}

std::vector<std::string> SupportedFields(const ResourceInfo& r) {
  std::vector<std::string> f = {"metadata.name"};
  if (r.namespaced) f.push_back("metadata.namespace");
  if (!r.group.empty()) return f;
  if (r.kind == "Pod")
    for (const char* x : {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                          "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                          "status.podIP", "status.podIPs", "status.nominatedNodeName"})
      f.push_back(x);
  if (r.kind == "Event")
    for (const char* x :
         {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
          "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
          "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"})
      f.push_back(x);
  if (r.kind == "Node") f.push_back("spec.unschedulable");
  if (r.kind == "Namespace") f.push_back("status.phase");
  return f;
}

std::string FieldValue(const json& object, std::string_view field) {
  if (field == "source") return FieldValue(object, "source.component");
  if (field == "status.podIPs") return "";  // a field label kube-apiserver takes, with no value
  const json* cur = &object;
  std::string_view rest = field;
  while (true) {
    size_t dot = rest.find('.');
    std::string key(rest.substr(0, dot));
    if (!cur->is_object()) return "";
    auto it = cur->find(key);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string_view::npos) break;
    rest = rest.substr(dot + 1);
  }
  return Scalar(*cur);
}

namespace {

// The length of the UTF-8 sequence `lead` starts (1 for a stray byte), for Go's runes in messages.
size_t RuneLength(char lead) {
  const auto c = static_cast<unsigned char>(lead);
  return c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

// fields.UnescapeValue: `\\`, `\,` and `\=` are the only escapes; an unescaped `,` or `=` is an
// error, printed as Go prints a rune with %v (its code point in decimal: `=` is 61).
Result<std::string> UnescapeFieldValue(std::string_view rhs) {
  std::string out;
  for (size_t i = 0; i < rhs.size(); ++i) {
    const char c = rhs[i];
    if (c == ',' || c == '=')
      return Status::InvalidArgument("invalid field selector: unescaped character in value: " +
                                     std::to_string(static_cast<int>(c)));
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 1 == rhs.size())
      return Status::InvalidArgument("invalid field selector: invalid escape sequence: \\");
    const char e = rhs[++i];
    if (e != '\\' && e != ',' && e != '=')
      return Status::InvalidArgument("invalid field selector: invalid escape sequence: \\" +
                                     std::string(rhs.substr(i, RuneLength(e))));
    out += e;
  }
  return out;
}

// fields' splitTerm: the first `!=`, `==` or `=` splits the term (the field has no escapes).
std::optional<FieldRequirement> SplitFieldTerm(const std::string& term) {
  for (size_t i = 0; i < term.size(); ++i) {
    size_t len = term.compare(i, 2, "!=") == 0 || term.compare(i, 2, "==") == 0 ? 2
                 : term[i] == '='                                               ? 1
                                                                                : 0;
    if (len) return FieldRequirement{term.substr(0, i), term[i] != '!', term.substr(i + len)};
  }
  return std::nullopt;
}

}  // namespace

// As fields.ParseSelector, then the resource's field label conversion (kube-apiserver's
// ListResource): terms sorted, each value unescaped (errors in that order), a term with neither
// field nor value dropped (`=` selects everything), then each field checked (a Pod's `spec.host`
// is `spec.nodeName`).
Result<FieldSelector> ParseFieldSelector(std::string_view text, const ResourceInfo& r) {
  FieldSelector sel;
  std::vector<std::string> terms = SplitTerms(text);
  std::sort(terms.begin(), terms.end());
  for (const auto& term : terms) {
    if (term.empty()) continue;
    std::optional<FieldRequirement> req = SplitFieldTerm(term);
    if (!req)
      return Status::InvalidArgument("invalid selector: '" + std::string(text) +
                                     "'; can't understand '" + term + "'");
    auto value = UnescapeFieldValue(req->value);
    if (!value.ok()) return value.status();
    req->value = std::move(value).value();
    if (req->field.empty() && req->value.empty()) continue;
    sel.requirements.push_back(std::move(*req));
  }
  const auto supported = SupportedFields(r);
  for (auto& req : sel.requirements) {
    if (r.kind == "Pod" && r.group.empty() && req.field == "spec.host") req.field = "spec.nodeName";
    if (std::find(supported.begin(), supported.end(), req.field) == supported.end())
      return Status::InvalidArgument("field label not supported: " + req.field);
  }
  return sel;
}

bool FieldSelector::Matches(const json& object) const {
  for (const auto& r : requirements)
    if ((FieldValue(object, r.field) == r.value) != r.equals) return false;
  return true;
}

}  // namespace arbiter::kube
