// Informers: each keeps one kind of object of a real kube-apiserver in view, in a thread of its
// own: a paginated list (limit 500; the first from the server's watch cache, resourceVersion=0,
// as client-go's reflector, falling back to etcd on 410 or "Too large resource version"; relists
// from etcd), then a watch from the list's resourceVersion with bookmarks.
// A watch the server ends (timeoutSeconds) or that is cut is reopened from the last
// resourceVersion seen (backoff 0.2 s doubling to 5 s on failures); a 410 Gone (the version is
// too old: compacted) or a stream that fails to decode lists again. Every list is delivered whole
// (Delta::kSynced: the objects now, replacing what was known), every watch event as it comes.
// A kind the server does not serve (404: a CRD not installed) is delivered as an empty list and
// retried every 10 s.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kubeclient/api_client.h"
#include "adapters/kubeclient/watch_decoder.h"

namespace arbiter::kubeclient {

struct ResourceSpec {
  std::string kind;         // "Pod"
  std::string api_path;     // "/api/v1/pods", "/apis/arbiter.dev/v1alpha1/elasticquotas"
  std::string api_version;  // "v1", given to objects that arrive without one
};

struct Delta {
  enum class Op { kSynced, kUpsert, kDelete };
  size_t resource = 0;  // index in the informers' resource list
  Op op = Op::kUpsert;
  Json object;              // kUpsert, kDelete
  std::vector<Json> items;  // kSynced
};

// Many producers (the informers), one consumer.
class DeltaQueue {
 public:
  void Push(Delta d);
  // Waits up to `wait` for something, then takes everything queued.
  std::vector<Delta> TakeAll(Millis wait);
  void Wake();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delta> q_;
  bool woken_ = false;
};

struct InformerOptions {
  int watch_timeout_seconds = 300;  // the server ends each watch after this long
  std::function<void(const std::string&)> log;
};

class Informer {
 public:
  Informer(ResourceSpec spec, size_t index, KubeConfig config, DeltaQueue* out,
           InformerOptions options);
  ~Informer();  // stops and joins
  void Start();
  void Stop();
  // Counters for tests and logs.
  int64_t lists() const { return lists_.load(); }
  int64_t watches() const { return watches_.load(); }

 private:
  void Run();
  // Lists every page; true when delivered. Sets rv_.
  bool List(ApiClient& c);
  // Lists every page, the first at resourceVersion `version` ("": from etcd); true when
  // delivered. Sets quorum_ when the server cannot serve that version.
  bool ListPages(ApiClient& c, const std::string& version);
  // Watches from rv_ until the stream ends; returns whether a relist is needed.
  enum class WatchEnd { kReopen, kRelist, kFailed };
  WatchEnd Watch(ApiClient& c);
  void Log(const std::string& m) const;
  bool Sleep(Millis ms);

  ResourceSpec spec_;
  size_t index_;
  KubeConfig config_;
  DeltaQueue* out_;
  InformerOptions options_;
  std::string rv_;
  bool not_served_ = false;  // the last list was a 404 (said in the log once)
  bool quorum_ = false;      // the server could not serve a list from its cache: from etcd since
  std::atomic<bool> stop_{false};  // set under client_mu_ (Stop), read anywhere
  std::atomic<int64_t> lists_{0}, watches_{0};
  std::mutex client_mu_;
  // The client of the open watch (Stop cuts it): published only while !stop_, both under
  // client_mu_, and unpublished before the client is destroyed.
  ApiClient* active_ = nullptr;
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  std::thread thread_;
};

}  // namespace arbiter::kubeclient
