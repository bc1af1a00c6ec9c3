// `arbiter scheduler --ledger DB --meter-prometheus URL` (docs/kubernetes.md, Metering): one
// hourly row per key whose request side is the informers' (the pods' startTime and finishedAt)
// and whose usage side is Prometheus's. The pods come as the informers deliver them (Pod and Node
// objects into kubesched::PodRuns; KWOK runs no container, so a kube cluster would give
// Prometheus nothing to scrape), the usage from the fixture's Prometheus (backfilled history,
// 2026-01-05, tests/integration/data/prometheus/gen_fixture.py), through the meter job of
// `arbiter serve` (server::MeterJob) with the informers' request track
// (kubesched::RequestTrackSource), as the scheduler runs them.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "adapters/prometheus/meter_ledger.h"
#include "adapters/sqlite/ledger.h"
#include "adapters/yaml/manifest_loader.h"
#include "core/billing/metering.h"
#include "integration/services.h"
#include "kubesched/pod_runs.h"
#include "kubesched/request_meter.h"
#include "server/billing/meter_job.h"

namespace arbiter {
namespace prometheus_scheduler_merge_test {

using billing::HourlyRow;
using billing::i128;
using billing::kHourMs;
using testing::PrometheusUrl;
using testing::Scratch;
using Json = nlohmann::json;

constexpr Millis kJan5 = 1767571200000;  // 2026-01-05T00:00:00Z
constexpr Millis kS = 1000;
constexpr i128 kGiB = i128{1} << 30;

Json PodJson(const std::string& ns, const std::string& name, const std::string& node, Json requests,
             Millis start, Millis finish) {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + ns + "-" + name}}},
          {"spec",
           {{"schedulerName", "arbiter"},
            {"nodeName", node},
            {"containers", {{{"name", "main"}, {"resources", {{"requests", requests}}}}}}}},
          {"status",
           {{"phase", "Succeeded"},
            {"startTime", FormatRfc3339(start)},
            {"containerStatuses",
             {{{"name", "main"},
               {"state", {{"terminated", {{"finishedAt", FormatRfc3339(finish)}}}}}}}}}}};
}

Json NodeJson(const std::string& name, const std::string& product) {
  Json n = {{"metadata", {{"name", name}}}};
  if (!product.empty()) n["metadata"]["labels"] = {{"nvidia.com/gpu.product", product}};
  return n;
}

std::vector<PriceBook> FixtureBooks() {
  yaml::ManifestLoad load = yaml::LoadManifestFiles({testing::PrometheusFixturePriceBook()});
  return load.set.price_books;
}

std::map<std::string, HourlyRow> ByKey(const std::vector<HourlyRow>& rows) {
  std::map<std::string, HourlyRow> m;
  for (const HourlyRow& r : rows)
    m[r.workload + "|" + r.resource + "|" + std::to_string((r.hour - kJan5) / kHourMs)] = r;
  return m;
}

TEST(PrometheusSchedulerMerge, RequestSideFromThePodsUsageSideFromPrometheusOneRowPerKey) {
  // What the informers saw: fx-a/train ran 00:00:05 .. 01:59:50 (Prometheus's grid saw it from
  // 00:00:00 to 02:00:00), fx-b/infer 00:00:00 .. 01:00:00, and fx-a/ghost, of which Prometheus
  // has no series, 00:10:00 .. 00:40:00. fx-b/batch and the others are not Arbiter's pods.
  kubesched::PodRuns runs("arbiter");
  runs.SyncedNodes({NodeJson("gpu-1", "NVIDIA-H100-80GB-HBM3"),
                    NodeJson("mig-1", "NVIDIA-A100-SXM4-80GB"), NodeJson("cpu-1", "")});
  const Millis now = kJan5 + 3 * kHourMs + 10 * 60 * kS;  // 03:10: the hours to 03:00 closed
  runs.SyncedPods(
      {PodJson("fx-a", "train", "gpu-1",
               {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", "1"}}, kJan5 + 5 * kS,
               kJan5 + 7190 * kS),
       PodJson("fx-b", "infer", "mig-1", {{"cpu", "1"}, {"nvidia.com/mig-1g.10gb", "1"}}, kJan5,
               kJan5 + kHourMs),
       PodJson("fx-a", "ghost", "cpu-1", {{"cpu", "1"}}, kJan5 + 600 * kS, kJan5 + 2400 * kS)},
      now);
  auto track = std::make_shared<kubesched::RequestTrackSource>();
  track->Submit({now, runs.Segments(now), {}});

  auto dir = Scratch("scheduler-merge");
  const std::string db = (dir / "merged.db").string();
  {
    auto l = sqlite::Ledger::Open(db);
    ASSERT_TRUE(l.ok()) << l.message();
    ASSERT_TRUE(prometheus::WriteMeterWatermark((*l)->handle(), kJan5).ok());
  }
  server::MeterJobOptions o;
  o.prometheus = PrometheusUrl();
  o.ledger = db;
  o.schedule.max_hours = 3;
  o.every = 200;
  o.price_books = [] { return FixtureBooks(); };
  o.clock = [now] { return now; };
  o.request_track = [track](Millis from, Millis to, bool closed) {
    return track->Track(from, to, closed);
  };
  std::vector<std::string> log;
  std::mutex log_mu;
  o.log = [&](const std::string& level, const std::string& msg, Json fields) {
    std::lock_guard<std::mutex> l(log_mu);
    log.push_back(level + " " + msg + " " + fields.dump());
  };
  auto job = server::MeterJob::Start(std::move(o));
  ASSERT_TRUE(job.ok()) << job.message();
  auto watermark = [&]() -> Millis {
    auto l = sqlite::Ledger::OpenForReading(db);
    if (!l.ok()) return 0;
    auto w = prometheus::ReadMeterWatermark((*l)->handle());
    return w.ok() && *w ? **w : 0;
  };
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
       watermark() < kJan5 + 3 * kHourMs && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (*job)->Stop();
  std::string lines;
  for (const std::string& l : log) lines += l + "\n";
  ASSERT_EQ(watermark(), kJan5 + 3 * kHourMs) << lines;
  EXPECT_NE(lines.find("\"requestFromInformers\":{\"droppedOutsideRuns\":0,\"merged\":"),
            std::string::npos)
      << lines;

  // What `arbiter meter` writes for the same hours: both tracks from Prometheus.
  auto client = prometheus::Client::Create(PrometheusUrl(), {});
  ASSERT_TRUE(client.ok()) << client.message();
  auto catalog = billing::PriceCatalog::Create(FixtureBooks());
  ASSERT_TRUE(catalog.ok()) << catalog.message();
  const std::string ref_db = (dir / "meter.db").string();
  auto ref_ledger = sqlite::Ledger::Open(ref_db);
  ASSERT_TRUE(ref_ledger.ok());
  auto ref_run = prometheus::MeterIntoLedger(**client, {}, *catalog, **ref_ledger, kJan5,
                                             kJan5 + 3 * kHourMs, std::nullopt);
  ASSERT_TRUE(ref_run.ok()) << ref_run.message();
  auto ref_rows = (*ref_ledger)->Read({});
  ASSERT_TRUE(ref_rows.ok());
  const auto ref = ByKey(*ref_rows);

  auto ledger = sqlite::Ledger::Open(db);
  ASSERT_TRUE(ledger.ok());
  auto rows = (*ledger)->Read({});
  ASSERT_TRUE(rows.ok());
  const auto got = ByKey(*rows);
  ASSERT_EQ(got.size(), rows->size());  // one row per key

  // fx-a/train: the request side is the pod's 3,595 s and 3,590 s; the usage side Prometheus's.
  for (const char* res : {"cpu", "memory", "nvidia.com/gpu"})
    for (int h : {0, 1}) {
      const std::string k = std::string("fx-a/train|") + res + "|" + std::to_string(h);
      ASSERT_TRUE(got.count(k) && ref.count(k)) << k;
      const HourlyRow &r = got.at(k), &p = ref.at(k);
      const Millis run = h == 0 ? 3595 * kS : 3590 * kS;
      const i128 req = std::string(res) == "cpu" ? 4000 : res[0] == 'm' ? 16 * kGiB : 1000;
      EXPECT_EQ(r.run_ms, run) << k;
      EXPECT_EQ(r.request_raw, req * run) << k;
      EXPECT_EQ(p.request_raw, req * 3600 * kS) << k;  // Prometheus's grid: the whole hour
      EXPECT_EQ(r.usage_raw, p.usage_raw) << k;
      EXPECT_EQ(r.samples, p.samples) << k;
      EXPECT_EQ(r.covered_ms, std::min(p.covered_ms, run)) << k;
      EXPECT_EQ(r.gpu_product, p.gpu_product) << k;
    }
  // fx-b/infer: the same run on both sides, so the same row as `arbiter meter`'s.
  for (const char* res : {"cpu", "nvidia.com/mig-1g.10gb"}) {
    const std::string k = std::string("fx-b/infer|") + res + "|0";
    ASSERT_TRUE(got.count(k) && ref.count(k)) << k;
    EXPECT_EQ(got.at(k), ref.at(k)) << k;
  }
  // fx-a/ghost: Prometheus saw nothing: usage 0, nothing covered (the invoice: low coverage).
  ASSERT_TRUE(got.count("fx-a/ghost|cpu|0"));
  const HourlyRow& g = got.at("fx-a/ghost|cpu|0");
  EXPECT_EQ(g.request_raw, 1000 * i128{1800 * kS});
  EXPECT_EQ(g.usage_raw, 0);
  EXPECT_EQ(g.covered_ms, 0);
  EXPECT_EQ(g.run_ms, 1800 * kS);
  // Every other row is `arbiter meter`'s, both tracks from Prometheus.
  size_t others = 0;
  for (const auto& [k, r] : ref) {
    if (r.workload == "fx-a/train" || r.workload == "fx-b/infer") continue;
    ++others;
    ASSERT_TRUE(got.count(k)) << k;
    EXPECT_EQ(got.at(k), r) << k;
  }
  EXPECT_GT(others, 0u);
  EXPECT_EQ(got.size(), ref.size() + 1);  // + fx-a/ghost's

  // The sources, per row of the informers' pods.
  auto notes = (*ledger)->ReadTracks();
  ASSERT_TRUE(notes.ok()) << notes.message();
  std::map<std::string, std::string> source;
  for (const auto& n : *notes)
    source[n.workload + "|" + n.resource + "|" + std::to_string((n.hour - kJan5) / kHourMs)] =
        n.Text();
  EXPECT_EQ(source.size(), 6u + 2u + 1u);
  EXPECT_EQ(source["fx-a/train|cpu|1"], "request=informers usage=prometheus");
  EXPECT_EQ(source["fx-b/infer|nvidia.com/mig-1g.10gb|0"], "request=informers usage=prometheus");
  EXPECT_EQ(source["fx-a/ghost|cpu|0"], "request=informers usage=none");

  auto invoices = sqlite::LedgerInvoices(**ledger, std::string("fx-a"), kJan5, kJan5 + 3 * kHourMs);
  ASSERT_TRUE(invoices.ok()) << invoices.message();
  ASSERT_EQ(invoices->size(), 1u);
  bool ghost_low = false;
  for (const auto& p : (*invoices)[0].provenance)
    if (p.workload == "fx-a/ghost") ghost_low = p.low_coverage && !p.usage_from_request;
  EXPECT_TRUE(ghost_low);

  // Metered again (a restarted scheduler, a new leader): the same rows, nothing written.
  auto again = track->Track(kJan5, kJan5 + 3 * kHourMs, true);
  ASSERT_TRUE(again);
  billing::TrackMerger merge(std::move(*again));
  auto rerun = prometheus::MeterIntoLedger(**client, {}, *catalog, **ledger, kJan5,
                                           kJan5 + 3 * kHourMs, std::nullopt, {}, &merge);
  ASSERT_TRUE(rerun.ok()) << rerun.message();
  EXPECT_EQ(rerun->written.unchanged, static_cast<int64_t>(rows->size()));
  EXPECT_EQ(rerun->written.inserted + rerun->written.replaced + rerun->written.corrected, 0);
}

}  // namespace prometheus_scheduler_merge_test
}  // namespace arbiter
