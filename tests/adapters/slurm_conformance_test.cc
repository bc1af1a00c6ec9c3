// `arbiter slurm compare`'s rules on small made-up runs: points, tolerances, allowances, and
// expected differences that must keep differing (docs/slurm.md). The comparison of a real Slurm
// run is tests/integration/slurm_conformance_test.cc (live) and tests/apps/slurm_cli_test.cc
// (the recorded run).
#include <gtest/gtest.h>

#include "adapters/slurm/conformance.h"
#include "core/objects.h"

namespace arbiter::slurm {
namespace slurm_conformance_test {

std::string Header() {
  std::string h(kSacctFormat);
  for (char& c : h)
    if (c == ',') c = '|';
  return h + "\n";
}

std::string Alloc(const std::string& id, const std::string& name, const std::string& state,
                  int submit, int start, int end, int gpus) {
  auto t = [](int s) { return std::to_string(1000000 + s); };
  return id + "|" + id + "|" + name + "|ci|p|team|u|low|" + state + "|0:0|" + t(submit) + "|" +
         t(submit) + "|" + t(start) + "|" + t(end) + "|00:00:00|" + std::to_string(end - start) +
         "|n|cpu=1,gres/gpu=" + std::to_string(gpus) + "||\n";
}

// A victim `v` (2 GPUs) preempted at 10 by `p` and requeued; in Slurm its first run is killed
// at `kill` and its second starts at `restart`.
std::string SlurmRun(int kill, int restart) {
  return Header() + Alloc("1", "v", "PREEMPTED", 0, 0, kill, 2) +
         Alloc("2", "p", "COMPLETED", 10, kill + 1, kill + 11, 2) +
         Alloc("1", "v", "COMPLETED", kill, restart, restart + 30, 2);
}

nlohmann::json SimReport() {
  using J = nlohmann::json;
  J r;
  r["endTime"] = 100;
  r["workloads"] = J::array(
      {J{{"name", "team/v"}, {"phase", "Succeeded"}, {"requests", "cpu=1,nvidia.com/gpu=2"}},
       J{{"name", "team/p"}, {"phase", "Succeeded"}, {"requests", "cpu=1,nvidia.com/gpu=2"}}});
  auto ev = [](double t, const char* type, const char* w, const char* by = nullptr) {
    J e{{"time", t}, {"type", type}, {"workload", w}};
    e["by"] = by ? J(by) : J();
    return e;
  };
  r["events"] = J::array({ev(0, "Submitted", "team/v"), ev(0, "Scheduled", "team/v"),
                          ev(10, "Submitted", "team/p"), ev(10, "Preempted", "team/v", "team/p"),
                          ev(20, "Terminated", "team/v"), ev(20, "Requeued", "team/v"),
                          ev(20, "Scheduled", "team/p"), ev(30, "Completed", "team/p"),
                          ev(30, "Scheduled", "team/v"), ev(60, "Completed", "team/v")});
  return r;
}

const char* kLog =
    "[2026-01-01T00:00:10.000] debug:  setting 10 sec preemption grace time for JobId=1 to reclaim "
    "resources for "
    "JobId=2\n"
    "[2026-01-01T00:00:25.000] preempted JobId=1 has been requeued to reclaim resources for "
    "JobId=Invalid\n";

ConformanceReport Compare(const std::string& sacct, const Expectations* ex, bool log = true) {
  auto runs = ParseSacctText(sacct, "s.txt");
  EXPECT_TRUE(runs.ok()) << runs.message();
  static const nlohmann::json report = SimReport();
  ConformanceInputs in;
  in.runs = &*runs;
  in.report = &report;
  if (log) in.slurmctld_log = kLog;
  in.expect = ex;
  auto r = CompareWithSlurm(in);
  EXPECT_TRUE(r.ok()) << r.message();
  return *r;
}

const ComparedPoint* Find(const ConformanceReport& r, const std::string& job,
                          const std::string& point) {
  for (const auto& p : r.points)
    if (p.job == job && p.point == point) return &p;
  return nullptr;
}

Expectations Parse(const std::string& yaml) {
  auto e = Expectations::Parse(yaml, "e.yaml");
  EXPECT_TRUE(e.ok()) << e.message();
  return *e;
}

TEST(SlurmConformance, IdenticalRunsAgreeOnEveryPoint) {
  // Slurm exactly as Arbiter: killed at 20, preemptor at 20..30, rerun at 30..60.
  const std::string same = Header() + Alloc("1", "v", "PREEMPTED", 0, 0, 20, 2) +
                           Alloc("2", "p", "COMPLETED", 10, 20, 30, 2) +
                           Alloc("1", "v", "COMPLETED", 20, 30, 60, 2);
  ConformanceReport r = Compare(same, nullptr);
  EXPECT_TRUE(r.ok()) << ConformanceTable(r);
  EXPECT_EQ(r.jobs, 2);
  EXPECT_EQ(r.Count(Verdict::kAgree), static_cast<int>(r.points.size())) << ConformanceTable(r);
  EXPECT_EQ(Find(r, "team/v", "preempted-by")->slurm, "team/p");
  EXPECT_EQ(Find(r, "team/v", "runs")->slurm, "2");
  EXPECT_EQ(Find(r, "team/v", "start#2")->slurm, "30");
  EXPECT_EQ(Find(r, "team/v", "gpu-seconds")->arbiter, "100");  // 2 GPUs x (20 + 30) s
}

TEST(SlurmConformance, SlurmLatenciesFailWithoutTheAllowanceAndPassWithIt) {
  // Slurm kills the victim at 25 (5 s after the grace time) and restarts it at 40.
  const std::string late = SlurmRun(25, 40);
  ConformanceReport strict = Compare(late, nullptr);
  EXPECT_FALSE(strict.ok());
  EXPECT_EQ(Find(strict, "team/p", "start#1")->verdict, Verdict::kDiffers);
  Expectations ex = Parse(
      "allowances:\n  - {issue10: latencies, startAfterWait: 15s, gpuSecondsPerPreemptedRun: "
      "6s}\n");
  ConformanceReport allowed = Compare(late, &ex);
  EXPECT_TRUE(allowed.ok()) << ConformanceTable(allowed);
  EXPECT_EQ(Find(allowed, "team/p", "start#1")->verdict, Verdict::kAgreeByAllowance);
  EXPECT_EQ(Find(allowed, "team/p", "start#1")->note, "issue10 latencies");
  // A start at submission never gets the allowance.
  EXPECT_EQ(Find(allowed, "team/v", "start#1")->delta, "0 (tolerance 3, at submission)");
  EXPECT_EQ(allowed.max_abs_start_waited_ms, 10000);
}

TEST(SlurmConformance, ExpectedDifferencesMustKeepDiffering) {
  const std::string same = Header() + Alloc("1", "v", "PREEMPTED", 0, 0, 20, 2) +
                           Alloc("2", "p", "COMPLETED", 10, 20, 30, 2) +
                           Alloc("1", "v", "COMPLETED", 20, 30, 60, 2);
  Expectations ex = Parse(
      "differences:\n"
      "  - {job: team/v, point: runs, issue10: victim-exits-within-grace}\n"
      "  - {job: team/nobody, point: final-state, issue10: victim-order-equal-qos}\n");
  ConformanceReport r = Compare(same, &ex);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Find(r, "team/v", "runs")->verdict, Verdict::kNoLongerDiffers);
  EXPECT_EQ(Find(r, "team/nobody", "final-state")->verdict, Verdict::kNoLongerDiffers);
  EXPECT_NE(Find(r, "team/nobody", "final-state")->note.find("names no compared point"),
            std::string::npos);
}

TEST(SlurmConformance, AnExpectedDifferenceIsReportedAsSuch) {
  // In Slurm the victim exits within its grace time: COMPLETED, one run, nothing to requeue.
  const std::string within = Header() + Alloc("1", "v", "COMPLETED", 0, 0, 13, 2) +
                             Alloc("2", "p", "COMPLETED", 10, 14, 24, 2);
  Expectations ex = Parse(
      "tolerances: {start: 3s, gpuSecondsPerRun: 3s}\n"
      "allowances: [{issue10: latencies, startAfterWait: 20s}]\n"
      "differences:\n"
      "  - {job: team/v, point: runs, issue10: victim-exits-within-grace, note: x}\n"
      "  - {job: team/v, point: gpu-seconds, issue10: victim-exits-within-grace}\n");
  ConformanceReport r = Compare(within, &ex);
  EXPECT_TRUE(r.ok()) << ConformanceTable(r);
  EXPECT_EQ(Find(r, "team/v", "runs")->verdict, Verdict::kExpected);
  EXPECT_EQ(Find(r, "team/v", "runs")->note, "issue10 victim-exits-within-grace");
  EXPECT_EQ(Find(r, "team/v", "final-state")->verdict, Verdict::kAgree);   // Succeeded in both
  EXPECT_EQ(Find(r, "team/v", "preempted-by")->verdict, Verdict::kAgree);  // the log says so
}

TEST(SlurmConformance, WithoutTheLogOnlyPreemptedRunsCount) {
  ConformanceReport r = Compare(SlurmRun(20, 30), nullptr, /*log=*/false);
  const ComparedPoint* p = Find(r, "team/v", "preempted");
  ASSERT_NE(p, nullptr) << ConformanceTable(r);
  EXPECT_EQ(p->verdict, Verdict::kAgree);
  EXPECT_EQ(Find(r, "team/p", "preempted-by")->slurm, "-");
}

TEST(SlurmConformance, JobsOnOneSideOnlyDiffer) {
  const std::string extra = SlurmRun(20, 30) + Alloc("3", "ghost", "COMPLETED", 0, 0, 5, 1);
  ConformanceReport r = Compare(extra, nullptr);
  const ComparedPoint* p = Find(r, "team/ghost", "present");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->verdict, Verdict::kDiffers);
}

TEST(SlurmConformance, BadExpectationFilesSayWhere) {
  auto unknown_item =
      Expectations::Parse("differences:\n  - {job: a/b, point: runs, issue10: speed}\n", "e.yaml");
  ASSERT_FALSE(unknown_item.ok());
  EXPECT_NE(
      unknown_item.message().find("e.yaml:2: differences: issue10 must name an issue-10 item"),
      std::string::npos)
      << unknown_item.message();
  auto bad_duration = Expectations::Parse("tolerances: {start: soon}\n", "e.yaml");
  ASSERT_FALSE(bad_duration.ok());
  EXPECT_NE(bad_duration.message().find("tolerances.start"), std::string::npos)
      << bad_duration.message();
  auto unknown_field = Expectations::Parse("tolerance: {}\n", "e.yaml");
  ASSERT_FALSE(unknown_field.ok());
  EXPECT_NE(unknown_field.message().find("unknown field \"tolerance\""), std::string::npos);
}

TEST(SlurmConformance, TwoJobsWithOneNameCannotBeCompared) {
  auto runs = ParseSacctText(Header() + Alloc("1", "v", "COMPLETED", 0, 0, 5, 1) +
                                 Alloc("9", "v", "COMPLETED", 0, 0, 5, 1),
                             "s.txt");
  ASSERT_TRUE(runs.ok());
  const nlohmann::json report = SimReport();
  ConformanceInputs in;
  in.runs = &*runs;
  in.report = &report;
  auto r = CompareWithSlurm(in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("two Slurm jobs are team/v (1 and 9)"), std::string::npos)
      << r.message();
}

// ------------------------------------------------------------------ gangs

// A Slurm multi-node job: AllocTRES counts the totals over its nodes (node=N), as a real
// `sbatch -N 2 --ntasks-per-node=1 --gres=gpu:2` job's record does (see sacct_import_test).
std::string MultiNode(const std::string& id, const std::string& name, const std::string& state,
                      int submit, int start, int end, int gpus, int nodes) {
  auto t = [](int s) { return std::to_string(1000000 + s); };
  return id + "|" + id + "|" + name + "|ci|p|team|u|high|" + state + "|0:0|" + t(submit) + "|" +
         t(submit) + "|" + t(start) + "|" + t(end) + "|00:00:00|" + std::to_string(end - start) +
         "|n[1-2]|cpu=2,gres/gpu=" + std::to_string(gpus) + ",node=" + std::to_string(nodes) +
         "||\n";
}

// Arbiter: `v` (2 GPUs on n1) preempted at 10 by member g-1 of pod group `g` (two pods of 2
// GPUs); v gone at 20, g's members start at 20 on `node0` and `node1`, complete at 30.
nlohmann::json GangReport(const char* node0, const char* node1) {
  using J = nlohmann::json;
  J r;
  r["endTime"] = 40;
  r["workloads"] = J::array(
      {J{{"name", "team/v"}, {"phase", "Preempted"}, {"requests", "cpu=1,nvidia.com/gpu=2"}},
       J{{"name", "team/g-0"}, {"phase", "Succeeded"}, {"requests", "cpu=1,nvidia.com/gpu=2"}},
       J{{"name", "team/g-1"}, {"phase", "Succeeded"}, {"requests", "cpu=1,nvidia.com/gpu=2"}}});
  auto ev = [](double t, const char* type, const char* w, const char* node = nullptr,
               const char* by = nullptr) {
    J e{{"time", t}, {"type", type}, {"workload", w}};
    e["node"] = node ? J(node) : J();
    e["by"] = by ? J(by) : J();
    return e;
  };
  r["events"] = J::array(
      {ev(0, "Submitted", "team/v"), ev(0, "Scheduled", "team/v", "n1"),
       ev(10, "Submitted", "team/g-0"), ev(10, "Submitted", "team/g-1"),
       ev(10, "Preempted", "team/v", "n1", "team/g-1"), ev(20, "Terminated", "team/v", "n1"),
       ev(20, "Scheduled", "team/g-0", node0), ev(20, "Scheduled", "team/g-1", node1),
       ev(30, "Completed", "team/g-0", node0), ev(30, "Completed", "team/g-1", node1)});
  return r;
}

ConformanceReport CompareGang(const nlohmann::json& report) {
  // Slurm: v killed at 20 (PREEMPTED, cancel mode), the 2-node job g runs 20..30.
  auto runs = ParseSacctText(Header() + Alloc("1", "v", "PREEMPTED", 0, 0, 20, 2) +
                                 MultiNode("2", "g", "COMPLETED", 10, 20, 30, 4, 2),
                             "s.txt");
  EXPECT_TRUE(runs.ok()) << runs.message();
  const GangMembers gangs = {{"team/g", {"team/g-0", "team/g-1"}}};
  ConformanceInputs in;
  in.runs = &*runs;
  in.report = &report;
  in.slurmctld_log =
      "[2026-01-01T00:00:10.000] debug:  setting 10 sec preemption grace time for JobId=1 to "
      "reclaim resources for JobId=2\n";
  in.gangs = &gangs;
  auto r = CompareWithSlurm(in);
  EXPECT_TRUE(r.ok()) << r.message();
  return *r;
}

TEST(SlurmConformance, AMultiNodeSlurmJobIsComparedWithThePodGroupOfItsName) {
  ConformanceReport r = CompareGang(GangReport("n1", "n2"));
  EXPECT_TRUE(r.ok()) << ConformanceTable(r);
  EXPECT_EQ(r.jobs, 2) << ConformanceTable(r);  // v and the group; no member on its own
  EXPECT_EQ(Find(r, "team/g-0", "runs"), nullptr);
  EXPECT_EQ(r.Count(Verdict::kAgree), static_cast<int>(r.points.size())) << ConformanceTable(r);
  // The victim's preemptor is the group on both sides (Arbiter names the member g-1).
  EXPECT_EQ(Find(r, "team/v", "preempted-by")->arbiter, "team/g");
  EXPECT_EQ(Find(r, "team/g", "start#1")->arbiter, "20");
  EXPECT_EQ(Find(r, "team/g", "final-state")->arbiter, "Succeeded");
  // GPU-seconds: the members' sum (2 + 2 GPUs x 10 s) = Slurm's gres/gpu total x 10 s.
  EXPECT_EQ(Find(r, "team/g", "gpu-seconds")->arbiter, "40");
  EXPECT_EQ(Find(r, "team/g", "gpu-seconds")->slurm, "40");
  EXPECT_EQ(Find(r, "team/g", "nodes")->slurm, "2");
  EXPECT_EQ(Find(r, "team/g", "nodes")->arbiter, "2");
  EXPECT_EQ(Find(r, "team/v", "nodes"), nullptr);  // single-node jobs have no nodes point
}

TEST(SlurmConformance, AGangPackedOnOneNodeDiffersFromSlurmsSpreadJob) {
  // Slurm's -N 2 spreads over two nodes; a pod group has no such constraint.
  ConformanceReport r = CompareGang(GangReport("n1", "n1"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(Find(r, "team/g", "nodes")->verdict, Verdict::kDiffers) << ConformanceTable(r);
  EXPECT_EQ(Find(r, "team/g", "nodes")->arbiter, "1");
}

TEST(SlurmConformance, WithoutItsPodGroupAMultiNodeJobMatchesNoPod) {
  auto runs =
      ParseSacctText(Header() + MultiNode("2", "g", "COMPLETED", 10, 20, 30, 4, 2), "s.txt");
  ASSERT_TRUE(runs.ok());
  const nlohmann::json report = GangReport("n1", "n2");
  ConformanceInputs in;
  in.runs = &*runs;
  in.report = &report;
  auto r = CompareWithSlurm(in);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "team/g", "present")->verdict, Verdict::kDiffers);
  EXPECT_EQ(Find(*r, "team/g-0", "present")->verdict, Verdict::kDiffers);
}

TEST(SlurmConformance, GangMembersComeFromThePodGroupLabel) {
  ManifestSet set;
  auto pod = [&](const std::string& ns, const std::string& name, const std::string& group) {
    Pod p;
    p.meta.namespace_ = ns;
    p.meta.name = name;
    if (!group.empty()) p.meta.labels[kPodGroupLabel] = group;
    set.pods.push_back(p);
  };
  pod("a", "t-0", "train");
  pod("a", "solo", "");
  pod("b", "t-0", "train");
  pod("a", "t-1", "train");
  const GangMembers g = GangMembersOf(set);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.at("a/train"), (std::vector<std::string>{"a/t-0", "a/t-1"}));
  EXPECT_EQ(g.at("b/train"), (std::vector<std::string>{"b/t-0"}));
}

}  // namespace slurm_conformance_test
}  // namespace arbiter::slurm
