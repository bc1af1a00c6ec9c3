// The watch feed: the changes of every object in resourceVersion order, with a bounded history
// (the newest kCapacity changes), for watch requests. A watch from resourceVersion R gets every
// change after R; R older than the history is "too old" (the API answers 410 Expired, and
// clients list again). Changes are published once durable (journal.h), in journal order.
// Fan-out: a change is kept once (its object shared with the store, its text made once), and a
// watch line is written around that text (a Pod's unpacked: packed_text.h) for each watcher.
// A removed object's last state (DELETED) keeps only its text. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/state/object_store.h"

namespace arbiter::server {

class WatchLog {
 public:
  // One published change.
  class Entry {
   public:
    explicit Entry(WatchEvent e) : event(std::move(e)) {}
    const WatchEvent event;
    // {"type":"ADDED","object":{...}} and a newline, written around the object's wire text
    // (made once, shared with the store: the history keeps no second copy).
    void AppendLine(std::string& out) const;
    std::string Line() const;
  };
  using Entries = std::vector<std::shared_ptr<const Entry>>;

  explicit WatchLog(size_t capacity = 100000) : capacity_(capacity) {}

  // Adds changes; watchers are woken by Notify() (the journal calls it once per commit, so a
  // commit of many records wakes each watcher once).
  void Publish(std::vector<WatchEvent> events);
  void Notify();
  // The changes after `after_rv` of `kind` (in `ns`, or all when ""), or nothing if `after_rv` is
  // older than the history. Waits until there is at least one change after `after_rv` (of any
  // kind) or `deadline` passes or Close() is called. Moves `after_rv` to the newest change looked
  // at.
  std::optional<Entries> Since(int64_t& after_rv, const std::string& kind, const std::string& ns,
                               std::chrono::steady_clock::time_point deadline);
  // The changes after `after_rv` (every kind), or nothing if `after_rv` is older than the
  // history. Never waits (the HTTP server's event loop fans them out: http_server.h).
  std::optional<Entries> After(int64_t after_rv) const;
  // Called (from the publishing thread) by every Notify() and by Close(); nullptr: none. Must not
  // block: the HTTP server's loop only writes to an eventfd.
  void SetListener(std::function<void()> listener);
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
  std::mutex listener_mu_;
  std::function<void()> listener_;
};

}  // namespace arbiter::server
