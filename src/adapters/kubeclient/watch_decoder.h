// The bytes of kube-apiserver's list and watch answers as values, bounded.
//
// A watch answer (GET ...?watch=true, HTTP/1.1 chunked) is a stream of JSON objects, one per
// line: {"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR", "object": {...}}. Chunk
// boundaries fall anywhere (inside a line, several lines in one chunk): WatchDecoder reassembles
// lines. A line longer than the cap, a line that is not JSON, or an event without a known type and
// an object is an error event (the informer drops the connection and lists again), never a crash.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace arbiter::kubeclient {

using Json = nlohmann::json;

// One watch event or list item is at most this large (kube-apiserver's own request limit is
// 3 MiB per object; etcd's 1.5 MiB): anything larger is refused.
inline constexpr size_t kMaxEventBytes = 8 << 20;
// A list answer is at most this large (about 20,000 pods of 4 KiB each, with room).
inline constexpr size_t kMaxListBytes = 256 << 20;
// JSON nesting deeper than this is refused (Kubernetes objects nest a dozen levels or so).
inline constexpr size_t kMaxNesting = 100;

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  Json object;
  // ERROR events: the Status's code (410 Gone: the resourceVersion is too old, list again).
  int error_code = 0;
  // metadata.resourceVersion of the object ("" if none).
  std::string resource_version;
};

class WatchDecoder {
 public:
  explicit WatchDecoder(size_t max_line = kMaxEventBytes) : max_line_(max_line) {}
  // Adds bytes of the stream; complete lines become events (Next()). After an error, the
  // decoder stays failed (the stream is no longer trusted).
  void Feed(std::string_view bytes);
  // The next decoded event, if any.
  std::optional<WatchEvent> Next();
  // Why the stream failed, or OK.
  const Status& status() const { return status_; }
  size_t buffered() const { return partial_.size(); }

 private:
  void Line(std::string_view line);
  size_t max_line_;
  std::string partial_;
  std::deque<WatchEvent> ready_;
  Status status_;
};

// One event line parsed (exposed for tests).
Result<WatchEvent> ParseWatchLine(std::string_view line);

// A list answer: its items (each given the list's kind without "List" and apiVersion when it has
// none, as kube-apiserver leaves them out) and metadata.resourceVersion.
struct ListPage {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;
};
Result<ListPage> ParseListBody(std::string_view body);

// kube-apiserver's Status body ({"kind":"Status","message":...,"reason":...,"code":...}): its
// message, or the body's start when it is not one.
std::string StatusMessage(std::string_view body);
std::string StatusReason(std::string_view body);

}  // namespace arbiter::kubeclient
