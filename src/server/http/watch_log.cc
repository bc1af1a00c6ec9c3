#include "server/http/watch_log.h"

#include <algorithm>

namespace arbiter::server {

void WatchLog::Entry::AppendLine(std::string& out) const {
  out += "{\"type\":\"";
  out += event.type;
  out += "\",\"object\":";
  event.object.AppendWireText(out);  // "null" for none
  out += "}\n";
}

std::string WatchLog::Entry::Line() const {
  std::string line;
  AppendLine(line);
  return line;
}

void WatchLog::Publish(std::vector<WatchEvent> events) {
  if (events.empty()) return;
  std::vector<std::shared_ptr<const Entry>> entries;
  entries.reserve(events.size());
  for (auto& e : events) {
    // A removed object's last state is read only as text: its tree goes now, off the daemon's
    // lock (an Event's would otherwise stay as long as the history keeps the change).
    if (e.type == "DELETED") e.object.Seal();
    entries.push_back(std::make_shared<const Entry>(std::move(e)));
  }
  std::vector<std::shared_ptr<const Entry>> dropped;  // freed after the lock is let go
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& e : entries) {
      last_rv_ = e->event.resource_version;
      events_.push_back(std::move(e));
    }
    while (events_.size() > capacity_) {
      oldest_rv_ = events_.front()->event.resource_version;
      dropped.push_back(std::move(events_.front()));
      events_.pop_front();
    }
  }
}

void WatchLog::Notify() {
  cv_.notify_all();
  std::lock_guard<std::mutex> l(listener_mu_);
  if (listener_) listener_();
}

void WatchLog::SetListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> l(listener_mu_);
  listener_ = std::move(listener);
}

std::optional<WatchLog::Entries> WatchLog::After(int64_t after_rv) const {
  std::lock_guard<std::mutex> l(mu_);
  if (after_rv < oldest_rv_) return std::nullopt;
  auto first = std::upper_bound(events_.begin(), events_.end(), after_rv,
                                [](int64_t rv, const std::shared_ptr<const Entry>& e) {
                                  return rv < e->event.resource_version;
                                });
  return Entries(first, events_.end());
}

std::optional<WatchLog::Entries> WatchLog::Since(int64_t& after_rv, const std::string& kind,
                                                 const std::string& ns,
                                                 std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(mu_);
  if (after_rv < oldest_rv_) return std::nullopt;
  cv_.wait_until(l, deadline, [&] { return last_rv_ > after_rv || closed_; });
  Entries out;
  if (after_rv < oldest_rv_) return std::nullopt;
  // Binary search for the first change after after_rv (events_ is in resourceVersion order).
  auto first = std::upper_bound(events_.begin(), events_.end(), after_rv,
                                [](int64_t rv, const std::shared_ptr<const Entry>& e) {
                                  return rv < e->event.resource_version;
                                });
  for (auto it = first; it != events_.end(); ++it) {
    const WatchEvent& e = (*it)->event;
    if (e.kind == kind && (ns.empty() || e.namespace_ == ns)) out.push_back(*it);
  }
  if (!events_.empty()) after_rv = std::max(after_rv, events_.back()->event.resource_version);
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
  {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  std::lock_guard<std::mutex> l(listener_mu_);
  if (listener_) listener_();
}

bool WatchLog::closed() const {
  std::lock_guard<std::mutex> l(mu_);
  return closed_;
}

}  // namespace arbiter::server
