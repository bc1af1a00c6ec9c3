// `arbiter slurm export|import|compare` as a user runs them, without Slurm: the import and the
// comparison use the sacct output recorded from a real run (tests/data/slurm/recorded/), so they
// are fast and deterministic. The live run is tests/integration/slurm_conformance_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "run_command.h"

namespace {

namespace fs = std::filesystem;
using arbiter::testing::CommandOutput;

fs::path Scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("arbiter-slurm-cli-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string Src(const std::string& rel) { return std::string(ARBITER_SOURCE_DIR) + "/" + rel; }
const std::string kPolicy = Src("tests/data/slurm/conformance-policy.yaml");
const std::string kWorkload = Src("tests/data/slurm/conformance-workload.yaml");
const std::string kSacct = Src("tests/data/slurm/recorded/sacct.txt");
const std::string kLog = Src("tests/data/slurm/recorded/slurmctld-preempt.log");
const std::string kExpect = Src("tests/data/slurm/conformance-expected.yaml");

CommandOutput Arbiter(const std::string& args, const fs::path& dir) {
  return arbiter::testing::RunCommandSplit(std::string(ARBITER_BINARY) + " " + args, dir);
}

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(SlurmCli, ExportWritesTheScriptAndTheFragmentAndWarnsOnStderr) {
  const fs::path d = Scratch("export");
  auto r = Arbiter("slurm export -f " + kPolicy +
                       " --cluster arbiter --user alice --price-at 2026-06-01T00:00:00Z -o " +
                       (d / "out").string(),
                   d);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string script = Read(d / "out/sacctmgr.sh"), conf = Read(d / "out/slurm-policy.conf");
  EXPECT_NE(script.find("$SACCTMGR -i modify qos where name=high set Priority=10000 "
                        "PreemptMode=cluster GraceTime=10"),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("has_user alice team-b || $SACCTMGR -i add user alice Account=team-b"),
            std::string::npos);
  EXPECT_NE(conf.find("PartitionName=DEFAULT TRESBillingWeights=CPU=50,Mem=10G,GRES/gpu=2500"),
            std::string::npos);
  EXPECT_TRUE((fs::status(d / "out/sacctmgr.sh").permissions() & fs::perms::owner_exec) !=
              fs::perms::none);
  // Warnings as `arbiter validate` prints them, then a summary.
  EXPECT_NE(
      r.err.find(kPolicy +
                 ":60: PriceBook/standard: spec.mode: warning: Max: Slurm's billing TRES weighs "
                 "allocations only"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("arbiter slurm export: 3 QoS, 2 accounts, 1 user in "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; 4 warnings"), std::string::npos) << r.err;
  // spec.latency: the cluster timers Slurm has keys for; cred_expire and the grace-end delay
  // are warnings.
  EXPECT_NE(conf.find("\nKillWait=2\nMessageTimeout=5\n"), std::string::npos) << conf;
  EXPECT_NE(
      r.err.find("PoolPolicy/default: spec.latency.credExpire: warning: 10s: not exported; it is "
                 "AuthInfo's cred_expire=10"),
      std::string::npos)
      << r.err;
  // bash can read it.
  EXPECT_EQ(arbiter::testing::RunCommand("bash -n " + (d / "out/sacctmgr.sh").string()).rc, 0);
}

TEST(SlurmCli, ExportToStdoutStrictAndBadInput) {
  const fs::path d = Scratch("export2");
  auto out = Arbiter("slurm export -f " + kPolicy + " --price-at 2026-06-01T00:00:00Z", d);
  ASSERT_EQ(out.rc, 0) << out.err;
  EXPECT_NE(out.out.find("#!/usr/bin/env bash"), std::string::npos);
  EXPECT_NE(out.out.find("# ==== slurm.conf fragment ===="), std::string::npos);
  EXPECT_NE(out.out.find("CLUSTER=\n"), std::string::npos);  // no --cluster: every cluster
  auto strict = Arbiter("slurm export --strict -f " + kPolicy + " -o " + (d / "s").string(), d);
  EXPECT_EQ(strict.rc, 1);
  EXPECT_NE(strict.err.find("--strict: 4 warnings"), std::string::npos) << strict.err;
  EXPECT_FALSE(fs::exists(d / "s/sacctmgr.sh"));
  auto cluster = Arbiter("slurm export -f " + kPolicy + " --cluster 'Bad Name'", d);
  EXPECT_EQ(cluster.rc, 2);
  auto missing = Arbiter("slurm export -f /nonexistent.yaml", d);
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("cannot read /nonexistent.yaml: no such file"), std::string::npos)
      << missing.err;
  std::ofstream(d / "bad.yaml")
      << "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\n"
         "spec: {hard: {requests.cpu: lots}}\n";
  auto bad = Arbiter("slurm export -f " + (d / "bad.yaml").string(), d);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("bad.yaml:4: ResourceQuota/a/q:"), std::string::npos) << bad.err;
  auto usage = Arbiter("slurm", d);
  EXPECT_EQ(usage.rc, 2);
}

TEST(SlurmCli, ImportTheRecordedRunTwiceThenInvoice) {
  const fs::path d = Scratch("import");
  const std::string db = (d / "ledger.db").string();
  auto first = Arbiter("slurm import --sacct-file " + kSacct + " --db " + db + " -f " + kPolicy, d);
  ASSERT_EQ(first.rc, 0) << first.err;
  EXPECT_NE(first.out.find("11 jobs, 12 runs (0 not started, 0 still running) -> 12 segments"),
            std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("22 inserted, 0 unchanged"), std::string::npos) << first.out;
  auto again = Arbiter("slurm import --sacct-file " + kSacct + " --db " + db + " -f " + kPolicy, d);
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_NE(again.out.find("0 inserted, 22 unchanged, 0 replaced, 0 corrected"), std::string::npos)
      << again.out;
  auto inv = Arbiter("invoice --db " + db + " -o json", d);
  ASSERT_EQ(inv.rc, 0) << inv.err;
  auto j = nlohmann::json::parse(inv.out);
  ASSERT_EQ(j.size(), 2u);
  // Golden values of the recorded run: GPU-seconds each tenant's runs held, from Start to where
  // they released the node (Max mode bills GPUs by request).
  std::map<std::string, std::string> gpu;
  for (const auto& i : j)
    for (const auto& l : i["lines"])
      if (l["resource"] == "nvidia.com/gpu") gpu[i["namespace"]] = l["requestQuantity"];
  EXPECT_EQ(gpu["team-a"], "648");
  EXPECT_EQ(gpu["team-b"], "320");
  EXPECT_EQ(j[0]["total"], "0.468000");
  EXPECT_EQ(j[1]["total"], "0.231111");
}

TEST(SlurmCli, OneBillPerTenantAcrossKubernetesAndSlurm) {
  const fs::path d = Scratch("onebill");
  const std::string db = (d / "ledger.db").string();
  // A Kubernetes pod of team-a, 2 GPUs for one hour, as `arbiter sim --ledger` or a collector
  // writes run segments.
  std::ofstream(d / "k8s.jsonl")
      << R"({"workload":"team-a/trainer-0","namespace":"team-a","node":"gpu-7",)"
      << R"("requests":{"cpu":"4","nvidia.com/gpu":"2"},"start":"2026-12-01T03:00:00Z",)"
      << R"("end":"2026-12-01T04:00:00Z"})"
      << "\n";
  auto k8s = Arbiter("invoice ingest --db " + db + " --segments " + (d / "k8s.jsonl").string() +
                         " --pricebook " + kPolicy,
                     d);
  ASSERT_EQ(k8s.rc, 0) << k8s.err;
  auto slurm = Arbiter("slurm import --sacct-file " + kSacct + " --db " + db + " -f " + kPolicy, d);
  ASSERT_EQ(slurm.rc, 0) << slurm.err;
  auto inv = Arbiter("invoice --db " + db + " --namespace team-a -o json", d);
  ASSERT_EQ(inv.rc, 0) << inv.err;
  auto j = nlohmann::json::parse(inv.out);
  ASSERT_EQ(j.size(), 1u);
  // One GPU line: 7200 GPU-seconds of the pod + 648 of the Slurm jobs, at the same price.
  bool found = false;
  for (const auto& l : j[0]["lines"])
    if (l["resource"] == "nvidia.com/gpu") {
      found = true;
      EXPECT_EQ(l["requestQuantity"], "7848");
      EXPECT_EQ(l["amount"], "5.450000");  // 7848 / 3600 x 2.50
    }
  EXPECT_TRUE(found) << inv.out;
  std::set<std::string> workloads;
  for (const auto& p : j[0]["provenance"]) workloads.insert(p["workload"]);
  EXPECT_TRUE(workloads.count("team-a/trainer-0"));
  EXPECT_TRUE(workloads.count("team-a/slurm-arbiter-9"));  // low-4, two runs
}

// Issue 28, as a user runs it: a MIG gres type that `slurm export` writes is billed as a MIG
// instance (not a whole GPU) without any map, and a run without step usage has the request as
// its usage track exactly (not re-sampled on the 30 s grid: 3,540 of 3,588 core-s here before),
// flagged in the invoice's provenance.
TEST(SlurmCli, MigGresTypesAndRunsWithoutStepUsageAreBilledAsTheyRan) {
  const fs::path d = Scratch("mig-nosteps");
  std::ofstream(d / "book.yaml") << "apiVersion: arbiter.dev/v1alpha1\nkind: PriceBook\n"
                                    "metadata: {name: p}\nspec:\n  currency: USD\n"
                                    "  effectiveFrom: \"2026-01-01T00:00:00Z\"\n  mode: Usage\n"
                                    "  prices: {cpu: \"1\", nvidia.com/gpu: \"7.00\"}\n";
  const std::string head =
      "JobID|JobIDRaw|JobName|Cluster|Partition|Account|User|QOS|State|ExitCode|Submit|Eligible|"
      "Start|End|Elapsed|ElapsedRaw|NodeList|AllocTRES|TRESUsageInTot|TRESUsageInAve\n";
  auto job = [](const std::string& id, const std::string& tres) {
    return id + "|" + id + "|j" + id +
           "|c|p|team-a|u|low|COMPLETED|0:0|2026-12-01T00:00:00|2026-12-01T00:00:00|"
           "2026-12-01T00:00:12|2026-12-01T01:00:00|00:59:48|3588|n1|" +
           tres + "||\n";
  };
  std::ofstream(d / "sacct.txt") << head << job("1", "cpu=1,node=1")
                                 << job("2", "gres/gpu:1g.10gb=1,gres/gpu=1,node=1");
  const std::string db = (d / "l.db").string();
  auto imp = Arbiter("slurm import --sacct-file " + (d / "sacct.txt").string() + " --db " + db +
                         " -f " + (d / "book.yaml").string(),
                     d);
  ASSERT_EQ(imp.rc, 0) << imp.err;
  auto inv = Arbiter("invoice --db " + db + " -o json", d);
  ASSERT_EQ(inv.rc, 0) << inv.err;
  auto j = nlohmann::json::parse(inv.out);
  ASSERT_EQ(j.size(), 1u);
  std::map<std::string, nlohmann::json> lines;
  for (const auto& l : j[0]["lines"]) lines[l["resource"]] = l;
  ASSERT_TRUE(lines.count("cpu")) << inv.out;
  EXPECT_EQ(lines["cpu"]["requestQuantity"], "3588");
  EXPECT_EQ(lines["cpu"]["usageQuantity"], "3588");
  EXPECT_EQ(lines["cpu"]["amount"], "0.996667");  // 3588 / 3600 x 1
  EXPECT_FALSE(lines.count("nvidia.com/gpu")) << inv.out;
  ASSERT_TRUE(lines.count("nvidia.com/mig-1g.10gb")) << inv.out;
  EXPECT_EQ(lines["nvidia.com/mig-1g.10gb"]["usageQuantity"], "3588");
  int flagged = 0;
  for (const auto& p : j[0]["provenance"]) flagged += p.value("usageFromRequest", false) ? 1 : 0;
  EXPECT_EQ(flagged, 2) << j[0]["provenance"].dump();
  auto table = Arbiter("invoice --db " + db, d);
  EXPECT_NE(table.out.find("usage = request: team-a/slurm-c-1 cpu"), std::string::npos)
      << table.out;
}

TEST(SlurmCli, ImportErrorsAndDryRun) {
  const fs::path d = Scratch("import-errors");
  std::ofstream(d / "bad.txt")
      << "JobID|JobName|Account|QOS|State|Start|End|Elapsed|AllocTRES\n"
         "1|x|a|low|COMPLETED|2026-01-01T00:00:00|2026-01-01T00:00:09|00:00:09|cpu=eight\n";
  auto bad = Arbiter(
      "slurm import --sacct-file " + (d / "bad.txt").string() + " --db " + (d / "l.db").string(),
      d);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("bad.txt:2:70: AllocTRES: cpu=eight: not a count"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(d / "l.db"));
  auto both = Arbiter("slurm import --sacct-file x --since 2026-01-01T00:00:00Z --db l.db", d);
  EXPECT_EQ(both.rc, 2);
  auto no_db = Arbiter("slurm import --sacct-file " + kSacct, d);
  EXPECT_EQ(no_db.rc, 2);
  auto no_sacct =
      Arbiter("slurm import --since 2026-01-01T00:00:00Z --sacct /nonexistent/sacct --db " +
                  (d / "l.db").string(),
              d);
  EXPECT_EQ(no_sacct.rc, 1);
  EXPECT_NE(no_sacct.err.find("cannot run /nonexistent/sacct"), std::string::npos) << no_sacct.err;
  auto no_book =
      Arbiter("slurm import --sacct-file " + kSacct + " --db " + (d / "l.db").string(), d);
  EXPECT_EQ(no_book.rc, 1);
  EXPECT_NE(no_book.err.find("no PriceBook given"), std::string::npos) << no_book.err;
  EXPECT_FALSE(fs::exists(d / "l.db"));
  auto dry = Arbiter("slurm import --sacct-file " + kSacct + " --dry-run --segments-out " +
                         (d / "s.jsonl").string(),
                     d);
  ASSERT_EQ(dry.rc, 0) << dry.err;
  const std::string segs = Read(d / "s.jsonl");
  EXPECT_EQ(std::count(segs.begin(), segs.end(), '\n'), 12);
  EXPECT_NE(segs.find("\"workload\":\"team-a/slurm-arbiter-9\""), std::string::npos) << segs;
}

TEST(SlurmCli, CompareTheRecordedRunWithTheSimulation) {
  const fs::path d = Scratch("compare");
  const std::string report = (d / "sim.json").string();
  auto sim = Arbiter("sim -q -f " + kPolicy + " -f " + kWorkload + " --report-json " + report, d);
  ASSERT_EQ(sim.rc, 0) << sim.err;
  const std::string args = "slurm compare --sacct-file " + kSacct + " --report-json " + report +
                           " -f " + kPolicy + " --slurmctld-log " + kLog;
  auto table = Arbiter(args + " --expect " + kExpect, d);
  EXPECT_EQ(table.rc, 0) << table.out << table.err;
  EXPECT_NE(table.out.find("11 jobs, 56 points:"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("0 unexpected differences, 0 expected differences that no longer occur"),
            std::string::npos)
      << table.out;
  auto json = Arbiter(args + " --expect " + kExpect + " -o json", d);
  ASSERT_EQ(json.rc, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  std::map<std::string, int> verdicts;
  for (const auto& p : j["points"]) ++verdicts[p["verdict"]];
  EXPECT_EQ(verdicts["expected difference"], 0);  // issue 10's Slurm items are fixed
  EXPECT_EQ(verdicts["DIFFERS"], 0);
  EXPECT_GE(verdicts["agree"], 40);
  EXPECT_EQ(verdicts["agree (allowance)"], 0);
  EXPECT_EQ(verdicts["agree"], 56);
}

// A Slurm multi-node job is an Arbiter gang: the recorded run of the gang workload (two pod
// groups as `sbatch -N 2 --ntasks-per-node=1` on the test stack's nodes n1, n2; recorded/README.md)
// agrees with `arbiter sim` on every point once compare knows the pod groups (-f the workload).
TEST(SlurmCli, CompareTheRecordedGangRunWithTheSimulation) {
  const fs::path d = Scratch("gang");
  const std::string policy = Src("tests/data/slurm/gang-policy.yaml");
  const std::string workload = Src("tests/data/slurm/gang-workload.yaml");
  const std::string report = (d / "sim.json").string();
  auto sim = Arbiter("sim -q -f " + policy + " -f " + workload + " --report-json " + report, d);
  ASSERT_EQ(sim.rc, 0) << sim.err;
  std::string t0 = Read(Src("tests/data/slurm/recorded/gang-t0.txt"));
  while (!t0.empty() && t0.back() == '\n') t0.pop_back();
  const std::string args = "slurm compare --sacct-file " +
                           Src("tests/data/slurm/recorded/gang-sacct.txt") + " --report-json " +
                           report + " -f " + policy + " --slurmctld-log " +
                           Src("tests/data/slurm/recorded/gang-slurmctld-preempt.log") +
                           " --expect " + kExpect + " --t0 " + t0;
  auto table = Arbiter(args + " -f " + workload, d);
  EXPECT_EQ(table.rc, 0) << table.out << table.err;
  EXPECT_NE(table.out.find("5 jobs, "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("0 agree with an allowance, 0 expected differences, 0 unexpected"),
            std::string::npos)
      << table.out;
  for (const char* row :
       {"team-a/gang-high +nodes +2 +2 +agree", "team-a/gang-high +start#1 +27.665 +27 +agree",
        "team-b/scav-1 +preempted-by +team-a/gang-high +team-a/gang-high +agree",
        "team-a/gang-low +preempted-by +team-b/high-1 +team-b/high-1 +agree",
        "team-a/gang-low +runs +2 +2 +agree", "team-a/gang-low +gpu-seconds +"})
    EXPECT_TRUE(std::regex_search(table.out, std::regex(row))) << row << "\n" << table.out;
  // Without the pod groups, every member is a job of its own that Slurm never ran.
  auto members = Arbiter(args, d);
  EXPECT_EQ(members.rc, 1);
  EXPECT_TRUE(std::regex_search(members.out, std::regex("team-a/gang-high-0 +present +no +yes")))
      << members.out;
}

// With spec.latency (the test cluster's timers) every start and every GPU-second of the recorded
// run agrees within the base tolerances: starts within 3 s, after a wait too (measured at most
// 2 s: Slurm's scheduling pass between a submission and its preemption decision, not modelled,
// and sacct's whole seconds). Without the model, Slurm's latencies are failures.
TEST(SlurmCli, LatencyModelMatchesTheRecordedRunWithinThreeSeconds) {
  const fs::path d = Scratch("latency");
  auto compare = [&](const std::string& policy, const std::string& name) {
    const std::string report = (d / (name + ".json")).string();
    auto sim = Arbiter("sim -q -f " + policy + " -f " + kWorkload + " --report-json " + report, d);
    EXPECT_EQ(sim.rc, 0) << sim.err;
    return Arbiter("slurm compare --sacct-file " + kSacct + " --report-json " + report + " -f " +
                       policy + " --slurmctld-log " + kLog,
                   d);
  };
  // No --expect: the default tolerances (start 3 s, 3 s per GPU and run), no allowances.
  auto on = compare(kPolicy, "on");
  EXPECT_EQ(on.rc, 0) << on.out << on.err;
  EXPECT_NE(on.out.find("56 points: 56 agree, 0 agree with an allowance"), std::string::npos)
      << on.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      on.out, m, std::regex("max \\|delta\\| ([0-9.]+) s at submission, ([0-9.]+) s after a wait")))
      << on.out;
  EXPECT_LE(std::stod(m[1]), 3.0);
  EXPECT_LE(std::stod(m[2]), 3.0);
  EXPECT_TRUE(std::regex_search(on.out, std::regex("team-b/high-3 +start#1 +124 +123 +agree")))
      << on.out;
  EXPECT_TRUE(std::regex_search(on.out, std::regex("team-a/low-4 +start#2 +136 +134 +agree")))
      << on.out;
  // The same policy without spec.latency: the preemptors start 13-16 s early.
  std::string off = Read(kPolicy);
  const auto at = off.find("  latency:");
  ASSERT_NE(at, std::string::npos);
  off.erase(at, off.find('\n', at) + 1 - at);
  std::ofstream(d / "off.yaml") << off;
  auto strict = compare((d / "off.yaml").string(), "off");
  EXPECT_EQ(strict.rc, 1);
  EXPECT_TRUE(
      std::regex_search(strict.out, std::regex("team-b/scav-3 +gpu-seconds +66 +40 +DIFFERS")))
      << strict.out;
  EXPECT_TRUE(std::regex_search(
      strict.out, std::regex("team-b/scav-3 +preempted-by +team-b/high-2 +team-b/high-2 +agree")))
      << strict.out;
  EXPECT_TRUE(std::regex_search(strict.out, std::regex("team-a/low-2 +runs +1 +1 +agree")))
      << strict.out;
  // An expectation that no longer holds is a failure too: pretend scav-1 was expected to differ.
  const std::string args = "slurm compare --sacct-file " + kSacct + " --report-json " +
                           (d / "on.json").string() + " -f " + kPolicy + " --slurmctld-log " + kLog;
  std::string extra = Read(kExpect);
  extra.replace(extra.find("differences: []"), 15,
                "differences:\n  - {job: team-b/scav-1, point: runs, issue10: latencies}");
  std::ofstream(d / "extra.yaml") << extra;
  auto stale = Arbiter(args + " --expect " + (d / "extra.yaml").string(), d);
  EXPECT_EQ(stale.rc, 1);
  EXPECT_TRUE(
      std::regex_search(stale.out, std::regex("team-b/scav-1 +runs +1 +1 +NO LONGER DIFFERS")))
      << stale.out;
}

}  // namespace
