#include "adapters/kube/request_options.h"

#include <cctype>
#include <charconv>
#include <cstdio>

#include "adapters/kube/watch.h"  // GoQuote

namespace arbiter::kube {

namespace {

using json = nlohmann::json;

constexpr size_t kFieldManagerMaxLength = 128;

// Go's unicode.IsPrint for the characters a header or a query carries: false for the C0 and C1
// controls, DEL, the spaces but U+0020 and the common format characters (soft hyphen, zero-width
// and directional marks, BOM). Rarer format characters of other scripts are not listed.
bool IsGoPrint(char32_t r) {
  if (r < 0x20 || (r >= 0x7f && r <= 0xa0) || r == 0xad) return false;
  if (r == 0x1680 || (r >= 0x2000 && r <= 0x200f) || (r >= 0x2028 && r <= 0x202f)) return false;
  if ((r >= 0x205f && r <= 0x206f) || r == 0x3000 || r == 0xfeff) return false;
  return true;
}

// The rune at `s[i]` (UTF-8; an invalid byte is itself) and its length.
char32_t RuneAt(std::string_view s, size_t i, size_t* len) {
  const auto b = static_cast<unsigned char>(s[i]);
  const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (n == 1 || i + n > s.size()) {
    *len = 1;
    return b;
  }
  char32_t r = b & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) r = (r << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  *len = n;
  return r;
}

// Go's %q of a string: GoQuote, and \uXXXX for a character that is not printable past ASCII.
std::string GoQuoteUnicode(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    const char32_t r = RuneAt(s, i, &n);
    if (r >= 0x80 && !IsGoPrint(r)) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(r));
      out += buf;
    } else {
      const std::string q = GoQuote(s.substr(i, n));
      out += q.substr(1, q.size() - 2);
    }
    i += n;
  }
  return out + "\"";
}

std::vector<std::string> All(const Query& q, const std::string& name) {
  std::vector<std::string> v;
  for (auto [it, end] = q.equal_range(name); it != end; ++it) v.push_back(it->second);
  return v;
}

std::optional<std::string> First(const Query& q, const std::string& name) {
  const auto it = q.find(name);
  return it == q.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void CheckDryRun(const std::vector<std::string>& dry_run, std::vector<Cause>* causes) {
  for (const auto& v : dry_run)
    if (v != "All") {
      causes->push_back(
          {"FieldValueNotSupported",
           "Unsupported value: " + json(dry_run).dump() + ": supported values: \"All\"", "dryRun"});
      return;
    }
}

KubeStatus InvalidOptions(std::string_view kind, const std::vector<Cause>& causes) {
  ResourceInfo options;
  options.group = "meta.k8s.io";
  options.kind = std::string(kind);
  return Invalid(options, "", causes);
}

// Go's strconv.ParseInt(s, 10, 64), the query's integers (a sign, then decimal digits).
std::optional<KubeStatus> ParseInt64(const std::string& s, int64_t* out) {
  std::string_view digits = s;
  const bool plus = !digits.empty() && digits[0] == '+';
  if (plus) digits.remove_prefix(1);
  const char* end = digits.data() + digits.size();
  const auto [p, ec] = std::from_chars(digits.data(), end, *out);
  const bool signed_twice = plus && !digits.empty() && digits[0] == '-';
  if (!signed_twice && p == end && !digits.empty() && ec == std::errc()) return std::nullopt;
  const bool range = !signed_twice && p == end && ec == std::errc::result_out_of_range;
  return BadRequest("strconv.ParseInt: parsing " + GoQuote(s) +
                    (range ? ": value out of range" : ": invalid syntax"));
}

// --------------------------------------------------------------- DeleteOptions from JSON

// The literal text of the numbers at one member path of a JSON text (nlohmann's SAX gives a
// float's text; Go's errors quote it: "number 1e3").
class NumberText : public nlohmann::json_sax<json> {
 public:
  explicit NumberText(std::vector<std::string> path) : path_(std::move(path)) {}
  std::string text;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Take(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Take(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& s) override { return Take(s); }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    keys_.back() = k;
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    keys_.emplace_back("[]");
    return true;
  }
  bool end_array() override {
    keys_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Take(std::string s) {
    if (keys_ == path_) text = std::move(s);
    return true;
  }
  std::vector<std::string> path_;
  std::vector<std::string> keys_;
};

// One DeleteOptions member decoded as Go decodes it (sigs.k8s.io/json, case-sensitive): `prefix`
// is the member path above DeleteOptions ("" or "deleteOptions.").
struct MemberDecoder {
  const json& options;
  std::string_view body;
  std::string prefix;
  std::optional<std::string> error;

  void Fail(const std::string& word, std::string_view go_struct, const std::string& field,
            std::string_view go_type) {
    if (!error)
      error = "json: cannot unmarshal " + word + " into Go struct field " + std::string(go_struct) +
              "." + prefix + field + " of type " + std::string(go_type);
  }
  const json* At(const char* key) {
    const auto it = options.find(key);
    return it == options.end() || it->is_null() ? nullptr : &*it;
  }
  void Int64(const char* key, std::optional<int64_t>* out) {
    const json* v = At(key);
    if (!v) return;
    if (v->is_number_integer() &&
        (v->is_number_unsigned() ? v->get<uint64_t>() <= INT64_MAX : true)) {
      *out = v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
      return;
    }
    std::string word = GoValueWord(*v);
    if (word == "number") {
      std::vector<std::string> path;
      if (!prefix.empty()) path.push_back(prefix.substr(0, prefix.size() - 1));
      path.push_back(key);
      NumberText text(path);
      json::sax_parse(body, &text);
      word += " " + text.text;
    }
    Fail(word, "DeleteOptions", key, "int64");
  }
  void String(const json& parent, const char* key, std::optional<std::string>* out,
              std::string_view go_struct, const std::string& field, std::string_view go_type) {
    const auto it = parent.find(key);
    if (it == parent.end() || it->is_null()) return;
    if (it->is_string())
      *out = it->get<std::string>();
    else
      Fail(GoValueWord(*it), go_struct, field, go_type);
  }
  void Bool(const char* key, std::optional<bool>* out) {
    const json* v = At(key);
    if (!v) return;
    if (v->is_boolean())
      *out = v->get<bool>();
    else
      Fail(GoValueWord(*v), "DeleteOptions", key, "bool");
  }
  void Strings(const char* key, std::vector<std::string>* out) {
    const json* v = At(key);
    if (!v) return;
    if (!v->is_array()) return Fail(GoValueWord(*v), "DeleteOptions", key, "[]string");
    for (const json& e : *v) {
      if (e.is_string())
        out->push_back(e.get<std::string>());
      else if (e.is_null())
        out->emplace_back();
      else
        Fail(GoValueWord(e), "DeleteOptions", key, "string");
    }
  }
  void Preconditions(DeleteOptions* o) {
    const json* p = At("preconditions");
    if (!p) return;
    if (!p->is_object())
      return Fail(GoValueWord(*p), "DeleteOptions", "preconditions", "v1.Preconditions");
    String(*p, "uid", &o->precondition_uid, "Preconditions", "preconditions.uid", "types.UID");
    String(*p, "resourceVersion", &o->precondition_resource_version, "Preconditions",
           "preconditions.resourceVersion", "string");
  }
};

std::optional<KubeStatus> FromBody(std::string_view body, bool eviction, DeleteOptions* o) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const std::string lead =
      eviction ? "Eviction in version \"v1\" cannot be handled as a Eviction: " : "";
  if (doc.is_discarded())
    return BadRequest(lead + "couldn't get version/kind; json parse error: the body is not JSON");
  if (!doc.is_object())
    return BadRequest(lead +
                      "couldn't get version/kind; json parse error: json: cannot unmarshal " +
                      GoValueWord(doc) +
                      " into Go value of type struct { APIVersion string "
                      "\"json:\\\"apiVersion,omitempty\\\"\"; Kind string "
                      "\"json:\\\"kind,omitempty\\\"\" }");
  const json* options = &doc;
  if (eviction) {
    const auto it = doc.find("deleteOptions");
    if (it == doc.end() || it->is_null()) return std::nullopt;
    if (!it->is_object())
      return BadRequest(lead + "json: cannot unmarshal " + GoValueWord(*it) +
                        " into Go struct field Eviction.deleteOptions of type v1.DeleteOptions");
    options = &*it;
  }
  MemberDecoder d{*options, body, eviction ? "deleteOptions." : "", std::nullopt};
  d.Int64("gracePeriodSeconds", &o->grace_period_seconds);
  d.Preconditions(o);
  d.Bool("orphanDependents", &o->orphan_dependents);
  d.String(*options, "propagationPolicy", &o->propagation_policy, "DeleteOptions",
           d.prefix + "propagationPolicy", "v1.DeletionPropagation");
  d.Strings("dryRun", &o->dry_run);
  if (d.error) return BadRequest(lead + *d.error);
  return std::nullopt;
}

// The query's DeleteOptions (metav1's parameter codec: the first value of each, all dryRun's).
std::optional<KubeStatus> FromQuery(const Query& q, DeleteOptions* o) {
  if (auto g = First(q, "gracePeriodSeconds")) {
    int64_t v = 0;
    if (auto bad = ParseInt64(*g, &v)) return bad;
    o->grace_period_seconds = v;
  }
  o->propagation_policy = First(q, "propagationPolicy");
  if (auto orphan = First(q, "orphanDependents"))
    o->orphan_dependents =
        !(*orphan == "0" || *orphan == "false" || *orphan == "False" || *orphan == "FALSE");
  o->dry_run = All(q, "dryRun");
  return std::nullopt;
}

// Go's mime package: a token is one or more bytes that are not controls, spaces or tspecials.
bool IsTokenByte(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b > ' ' && b < 0x7f &&
         std::string_view("()<>@,;:\\\"/[]?=").find(c) == std::string_view::npos;
}

std::string_view MimeToken(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && IsTokenByte((*s)[n])) ++n;
  const std::string_view t = s->substr(0, n);
  s->remove_prefix(n);
  return t;
}

void SkipSpaces(std::string_view* s) {
  while (!s->empty() && std::isspace(static_cast<unsigned char>(s->front()))) s->remove_prefix(1);
}

// One `; key=value` parameter (value a token or a quoted string); false when there is none.
bool ConsumeParam(std::string_view* s) {
  std::string_view r = *s;
  SkipSpaces(&r);
  if (r.empty() || r[0] != ';') return false;
  r.remove_prefix(1);
  SkipSpaces(&r);
  if (MimeToken(&r).empty()) return false;
  SkipSpaces(&r);
  if (r.empty() || r[0] != '=') return false;
  r.remove_prefix(1);
  SkipSpaces(&r);
  if (!r.empty() && r[0] == '"') {
    size_t i = 1;
    while (i < r.size() && r[i] != '"') i += r[i] == '\\' ? 2 : 1;
    if (i >= r.size()) return false;
    r.remove_prefix(i + 1);
  } else if (MimeToken(&r).empty()) {
    return false;
  }
  *s = r;
  return true;
}

}  // namespace

std::optional<std::string> MediaTypeOf(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  std::string type(content_type.substr(0, semi));
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view t = type;
  SkipSpaces(&t);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  if (t.empty())
    return semi == std::string_view::npos ? std::optional<std::string>("") : std::nullopt;
  std::string_view rest = t;
  if (MimeToken(&rest).empty()) return std::nullopt;
  if (!rest.empty() &&
      (rest[0] != '/' || (rest.remove_prefix(1), MimeToken(&rest).empty()) || !rest.empty()))
    return std::nullopt;
  std::string_view params = semi == std::string_view::npos ? "" : content_type.substr(semi);
  for (;;) {
    SkipSpaces(&params);
    if (params.empty()) break;
    if (ConsumeParam(&params)) continue;
    std::string_view tail = params;
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back())))
      tail.remove_suffix(1);
    if (tail == ";") break;  // a trailing semicolon is not an error
    return std::nullopt;
  }
  return std::string(t);
}

std::vector<Cause> FieldManagerCauses(std::string_view manager) {
  std::vector<Cause> causes;
  if (manager.size() > kFieldManagerMaxLength)
    causes.push_back(
        {"FieldValueTooLong",
         "Too long: may not be more than " + std::to_string(kFieldManagerMaxLength) + " bytes",
         "fieldManager"});
  for (size_t i = 0; i < manager.size();) {
    size_t n = 1;
    const char32_t r = RuneAt(manager, i, &n);
    if (!IsGoPrint(r)) {
      char rune[16];
      std::snprintf(rune, sizeof rune, "U+%04X", static_cast<unsigned>(r));
      causes.push_back({"FieldValueInvalid",
                        "Invalid value: " + GoQuoteUnicode(manager) + ": invalid character " +
                            rune + " (at position " + std::to_string(i) + ")",
                        "fieldManager"});
    }
    i += n;
  }
  return causes;
}

std::optional<KubeStatus> CheckWriteOptions(const Query& query, OptionsKind kind, bool* dry_run) {
  std::vector<Cause> causes;
  const std::string manager = First(query, "fieldManager").value_or("");
  if (kind == OptionsKind::kApply && manager.empty())
    causes.push_back(
        {"FieldValueRequired", "Required value: is required for apply patch", "fieldManager"});
  if (kind == OptionsKind::kPatch && query.count("force"))
    causes.push_back(
        {"FieldValueForbidden", "Forbidden: may not be specified for non-apply patch", "force"});
  for (Cause& c : FieldManagerCauses(manager)) causes.push_back(std::move(c));
  const std::vector<std::string> dry = All(query, "dryRun");
  CheckDryRun(dry, &causes);
  const std::string validation = First(query, "fieldValidation").value_or("");
  if (validation != "" && validation != "Ignore" && validation != "Strict" && validation != "Warn")
    causes.push_back({"FieldValueNotSupported",
                      "Unsupported value: " + GoQuote(validation) +
                          ": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                      "fieldValidation"});
  *dry_run = !dry.empty();
  if (causes.empty()) return std::nullopt;
  const char* names[] = {"CreateOptions", "UpdateOptions", "PatchOptions", "PatchOptions"};
  return InvalidOptions(names[static_cast<int>(kind)], causes);
}

std::string GoValueWord(const json& v) {
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "bool";
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  return "number";
}

bool QueryBool(const Query& query, const std::string& name) {
  const auto v = First(query, name);
  if (!v) return false;
  std::string lower = *v;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower != "0" && lower != "false";
}

std::optional<KubeStatus> CheckListOptions(const Query& query) {
  for (const char* name : {"timeoutSeconds", "limit"})
    if (auto v = First(query, name)) {
      int64_t n = 0;
      if (auto bad = ParseInt64(*v, &n)) return bad;
    }
  const bool watch = QueryBool(query, "watch");
  const std::string match = First(query, "resourceVersionMatch").value_or("");
  const bool initial = query.count("sendInitialEvents") > 0;
  const bool continues = !First(query, "continue").value_or("").empty();
  std::vector<Cause> causes;
  auto forbid = [&](const char* field, const std::string& why) {
    causes.push_back({"FieldValueForbidden", "Forbidden: " + why, field});
  };
  auto unsupported = [&](const std::string& values) {
    causes.push_back({"FieldValueNotSupported",
                      "Unsupported value: " + GoQuote(match) + ": supported values: " + values,
                      "resourceVersionMatch"});
  };
  if (watch) {
    if (initial && match != "NotOlderThan")
      forbid("resourceVersionMatch",
             "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    if (!match.empty()) {
      if (!initial)
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
      if (match != "NotOlderThan") unsupported("\"NotOlderThan\"");
      if (continues)
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden when continue is provided");
    }
  } else {
    const std::string rv = First(query, "resourceVersion").value_or("");
    if (!match.empty()) {
      if (rv.empty())
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden unless resourceVersion is provided");
      if (continues)
        forbid("resourceVersionMatch",
               "resourceVersionMatch is forbidden when continue is provided");
      if (match != "Exact" && match != "NotOlderThan")
        unsupported("\"Exact\", \"NotOlderThan\", \"\"");
      if (match == "Exact" && rv == "0")
        forbid("resourceVersionMatch",
               "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"");
    }
    if (initial) forbid("sendInitialEvents", "sendInitialEvents is forbidden for list");
  }
  if (causes.empty()) return std::nullopt;
  return InvalidOptions("ListOptions", causes);
}

std::string DeleteOptions::Propagation() const {
  if (propagation_policy) return *propagation_policy;
  if (orphan_dependents) return *orphan_dependents ? "Orphan" : "Background";
  return "";
}

std::optional<KubeStatus> DecodeDeleteOptions(const Query& query, std::string_view body,
                                              bool eviction, DeleteOptions* out) {
  *out = {};
  auto bad = !body.empty() ? FromBody(body, eviction, out)
             : eviction    ? std::nullopt
                           : FromQuery(query, out);
  if (bad) return bad;
  std::vector<Cause> causes;
  const auto& p = out->propagation_policy;
  if (out->orphan_dependents && p)
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: " + GoQuote(*p) +
                          ": orphanDependents and deletionPropagation cannot be both set",
                      "propagationPolicy"});
  if (p && *p != "Foreground" && *p != "Background" && *p != "Orphan")
    causes.push_back({"FieldValueNotSupported",
                      "Unsupported value: " + GoQuote(*p) +
                          ": supported values: \"Foreground\", \"Background\", \"Orphan\", "
                          "\"nil\"",
                      "propagationPolicy"});
  CheckDryRun(out->dry_run, &causes);
  if (causes.empty()) return std::nullopt;
  return InvalidOptions("DeleteOptions", causes);
}

}  // namespace arbiter::kube
