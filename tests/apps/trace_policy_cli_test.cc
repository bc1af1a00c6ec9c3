// `arbiter sim --nodes --pods --tenants N --policy-file FILE` (issue 9): the trace replays under
// the policy objects and the run's SimulationReport joins the trace's text, JSON ("policyRun") and
// HTML; bad policy files and flags are refused. Also: placement policy names are one table, so
// `--policy least-allocated` works with -f as with a trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_command.h"

namespace trace_policy_cli_test {

namespace fs = std::filesystem;

const std::string kSrc = ARBITER_SOURCE_DIR;
const std::string kTrace = " --nodes " + kSrc + "/data/openb/openb_node_list_gpu_node.csv --pods " +
                           kSrc + "/data/openb/openb_pod_list_default.csv";

arbiter::testing::CommandOutput Arbiter(const std::string& args) {
  return arbiter::testing::RunCommand(std::string(ARBITER_BINARY) + " " + args + " 2>&1");
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TracePolicyCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("arbiter-tracepolicy-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

TEST_F(TracePolicyCli, SaturateUnderAPolicyFileReportsTheRun) {
  auto r = Arbiter("sim -q" + kTrace + " --mode saturate --tenants 4 --policy-file " + kSrc +
                   "/examples/trace-policy.yaml --report-json " + P("r.json") + " --report-html " +
                   P("r.html"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("Trace saturate run: policy fgd"), std::string::npos)
      << r.out;  // the PoolPolicy's
  EXPECT_NE(r.out.find("Under policy file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("preemptions: "), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(ReadFile(P("r.json")));
  EXPECT_EQ(j["kind"], "TraceSaturate");
  EXPECT_EQ(j["policyRun"]["kind"], "SimulationReport");
  EXPECT_GT(j["policyRun"]["summary"]["preemptions"].get<int>(), 0);
  size_t quota_events = 0;
  for (const auto& e : j["policyRun"]["events"])
    quota_events +=
        e["type"] == "QuotaExceeded" &&
        e["workload"].get<std::string>().rfind("tenant-3/", 0) == 0 &&
        e["message"].get<std::string>().find("exceeded quota: pods,") != std::string::npos;
  EXPECT_GT(quota_events, 0u);
  const std::string html = ReadFile(P("r.html"));
  EXPECT_NE(html.find("Under the policy file"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

TEST_F(TracePolicyCli, PolicyOverridesThePolicyFilesPlacement) {
  auto r =
      Arbiter("sim -q" + kTrace + " --mode saturate --tenants 4 --policy bestfit --policy-file " +
              kSrc + "/examples/trace-policy.yaml");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("policy bestfit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(placement BestFit,"), std::string::npos) << r.out;
}

TEST_F(TracePolicyCli, RefusesBadPolicyFilesAndFlags) {
  auto nodes = Arbiter("sim -q" + kTrace + " --policy-file " + kSrc + "/examples/pool.yaml");
  EXPECT_EQ(nodes.rc, 1);
  EXPECT_NE(nodes.out.find("a policy file holds policy objects only"), std::string::npos)
      << nodes.out;
  std::ofstream(P("bad.yaml"))
      << "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: p}\n"
         "spec: {placement: {policy: Fastest}}\n";
  auto bad = Arbiter("sim -q" + kTrace + " --policy-file " + P("bad.yaml"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("unknown value \"Fastest\""), std::string::npos) << bad.out;
  auto unsched = Arbiter("sim -q" + kTrace + " --unschedulable later");
  EXPECT_EQ(unsched.rc, 2);
  EXPECT_NE(unsched.out.find("expected drop or wait"), std::string::npos) << unsched.out;
}

TEST(PolicyNamesCli, LeastAllocatedWorksWithManifestsAndTraces) {
  auto f = Arbiter("sim -q -f " + kSrc + "/examples/pool.yaml --policy least-allocated --until 1h");
  ASSERT_EQ(f.rc, 0) << f.out;
  EXPECT_NE(f.out.find("(placement LeastAllocated,"), std::string::npos) << f.out;
  auto t = Arbiter("sim -q" + kTrace + " --mode saturate --policy least-allocated");
  ASSERT_EQ(t.rc, 0) << t.out;
  EXPECT_NE(t.out.find("policy leastallocated"), std::string::npos) << t.out;
  auto unknown = Arbiter("sim -q -f " + kSrc + "/examples/pool.yaml --policy fastest");
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_NE(
      unknown.out.find(
          "unknown placement policy 'fastest' (expected bestfit, leastallocated, fgd, packing, "
          "dotproduct or random)"),
      std::string::npos)
      << unknown.out;
}

}  // namespace trace_policy_cli_test
