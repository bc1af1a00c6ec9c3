// End to end (issue 12): `arbiter serve` runs virtual pods with known usage -> the real
// Prometheus of the CTest fixture scrapes the daemon's /metrics every second (file_sd target in
// ARBITER_PROMETHEUS_TARGETS, scripts/services/prometheus/prometheus.yml) -> `arbiter meter` ->
// `arbiter invoice`, compared with `arbiter sim` of the same manifests (docs/metering-live.md,
// "End to end"). The daemon's clock is real, so the pods run for 10-25 s of wall time. The
// daemon's own meter job (--meter-prometheus, open hours every 2 s) meters the same into its
// --ledger: its invoices must be the command's, byte for byte.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "adapters/prometheus/prometheus_client.h"
#include "core/billing/metering.h"
#include "core/duration.h"
#include "integration/services.h"
#include "server/serve_process.h"

namespace arbiter {
namespace prometheus_serve_e2e_test {

using testing::Arbiter;
using testing::PrometheusTargetsDir;
using testing::PrometheusUrl;
using testing::RunCommandSplit;
using testing::Scratch;

// One GPU node; e2e-a (Max mode): train holds the GPU for 20 s, next waits for it and runs 10 s;
// e2e-b (Usage mode): web runs 25 s. The PoolPolicy gives `arbiter sim` the metering step of
// `arbiter meter` below (2 s); prices are per unit-hour, so 3600 makes 1 per GPU-second (the
// node's GPU model, which the meter reads from kube_node_labels, costs 2 per GPU-second).
const char* kWorkload = R"(apiVersion: v1
kind: Namespace
metadata: {name: e2e-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: e2e-b}
---
apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: e2e}
spec:
  currency: EUR
  effectiveFrom: "2026-01-01T00:00:00Z"
  mode: Max
  prices: {cpu: "360", memory: "36", nvidia.com/gpu: "3600"}
  gpuModels: {NVIDIA-H100-80GB-HBM3: "7200"}
  namespaceModes: {e2e-b: Usage}
---
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: default}
spec:
  metering: {scrapeInterval: 2s}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
status:
  capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "1", pods: "110"}
---
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: e2e-a
  annotations: {arbiter.dev/duration: 20s, arbiter.dev/usage: "cpu=2,memory=4Gi,nvidia.com/gpu=1"}
spec:
  containers:
  - name: main
    resources:
      requests: {cpu: "4", memory: 8Gi, nvidia.com/gpu: "1"}
      limits: {nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Pod
metadata:
  name: next
  namespace: e2e-a
  annotations: {arbiter.dev/duration: 10s, arbiter.dev/usage: "cpu=1,nvidia.com/gpu=0.5"}
spec:
  containers:
  - name: main
    resources:
      requests: {cpu: "1", nvidia.com/gpu: "1"}
      limits: {nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: e2e-b
  annotations: {arbiter.dev/duration: 25s, arbiter.dev/usage: "cpu=1500m,memory=1Gi"}
spec:
  containers:
  - name: main
    resources:
      requests: {cpu: "2", memory: 2Gi}
)";

// Per namespace and resource: the sum over its pods of the requests and of the usage (cores,
// GiB, GPUs), for the error bounds.
struct Rates {
  double request, usage;
};
const std::map<std::pair<std::string, std::string>, Rates> kRatesOf = {
    {{"e2e-a", "cpu"}, {4 + 1, 2 + 1}},      {{"e2e-a", "memory"}, {8, 4}},
    {{"e2e-a", "nvidia.com/gpu"}, {2, 1.5}}, {{"e2e-b", "cpu"}, {2, 1.5}},
    {{"e2e-b", "memory"}, {2, 1}},
};

constexpr double kStep = 2;    // S: the metering step (PrometheusMetering and PoolPolicy)
constexpr double kScrape = 1;  // I: Prometheus' scrape interval of the daemon

Millis WallNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Line {
  double request = 0, usage = 0, billed = 0, amount = 0, unit_price = 0;
  std::string mode, gpu_model;
};
// Invoice lines summed by (namespace, resource); the idle invoice of a simulation is left out.
// Namespaces are named e2e-a-PID, e2e-b-PID (a Prometheus of earlier runs may hold e2e-a-...);
// the keys drop the suffix. Other namespaces are left out.
std::map<std::pair<std::string, std::string>, Line> Lines(const std::string& json,
                                                          const std::string& suffix) {
  std::map<std::pair<std::string, std::string>, Line> out;
  for (const auto& inv : nlohmann::json::parse(json)) {
    const std::string ns = inv["namespace"];
    if (ns.size() <= suffix.size() || ns.substr(ns.size() - suffix.size()) != suffix) continue;
    for (const auto& l : inv["lines"]) {
      Line& x = out[{ns.substr(0, ns.size() - suffix.size()), l["resource"]}];
      x.request += std::stod(l["requestQuantity"].get<std::string>());
      x.usage += std::stod(l["usageQuantity"].get<std::string>());
      x.billed += std::stod(l["billedQuantity"].get<std::string>());
      x.amount += std::stod(l["amount"].get<std::string>());
      x.unit_price = std::stod(l["unitPrice"].get<std::string>());
      x.mode = l["mode"];
      x.gpu_model = l.value("gpuModel", "");
    }
  }
  return out;
}

// Removes the file_sd target file when the test ends, so Prometheus stops scraping the daemon.
struct TargetFile {
  std::filesystem::path path;
  ~TargetFile() { std::filesystem::remove(path); }
};

// The bound (docs/metering-live.md, "End to end"): a pod running [a, b) is seen Running at a grid
// point t when the newest scrape at or before t was in [a, b); its metered run starts in
// [a, a + S + I) and ends in [b, b + S + I), so its request track and its gauges (memory, GPU)
// are off by less than (S + I) x request (or usage) per pod. The CPU counter is billed between
// the first and the last grid sample of the run, in both the simulation and the meter: less
// than 2 (S + I) x usage apart. Billed quantities follow their track (Max: both); amounts are
// billed x unit price / 3600, plus one rounding unit per line.
TEST(PrometheusServeEndToEnd, MeteredInvoicesOfServedPodsAgreeWithSimWithinTheScrapeGranularity) {
  auto dir = Scratch("serve-e2e");
  const std::string suffix = "-" + std::to_string(getpid());
  std::string text = kWorkload;
  for (const std::string ns : {"e2e-a", "e2e-b"})
    for (size_t at = 0; (at = text.find(ns, at)) != std::string::npos; at += ns.size() + 1)
      text.insert(at + ns.size(), suffix);
  std::ofstream(dir / "workload.yaml") << text;
  const std::string workload = (dir / "workload.yaml").string();

  // The simulation of the same manifests.
  auto sim = RunCommandSplit(
      Arbiter() + " sim -f " + workload + " --ledger " + (dir / "sim.db").string(), dir);
  ASSERT_EQ(sim.rc, 0) << sim.out << sim.err;
  auto sim_inv =
      RunCommandSplit(Arbiter() + " invoice --db " + (dir / "sim.db").string() + " -o json", dir);
  ASSERT_EQ(sim_inv.rc, 0) << sim_inv.err;

  // The daemon, scraped by the fixture's Prometheus, with its meter job (PriceBook: the one
  // applied with the pods; the open hours metered every 2 s; the default delay of 5 minutes keeps
  // an hour that ends during the test open, so it is metered again once all data is in).
  std::ofstream(dir / "job-metering.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n"
         "  scrapeInterval: 2s\n";
  const std::string job_db = (dir / "job.db").string();
  testing::ServeProcess serve(
      dir / "serve", {"--ledger", job_db, "--meter-prometheus", PrometheusUrl(), "--meter-every",
                      "2s", "--meter-config", (dir / "job-metering.yaml").string()});
  ASSERT_TRUE(serve.Start()) << serve.log();
  auto client = prometheus::Client::Create(PrometheusUrl(), {});
  ASSERT_TRUE(client.ok()) << client.message();
  std::filesystem::create_directories(PrometheusTargetsDir());
  TargetFile target{PrometheusTargetsDir() / ("serve-e2e-" + std::to_string(getpid()) + ".json")};
  const std::string instance = "127.0.0.1:" + std::to_string(serve.port());
  std::ofstream(target.path) << "[{\"targets\": [\"" << instance << "\"]}]\n";
  // Prometheus' discovery sends new targets every 5 s: wait (deadline 60 s) until it has scraped
  // the daemon, so that no pod starts unseen.
  auto newest_scrape = [&]() -> std::optional<double> {
    auto r = (*client)->Query("timestamp(up{instance=\"" + instance + "\"} == 1)", WallNow());
    if (!r.ok() || r->empty()) return std::nullopt;
    return std::stod(r->front().samples.at(0).value);
  };
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !newest_scrape() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(newest_scrape()) << "Prometheus at " << PrometheusUrl() << " never scraped "
                               << instance << " (target file " << target.path << ")";

  const Millis started = WallNow();
  auto apply = serve.Kubectl("apply -f " + workload);
  ASSERT_EQ(apply.rc, 0) << apply.out;
  auto done = serve.KubectlUntil("get pods -A --no-headers -o custom-columns=P:.status.phase",
                                 "Succeeded\nSucceeded\nSucceeded", 90);
  ASSERT_NE(done.out.find("Succeeded\nSucceeded\nSucceeded"), std::string::npos) << done.out;
  const Millis finished = WallNow();
  // Every pod's end is in Prometheus once it has scraped S + I after the last pod ended.
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline;) {
    auto t = newest_scrape();
    if (t && *t * 1000 >= static_cast<double>(finished) + (kStep + kScrape) * 1000) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // The job's runs that start from now on see everything: wait for two more (deadline 60 s).
  auto job_runs = [&] {  // "meter" log lines of runs that succeeded
    size_t n = 0;
    std::istringstream log(serve.log());
    for (std::string line; std::getline(log, line);)
      n += line.find("\"msg\":\"meter\"") != std::string::npos &&
           line.find("\"error\"") == std::string::npos;
    return n;
  };
  const size_t runs_before = job_runs();
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       job_runs() < runs_before + 2 && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GE(job_runs(), runs_before + 2) << serve.log();
  EXPECT_EQ(serve.Stop(), 0);

  // Meter the hours the run touched (the last one partial) and print the invoices.
  const Millis from = started / billing::kHourMs * billing::kHourMs;
  const Millis to = (finished / billing::kHourMs + 1) * billing::kHourMs;
  const std::string db = (dir / "meter.db").string();
  // Only this daemon's series (an earlier run in the same hour used the same pod names).
  std::ofstream(dir / "metering.yaml")
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PrometheusMetering\nspec:\n"
         "  scrapeInterval: 2s\n  selector: 'instance=\""
      << instance << "\"'\n";
  auto m = RunCommandSplit(Arbiter() + " meter -q --prometheus " + PrometheusUrl() + " --from " +
                               FormatRfc3339(from) + " --to " + FormatRfc3339(to) + " --db " + db +
                               " -f " + workload + " --config " + (dir / "metering.yaml").string(),
                           dir);
  ASSERT_EQ(m.rc, 0) << m.out << m.err;
  std::cout << m.out;
  EXPECT_NE(m.out.find(": 3 pods, 3 run segments, "), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("0 counter resets"), std::string::npos) << m.out;
  auto meter_inv = RunCommandSplit(Arbiter() + " invoice --db " + db + " -o json", dir);
  ASSERT_EQ(meter_inv.rc, 0) << meter_inv.err;

  const auto want = Lines(sim_inv.out, suffix), got = Lines(meter_inv.out, suffix);
  const auto& kRates = kRatesOf;
  ASSERT_EQ(want.size(), kRates.size()) << sim_inv.out;
  ASSERT_EQ(got.size(), kRates.size()) << meter_inv.out;
  std::map<std::string, double> total_bound, total_want, total_got;
  for (const auto& [key, rate] : kRates) {
    ASSERT_TRUE(want.count(key) && got.count(key)) << key.first << " " << key.second;
    const Line& w = want.at(key);
    const Line& g = got.at(key);
    const std::string what = key.first + " " + key.second;
    const double request_bound = (kStep + kScrape) * rate.request;
    const double usage_bound = (key.second == "cpu" ? 2 : 1) * (kStep + kScrape) * rate.usage;
    const double billed_bound = w.mode == "Usage"     ? usage_bound
                                : w.mode == "Request" ? request_bound
                                                      : request_bound + usage_bound;
    const double amount_bound = billed_bound * w.unit_price / 3600 + 1e-6;
    std::cout << what << ": request " << g.request << " (sim " << w.request << ", bound "
              << request_bound << "), usage " << g.usage << " (sim " << w.usage << ", bound "
              << usage_bound << "), amount " << g.amount << " (sim " << w.amount << ", bound "
              << amount_bound << ")\n";
    EXPECT_EQ(g.mode, w.mode) << what;
    EXPECT_EQ(g.gpu_model, w.gpu_model) << what;  // from kube_node_labels
    EXPECT_GT(w.request, 0) << what;
    EXPECT_GT(w.usage, 0) << what;
    EXPECT_NEAR(g.request, w.request, request_bound) << what;
    EXPECT_NEAR(g.usage, w.usage, usage_bound) << what;
    EXPECT_NEAR(g.billed, w.billed, billed_bound) << what;
    EXPECT_NEAR(g.amount, w.amount, amount_bound) << what;
    total_bound[key.first] += amount_bound;
    total_want[key.first] += w.amount;
    total_got[key.first] += g.amount;
  }
  for (const auto& [ns, bound] : total_bound) {
    std::cout << ns << " total " << total_got[ns] << " (sim " << total_want[ns] << ", bound "
              << bound << ")\n";
    EXPECT_NEAR(total_got[ns], total_want[ns], bound) << ns;
  }

  // The daemon's meter job wrote the same invoices (other namespaces of the fixture's Prometheus
  // left out: the job meters all it scrapes).
  auto ours = [&](const std::string& csv) {
    std::string out;
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);)
      if (line.find(suffix + ",") != std::string::npos) out += line + "\n";
    return out;
  };
  auto job_csv = RunCommandSplit(Arbiter() + " invoice --db " + job_db + " -o csv", dir);
  auto cli_csv = RunCommandSplit(Arbiter() + " invoice --db " + db + " -o csv", dir);
  ASSERT_EQ(job_csv.rc, 0) << job_csv.err;
  EXPECT_EQ(ours(cli_csv.out).size(), cli_csv.out.size() - cli_csv.out.find('\n') - 1);
  EXPECT_GT(ours(cli_csv.out).size(), 100u);
  EXPECT_EQ(ours(job_csv.out), ours(cli_csv.out));
}

}  // namespace prometheus_serve_e2e_test
}  // namespace arbiter
