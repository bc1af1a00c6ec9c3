// List and watch requests: the query parameters kube-apiserver takes, and the watch stream's
// events (one JSON object per line: {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
// "object": ...}), in the plain and the Table shape (kubectl get --watch asks for Tables: each
// event's object is a Table with the one row of that object).
//
// Query parameters: labelSelector, fieldSelector (parsed with selectors.h against the resource),
// watch ("true"/"1"), resourceVersion (decimal; "" and "0" mean "any"), resourceVersionMatch
// (NotOlderThan, Exact), allowWatchBookmarks, sendInitialEvents, timeoutSeconds, limit, continue,
// includeObject. Bad values are kInvalidArgument with kube's wording (answer 400 BadRequest).
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/kube/resources.h"
#include "adapters/kube/selectors.h"
#include "adapters/kube/status.h"
#include "adapters/kube/table.h"
#include "core/status.h"

namespace arbiter::kube {

struct ListOptions {
  LabelSelector label_selector;
  FieldSelector field_selector;
  bool watch = false;
  std::optional<uint64_t> resource_version;  // absent: "" or "0"
  std::string resource_version_match;        // "", "NotOlderThan", "Exact"
  bool allow_watch_bookmarks = false;
  bool send_initial_events = false;
  std::optional<int64_t> timeout_seconds;
  std::optional<int64_t> limit;
  std::string continue_token;
  IncludeObject include_object = IncludeObject::kMetadata;
};

// `query` as the HTTP layer decoded it (one value per name; httplib's req.params).
Result<ListOptions> ParseListOptions(const std::multimap<std::string, std::string>& query,
                                     const ResourceInfo& r);

// kube-apiserver's APIObjectVersioner.ParseResourceVersion: "" and "0" are 0, anything else is
// Go's strconv.ParseUint(s, 10, 64) (no sign, no "0x"); the error is storage's InvalidError text,
// `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`.
Result<uint64_t> ParseResourceVersion(std::string_view s);
// Go's strconv.Quote for the bytes kube-apiserver's messages quote (ASCII escapes; other bytes as
// they are).
std::string GoQuote(std::string_view s);

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };
const char* ToString(WatchEventType t);

// {"type": T, "object": object}
nlohmann::json WatchEvent(WatchEventType t, const nlohmann::json& object);
// The same as one line of the stream (JSON + "\n").
std::string WatchLine(WatchEventType t, const nlohmann::json& object);
// A BOOKMARK: an object of the resource's kind with only metadata.resourceVersion (and the
// annotation "k8s.io/initial-events-end": "true" when it ends the initial events of
// sendInitialEvents=true).
nlohmann::json BookmarkEvent(const ResourceInfo& r, uint64_t resource_version,
                             bool initial_events_end = false);
// An ERROR event carrying a Status (e.g. TooOldResourceVersion: 410 Expired).
nlohmann::json ErrorEvent(const KubeStatus& s);
// A watch event for kubectl get --watch: the object as a one-row Table (column definitions
// included when `with_columns`, as in the first event of a stream).
nlohmann::json TableWatchEvent(WatchEventType t, const ResourceInfo& r,
                               const nlohmann::json& object, Millis now, IncludeObject include,
                               bool with_columns);

}  // namespace arbiter::kube
