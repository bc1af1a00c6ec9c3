// Keeps the dashboard's History (history.h) of a running daemon: a thread that wakes on every
// change the daemon publishes (its watch feed) or after a second, and takes a sample when
// something changed (at most one a second) or a heartbeat has passed. The sample's time is the
// wall clock's. Under the daemon's lock it only shares the live facts /metrics reads
// (dashboard::CollectSample: O(live / 256 + nodes + quotas)); the sample is made after. With a
// store directory (the daemon's --data) the history is restored from its HistoryStore
// (history_store.h) at start, and the samples kept are written to it in batches (every 20 samples
// or 10 s, and at the end). Stops (and joins, then writes) on destruction.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/daemon.h"
#include "server/dashboard/history.h"
#include "server/dashboard/history_store.h"

namespace arbiter::server::dashboard {

class HistorySampler {
 public:
  // `clock`: Unix ms (default: the system clock). `store_dir` "": the history in memory only.
  // `warn` is told the store's warnings (HistoryStore::warnings), or that it refused a link
  // planted as its file (HistoryStore::Open), once, in the constructor.
  explicit HistorySampler(Daemon& d, History history = History(),
                          std::function<Millis()> clock = nullptr, std::string store_dir = "",
                          const std::function<void(const std::string&)>& warn = nullptr);
  ~HistorySampler();
  HistorySampler(const HistorySampler&) = delete;
  HistorySampler& operator=(const HistorySampler&) = delete;

  // Runs `f` on the history under its lock.
  template <typename F>
  auto Read(F&& f) const {
    std::lock_guard<std::mutex> l(mu_);
    return f(static_cast<const History&>(history_));
  }
  Millis Now() const { return clock_(); }
  // {path, restored (samples read at start), error (the last failure, or null)}, or null
  // without a store directory.
  Json StoreState() const;

 private:
  void Loop();
  // Writes the pending samples when there are enough or they waited long enough (or `now`).
  void MaybeWrite(bool now);

  Daemon& d_;
  std::function<Millis()> clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  History history_;
  // The store (sampler thread only, after the constructor), and what is not written yet.
  std::string store_dir_;
  std::unique_ptr<HistoryStore> store_;
  std::vector<Sample> pending_;
  std::chrono::steady_clock::time_point last_write_;
  size_t restored_ = 0;
  std::string store_error_;  // under mu_
  std::thread thread_;
};

}  // namespace arbiter::server::dashboard
