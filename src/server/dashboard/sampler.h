// Keeps the dashboard's History (history.h) of a running daemon: a thread that wakes on every
// change the daemon publishes (its watch feed) or after a second, and takes a sample when
// something changed (at most one a second) or a heartbeat has passed. The sample's time is the
// wall clock's. Stops (and joins) on destruction.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "server/daemon.h"
#include "server/dashboard/history.h"

namespace arbiter::server::dashboard {

class HistorySampler {
 public:
  // `clock`: Unix ms (default: the system clock).
  explicit HistorySampler(Daemon& d, History history = History(),
                          std::function<Millis()> clock = nullptr);
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

 private:
  void Loop();

  Daemon& d_;
  std::function<Millis()> clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  History history_;
  std::thread thread_;
};

}  // namespace arbiter::server::dashboard
