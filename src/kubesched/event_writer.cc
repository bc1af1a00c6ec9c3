#include "kubesched/event_writer.h"

#include <chrono>

#include "adapters/kubeclient/watch_decoder.h"

namespace arbiter::kubesched {

EventWriter::EventWriter(kubeclient::KubeConfig kube, std::function<void(const std::string&)> log,
                         int connections, size_t max_queued,
                         kubeclient::ClientOptions client_options)
    : kube_(std::move(kube)),
      log_(std::move(log)),
      max_queued_(max_queued),
      client_options_(std::move(client_options)) {
  const int n = connections < 1 ? 1 : connections;
  for (int i = 0; i < n; ++i) lanes_.push_back(std::make_unique<Lane>());
  for (auto& lane : lanes_) lane->thread = std::thread([this, l = lane.get()] { Run(*l); });
}

EventWriter::~EventWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  for (auto& lane : lanes_) lane->cv.notify_all();
  for (auto& lane : lanes_) lane->thread.join();
}

size_t EventWriter::ConnectionOf(const std::string& name, size_t connections) {
  // FNV-1a: the same on every platform and run (std::hash need not be).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return connections == 0 ? 0 : static_cast<size_t>(h % connections);
}

int64_t EventWriter::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int64_t>(queued_) + in_flight_;
}

void EventWriter::Submit(std::vector<EventWrite> writes) {
  if (writes.empty()) return;
  std::vector<bool> woken(lanes_.size(), false);
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : writes) {
      if (queued_ >= max_queued_) {
        ++dropped_;
        continue;
      }
      const size_t i = ConnectionOf(w.name, lanes_.size());
      lanes_[i]->queue.push_back(std::move(w));
      ++queued_;
      woken[i] = true;
    }
  }
  for (size_t i = 0; i < lanes_.size(); ++i)
    if (woken[i]) lanes_[i]->cv.notify_one();
}

void EventWriter::Fail(const std::string& why) {
  ++failed_;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> l(fail_mu_);
  if (log_ && now - last_said_ >= std::chrono::minutes(1)) {
    log_("writing an event failed: " + why + " (" + std::to_string(failed_.load()) +
         " failed so far; events are best effort)");
    last_said_ = now;
  }
}

void EventWriter::Write(std::unique_ptr<kubeclient::ApiClient>& client, const EventWrite& w) {
  if (!client) {
    auto c = kubeclient::ApiClient::Connect(kube_, client_options_);
    if (!c.ok()) return Fail(c.message());
    client = std::move(c).value();
  }
  auto r = w.create ? client->Post(w.path, w.body)
                    : client->Patch(w.path, w.body, "application/merge-patch+json");
  if (!r.ok()) {
    Fail(r.message());
    client.reset();  // reconnect for the next one
  } else if (r->status >= 300) {
    Fail("HTTP " + std::to_string(r->status) + " on " + w.path + ": " +
         kubeclient::StatusMessage(r->body));
  } else {
    ++written_;
  }
}

void EventWriter::Run(Lane& lane) {
  std::unique_ptr<kubeclient::ApiClient> client;
  for (;;) {
    EventWrite w;
    {
      std::unique_lock<std::mutex> l(mu_);
      lane.cv.wait(l, [&] { return stop_ || !lane.queue.empty(); });
      if (stop_) return;
      w = std::move(lane.queue.front());
      lane.queue.pop_front();
      --queued_;
      ++in_flight_;
    }
    Write(client, w);
    std::lock_guard<std::mutex> l(mu_);
    --in_flight_;
  }
}

}  // namespace arbiter::kubesched
