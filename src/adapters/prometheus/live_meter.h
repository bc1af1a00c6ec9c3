// Live metering: Prometheus series (kube-state-metrics, cAdvisor, dcgm-exporter; see
// docs/metering-live.md) -> run segments and usage samples on the scrape grid -> SeriesFolder ->
// hourly rows with provenance, handed to a sink one page at a time.
//
// MeterPrometheus is the library function behind `arbiter meter` (and the hourly job of a
// daemon): it reads [from - L, to + L) page by page (L = requestGapBridge + scrapeInterval, so
// that pods already running at `from` have their state and the last hour's pieces are complete)
// and hands the sink only rows of hours in [from, to), each key exactly once, as soon as no later
// sample can change it. Metering [a, b) then [b, c) gives the rows of metering [a, c).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "adapters/prometheus/metering_config.h"
#include "adapters/prometheus/prometheus_client.h"
#include "core/billing/metering.h"

namespace arbiter::prometheus {

// What the hourly rows cannot say, per (namespace, workload, resource, hour).
struct MeterProvenance {
  std::string namespace_, workload, resource;
  Millis hour = 0;
  int64_t usage_gaps = 0;       // grid points of a run without a usage sample of this resource
  int64_t request_gaps = 0;     // grid points inside a run bridged over a kube-state-metrics hole
  int64_t counter_resets = 0;   // counter decreases (container restarts) of this resource
  int64_t outside_samples = 0;  // usage samples while the pod was not running: not billed
  // Grid points at which a series of this resource came in more than one copy (two
  // kube-state-metrics replicas, cAdvisor scraped by two jobs): counted once, as one series.
  int64_t duplicate_points = 0;
  bool operator==(const MeterProvenance&) const = default;
};

struct MeterBatch {
  std::vector<billing::HourlyRow> rows;     // rolled up, unique keys, hours in [from, to)
  std::vector<MeterProvenance> provenance;  // sorted by key
};

struct MeterStats {
  int64_t pages = 0, requests = 0, pods = 0, segments = 0, rows = 0, samples = 0;
  int64_t usage_gaps = 0, request_gaps = 0, counter_resets = 0, outside_samples = 0,
          invalid_values = 0, duplicate_points = 0;
};

using BatchSink = std::function<Status(MeterBatch&& batch)>;
using Progress = std::function<void(const std::string& line)>;

// from and to must be whole hours (Unix ms), from < to.
Result<MeterStats> MeterPrometheus(Client& client, const MeteringConfig& cfg, Millis from,
                                   Millis to, const BatchSink& sink, const Progress& progress = {});

// Whether any pod shows Running (podPhase, with the selector) at any sample of the range that
// MeterPrometheus reads for [from, to): when none does, metering it writes no rows. One instant
// query (max_over_time over the range); the meter job skips empty windows with it when catching up.
Result<bool> AnyPodRunning(Client& client, const MeteringConfig& cfg, Millis from, Millis to);

// The PromQL queries one page runs, by name (phase, info, requests, nodes, cpu, memory, gpu,
// dups).
std::vector<std::pair<std::string, std::string>> MeterQueries(const MeteringConfig& cfg);

}  // namespace arbiter::prometheus
