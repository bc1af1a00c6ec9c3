// billing::TrackMerger (core/billing/track_merge.h): the request track of `arbiter scheduler`'s
// informers and the usage track of Prometheus in one hourly row per key. Against a real
// Prometheus: tests/integration/prometheus_scheduler_merge_test.cc.
#include "core/billing/track_merge.h"

#include <gtest/gtest.h>

#include "core/billing/metering.h"

namespace arbiter::billing {
namespace track_merge_test {

constexpr Millis kH = 1767571200000;  // 2026-01-05T00:00:00Z

HourlyRow Row(const std::string& workload, const std::string& resource, Millis hour) {
  HourlyRow r;
  r.namespace_ = workload.substr(0, workload.find('/'));
  r.workload = workload;
  r.resource = resource;
  r.hour = hour;
  return r;
}

// The informers' row: `request` canonical units held for `run_ms`, usage = request.
HourlyRow Req(const std::string& workload, const std::string& resource, Millis hour,
              int64_t request, Millis run_ms) {
  HourlyRow r = Row(workload, resource, hour);
  r.request_raw = static_cast<i128>(request) * run_ms;
  r.usage_raw = r.max_raw = r.request_raw;
  r.covered_ms = r.run_ms = run_ms;
  return r;
}

// Prometheus's row.
HourlyRow Use(const std::string& workload, const std::string& resource, Millis hour,
              i128 request_raw, i128 usage_raw, i128 max_raw, int64_t samples, Millis covered,
              Millis run) {
  HourlyRow r = Row(workload, resource, hour);
  r.request_raw = request_raw;
  r.usage_raw = usage_raw;
  r.max_raw = max_raw;
  r.samples = samples;
  r.covered_ms = covered;
  r.run_ms = run;
  return r;
}

TEST(TrackMerge, RequestSideFromTheInformersUsageSideFromPrometheus) {
  // Informers: cpu 4000 m for 3,595 s (started 00:00:05). Prometheus saw the grid from 00:00:00:
  // request 4000 m × 3,600 s, usage 2000 m, above the request for 100 s by 1000 m.
  RequestTrack t{{Req("a/train", "cpu", kH, 4000, 3595000)}, {"a/train"}};
  const i128 prom_req = 4000 * i128{3600000};
  const HourlyRow u = Use("a/train", "cpu", kH, prom_req, 2000 * i128{3600000},
                          prom_req + 1000 * i128{100000}, 120, 3600000, 3600000);
  MergedTracks m = MergeTracks(t, {u});
  ASSERT_EQ(m.rows.size(), 1u);
  const HourlyRow& r = m.rows[0];
  EXPECT_EQ(r.request_raw, 4000 * i128{3595000});  // the informers'
  EXPECT_EQ(r.run_ms, 3595000);
  EXPECT_EQ(r.usage_raw, 2000 * i128{3600000});  // Prometheus's
  EXPECT_EQ(r.samples, 120);
  EXPECT_EQ(r.covered_ms, 3595000);  // at most the run
  EXPECT_EQ(r.max_raw, 4000 * i128{3595000} + 1000 * i128{100000});
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0].Text(), "request=informers usage=prometheus");
  EXPECT_EQ(m.stats.merged, 1);
}

TEST(TrackMerge, MaxTrackIsNeverBelowTheUsage) {
  // Prometheus saw a larger request than the informers (a resize it caught): usage above the
  // informers' request counts in full.
  RequestTrack t{{Req("a/x", "memory", kH, 100, 1000)}, {"a/x"}};
  MergedTracks m =
      MergeTracks(t, {Use("a/x", "memory", kH, 500000, 300000, 500000, 2, 1000, 1000)});
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0].request_raw, 100000);
  EXPECT_EQ(m.rows[0].usage_raw, 300000);
  EXPECT_EQ(m.rows[0].max_raw, 300000);
}

TEST(TrackMerge, NoSeriesForAPodMeansUsageZeroNotCoveredOrTheRequestForAGpuShare) {
  // Prometheus has nothing for a/ghost: cpu usage 0, covered 0 (the invoice says low coverage);
  // its MIG instance takes the usage from the request, as the meter does without a series.
  RequestTrack t{{Req("a/ghost", "cpu", kH, 1000, 600000),
                  Req("a/ghost", "nvidia.com/mig-1g.10gb", kH, 1, 600000)},
                 {"a/ghost"}};
  MergedTracks m = MergeTracks(t, {});
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[0].resource, "cpu");
  EXPECT_EQ(m.rows[0].request_raw, 1000 * i128{600000});
  EXPECT_EQ(m.rows[0].usage_raw, 0);
  EXPECT_EQ(m.rows[0].max_raw, m.rows[0].request_raw);
  EXPECT_EQ(m.rows[0].covered_ms, 0);
  EXPECT_EQ(m.rows[0].samples, 0);
  EXPECT_EQ(m.rows[1], t.rows[1]);  // usage = request, covered = run, 0 samples
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[0].Text(), "request=informers usage=none");
  EXPECT_EQ(m.notes[1].Text(), "request=informers usage=request");
  EXPECT_EQ(m.stats.usage_none, 1);
}

// A pod's lost work (a Credit row of the informers' track, usage = request) and its Usage row of
// the same resource and hour: two rows, two notes, each with its row's kind (the ledger keys
// meter_tracks with it, so that neither note replaces the other).
TEST(TrackMerge, CreditRowsHaveNotesOfTheirOwnKind) {
  HourlyRow credit = Req("a/x", "cpu", kH, 1000, 600000);
  credit.kind = RowKind::kCredit;
  credit.preemptor = "b/y";
  RequestTrack t{{Req("a/x", "cpu", kH, 1000, 3600000), credit}, {"a/x"}};
  MergedTracks m = MergeTracks(t, {Use("a/x", "cpu", kH, 1000 * i128{3600000}, 500 * i128{3600000},
                                       1000 * i128{3600000}, 120, 3600000, 3600000)});
  ASSERT_EQ(m.rows.size(), 2u);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[0].kind, RowKind::kUsage);
  EXPECT_EQ(m.notes[0].usage, UsageSource::kUsageSource);
  EXPECT_EQ(m.notes[1].kind, RowKind::kCredit);
  EXPECT_EQ(m.notes[1].usage, UsageSource::kRequest);
  EXPECT_EQ(m.notes[1].hour, m.notes[0].hour);
}

TEST(TrackMerge, UsageFromRequestInPrometheusFollowsTheInformersRequest) {
  RequestTrack t{{Req("a/inf", "nvidia.com/mig-1g.10gb", kH, 1, 1800000)}, {"a/inf"}};
  MergedTracks m = MergeTracks(t, {Use("a/inf", "nvidia.com/mig-1g.10gb", kH, 3600000, 3600000,
                                       3600000, 0, 3600000, 3600000)});
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0], t.rows[0]);
  EXPECT_EQ(m.notes[0].usage, UsageSource::kRequest);
}

TEST(TrackMerge, OtherPodsPassThroughUsageOutsideTheRunIsDropped) {
  RequestTrack t{{Req("a/train", "cpu", kH, 1000, 3600000)}, {"a/train", "a/done"}};
  const HourlyRow other = Use("b/web", "cpu", kH, 5, 6, 7, 8, 9, 10);
  // a/train in the next hour (the informers saw it end at the hour) and a/done (known, not
  // running in the window): usage while not running, not billed.
  MergedTracks m = MergeTracks(t, {other, Use("a/train", "cpu", kH + kHourMs, 1, 1, 1, 1, 1, 1),
                                   Use("a/done", "cpu", kH, 1, 1, 1, 1, 1, 1)});
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[0].workload, "a/train");
  EXPECT_EQ(m.rows[0].covered_ms, 0);  // Prometheus had no row of its hour
  EXPECT_EQ(m.rows[1], other);         // both tracks Prometheus's, no note
  EXPECT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.stats.from_other, 1);
  EXPECT_EQ(m.stats.dropped, 2);
}

TEST(TrackMerge, UsageOfAResourceNotRequestedWhileRunningIsKeptWithRequestZero) {
  // A pod with no memory request, using memory in an hour its cpu row says it ran.
  RequestTrack t{{Req("a/be", "cpu", kH, 100, 1200000)}, {"a/be"}};
  MergedTracks m =
      MergeTracks(t, {Use("a/be", "cpu", kH, 120000000, 60000000, 120000000, 40, 1200000, 1200000),
                      Use("a/be", "memory", kH, 0, 5000000, 5000000, 40, 1200000, 1200000)});
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[1].resource, "memory");
  EXPECT_EQ(m.rows[1].request_raw, 0);
  EXPECT_EQ(m.rows[1].usage_raw, 5000000);
  EXPECT_EQ(m.rows[1].max_raw, 5000000);
  EXPECT_EQ(m.rows[1].run_ms, 1200000);
  EXPECT_EQ(m.notes[1].usage, UsageSource::kUsageSource);
}

TEST(TrackMerge, BatchesInAnyOrderGiveTheSameRows) {
  RequestTrack t{
      {Req("a/p", "cpu", kH, 1000, 3600000), Req("a/p", "cpu", kH + kHourMs, 1000, 60000),
       Req("a/q", "memory", kH, 7, 3600000)},
      {"a/p", "a/q"}};
  const HourlyRow u1 = Use("a/p", "cpu", kH, 3600000000, 100, 3600000000, 120, 3600000, 3600000);
  const HourlyRow u2 = Use("a/p", "cpu", kH + kHourMs, 60000000, 5, 60000000, 2, 60000, 60000);
  MergedTracks once = MergeTracks(t, {u1, u2});
  TrackMerger m(t);
  std::vector<HourlyRow> rows;
  std::vector<TrackNote> notes;
  m.Merge({u2}, &rows, &notes);
  m.Merge({u1}, &rows, &notes);
  m.Finish(&rows, &notes);
  std::sort(rows.begin(), rows.end(), HourlyRow::KeyLess);
  EXPECT_EQ(rows, once.rows);
  EXPECT_EQ(MergeTracks(t, {u1, u2}).rows, once.rows);  // deterministic
  EXPECT_EQ(once.rows.size(), 3u);
}

}  // namespace track_merge_test
}  // namespace arbiter::billing
