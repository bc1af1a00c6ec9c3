// The sacct --parsable2 parser: values, records and steps, errors with FILE:LINE:COLUMN, limits,
// and a property test (generated sacct output round-trips; mutated output never crashes and
// fails with a position inside the input).
#include "adapters/slurm/sacct_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

namespace arbiter::slurm {
namespace sacct_parser_test {

std::string Header() {
  std::string h(kSacctFormat);
  for (char& c : h)
    if (c == ',') c = '|';
  return h;
}

TEST(SacctValues, TimesIsoEpochUnknownAndZones) {
  EXPECT_EQ(**ParseSacctTime("2026-11-29T17:01:26", 0), 1795971686000);
  EXPECT_EQ(**ParseSacctTime("1795971686", 0), 1795971686000);
  EXPECT_EQ(**ParseSacctTime("2026-11-29T17:01:26", 8 * 3600000), 1795971686000 - 8 * 3600000);
  EXPECT_EQ(**ParseSacctTime("2026-11-29T17:01:26+08:00", 0), 1795971686000 - 8 * 3600000);
  EXPECT_EQ(**ParseSacctTime("2026-11-29T17:01:26Z", 3600000), 1795971686000);
  EXPECT_FALSE(ParseSacctTime("Unknown", 0)->has_value());
  EXPECT_FALSE(ParseSacctTime("None", 0)->has_value());
  EXPECT_FALSE(ParseSacctTime("", 0)->has_value());
  EXPECT_EQ(**ParseSacctTime("2024-02-29T00:00:00", 0), 1709164800000);  // leap day
  for (const char* bad : {"2026-02-29T00:00:00", "2026-13-01T00:00:00", "2026-11-29 25:00:00",
                          "yesterday", "2026-11-29T17:01", "2026-11-29T17:01:26+25:00"})
    EXPECT_FALSE(ParseSacctTime(bad, 0).ok()) << bad;
}

TEST(SacctValues, ElapsedAndCpuTime) {
  EXPECT_EQ(*ParseSacctDuration("00:00:02"), 2000);
  EXPECT_EQ(*ParseSacctDuration("01:02"), 62000);
  EXPECT_EQ(*ParseSacctDuration("1-02:03:04"), ((24 + 2) * 3600 + 3 * 60 + 4) * 1000);
  EXPECT_EQ(*ParseSacctDuration("00:01:02.500"), 62500);
  EXPECT_EQ(*ParseSacctDuration("100:00:00"), 360000000);
  for (const char* bad : {"", "12", "00:60:00", "a:b:c", "1-", "-1:00:00", "00:00:00.1234567"})
    EXPECT_FALSE(ParseSacctDuration(bad).ok()) << bad;
}

TEST(SacctValues, SizesExactOrRefused) {
  EXPECT_EQ(*ParseSacctBytes("64000M", 1 << 20), int64_t{64000} << 20);
  EXPECT_EQ(*ParseSacctBytes("64000", 1 << 20), int64_t{64000} << 20);  // AllocTRES mem: MiB
  EXPECT_EQ(*ParseSacctBytes("62.50G", 1 << 20), int64_t{64000} << 20);
  EXPECT_EQ(*ParseSacctBytes("1184K", 1), 1184 * 1024);
  EXPECT_EQ(*ParseSacctBytes("12591104", 1), 12591104);
  EXPECT_EQ(*ParseSacctBytes("0", 1), 0);
  auto inexact = ParseSacctBytes("1.33K", 1);
  ASSERT_FALSE(inexact.ok());
  EXPECT_NE(inexact.message().find("--noconvert"), std::string::npos) << inexact.message();
  for (const char* bad : {"", "M", "1.2.3G", "-5M", "99999999999999999999", "9000000P"})
    EXPECT_FALSE(ParseSacctBytes(bad, 1).ok()) << bad;
}

// A requeued job (two runs with their steps), a typed GPU job and a job cancelled while pending.
const char* kSample =
    "JobID|JobIDRaw|JobName|Cluster|Partition|Account|User|QOS|State|ExitCode|Submit|Eligible|"
    "Start|End|Elapsed|"
    "ElapsedRaw|NodeList|AllocTRES|TRESUsageInTot|TRESUsageInAve\n"
    "1|1|low-fill|ci|pool|tenant_a|root|low|PREEMPTED|0:0|1795971686|1795971686|1795971689|"
    "1795971691|00:00:02|2|"
    "localhost|billing=8,cpu=8,gres/gpu=8,node=1||\n"
    "1.batch|1.batch|batch|ci||tenant_a|||CANCELLED|0:15|1795971689|1795971689|1795971689|"
    "1795971698|00:00:09|9|"
    "localhost|cpu=8,gres/"
    "gpu=8,mem=0,node=1|cpu=00:00:04,energy=0,mem=12591104,pages=0|cpu=00:00:04,mem=12591104\n"
    "1|1|low-fill|ci|pool|tenant_a|root|low|COMPLETED|0:0|1795971691|1795971702|1795971706|"
    "1795971726|00:00:20|20|"
    "localhost|billing=8,cpu=8,gres/gpu=8,node=1||\n"
    "1.batch|1.batch|batch|ci||tenant_a|||COMPLETED|0:0|1795971706|1795971706|1795971706|"
    "1795971726|00:00:20|20|"
    "localhost|cpu=8,gres/gpu=8,mem=0,node=1|cpu=00:00:10,mem=1184K|cpu=00:00:10,mem=1184K\n"
    "1.0|1.0|step.sh|ci||tenant_a|||COMPLETED|0:0|1795971706|1795971706|1795971706|1795971726|00:"
    "00:20|20|"
    "localhost|cpu=8,gres/gpu=8,mem=0,node=1|cpu=00:00:30,mem=5517312|cpu=00:00:30,mem=5517312\n"
    "7_3|9|train|ci|pool|vision|alice|high|CANCELLED by "
    "1000|0:0|1795971686|1795971686|1795971690|1795975290|"
    "01:00:00|3600|gpu[01-02]|billing=64,cpu=16,gres/gpu:a100=2,gres/gpu=2,mem=64000M,node=2||\n"
    "8|8|never|ci|pool|vision|alice|high|CANCELLED by "
    "0|0:0|1795971686|1795971686|None|1795971700|00:00:00|0|"
    "None assigned|billing=0,cpu=0,node=0||\n";

TEST(SacctParser, RequeuedRunsStepsTypedGpusAndCancelledJobs) {
  auto runs = ParseSacctText(kSample, "s.txt");
  ASSERT_TRUE(runs.ok()) << runs.message();
  ASSERT_EQ(runs->size(), 4u);
  const SacctRun& first = (*runs)[0];
  EXPECT_EQ(first.job_id, "1");
  EXPECT_EQ(first.state, "PREEMPTED");
  EXPECT_EQ(first.account, "tenant_a");
  EXPECT_EQ(first.qos, "low");
  EXPECT_EQ(first.alloc.cpus, 8);
  EXPECT_EQ(first.alloc.gpus, 8);
  EXPECT_EQ(*first.alloc.billing, 8);
  EXPECT_EQ(*first.start, 1795971689000);
  EXPECT_EQ(*first.end, 1795971691000);
  EXPECT_EQ(*first.elapsed, 2000);
  ASSERT_EQ(first.steps.size(), 1u);
  EXPECT_EQ(first.steps[0].name, "batch");
  EXPECT_EQ(*first.steps[0].end, 1795971698000);  // the step ended 7 s after the record
  EXPECT_EQ(*first.steps[0].usage.cpu_ms, 4000);
  EXPECT_EQ(*first.steps[0].usage.mem_bytes, 12591104);
  EXPECT_EQ(first.line, 2);
  const SacctRun& second = (*runs)[1];
  EXPECT_EQ(second.state, "COMPLETED");
  ASSERT_EQ(second.steps.size(), 2u);
  EXPECT_EQ(*second.steps[0].usage.mem_bytes, 1184 * 1024);
  const SacctRun& typed = (*runs)[2];
  EXPECT_EQ(typed.job_id, "7_3");
  EXPECT_EQ(typed.job_id_raw, "9");
  EXPECT_EQ(typed.state, "CANCELLED");
  EXPECT_EQ(typed.state_detail, "by 1000");
  EXPECT_EQ(typed.alloc.gpus, 2);
  EXPECT_EQ(typed.alloc.gpu_types.at("a100"), 2);
  EXPECT_EQ(typed.alloc.mem_bytes, int64_t{64000} << 20);
  EXPECT_EQ(typed.node_list, "gpu[01-02]");
  EXPECT_FALSE((*runs)[3].start.has_value());
}

TEST(SacctParser, FieldOrderIsFreeTrailingBarAndCrlfAreAccepted) {
  const std::string text =
      "State|AllocTRES|JobName|JobID|Account|QOS|End|Start|ElapsedRaw|\r\n"
      "COMPLETED|cpu=2,gres/gpu=1|x|5|a|normal|2026-01-01T00:01:00|2026-01-01T00:00:00|60|\r\n";
  auto runs = ParseSacctText(text, "s.txt");
  ASSERT_TRUE(runs.ok()) << runs.message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].alloc.cpus, 2);
  EXPECT_EQ(*(*runs)[0].elapsed, 60000);
}

TEST(SacctParser, ErrorsNameFileLineColumnAndField) {
  auto no_header = ParseSacctText("1|x|a|low|COMPLETED\n", "s.txt");
  ASSERT_FALSE(no_header.ok());
  EXPECT_NE(no_header.message().find(
                "s.txt:1: the first line is a record, not the header (run sacct without -n)"),
            std::string::npos)
      << no_header.message();
  auto missing = ParseSacctText("JobID|JobName|State\n", "s.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(
                "the header lacks Account, QOS, Start, End, AllocTRES, Elapsed (or ElapsedRaw)"),
            std::string::npos)
      << missing.message();
  const std::string h = Header() + "\n";
  auto bad_time = ParseSacctText(h + "1|1|j|c|p|a|u|q|COMPLETED|0:0|x|x|2026-01-01T00:00:00|2026-"
                                     "99-01T00:00:00|00:00:01|1|n|cpu=1||\n",
                                 "s.txt");
  ASSERT_FALSE(bad_time.ok());
  // Submit "x" is the first bad field on line 2, column 31.
  EXPECT_NE(bad_time.message().find("s.txt:2:31: Submit: time \"x\""), std::string::npos)
      << bad_time.message();
  auto bad_tres = ParseSacctText(h + "1|1|j|c|p|a|u|q|COMPLETED|0:0|||2026-01-01T00:00:00|2026-01-"
                                     "01T00:00:01|00:00:01|1|n|cpu=1,gres/gpu=two||\n",
                                 "s.txt");
  ASSERT_FALSE(bad_tres.ok());
  EXPECT_NE(bad_tres.message().find("s.txt:2:"), std::string::npos);
  EXPECT_NE(bad_tres.message().find("AllocTRES: gres/gpu=two: not a count"), std::string::npos)
      << bad_tres.message();
  auto orphan =
      ParseSacctText(h + "5.batch|5.batch|batch|c||a|||COMPLETED|0:0||||||||||\n", "s.txt");
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(
      orphan.message().find("s.txt:2:1: JobID: step \"5.batch\" does not follow its job \"5\""),
      std::string::npos)
      << orphan.message();
  auto fields = ParseSacctText(h + "1|2|3\n", "s.txt");
  ASSERT_FALSE(fields.ok());
  EXPECT_NE(fields.message().find("s.txt:2: expected 20 fields as in the header, got 3"),
            std::string::npos)
      << fields.message();
  auto backwards = ParseSacctText(h + "1|1|j|c|p|a|u|q|COMPLETED|0:0|||2026-01-01T00:00:09|2026-01-"
                                      "01T00:00:01|00:00:01|1|n|cpu=1||\n",
                                  "s.txt");
  ASSERT_FALSE(backwards.ok());
  EXPECT_NE(backwards.message().find("End: ends before its Start"), std::string::npos)
      << backwards.message();
  auto state = ParseSacctText(h + "1|1|j|c|p|a|u|q|done|0:0|||2026-01-01T00:00:00|2026-01-01T00:00:"
                                  "01|00:00:01|1|n|cpu=1||\n",
                              "s.txt");
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.message().find("State: \"done\" is not a job state"), std::string::npos)
      << state.message();
}

TEST(SacctParser, LongLinesAndStepFloodsAreRefusedNotBuffered) {
  SacctParseOptions o;
  o.max_line_bytes = 4096;
  std::string text = Header() + "\n" + std::string(100000, 'x') + "\n";
  auto r = ParseSacctText(text, "big.txt", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("big.txt:2: line of 4097 bytes is longer than the limit of 4096"),
            std::string::npos)
      << r.message();
  o.max_line_bytes = 1 << 20;
  o.max_steps_per_run = 3;
  std::string steps = Header() + "\n1|1|j|c|p|a|u|q|COMPLETED|0:0|||1|2|00:00:01|1|n|cpu=1||\n";
  for (int i = 0; i < 4; ++i)
    steps += "1." + std::to_string(i) + "|1|s|c||a|||COMPLETED|0:0||||||||||\n";
  auto flood = ParseSacctText(steps, "s.txt", o);
  ASSERT_FALSE(flood.ok());
  EXPECT_NE(flood.message().find("more than 3 steps in job \"1\""), std::string::npos)
      << flood.message();
}

// ---- property tests

struct GenRun {
  std::string id, name, account, qos, state;
  int64_t start = 0, end = 0, cpus = 0, gpus = 0;
  std::vector<std::pair<int64_t, int64_t>> steps;  // (cpu seconds, mem bytes)
};

std::string Render(const std::vector<GenRun>& runs) {
  std::string s = Header() + "\n";
  for (const auto& r : runs) {
    s += r.id + "|" + r.id + "|" + r.name + "|c|p|" + r.account + "|u|" + r.qos + "|" + r.state +
         "|0:0|" + std::to_string(r.start) + "|" + std::to_string(r.start) + "|" +
         std::to_string(r.start) + "|" + std::to_string(r.end) + "|00:00:01|" +
         std::to_string(r.end - r.start) + "|n|cpu=" + std::to_string(r.cpus) +
         ",gres/gpu=" + std::to_string(r.gpus) + ",node=1||\n";
    for (size_t k = 0; k < r.steps.size(); ++k) {
      const int64_t c = r.steps[k].first;
      char cpu[32];
      std::snprintf(cpu, sizeof cpu, "%02lld:%02lld:%02lld", static_cast<long long>(c / 3600),
                    static_cast<long long>(c / 60 % 60), static_cast<long long>(c % 60));
      s += r.id + "." + std::to_string(k) + "|x|s|c||" + r.account + "|||COMPLETED|0:0|||" +
           std::to_string(r.start) + "|" + std::to_string(r.end) +
           "|00:00:01|1|n|cpu=1|cpu=" + cpu + ",mem=" + std::to_string(r.steps[k].second) + "|\n";
    }
  }
  return s;
}

TEST(SacctParserProperty, GeneratedOutputRoundTrips) {
  std::mt19937_64 rng(20261201);
  const char* states[] = {"COMPLETED", "PREEMPTED", "REQUEUED", "NODE_FAIL",
                          "TIMEOUT",   "FAILED",    "RUNNING"};
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<GenRun> runs;
    const int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) {
      GenRun r;
      r.id =
          std::to_string(1 + rng() % 50) + (rng() % 5 == 0 ? "_" + std::to_string(rng() % 9) : "");
      r.name = "job" + std::to_string(rng() % 100);
      r.account = "acct" + std::to_string(rng() % 4);
      r.qos = "q" + std::to_string(rng() % 3);
      r.state = states[rng() % 7];
      r.start = 1700000000 + static_cast<int64_t>(rng() % 100000);
      r.end = r.start + static_cast<int64_t>(rng() % 100000);
      r.cpus = static_cast<int64_t>(rng() % 128);
      r.gpus = static_cast<int64_t>(rng() % 9);
      for (int k = static_cast<int>(rng() % 4); k > 0; --k)
        r.steps.emplace_back(static_cast<int64_t>(rng() % 360000),
                             static_cast<int64_t>(rng() % (int64_t{1} << 40)));
      runs.push_back(r);
    }
    auto parsed = ParseSacctText(Render(runs), "gen.txt");
    ASSERT_TRUE(parsed.ok()) << parsed.message();
    ASSERT_EQ(parsed->size(), runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      const SacctRun& p = (*parsed)[i];
      EXPECT_EQ(p.job_id, runs[i].id);
      EXPECT_EQ(p.state, runs[i].state);
      EXPECT_EQ(*p.start, runs[i].start * 1000);
      EXPECT_EQ(*p.end, runs[i].end * 1000);
      EXPECT_EQ(p.alloc.cpus, runs[i].cpus);
      EXPECT_EQ(p.alloc.gpus, runs[i].gpus);
      ASSERT_EQ(p.steps.size(), runs[i].steps.size());
      for (size_t k = 0; k < p.steps.size(); ++k) {
        EXPECT_EQ(*p.steps[k].usage.cpu_ms, runs[i].steps[k].first * 1000);
        EXPECT_EQ(*p.steps[k].usage.mem_bytes, runs[i].steps[k].second);
      }
    }
  }
}

TEST(SacctParserProperty, MutatedInputNeverCrashesAndErrorsPointInsideIt) {
  std::mt19937_64 rng(7);
  const std::string base = kSample;
  const std::string alphabet =
      "|,=:.-_ 0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n\r\t\x01\xff";
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = base;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          s.insert(pos, std::string(1 + rng() % 3, alphabet[rng() % alphabet.size()]));
          break;
        case 3:
          s.resize(pos);
          break;
      }
    }
    const size_t lines = static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + 1;
    auto r = ParseSacctText(s, "m.txt");
    if (r.ok()) {
      for (const auto& run : *r) {
        EXPECT_GE(run.line, 2);
        EXPECT_LE(static_cast<size_t>(run.line), lines);
        if (run.start && run.end) {
          EXPECT_LE(*run.start, *run.end);
        }
      }
      continue;
    }
    ++errors;
    // "m.txt:LINE[:COL]: ..." with LINE inside the input.
    const std::string& m = r.message();
    ASSERT_EQ(m.rfind("m.txt:", 0), 0u) << m;
    if (m.size() > 6 && m[6] >= '0' && m[6] <= '9') {
      EXPECT_LE(std::stoul(m.substr(6)), lines) << m;
    }
  }
  EXPECT_GT(errors, 100);  // the mutations do reach the checks
}

}  // namespace sacct_parser_test
}  // namespace arbiter::slurm
