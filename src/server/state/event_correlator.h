// What client-go's event recorder does to a controller's core/v1 Events before it writes them
// (tools/record/events_cache.go, EventCorrelator with its defaults), for the events the daemon's
// Job controller reports about each Job (Cluster::AddJobEvent):
//
// | step | key | rule |
// |---|---|---|
// | aggregate | object, type, reason | within 600 s of the last such event, the 10th distinct
// message and every later one becomes one event, "(combined from similar events): MESSAGE" | |
// observe | object, type, reason, message (an aggregate: its key) | an event seen before updates
// that one: count + 1, its firstTimestamp and name kept, message and lastTimestamp the new ones |
// | spam filter | object, type | a token bucket per key, 25 tokens, one more every 300 s: an event
// without a token is dropped (the observation stays counted, as client-go's) |
//
// So a Job of 10,000 pods reports 9 `Created pod: NAME` events and one combined event counting
// 16 more, then one event every 5 minutes; a create refused at every retry (under a new pod name
// each time) is 9 FailedCreate events and a combined one whose count grows. client-go keeps these
// in LRU caches of 4,096 keys per process; here they are kept per object (Forget drops one), at
// most kMaxObserved observations an object (the least recently used first), and the one choice
// client-go leaves to chance (which message an aggregate forgets, PopAny) is the least.
// Deterministic, pure: no clock (the caller's instant), no I/O. Saved whole in snapshots
// (Save/Load), so a restore correlates as the live daemon did.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

namespace arbiter::server {

class EventCorrelator {
 public:
  using Millis = int64_t;
  static constexpr Millis kAggregateWindow = 600'000;  // defaultAggregateIntervalInSeconds
  static constexpr size_t kAggregateAfter = 10;        // defaultAggregateMaxEvents
  static constexpr int64_t kSpamBurst = 25;            // defaultSpamBurst
  static constexpr Millis kSpamRefill = 300'000;       // 1 / defaultSpamQPS
  static constexpr size_t kMaxObserved = 64;

  struct Event {
    std::string object;  // the involved object's identity (its uid)
    std::string type, reason, message;
    Millis now = 0;
    std::string name;  // the name a new event gets
  };
  struct Result {
    bool skip = false;    // dropped by the spam filter
    std::string message;  // the event's, or the combined one
    int64_t count = 1;    // > 1: it updates the event `name` (written again if gone)
    std::string name;     // Event::name, or the earlier event's
    Millis first = 0;     // firstTimestamp
  };

  Result Correlate(const Event& e);
  void Forget(const std::string& object) { objects_.erase(object); }

  nlohmann::json Save() const;
  void Load(const nlohmann::json& saved);  // throws on a malformed one (a corrupt snapshot)

 private:
  struct Aggregate {
    std::set<std::string> messages;
    Millis last = 0;
  };
  struct Observed {
    int64_t count = 0;
    Millis first = 0;
    std::string name;
    uint64_t seq = 0;  // last use: the least recently used goes first
  };
  struct Object {
    std::map<std::string, std::pair<int64_t, Millis>> credit;  // by type: (ms of credit, at)
    std::map<std::pair<std::string, std::string>, Aggregate> aggregates;  // (type, reason)
    // (type, reason, message or "" for the aggregate, aggregated)
    std::map<std::tuple<std::string, std::string, std::string, bool>, Observed> observed;
    uint64_t seq = 0;
  };
  std::map<std::string, Object> objects_;
};

}  // namespace arbiter::server
