// sacct runs -> run segments: where runs end, requests from AllocTRES, the usage track from the
// steps, accounts -> namespaces, GPU models from gres types (docs/slurm.md).
#include "adapters/slurm/sacct_import.h"

#include <gtest/gtest.h>

#include "adapters/slurm/slurm_names.h"
#include "core/billing/invoice.h"

namespace arbiter::slurm {
namespace {

std::string Header() {
  std::string h(kSacctFormat);
  for (char& c : h)
    if (c == ',') c = '|';
  return h + "\n";
}

// One allocation line: JobID, name, account, qos, state, start, end (Unix s or ""), elapsed s,
// AllocTRES.
std::string Alloc(const std::string& id, const std::string& account, const std::string& state,
                  const std::string& start, const std::string& end, int elapsed,
                  const std::string& tres, const std::string& cluster = "ci") {
  return id + "|" + id + "|job" + id + "|" + cluster + "|p|" + account + "|u|low|" + state +
         "|0:0|" + start + "|" + start + "|" + start + "|" + end + "|00:00:00|" +
         std::to_string(elapsed) + "|node1|" + tres + "||\n";
}
std::string Step(const std::string& id, const std::string& start, const std::string& end,
                 const std::string& usage) {
  return id + "|" + id + "|batch|ci||a|||COMPLETED|0:0|" + start + "|" + start + "|" + start + "|" +
         end + "|00:00:00|0|node1|cpu=1|" + usage + "|\n";
}

ImportResult Import(const std::string& text, const NameMap& names = NameMap()) {
  auto runs = ParseSacctText(text, "s.txt");
  EXPECT_TRUE(runs.ok()) << runs.message();
  auto r = SegmentsFromSacct(*runs, names, ImportOptions{}, "s.txt");
  EXPECT_TRUE(r.ok()) << r.message();
  return r.ok() ? *r : ImportResult{};
}

TEST(SacctImport, EachStartedRunIsASegmentAndARequeuedJobHasOnePerRun) {
  ImportResult r =
      Import(Header() + Alloc("1", "team-a", "PREEMPTED", "1000", "1020", 20, "cpu=8,gres/gpu=4") +
             Alloc("1", "team-a", "COMPLETED", "1040", "1100", 60, "cpu=8,gres/gpu=4") +
             Alloc("2", "team-a", "CANCELLED by 0", "None", "1010", 0, "cpu=0"));
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.jobs, 2);
  EXPECT_EQ(r.runs, 3);
  EXPECT_EQ(r.not_started, 1);
  for (const auto& s : r.segments) {
    EXPECT_EQ(s.workload, "team-a/slurm-ci-1");  // both runs: one workload, billed together
    EXPECT_EQ(s.namespace_, "team-a");
    EXPECT_EQ(s.requests.Get("cpu"), 8000);
    EXPECT_EQ(s.requests.Get("nvidia.com/gpu"), 4000);
    EXPECT_EQ(s.node, "node1");
  }
  EXPECT_EQ(r.segments[0].start, 1000000);
  EXPECT_EQ(r.segments[0].end, 1020000);
  EXPECT_EQ(r.segments[1].start, 1040000);
}

TEST(SacctImport, EveryRunIsBilledForTheTimeItHeldItsAllocationWhateverItsState) {
  ImportResult r = Import(Header() + Alloc("1", "a", "REQUEUED", "1000", "1010", 10, "cpu=1") +
                          Alloc("1", "a", "NODE_FAIL", "1020", "1030", 10, "cpu=1") +
                          Alloc("1", "a", "TIMEOUT", "1040", "1050", 10, "cpu=1") +
                          Alloc("2", "a", "CANCELLED by 0", "1000", "1005", 5, "cpu=1") +
                          Alloc("3", "a", "OUT_OF_MEMORY", "1000", "1001", 1, "cpu=1"));
  ASSERT_EQ(r.segments.size(), 5u);
  Millis held = 0;
  for (const auto& s : r.segments) held += s.end - s.start;
  EXPECT_EQ(held, 36000);
  EXPECT_EQ(r.jobs, 3);
}

TEST(SacctImport, APreemptedRunEndsWhereItsStepsReleasedTheNode) {
  // The record ends at the kill (1020); the batch step was reaped 7 s later: the node was held
  // until 1027.
  ImportResult r =
      Import(Header() + Alloc("1", "a", "PREEMPTED", "1000", "1020", 20, "cpu=2,gres/gpu=1") +
             Step("1.batch", "1000", "1024", "") + Step("1.0", "1000", "1027", ""));
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].end, 1027000);
}

TEST(SacctImport, ARunningJobIsBilledToStartPlusElapsed) {
  ImportResult r = Import(Header() + Alloc("3", "a", "RUNNING", "1000", "Unknown", 95, "cpu=1"));
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].end, 1095000);
  EXPECT_EQ(r.running, 1);
}

TEST(SacctImport, UsageTrackFromStepsCpuTimeAndPeakMemory) {
  // 100 s run, 2 CPUs allocated, 64000 MiB; steps used 50 + 30 CPU-seconds (0.8 cores on average)
  // and at most 2 GiB of resident memory.
  ImportResult r =
      Import(Header() + Alloc("4", "a", "COMPLETED", "1000", "1100", 100, "cpu=2,mem=64000M") +
             Step("4.batch", "1000", "1100", "cpu=00:00:50,mem=1073741824") +
             Step("4.0", "1000", "1100", "cpu=00:00:30,mem=2147483648"));
  ASSERT_EQ(r.segments.size(), 1u);
  const auto& s = r.segments[0];
  EXPECT_EQ(s.requests.Get("memory"), int64_t{64000} << 20);
  EXPECT_EQ(s.usage.Get("cpu"), 800);
  EXPECT_EQ(s.usage.Get("memory"), int64_t{2} << 30);
  for (const auto& n : r.notes)
    EXPECT_EQ(n.find("usage track = request track"), std::string::npos) << n;
}

TEST(SacctImport, WithoutStepUsageTheUsageTrackIsTheRequest) {
  ImportResult r =
      Import(Header() + Alloc("5", "a", "COMPLETED", "1000", "1010", 10, "cpu=4,gres/gpu=1") +
             Step("5.batch", "1000", "1010", "energy=0"));
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].usage, r.segments[0].requests);
  EXPECT_TRUE(r.segments[0].usage_from_request);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("1 run without step usage") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Issue 28: a run without step usage has the request as its usage track exactly, not the
// request re-sampled on the scrape grid (which lost the pieces before the first and after the
// last grid point: 2,400 of 3,576 core-s for a run of 00:00:12 .. 01:00:00 at 1 core), and the
// invoice flags it. A run with step usage is measured as before.
TEST(SacctImport, WithoutStepUsageTheUsageTrackIsExactlyTheRequestAndFlagged) {
  ImportResult r =
      Import(Header() + Alloc("5", "a", "COMPLETED", "1767225612", "1767229200", 3588, "cpu=1") +
             Alloc("6", "a", "COMPLETED", "1767225612", "1767229200", 3588, "cpu=1") +
             Step("6.batch", "1767225612", "1767229200", "cpu=00:30:00"));
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_TRUE(r.segments[0].usage_from_request);
  EXPECT_FALSE(r.segments[1].usage_from_request);
  auto rows = billing::MeterSegments({r.segments[0]}, billing::MeterConfig{});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const billing::HourlyRow& row = (*rows)[0];
  EXPECT_TRUE(row.request_raw == static_cast<billing::i128>(1000) * 3588000);
  EXPECT_TRUE(row.usage_raw == row.request_raw);
  EXPECT_TRUE(row.max_raw == row.request_raw);
  EXPECT_EQ(row.samples, 0);
  EXPECT_EQ(row.covered_ms, row.run_ms);
  PriceBook b;
  b.meta.name = "p";
  b.currency = "EUR";
  b.effective_from = 0;
  b.prices = {{"cpu", Decimal::FromInt(1)}};
  b.mode = BillingMode::kUsage;
  auto cat = billing::PriceCatalog::Create({b});
  ASSERT_TRUE(cat.ok());
  auto invs = billing::BuildInvoices(*rows, *cat);
  ASSERT_TRUE(invs.ok());
  ASSERT_EQ((*invs)[0].provenance.size(), 1u);
  EXPECT_TRUE((*invs)[0].provenance[0].usage_from_request);
  EXPECT_FALSE((*invs)[0].provenance[0].low_coverage);
  EXPECT_EQ((*invs)[0].lines[0].usage_quantity.ToString(), "3588");
  // The measured run: 30 min of CPU time over the run, sampled as before, not flagged.
  auto measured = billing::MeterSegments({r.segments[1]}, billing::MeterConfig{});
  ASSERT_TRUE(measured.ok());
  EXPECT_GT((*measured)[0].samples, 0);
}

// `slurm export` writes MIG resources as gres types ("nvidia.com/mig-1g.10gb" -> "1g.10gb",
// "nvidia.com/mig-1g.10gb+me" -> "1g.10gb_me"): `slurm import` maps them back to MIG instances by
// itself, without a policy or account map naming them. Regression: priced as whole GPUs of a
// model named "1g.10gb".
TEST(SacctImport, MigGresTypesThatExportWritesAreMigInstancesWithoutAMap) {
  for (const std::string mig : {"nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb+me",
                                "nvidia.com/mig-3g.40gb", "nvidia.com/mig-2g.10gb"})
    EXPECT_EQ(MigResourceOfGresType(GresTypeOfMig(mig)), std::optional<std::string>(mig));
  EXPECT_EQ(MigResourceOfGresType("h100-80gb-hbm3"), std::nullopt);
  ImportResult r = Import(
      Header() +
      Alloc("7", "a", "COMPLETED", "1000", "1010", 10, "cpu=1,gres/gpu:1g.10gb=3,gres/gpu=3") +
      Alloc("8", "a", "COMPLETED", "1000", "1010", 10, "cpu=1,gres/gpu:1g.10gb_me=1,gres/gpu=1"));
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].gpu_product, "");
  EXPECT_EQ(r.segments[0].requests.Get("nvidia.com/mig-1g.10gb"), 3);
  EXPECT_EQ(r.segments[0].requests.Get("nvidia.com/gpu"), 0);
  EXPECT_EQ(r.segments[1].requests.Get("nvidia.com/mig-1g.10gb+me"), 1);
  for (const auto& n : r.notes)
    EXPECT_EQ(n.find("gres types without a GPU model"), std::string::npos) << n;
}

// A run of MIG instances is priced from its card, as `slurm export` weighs it: the model of the
// node it ran on, else the one model of the policy's nodes with that MIG resource. Regression
// (issue 28, found by the live round trip): priced from prices[nvidia.com/gpu] while Slurm's
// billing TRES used gpuModels[the node's model].
TEST(SacctImport, MigInstancesArePricedFromTheirNodesCard) {
  const std::string a100 = "NVIDIA-A100-SXM4-80GB";
  auto import = [](const std::string& text, const ImportOptions& o) {
    auto runs = ParseSacctText(text, "s.txt");
    EXPECT_TRUE(runs.ok()) << runs.message();
    auto r = SegmentsFromSacct(*runs, NameMap(), o, "s.txt");
    EXPECT_TRUE(r.ok()) << r.message();
    return r.ok() ? *r : ImportResult{};
  };
  const std::string mig = Alloc("7", "a", "COMPLETED", "1000", "1010", 10,
                                "cpu=1,gres/gpu:1g.10gb=3,gres/gpu=3");  // on node1
  ImportOptions by_node;
  by_node.node_gpu_product["node1"] = a100;
  by_node.mig_gpu_product["nvidia.com/mig-1g.10gb"] = "NVIDIA-H100-80GB-HBM3";
  ImportResult r = import(Header() + mig, by_node);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].gpu_product, a100);  // the node wins
  ImportOptions by_mig;
  by_mig.node_gpu_product["other"] = "NVIDIA-H100-80GB-HBM3";
  by_mig.mig_gpu_product["nvidia.com/mig-1g.10gb"] = a100;
  r = import(Header() + mig, by_mig);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].gpu_product, a100);
  // Unknown: the generic GPU price, as before.
  r = import(Header() + mig, ImportOptions{});
  EXPECT_EQ(r.segments[0].gpu_product, "");
  // Whole GPUs beside the instances keep the generic price (their card is not a MIG's).
  r = import(Header() + Alloc("8", "a", "COMPLETED", "1000", "1010", 10,
                              "cpu=1,gres/gpu:1g.10gb=1,gres/gpu=2"),
             by_node);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].gpu_product, "");
  EXPECT_EQ(r.segments[0].requests.Get("nvidia.com/gpu"), 1000);
}

TEST(SacctImport, GresTypesNameTheGpuModelOrAMigProfile) {
  NameMap names;
  ASSERT_TRUE(names.AddGpuProduct("NVIDIA-H100-80GB-HBM3").ok());
  ASSERT_TRUE(names.AddMigResource("nvidia.com/mig-1g.10gb").ok());
  ImportResult r = Import(
      Header() +
          Alloc("6", "a", "COMPLETED", "1000", "1010", 10,
                "cpu=8,gres/gpu:h100-80gb-hbm3=2,gres/gpu=2") +
          Alloc("7", "a", "COMPLETED", "1000", "1010", 10, "cpu=1,gres/gpu:1g.10gb=3,gres/gpu=3") +
          Alloc("8", "a", "COMPLETED", "1000", "1010", 10, "cpu=1,gres/gpu:t4=1,gres/gpu=1"),
      names);
  ASSERT_EQ(r.segments.size(), 3u);
  EXPECT_EQ(r.segments[0].gpu_product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(r.segments[0].requests.Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(r.segments[1].gpu_product, "");
  EXPECT_EQ(r.segments[1].requests.Get("nvidia.com/mig-1g.10gb"), 3);
  EXPECT_EQ(r.segments[1].requests.Get("nvidia.com/gpu"), 0);
  EXPECT_EQ(r.segments[2].gpu_product,
            "t4");  // unknown type: priced by gpuModels["t4"], else as a GPU
  bool noted = false;
  for (const auto& n : r.notes)
    noted |= n.find("gres types without a GPU model") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(SacctImport, SeveralGpuModelsInOneJobGiveOneSegmentPerModel) {
  NameMap names;
  ASSERT_TRUE(names.AddGpuProduct("A").ok());
  ASSERT_TRUE(names.AddGpuProduct("B").ok());
  ImportResult r = Import(Header() + Alloc("9", "a", "COMPLETED", "1000", "1010", 10,
                                           "cpu=8,gres/gpu:a=2,gres/gpu:b=1,"
                                           "gres/gpu=3"),
                          names);
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].gpu_product, "A");
  EXPECT_EQ(r.segments[0].requests.Get("cpu"), 8000);
  EXPECT_EQ(r.segments[0].requests.Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(r.segments[1].gpu_product, "B");
  EXPECT_EQ(r.segments[1].requests.Get("cpu"), 0);
  EXPECT_EQ(r.segments[1].requests.Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(r.segments[0].workload, r.segments[1].workload);
}

TEST(SacctImport, AccountsMapToNamespaces) {
  auto m = NameMap::Parse("accounts: {vision_lab: team-a}\n", "map.yaml");
  ASSERT_TRUE(m.ok());
  ImportResult r =
      Import(Header() + Alloc("1", "vision_lab", "COMPLETED", "1000", "1010", 10, "cpu=1") +
                 Alloc("2", "stranger", "COMPLETED", "1000", "1010", 10, "cpu=1", ""),
             *m);
  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].namespace_, "team-a");
  EXPECT_EQ(r.segments[0].workload, "team-a/slurm-ci-1");
  EXPECT_EQ(r.segments[1].namespace_, "stranger");
  EXPECT_EQ(r.segments[1].workload,
            "stranger/slurm-slurm-2");  // no Cluster field: --cluster's default
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("stranger") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(SacctImport, AJobWithoutAccountCannotBeBilled) {
  auto runs =
      ParseSacctText(Header() + Alloc("1", "", "COMPLETED", "1000", "1010", 10, "cpu=1"), "s.txt");
  ASSERT_TRUE(runs.ok());
  auto r = SegmentsFromSacct(*runs, NameMap(), ImportOptions{}, "s.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("s.txt:2: job 1: no Account"), std::string::npos) << r.message();
}

// A multi-node job (an Arbiter gang): these lines are what a real Slurm 22.05.8 printed
// (`sacct -D -a -P --noconvert --format=<kSacctFormat>`) for `sbatch -N 2 --ntasks-per-node=1
// -c 5 --gres=gpu:2` on the test stack's gang nodes n1, n2 (scripts/services/slurm.sh): the
// allocation record carries the totals over both nodes (cpu=10, gres/gpu=4, node=2), the batch
// step one node's share, the srun step (one task per node) the totals again.
const char* kMultiNodeJob =
    "4|4|gang-high|arbiter|gang|team-a|root|high|COMPLETED|0:0|2026-12-01T20:35:50|"
    "2026-12-01T20:35:50|2026-12-01T20:36:13|2026-12-01T20:36:29|00:00:16|16|n[1-2]|"
    "billing=10500,cpu=10,gres/gpu=4,node=2||\n"
    "4.batch|4.batch|batch|arbiter||team-a|||COMPLETED|0:0|2026-12-01T20:36:13|"
    "2026-12-01T20:36:13|2026-12-01T20:36:13|2026-12-01T20:36:29|00:00:16|16|n1|"
    "cpu=5,gres/gpu=2,mem=0,node=1|cpu=00:00:00,energy=0,fs/disk=47032,mem=12767232,pages=0,"
    "vmem=294924288|cpu=00:00:00,energy=0,fs/disk=47032,mem=12767232,pages=0,vmem=294924288\n"
    "4.0|4.0|step.sh|arbiter||team-a|||COMPLETED|0:0|2026-12-01T20:36:14|2026-12-01T20:36:14|"
    "2026-12-01T20:36:14|2026-12-01T20:36:29|00:00:15|15|n[1-2]|cpu=10,gres/gpu=4,mem=0,node=2|"
    "cpu=00:00:00,energy=0,fs/disk=900281,mem=5292032,pages=0,vmem=7983104|cpu=00:00:00,"
    "energy=0,fs/disk=450140,mem=2646016,pages=0,vmem=3991552\n";

TEST(SacctImport, AMultiNodeJobIsOneWorkloadBilledWithTheTotalsOfItsNodes) {
  ImportResult r = Import(Header() + kMultiNodeJob);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.jobs, 1);
  const auto& s = r.segments[0];
  EXPECT_EQ(s.workload, "team-a/slurm-arbiter-4");
  EXPECT_EQ(s.node, "n[1-2]");
  EXPECT_EQ(s.requests.Get("cpu"), 10000);            // 5 per node
  EXPECT_EQ(s.requests.Get("nvidia.com/gpu"), 4000);  // 2 per node: the gang's sum
  EXPECT_EQ(s.end - s.start, 16000);                  // both nodes held 20:36:13..20:36:29
  bool noted = false;
  for (const auto& n : r.notes)
    noted = noted || n.find("1 multi-node job (gangs): one workload each") != std::string::npos;
  EXPECT_TRUE(noted) << (r.notes.empty() ? "no notes" : r.notes[0]);
}

TEST(SacctImport, SingleNodeJobsAreNotNotedAsGangs) {
  ImportResult r = Import(
      Header() + Alloc("1", "a", "COMPLETED", "1000", "1010", 10, "cpu=1,gres/gpu=1,node=1"));
  for (const auto& n : r.notes) EXPECT_EQ(n.find("multi-node"), std::string::npos) << n;
}

}  // namespace
}  // namespace arbiter::slurm
