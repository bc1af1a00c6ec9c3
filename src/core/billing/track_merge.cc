#include "core/billing/track_merge.h"

#include <algorithm>
#include <tuple>

namespace arbiter::billing {

const char* ToString(UsageSource u) {
  switch (u) {
    case UsageSource::kUsageSource:
      return "prometheus";
    case UsageSource::kNone:
      return "none";
    case UsageSource::kRequest:
      return "request";
  }
  return "?";
}

std::string TrackNote::Text() const {
  return std::string("request=informers usage=") + ToString(usage);
}

namespace {

TrackNote NoteOf(const HourlyRow& r, UsageSource u) {
  return {r.namespace_, r.workload, r.resource, r.hour, u, r.kind};
}

// The usage side of `u` on the request side of `req` (request_raw, run_ms): see track_merge.h.
HourlyRow Combine(const HourlyRow& req, const HourlyRow& u, UsageSource* source) {
  HourlyRow out = req;
  if (u.samples == 0 && u.covered_ms > 0) {  // the usage source took it from the request
    out.usage_raw = req.request_raw;
    out.max_raw = req.request_raw;
    out.samples = 0;
    out.covered_ms = req.run_ms;
    *source = UsageSource::kRequest;
    return out;
  }
  out.usage_raw = u.usage_raw;
  out.samples = u.samples;
  out.covered_ms = std::min(u.covered_ms, req.run_ms);
  out.max_raw = std::max(req.request_raw + (u.max_raw - u.request_raw), u.usage_raw);
  out.max_raw = std::max(out.max_raw, out.request_raw);
  *source = u.samples == 0 ? UsageSource::kNone : UsageSource::kUsageSource;
  return out;
}

bool MergeKeyLess(const HourlyRow& a, const HourlyRow& b) { return HourlyRow::KeyLess(a, b); }

}  // namespace

TrackMerger::TrackMerger(RequestTrack track)
    : requests_(std::move(track.rows)), workloads_(std::move(track.workloads)) {
  Rollup(&requests_);  // sorted by key, one row per key
  matched_.assign(requests_.size(), 0);
  for (const HourlyRow& r : requests_) {
    Millis& run = runs_[{r.workload, r.hour}];
    run = std::max(run, r.run_ms);
  }
  std::sort(workloads_.begin(), workloads_.end());
  workloads_.erase(std::unique(workloads_.begin(), workloads_.end()), workloads_.end());
}

void TrackMerger::Merge(std::vector<HourlyRow> usage, std::vector<HourlyRow>* rows,
                        std::vector<TrackNote>* notes) {
  std::sort(usage.begin(), usage.end(), MergeKeyLess);
  for (HourlyRow& u : usage) {
    if (!std::binary_search(workloads_.begin(), workloads_.end(), u.workload)) {
      ++stats_.from_other;
      rows->push_back(std::move(u));
      continue;
    }
    auto it = std::lower_bound(requests_.begin(), requests_.end(), u, MergeKeyLess);
    UsageSource source = UsageSource::kUsageSource;
    if (it != requests_.end() && HourlyRow::SameKey(*it, u)) {
      matched_[static_cast<size_t>(it - requests_.begin())] = 1;
      rows->push_back(Combine(*it, u, &source));
      notes->push_back(NoteOf(rows->back(), source));
      if (source == UsageSource::kNone)
        ++stats_.usage_none;
      else
        ++stats_.merged;
      continue;
    }
    // Another resource of the workload in that hour: it ran; this one it did not request.
    auto ran = runs_.find({u.workload, u.hour});
    if (ran == runs_.end() || (u.samples == 0 && u.covered_ms > 0)) {
      ++stats_.dropped;  // not running then, or nothing requested and nothing measured
      continue;
    }
    HourlyRow req = u;
    req.request_raw = 0;
    req.run_ms = ran->second;
    rows->push_back(Combine(req, u, &source));
    notes->push_back(NoteOf(rows->back(), source));
    ++stats_.merged;
  }
}

void TrackMerger::Finish(std::vector<HourlyRow>* rows, std::vector<TrackNote>* notes) {
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (matched_[i]) continue;
    matched_[i] = 1;
    HourlyRow r = requests_[i];
    if (r.kind != RowKind::kUsage || UsageFallsBackToRequest(r.resource, r.gpu_replicas)) {
      notes->push_back(NoteOf(r, UsageSource::kRequest));
    } else {
      r.usage_raw = 0;
      r.samples = 0;
      r.covered_ms = 0;
      r.max_raw = r.request_raw;
      notes->push_back(NoteOf(r, UsageSource::kNone));
      ++stats_.usage_none;
    }
    rows->push_back(std::move(r));
  }
}

MergedTracks MergeTracks(RequestTrack track, std::vector<HourlyRow> usage) {
  MergedTracks out;
  TrackMerger m(std::move(track));
  m.Merge(std::move(usage), &out.rows, &out.notes);
  m.Finish(&out.rows, &out.notes);
  std::sort(out.rows.begin(), out.rows.end(), MergeKeyLess);
  std::sort(out.notes.begin(), out.notes.end(), [](const TrackNote& a, const TrackNote& b) {
    return std::tie(a.namespace_, a.workload, a.resource, a.kind, a.hour) <
           std::tie(b.namespace_, b.workload, b.resource, b.kind, b.hour);
  });
  out.stats = m.stats();
  return out;
}

}  // namespace arbiter::billing
