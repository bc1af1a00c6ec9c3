#include "server/dashboard/sampler.h"

#include <algorithm>
#include <chrono>
#include <optional>

namespace arbiter::server::dashboard {

namespace {
constexpr size_t kBatchSamples = 20;
constexpr auto kBatchWait = std::chrono::seconds(10);
}  // namespace

HistorySampler::HistorySampler(Daemon& d, History history, std::function<Millis()> clock,
                               std::string store_dir,
                               const std::function<void(const std::string&)>& warn)
    : d_(d),
      clock_(std::move(clock)),
      history_(std::move(history)),
      store_dir_(std::move(store_dir)),
      last_write_(std::chrono::steady_clock::now()) {
  if (!clock_)
    clock_ = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  if (!store_dir_.empty()) {
    auto store = HistoryStore::Open(store_dir_, history_.capacity());
    if (store.ok() && warn)
      for (const std::string& w : (*store)->warnings()) warn(w);
    // A link planted as history.db, its -wal or -shm (refused: FailedPrecondition) is logged too.
    if (!store.ok() && store.status().code() == StatusCode::kFailedPrecondition && warn)
      warn(store.message());
    auto samples = store.ok() ? (*store)->Load() : Result<std::vector<Sample>>(store.status());
    if (samples.ok()) {
      store_ = std::move(store).value();
      for (Sample& s : samples.value()) history_.Restore(std::move(s));
      restored_ = history_.samples().size();
    } else {
      store_error_ = samples.message();  // the history stays in memory only
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

HistorySampler::~HistorySampler() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  MaybeWrite(true);
}

Json HistorySampler::StoreState() const {
  if (store_dir_.empty()) return nullptr;
  std::lock_guard<std::mutex> l(mu_);
  return {{"path", store_dir_ + "/history.db"},
          {"restored", restored_},
          {"error", store_error_.empty() ? Json(nullptr) : Json(store_error_)}};
}

void HistorySampler::MaybeWrite(bool now) {
  if (!store_ || pending_.empty()) return;
  if (!now && pending_.size() < kBatchSamples &&
      std::chrono::steady_clock::now() - last_write_ < kBatchWait)
    return;
  const Status st = store_->Write(pending_);
  last_write_ = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> l(mu_);
  if (st.ok()) {
    pending_.clear();
    store_error_.clear();
  } else {
    store_error_ = st.message();  // kept pending: tried again with the next batch
    if (pending_.size() > history_.capacity())
      pending_.erase(pending_.begin(), pending_.end() - history_.capacity());
  }
}

void HistorySampler::Loop() {
  using namespace std::chrono_literals;
  int64_t seen = -1;  // the newest change sampled (-1: none yet)
  Millis last_sample = 0;
  // The pause after a sample: a second, or 20 times the sample's own time when that is longer
  // (MakeSample walks every live workload, off the daemon's lock: at a million pods the sampler
  // then takes at most about 5% of a core).
  std::chrono::steady_clock::duration pause = 1s;
  for (;;) {
    const int64_t rv = d_.watch_log().last_rv();
    const Millis now = clock_();
    if (rv != seen || now - last_sample >= history_.heartbeat()) {
      const auto t0 = std::chrono::steady_clock::now();
      // Under the lock only the facts' table shared, the nodes' totals and the quotas; the sums
      // over the live workloads once it is released.
      std::optional<Sample> s;
      try {
        s = MakeSample(d_.Read([&](const Cluster& c) { return CollectSample(c, now); }));
      } catch (const ReadTimeout&) {  // a stuck journal: no sample this time, tried again
      }
      pause = std::max<std::chrono::steady_clock::duration>(
          1s, 20 * (std::chrono::steady_clock::now() - t0));
      if (s) {
        std::lock_guard<std::mutex> l(mu_);
        if (history_.Add(std::move(*s)) && store_) pending_.push_back(history_.samples().back());
        seen = rv;
        last_sample = now;
      }
    }
    MaybeWrite(false);
    {
      // At most one sample a second (or per `pause`).
      std::unique_lock<std::mutex> l(mu_);
      if (cv_.wait_for(l, pause, [this] { return stop_; })) return;
    }
    // Then wait for a change (or a second, to notice the heartbeat and a stop).
    if (!d_.watch_log().closed()) {
      int64_t after = d_.watch_log().last_rv();
      if (after == seen) d_.watch_log().Since(after, "", "", std::chrono::steady_clock::now() + 1s);
    }
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
  }
}

}  // namespace arbiter::server::dashboard
