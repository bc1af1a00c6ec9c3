// The daemon's bounded history for the dashboard: samples of the pool's utilisation and of each
// namespace's quota state (quota_state.h), kept in a ring of the newest `capacity` samples.
// Pure: the sampler (sampler.h) takes a sample when something changed (at most once a second)
// and at least every heartbeat; a sample equal to the previous one is kept only as a heartbeat.
//
// GET /ui/api/history (HistoryView) answers the samples as columns:
//   {capacity, heartbeatSeconds, seq, full, times: [unix ms],
//    pool: {allocated: {resource: [..]}, used: {..}, capacity: {..}},
//    idle: {priceBook, currency, gpuHours, cost, nowGpus, nowCostPerHour,
//           byModel: [{model, pricePerGpuHour, gpuHours, cost, nowGpus}]} | {priceBook: null, why},
//    tenants: {namespace: {quota, cohort, used|min|max|borrowed|lent: {resource: [..]},
//              fairShare: ["0.25", ..]}}}
// Amounts in canonical units (core/resources.h: milli-CPU, bytes, milli-GPU, counts); money
// exact (Decimal). Pool resources: cpu, memory, nvidia.com/gpu and MIG profiles.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <string>

#include "server/dashboard/quota_state.h"
#include "server/dashboard/views.h"
#include "server/metrics/live_facts.h"
#include "server/state/cluster.h"

namespace arbiter::server::dashboard {

struct PoolSample {
  ResourceList allocated;  // requests of running and terminating workloads
  ResourceList used;       // their arbiter.dev/usage (the virtual pods' use), else requests
  ResourceList capacity;   // schedulable nodes' allocatable
  std::map<std::string, int64_t> idle_gpu_milli;  // by GPU model ("" unknown): capacity - allocated
  bool operator==(const PoolSample& o) const = default;
};

struct Sample {
  int64_t seq = 0;  // given by History::Add: 1, 2, ... (continued after a restore)
  Millis time = 0;  // Unix ms
  PoolSample pool;
  std::map<std::string, QuotaState> tenants;
};

// What a sample reads of the cluster, under the daemon's lock without a walk of the live
// workloads (the facts /metrics reads, live_facts.h): the live workloads' table shared as it is
// (O(live / 256) pointers), the nodes' totals (Engine::NodeTotals, O(nodes)) and the
// ElasticQuotas' state (O(quotas)). Nothing in it points into the cluster.
struct SampleFacts {
  Millis time = 0;
  LiveFacts::View live;
  std::vector<engine::NodeStatus> nodes;     // without their workloads
  std::map<std::string, QuotaState> quotas;  // ElasticQuotaStates: `used` from `live`
};
SampleFacts CollectSample(const Cluster& c, Millis time);  // under the lock
// The sample those facts make (after the lock is released): the pool's use and each namespace's
// running requests summed from the live rows (as Engine::namespace_usages sums them), the MIG
// slices by node.
Sample MakeSample(const SampleFacts& f);
// The cluster's state as a sample at `time`: both at once.
Sample TakeSample(const Cluster& c, Millis time);

class History {
 public:
  explicit History(size_t capacity = 2000, Millis heartbeat = 60000)
      : capacity_(capacity), heartbeat_(heartbeat) {}
  // Keeps `s` unless it equals the newest sample and is less than a heartbeat after it, giving
  // it the next sequence number; drops the oldest beyond capacity. Returns whether it was kept.
  bool Add(Sample s);
  // Puts back a sample kept before (a restore, oldest first): its seq and time as they were;
  // ignored unless both are after the newest's. Drops the oldest beyond capacity.
  void Restore(Sample s);
  // The newest sample's seq (0 when empty).
  int64_t last_seq() const { return samples_.empty() ? 0 : samples_.back().seq; }
  const std::deque<Sample>& samples() const { return samples_; }
  size_t capacity() const { return capacity_; }
  Millis heartbeat() const { return heartbeat_; }

 private:
  size_t capacity_;
  Millis heartbeat_;
  int64_t next_seq_ = 1;
  std::deque<Sample> samples_;
};

// The history as columns for `v` (a tenant sees its own namespaces only; the pool's totals are
// everyone's), with the idle capacity's cost under the PriceBook in effect at `now` (the latest
// effectiveFrom not after it): idle GPU-hours between samples × the price of a GPU of that model
// (spec.gpuModels, else prices[nvidia.com/gpu]), idle held constant until the next sample and
// the newest until `now`.
// `since` > 0 (GET /ui/api/history?since=SEQ): only the samples after seq `since` ("full":
// false, to append to what the caller has), unless the ring no longer holds every sample after
// it or has none as new as it (a restart on a new data directory): then all ("full": true, to
// replace it). "seq" is the newest sample's seq: the `since` to ask next. The idle cost is always
// over the whole ring.
Json HistoryView(const History& h, const std::vector<PriceBook>& price_books, const Viewer& v,
                 Millis now, int64_t since = 0);

}  // namespace arbiter::server::dashboard
