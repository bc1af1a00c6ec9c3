// /metrics: Prometheus text that promtool accepts, with the series `arbiter meter` reads.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "apps/run_command.h"
#include "cluster_fixtures.h"

namespace arbiter::server {
namespace {

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
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace arbiter::server
