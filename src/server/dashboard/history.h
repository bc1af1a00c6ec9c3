// The daemon's bounded history for the dashboard: samples of the pool's utilisation and of each
// namespace's quota state (quota_state.h), kept in a ring of the newest `capacity` samples.
// Pure: the sampler (sampler.h) takes a sample when something changed (at most once a second)
// and at least every heartbeat; a sample equal to the previous one is kept only as a heartbeat.
//
// GET /ui/api/history (HistoryView) answers the samples as columns:
//   {capacity, heartbeatSeconds, times: [unix ms],
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

#include "server/cluster.h"
#include "server/dashboard/quota_state.h"
#include "server/dashboard/views.h"

namespace arbiter::server::dashboard {

struct PoolSample {
  ResourceList allocated;  // requests of running and terminating workloads
  ResourceList used;       // their arbiter.dev/usage (the virtual pods' use), else requests
  ResourceList capacity;   // schedulable nodes' allocatable
  std::map<std::string, int64_t> idle_gpu_milli;  // by GPU model ("" unknown): capacity - allocated
  bool operator==(const PoolSample& o) const = default;
};

struct Sample {
  Millis time = 0;  // Unix ms
  PoolSample pool;
  std::map<std::string, QuotaState> tenants;
};

// The cluster's state as a sample at `time`.
Sample TakeSample(const Cluster& c, Millis time);

class History {
 public:
  explicit History(size_t capacity = 2000, Millis heartbeat = 60000)
      : capacity_(capacity), heartbeat_(heartbeat) {}
  // Keeps `s` unless it equals the newest sample and is less than a heartbeat after it; drops
  // the oldest beyond capacity. Returns whether it was kept.
  bool Add(Sample s);
  const std::deque<Sample>& samples() const { return samples_; }
  size_t capacity() const { return capacity_; }
  Millis heartbeat() const { return heartbeat_; }

 private:
  size_t capacity_;
  Millis heartbeat_;
  std::deque<Sample> samples_;
};

// The history as columns for `v` (a tenant sees its own namespaces only; the pool's totals are
// everyone's), with the idle capacity's cost under the PriceBook in effect at `now` (the latest
// effectiveFrom not after it): idle GPU-hours between samples × the price of a GPU of that model
// (spec.gpuModels, else prices[nvidia.com/gpu]), idle held constant until the next sample and
// the newest until `now`.
Json HistoryView(const History& h, const std::vector<PriceBook>& price_books, const Viewer& v,
                 Millis now);

}  // namespace arbiter::server::dashboard
