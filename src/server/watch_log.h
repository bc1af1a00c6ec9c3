// The watch feed: the changes of every object in resourceVersion order, with a bounded history
// (the newest kCapacity changes), for watch requests. A watch from resourceVersion R gets every
// change after R; R older than the history is "too old" (the API answers 410 Expired, and
// clients list again). Changes are published once durable (journal.h), in journal order.
// Fan-out: a change is kept once (its object shared with the store) and serialized as a watch
// line at most once, whatever the number of watchers. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/object_store.h"

namespace arbiter::server {

class WatchLog {
 public:
  // One published change.
  class Entry {
   public:
    explicit Entry(WatchEvent e) : event(std::move(e)) {}
    const WatchEvent event;
    // {"type":"ADDED","object":{...}} and a newline: made by the first watcher that sends it.
    const std::string& Line() const;

   private:
    mutable std::once_flag once_;
    mutable std::string line_;
  };
  using Entries = std::vector<std::shared_ptr<const Entry>>;

  explicit WatchLog(size_t capacity = 100000) : capacity_(capacity) {}

  void Publish(std::vector<WatchEvent> events);
  // The changes after `after_rv` of `kind` (in `ns`, or all when ""), or nothing if `after_rv` is
  // older than the history. Waits until there is at least one change after `after_rv` (of any
  // kind) or `deadline` passes or Close() is called. Moves `after_rv` to the newest change looked
  // at.
  std::optional<Entries> Since(int64_t& after_rv, const std::string& kind, const std::string& ns,
                               std::chrono::steady_clock::time_point deadline);
  // The newest published resourceVersion.
  int64_t last_rv() const;
  // Sets the newest resourceVersion at start-up (nothing older can be watched).
  void Reset(int64_t rv);
  void Close();
  bool closed() const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const Entry>> events_;
  int64_t oldest_rv_ = 0;  // changes after this are in events_
  int64_t last_rv_ = 0;
  bool closed_ = false;
};

}  // namespace arbiter::server
