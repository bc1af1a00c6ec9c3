// `arbiter sim --save-state FILE` and `arbiter sim --resume FILE` (issue 9): a paused and resumed
// rehearsal writes the same report as the uninterrupted one (also paused twice), a resumed one can
// branch under another placement policy, and bad uses are refused with exit 2 (usage) or 1 (a
// file that is not a saved simulation).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_command.h"

namespace sim_state_cli_test {

namespace fs = std::filesystem;
using arbiter::testing::RunCommand;

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

arbiter::testing::CommandOutput Arbiter(const std::string& args) {
  return RunCommand(std::string(ARBITER_BINARY) + " " + args + " 2>&1");
}

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class SimStateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("arbiter-simstate-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(SimStateCli, PausedAndResumedRunWritesTheSameReport) {
  auto whole = Arbiter("sim -q -f " + kPool + " --report-json " + P("whole.json"));
  ASSERT_EQ(whole.rc, 0) << whole.out;
  auto first = Arbiter("sim -q -f " + kPool + " --until 90m --save-state " + P("a.state"));
  ASSERT_EQ(first.rc, 0) << first.out;
  EXPECT_NE(first.out.find("state: " + P("a.state") + " (paused at virtual time 1h30m"),
            std::string::npos)
      << first.out;
  auto second =
      Arbiter("sim -q --resume " + P("a.state") + " --until 4h --save-state " + P("b.state"));
  ASSERT_EQ(second.rc, 0) << second.out;
  auto last = Arbiter("sim -q --resume " + P("b.state") + " --report-json " + P("resumed.json"));
  ASSERT_EQ(last.rc, 0) << last.out;
  EXPECT_EQ(ReadFile(P("resumed.json")), ReadFile(P("whole.json")));
  // The summaries agree too (but for the report line naming its file).
  auto strip = [](std::string s) { return s.substr(0, s.find("report: ")); };
  EXPECT_EQ(strip(last.out), strip(whole.out));
}

TEST_F(SimStateCli, AResumedRunBranchesUnderAnotherPolicy) {
  ASSERT_EQ(Arbiter("sim -q -f " + kPool + " --until 1h --save-state " + P("a.state")).rc, 0);
  auto branch = Arbiter("sim -q --resume " + P("a.state") + " --policy least-allocated");
  ASSERT_EQ(branch.rc, 0) << branch.out;
  EXPECT_NE(branch.out.find("(placement LeastAllocated,"), std::string::npos) << branch.out;
}

TEST_F(SimStateCli, RefusesBadUses) {
  ASSERT_EQ(Arbiter("sim -q -f " + kPool + " --until 1h --save-state " + P("a.state")).rc, 0);
  auto both = Arbiter("sim --resume " + P("a.state") + " -f " + kPool);
  EXPECT_EQ(both.rc, 2);
  EXPECT_NE(both.out.find("not both"), std::string::npos) << both.out;
  auto seed = Arbiter("sim --resume " + P("a.state") + " --seed 4");
  EXPECT_EQ(seed.rc, 2);
  auto earlier = Arbiter("sim --resume " + P("a.state") + " --until 30m");
  EXPECT_EQ(earlier.rc, 1);
  EXPECT_NE(earlier.out.find("--until 30m is before the time the run was paused at (1h)"),
            std::string::npos)
      << earlier.out;
  std::ofstream(P("yaml.state")) << "apiVersion: v1\nkind: Pod\n";
  auto foreign = Arbiter("sim --resume " + P("yaml.state"));
  EXPECT_EQ(foreign.rc, 1);
  EXPECT_NE(foreign.out.find("not an Arbiter state file"), std::string::npos) << foreign.out;
  std::string bytes = ReadFile(P("a.state"));
  bytes[bytes.size() - 100] ^= 0x11;
  std::ofstream(P("bad.state"), std::ios::binary) << bytes;
  auto corrupt = Arbiter("sim --resume " + P("bad.state"));
  EXPECT_EQ(corrupt.rc, 1);
  EXPECT_NE(corrupt.out.find("checksum"), std::string::npos) << corrupt.out;
  auto missing = Arbiter("sim --resume " + P("nope.state"));
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.out.find("cannot read"), std::string::npos) << missing.out;
  // A device or FIFO is refused without being read (the hardening rule for every input).
  // --explain on a resumed run: a workload submitted before the pause is explained; an unknown
  // one is an input error.
  auto explain = Arbiter("sim -q --resume " + P("a.state") + " --explain team-a/inference-0");
  EXPECT_EQ(explain.rc, 0) << explain.out;
  EXPECT_NE(explain.out.find("Workload team-a/inference-0 (priority"), std::string::npos)
      << explain.out;
  auto unknown = Arbiter("sim -q --resume " + P("a.state") + " --explain team-a/nope");
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_NE(unknown.out.find("no Pod \"team-a/nope\" in the saved run"), std::string::npos)
      << unknown.out;
  auto device = Arbiter("sim --resume /dev/zero");
  EXPECT_EQ(device.rc, 1);
  EXPECT_NE(device.out.find("not a regular file"), std::string::npos) << device.out;
  auto trace = Arbiter("sim --nodes x.csv --pods y.csv --save-state " + P("t.state"));
  EXPECT_EQ(trace.rc, 2);
  auto unwritable = Arbiter("sim -q -f " + kPool + " --save-state /nonexistent-dir/a.state");
  EXPECT_EQ(unwritable.rc, 2);
}

}  // namespace sim_state_cli_test
