#include "kubesched/event_writer.h"

#include <chrono>

#include "adapters/kubeclient/api_client.h"
#include "adapters/kubeclient/watch_decoder.h"

namespace arbiter::kubesched {

EventWriter::EventWriter(kubeclient::KubeConfig kube, std::function<void(const std::string&)> log,
                         size_t max_queued)
    : kube_(std::move(kube)), log_(std::move(log)), max_queued_(max_queued) {
  thread_ = std::thread([this] { Run(); });
}

EventWriter::~EventWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventWriter::Submit(std::vector<EventWrite> writes) {
  if (writes.empty()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : writes) {
      if (queue_.size() >= max_queued_) {
        ++dropped_;
        continue;
      }
      queue_.push_back(std::move(w));
    }
  }
  cv_.notify_one();
}

void EventWriter::Run() {
  std::unique_ptr<kubeclient::ApiClient> client;
  auto last_said = std::chrono::steady_clock::time_point{};
  auto fail = [&](const std::string& why) {
    ++failed_;
    const auto now = std::chrono::steady_clock::now();
    if (log_ && now - last_said >= std::chrono::minutes(1)) {
      log_("writing an event failed: " + why + " (" + std::to_string(failed_.load()) +
           " failed so far; events are best effort)");
      last_said = now;
    }
  };
  for (;;) {
    EventWrite w;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      w = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!client) {
      auto c = kubeclient::ApiClient::Connect(kube_);
      if (!c.ok()) {
        fail(c.message());
        continue;
      }
      client = std::move(c).value();
    }
    auto r = w.create ? client->Post(w.path, w.body)
                      : client->Patch(w.path, w.body, "application/merge-patch+json");
    if (!r.ok()) {
      fail(r.message());
      client.reset();  // reconnect for the next one
    } else if (r->status >= 300) {
      fail("HTTP " + std::to_string(r->status) + " on " + w.path + ": " +
           kubeclient::StatusMessage(r->body));
    } else {
      ++written_;
    }
  }
}

}  // namespace arbiter::kubesched
