// Trace replay with checkpoints and the LeastLostWork victim order (issue 29): the flags
// --checkpoint-interval / --shutdown-time, the report's victim order and lost GPU-seconds by
// tenant, and bench/lost_work.sh's setup on its first slice (every 100th openb node).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_command.h"

namespace lost_work_cli_test {

namespace fs = std::filesystem;

const std::string kSrc = ARBITER_SOURCE_DIR;
const std::string kPods = kSrc + "/data/openb/openb_pod_list_default.csv";

arbiter::testing::CommandOutput Arbiter(const std::string& args) {
  return arbiter::testing::RunCommand(std::string(ARBITER_BINARY) + " " + args + " 2>&1");
}

class LostWorkCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("arbiter-lostwork-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    // bench/lost_work.sh's pool: the header and every 100th node of openb's node list.
    std::ifstream in(kSrc + "/data/openb/openb_node_list_gpu_node.csv");
    std::ofstream out(P("nodes.csv"));
    std::string line;
    for (int row = -1; std::getline(in, line); ++row)
      if (row < 0 || row % 100 == 0) out << line << "\n";
    std::ifstream policy(kSrc + "/bench/lost_work_policy.yaml");
    std::stringstream text;
    text << policy.rdbuf();
    std::string llw = text.str();
    const std::string mode = "    mode: Requeue\n";
    const size_t at = llw.find(mode);
    EXPECT_NE(at, std::string::npos);
    llw.insert(at + mode.size(), "    victimOrder: LeastLostWork\n");
    std::ofstream(P("llw.yaml")) << llw;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& n) const { return (dir_ / n).string(); }
  nlohmann::json Run(const std::string& policy, const std::string& json) {
    auto r = Arbiter("sim -q --nodes " + P("nodes.csv") + " --pods " + kPods +
                     " --mode timeline --tenants 4 --policy-file " + policy +
                     " --checkpoint-interval 30m --shutdown-time 2m --report-json " + P(json));
    EXPECT_EQ(r.rc, 0) << r.out;
    std::ifstream f(P(json));
    return nlohmann::json::parse(f)["policyRun"];
  }
  fs::path dir_;
};

TEST_F(LostWorkCli, BadCheckpointFlagsAreUsageErrors) {
  const std::string trace = " --nodes " + P("nodes.csv") + " --pods " + kPods;
  auto bad = Arbiter("sim -q" + trace + " --checkpoint-interval soon");
  EXPECT_EQ(bad.rc, 2) << bad.out;
  EXPECT_NE(bad.out.find("--checkpoint-interval: expected a duration"), std::string::npos)
      << bad.out;
  auto zero = Arbiter("sim -q" + trace + " --checkpoint-interval 0s");
  EXPECT_EQ(zero.rc, 2) << zero.out;
  auto alone = Arbiter("sim -q" + trace + " --shutdown-time 2m");
  EXPECT_EQ(alone.rc, 2) << alone.out;
  EXPECT_NE(alone.out.find("--shutdown-time needs --checkpoint-interval"), std::string::npos)
      << alone.out;
}

// The same trace, the same seed, the two orders: the report names each, its lost GPU-seconds by
// tenant add up to the total, and LeastLostWork loses less with no more preemptions.
TEST_F(LostWorkCli, LeastLostWorkLosesLessOnTheBenchSlice) {
  const nlohmann::json k8s = Run(kSrc + "/bench/lost_work_policy.yaml", "k8s.json");
  const nlohmann::json llw = Run(P("llw.yaml"), "llw.json");
  EXPECT_EQ(k8s["pool"]["victimOrder"], "Kubernetes");
  EXPECT_EQ(llw["pool"]["victimOrder"], "LeastLostWork");
  auto lost = [](const nlohmann::json& r) {
    return std::stod(r["summary"]["gpuSecondsLostToPreemption"].get<std::string>());
  };
  for (const auto* r : {&k8s, &llw}) {
    double sum = 0;
    size_t victims = 0;
    for (const auto& t : (*r)["summary"]["gpuSecondsLostToPreemptionByNamespace"]) {
      sum += std::stod(t["gpuSecondsLost"].get<std::string>());
      victims += t["preempted"].get<size_t>();
    }
    EXPECT_EQ((*r)["summary"]["gpuSecondsLostToPreemptionByNamespace"].size(), 4u);
    EXPECT_NEAR(sum, lost(*r), 0.01);
    EXPECT_EQ(victims, (*r)["summary"]["preemptions"].get<size_t>() +
                           (*r)["summary"]["reclaims"].get<size_t>());
    EXPECT_GT((*r)["summary"]["preemptors"]["workloads"].get<size_t>(), 0u);
  }
  EXPECT_GT(lost(k8s), 0);
  EXPECT_LT(lost(llw), lost(k8s) * 0.7) << "at least 30 % less";
  EXPECT_LE(llw["summary"]["preemptions"].get<size_t>(),
            k8s["summary"]["preemptions"].get<size_t>());
}

}  // namespace lost_work_cli_test
