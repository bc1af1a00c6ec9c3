#include "adapters/kube/watch.h"

#include <algorithm>
#include <charconv>

namespace arbiter::kube {
namespace {

using nlohmann::json;

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

Result<bool> ParseBool(std::string_view name, std::string_view v) {
  if (v == "true" || v == "1" || v == "True" || v == "TRUE" || v == "t" || v == "T") return true;
  if (v == "false" || v == "0" || v == "False" || v == "FALSE" || v == "f" || v == "F" || v.empty())
    return false;
  return Status::InvalidArgument(std::string(name) + ": Invalid value: \"" + std::string(v) +
                                 "\": must be a boolean");
}

}  // namespace

std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
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
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

Result<uint64_t> ParseResourceVersion(std::string_view s) {
  if (s.empty() || s == "0") return uint64_t{0};
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return v;
  const bool digits = std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::string quoted = GoQuote(s);
  return Status::InvalidArgument("resourceVersion: Invalid value: " + quoted +
                                 ": strconv.ParseUint: parsing " + quoted +
                                 (digits ? ": value out of range" : ": invalid syntax"));
}

Result<ListOptions> ParseListOptions(const std::multimap<std::string, std::string>& query,
                                     const ResourceInfo& r) {
  ListOptions o;
  for (const auto& [name, value] : query) {
    if (name == "labelSelector") {
      auto s = ParseLabelSelector(value);
      if (!s.ok()) return s.status();
      o.label_selector = std::move(s).value();
    } else if (name == "fieldSelector") {
      auto s = ParseFieldSelector(value, r);
      if (!s.ok()) return s.status();
      o.field_selector = std::move(s).value();
    } else if (name == "watch" || name == "allowWatchBookmarks" || name == "sendInitialEvents") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.status();
      (name == "watch"                 ? o.watch
       : name == "allowWatchBookmarks" ? o.allow_watch_bookmarks
                                       : o.send_initial_events) = *b;
    } else if (name == "resourceVersion") {
      if (value.empty() || value == "0") continue;
      auto v = ParseInt(value);
      if (!v || *v < 0)
        return Status::InvalidArgument("resourceVersion: Invalid value: \"" + value +
                                       "\": must be a non-negative integer");
      o.resource_version = static_cast<uint64_t>(*v);
    } else if (name == "resourceVersionMatch") {
      if (!value.empty() && value != "NotOlderThan" && value != "Exact")
        return Status::InvalidArgument("resourceVersionMatch: Unsupported value: \"" + value +
                                       "\": supported values: \"Exact\", \"NotOlderThan\", \"\"");
      o.resource_version_match = value;
    } else if (name == "timeoutSeconds" || name == "limit") {
      auto v = ParseInt(value);
      if (!v || *v < 0)
        return Status::InvalidArgument(name + ": Invalid value: \"" + value +
                                       "\": must be a non-negative integer");
      (name == "limit" ? o.limit : o.timeout_seconds) = *v;
    } else if (name == "continue") {
      o.continue_token = value;
    } else if (name == "includeObject") {
      o.include_object = ParseIncludeObject(value);
    }
  }
  if (!o.resource_version_match.empty() && !o.resource_version)
    return Status::InvalidArgument(
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion "
        "is provided");
  return o;
}

const char* ToString(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "";
}

json WatchEvent(WatchEventType t, const json& object) {
  return json{{"type", ToString(t)}, {"object", object}};
}

std::string WatchLine(WatchEventType t, const json& object) {
  return WatchEvent(t, object).dump() + "\n";
}

json BookmarkEvent(const ResourceInfo& r, uint64_t resource_version, bool initial_events_end) {
  json meta = {{"resourceVersion", std::to_string(resource_version)}};
  if (initial_events_end) meta["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  return WatchEvent(WatchEventType::kBookmark,
                    json{{"kind", r.kind}, {"apiVersion", r.ApiVersion()}, {"metadata", meta}});
}

json ErrorEvent(const KubeStatus& s) { return WatchEvent(WatchEventType::kError, s.body); }

json TableWatchEvent(WatchEventType t, const ResourceInfo& r, const json& object, Millis now,
                     IncludeObject include, bool with_columns) {
  json table = MakeTable(r, std::vector<const json*>{&object}, now, include);
  if (object.contains("metadata") && object["metadata"].contains("resourceVersion"))
    table["metadata"]["resourceVersion"] = object["metadata"]["resourceVersion"];
  if (!with_columns) table["columnDefinitions"] = nullptr;
  return WatchEvent(t, table);
}

}  // namespace arbiter::kube
