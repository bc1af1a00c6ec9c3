// One hourly row from two sources: the request track from one (`arbiter scheduler`'s informers:
// the pods' exact bindings and terminations) and the usage track from another (Prometheus, as
// `arbiter meter` measures it), merged per ledger key (namespace, workload, resource,
// gpu_product, gpu_replicas, kind, preemptor, hour). Pure and deterministic: the same rows in, the
// same rows out, so that metering a window again writes nothing new.
//
// Per usage row (one batch of the usage source's rows at a time, each key in one batch):
//   - a workload the request source does not know (not Arbiter's pod): the row as the usage source
//     made it, both tracks its own;
//   - a request row of the same key: the request side (request_raw, run_ms) is the request row's,
//     the usage side (usage_raw, samples, covered_ms) the usage row's, covered_ms at most run_ms;
//     the max track is the request plus what the usage source measured above the requests it saw
//     (max_raw - request_raw of the usage row), at least the usage. A usage row that took its usage
//     from the request (a GPU share: no sample, covered time) keeps the request row's;
//   - no request row of that key, but the workload ran in that hour (another resource's row): the
//     usage with request 0 (the pod requested none of it; it is billed as `arbiter meter` bills
//     usage without a request);
//   - the workload did not run in that hour as the request source saw it: dropped (usage while it
//     was not running is not billed, as `arbiter meter` does with samples outside a run).
// A request row no usage row matched (the usage source had no series for it) gets the usage the
// meter gives a run without usage samples: 0, nothing covered (the invoice's provenance says
// `low`; Max mode bills the request, Usage mode nothing), except where the meter takes the usage
// from the request (UsageFallsBackToRequest: a time-sliced / MPS GPU replica, a MIG instance):
// usage = request, the invoice says `usage=request`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/billing/metering.h"

namespace arbiter::billing {

// Where a merged row's usage track came from (its request track is the request source's).
enum class UsageSource : uint8_t {
  kUsageSource = 0,  // measured by the usage source: "request=informers usage=prometheus"
  kNone = 1,         // the usage source had no series: 0 ("usage=none")
  kRequest = 2,      // usage = request, nothing measures it ("usage=request")
};
const char* ToString(UsageSource u);  // "prometheus", "none", "request"

// The sources of one merged row, for the ledger's table meter_tracks: keyed by the row's
// namespace, workload, resource, kind and hour (a Credit row and the Usage row of the same
// workload, resource and hour have a note each).
struct TrackNote {
  std::string namespace_, workload, resource;
  Millis hour = 0;
  UsageSource usage = UsageSource::kUsageSource;
  RowKind kind = RowKind::kUsage;
  // "request=informers usage=prometheus"
  std::string Text() const;
  bool operator==(const TrackNote&) const = default;
};

// The request source's view of a window: its rows (usage = request, as MeterSegments makes them
// for usage_from_request segments) and every workload it knows, running or not.
struct RequestTrack {
  std::vector<HourlyRow> rows;
  std::vector<std::string> workloads;
};

struct TrackMergeStats {
  int64_t merged = 0;      // rows with both sources (or usage with request 0)
  int64_t usage_none = 0;  // request rows the usage source had nothing for
  int64_t from_other = 0;  // usage rows of workloads the request source does not know
  int64_t dropped = 0;     // usage rows in hours the workload did not run: not billed
  bool operator==(const TrackMergeStats&) const = default;
};

class TrackMerger {
 public:
  explicit TrackMerger(RequestTrack track);
  // One batch of the usage source's rows: appends the rows to write to `rows` and the sources of
  // the merged ones to `notes` (rows of workloads the request source does not know get none).
  void Merge(std::vector<HourlyRow> usage, std::vector<HourlyRow>* rows,
             std::vector<TrackNote>* notes);
  // After the last batch: the request rows no usage row matched, with the usage the meter gives a
  // run without samples.
  void Finish(std::vector<HourlyRow>* rows, std::vector<TrackNote>* notes);
  const TrackMergeStats& stats() const { return stats_; }

 private:
  std::vector<HourlyRow> requests_;  // sorted by HourlyRow::KeyLess, one per key
  std::vector<uint8_t> matched_;
  std::vector<std::string> workloads_;                     // sorted, unique
  std::map<std::pair<std::string, Millis>, Millis> runs_;  // (workload, hour) -> longest run_ms
  TrackMergeStats stats_;
};

// All batches at once: Merge(usage) then Finish, the rows sorted by key and the notes likewise.
struct MergedTracks {
  std::vector<HourlyRow> rows;
  std::vector<TrackNote> notes;
  TrackMergeStats stats;
};
MergedTracks MergeTracks(RequestTrack track, std::vector<HourlyRow> usage);

}  // namespace arbiter::billing
