#include "server/watch_log.h"

#include <algorithm>

namespace arbiter::server {

void WatchLog::Publish(std::vector<WatchEvent> events) {
  if (events.empty()) return;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& e : events) {
    last_rv_ = e.resource_version;
    events_.push_back(std::move(e));
  }
  while (events_.size() > capacity_) {
    oldest_rv_ = events_.front().resource_version;
    events_.pop_front();
  }
  cv_.notify_all();
}

std::optional<std::vector<WatchEvent>> WatchLog::Since(
    int64_t& after_rv, const std::string& kind, const std::string& ns,
    std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  if (after_rv < oldest_rv_) return std::nullopt;
  cv_.wait_until(l, deadline, [&] { return last_rv_ > after_rv || closed_; });
  std::vector<WatchEvent> out;
  if (after_rv < oldest_rv_) return std::nullopt;
  // Binary search for the first change after after_rv (events_ is in resourceVersion order).
  size_t lo = 0, hi = events_.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (events_[mid].resource_version <= after_rv)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i < events_.size(); ++i) {
    const WatchEvent& e = events_[i];
    if (e.kind == kind && (ns.empty() || e.namespace_ == ns)) out.push_back(e);
  }
  if (!events_.empty()) after_rv = std::max(after_rv, events_.back().resource_version);
  return out;
}

int64_t WatchLog::last_rv() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_rv_;
}

void WatchLog::Reset(int64_t rv) {
  std::lock_guard<std::mutex> l(mu_);
  events_.clear();
  oldest_rv_ = last_rv_ = rv;
}

void WatchLog::Close() {
  std::lock_guard<std::mutex> l(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool WatchLog::closed() const {
  std::lock_guard<std::mutex> l(mu_);
  return closed_;
}

}  // namespace arbiter::server
