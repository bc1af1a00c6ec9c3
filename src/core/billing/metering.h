// Dual-track metering: run segments -> hourly rows with a request track and a usage track.
//
// Raw quantities are exact integers: the resource's canonical unit × milliseconds
// (cpu: millicore·ms, memory: byte·ms, nvidia.com/gpu: milli-GPU·ms, MIG: instance·ms).
// MeterUnitOf() gives the metering unit and the divisor that turns raw into it.
//
// Request track: requests × the time the segment held them, [start, end), exact.
// Usage track: a Prometheus-style scrape every `scrape_interval`, at multiples of the interval on
// the absolute clock, of every running segment:
//   - cpu is a cumulative counter (usage × time since start); a piece between two consecutive
//     samples is billed by the counter increase; time before the first sample and after the last
//     one is not seen (like increase() without extrapolation);
//   - every other resource is a gauge; a sample's value is held until the next sample, at most
//     one interval, and never past the segment's end.
// Max track: per sample piece (interval) the larger of request and usage, summed.
// Provenance: samples, covered ms (time the usage track saw) and run ms, per hour.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/billing/exact.h"
#include "core/billing/run_segment.h"
#include "core/status.h"

namespace arbiter::billing {

inline constexpr Millis kHourMs = 3600000;

struct MeterUnit {
  std::string unit;  // "core-second", "GiB-second", "GPU-second", "instance-second", "unit-second"
  i128 divisor = 1;  // raw / divisor = quantity in `unit`
  bool counter = false;  // sampled as a cumulative counter (cpu) rather than a gauge
  bool gpu = false;      // nvidia.com/gpu or a MIG profile: Max mode bills the request
};
MeterUnit MeterUnitOf(std::string_view resource);
// The same for a row on a node whose GPUs are shared as N replicas (time-slicing / MPS):
// nvidia.com/gpu is then metered in "replica-second" (milli-replica·ms / 10^6).
MeterUnit MeterUnitOf(std::string_view resource, int64_t gpu_replicas);
// Resources that are never metered (pod counts).
bool IsMeteredResource(std::string_view resource);
// GPU shares whose usage no series gives: a time-sliced / MPS replica (DCGM cannot attribute a
// card's activity to one of the processes sharing it) and a MIG instance without a utilisation
// series. Live metering takes their usage track from the request track (docs/billing.md).
bool UsageFallsBackToRequest(std::string_view resource, int64_t gpu_replicas);

// Usage and Credit are hourly rows; IdleShare exists only as an invoice line (a tenant's share of
// the idle cost, PriceBook shareIdle).
enum class RowKind : uint8_t { kUsage = 0, kCredit = 1, kIdleShare = 2 };

// Pseudo-namespace of the pool's idle capacity: rows whose "workload" is a node and whose
// request track is the node's capacity nobody requested. Billed in Request mode, never usage.
inline constexpr std::string_view kIdleNamespace = "__idle__";
const char* ToString(RowKind k);

// One hourly aggregate. Key: (namespace, workload, resource, gpu_product, gpu_replicas, kind,
// preemptor, hour).
struct HourlyRow {
  std::string namespace_;
  std::string workload;
  std::string resource;
  std::string gpu_product;   // pricing key of nvidia.com/gpu and MIG rows; "" for other resources
  int64_t gpu_replicas = 1;  // nvidia.com/gpu rows on a time-sliced / MPS node: replicas per card
  RowKind kind = RowKind::kUsage;
  std::string preemptor;  // credit rows: who caused the lost work
  Millis hour = 0;        // start of the hour, Unix ms, a multiple of kHourMs
  i128 request_raw = 0;
  i128 usage_raw = 0;
  i128 max_raw = 0;  // Σ per sample interval of max(request, usage); >= request_raw
  int64_t samples = 0;
  Millis covered_ms = 0;  // time the usage track saw in this hour
  Millis run_ms = 0;      // time the segment(s) ran in this hour

  // Key order: namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour.
  static bool KeyLess(const HourlyRow& a, const HourlyRow& b);
  static bool SameKey(const HourlyRow& a, const HourlyRow& b);
  // Adds o's quantities (request, usage, max, samples, covered and run time) to this row's: two
  // rows of one key rolled up.
  void AddQuantities(const HourlyRow& o) {
    request_raw += o.request_raw;
    usage_raw += o.usage_raw;
    max_raw += o.max_raw;
    samples += o.samples;
    covered_ms += o.covered_ms;
    run_ms += o.run_ms;
  }
  bool operator==(const HourlyRow& o) const = default;
};

struct MeterConfig {
  Millis scrape_interval = 30000;       // must divide one hour evenly (15s, 30s, 60s ...)
  int64_t low_coverage_permille = 900;  // usage seen on less than 90% of the run: low coverage
};
Status ValidateMeterConfig(const MeterConfig& cfg);
Status ValidateSegment(const RunSegment& s);

// The instants the ledger accepts for a run segment (start, end, lost work): 1970-01-01 to
// 2100-01-01 (exclusive), UTC. Checked before metering: a segment from year 0 to 9999 would be
// 10^8 hours of rows.
inline constexpr Millis kSegmentTimeMin = 0;
inline constexpr Millis kSegmentTimeMax = 4102444800000;  // 2100-01-01T00:00:00Z
Status CheckSegmentWindow(const RunSegment& s);

// Folds the scrape samples of one series (one segment, one resource) into hourly rows.
// Samples must come in increasing time order inside [start, end). For a counter `value` is the
// cumulative raw quantity (canonical unit × ms since the segment started); for a gauge it is the
// amount in the canonical unit, or with `gauge_scale` > 1 in 1/gauge_scale of it (live metering
// reads a MIG instance's utilisation in thousandths): a gauge piece is then
// round_half_up(value × ms / gauge_scale), exact whenever the pieces are whole seconds and
// gauge_scale divides 1000. Finish() closes the series and appends the last row.
class SeriesFolder {
 public:
  SeriesFolder(const RunSegment& seg, std::string resource, std::vector<HourlyRow>* out,
               Millis scrape_interval, int64_t gauge_scale = 1);
  void Add(Millis t, i128 value);
  void Finish();
  // Finish for a run that goes on in another segment from seg.end (a live pod whose requests
  // changed): a counter's piece from the last sample to seg.end is billed by its increase up to
  // `counter_at_end`, the sample at seg.end that starts the next segment. Gauges: as Finish().
  void FinishContinued(i128 counter_at_end);
  // Finish for a series nothing measured (no Add): the usage track is the request track exactly,
  // covered = run, 0 samples (what Provenance::usage_from_request recognises). After an Add, as
  // Finish().
  void FinishUsageFromRequest();

 private:
  void Touch(Millis hour);
  void Flush();
  void AddRequest(Millis a, Millis b, bool as_usage = false);

  const RunSegment& seg_;
  std::string resource_;
  std::string product_;
  int64_t replicas_;
  std::vector<HourlyRow>* out_;
  Millis interval_;
  int64_t gauge_scale_;
  bool counter_;
  int64_t request_;
  Millis prev_t_;
  i128 prev_value_ = 0;
  bool have_prev_ = false;
  bool finished_ = false;
  // Current hour bucket.
  Millis hour_ = INT64_MIN;
  i128 req_ = 0, use_ = 0, extra_ = 0;
  int64_t samples_ = 0;
  Millis covered_ = 0, run_ = 0;
};

// Floor of t to its hour.
Millis HourOf(Millis t);

// The usage-track samples a scrape every `interval` sees for one resource of a segment, in order:
// (time, value) as SeriesFolder::Add takes them.
void ScrapeSamples(const RunSegment& seg, std::string_view resource, Millis interval,
                   std::vector<std::pair<Millis, i128>>* out);

// Meters one segment: hourly usage rows for each metered resource it requests or uses, and
// credit rows for its lost work (request, usage and max tracks of the lost time). Rows are
// appended unmerged.
void MeterSegment(const RunSegment& seg, const MeterConfig& cfg, std::vector<HourlyRow>* out);

// Sorts rows by key and merges rows with the same key (sums every quantity).
void Rollup(std::vector<HourlyRow>* rows);

// The most hourly rows MeterSegments makes for `segments` (one per metered resource and hour a
// segment or its lost work touches, before merging), computed without metering. Segments must be
// valid (ValidateSegment).
size_t RowBoundOf(const std::vector<RunSegment>& segments);

// Validates, meters every segment and rolls up. Errors name the segment.
// Appends the rolled-up rows of `segments` to `rows` (rolling up all of `rows`), reserving room
// for them and `extra` more rows first.
Status MeterSegmentsInto(const std::vector<RunSegment>& segments, const MeterConfig& cfg,
                         std::vector<HourlyRow>* rows, size_t extra = 0);
Result<std::vector<HourlyRow>> MeterSegments(const std::vector<RunSegment>& segments,
                                             const MeterConfig& cfg);

}  // namespace arbiter::billing
