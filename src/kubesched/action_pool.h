// The API calls of one scheduling cycle, made over several connections at once. One HTTP/1.1
// connection carries one call at a time: the cycle's bindings in a row wait one round trip each
// (kube-apiserver writes each to etcd before it answers), while kube-scheduler binds each pod in
// a goroutine of its own. The calls of a cycle concern distinct pods, so their order does not
// matter; the answers are handed back in the cycle's order (the Controller is not thread-safe:
// its Done runs on the caller's thread).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "adapters/kubeclient/api_client.h"
#include "kubesched/controller.h"

namespace arbiter::kubesched {

class ActionPool {
 public:
  using Exec = std::function<ActionResult(kubeclient::ApiClient&, const Action&)>;
  // `connections` clients of the same kubeconfig (at least one).
  static Result<std::unique_ptr<ActionPool>> Connect(const kubeclient::KubeConfig& kube,
                                                     const kubeclient::ClientOptions& options,
                                                     int connections);
  // Makes the calls, at most one per connection at a time, none once `may_act` says false
  // (checked before each call). results[i] is set for each call made.
  std::vector<std::optional<ActionResult>> Run(const std::vector<Action>& actions, const Exec& exec,
                                               const std::function<bool()>& may_act);

 private:
  std::vector<std::unique_ptr<kubeclient::ApiClient>> clients_;
};

}  // namespace arbiter::kubesched
