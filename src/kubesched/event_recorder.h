// events.k8s.io/v1 Events of `arbiter scheduler`, deduplicated into series the way client-go's
// events broadcaster (k8s.io/client-go/tools/events, what kube-scheduler uses) does it:
//  - An event is identified by (regarding object, related object, reason, action) — not its note,
//    as in client-go. The first one is created (POST); the second within a series is the same
//    Event given `series: {count: 2, lastObservedTime}` (PATCH); later ones only count, and the
//    count is written at most once per `refresh` (PATCH).
//  - A series not observed for `finish` ends: its last count is written if not yet, and it leaves
//    the cache (the next occurrence creates a new Event).
//  - At most `max_series` series are kept (client-go's LRU of 4096): when full, the series least
//    recently observed ends first. Notes are cut to 1 KiB (the API server refuses longer ones).
// Pure: no I/O, no clock; `now` is wall-clock Unix milliseconds. The writes are carried out by
// the caller (event_writer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/duration.h"

namespace arbiter::kubesched {

struct EventObject {
  std::string api_version = "v1";
  std::string kind = "Pod";
  std::string namespace_, name, uid;
  bool operator<(const EventObject& o) const {
    return std::tie(api_version, kind, namespace_, name, uid) <
           std::tie(o.api_version, o.kind, o.namespace_, o.name, o.uid);
  }
};

// What happened, as the controller says it.
struct EventRequest {
  EventObject regarding;
  std::optional<EventObject> related;
  bool warning = false;  // type Warning, else Normal
  std::string reason;    // "FailedScheduling", "Scheduled", "Preempted", ...
  std::string action;    // "Scheduling", "Binding", "Preempting", ...
  std::string note;
};

// One API call: POST `path` (create) or PATCH `path` (merge patch of the series).
struct EventWrite {
  bool create = true;
  std::string path;
  std::string body;  // JSON
  std::string name;  // the Event's (its series'): its writes are made in order (event_writer.h)
};

struct EventRecorderOptions {
  std::string reporting_controller = "arbiter";  // the scheduler's name, as kube-scheduler
  std::string reporting_instance = "arbiter";    // NAME-HOST, as kube-scheduler
  Millis refresh = 30 * 60 * 1000;               // client-go's refreshTime
  Millis finish = 6 * 60 * 1000;                 // client-go's finishTime
  size_t max_series = 4096;
};

class EventRecorder {
 public:
  explicit EventRecorder(EventRecorderOptions options = {});

  // The writes this occurrence needs now (none, a create or a series patch).
  std::vector<EventWrite> Record(const EventRequest& request, Millis now);
  // Series whose count is due (refresh) or that end (finish): their writes.
  std::vector<EventWrite> Flush(Millis now);

  size_t series() const { return series_.size(); }
  int64_t created() const { return created_; }
  int64_t patched() const { return patched_; }

 private:
  using Key = std::tuple<EventObject, std::optional<EventObject>, std::string, std::string>;
  struct Series {
    std::string name, namespace_;
    int64_t count = 1;
    int64_t written_count = 1;
    Millis last_observed = 0;
    Millis written_at = 0;
    std::list<Key>::iterator lru;
  };
  EventWrite Create(const EventRequest& r, const Series& s, Millis now) const;
  EventWrite Patch(Series& s, Millis now);
  void Expire(Millis now, std::vector<EventWrite>* out);  // series not observed for `finish`

  EventRecorderOptions options_;
  std::map<Key, Series> series_;
  std::list<Key> lru_;  // least recently observed first
  int64_t created_ = 0, patched_ = 0;
  // Series observed more often than written (count != written_count): Flush looks at the series
  // only when there is one (it is called every cycle; a full cache holds 4096).
  size_t behind_ = 0;
  Millis last_name_ = 0;  // names are NAME.<hex nanoseconds>, unique per recorder
};

}  // namespace arbiter::kubesched
