// `arbiter meter` against a real Prometheus 2.42 holding backfilled history
// (tests/integration/data/prometheus/gen_fixture.py -> fixture.om, loaded with promtool by
// scripts/services/prometheus.sh start). See docs/metering-live.md.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "adapters/prometheus/live_meter.h"
#include "adapters/sqlite/ledger.h"
#include "integration/services.h"

namespace arbiter {
namespace {

using testing::Arbiter;
using testing::PrometheusUrl;
using testing::RunCommandSplit;
using testing::Scratch;

// The fixture's PriceBook (data/prometheus/pricebook.yaml): fx-a billed in Max mode, fx-b in
// Usage mode.
std::filesystem::path WritePriceBook(const std::filesystem::path& dir) {
  auto p = dir / "pricebook.yaml";
  std::filesystem::copy_file(testing::PrometheusFixturePriceBook(), p,
                             std::filesystem::copy_options::overwrite_existing);
  return p;
}

std::string Meter(const std::filesystem::path& dir, const std::string& db, const std::string& from,
                  const std::string& to, const std::string& extra = "") {
  return Arbiter() + " meter -q --prometheus " + PrometheusUrl() + " --from " + from + " --to " +
         to + " --db " + db + " -f " + (dir / "pricebook.yaml").string() + " " + extra;
}

const nlohmann::json* Line(const nlohmann::json& inv, const std::string& resource) {
  for (const auto& l : inv["lines"])
    if (l["resource"] == resource) return &l;
  return nullptr;
}

// Every key reaches the sink once per run: a second write of a key would replace the first.
void ExpectUniqueKeys(const std::vector<billing::HourlyRow>& rows) {
  std::set<std::tuple<std::string, std::string, int, Millis>> seen;
  for (const auto& r : rows)
    EXPECT_TRUE(seen.insert({r.workload, r.resource, static_cast<int>(r.kind), r.hour}).second)
        << "key written twice: " << r.workload << " " << r.resource << " " << FormatRfc3339(r.hour);
}

// The hand computation of the exact data set (gen_fixture.py), 30 s grid:
//  fx-a/train, [00:00, 02:00) on an H100 node; requests 4 cores, 16Gi, 1 GPU; uses 2 cores,
//  8Gi, GPU 0.5. Max mode.
//    cpu: request 4 × 7200 = 28800 core-s; usage = counter increase between the first and the
//         last sample (00:00:00 .. 01:59:30) = 2 × 7170 = 14340; max per piece = request.
//         28800 × 0.05 / 3600 = 0.400000
//    memory: request 16 × 7200 = 115200 GiB-s; usage 8 × 7200 = 57600; billed 115200 × 0.01 /
//         3600 = 0.320000
//    GPU: Max bills the request: 7200 GPU-s × 14.00 (gpuModels H100) / 3600 = 28.000000
//    total 28.720000
//  fx-b (Usage mode), [00:00, 01:00):
//    infer: cpu uses 0.5 core: 0.5 × 3570 = 1785 core-s; MIG 1g.10gb at 0.25: 900
//           instance-s, priced 7.00 × max(1/7, 1/8) = 1 per instance-hour -> 0.250000
//    batch: cpu 1 core, restart at 00:29:45 (reset seen at 00:30:00: +15), cAdvisor gap
//           00:40:00..00:41:30 (the counter piece spans it): 1770 + 15 + 1770 = 3555 core-s;
//           memory 1Gi held 30 s per sample, 116 samples (4 missing) = 3480 GiB-s
//    cpu line (5340 core-s × 0.05 / 3600 = 0.074166..) 0.074167, memory (3480 × 0.01 / 3600)
//    0.009667, MIG 0.250000: total 0.333834; request track: cpu (1 + 2) × 3600 × 0.05 / 3600 =
//    0.15, memory 2 × 3600 × 0.01 / 3600 = 0.02, MIG 3600 × 1 / 3600 = 1: 1.170000
TEST(PrometheusMeter, FixtureInvoicesMatchTheHandComputationToTheLastDigit) {
  auto dir = Scratch("fixture");
  WritePriceBook(dir);
  const std::string db = (dir / "l.db").string();
  auto m = RunCommandSplit(Meter(dir, db, "2026-01-05T00:00:00Z", "2026-01-05T03:00:00Z"), dir);
  ASSERT_EQ(m.rc, 0) << m.out << m.err;
  EXPECT_NE(m.out.find("3 pods, 3 run segments"), std::string::npos) << m.out;
  EXPECT_NE(
      m.out.find("8 usage gaps, 1 bridged request gaps, 1 counter resets, 20 samples outside runs"),
      std::string::npos)
      << m.out;
  auto inv = RunCommandSplit(Arbiter() + " invoice --db " + db + " -o json", dir);
  ASSERT_EQ(inv.rc, 0) << inv.err;
  auto j = nlohmann::json::parse(inv.out);
  ASSERT_EQ(j.size(), 2u) << inv.out;
  const auto& a = j[0];
  EXPECT_EQ(a["namespace"], "fx-a");
  EXPECT_EQ(a["total"], "28.720000");
  EXPECT_EQ(a["usageTotal"], "14.359167");  // 14340×0.05 + 57600×0.01 + 3600×14, per hour
  ASSERT_TRUE(Line(a, "cpu"));
  EXPECT_EQ((*Line(a, "cpu"))["requestQuantity"], "28800");
  EXPECT_EQ((*Line(a, "cpu"))["usageQuantity"], "14340");
  EXPECT_EQ((*Line(a, "memory"))["usageQuantity"], "57600");
  EXPECT_EQ((*Line(a, "nvidia.com/gpu"))["gpuModel"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ((*Line(a, "nvidia.com/gpu"))["usageQuantity"], "3600");
  EXPECT_EQ((*Line(a, "nvidia.com/gpu"))["amount"], "28.000000");
  const auto& b = j[1];
  EXPECT_EQ(b["namespace"], "fx-b");
  EXPECT_EQ(b["total"], "0.333834");
  EXPECT_EQ(b["requestTotal"], "1.170000");
  EXPECT_EQ((*Line(b, "cpu"))["usageQuantity"], "5340");
  EXPECT_EQ((*Line(b, "cpu"))["amount"], "0.074167");
  EXPECT_EQ((*Line(b, "memory"))["usageQuantity"], "3480");
  ASSERT_TRUE(Line(b, "nvidia.com/mig-1g.10gb")) << inv.out;
  EXPECT_EQ((*Line(b, "nvidia.com/mig-1g.10gb"))["usageQuantity"], "900");
  EXPECT_EQ((*Line(b, "nvidia.com/mig-1g.10gb"))["unitPrice"], "1");
  EXPECT_EQ((*Line(b, "nvidia.com/mig-1g.10gb"))["amount"], "0.250000");

  // Provenance beside the rows: the batch pod's gaps, reset, lingering samples, bridged hole.
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  std::map<std::string, std::string> prov;
  sqlite3_exec(
      h,
      "SELECT workload || ' ' || resource || ' ' || hour, usage_gaps || '/' || request_gaps || '/' "
      "|| counter_resets || '/' || outside_samples FROM meter_provenance",
      [](void* m, int, char** v, char**) {
        (*static_cast<std::map<std::string, std::string>*>(m))[v[0]] = v[1];
        return 0;
      },
      &prov, nullptr);
  sqlite3_close(h);
  // usage gaps / bridged request gaps / counter resets / samples outside the run: the gaps,
  // the hole and the restart are in hour 00:00; cAdvisor's lingering 5 minutes in hour 01:00.
  EXPECT_EQ(prov["fx-b/batch cpu 1767571200000"], "4/1/1/0") << ::testing::PrintToString(prov);
  EXPECT_EQ(prov["fx-b/batch memory 1767571200000"], "4/1/0/0");
  EXPECT_EQ(prov["fx-b/batch cpu 1767574800000"], "0/0/0/10");
  EXPECT_EQ(prov["fx-b/batch memory 1767574800000"], "0/0/0/10");
  EXPECT_EQ(prov.size(), 4u);
}

TEST(PrometheusMeter, RerunsAddNothingAndSplitWindowsGiveTheWholeWindowsRows) {
  auto dir = Scratch("idem");
  WritePriceBook(dir);
  const std::string whole = (dir / "whole.db").string(), split = (dir / "split.db").string();
  ASSERT_EQ(
      RunCommandSplit(Meter(dir, whole, "2026-01-06T00:00:00Z", "2026-01-06T04:00:00Z"), dir).rc,
      0);
  auto again =
      RunCommandSplit(Meter(dir, whole, "2026-01-06T00:00:00Z", "2026-01-06T04:00:00Z"), dir);
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(again.out.find(": 0 inserted, "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(" 0 replaced, 0 corrected"), std::string::npos) << again.out;
  for (auto [f, t] : {std::pair{"2026-01-06T00:00:00Z", "2026-01-06T01:00:00Z"},
                      std::pair{"2026-01-06T01:00:00Z", "2026-01-06T03:00:00Z"},
                      std::pair{"2026-01-06T03:00:00Z", "2026-01-06T04:00:00Z"}})
    ASSERT_EQ(RunCommandSplit(Meter(dir, split, f, t), dir).rc, 0);
  auto ea = RunCommandSplit(Arbiter() + " ledger export --db " + whole, dir);
  auto eb = RunCommandSplit(Arbiter() + " ledger export --db " + split, dir);
  ASSERT_EQ(ea.rc, 0);
  EXPECT_GT(ea.out.size(), 1000u);
  EXPECT_EQ(ea.out, eb.out);
}

TEST(PrometheusMeter, ASealedHourMeteredDifferentlyBecomesANewVersion) {
  auto dir = Scratch("seal");
  WritePriceBook(dir);
  const std::string db = (dir / "l.db").string();
  ASSERT_EQ(RunCommandSplit(Meter(dir, db, "2026-01-05T00:00:00Z", "2026-01-05T03:00:00Z",
                                  "--seal-before 2026-01-05T03:00:00Z"),
                            dir)
                .rc,
            0);
  // Read the GPU utilisation as percent: the usage track of the GPU rows changes (÷100).
  std::ofstream(dir / "percent.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\n"
         "spec:\n  gpuUsage: {metric: DCGM_FI_PROF_GR_ENGINE_ACTIVE, scale: Percent}\n";
  auto m = RunCommandSplit(Meter(dir, db, "2026-01-05T00:00:00Z", "2026-01-05T03:00:00Z",
                                 "--config " + (dir / "percent.yaml").string()),
                           dir);
  ASSERT_EQ(m.rc, 0) << m.err;
  // fx-a's GPU rows (2 hours) and fx-b's MIG row (1 hour) are corrected, nothing else moves.
  EXPECT_NE(m.out.find("0 inserted, 7 unchanged, 0 replaced, 3 corrected (new versions)"),
            std::string::npos)
      << m.out;
  auto e = RunCommandSplit(Arbiter() + " ledger export --include-superseded --db " + db, dir);
  EXPECT_NE(e.out.find(",2,true,true,"), std::string::npos);  // x_Version 2, current, sealed
}

// The usage track against PromQL over the same hours (docs/metering-live.md, "Error against
// PromQL"): per namespace and hour, cpu vs increase(), memory and GPU vs avg_over_time ×
// duration, within 2 scrape intervals of the namespace's peak rate or value.
TEST(PrometheusMeter, UsageTrackAgreesWithPromQLWithinTheScrapeInterval) {
  prometheus::MeteringConfig cfg;
  auto client = prometheus::Client::Create(PrometheusUrl(), {});
  ASSERT_TRUE(client.ok()) << client.message();
  const Millis from = 1767657600000, to = from + 4 * billing::kHourMs;  // 2026-01-06T00..04Z
  std::vector<billing::HourlyRow> rows;
  auto stats =
      prometheus::MeterPrometheus(**client, cfg, from, to, [&](prometheus::MeterBatch&& b) {
        for (auto& r : b.rows) rows.push_back(std::move(r));
        return Status::Ok();
      });
  ASSERT_TRUE(stats.ok()) << stats.message();
  ExpectUniqueKeys(rows);
  EXPECT_EQ(stats->counter_resets, 3);  // gen_fixture.py: 2 in xc-1/etl, 1 in xc-2/train
  EXPECT_GT(stats->usage_gaps, 0);
  // Ours, per (namespace, resource, hour), in core-s / GiB-s / GPU-s.
  std::map<std::tuple<std::string, std::string, Millis>, double> ours;
  for (const auto& r : rows) {
    auto u = billing::MeterUnitOf(r.resource);
    ours[{r.namespace_, r.resource, r.hour}] +=
        static_cast<double>(r.usage_raw) / static_cast<double>(u.divisor);
  }
  // Peak rates per namespace from gen_fixture.py (rate × 1.5, memory × 1.25, GPU 0.6 × 1.5).
  const std::map<std::string, double> cpu_peak = {{"xc-1", (1.2 + 3.0) * 1.5},
                                                  {"xc-2", (6.5 + 0.8) * 1.5}};
  const std::map<std::string, double> mem_peak = {{"xc-1", (3.0 + 6.0) * 1.25},
                                                  {"xc-2", (20.0 + 0.5) * 1.25}};
  const double S = 30;
  auto q = [&](const std::string& expr, Millis at) {
    std::map<std::string, double> out;
    auto r = (*client)->Query(expr, at);
    EXPECT_TRUE(r.ok()) << r.message();
    if (r.ok())
      for (const auto& s : *r)
        out[s.labels.count("namespace") ? s.labels.at("namespace") : ""] =
            std::stod(s.samples[0].value);
    return out;
  };
  int compared = 0;
  for (Millis h = from; h < to; h += billing::kHourMs) {
    const Millis end = h + billing::kHourMs - 1;  // [h, h+1h): Prometheus ranges include both ends
    auto cpu =
        q("sum by (namespace) "
          "(increase(container_cpu_usage_seconds_total{namespace=~\"xc-.*\",container!=\"\","
          "container!=\"POD\"}[3599999ms]))",
          end);
    auto mem =
        q("sum by (namespace) "
          "(avg_over_time(container_memory_working_set_bytes{namespace=~\"xc-.*\",container!=\"\","
          "container!=\"POD\"}[3599999ms])"
          " * "
          "count_over_time(container_memory_working_set_bytes{namespace=~\"xc-.*\",container!=\"\","
          "container!=\"POD\"}[3599999ms]) * 30) / 1073741824",
          end);
    auto gpu = q(
        "sum by (namespace) "
        "(avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace=~\"xc-.*\"}[3599999ms])"
        " * count_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace=~\"xc-.*\"}[3599999ms]) * 30)",
        end);
    for (const auto& [ns, ref] : cpu) {
      double mine = ours[{ns, "cpu", h}];
      std::cout << ns << " " << FormatRfc3339(h) << " cpu core-s: arbiter " << mine
                << ", increase() " << ref << "\n";
      EXPECT_NEAR(mine, ref, 2 * S * cpu_peak.at(ns)) << ns << " cpu at " << FormatRfc3339(h);
      ++compared;
    }
    for (const auto& [ns, ref] : mem) {
      double mine = ours[{ns, "memory", h}];
      std::cout << ns << " " << FormatRfc3339(h) << " memory GiB-s: arbiter " << mine
                << ", avg_over_time x duration " << ref << "\n";
      EXPECT_NEAR(mine, ref, 2 * S * mem_peak.at(ns)) << ns << " memory at " << FormatRfc3339(h);
      ++compared;
    }
    for (const auto& [ns, ref] : gpu) {
      double mine = ours[{ns, "nvidia.com/gpu", h}];
      std::cout << ns << " " << FormatRfc3339(h) << " GPU-s: arbiter " << mine
                << ", avg_over_time x duration " << ref << "\n";
      EXPECT_NEAR(mine, ref, 2 * S * 0.9) << ns << " gpu at " << FormatRfc3339(h);
      ++compared;
    }
  }
  EXPECT_GE(compared, 16);
}

// gen_fixture.py's edge cases, 2026-01-07T00:00Z: an in-place resize, a pod gone longer than the
// bridge and back on another node, a GPU pod without any DCGM series.
TEST(PrometheusMeter, ResizesMovesAndMissingGpuSeriesAreMeteredExactly) {
  auto client = prometheus::Client::Create(PrometheusUrl(), {});
  ASSERT_TRUE(client.ok());
  const Millis from = 1767744000000, to = from + 2 * billing::kHourMs;
  std::vector<billing::HourlyRow> rows;
  std::vector<prometheus::MeterProvenance> prov;
  int batches = 0;
  auto stats = prometheus::MeterPrometheus(**client, {}, from, to, [&](prometheus::MeterBatch&& b) {
    ++batches;
    for (auto& r : b.rows) rows.push_back(std::move(r));
    for (auto& p : b.provenance) prov.push_back(std::move(p));
    return Status::Ok();
  });
  ASSERT_TRUE(stats.ok()) << stats.message();
  ExpectUniqueKeys(rows);
  EXPECT_EQ(stats->pods, 3);
  EXPECT_EQ(stats->segments, 5);  // resize 2, move 2, nogpu 1
  std::map<std::string, const billing::HourlyRow*> by;
  for (const auto& r : rows)
    by[r.workload + " " + r.resource + " " + std::to_string((r.hour - from) / billing::kHourMs)] =
        &r;
  ASSERT_TRUE(by.count("ed/resize cpu 0"));
  EXPECT_EQ(by["ed/resize cpu 0"]->request_raw,
            static_cast<billing::i128>(2000 * 1800000LL + 4000 * 1800000LL));
  EXPECT_EQ(by["ed/resize cpu 0"]->usage_raw,
            static_cast<billing::i128>(3570) * 1000000);  // 1 core, 00:00..59:30
  EXPECT_EQ(by["ed/resize cpu 0"]->run_ms, 3600000);
  ASSERT_TRUE(by.count("ed/move cpu 0"));
  EXPECT_EQ(by["ed/move cpu 0"]->request_raw,
            static_cast<billing::i128>(1000) * 2400000);  // 20 + 20 min
  ASSERT_TRUE(by.count("ed/move nvidia.com/gpu 0"));
  EXPECT_EQ(by["ed/move nvidia.com/gpu 0"]->gpu_product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(by["ed/move nvidia.com/gpu 0"]->request_raw,
            static_cast<billing::i128>(1000) * 1200000);
  ASSERT_TRUE(by.count("ed/nogpu nvidia.com/gpu 0"));
  const auto* g = by["ed/nogpu nvidia.com/gpu 0"];
  EXPECT_EQ(g->request_raw, static_cast<billing::i128>(1000) * 3600000);
  EXPECT_EQ(g->usage_raw, 0);
  EXPECT_EQ(g->samples, 0);  // no sample: an invoice flags it as low coverage
  EXPECT_EQ(g->covered_ms, 0);
  EXPECT_EQ(g->run_ms, 3600000);
  bool gaps = false;
  for (const auto& p : prov)
    if (p.workload == "ed/nogpu" && p.resource == "nvidia.com/gpu") gaps = p.usage_gaps == 120;
  EXPECT_TRUE(gaps);
  for (const auto& r : rows)
    EXPECT_LT(r.hour, from + billing::kHourMs) << r.workload;  // nothing ran in hour 1
  // A page of 10 minutes gives the same rows, in more batches.
  prometheus::MeteringConfig small;
  small.page = 600000;
  std::vector<billing::HourlyRow> paged;
  int paged_batches = 0;
  auto s2 = prometheus::MeterPrometheus(**client, small, from, to, [&](prometheus::MeterBatch&& b) {
    ++paged_batches;
    for (auto& r : b.rows) paged.push_back(std::move(r));
    return Status::Ok();
  });
  ASSERT_TRUE(s2.ok()) << s2.message();
  ExpectUniqueKeys(paged);
  std::sort(paged.begin(), paged.end(), billing::HourlyRow::KeyLess);
  std::sort(rows.begin(), rows.end(), billing::HourlyRow::KeyLess);
  EXPECT_EQ(paged, rows);
}

// The invoice of `ns` for 2026-01-08T00:00Z .. 01:00Z metered from gen_fixture.py's fourth data
// set, and the meter's output.
struct Metered {
  std::string out;
  nlohmann::json invoice;
  std::map<std::string, int64_t> duplicates;  // "workload resource" -> duplicate_points
};
Metered MeterDay4(const std::string& name, const std::string& ns) {
  auto dir = Scratch(name);
  WritePriceBook(dir);
  const std::string db = (dir / "l.db").string();
  Metered r;
  auto m = RunCommandSplit(Meter(dir, db, "2026-01-08T00:00:00Z", "2026-01-08T01:00:00Z"), dir);
  EXPECT_EQ(m.rc, 0) << m.out << m.err;
  r.out = m.out;
  auto inv =
      RunCommandSplit(Arbiter() + " invoice --db " + db + " --namespace " + ns + " -o json", dir);
  EXPECT_EQ(inv.rc, 0) << inv.err;
  auto j = nlohmann::json::parse(inv.out, nullptr, false);
  if (j.is_array() && j.size() == 1) r.invoice = j[0];
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h,
                           "SELECT workload || ' ' || resource, sum(duplicate_points) FROM "
                           "meter_provenance GROUP BY workload, resource",
                           -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW)
        r.duplicates[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] =
            sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return r;
}

// Two kube-state-metrics replicas (an HA pair, then a rolling update) and cAdvisor and
// dcgm-exporter scraped by two jobs each give every series in two copies, which differ only by
// `instance` / `job`: each is counted once (max over the copies before the sum by pod), and the
// provenance says at how many grid points there were copies. Regression: the request track and
// the memory and GPU usage were summed over the copies (+50 % cpu request for dp/ha's hour).
TEST(PrometheusMeter, DuplicateSeriesFromReplicasAndScrapeJobsAreCountedOnce) {
  Metered m = MeterDay4("dups", "dp");
  ASSERT_TRUE(m.invoice.is_object()) << m.out;
  const nlohmann::json& inv = m.invoice;
  ASSERT_TRUE(Line(inv, "cpu") && Line(inv, "memory") && Line(inv, "nvidia.com/gpu"));
  // dp/ha 2 cores + dp/solo 1 core, one hour.
  EXPECT_EQ((*Line(inv, "cpu"))["requestQuantity"], "10800");
  EXPECT_EQ((*Line(inv, "cpu"))["usageQuantity"], "3570");        // dp/ha's counter, 1 core
  EXPECT_EQ((*Line(inv, "memory"))["requestQuantity"], "14400");  // 4 GiB x 3600 s
  EXPECT_EQ((*Line(inv, "memory"))["usageQuantity"], "3600");     // 1 GiB x 3600 s
  EXPECT_EQ((*Line(inv, "nvidia.com/gpu"))["requestQuantity"], "7200");
  EXPECT_EQ((*Line(inv, "nvidia.com/gpu"))["usageQuantity"], "2700");  // (0.5 + 0.25) x 3600
  EXPECT_NE(m.out.find(", 480 duplicate series points (counted once)"), std::string::npos) << m.out;
  // ksm-1's 60 points of each request, cAdvisor's 120 of each usage series, dcgm's 120.
  EXPECT_EQ(m.duplicates["dp/ha cpu"], 180);
  EXPECT_EQ(m.duplicates["dp/ha memory"], 180);
  EXPECT_EQ(m.duplicates["dp/gpu2 nvidia.com/gpu"], 120);
  EXPECT_EQ(m.duplicates.count("dp/solo cpu") ? m.duplicates["dp/solo cpu"] : 0, 0);
}

// A replica of a time-sliced / MPS GPU (DCGM cannot attribute a card's activity to one of the
// processes sharing it) and a MIG instance without a utilisation series have the request as
// their usage track, flagged in the provenance (docs/billing.md). Regression: both billed 0 on
// the usage track (Usage mode charged nothing for them).
TEST(PrometheusMeter, GpuSharesWithoutUtilisationSeriesUseTheRequestFlagged) {
  Metered m = MeterDay4("shares", "sh");
  ASSERT_TRUE(m.invoice.is_object()) << m.out;
  const nlohmann::json& inv = m.invoice;
  const nlohmann::json* replica = Line(inv, "nvidia.com/gpu");
  const nlohmann::json* mig = Line(inv, "nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(replica && mig) << inv.dump(1);
  EXPECT_EQ((*replica)["gpuReplicas"], 4);
  EXPECT_EQ((*replica)["requestQuantity"], "3600");
  EXPECT_EQ((*replica)["usageQuantity"], "3600");
  EXPECT_EQ((*mig)["requestQuantity"], "3600");
  EXPECT_EQ((*mig)["usageQuantity"], "3600");
  int flagged = 0;
  for (const auto& p : inv["provenance"]) {
    EXPECT_EQ(p["samples"], 0) << p.dump();
    EXPECT_EQ(p["coveredSeconds"], p["runSeconds"]) << p.dump();
    EXPECT_EQ(p.value("lowCoverage", true), false) << p.dump();
    flagged += p.value("usageFromRequest", false) ? 1 : 0;
  }
  EXPECT_EQ(flagged, 2) << inv["provenance"].dump(1);
}

TEST(PrometheusMeter, ErrorsSayWhatWentWrong) {
  auto dir = Scratch("errors");
  WritePriceBook(dir);
  const std::string pb = (dir / "pricebook.yaml").string();
  auto unreachable =
      RunCommandSplit(Arbiter() +
                          " meter -q --prometheus http://127.0.0.1:1 --from 2026-01-05T00:00:00Z"
                          " --to 2026-01-05T01:00:00Z -f " +
                          pb,
                      dir);
  EXPECT_EQ(unreachable.rc, 1);
  EXPECT_NE(unreachable.err.find("Prometheus at http://127.0.0.1:1 unreachable"), std::string::npos)
      << unreachable.err;
  // A selector Prometheus refuses: its own error type and message come through.
  std::ofstream(dir / "bad.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n  selector: "
         "'cluster=~\"(\"'\n  retries: 0\n";
  auto bad = RunCommandSplit(Arbiter() + " meter -q --prometheus " + PrometheusUrl() +
                                 " --from 2026-01-05T00:00:00Z --to 2026-01-05T01:00:00Z -f " + pb +
                                 " --config " + (dir / "bad.yaml").string(),
                             dir);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("answered HTTP 400"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad_data"), std::string::npos) << bad.err;
  // Not whole hours, reversed window.
  auto half = RunCommandSplit(Arbiter() + " meter --prometheus " + PrometheusUrl() +
                                  " --from 2026-01-05T00:30:00Z --to 2026-01-05T01:00:00Z -f " + pb,
                              dir);
  EXPECT_EQ(half.rc, 1);
  EXPECT_NE(half.err.find("whole hours"), std::string::npos);
  auto rev = RunCommandSplit(Arbiter() + " meter --prometheus " + PrometheusUrl() +
                                 " --from 2026-01-05T02:00:00Z --to 2026-01-05T01:00:00Z -f " + pb,
                             dir);
  EXPECT_EQ(rev.rc, 2);
  // A config typo is named with the closest field.
  std::ofstream(dir / "typo.yaml") << "apiVersion: arbiter.dev/v1alpha1\nkind: "
                                      "PrometheusMetering\nspec:\n  scrapeIntervl: 15s\n";
  auto typo = RunCommandSplit(Arbiter() + " meter --prometheus " + PrometheusUrl() +
                                  " --from 2026-01-05T00:00:00Z --to 2026-01-05T01:00:00Z -f " +
                                  pb + " --config " + (dir / "typo.yaml").string(),
                              dir);
  EXPECT_EQ(typo.rc, 1);
  EXPECT_NE(typo.err.find("did you mean \"scrapeInterval\""), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace arbiter
