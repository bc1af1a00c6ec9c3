// Carries out the event writes of EventRecorder (event_recorder.h) on a thread of its own, with
// its own connection to kube-apiserver, so that events never slow the scheduling loop (as
// client-go's broadcaster writes from its own goroutine). Bounded: at most `max_queued` writes
// wait; beyond that new ones are dropped and counted (events are best effort, as in Kubernetes).
// A write that fails is not retried (client-go retries up to 12 times; a series patch that fails
// is superseded by the next one); failures are logged, at most one line per minute.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kubeclient/kubeconfig_reader.h"
#include "kubesched/event_recorder.h"

namespace arbiter::kubesched {

class EventWriter {
 public:
  EventWriter(kubeclient::KubeConfig kube, std::function<void(const std::string&)> log,
              size_t max_queued = 10000);
  ~EventWriter();  // stops the thread; writes still queued are dropped
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void Submit(std::vector<EventWrite> writes);
  int64_t written() const { return written_.load(); }
  int64_t dropped() const { return dropped_.load(); }
  int64_t failed() const { return failed_.load(); }

 private:
  void Run();

  kubeclient::KubeConfig kube_;
  std::function<void(const std::string&)> log_;
  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventWrite> queue_;
  bool stop_ = false;
  std::atomic<int64_t> written_{0}, dropped_{0}, failed_{0};
  std::thread thread_;
};

}  // namespace arbiter::kubesched
