// The API calls of the scheduling cycles, made over several connections at once. One HTTP/1.1
// connection carries one call at a time: the cycle's bindings in a row wait one round trip each
// (kube-apiserver writes each to etcd before it answers), while kube-scheduler binds each pod in
// a goroutine of its own. The calls of a cycle concern distinct pods, so their order does not
// matter. A cycle's calls are one batch: handed in as they are decided (Add: the bindings as the
// engine places the pods, while the cycle goes on), made at once by the connections' threads,
// and handed back with their answers by Finish, on the caller's thread (the Controller is not
// thread-safe: its Done runs there), before the next cycle decides anything: a pod never has two
// calls in flight.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/kubeclient/api_client.h"
#include "kubesched/controller.h"

namespace arbiter::kubesched {

class ActionPool {
 public:
  using Exec = std::function<ActionResult(kubeclient::ApiClient&, const Action&)>;
  // `connections` clients of the same kubeconfig (at least one), a thread each.
  static Result<std::unique_ptr<ActionPool>> Connect(const kubeclient::KubeConfig& kube,
                                                     const kubeclient::ClientOptions& options,
                                                     int connections);
  ~ActionPool();  // the calls in flight end, then the threads

  // A batch starts: each call made with `exec`, none once `may_act` says false (checked before
  // each call, on the connection's thread).
  void Begin(Exec exec, std::function<bool()> may_act);
  // A call of the batch, started at once on a free connection (at most one call per connection
  // at a time; in the order added).
  void Add(Action a);
  // Waits for every call added; each with its answer (none for a call not made), in the order
  // added. The batch is over.
  std::vector<std::pair<Action, std::optional<ActionResult>>> Finish();
  // The same, each call handed to `each` on the caller's thread as soon as it is answered (in
  // the order answered), so that what follows a call (its Done, its event) does not wait for the
  // whole batch: a first cycle binds thousands of pods in one batch.
  using Each = std::function<void(const Action&, const std::optional<ActionResult>&)>;
  void Finish(const Each& each);

 private:
  ActionPool() = default;
  void Work(kubeclient::ApiClient& c);

  std::vector<std::unique_ptr<kubeclient::ApiClient>> clients_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  Exec exec_;
  std::function<bool()> may_act_;
  std::vector<std::pair<Action, std::optional<ActionResult>>> batch_;  // under mu_
  size_t next_ = 0, done_ = 0;                                         // under mu_
  std::vector<size_t> answered_;  // under mu_: calls answered, not yet handed to Finish's `each`
  bool stop_ = false;             // under mu_
};

}  // namespace arbiter::kubesched
