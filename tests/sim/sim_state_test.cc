// Pausing and resuming a simulation (issue 9): a simulation saved at any instant and resumed
// writes the same report, byte for byte, as the run that was never interrupted; a resumed run can
// branch under another placement policy; state files that are foreign, corrupt or of another
// format version are refused with a clear message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "core/engine/random_pool.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter::sim {
namespace {

using testing_pools::RandomPool;
using testing_pools::Rng;

std::string Report(const ManifestSet& m, const driver::SimResult& r) {
  std::ostringstream out;
  auto bill = BillSimulation(m, r, DefaultEpoch(m));
  EXPECT_TRUE(bill.ok()) << bill.message();
  WriteReportJson(out, m, r, Summarise(m, r), *bill);
  return out.str();
}

// Runs to `cut`, saves, resumes from the bytes and runs to the end; the report of the whole run.
std::string SplitRun(const ManifestSet& m, const SimOptions& o, Millis cut,
                     std::string* state = nullptr) {
  auto first = Simulation::Create(m, o);
  EXPECT_TRUE(first.ok()) << first.message();
  EXPECT_TRUE((*first)->Run(cut).ok());
  const std::string bytes = (*first)->Save();
  EXPECT_EQ(bytes, (*first)->Save()) << "saving is deterministic";
  if (state) *state = bytes;
  first = Result<std::unique_ptr<Simulation>>::Error("gone");  // nothing of the first run survives
  auto resumed = Simulation::Resume(bytes, o);
  EXPECT_TRUE(resumed.ok()) << resumed.message();
  if (!resumed.ok()) return "";
  EXPECT_EQ((*resumed)->Save(), bytes) << "a resumed simulation saves to the same bytes";
  EXPECT_TRUE((*resumed)->Run(o.until).ok());
  const Millis end = o.until ? *o.until : (*resumed)->now();
  driver::SimResult r = (*resumed)->Finish(end);
  return Report((*resumed)->manifests(), r);
}

TEST(SimStateTest, ResumedRandomPoolsWriteTheSameReport) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = RandomPool(seed);
    Rng r{seed * 31 + 7};
    if (seed % 2)
      for (auto& n : m.nodes) {
        if (r.Chance(30)) n.sim.add_time = r.Uniform(1, 180) * 60000;
        if (r.Chance(30)) n.sim.remove_time = n.sim.add_time + r.Uniform(1, 360) * 60000;
      }
    SimOptions o;
    o.until = 12 * 3600 * 1000;
    o.check_invariants = true;
    auto whole = RunSimulation(m, o);
    ASSERT_TRUE(whole.ok()) << whole.message();
    const std::string expected = Report(m, *whole);
    const Millis cut = r.Uniform(0, 12 * 60) * 60000;
    EXPECT_EQ(SplitRun(m, o, cut), expected) << "cut at " << FormatDuration(cut);
  }
}

TEST(SimStateTest, ResumedExamplePoolWritesTheSameReport) {
  auto load = yaml::LoadManifestFiles({std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml"});
  ASSERT_TRUE(load.ok());
  SimOptions o;
  auto whole = RunSimulation(load.set, o);
  ASSERT_TRUE(whole.ok());
  const std::string expected = Report(load.set, *whole);
  for (Millis cut : {Millis{0}, Millis{1800000}, Millis{3 * 3600000 + 1}, Millis{8 * 3600000}}) {
    SCOPED_TRACE("cut at " + FormatDuration(cut));
    EXPECT_EQ(SplitRun(load.set, o, cut), expected);
  }
}

// Created owning its manifests (as `arbiter sim` does), a simulation frees each Pod once it is
// submitted: the same report as one that borrows them, the same state saved at any instant (the
// pods still to come included), and no Pod of the manifests left once it is set up.
TEST(SimStateTest, OwningItsManifestsChangesNothingButMemory) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const ManifestSet m = RandomPool(seed);
    SimOptions o;
    o.until = 12 * 3600 * 1000;
    o.check_invariants = true;
    const Millis cut = Rng{seed}.Uniform(0, 12 * 60) * 60000;
    auto borrowing = Simulation::Create(m, o);
    auto owning = Simulation::Create(ManifestSet(m), o);
    ASSERT_TRUE(borrowing.ok() && owning.ok());
    EXPECT_TRUE((*owning)->manifests().pods.empty());
    EXPECT_EQ((*owning)->total_pods(), m.pods.size());
    ASSERT_TRUE((*borrowing)->Run(cut).ok());
    ASSERT_TRUE((*owning)->Run(cut).ok());
    EXPECT_EQ((*owning)->Save(), (*borrowing)->Save()) << "cut at " << FormatDuration(cut);
    ASSERT_TRUE((*borrowing)->Run(o.until).ok());
    ASSERT_TRUE((*owning)->Run(o.until).ok());
    EXPECT_EQ(Report((*owning)->manifests(), (*owning)->Finish(*o.until)),
              Report(m, (*borrowing)->Finish(*o.until)));
  }
}

// The pods an owning simulation keeps to come are stored in the state file's encoding, which
// holds no arbiter.dev/exit-code: their exit codes are kept beside it (a pod whose duration is
// done exits with its code and ends Failed, as when the simulation borrows its manifests).
TEST(SimStateTest, OwningItsManifestsKeepsThePodsExitCodes) {
  ManifestSet m = RandomPool(5);
  for (size_t i = 0; i < m.pods.size(); i += 3) m.pods[i].sim.exit_code = 3;
  SimOptions o;
  o.until = 12 * 3600 * 1000;
  auto borrowing = RunSimulation(m, o);
  auto owning = Simulation::Create(ManifestSet(m), o);
  ASSERT_TRUE(borrowing.ok() && owning.ok());
  ASSERT_TRUE((*owning)->Run(o.until).ok());
  driver::SimResult r = (*owning)->Finish(*o.until);
  size_t failed = 0;
  for (const auto& w : r.workloads()) failed += w.phase == engine::Phase::kFailed;
  EXPECT_GT(failed, 0u) << "no pod ran its duration out with its exit code";
  EXPECT_EQ(Report((*owning)->manifests(), r), Report(m, *borrowing));
}

// A resumed simulation keeps arbiter.dev/exit-code (state version 9; before it a resumed run
// lost the codes of the pods to come and of the workloads already submitted, whose runs then
// ended Succeeded): the same report as the run never paused, owning its manifests or not.
TEST(SimStateTest, ResumedRunsKeepTheExitCodes) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    ManifestSet m = RandomPool(seed);
    for (size_t i = 0; i < m.pods.size(); i += 2) m.pods[i].sim.exit_code = 7;
    SimOptions o;
    o.until = 12 * 3600 * 1000;
    auto whole = RunSimulation(m, o);
    ASSERT_TRUE(whole.ok()) << whole.message();
    size_t failed = 0;
    for (const auto& w : whole->workloads()) failed += w.phase == engine::Phase::kFailed;
    ASSERT_GT(failed, 0u) << "no pod ran its duration out with its exit code";
    const std::string expected = Report(m, *whole);
    const Millis cut = Rng{seed}.Uniform(60, 6 * 60) * 60000;
    EXPECT_EQ(SplitRun(m, o, cut), expected) << "borrowing, cut at " << FormatDuration(cut);
    auto owning = Simulation::Create(ManifestSet(m), o);
    ASSERT_TRUE(owning.ok());
    ASSERT_TRUE((*owning)->Run(cut).ok());
    auto resumed = Simulation::Resume((*owning)->Save(), o);
    ASSERT_TRUE(resumed.ok()) << resumed.message();
    ASSERT_TRUE((*resumed)->Run(o.until).ok());
    EXPECT_EQ(Report((*resumed)->manifests(), (*resumed)->Finish(*o.until)), expected)
        << "owning, cut at " << FormatDuration(cut);
  }
}

// Issue 29's scenarios (pod topology, Kueue's unreclaimable hold, pod overhead, the symmetric
// score, a group's members' topology) paused at any instant resume to the same report: their
// rules, the placed pods' anti-affinity and scoring terms, and the quota holds survive the state
// file.
TEST(SimStateTest, ResumedPodTopologyAndQuotaHoldScenariosWriteTheSameReport) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(ARBITER_SOURCE_DIR) / "tests" / "scenarios";
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const int number = std::atoi(name.c_str());  // the leading digits
    if ((number < 120 || number > 132) && number != 169 && number != 170) continue;
    SCOPED_TRACE(name);
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    const std::string all = text.str();
    yaml::ManifestLoad load;
    yaml::LoadManifestText(all.substr(0, all.find("--- # expect")), name, &load);
    ASSERT_TRUE(load.ok());
    SimOptions o;
    o.until = 2 * 3600000;
    auto whole = RunSimulation(load.set, o);
    ASSERT_TRUE(whole.ok());
    const std::string expected = Report(load.set, *whole);
    for (Millis cut : {Millis{300001}, Millis{600000}, Millis{900000}, Millis{2700001}})
      EXPECT_EQ(SplitRun(load.set, o, cut), expected) << "cut at " << FormatDuration(cut);
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

TEST(SimStateTest, ABranchUnderAnotherPlacementPolicyRuns) {
  ManifestSet m = RandomPool(11);
  SimOptions o;
  o.until = 6 * 3600 * 1000;
  auto first = Simulation::Create(m, o);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Run(Millis{3600000}).ok());
  const std::string bytes = (*first)->Save();
  SimOptions branch = o;
  branch.placement = PlacementPolicyName::kLeastAllocated;
  branch.check_invariants = true;
  auto resumed = Simulation::Resume(bytes, branch);
  ASSERT_TRUE(resumed.ok()) << resumed.message();
  EXPECT_EQ((*resumed)->engine().policy().placement, PlacementPolicyName::kLeastAllocated);
  ASSERT_TRUE((*resumed)->Run(o.until).ok());
  driver::SimResult r = (*resumed)->Finish(*o.until);
  EXPECT_EQ(r.policy().placement, PlacementPolicyName::kLeastAllocated);
}

TEST(SimStateTest, RefusesWhatIsNotASimulationState) {
  ManifestSet m = RandomPool(3);
  auto sim = Simulation::Create(m, SimOptions{});
  ASSERT_TRUE(sim.ok());
  const std::string bytes = (*sim)->Save();
  auto engine_only = Simulation::Resume((*sim)->engine().Snapshot(), SimOptions{});
  ASSERT_FALSE(engine_only.ok());
  EXPECT_NE(engine_only.message().find("holds a state of kind \"engine\", not \"simulation\""),
            std::string::npos)
      << engine_only.message();
  auto foreign = Simulation::Resume("apiVersion: v1\nkind: Pod\n", SimOptions{});
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.message().find("not an Arbiter state file"), std::string::npos);
  std::string corrupt = bytes;
  corrupt[corrupt.size() / 2] ^= 1;
  auto c = Simulation::Resume(corrupt, SimOptions{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("checksum"), std::string::npos) << c.message();
}

}  // namespace
}  // namespace arbiter::sim
