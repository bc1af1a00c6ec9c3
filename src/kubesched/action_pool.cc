#include "kubesched/action_pool.h"

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
  for (auto& c : p->clients_) p->threads_.emplace_back([p = p.get(), c = c.get()] { p->Work(*c); });
  return p;
}

ActionPool::~ActionPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ActionPool::Begin(Exec exec, std::function<bool()> may_act) {
  std::lock_guard<std::mutex> l(mu_);
  exec_ = std::move(exec);
  may_act_ = std::move(may_act);
  batch_.clear();
  answered_.clear();
  next_ = done_ = 0;
}

void ActionPool::Add(Action a) {
  {
    std::lock_guard<std::mutex> l(mu_);
    batch_.emplace_back(std::move(a), std::nullopt);
  }
  work_cv_.notify_one();
}

std::vector<std::pair<Action, std::optional<ActionResult>>> ActionPool::Finish() {
  std::unique_lock<std::mutex> l(mu_);
  done_cv_.wait(l, [&] { return done_ == batch_.size(); });
  auto out = std::move(batch_);
  batch_.clear();
  answered_.clear();
  next_ = done_ = 0;
  return out;
}

void ActionPool::Finish(const Each& each) {
  std::unique_lock<std::mutex> l(mu_);
  size_t handed = 0;
  while (true) {
    done_cv_.wait(l, [&] { return !answered_.empty() || handed == batch_.size(); });
    if (answered_.empty()) break;  // every call handed over
    std::vector<size_t> now;
    now.swap(answered_);
    // Add is over (the cycle has returned): batch_ does not grow, its entries stay in place.
    l.unlock();
    for (size_t i : now) each(batch_[i].first, batch_[i].second);
    l.lock();
    handed += now.size();
  }
  batch_.clear();
  next_ = done_ = 0;
}

// exec_ and may_act_ are set by Begin, before the batch's first Add, and not changed until
// Finish has seen every call done: read here without the lock.
void ActionPool::Work(kubeclient::ApiClient& c) {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    work_cv_.wait(l, [&] { return stop_ || next_ < batch_.size(); });
    if (next_ >= batch_.size()) return;  // stopping, nothing left
    const size_t i = next_++;
    const Action a = batch_[i].first;  // a copy: Add may grow the batch meanwhile
    l.unlock();
    std::optional<ActionResult> r;
    if (may_act_()) r = exec_(c, a);
    l.lock();
    batch_[i].second = std::move(r);
    answered_.push_back(i);
    ++done_;
    done_cv_.notify_all();
  }
}

}  // namespace arbiter::kubesched
