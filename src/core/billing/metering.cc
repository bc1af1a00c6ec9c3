#include "core/billing/metering.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>

#include "core/gpu_sharing.h"

namespace arbiter::billing {

MeterUnit MeterUnitOf(std::string_view resource) {
  if (resource == kGpuSharedResource) return {"replica-second", 1000, false, true};
  auto info = ClassifyResource(resource);
  if (!info.ok()) return {"unit-second", 1000, false, false};
  switch (info->kind) {
    case ResourceKind::kCpu:
      return {"core-second", 1000000, true, false};
    case ResourceKind::kMemory:
    case ResourceKind::kStorage:
    case ResourceKind::kHugePages:
      return {"GiB-second", (static_cast<i128>(1) << 30) * 1000, false, false};
    case ResourceKind::kGpu:
      return {"GPU-second", 1000000, false, true};
    case ResourceKind::kMig:
      return {"instance-second", 1000, false, true};
    default:
      return {"unit-second", 1000, false, false};
  }
}

MeterUnit MeterUnitOf(std::string_view resource, int64_t gpu_replicas) {
  if (gpu_replicas > 1 && resource == kGpu) return {"replica-second", 1000000, false, true};
  return MeterUnitOf(resource);
}

bool IsMeteredResource(std::string_view resource) { return resource != kPods; }

bool UsageFallsBackToRequest(std::string_view resource, int64_t gpu_replicas) {
  return (resource == kGpu && gpu_replicas > 1) || resource == kGpuSharedResource ||
         IsMigResourceName(resource);
}

const char* ToString(RowKind k) {
  switch (k) {
    case RowKind::kUsage:
      return "Usage";
    case RowKind::kCredit:
      return "Credit";
    case RowKind::kIdleShare:
      return "IdleShare";
  }
  return "?";
}

bool HourlyRow::KeyLess(const HourlyRow& a, const HourlyRow& b) {
  return std::tie(a.namespace_, a.workload, a.resource, a.gpu_product, a.gpu_replicas, a.kind,
                  a.preemptor, a.hour) < std::tie(b.namespace_, b.workload, b.resource,
                                                  b.gpu_product, b.gpu_replicas, b.kind,
                                                  b.preemptor, b.hour);
}
bool HourlyRow::SameKey(const HourlyRow& a, const HourlyRow& b) {
  return a.hour == b.hour && a.kind == b.kind && a.resource == b.resource &&
         a.workload == b.workload && a.namespace_ == b.namespace_ &&
         a.gpu_product == b.gpu_product && a.gpu_replicas == b.gpu_replicas &&
         a.preemptor == b.preemptor;
}

Millis HourOf(Millis t) {
  Millis h = t / kHourMs;
  if (t % kHourMs < 0) --h;
  return h * kHourMs;
}

namespace {
Millis CeilTo(Millis t, Millis step) {
  Millis q = t / step;
  if (t % step > 0) ++q;
  return q * step;
}
std::string ProductKey(const RunSegment& seg, std::string_view resource) {
  return MeterUnitOf(resource).gpu ? seg.gpu_product : std::string();
}
int64_t ReplicasKey(const RunSegment& seg, std::string_view resource) {
  return IsGpuReplicaResource(resource) ? seg.gpu_replicas : 1;
}
int64_t UsageOf(const RunSegment& seg, std::string_view resource) {
  if (seg.usage.empty() || seg.usage_from_request) return seg.requests.Get(resource);
  return seg.usage.Has(resource) ? seg.usage.Get(resource) : seg.requests.Get(resource);
}
}  // namespace

Status ValidateMeterConfig(const MeterConfig& cfg) {
  if (cfg.scrape_interval < 1000 || cfg.scrape_interval > kHourMs ||
      kHourMs % cfg.scrape_interval != 0)
    return Status::Error(
        "scrape interval " + FormatDuration(cfg.scrape_interval) +
        " must be between 1s and 1h and divide one hour evenly (e.g. 15s, 30s, 60s)");
  if (cfg.low_coverage_permille < 0 || cfg.low_coverage_permille > 1000)
    return Status::Error("low coverage threshold must be between 0 and 1000 permille");
  return Status::Ok();
}

Status ValidateSegment(const RunSegment& s) {
  // The name is built only for an error: a million valid segments allocate nothing here.
  auto who = [&s] {
    return "segment of " + (s.workload.empty() ? std::string("<unnamed>") : s.workload) + " on " +
           (s.node.empty() ? std::string("<no node>") : s.node);
  };
  if (s.workload.empty()) return Status::Error(who() + ": workload name is empty");
  if (s.namespace_.empty()) return Status::Error(who() + ": namespace is empty");
  if (s.end < s.start) return Status::Error(who() + ": ends before it starts");
  if (s.gpu_replicas < 1 || s.gpu_replicas > kMaxGpuReplicas)
    return Status::Error(who() + ": GPU replicas per card must be between 1 and " +
                         std::to_string(kMaxGpuReplicas) + ", got " +
                         std::to_string(s.gpu_replicas));
  if (s.requests.AnyNegative() || s.usage.AnyNegative())
    return Status::Error(who() + ": negative request or usage");
  if (s.lost) {
    if (s.lost->to < s.lost->from)
      return Status::Error(who() + ": lost work ends before it starts");
    if (s.lost->from < s.start || s.lost->to > s.end)
      return Status::Error(who() + ": lost work [" + FormatRfc3339(s.lost->from) + ", " +
                           FormatRfc3339(s.lost->to) + ") lies outside the segment");
  }
  return Status::Ok();
}

// ------------------------------------------------------------------ SeriesFolder

SeriesFolder::SeriesFolder(const RunSegment& seg, std::string resource, std::vector<HourlyRow>* out,
                           Millis scrape_interval, int64_t gauge_scale)
    : seg_(seg),
      resource_(std::move(resource)),
      product_(ProductKey(seg, resource_)),
      replicas_(ReplicasKey(seg, resource_)),
      out_(out),
      interval_(scrape_interval),
      gauge_scale_(gauge_scale < 1 ? 1 : gauge_scale),
      counter_(MeterUnitOf(resource_).counter),
      request_(seg.requests.Get(resource_)),
      prev_t_(seg.start) {}

void SeriesFolder::Flush() {
  if (hour_ == INT64_MIN) return;
  if (req_ != 0 || use_ != 0 || samples_ != 0 || run_ != 0) {
    HourlyRow& r = out_->emplace_back();  // built in place: no move of five strings
    r.namespace_ = seg_.namespace_;
    r.workload = seg_.workload;
    r.resource = resource_;
    r.gpu_product = product_;
    r.gpu_replicas = replicas_;
    r.hour = hour_;
    r.request_raw = req_;
    r.usage_raw = use_;
    r.max_raw = req_ + extra_;
    r.samples = samples_;
    r.covered_ms = covered_;
    r.run_ms = run_;
  }
  req_ = use_ = extra_ = 0;
  samples_ = 0;
  covered_ = run_ = 0;
}

void SeriesFolder::Touch(Millis hour) {
  if (hour == hour_) return;
  ARB_CHECK_MSG(hour > hour_, "series samples out of time order");
  Flush();
  hour_ = hour;
}

void SeriesFolder::AddRequest(Millis a, Millis b, bool as_usage) {
  while (a < b) {
    Millis h = HourOf(a);
    Millis e = std::min(b, h + kHourMs);
    Touch(h);
    req_ += static_cast<i128>(request_) * (e - a);
    run_ += e - a;
    if (as_usage) {
      use_ += static_cast<i128>(request_) * (e - a);
      covered_ += e - a;
    }
    a = e;
  }
}

void SeriesFolder::FinishUsageFromRequest() {
  if (have_prev_) return Finish();
  ARB_CHECK(!finished_);
  finished_ = true;
  AddRequest(prev_t_, seg_.end, /*as_usage=*/true);
  Flush();
}

void SeriesFolder::Add(Millis t, i128 value) {
  ARB_CHECK_MSG(!finished_ && t >= prev_t_ && t < seg_.end && (!have_prev_ || t > prev_t_),
                "scrape sample outside its segment or out of order");
  Millis dt = t - prev_t_;
  i128 req_piece = static_cast<i128>(request_) * dt;
  i128 use_piece = 0;
  Touch(HourOf(prev_t_));
  if (have_prev_) {
    Millis seen;
    if (counter_) {
      use_piece = value >= prev_value_ ? value - prev_value_ : value;  // a reset restarts at 0
      seen = dt;
    } else {
      seen = std::min(dt, interval_);
      use_piece = gauge_scale_ == 1 ? prev_value_ * seen
                                    : MulDivRoundHalfUp(prev_value_, seen, gauge_scale_);
    }
    use_ += use_piece;
    covered_ += seen;
  }
  if (use_piece > req_piece) extra_ += use_piece - req_piece;
  AddRequest(prev_t_, t);
  Touch(HourOf(t));
  ++samples_;
  prev_t_ = t;
  prev_value_ = value;
  have_prev_ = true;
}

void SeriesFolder::FinishContinued(i128 counter_at_end) {
  if (counter_ && have_prev_ && !finished_ && seg_.end > prev_t_) {
    Millis dt = seg_.end - prev_t_;
    Touch(HourOf(prev_t_));
    i128 use_piece = counter_at_end >= prev_value_ ? counter_at_end - prev_value_ : counter_at_end;
    i128 req_piece = static_cast<i128>(request_) * dt;
    use_ += use_piece;
    covered_ += dt;
    if (use_piece > req_piece) extra_ += use_piece - req_piece;
  }
  Finish();
}

void SeriesFolder::Finish() {
  ARB_CHECK(!finished_);
  finished_ = true;
  Millis dt = seg_.end - prev_t_;
  if (dt > 0) {
    Touch(HourOf(prev_t_));
    i128 req_piece = static_cast<i128>(request_) * dt;
    if (have_prev_ && !counter_) {
      Millis seen = std::min(dt, interval_);
      i128 use_piece = gauge_scale_ == 1 ? prev_value_ * seen
                                         : MulDivRoundHalfUp(prev_value_, seen, gauge_scale_);
      use_ += use_piece;
      covered_ += seen;
      if (use_piece > req_piece) extra_ += use_piece - req_piece;
    }
    AddRequest(prev_t_, seg_.end);
  }
  Flush();
}

// ------------------------------------------------------------------ segments

void ScrapeSamples(const RunSegment& seg, std::string_view resource, Millis interval,
                   std::vector<std::pair<Millis, i128>>* out) {
  const bool counter = MeterUnitOf(resource).counter;
  const int64_t u = UsageOf(seg, resource);
  for (Millis t = CeilTo(seg.start, interval); t < seg.end; t += interval)
    out->emplace_back(t, counter ? static_cast<i128>(u) * (t - seg.start) : static_cast<i128>(u));
}

namespace {
std::vector<std::string> MeteredResources(const RunSegment& seg) {
  std::vector<std::string> names;
  for (const auto& [k, v] : seg.requests.entries())
    if (IsMeteredResource(k)) names.push_back(k);
  for (const auto& [k, v] : seg.usage.entries())
    if (IsMeteredResource(k) && !seg.requests.Has(k)) names.push_back(k);
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

void MeterSegment(const RunSegment& seg, const MeterConfig& cfg, std::vector<HourlyRow>* out) {
  for (const std::string& res : MeteredResources(seg)) {
    if (seg.requests.Get(res) == 0 && UsageOf(seg, res) == 0) continue;
    if (seg.usage_from_request) {
      SeriesFolder f(seg, res, out, cfg.scrape_interval);
      f.FinishUsageFromRequest();
      continue;
    }
    // The samples of ScrapeSamples, folded as they are made: memory stays that of the rows, however
    // long the segment.
    const bool counter = MeterUnitOf(res).counter;
    const int64_t u = UsageOf(seg, res);
    SeriesFolder f(seg, res, out, cfg.scrape_interval);
    for (Millis t = CeilTo(seg.start, cfg.scrape_interval); t < seg.end; t += cfg.scrape_interval)
      f.Add(t, counter ? static_cast<i128>(u) * (t - seg.start) : static_cast<i128>(u));
    f.Finish();
  }
  if (seg.lost && seg.lost->to > seg.lost->from) {
    for (const std::string& res : MeteredResources(seg)) {
      i128 r = seg.requests.Get(res), u = UsageOf(seg, res);
      if (r == 0 && u == 0) continue;
      for (Millis a = seg.lost->from; a < seg.lost->to;) {
        Millis h = HourOf(a);
        Millis e = std::min(seg.lost->to, h + kHourMs);
        HourlyRow& row = out->emplace_back();
        row.namespace_ = seg.namespace_;
        row.workload = seg.workload;
        row.resource = res;
        row.gpu_product = ProductKey(seg, res);
        row.gpu_replicas = ReplicasKey(seg, res);
        row.kind = RowKind::kCredit;
        row.preemptor = seg.lost->preemptor;
        row.hour = h;
        row.request_raw = r * (e - a);
        row.usage_raw = u * (e - a);
        row.max_raw = std::max(r, u) * (e - a);
        row.run_ms = e - a;
        a = e;
      }
    }
  }
}

void Rollup(std::vector<HourlyRow>* rows) {
  // Rows that come sorted (MeterSegmentsInto sorts them per workload) skip the sort.
  if (!std::is_sorted(rows->begin(), rows->end(), HourlyRow::KeyLess))
    std::sort(rows->begin(), rows->end(), HourlyRow::KeyLess);
  size_t w = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    HourlyRow& r = (*rows)[i];
    if (w > 0 && HourlyRow::SameKey((*rows)[w - 1], r)) {
      (*rows)[w - 1].AddQuantities(r);
    } else {
      if (w != i) (*rows)[w] = std::move(r);
      ++w;
    }
  }
  rows->resize(w);
}

Status CheckSegmentWindow(const RunSegment& s) {
  auto in = [](Millis t) { return t >= kSegmentTimeMin && t < kSegmentTimeMax; };
  // Years 0000..9999 as RFC 3339 (what the input can write), anything else as Unix ms.
  auto text = [](Millis t) {
    return t >= -62167219200000 && t < 253402300800000 ? FormatRfc3339(t)
                                                       : std::to_string(t) + " (Unix ms)";
  };
  for (Millis t : {s.start, s.end, s.lost ? s.lost->from : s.start, s.lost ? s.lost->to : s.start})
    if (!in(t))
      return Status::Error("segment of " + s.workload + " on " +
                           (s.node.empty() ? std::string("<no node>") : s.node) + ": time " +
                           text(t) + " is outside the supported range " +
                           FormatRfc3339(kSegmentTimeMin) + " .. " +
                           FormatRfc3339(kSegmentTimeMax));
  return Status::Ok();
}

namespace {
// At most how many rows MeterSegment makes for `seg`: one per metered resource and hour touched,
// for the run and for its lost-work credit.
size_t RowBound(const RunSegment& seg) {
  auto hours = [](Millis from, Millis to) -> size_t {
    if (to <= from) return 0;
    return static_cast<size_t>((HourOf(to - 1) - HourOf(from)) / kHourMs + 1);
  };
  size_t resources = 0;  // as MeteredResources(seg), without building the list
  for (const auto& [k, v] : seg.requests.entries()) resources += IsMeteredResource(k);
  for (const auto& [k, v] : seg.usage.entries())
    resources += IsMeteredResource(k) && !seg.requests.Has(k);
  size_t n = resources * hours(seg.start, seg.end);
  if (seg.lost) n += resources * hours(seg.lost->from, seg.lost->to);
  return n;
}
}  // namespace

size_t RowBoundOf(const std::vector<RunSegment>& segments) {
  size_t n = 0;
  for (const RunSegment& seg : segments) n += RowBound(seg);
  return n;
}

Status MeterSegmentsInto(const std::vector<RunSegment>& segments, const MeterConfig& cfg,
                         std::vector<HourlyRow>* rows, size_t extra) {
  if (Status s = ValidateMeterConfig(cfg); !s.ok()) return s;
  size_t bound = rows->size() + extra;
  for (const RunSegment& seg : segments) {
    if (Status s = ValidateSegment(seg); !s.ok()) return s;
    bound += RowBound(seg);
  }
  rows->reserve(bound);  // one allocation: a million workloads' rows are never copied to grow
  // Metered by (namespace, workload), each workload's rows sorted on their own: the rows then
  // come in key order (the first two key fields are the workload's), and Rollup finds them sorted
  // instead of sorting millions of rows.
  std::vector<uint32_t> order(segments.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&segments](uint32_t a, uint32_t b) {
    const RunSegment &x = segments[a], &y = segments[b];
    if (int c = x.namespace_.compare(y.namespace_); c != 0) return c < 0;
    if (int c = x.workload.compare(y.workload); c != 0) return c < 0;
    return a < b;
  });
  for (size_t i = 0; i < order.size();) {
    const RunSegment& first = segments[order[i]];
    const size_t from = rows->size();
    size_t j = i;
    for (; j < order.size() && segments[order[j]].workload == first.workload &&
           segments[order[j]].namespace_ == first.namespace_;
         ++j)
      MeterSegment(segments[order[j]], cfg, rows);
    std::sort(rows->begin() + static_cast<std::ptrdiff_t>(from), rows->end(), HourlyRow::KeyLess);
    i = j;
  }
  Rollup(rows);
  return Status::Ok();
}

Result<std::vector<HourlyRow>> MeterSegments(const std::vector<RunSegment>& segments,
                                             const MeterConfig& cfg) {
  std::vector<HourlyRow> rows;
  if (Status s = MeterSegmentsInto(segments, cfg, &rows); !s.ok()) return s;
  return rows;
}

}  // namespace arbiter::billing
