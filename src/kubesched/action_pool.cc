#include "kubesched/action_pool.h"

#include <atomic>
#include <thread>

namespace arbiter::kubesched {

Result<std::unique_ptr<ActionPool>> ActionPool::Connect(const kubeclient::KubeConfig& kube,
                                                        const kubeclient::ClientOptions& options,
                                                        int connections) {
  std::unique_ptr<ActionPool> p(new ActionPool());
  for (int i = 0; i < std::max(1, connections); ++i) {
    auto c = kubeclient::ApiClient::Connect(kube, options);
    if (!c.ok()) return c.status();
    p->clients_.push_back(std::move(c).value());
  }
  return p;
}

std::vector<std::optional<ActionResult>> ActionPool::Run(const std::vector<Action>& actions,
                                                         const Exec& exec,
                                                         const std::function<bool()>& may_act) {
  std::vector<std::optional<ActionResult>> results(actions.size());
  std::atomic<size_t> next{0};
  auto work = [&](kubeclient::ApiClient& c) {
    for (size_t i = next++; i < actions.size(); i = next++) {
      if (!may_act()) return;
      results[i] = exec(c, actions[i]);
    }
  };
  const size_t n = std::min(clients_.size(), actions.size());
  std::vector<std::thread> threads;
  for (size_t k = 1; k < n; ++k) threads.emplace_back(work, std::ref(*clients_[k]));
  if (n > 0) work(*clients_[0]);
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace arbiter::kubesched
