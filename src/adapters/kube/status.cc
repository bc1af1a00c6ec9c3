#include "adapters/kube/status.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "adapters/kube/limits.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

// Go's %q, ASCII (a client's invalid UTF-8 becomes U+FFFD).
std::string Quoted(std::string_view s) { return WireJson(json(std::string(s))); }

KubeStatus Make(int code, std::string_view reason, std::string message, json details = nullptr) {
  KubeStatus s;
  s.code = code;
  s.body = json{{"kind", "Status"},
                {"apiVersion", "v1"},
                {"metadata", json::object()},
                {"status", "Failure"},
                {"message", std::move(message)},
                {"reason", reason}};
  if (details.is_object() && !details.empty()) s.body["details"] = std::move(details);
  s.body["code"] = code;
  return s;
}

// StatusDetails with Go's omitempty: empty fields are left out.
json Details(std::string_view name, std::string_view group, std::string_view kind) {
  json d = json::object();
  if (!name.empty()) d["name"] = name;
  if (!group.empty()) d["group"] = group;
  if (!kind.empty()) d["kind"] = kind;
  return d;
}

std::string NamedResource(const ResourceName& r, std::string_view name) {
  return name.empty() ? r.Qualified() : r.Qualified() + " " + Quoted(name);
}

bool LooksLikeFieldPath(std::string_view s) {
  if (s.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '"') return false;
  return true;
}

std::string CauseReasonOf(std::string_view message) {
  if (message.rfind("is required", 0) == 0) return "FieldValueRequired";
  if (message.rfind("unknown field", 0) == 0) return "FieldValueNotSupported";
  if (message.rfind("Forbidden:", 0) == 0) return "FieldValueForbidden";
  if (message.rfind("Too long:", 0) == 0) return "FieldValueTooLong";
  return "FieldValueInvalid";
}

}  // namespace

KubeStatus NotFound(const ResourceName& r, std::string_view name) {
  return Make(404, "NotFound", NamedResource(r, name) + " not found",
              Details(name, r.group, r.plural));
}

KubeStatus PathNotFound() {
  return Make(404, "NotFound", "the server could not find the requested resource", json::object());
}

KubeStatus AlreadyExists(const ResourceName& r, std::string_view name) {
  return Make(409, "AlreadyExists", NamedResource(r, name) + " already exists",
              Details(name, r.group, r.plural));
}

KubeStatus Conflict(const ResourceName& r, std::string_view name) {
  return Conflict(r, name,
                  "the object has been modified; please apply your changes to the latest version "
                  "and try again");
}

KubeStatus Conflict(const ResourceName& r, std::string_view name, std::string_view why) {
  return Make(
      409, "Conflict",
      "Operation cannot be fulfilled on " + NamedResource(r, name) + ": " + std::string(why),
      Details(name, r.group, r.plural));
}

KubeStatus Invalid(const ResourceInfo& r, std::string_view name, const std::vector<Cause>& causes) {
  std::string message = r.QualifiedKind() + " " + Quoted(name) + " is invalid";
  std::vector<std::string> parts;
  json jc = json::array();
  for (const auto& c : causes) {
    parts.push_back(c.field.empty() ? c.message : c.field + ": " + c.message);
    json j = {{"reason", c.reason}, {"message", c.message}};
    if (!c.field.empty()) j["field"] = c.field;
    jc.push_back(std::move(j));
  }
  if (parts.size() == 1) {
    message += ": " + parts[0];
  } else if (parts.size() > 1) {
    message += ": [";
    for (size_t i = 0; i < parts.size(); ++i) message += (i ? ", " : "") + parts[i];
    message += "]";
  }
  json details = Details(name, r.group, r.kind);
  if (!jc.empty()) details["causes"] = jc;
  return Make(422, "Invalid", message, details);
}

KubeStatus Forbidden(const ResourceName& r, std::string_view name, std::string_view why) {
  std::string message = r.plural.empty()
                            ? "forbidden: " + std::string(why)
                            : NamedResource(r, name) + " is forbidden: " + std::string(why);
  return Make(403, "Forbidden", message, Details(name, r.group, r.plural));
}

KubeStatus Unauthorized(std::string_view message) {
  return Make(401, "Unauthorized", std::string(message));
}

KubeStatus BadRequest(std::string_view message) {
  return Make(400, "BadRequest", std::string(message));
}

KubeStatus MethodNotAllowed(std::string_view message) {
  return Make(405, "MethodNotAllowed",
              message.empty() ? "the server does not allow this method on the requested resource"
                              : std::string(message),
              json::object());
}

KubeStatus UnsupportedMediaType(std::string_view content_type,
                                const std::vector<std::string>& accepted) {
  (void)content_type;
  std::string list;
  for (size_t i = 0; i < accepted.size(); ++i) list += (i ? ", " : "") + accepted[i];
  return Make(
      415, "UnsupportedMediaType",
      "the body of the request was in an unknown format - accepted media types include: " + list);
}

KubeStatus Expired(std::string_view message) { return Make(410, "Expired", std::string(message)); }

KubeStatus TooOldResourceVersion(uint64_t requested, uint64_t oldest) {
  return Expired("too old resource version: " + std::to_string(requested) + " (" +
                 std::to_string(oldest) + ")");
}

KubeStatus Gone(std::string_view message) { return Make(410, "Gone", std::string(message)); }

KubeStatus InternalError(std::string_view message) {
  return Make(500, "InternalError", "Internal error occurred: " + std::string(message),
              json{{"causes", json::array({{{"message", message}}})}});
}

KubeStatus WatchDeadlineExceeded() {
  return Make(500, "InternalError", "context deadline exceeded");
}

KubeStatus ServiceUnavailable(std::string_view message) {
  return Make(503, "ServiceUnavailable", std::string(message));
}

KubeStatus Timeout(std::string_view message) {
  return Make(504, "Timeout", "Timeout: " + std::string(message), json::object());
}

KubeStatus TooLargeResourceVersion(uint64_t requested, uint64_t current) {
  KubeStatus s = Timeout("Too large resource version: " + std::to_string(requested) +
                         ", current: " + std::to_string(current));
  s.body["details"] = {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                                {"message", "Too large resource version"}}})},
                       {"retryAfterSeconds", 1}};
  return s;
}

KubeStatus TooManyRequests(std::string_view message) {
  return Make(429, "TooManyRequests", std::string(message));
}

KubeStatus TooManyRequests(std::string_view message, const std::vector<Cause>& causes) {
  json jc = json::array();
  for (const auto& c : causes) {
    json j = {{"reason", c.reason}, {"message", c.message}};
    if (!c.field.empty()) j["field"] = c.field;
    jc.push_back(std::move(j));
  }
  return Make(429, "TooManyRequests", std::string(message), json{{"causes", jc}});
}

KubeStatus Failure(int code, std::string_view message) {
  KubeStatus s = Make(code, "", std::string(message));
  s.body.erase("reason");
  return s;
}

KubeStatus RequestEntityTooLarge(std::string_view message) {
  return Make(413, "RequestEntityTooLarge", "Request entity too large: " + std::string(message));
}

// Fast paths for what stored objects hold (objects, arrays, ASCII or valid UTF-8 strings,
// integers, booleans); anything else (floats, invalid UTF-8) is written by nlohmann's own
// serializer, so the bytes are always those of j.dump(-1, ' ', false, replace).
namespace {

void AppendByNlohmann(std::string& out, const json& j) {
  nlohmann::detail::serializer<json> s(nlohmann::detail::output_adapter<char, std::string>(out),
                                       ' ', json::error_handler_t::replace);
  s.dump(j, false, false, 0);
}

bool NeedsNoEscape(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\' && c < 0x80; }

void AppendString(std::string& out, const std::string& s) {
  size_t i = 0;
  while (i < s.size() && NeedsNoEscape(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) {  // the common case: nothing to escape
    out += '"';
    out += s;
    out += '"';
    return;
  }
  const bool ascii = std::none_of(s.begin() + static_cast<long>(i), s.end(),
                                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  if (!ascii && !IsValidUtf8(s)) return AppendByNlohmann(out, json(s));
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  out.append(s, 0, i);
  for (; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void AppendValue(std::string& out, const json& j) {
  switch (j.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : j.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendString(out, k);
        out += ':';
        AppendValue(out, v);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const json& v : j.get_ref<const json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendValue(out, v);
      }
      out += ']';
      return;
    }
    case json::value_t::string:
      return AppendString(out, j.get_ref<const std::string&>());
    case json::value_t::boolean:
      out += j.get<bool>() ? "true" : "false";
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char buf[24];
      const auto r = j.is_number_unsigned()
                         ? std::to_chars(buf, buf + sizeof buf, j.get<uint64_t>())
                         : std::to_chars(buf, buf + sizeof buf, j.get<int64_t>());
      out.append(buf, r.ptr);
      return;
    }
    default:
      return AppendByNlohmann(out, j);
  }
}

}  // namespace

std::string WireJson(const json& j) {
  std::string out;
  AppendValue(out, j);
  return out;
}

void AppendWireJson(std::string& out, const json& j) { AppendValue(out, j); }

void AppendWireString(std::string& out, const std::string& s) { AppendString(out, s); }

json SuccessStatus(const ResourceName& r, std::string_view name, std::string_view uid) {
  json details = Details(name, r.group, r.plural);
  if (!uid.empty()) details["uid"] = uid;
  return json{{"kind", "Status"},
              {"apiVersion", "v1"},
              {"metadata", json::object()},
              {"status", "Success"},
              {"details", details}};
}

std::vector<Cause> CausesFromDiagnostics(const Diagnostics& d, std::string_view kind,
                                         std::string_view name) {
  std::vector<Cause> out;
  for (const auto& item : d.items) {
    if (item.severity != Severity::kError) continue;
    Cause c;
    c.field = item.field_path;
    c.reason = CauseReasonOf(item.message);
    const bool same_name =
        item.name == name ||
        (item.name.size() > name.size() &&
         item.name.compare(item.name.size() - name.size(), name.size(), name) == 0 &&
         item.name[item.name.size() - name.size() - 1] == '/');
    if (item.kind.empty() || (item.kind == kind && same_name)) {
      c.message = item.message;
    } else {
      // About another object (a cross-object check): say which, as the field is its field.
      c.message = item.kind + "/" + item.name + ": " +
                  (item.field_path.empty() ? "" : item.field_path + ": ") + item.message;
      c.field.clear();
    }
    out.push_back(std::move(c));
  }
  return out;
}

Cause CauseFromDiagnosticLine(std::string_view line) {
  Cause c;
  std::string_view rest = line;
  auto next_token = [&rest]() -> std::string_view {
    size_t sep = rest.find(": ");
    return sep == std::string_view::npos ? std::string_view() : rest.substr(0, sep);
  };
  auto drop = [&rest](std::string_view token) { rest.remove_prefix(token.size() + 2); };
  std::string_view t = next_token();  // FILE:LINE
  if (!t.empty()) drop(t);
  t = next_token();  // Kind/name
  if (!t.empty() && std::isupper(static_cast<unsigned char>(t[0])) &&
      t.find('/') != std::string_view::npos && t.find(' ') == std::string_view::npos)
    drop(t);
  t = next_token();  // field.path
  if (LooksLikeFieldPath(t) && t != "warning") {
    c.field = std::string(t);
    drop(t);
  }
  c.message = std::string(rest);
  c.reason = CauseReasonOf(c.message);
  return c;
}

std::string WarningHeaderValue(std::string_view text) {
  constexpr size_t kMax = 4096;
  std::string out = "299 - \"";
  size_t n = 0;
  for (char c : text) {
    if (n++ >= kMax) break;
    if (c == '\\' || c == '"') out += '\\';
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return out + "\"";
}

std::vector<std::string> WarningsFromDiagnostics(const Diagnostics& d, std::string_view kind,
                                                 std::string_view name) {
  std::vector<std::string> out;
  Diagnostics warnings;
  for (const auto& item : d.items) {
    if (item.severity != Severity::kWarning) continue;
    Diagnostic as_error = item;
    as_error.severity = Severity::kError;  // CausesFromDiagnostics takes errors only
    warnings.items.push_back(as_error);
  }
  for (const auto& c : CausesFromDiagnostics(warnings, kind, name))
    out.push_back(c.field.empty() ? c.message : c.field + ": " + c.message);
  return out;
}

KubeStatus FromStatus(const Status& s, const ResourceInfo& r, std::string_view name) {
  const ResourceName rn = ResourceName::Of(r);
  switch (s.code()) {
    case StatusCode::kNotFound:
      return NotFound(rn, name);
    case StatusCode::kAlreadyExists:
      return AlreadyExists(rn, name);
    case StatusCode::kConflict:
      return Conflict(rn, name, s.message());
    case StatusCode::kInvalidArgument:
      return Invalid(r, name, {Cause{"FieldValueInvalid", s.message(), ""}});
    case StatusCode::kFailedPrecondition:
      return BadRequest(s.message());
    case StatusCode::kResourceExhausted:
      return Forbidden(rn, name, s.message());
    case StatusCode::kUnavailable:
      return ServiceUnavailable(s.message());
    case StatusCode::kOk:
    case StatusCode::kInternal:
      break;
  }
  return InternalError(s.message());
}

}  // namespace arbiter::kube
