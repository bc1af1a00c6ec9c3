// /metrics' process and request families (process_metrics.h; issue 27): the exposition text
// parsed back, values plausible and monotonic, kube-apiserver's names, labels and buckets, and
// the families served by the daemon after real requests.
#include "server/metrics/process_metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "apps/run_command.h"
#include "server/daemon.h"
#include "server/http/http_api.h"

namespace arbiter::server {
namespace process_metrics_test {

// Each sample line of the exposition text ("name{labels}" -> value); every family has HELP/TYPE.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TEST(ProcessMetrics, ReadFromProcSelfPlausibleAndMonotonic) {
  const std::string text = RenderProcessMetrics();
  for (const char* family :
       {"process_cpu_seconds_total counter", "process_resident_memory_bytes gauge",
        "process_start_time_seconds gauge", "process_open_fds gauge"})
    EXPECT_NE(text.find(std::string("# TYPE ") + family), std::string::npos) << family;
  auto a = Samples(text);
  EXPECT_GT(a["process_resident_memory_bytes"], 1 << 20);
  EXPECT_GE(a["process_virtual_memory_bytes"], a["process_resident_memory_bytes"]);
  EXPECT_GE(a["process_open_fds"], 3);  // stdin, stdout, stderr
  EXPECT_LE(a["process_open_fds"], a["process_max_fds"]);
  EXPECT_LE(a["process_start_time_seconds"], Now() + 1);
  EXPECT_GT(a["process_start_time_seconds"], Now() - 86400);  // a test run is under a day
  volatile double x = 0;                                      // some CPU, then the counter again
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (std::chrono::steady_clock::now() < until) x = x + 1;
  auto b = Samples(RenderProcessMetrics());
  EXPECT_GE(b["process_cpu_seconds_total"], a["process_cpu_seconds_total"]);
  EXPECT_GT(b["process_cpu_seconds_total"], 0);
  EXPECT_EQ(b["process_start_time_seconds"], a["process_start_time_seconds"]);
  EXPECT_GE(b["process_open_fds"], a["process_open_fds"] - 1);
}

// kube-apiserver's label set (endpoints/metrics MonitorRequest) for each kind of request.
TEST(RequestMetrics, LabelsAreKubeApiserversFullSet) {
  auto labels = [](const std::string& method, const std::string& path, const std::string& verb,
                   const std::string& ns, const std::string& name, std::string sub = "",
                   std::string group = "") {
    RequestFacts f{method, path, "", {}, true, verb, group, "pods", sub, ns, name};
    if (group == "batch") f.resource = "jobs";
    return KubeRequestLabels(f);
  };
  const RequestLabels list = labels("GET", "/api/v1/namespaces/a/pods", "list", "a", "");
  EXPECT_EQ(list.verb, "LIST");
  EXPECT_EQ(list.version, "v1");
  EXPECT_EQ(list.scope, "namespace");
  EXPECT_EQ(list.component, "apiserver");
  EXPECT_EQ(labels("GET", "/api/v1/pods", "list", "", "").scope, "cluster");
  EXPECT_EQ(labels("GET", "/api/v1/namespaces/a/pods/p", "get", "a", "p").scope, "resource");
  EXPECT_EQ(labels("POST", "/api/v1/namespaces/a/pods", "create", "a", "").scope, "resource");
  EXPECT_EQ(labels("GET", "/api/v1/namespaces/a/pods", "watch", "a", "").verb, "WATCH");
  const RequestLabels job = labels("PUT", "/apis/batch/v1/namespaces/a/jobs/j/status", "update",
                                   "a", "j", "status", "batch");
  EXPECT_EQ(job.group, "batch");
  EXPECT_EQ(job.version, "v1");
  EXPECT_EQ(job.subresource, "status");
  EXPECT_EQ(job.verb, "PUT");
  EXPECT_EQ(labels("POST", "/api/v1/namespaces/a/pods/p/exec", "create", "a", "p", "exec").verb,
            "CONNECT");
  RequestFacts apply{"PATCH",
                     "/api/v1/namespaces/a/pods/p",
                     "application/apply-patch+yaml",
                     {},
                     true,
                     "patch",
                     "",
                     "pods",
                     "",
                     "a",
                     "p"};
  EXPECT_EQ(KubeRequestLabels(apply).verb, "APPLY");
  apply.dry_run = {"All", "All"};
  EXPECT_EQ(KubeRequestLabels(apply).dry_run, "All");
  apply.dry_run = {"Some"};
  EXPECT_EQ(KubeRequestLabels(apply).dry_run, "invalid");
  const RequestLabels health =
      KubeRequestLabels({"GET", "/healthz", "", {}, false, "get", "", "", "", "", ""});
  EXPECT_EQ(health.verb, "GET");
  EXPECT_EQ(health.subresource, "/healthz");
  EXPECT_EQ(health.component, "");
  EXPECT_EQ(health.scope, "");
}

TEST(RequestMetrics, CountsByLabelsAndCodeAndLatencyInKubeApiserverBuckets) {
  EXPECT_EQ(RequestDurationBuckets().front(), 0.005);
  EXPECT_EQ(RequestDurationBuckets().back(), 60);
  EXPECT_EQ(RequestDurationBuckets().size(), 23u);
  RequestMetrics m;
  auto pods = [](const std::string& verb) {
    return RequestLabels{verb, "", "", "v1", "pods", "", "namespace", "apiserver"};
  };
  m.Observe(pods("GET"), 200, 0.001);
  m.Observe(pods("LIST"), 200, 0.03);
  m.Observe(pods("LIST"), 200, 0.3);
  m.Observe(pods("POST"), 201, 0.002);
  m.Observe(pods("POST"), 409, 0.002);
  m.Observe(pods("WATCH"), 200, 30);  // counted, not a latency
  m.Observe(RequestLabels{"GET", "", "", "", "", "", "", ""}, 200,
            100);  // a non-resource path past the last bucket
  const std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE apiserver_request_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE apiserver_request_duration_seconds histogram"), std::string::npos);
  auto s = Samples(text);
  auto with = [](const std::string& verb) {
    return "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=\"namespace\","
           "subresource=\"\",verb=\"" +
           verb + "\",version=\"v1\"";
  };
  EXPECT_EQ((s["apiserver_request_total{code=\"200\"," + with("LIST") + "}"]), 2);
  EXPECT_EQ((s["apiserver_request_total{code=\"201\"," + with("POST") + "}"]), 1);
  EXPECT_EQ((s["apiserver_request_total{code=\"409\"," + with("POST") + "}"]), 1);
  EXPECT_EQ((s["apiserver_request_total{code=\"200\"," + with("WATCH") + "}"]), 1);
  EXPECT_EQ(text.find(with("WATCH") + ",le="), std::string::npos);
  EXPECT_EQ(text.find("_count{" + with("WATCH") + "}"), std::string::npos);
  const std::string list = "apiserver_request_duration_seconds_bucket{" + with("LIST") + ",le=";
  EXPECT_EQ(s[list + "\"0.025\"}"], 0);
  EXPECT_EQ(s[list + "\"0.05\"}"], 1);
  EXPECT_EQ(s[list + "\"0.4\"}"], 2);
  EXPECT_EQ(s[list + "\"+Inf\"}"], 2);
  EXPECT_EQ((s["apiserver_request_duration_seconds_count{" + with("LIST") + "}"]), 2);
  EXPECT_NEAR((s["apiserver_request_duration_seconds_sum{" + with("LIST") + "}"]), 0.33, 1e-9);
  const std::string none =
      "component=\"\",dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"\","
      "verb=\"GET\",version=\"\"";
  EXPECT_EQ((s["apiserver_request_duration_seconds_bucket{" + none + ",le=\"60\"}"]), 0);
  EXPECT_EQ((s["apiserver_request_duration_seconds_bucket{" + none + ",le=\"+Inf\"}"]), 1);
  // Buckets cumulative: never decreasing along le.
  double last = -1;
  for (double le : RequestDurationBuckets()) {
    std::ostringstream key;
    key << list << "\"" << le << "\"}";
    ASSERT_TRUE(s.count(key.str())) << key.str();
    EXPECT_GE(s[key.str()], last);
    last = s[key.str()];
  }
}

TEST(RequestMetrics, TheDaemonServesThemAfterRequests) {
  auto dir = std::filesystem::temp_directory_path() /
             ("arbiter-process-metrics-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto d = Daemon::Open({dir.string(), nullptr, 0, false});
  ASSERT_TRUE(d.ok()) << d.message();
  std::unique_ptr<Daemon> daemon = std::move(d).value();
  {
    ApiServer api(*daemon, ApiOptions{});
    const int port = api.Bind("127.0.0.1", 0).value();
    std::thread thread([&] { api.Run(); });
    httplib::Client cli("127.0.0.1", port);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(cli.Get("/api/v1/namespaces/default/pods"));
    ASSERT_TRUE(cli.Get("/api/v1/namespaces/default/pods/nope"));
    auto first = cli.Get("/metrics");
    ASSERT_TRUE(first);
    auto a = Samples(first->body);
    const std::string pods =
        "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"pods\",scope=";
    EXPECT_EQ((a["apiserver_request_total{code=\"200\"," + pods +
                 "\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"}"]),
              3);
    EXPECT_EQ((a["apiserver_request_total{code=\"404\"," + pods +
                 "\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"}"]),
              1);
    EXPECT_EQ((a["apiserver_request_duration_seconds_count{" + pods +
                 "\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"}"]),
              3);
    EXPECT_GT(a["process_resident_memory_bytes"], 0);
    auto second = cli.Get("/metrics");
    ASSERT_TRUE(second);
    auto b = Samples(second->body);  // the first scrape is counted by now
    const auto file =
        dir.parent_path() / ("arbiter-process-metrics-" + std::to_string(getpid()) + ".txt");
    std::ofstream(file) << second->body;  // the whole page, as Prometheus would read it
    const testing::CommandOutput check =
        testing::RunCommand("promtool check metrics < " + file.string() + " 2>&1");
    std::filesystem::remove(file);
    EXPECT_EQ(check.rc, 0) << check.out;
    EXPECT_EQ((b["apiserver_request_total{code=\"200\",component=\"\",dry_run=\"\",group=\"\","
                 "resource=\"\",scope=\"\",subresource=\"\",verb=\"GET\",version=\"\"}"]),
              1);
    EXPECT_GE(b["process_cpu_seconds_total"], a["process_cpu_seconds_total"]);
    api.Stop();
    thread.join();
  }
  daemon->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace process_metrics_test
}  // namespace arbiter::server
