// `arbiter validate` as a user runs it: output format, ordering, summary and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_command.h"

namespace {

using CliResult = arbiter::testing::CommandOutput;

std::filesystem::path TempDir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-validate-cli-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

CliResult Validate(const std::string& args) {
  return arbiter::testing::RunCommandSplit(std::string(ARBITER_BINARY) + " validate " + args,
                                           TempDir());
}

std::string Write(const std::string& name, const std::string& text) {
  std::string p = (TempDir() / name).string();
  std::ofstream(p) << text;
  return p;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

const std::string kPool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";

TEST(ValidateCli, ExamplePoolIsValid) {
  CliResult r = Validate("-f " + kPool);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0].rfind(kPool + ":", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(
                ": ResourceQuota/team-a/team-a-gpu: spec.hard[limits.nvidia.com/gpu]: warning: "),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[1], kPool + ": 56 objects, 0 errors, 1 warning");
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(ValidateCli, ErrorsAreSortedByFileAndLineAndExitOne) {
  std::string b =
      Write("b.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
            "  - name: c\n    resources: {requests: {cpu: lots}}\n  priorityClassName: nope\n");
  std::string a =
      Write("a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  colour: red\n");
  CliResult r = Validate("-f " + b + " -f " + a);
  EXPECT_EQ(r.rc, 1);
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0],
            a + ":5: Namespace/x: metadata.colour: unknown field \"colour\" (valid fields: name, "
                "namespace, labels, annotations)");
  EXPECT_EQ(
      lines[1].rfind(
          b + ":7: Pod/default/p: spec.containers[0].resources.requests.cpu: quantity \"lots\"", 0),
      0u)
      << lines[1];
  EXPECT_EQ(lines[2],
            b + ":8: Pod/default/p: spec.priorityClassName: unknown PriorityClass \"nope\" (no "
                "PriorityClass is defined)");
  EXPECT_EQ(lines[3], "2 files: 2 objects, 3 errors, 0 warnings");
}

TEST(ValidateCli, WarningsAloneExitZero) {
  std::string f = Write("warn.yaml",
                        "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: p}\n"
                        "spec:\n  overcommit: {cpu: \"1.5\"}\n  metering: {scrapeInterval: 5s}\n");
  CliResult r = Validate("-f " + f);
  EXPECT_EQ(r.rc, 0) << r.out;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0],
            f + ":5: PoolPolicy/p: spec.overcommit.cpu: warning: CPU overcommit 1.5 is above the "
                "recommended range 1.0-1.2");
  EXPECT_EQ(lines[1],
            f + ":6: PoolPolicy/p: spec.metering.scrapeInterval: warning: scrape interval 5s is "
                "outside the recommended range 15s-60s");
  EXPECT_EQ(lines[2], f + ": 1 object, 0 errors, 2 warnings");
}

TEST(ValidateCli, NotYamlExitsOne) {
  std::string f = Write("garbage.yaml", "key: [unclosed\nother: }\n");
  CliResult r = Validate("-f " + f);
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find(f + ":2: not valid YAML"), std::string::npos) << r.out;
}

TEST(ValidateCli, MissingFileExitsOne) {
  CliResult r = Validate("-f /nonexistent/pool.yaml");
  EXPECT_EQ(r.rc, 1);
  // The same message from every command that reads manifests (adapters/io/input_file.h).
  EXPECT_NE(r.out.find("/nonexistent/pool.yaml: cannot read file: no such file"), std::string::npos)
      << r.out;
}

TEST(ValidateCli, UsageErrorsExitTwo) {
  EXPECT_EQ(Validate("").rc, 2);
  EXPECT_EQ(Validate("--no-such-flag -f " + kPool).rc, 2);
}

TEST(ValidateCli, HelpDescribesTheOutput) {
  CliResult r = Validate("--help");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("FILE:LINE: Kind/name: field.path: message"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--file"), std::string::npos);
}

TEST(ValidateCli, OutputIsDeterministic) {
  CliResult a = Validate("-f " + kPool);
  CliResult b = Validate("-f " + kPool);
  EXPECT_EQ(a.out, b.out);
}

}  // namespace
