// scripts/setup.sh and scripts/test.sh, the README's commands (issue 14, item 9: `test.sh`
// printed ~100 lines of apt progress and 188-character ctest lines). setup.sh runs here with a
// fake apt-get that is as noisy as the real one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_command.h"

namespace {

namespace fs = std::filesystem;
const fs::path kSrc = ARBITER_SOURCE_DIR;

fs::path FakeApt(const fs::path& dir, int exit_code) {
  fs::create_directories(dir);
  const fs::path p = dir / ("apt-get-" + std::to_string(exit_code));
  std::ofstream(p)
      << "#!/bin/sh\n"
         "for i in $(seq 1 150); do echo \"Selecting previously unselected package pkg$i.\"; "
         "echo \"Unpacking pkg$i (1.0) ...\" >&2; done\n"
         "exit "
      << exit_code << "\n";
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec);
  return p;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(SetupScript, InstallingIsTwoLinesAndAFailureShowsTheEndOfTheLog) {
  const fs::path dir = fs::temp_directory_path() / ("arbiter-setup-" + std::to_string(getpid()));
  const std::string env =
      "ARBITER_SETUP_EXTRA_PKGS=arbiter-no-such-package-for-tests ARBITER_APT_GET=";
  auto ok = arbiter::testing::RunCommandSplit(
      env + FakeApt(dir, 0).string() + " " + (kSrc / "scripts/setup.sh").string(), dir);
  EXPECT_EQ(ok.rc, 0) << ok.out << ok.err;
  const auto lines = Lines(ok.out);
  ASSERT_EQ(lines.size(), 2u) << ok.out;
  EXPECT_EQ(
      lines[0].rfind("setup: installing arbiter-no-such-package-for-tests (apt output in ", 0), 0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("setup: installed 1 package in ", 0), 0u) << lines[1];
  EXPECT_TRUE(ok.err.empty()) << ok.err;
  auto bad = arbiter::testing::RunCommandSplit(
      env + FakeApt(dir, 100).string() + " " + (kSrc / "scripts/setup.sh").string(), dir);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("setup: installing failed; the end of "), std::string::npos) << bad.err;
  EXPECT_LE(Lines(bad.err).size(), 26u) << bad.err;
  EXPECT_NE(bad.err.find("Unpacking pkg150"), std::string::npos)
      << "the end of the log is the useful part";
  fs::remove_all(dir);
}

// test.sh runs ctest into a log (with a failing test's output) and prints its summary (no line per
// test) and what a failing test printed in the run that failed, ninja without its progress lines,
// and the sanitizer job.
TEST(TestScript, IsQuietAndRunsTheSanitizerJob) {
  std::ifstream f(kSrc / "scripts/test.sh");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  EXPECT_NE(s.find("-Q --output-on-failure --output-log"), std::string::npos);
  EXPECT_NE(s.find("their output in this run:"), std::string::npos);
  EXPECT_NE(s.find("--rerun-failed --output-on-failure"), std::string::npos);
  EXPECT_NE(s.find("-- --quiet"), std::string::npos);
  EXPECT_NE(s.find("-DARBITER_SANITIZE=ON"), std::string::npos);
  EXPECT_NE(s.find("--target test_sanitize"), std::string::npos);
  EXPECT_NE(s.find("-R '^sanitize:'"), std::string::npos);
  EXPECT_NE(s.find("ARBITER_REQUIRE_CHROMIUM=1"), std::string::npos);
}

}  // namespace
