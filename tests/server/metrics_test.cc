// /metrics: Prometheus text that promtool accepts, with the series `arbiter meter` reads.
#include "server/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "apps/run_command.h"
#include "cluster_fixtures.h"

namespace arbiter::server {
namespace metrics_test {

using fixtures::kT0;
constexpr auto CreateOf = fixtures::Create;

TEST(MetricsTest, VirtualPodsQuotasAndPendingReasonsPassPromtool) {
  Cluster c("0000abcd");
  ASSERT_TRUE(c.Apply(CreateOf(kT0, {{"apiVersion", "v1"},
                                     {"kind", "Namespace"},
                                     {"metadata", {{"name", "default"}}}}))
                  .ok());
  ASSERT_TRUE(
      c
          .Apply(CreateOf(
              kT0, {{"apiVersion", "v1"},
                    {"kind", "Node"},
                    {"metadata",
                     {{"name", "n1"},
                      {"labels", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}},
                    {"status",
                     {{"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "2"}}}}}}))
          .ok());
  ASSERT_TRUE(c.Apply(CreateOf(kT0, {{"apiVersion", "v1"},
                                     {"kind", "ResourceQuota"},
                                     {"metadata", {{"name", "q"}, {"namespace", "default"}}},
                                     {"spec", {{"hard", {{"requests.cpu", "6"}}}}}}))
                  .ok());
  auto pod = [](const std::string& name, const std::string& cpu) {
    return Json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", "default"},
                  {"annotations", {{"arbiter.dev/usage", "cpu=1,nvidia.com/gpu=1"}}}}},
                {"spec",
                 {{"containers",
                   {{{"name", "c"},
                     {"resources",
                      {{"requests", {{"cpu", cpu}, {"nvidia.com/gpu", "2"}}},
                       {"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}}};
  };
  ASSERT_TRUE(c.Apply(CreateOf(kT0, pod("runs", "4"))).ok());
  ASSERT_TRUE(c.Apply(CreateOf(kT0, pod("waits", "4"))).ok());
  JournalStats j;
  j.commits = 3;
  j.buckets[3] = 3;
  const std::string text = RenderMetrics(c, j, kT0 + 10000);
  EXPECT_NE(text.find("kube_pod_info{namespace=\"default\",pod=\"runs\",node=\"n1\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("container_cpu_usage_seconds_total{namespace=\"default\",pod=\"runs\","
                      "container=\"c\"} 10"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace=\"default\",pod=\"runs\",container="
                      "\"c\",gpu=\"1\",GPU_I_PROFILE=\"\"} 0.5"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kube_node_labels{node=\"n1\",label_nvidia_com_gpu_product=\"NVIDIA-H100-"
                      "80GB-HBM3\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("arbiter_quota_used{namespace=\"default\",resourcequota=\"q\",resource="
                      "\"requests.cpu\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("arbiter_pending_pods{namespace=\"default\",reason=\"QuotaExceeded\"} 1"),
            std::string::npos)
      << text;
  const auto file = std::filesystem::temp_directory_path() /
                    ("arbiter-metrics-" + std::to_string(getpid()) + ".txt");
  std::ofstream(file) << text;
  arbiter::testing::CommandOutput check =
      arbiter::testing::RunCommand("promtool check metrics < " + file.string() + " 2>&1");
  EXPECT_EQ(check.rc, 0) << check.out;
  // The node's own endpoints (GET nodes/n1/proxy/metrics/cadvisor and .../dcgm) serve exactly the
  // container series of its workloads that /metrics has; a node with none serves the families
  // alone; both pass promtool.
  for (const NodeMetrics which : {NodeMetrics::kCadvisor, NodeMetrics::kDcgm}) {
    const std::string own = RenderNodeMetrics(CollectNodeMetrics(c, "n1", kT0 + 10000), which);
    EXPECT_NE(own.find("pod=\"runs\""), std::string::npos) << own;
    EXPECT_EQ(own.find("pod=\"waits\""), std::string::npos) << own;
    EXPECT_NE(text.find(own), std::string::npos) << own;
    const std::string none = RenderNodeMetrics(CollectNodeMetrics(c, "gone", kT0 + 10000), which);
    EXPECT_EQ(none.find("pod="), std::string::npos) << none;
    std::ofstream(file) << own;
    check = arbiter::testing::RunCommand("promtool check metrics < " + file.string() + " 2>&1");
    EXPECT_EQ(check.rc, 0) << check.out;
  }
  // --pod-metrics nodes: /metrics without them, the rest unchanged.
  const std::string without = RenderMetrics(CollectMetrics(c, kT0 + 10000), j, false);
  EXPECT_EQ(without.find("container_cpu_usage_seconds_total"), std::string::npos);
  EXPECT_EQ(without.find("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), std::string::npos);
  EXPECT_EQ(text.rfind(without, 0), 0u);  // the same text up to the pods' usage series
  std::filesystem::remove(file);
}

// A pod's declared use (arbiter.dev/usage) is read once, when the pod is applied, not again on
// every scrape (a whole manifest load per running pod per scrape held the daemon's lock); it
// survives a snapshot and restore and follows an update of the annotation.
TEST(MetricsTest, DeclaredUsageIsKeptAcrossRestoreAndFollowsAnUpdate) {
  Cluster c("0000abcd");
  ASSERT_TRUE(c.Apply(CreateOf(kT0, fixtures::Namespace("default"))).ok());
  ASSERT_TRUE(c.Apply(CreateOf(kT0, fixtures::Node("n1", 2))).ok());
  Json pod = fixtures::PodIn("default", "runs", 1);
  pod["metadata"]["annotations"] = {{"arbiter.dev/usage", "cpu=250m"}};
  ASSERT_TRUE(c.Apply(CreateOf(kT0, pod)).ok());
  const std::string series =
      "container_cpu_usage_seconds_total{namespace=\"default\",pod=\"runs\",container=";
  auto cpu_seconds = [&](const Cluster& x) {
    const std::string text = RenderMetrics(x, JournalStats{}, kT0 + 10000);
    const size_t at = text.find(series);
    if (at == std::string::npos) return std::string("absent");
    const size_t end = text.find('\n', at);
    return text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1);
  };
  EXPECT_EQ(cpu_seconds(c), "2.5");  // 0.25 cores for 10 s, not the request
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  EXPECT_EQ(cpu_seconds(restored), "2.5");
  Mutation update = CreateOf(kT0 + 1000, *c.store().Get("Pod", "default", "runs"));
  update.op = Mutation::Op::kUpdate;
  update.name = "runs";
  update.object["metadata"]["annotations"]["arbiter.dev/usage"] = "cpu=500m";
  const MutationResult r = c.Apply(update);
  ASSERT_TRUE(r.ok()) << (r.error ? r.error->message : "");
  EXPECT_EQ(cpu_seconds(c), "5");
}

// Issue 11's metrics: engine events by type (a reclaim among them), the submission-to-first-bind
// wait histogram, and each ElasticQuota's min/max/used/borrowed/lent and fair share.
TEST(MetricsTest, EngineEventsWaitHistogramAndElasticQuotasPassPromtool) {
  using fixtures::Namespace;
  using fixtures::Node;
  using fixtures::PodIn;
  Cluster c("0000abcd");
  auto ok = [&c](Millis t, const Json& obj) {
    MutationResult r = c.Apply(CreateOf(t, obj));
    ASSERT_TRUE(r.ok()) << (r.error ? r.error->message : "") << obj.dump();
  };
  ok(kT0, Namespace("team-a"));
  ok(kT0, Namespace("team-b"));
  ok(kT0, Node("gpu-0", 4));
  for (const char* ns : {"team-a", "team-b"})
    ok(kT0, {{"apiVersion", "arbiter.dev/v1alpha1"},
             {"kind", "ElasticQuota"},
             {"metadata", {{"name", "q"}, {"namespace", ns}}},
             {"spec",
              {{"cohort", "pool"},
               {"min", {{"nvidia.com/gpu", 2}}},
               {"max", {{"nvidia.com/gpu", 4}}}}}});
  ok(kT0 + 1000, PodIn("team-b", "hog", 4));  // borrows team-a's idle 2 GPUs
  JournalStats j;
  const std::string borrowing = RenderMetrics(c, j, kT0 + 2000);
  auto has = [](const std::string& text, const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
  };
  const std::string b = "{namespace=\"team-b\",elasticquota=\"q\",cohort=\"pool\",resource=\"";
  const std::string a = "{namespace=\"team-a\",elasticquota=\"q\",cohort=\"pool\",resource=\"";
  EXPECT_TRUE(has(borrowing, "arbiter_elasticquota_min" + b + "nvidia.com/gpu\"} 2")) << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_elasticquota_max" + b + "nvidia.com/gpu\"} 4")) << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_elasticquota_used" + b + "nvidia.com/gpu\"} 4")) << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_elasticquota_borrowed" + b + "nvidia.com/gpu\"} 2"))
      << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_elasticquota_lent" + a + "nvidia.com/gpu\"} 2")) << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_fair_share{namespace=\"team-b\",cohort=\"pool\"} 0.5"))
      << borrowing;
  EXPECT_TRUE(has(borrowing, "arbiter_engine_events_total{event=\"Scheduled\"} 1")) << borrowing;
  // A bucket's bound as client_golang writes it: a query for le="0.1" matches it (it was written
  // "0.10000000000000001", which Prometheus 2.x matches as another text).
  EXPECT_TRUE(has(borrowing, "arbiter_pod_scheduling_wait_seconds_bucket{le=\"0.1\"} 1"))
      << borrowing;
  EXPECT_FALSE(has(borrowing, "le=\"0.10000")) << borrowing;

  // team-a claims its guarantee 60 s later: the borrower is reclaimed and team-a's pod binds
  // once the hog has gone, a wait of at least 60 s (above the 15 s bucket).
  ok(kT0 + 61000, PodIn("team-a", "mine", 2));
  ASSERT_TRUE(c.Apply(fixtures::Advance(kT0 + 200000)).ok());
  const std::string reclaimed = RenderMetrics(c, j, kT0 + 200000);
  EXPECT_TRUE(has(reclaimed, "arbiter_engine_events_total{event=\"Reclaimed\"} 1")) << reclaimed;
  EXPECT_TRUE(has(reclaimed, "arbiter_pod_scheduling_wait_seconds_count 2")) << reclaimed;
  EXPECT_TRUE(has(reclaimed, "arbiter_pod_scheduling_wait_seconds_bucket{le=\"15\"} 1"))
      << reclaimed;
  EXPECT_TRUE(has(reclaimed, "arbiter_pod_scheduling_wait_seconds_bucket{le=\"300\"} 2"))
      << reclaimed;
  const auto file = std::filesystem::temp_directory_path() /
                    ("arbiter-metrics-eq-" + std::to_string(getpid()) + ".txt");
  std::ofstream(file) << reclaimed;
  arbiter::testing::CommandOutput check =
      arbiter::testing::RunCommand("promtool check metrics < " + file.string() + " 2>&1");
  EXPECT_EQ(check.rc, 0) << check.out;
  std::filesystem::remove(file);
}

// Every value is written as printf's "%.17g" writes it (the text scrapers and the tests have always
// read), though it is made without printf: integers, fractions, the extremes, random bit patterns.
TEST(MetricsTest, NumbersAreWrittenAsPrintfWritesThem) {
  auto printf_text = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  std::vector<double> values = {0.0,
                                -0.0,
                                1.0,
                                0.1,
                                0.01,
                                2.5,
                                1e16,
                                1e17,
                                123456789012345678.0,
                                9007199254740993.0,
                                68719476736.0,
                                987654321012345.125,  // a tie at the 17th digit: to even
                                0.5,
                                2.675,
                                1e-7,
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::max(),
                                std::numeric_limits<double>::quiet_NaN()};
  std::mt19937_64 rng(27);
  for (int i = 0; i < 20000; ++i) {
    const uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isinf(v)) values.push_back(v);
    values.push_back(static_cast<double>(static_cast<int64_t>(rng() % 100000000000)) / 1000.0);
    values.push_back(static_cast<double>(rng() % 1000000) * 1000.0 / 3.0);
  }
  for (const double v : values) {
    char exact[64];
    std::snprintf(exact, sizeof exact, "%a", v);
    ASSERT_EQ(PrometheusNumber(v), printf_text(v)) << exact;
  }
  EXPECT_EQ(PrometheusNumber(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PrometheusNumber(-std::numeric_limits<double>::infinity()), "-Inf");
}

// GoNumber writes what Go's strconv.FormatFloat(v, 'g', -1, 64) writes (client_golang's values
// and bucket bounds): the shortest digits that read back, %e below 1e-4 and from 1e6 on.
TEST(MetricsTest, GoNumberIsGosShortestFormat) {
  const std::vector<std::pair<double, std::string>> cases = {
      {0, "0"},
      {1, "1"},
      {0.1, "0.1"},
      {0.005, "0.005"},
      {2.5, "2.5"},
      {10, "10"},
      {300, "300"},
      {0.0001, "0.0001"},
      {1e-05, "1e-05"},
      {123456, "123456"},
      {1234567, "1.234567e+06"},
      {1.0 / 3, "0.3333333333333333"},
      {-0.25, "-0.25"},
      {1e21, "1e+21"},
      {std::numeric_limits<double>::infinity(), "+Inf"}};
  for (const auto& [v, want] : cases) EXPECT_EQ(GoNumber(v), want) << v;
}

// Label values escape backslash, double quote and newline, and nothing else.
TEST(MetricsTest, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(PrometheusLabelValue("plain-value.1"), "plain-value.1");
  EXPECT_EQ(PrometheusLabelValue(""), "");
  EXPECT_EQ(PrometheusLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(PrometheusLabelValue("\n\n"), "\\n\\n");
  EXPECT_EQ(PrometheusLabelValue("tab\tstays"), "tab\tstays");
}

// The per-pod families, whole: every sample, in order, of a pending pod, a running one with GPUs
// and declared use, one without GPUs, one without requests (a BestEffort pod) and a finished one
// (its phase only, as kube-state-metrics shows every pod it lists). The text is
// made family by family, each a pass over the workloads with the pod's labels written once for
// the family's samples: a label dropped or moved, a family's samples interleaved, shows here.
TEST(MetricsTest, PerPodFamiliesAreWrittenWholeInOrder) {
  Cluster c("0000abcd");
  auto apply = [&](const Json& obj) {
    const auto r = c.Apply(CreateOf(kT0, obj));
    ASSERT_TRUE(r.ok()) << r.error->message;
  };
  apply({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}});
  apply({{"apiVersion", "v1"},
         {"kind", "Node"},
         {"metadata", {{"name", "n1"}, {"labels", {{"nvidia.com/gpu.product", "H100"}}}}},
         {"status", {{"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "2"}}}}}});
  auto pod = [](const std::string& name, const std::string& container, Json requests) {
    Json p{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", name}, {"namespace", "default"}}},
           {"spec", {{"containers", {{{"name", container}}}}}}};
    if (!requests.empty()) {
      p["spec"]["containers"][0]["resources"]["requests"] = requests;
      if (requests.contains("nvidia.com/gpu"))
        p["spec"]["containers"][0]["resources"]["limits"] = {
            {"nvidia.com/gpu", requests["nvidia.com/gpu"]}};
    }
    return p;
  };
  Json gpus = pod("gpus", "train", {{"cpu", "1500m"}, {"memory", "1Mi"}, {"nvidia.com/gpu", "2"}});
  gpus["metadata"]["annotations"] = {{"arbiter.dev/usage", "cpu=1,nvidia.com/gpu=1"}};
  apply(gpus);
  apply(pod("cpu", "web", {{"cpu", "250m"}}));
  apply(pod("besteffort", "idle", Json::object()));
  apply(pod("waits", "big", {{"cpu", "100"}}));
  Json done = pod("done", "once", {{"cpu", "100m"}});  // finished: in kube_pod_status_phase only
  done["metadata"]["annotations"] = {{"arbiter.dev/duration", "1s"}};
  apply(done);
  ASSERT_TRUE(c.Apply(fixtures::Advance(kT0 + 2000)).ok());
  ASSERT_EQ(c.store().Get("Pod", "default", "done")->at("status").value("phase", ""), "Succeeded");
  const std::string text = RenderMetrics(c, JournalStats{}, kT0 + 2500);
  const size_t from = text.find("# HELP kube_pod_status_phase");
  ASSERT_NE(from, std::string::npos) << text;
  EXPECT_EQ(text.substr(from),
            R"(# HELP kube_pod_status_phase The pod's phase (kube-state-metrics shape).
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{namespace="default",pod="gpus",phase="Pending"} 0
kube_pod_status_phase{namespace="default",pod="gpus",phase="Running"} 1
kube_pod_status_phase{namespace="default",pod="gpus",phase="Succeeded"} 0
kube_pod_status_phase{namespace="default",pod="gpus",phase="Failed"} 0
kube_pod_status_phase{namespace="default",pod="gpus",phase="Unknown"} 0
kube_pod_status_phase{namespace="default",pod="cpu",phase="Pending"} 0
kube_pod_status_phase{namespace="default",pod="cpu",phase="Running"} 1
kube_pod_status_phase{namespace="default",pod="cpu",phase="Succeeded"} 0
kube_pod_status_phase{namespace="default",pod="cpu",phase="Failed"} 0
kube_pod_status_phase{namespace="default",pod="cpu",phase="Unknown"} 0
kube_pod_status_phase{namespace="default",pod="besteffort",phase="Pending"} 0
kube_pod_status_phase{namespace="default",pod="besteffort",phase="Running"} 1
kube_pod_status_phase{namespace="default",pod="besteffort",phase="Succeeded"} 0
kube_pod_status_phase{namespace="default",pod="besteffort",phase="Failed"} 0
kube_pod_status_phase{namespace="default",pod="besteffort",phase="Unknown"} 0
kube_pod_status_phase{namespace="default",pod="waits",phase="Pending"} 1
kube_pod_status_phase{namespace="default",pod="waits",phase="Running"} 0
kube_pod_status_phase{namespace="default",pod="waits",phase="Succeeded"} 0
kube_pod_status_phase{namespace="default",pod="waits",phase="Failed"} 0
kube_pod_status_phase{namespace="default",pod="waits",phase="Unknown"} 0
kube_pod_status_phase{namespace="default",pod="done",phase="Pending"} 0
kube_pod_status_phase{namespace="default",pod="done",phase="Running"} 0
kube_pod_status_phase{namespace="default",pod="done",phase="Succeeded"} 1
kube_pod_status_phase{namespace="default",pod="done",phase="Failed"} 0
kube_pod_status_phase{namespace="default",pod="done",phase="Unknown"} 0
# HELP kube_pod_info The pod's node (kube-state-metrics shape).
# TYPE kube_pod_info gauge
kube_pod_info{namespace="default",pod="gpus",node="n1"} 1
kube_pod_info{namespace="default",pod="cpu",node="n1"} 1
kube_pod_info{namespace="default",pod="besteffort",node="n1"} 1
# HELP kube_pod_container_resource_requests The pod's requests (kube-state-metrics shape).
# TYPE kube_pod_container_resource_requests gauge
kube_pod_container_resource_requests{namespace="default",pod="gpus",container="train",node="n1",resource="cpu",unit="core"} 1.5
kube_pod_container_resource_requests{namespace="default",pod="gpus",container="train",node="n1",resource="memory",unit="byte"} 1048576
kube_pod_container_resource_requests{namespace="default",pod="gpus",container="train",node="n1",resource="nvidia.com/gpu",unit="integer"} 2
kube_pod_container_resource_requests{namespace="default",pod="cpu",container="web",node="n1",resource="cpu",unit="core"} 0.25
# HELP container_cpu_usage_seconds_total Virtual CPU use over the current run (cAdvisor shape).
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{namespace="default",pod="gpus",container="train"} 2.5
container_cpu_usage_seconds_total{namespace="default",pod="cpu",container="web"} 0.625
container_cpu_usage_seconds_total{namespace="default",pod="besteffort",container="idle"} 0
# HELP container_memory_working_set_bytes Virtual memory use (cAdvisor shape).
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{namespace="default",pod="gpus",container="train"} 0
container_memory_working_set_bytes{namespace="default",pod="cpu",container="web"} 0
container_memory_working_set_bytes{namespace="default",pod="besteffort",container="idle"} 0
# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Virtual GPU activity per GPU (dcgm-exporter shape).
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace="default",pod="gpus",container="train",gpu="0",GPU_I_PROFILE=""} 0.5
DCGM_FI_PROF_GR_ENGINE_ACTIVE{namespace="default",pod="gpus",container="train",gpu="1",GPU_I_PROFILE=""} 0.5
)");
}

}  // namespace metrics_test
}  // namespace arbiter::server
