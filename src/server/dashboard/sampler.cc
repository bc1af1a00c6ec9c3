#include "server/dashboard/sampler.h"

#include <chrono>

namespace arbiter::server::dashboard {

HistorySampler::HistorySampler(Daemon& d, History history, std::function<Millis()> clock)
    : d_(d), clock_(std::move(clock)), history_(std::move(history)) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  thread_ = std::thread([this] { Loop(); });
}

HistorySampler::~HistorySampler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HistorySampler::Loop() {
  using namespace std::chrono_literals;
  int64_t seen = -1;  // the newest change sampled (-1: none yet)
  Millis last_sample = 0;
  for (;;) {
    const int64_t rv = d_.watch_log().last_rv();
    const Millis now = clock_();
    if (rv != seen || now - last_sample >= history_.heartbeat()) {
      Sample s = d_.Read([&](const Cluster& c) { return TakeSample(c, now); });
      std::lock_guard<std::mutex> l(mu_);
      history_.Add(std::move(s));
      seen = rv;
      last_sample = now;
    }
    {
      // At most one sample a second.
      std::unique_lock<std::mutex> l(mu_);
      if (cv_.wait_for(l, 1s, [this] { return stop_; })) return;
    }
    // Then wait for a change (or a second, to notice the heartbeat and a stop).
    if (!d_.watch_log().closed()) {
      int64_t after = d_.watch_log().last_rv();
      if (after == seen) d_.watch_log().Since(after, "", "", std::chrono::steady_clock::now() + 1s);
    }
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
  }
}

}  // namespace arbiter::server::dashboard
