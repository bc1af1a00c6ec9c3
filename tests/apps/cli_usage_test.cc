// Usage errors and --version as a new user meets them (regressions from a new-user trial: CLI11's
// "A subcommand is required" for a mistyped command, "--file is required" for a mistyped flag).
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

CliResult Arbiter(const std::string& args) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-cli-usage-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return arbiter::testing::RunCommandSplit(
      "cd " + dir.string() + " && " + ARBITER_BINARY + " " + args, dir);
}

bool Has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

#define EXPECT_USAGE(r, ...)                                                  \
  do {                                                                        \
    EXPECT_EQ((r).rc, 2) << (r).err;                                          \
    EXPECT_TRUE((r).out.empty()) << (r).out;                                  \
    for (const char* want : {__VA_ARGS__})                                    \
      EXPECT_TRUE(Has((r).err, want)) << "want: " << want << "\n" << (r).err; \
  } while (0)

TEST(CliUsage, UnknownCommandSuggestsTheClosest) {
  EXPECT_USAGE(Arbiter("simm -f x.yaml"),
               "arbiter: unknown command \"simm\"; did you mean \"sim\"?",
               "Commands: validate, sim, invoice, ledger, meter, slurm, serve, kubeconfig",
               "Run `arbiter --help`");
  EXPECT_USAGE(Arbiter("vaildate -f x.yaml"), "did you mean \"validate\"?");
  EXPECT_USAGE(Arbiter("frobnicate"), "arbiter: unknown command \"frobnicate\"\n",
               "Run `arbiter --help`");
  EXPECT_USAGE(Arbiter("sim compaer --nodes a --pods b"),
               "arbiter sim: unknown command \"compaer\"; did you mean \"compare\"?",
               "Run `arbiter sim --help`");
  EXPECT_USAGE(Arbiter("ledger exprot --db x"),
               "arbiter ledger: unknown command \"exprot\"; did you mean \"export\"?");
}

TEST(CliUsage, MissingCommand) {
  EXPECT_USAGE(
      Arbiter(""),
      "arbiter: missing command (validate, sim, invoice, ledger, meter, slurm, serve, kubeconfig",
      "Run `arbiter --help`");
  EXPECT_USAGE(Arbiter("ledger"),
               "arbiter ledger: missing command (export, seal, check, sync, tracks)",
               "Run `arbiter ledger --help`");
}

TEST(CliUsage, UnknownOptionSuggestsTheClosestAndComesFirst) {
  EXPECT_USAGE(Arbiter("sim -f x.yaml --polcy fgd"),
               "arbiter sim: unknown option \"--polcy\"; did you mean \"--policy\"?",
               "Run `arbiter sim --help` for the commands and options.");
  EXPECT_USAGE(Arbiter("sim -f x.yaml --report-jsn=r.json"),
               "unknown option \"--report-jsn\"; did you mean \"--report-json\"?");
  EXPECT_USAGE(Arbiter("sim -f x.yaml --bogus"), "arbiter sim: unknown option \"--bogus\"\n");
  // The mistyped flag is reported, not the required one it was meant to be.
  const CliResult r = Arbiter("validate --fle x.yaml");
  EXPECT_USAGE(r, "arbiter validate: unknown option \"--fle\"; did you mean \"--file\"?",
               "Run `arbiter validate --help`");
  EXPECT_FALSE(Has(r.err, "required")) << r.err;
  EXPECT_USAGE(Arbiter("sim compare --nodes a --pods b --seed 4"),
               "arbiter sim compare: unknown option \"--seed\"; did you mean \"--seeds\"?");
  // No far-fetched guesses.
  EXPECT_FALSE(Has(Arbiter("validate -x -f a.yaml").err, "did you mean"));
}

TEST(CliUsage, PositionalFileSuggestsDashF) {
  EXPECT_USAGE(
      Arbiter("validate pool.yaml"),
      "arbiter validate: unexpected argument \"pool.yaml\"; did you mean \"-f pool.yaml\"?");
  EXPECT_USAGE(Arbiter("sim pool.yaml"),
               "arbiter sim: unexpected argument \"pool.yaml\"; did you mean \"-f pool.yaml\"?");
}

TEST(CliUsage, MissingValuesAndOptions) {
  EXPECT_USAGE(Arbiter("validate"), "arbiter validate: missing required option -f/--file",
               "Run `arbiter validate --help`");
  EXPECT_USAGE(Arbiter("sim compare --nodes a"),
               "arbiter sim compare: missing required option --pods");
  EXPECT_USAGE(Arbiter("sim -f"), "arbiter sim: option --file needs a value");
}

TEST(CliUsage, Version) {
  const CliResult r = Arbiter("--version");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("arbiter " ARBITER_VERSION_PREFIX, 0), 0u) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(Has(Arbiter("--help").out, "--version"));
  // Usage lines name the program, not the path it was started by.
  EXPECT_TRUE(Has(Arbiter("sim --help").out, "Usage: arbiter sim [OPTIONS]"))
      << Arbiter("sim --help").out;
}

// The allocator the build chose (ARBITER_ALLOCATOR: jemalloc unless configured otherwise, issue
// 27) is the one serving malloc in the binary: a build that lost jemalloc, or a jemalloc linked
// but bypassed, fails here instead of silently giving a daemon a fifth slower.
TEST(CliUsage, VersionNamesTheAllocatorInUse) {
  const CliResult r = Arbiter("--version");
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string expected = std::string(ARBITER_ALLOCATOR) == "jemalloc"
                                   ? "\nallocator: jemalloc "
                                   : "\nallocator: system malloc\n";
  EXPECT_TRUE(Has(r.out, expected)) << r.out;
  // allocator.cc's malloc_conf is read: answers of 1 MiB and more are given back when freed.
  if (std::string(ARBITER_ALLOCATOR) == "jemalloc") {
    EXPECT_TRUE(Has(r.out, ", oversize_threshold 1048576\n")) << r.out;
  }
}

// Built from a git checkout, the version names the commit checked out at the build, not at
// CMake's configure (regression: a build configured at fd09ce0 said so for weeks of commits).
TEST(CliUsage, VersionNamesTheCommitOfTheBuild) {
  const auto dir = std::filesystem::temp_directory_path() / "arbiter-cli-version";
  std::filesystem::create_directories(dir);
  const auto head = arbiter::testing::RunCommandSplit(
      std::string("git -C ") + ARBITER_SOURCE_DIR + " rev-parse --short=7 HEAD", dir);
  if (head.rc != 0) GTEST_SKIP() << "not a git checkout: " << head.err;
  const std::string commit = head.out.substr(0, head.out.find('\n'));
  const CliResult r = Arbiter("--version");
  EXPECT_TRUE(Has(r.out, "(git ") && Has(r.out, commit)) << r.out << " at " << commit;
}

// cmake/version.cmake, which the build runs every time: a new commit changes the generated
// source, the same commit leaves it untouched (nothing recompiles), a modified tree says -dirty.
TEST(CliUsage, TheVersionSourceFollowsTheCheckout) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "arbiter-version-script";
  fs::remove_all(dir);
  fs::create_directories(dir / "repo");
  const std::string repo = (dir / "repo").string(), out = (dir / "version.cc").string();
  auto sh = [&](const std::string& cmd) {
    const auto r = arbiter::testing::RunCommandSplit(cmd, dir);
    EXPECT_EQ(r.rc, 0) << cmd << ": " << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string git = "git -C " + repo + " -c user.name=t -c user.email=t@t ";
  const std::string run = std::string("cmake -DGIT=git -DSRC=") + repo +
                          " -DVERSION=9.9 -DOUT=" + out + " -P " + ARBITER_SOURCE_DIR +
                          "/cmake/version.cmake";
  auto text = [&] {
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  sh("git init -q " + repo + " && echo a > " + repo + "/f && " + git + "add f && " + git +
     "commit -qm one");
  sh(run);
  const std::string first = sh(git + "rev-parse --short=7 HEAD");
  EXPECT_TRUE(Has(text(), "\"9.9 (git " + first)) << text();
  const auto stamp = fs::last_write_time(out);
  sh(run);
  EXPECT_EQ(fs::last_write_time(out), stamp) << "rewritten although the commit is the same";
  sh("echo b > " + repo + "/f && " + git + "commit -qam two");
  sh(run);
  const std::string second = sh(git + "rev-parse --short=7 HEAD");
  EXPECT_TRUE(Has(text(), second) && !Has(text(), first)) << text();
  sh("echo c > " + repo + "/f");
  sh(run);
  EXPECT_TRUE(Has(text(), second + "-dirty")) << text();
  fs::remove_all(dir);
}

TEST(CliUsage, HelpStillExitsZero) {
  for (const char* cmd : {"--help", "validate --help", "sim --help", "sim compare --help",
                          "invoice --help", "ledger export --help"}) {
    const CliResult r = Arbiter(cmd);
    EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.err;
    EXPECT_TRUE(Has(r.out, "Usage:") || Has(r.out, "Options:")) << cmd << "\n" << r.out;
  }
}

// `sim compare --seeds` and `--target`: refused with what is wrong, documented in --help.
TEST(CliUsage, SeedsAndTarget) {
  EXPECT_USAGE(Arbiter("sim compare --nodes a.csv --pods b.csv --seeds 44-42"),
               "arbiter sim compare: --seeds: seed range '44-42' is reversed",
               "did you mean 42-44?");
  EXPECT_USAGE(Arbiter("sim compare --nodes a.csv --pods b.csv --seeds 1-200000"),
               "more than 100000 seeds");
  EXPECT_USAGE(Arbiter("sim compare --nodes a.csv --pods b.csv --target 50"),
               "arbiter sim compare: --target: '50' would mean 50 x the cluster's GPUs (5000%)",
               "did you mean 50%?");
  EXPECT_USAGE(Arbiter("sim --nodes a.csv --pods b.csv --mode saturate --target 50"),
               "arbiter sim: --target: ", "did you mean 50%?");
  const std::string help = Arbiter("sim compare --help").out;
  for (const char* want :
       {"FIRST-LAST", "FIRST <= LAST", "at most 100000 seeds", "130%", "1000%", "--target 50"})
    EXPECT_TRUE(Has(help, want)) << want << "\n" << help;
}

TEST(CliUsage, DurationWithoutUnit) {
  const CliResult r =
      Arbiter("sim -q -f " + std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml --until 5");
  EXPECT_USAGE(r, "arbiter sim: --until: duration \"5\" has no unit: did you mean 5s?");
}

// Output paths are checked before the simulation runs (a long run must not end in "cannot
// write"), and a file that cannot be read has no line number.
TEST(CliUsage, SimChecksOutputPathsFirstAndMissingFilesHaveNoLine) {
  const std::string pool = std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml";
  auto r = Arbiter("sim -q -f " + pool + " --report-json /nonexistent-dir/r.json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out.find("Simulated"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("arbiter sim: --report-json: /nonexistent-dir/r.json: directory "
                       "/nonexistent-dir does not exist"),
            std::string::npos)
      << r.err;
  auto m = Arbiter("sim -f no-such-file.yaml");
  EXPECT_EQ(m.rc, 1);
  EXPECT_NE(m.err.find("no-such-file.yaml: cannot read file: no such file"), std::string::npos)
      << m.err;
  EXPECT_EQ(m.err.find("no-such-file.yaml:0:"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("arbiter sim: 1 error in the manifests"), std::string::npos) << m.err;
}

}  // namespace

namespace {

// Issue 14 (item 5): one rule for bad values, in every subcommand (docs/user-guide.md,
// "Command-line conventions"): a flag value that is wrong in itself is a usage error (exit 2),
// reported as "arbiter CMD: --flag: ..." on the first line of standard error, before anything is
// read (no manifest warning precedes it) or written; what the command line names but the input
// does not have is invalid input (exit 1).
TEST(CliConventions, EveryBadFlagValueIsAUsageErrorNamedByItsFlag) {
  const std::string src = ARBITER_SOURCE_DIR;
  const std::string pool = src + "/examples/pool.yaml";
  const std::string trace = " --nodes " + src + "/data/openb/openb_node_list_gpu_node.csv --pods " +
                            src + "/data/openb/openb_pod_list_default.csv";
  const std::string segs = " --segments " + src + "/tests/data/billing/segments.jsonl";
  const auto scratch =
      std::filesystem::temp_directory_path() / ("arbiter-conv-" + std::to_string(getpid()));
  std::filesystem::create_directories(scratch);
  const std::string db = (scratch / "conv.db").string();
  ASSERT_EQ(Arbiter("invoice ingest --db " + db + segs + " --pricebook " + src +
                    "/tests/data/billing/pricebook.json")
                .rc,
            0);
  struct Case {
    std::string args, prefix;
  };
  const std::vector<Case> usage = {
      {"sim -f " + pool + " --until 5", "arbiter sim: --until: "},
      {"sim -f " + pool + " --until -5s", "arbiter sim: --until: "},
      {"sim -f " + pool + " --start 2026-01-01", "arbiter sim: --start: "},
      {"sim -f " + pool + " --policy bestfitt", "arbiter sim: --policy: "},
      {"sim -f " + pool + " --seed -1", "arbiter sim: --seed: "},
      {"sim -f " + pool + " --seed abc", "arbiter sim: --seed: "},
      {"sim -f " + pool + " --report-json /nonexistent-dir/r.json", "arbiter sim: --report-json: "},
      {"sim -f - -f -", "arbiter sim: -f -: "},
      {"sim" + trace + " --tenants 0", "arbiter sim: --tenants: "},
      {"sim" + trace + " --tenants x", "arbiter sim: --tenants: "},
      {"sim" + trace + " --mode x", "arbiter sim: --mode: "},
      {"sim" + trace + " --target 50", "arbiter sim: --target: "},
      {"sim" + trace + " --policy x", "arbiter sim: --policy: "},
      {"sim compare" + trace + " --seeds 5-1", "arbiter sim compare: --seeds: "},
      {"sim" + trace + " --explain a/b", "arbiter sim: --explain: "},
      {"sim compare" + trace + " --policies x", "arbiter sim compare: --policies: "},
      {"invoice --db " + db + " --from 2026-01-01", "arbiter invoice: --from: "},
      {"invoice --db " + db + " --to tomorrow", "arbiter invoice: --to: "},
      {"invoice --db " + db + " --month 2026-13", "arbiter invoice: --month: "},
      {"invoice --db " + db + " -o yaml", "arbiter invoice: -o: "},
      {"invoice --db " + db + " --from 2026-02-01T00:00:00Z --to 2026-01-01T00:00:00Z",
       "arbiter invoice: --from: "},
      {"invoice ingest --db " + db + segs + " --scrape-interval 7s",
       "arbiter invoice ingest: --scrape-interval: "},
      {"invoice ingest --db " + db + segs + " --seal-before 2026-01-01T00:30:00Z",
       "arbiter invoice ingest: --seal-before: "},
      {"ledger export --db " + db + " --format xml", "arbiter ledger export: --format: "},
      {"ledger export --db " + db + " --month 2026", "arbiter ledger export: --month: "},
      {"ledger seal --db " + db + " --before 2026-01-01", "arbiter ledger seal: --before: "},
      {"ledger seal --db " + db + " --before 2026-01-01T00:00:01Z",
       "arbiter ledger seal: --before: "},
  };
  for (const Case& c : usage) {
    SCOPED_TRACE("arbiter " + c.args);
    CliResult r = Arbiter(c.args);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind(c.prefix, 0), 0u)
        << "first line must start with \"" << c.prefix << "\":\n"
        << r.err;
  }
  const std::vector<Case> input = {
      {"sim -f " + (scratch / "missing.yaml").string(),
       (scratch / "missing.yaml").string() + ": cannot read file: "},
      {"validate -f /dev/zero", "/dev/zero: cannot read file: "},
      {"invoice --db " + (scratch / "none.db").string(), "arbiter invoice: --db: "},
      {"invoice --db " + db + " --namespace team-z", "arbiter invoice: --namespace: "},
      {"ledger export --db " + db + " --namespace team-z", "arbiter ledger export: --namespace: "},
      {"ledger check --db " + (scratch / "none.db").string(), "arbiter ledger check: --db: "},
      {"ledger seal --db " + (scratch / "none.db").string() + " --before 2026-01-01T00:00:00Z",
       "arbiter ledger seal: --db: "},
      {"sim --nodes /dev/zero --pods /dev/null", "arbiter sim: --nodes: "},
      {"sim -q -f " + pool + " --explain team-a/nope",
       "arbiter sim: --explain: no Pod \"team-a/nope\""},
  };
  for (const Case& c : input) {
    SCOPED_TRACE("arbiter " + c.args);
    CliResult r = Arbiter(c.args);
    EXPECT_EQ(r.rc, 1) << r.out << r.err;
    EXPECT_NE((r.err + r.out).find(c.prefix), std::string::npos) << r.out << r.err;
  }
  std::filesystem::remove_all(scratch);
}

}  // namespace

namespace {

// The input limits are in --help, as in docs/user-guide.md.
TEST(CliConventions, HelpStatesTheInputLimits) {
  EXPECT_TRUE(Has(Arbiter("sim --help").out, "manifests (-f) at most 512 MiB each, trace CSVs"));
  EXPECT_TRUE(Has(Arbiter("validate --help").out,
                  "regular files of at most 512 MiB each, or - for standard input"));
  EXPECT_TRUE(Has(Arbiter("invoice ingest --help").out,
                  "the segments file (or - for standard input) at most 1 GiB"));
}

// A flag with a range says it in words, in --help (not CLI11's `FLOAT:FLOAT in [0 - 1000]`) and
// when the value is out of it (not "0.000000 to 1000.000000").
TEST(CliConventions, RangesAreSaidInWords) {
  const std::string serve = Arbiter("serve --help").out;
  EXPECT_FALSE(Has(serve, " in [")) << serve;
  EXPECT_TRUE(Has(serve, "--snapshot-growth FLOAT ")) << serve;
  EXPECT_TRUE(Has(serve, "--min-request-timeout INT ")) << serve;
  EXPECT_FALSE(Has(Arbiter("ledger sync --help").out, " in ["));
  auto wrong = Arbiter("serve --data /nonexistent/x --snapshot-growth 2000");
  EXPECT_EQ(wrong.rc, 2);
  EXPECT_TRUE(Has(wrong.err, "--snapshot-growth: must be a number from 0 to 1000, not 2000"))
      << wrong.err;
}

// The kinds in validate, serve and scheduler --help come from the one kinds table
// (core/api_kinds.h), so a kind added there is named (ResourceFlavor, PodGroup and Job were
// missing from the hand-written lists); `ledger --help` names every ledger command.
TEST(CliConventions, HelpNamesEveryKindAndCommand) {
  const std::string validate = Arbiter("validate --help").out;
  EXPECT_TRUE(Has(validate, "ResourceFlavor;")) << validate;
  EXPECT_TRUE(Has(validate, "PodGroup")) << validate;
  EXPECT_FALSE(Has(validate, "batch/v1")) << "validate does not read Jobs\n" << validate;
  const std::string serve = Arbiter("serve --help").out;
  EXPECT_TRUE(Has(serve, "batch/v1\nJob;") || Has(serve, "batch/v1 Job;")) << serve;
  EXPECT_TRUE(Has(serve, "PodGroup")) << serve;
  EXPECT_TRUE(Has(serve, "default 50000")) << serve;
  const std::string scheduler = Arbiter("scheduler --help").out;
  EXPECT_TRUE(Has(scheduler, "PodGroup")) << scheduler;
  EXPECT_TRUE(Has(scheduler, "ResourceFlavor")) << scheduler;
  EXPECT_TRUE(Has(Arbiter("ledger --help").out, "export, seal, check, sync, tracks."));
}

}  // namespace

namespace {

// Whether `arbiter CMD --help` lists `opt` ("--db", "-f") as one of its options.
bool HelpHasOption(const std::string& help, const std::string& opt) {
  for (size_t at = help.find(opt); at != std::string::npos; at = help.find(opt, at + 1)) {
    const char before = at == 0 ? ' ' : help[at - 1];
    const char after = at + opt.size() < help.size() ? help[at + opt.size()] : ' ';
    if ((before == ' ' || before == ',') && (after == ' ' || after == ',' || after == '='))
      return true;
  }
  return false;
}

// The options an error message names, with the command they belong to: "--word" and "-x"
// tokens of the lines that start with "arbiter" (not the echo of a program it runs). An option
// inside a quoted command ("`arbiter sim --ledger X` creates one") is that command's (its
// subcommand words, e.g. "invoice ingest"); other quoted commands (`sacct -X`) are not ours.
std::vector<std::pair<std::string, std::string>> OptionsNamedIn(const std::string& err,
                                                                const std::string& cmd) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("arbiter", 0) != 0 || line.find(": running ") != std::string::npos) continue;
    std::istringstream parts(line);
    std::string part;
    for (int n = 0; std::getline(parts, part, '`'); ++n) {
      std::string owner = cmd;
      if (n % 2 == 1) {  // a quoted command
        std::istringstream words(part);
        std::string w;
        if (!(words >> w) || w != "arbiter") continue;
        owner.clear();
        while (words >> w && w[0] != '-' && std::islower(static_cast<unsigned char>(w[0])) &&
               w.find('/') == std::string::npos)
          owner += (owner.empty() ? "" : " ") + w;
      }
      for (size_t i = 0; i + 1 < part.size(); ++i) {
        if (part[i] != '-' ||
            (i > 0 && part[i - 1] != ' ' && part[i - 1] != '(' && part[i - 1] != '"'))
          continue;
        size_t j = i + 1;
        if (part[j] == '-') ++j;
        const size_t name = j;
        while (j < part.size() &&
               (std::isalnum(static_cast<unsigned char>(part[j])) || (part[j] == '-' && j > name)))
          ++j;
        if (j == name || !std::isalpha(static_cast<unsigned char>(part[name]))) continue;
        if (j - i == 2 || part[i + 1] == '-') out.emplace_back(owner, part.substr(i, j - i));
        i = j;
      }
    }
  }
  return out;
}

// Issue 28: every option an error message tells the user to use exists in that command. `slurm
// import` without a PriceBook said "no PriceBook given (--pricebook)", an option of `invoice
// ingest` only (slurm import takes PriceBooks from -f). Each case fails on purpose; every option
// named in its error must be in the command's --help.
TEST(CliConventions, EveryOptionAnErrorMessageNamesExists) {
  const std::string src = ARBITER_SOURCE_DIR;
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-optnames-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string sacct = src + "/tests/data/slurm/recorded/sacct.txt";
  const std::string policy = src + "/tests/data/slurm/conformance-policy.yaml";
  const std::string segs = " --segments " + src + "/tests/data/billing/segments.jsonl";
  const std::string none = (dir / "none.db").string(), fresh = (dir / "fresh.db").string();
  struct Case {
    std::string cmd, args;
  };
  const std::vector<Case> cases = {
      {"slurm import", "--sacct-file " + sacct + " --db " + fresh},
      {"slurm import", "--sacct-file " + sacct + " --since 2026-01-01T00:00:00Z --db " + fresh},
      {"slurm import", "--sacct-file " + sacct},
      {"slurm import", "--sacct-file " + sacct + " --db " + fresh + " --utc-offset 25:00"},
      {"slurm import", "--sacct-file " + sacct + " --db " + fresh + " --scrape-interval 0s"},
      {"slurm import", "--sacct-file " + sacct + " --db " + fresh + " --seal-before soon"},
      {"slurm import", "--sacct-file " + sacct + " --db " + fresh + " --account-map " + none},
      {"slurm export", "-f " + policy + " --cluster 'a b'"},
      {"slurm export", "-f " + policy + " --user 'a b'"},
      {"slurm export", "-f " + policy + " --price-at soon"},
      {"slurm export", "-f " + policy + " --account-map " + none},
      {"slurm compare", "--sacct-file " + sacct + " --report-json " + none + " -f " + policy},
      {"slurm compare", "--sacct-file " + sacct + " --report-json " + none + " --t0 soon"},
      {"invoice ingest", "--db " + fresh + segs},
      {"invoice ingest", "--db " + fresh + segs + " --scrape-interval 7s"},
      {"invoice ingest", "--db - " + segs},
      {"invoice", "--db " + none},
      {"invoice", "--month 2026-01"},
      {"ledger sync", "--db " + none + " --to clickhouse://127.0.0.1:1/x"},
      {"ledger sync", "--db " + none + " --to mysql://x"},
      {"ledger seal", "--db " + none + " --before 2026-01-01T00:00:00Z"},
      {"ledger export", "--db " + none},
      {"ledger check", "--db " + none},
      {"meter", "--prometheus http://127.0.0.1:1 --from 2026-01-01T00:00:00Z --to x"},
      {"meter", "--prometheus http://127.0.0.1:1 --from 2026-01-01T00:30:00Z"},
  };
  int named = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE("arbiter " + c.cmd + " " + c.args);
    const CliResult r = Arbiter(c.cmd + " " + c.args);
    EXPECT_NE(r.rc, 0) << r.out;
    for (const auto& [owner, opt] : OptionsNamedIn(r.err, c.cmd)) {
      ++named;
      const std::string help = Arbiter(owner + " --help").out;
      ASSERT_FALSE(help.empty()) << owner;
      EXPECT_TRUE(HelpHasOption(help, opt) || opt == "--help")
          << "the error names " << opt << ", which `arbiter " << owner << "` does not have:\n"
          << r.err;
    }
  }
  EXPECT_GT(named, 20);
  std::filesystem::remove_all(dir);
}

}  // namespace
