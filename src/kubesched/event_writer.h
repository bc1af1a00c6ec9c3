// Carries out the event writes of EventRecorder (event_recorder.h) on threads of their own, with
// connections of their own to kube-apiserver, so that events never slow the scheduling loop (as
// client-go's broadcaster writes from its own goroutine). Several connections, a thread each (one
// HTTP/1.1 connection carries one call at a time, one round trip each: a first cycle's thousands
// of Scheduled events would trail its bindings by minutes over one); the writes of one Event (its
// create, then its series patches) always go over the same connection, in the order submitted, so
// a patch never overtakes its create. Bounded: at most `max_queued` writes wait in all; beyond
// that new ones are dropped and counted (events are best effort, as in Kubernetes). A write that
// fails is not retried (client-go retries up to 12 times; a series patch that fails is superseded
// by the next one); failures are logged, at most one line per minute.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kubeclient/api_client.h"
#include "adapters/kubeclient/kubeconfig_reader.h"
#include "kubesched/event_recorder.h"

namespace arbiter::kubesched {

class EventWriter {
 public:
  // `connections` connections (at least one), opened as their first write comes.
  EventWriter(kubeclient::KubeConfig kube, std::function<void(const std::string&)> log,
              int connections = 16, size_t max_queued = 10000,
              kubeclient::ClientOptions client_options = {});
  ~EventWriter();  // stops the threads; writes still queued are dropped
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void Submit(std::vector<EventWrite> writes);
  int64_t written() const { return written_.load(); }
  int64_t dropped() const { return dropped_.load(); }
  int64_t failed() const { return failed_.load(); }
  // Writes submitted and not yet answered (or dropped at stop).
  int64_t pending() const;

  // The connection that carries the writes of the Event named `name`, of `connections`.
  static size_t ConnectionOf(const std::string& name, size_t connections);

 private:
  struct Lane {
    std::deque<EventWrite> queue;  // under mu_
    std::condition_variable cv;
    std::thread thread;
  };
  void Run(Lane& lane);
  void Fail(const std::string& why);
  void Write(std::unique_ptr<kubeclient::ApiClient>& client, const EventWrite& w);

  kubeclient::KubeConfig kube_;
  std::function<void(const std::string&)> log_;
  size_t max_queued_;
  kubeclient::ClientOptions client_options_;
  mutable std::mutex mu_;
  size_t queued_ = 0;      // under mu_: in every lane's queue
  int64_t in_flight_ = 0;  // under mu_: taken from a queue, not yet answered
  bool stop_ = false;      // under mu_
  std::chrono::steady_clock::time_point last_said_{};  // under fail_mu_
  std::mutex fail_mu_;
  std::atomic<int64_t> written_{0}, dropped_{0}, failed_{0};
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace arbiter::kubesched
