// The terminal summary of a manifest simulation: counted nouns agree with their counts
// (regression from a new-user trial: "Simulated 1 workloads on 1 nodes", "[0: 1 workloads, ...]").
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "core/plural.h"
#include "sim/billing_bridge.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace arbiter::sim {
namespace {

std::string Summary(const std::string& yaml) {
  yaml::ManifestLoad load;
  yaml::LoadManifestText(yaml, "one.yaml", &load);
  EXPECT_TRUE(load.ok());
  auto r = RunSimulation(load.set, SimOptions{});
  EXPECT_TRUE(r.ok()) << r.message();
  return TextSummary(load.set, *r, Summarise(load.set, *r));
}

const char* kNode =
    "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    "status: {capacity: {cpu: '8', memory: 32Gi}, allocatable: {cpu: '8', memory: 32Gi}}\n";
const char* kPod =
    "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\n  namespace: default\n"
    "  annotations: {arbiter.dev/duration: 1m}\n"
    "spec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: '1', memory: "
    "1Gi}}\n";

std::string Pods(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    char buf[512];
    std::snprintf(buf, sizeof buf, kPod, i);
    s += buf;
  }
  return s;
}

TEST(ReportTextTest, OneOfEachIsSingular) {
  const std::string one = Summary(std::string(kNode) + Pods(1));
  EXPECT_NE(one.find("Simulated 1 workload on 1 node for 1m "), std::string::npos) << one;
  EXPECT_NE(one.find(": 1 workload, mean"), std::string::npos) << one;
  EXPECT_NE(one.find("(+0 quota reclaims)"), std::string::npos) << one;
  EXPECT_EQ(one.find("1 workloads"), std::string::npos) << one;
  EXPECT_EQ(one.find("1 nodes"), std::string::npos) << one;
  const std::string two = Summary(std::string(kNode) + Pods(2));
  EXPECT_NE(two.find("Simulated 2 workloads on 1 node for"), std::string::npos) << two;
  EXPECT_NE(two.find(": 2 workloads, mean"), std::string::npos) << two;
}

// Regression (new-user trial): an empty manifest "simulated 0 workloads on 0 nodes" without a word.
TEST(ReportTextTest, EmptyManifestsSaySo) {
  const std::string none = Summary("");
  EXPECT_NE(none.find("no Pods in the manifests"), std::string::npos) << none;
  EXPECT_NE(none.find("no Nodes in the manifests"), std::string::npos) << none;
  EXPECT_NE(none.find("pending time by priority: none"), std::string::npos) << none;
  const std::string nodes_only = Summary(kNode);
  EXPECT_NE(nodes_only.find("no Pods in the manifests"), std::string::npos) << nodes_only;
  EXPECT_EQ(nodes_only.find("no Nodes"), std::string::npos) << nodes_only;
  const std::string pods_only = Summary(Pods(1));
  EXPECT_NE(pods_only.find("no Nodes in the manifests"), std::string::npos) << pods_only;
  EXPECT_EQ(Summary(std::string(kNode) + Pods(1)).find("in the manifests"), std::string::npos);
}

TEST(ReportTextTest, Plural) {
  EXPECT_EQ(Plural(0, "workload"), "0 workloads");
  EXPECT_EQ(Plural(1, "workload"), "1 workload");
  EXPECT_EQ(Plural(size_t{2}, "GPU"), "2 GPUs");
  EXPECT_EQ(Plural(int64_t{1}, "quota reclaim"), "1 quota reclaim");
  EXPECT_EQ(Plural(3, "entry", "entries"), "3 entries");
}

// The example pool run and billed: a PriceBook, tenants, idle capacity and preemption credits.
class ExamplePoolReport : public ::testing::Test {
 protected:
  void SetUp() override {
    load = yaml::LoadManifestFiles({std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml"});
    ASSERT_TRUE(load.ok());
    auto r = RunSimulation(load.set, SimOptions{});
    ASSERT_TRUE(r.ok()) << r.message();
    run.emplace(std::move(r).value());
    summary = Summarise(load.set, *run);
    auto b = BillSimulation(load.set, *run, DefaultEpoch(load.set));
    ASSERT_TRUE(b.ok()) << b.message();
    bill = std::move(b).value();
  }
  yaml::ManifestLoad load;
  std::optional<driver::SimResult> run;
  sim::Summary summary;
  SimBill bill;
};

// `arbiter sim --report-json` streams the report (workloads, events, timeline and each invoice's
// provenance element by element); the bytes equal the DOM's pretty print.
TEST_F(ExamplePoolReport, StreamedReportEqualsTheDomWithInvoices) {
  ASSERT_FALSE(bill.invoices.empty());
  ASSERT_FALSE(bill.invoices[0].provenance.empty());
  std::ostringstream streamed;
  WriteReportJson(streamed, load.set, *run, summary, bill);
  EXPECT_EQ(streamed.str(), ReportJson(load.set, *run, summary, BillJson(bill)).dump(2) + "\n");
}

// The CLI writes the report on one thread while it bills on others: the writer asks for the bill
// only at the invoices, and stops there when billing failed (a prefix of the report, no invoices).
TEST_F(ExamplePoolReport, TheBillIsAskedForAtTheInvoicesOnly) {
  std::ostringstream whole;
  WriteReportJson(whole, load.set, *run, summary, bill);

  std::ostringstream later;
  size_t asked_at = 0;
  EXPECT_TRUE(WriteReportJson(later, load.set, *run, summary, [&]() -> const SimBill* {
    asked_at = later.str().size();
    return &bill;
  }));
  EXPECT_EQ(later.str(), whole.str());
  const size_t invoices = whole.str().find("\"invoices\"");
  ASSERT_NE(invoices, std::string::npos);
  EXPECT_GT(asked_at, whole.str().find("\"events\""));  // the events were written before
  EXPECT_LE(asked_at, invoices + std::string("\"invoices\": [").size());

  std::ostringstream failed;
  EXPECT_FALSE(WriteReportJson(failed, load.set, *run, summary, [] { return nullptr; }));
  EXPECT_EQ(whole.str().substr(0, failed.str().size()), failed.str());
  EXPECT_LT(failed.str().size(), whole.str().find('{', invoices));  // no invoice begun
}

// Issue 14 (item 3): once a workload has run, the report still says why it waited.
TEST(ReportJsonTest, WorkloadsCarryTheirLastPendingReason) {
  const std::string big =
      "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: big\n  namespace: default\n"
      "  annotations: {arbiter.dev/duration: 1m, arbiter.dev/submit-time: 10s}\n"
      "spec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: '8', "
      "memory: 1Gi}}\n";
  yaml::ManifestLoad load;
  yaml::LoadManifestText(std::string(kNode) + Pods(1) + big, "wait.yaml", &load);
  ASSERT_TRUE(load.ok());
  auto r = RunSimulation(load.set, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.message();
  auto j = ReportJson(load.set, *r, Summarise(load.set, *r), nlohmann::json::array());
  const nlohmann::json* w = nullptr;
  for (const auto& x : j["workloads"])
    if (x["name"] == "default/big") w = &x;
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)["phase"], "Succeeded");
  ASSERT_TRUE((*w)["lastPendingReason"].is_object()) << w->dump(2);
  EXPECT_EQ((*w)["lastPendingReason"]["type"], "FailedScheduling");
  EXPECT_EQ((*w)["lastPendingReason"]["time"], 10);
  EXPECT_NE((*w)["message"].get<std::string>().find("Insufficient cpu"), std::string::npos)
      << w->dump(2);
  EXPECT_EQ((*w)["message"], (*w)["lastPendingReason"]["message"]);
  for (const auto& x : j["workloads"])
    if (x["name"] == "default/p0") {
      EXPECT_TRUE(x["lastPendingReason"].is_null());
      EXPECT_EQ(x["message"], "");
    }
  // --explain's timeline of the same workload.
  auto id = FindWorkload(*r, "default/big");
  ASSERT_TRUE(id);
  const std::string text = ExplainWorkload(*r, *id);
  EXPECT_NE(text.find("Workload default/big (priority 0): Succeeded, last on n1; submitted at 10s, "
                      "pending 50s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  10s        FailedScheduling   Unschedulable: "), std::string::npos)
      << text;
  EXPECT_NE(text.find("  1m         Scheduled          bound to n1"), std::string::npos) << text;
  EXPECT_FALSE(FindWorkload(*r, "default/nope"));
}

// Issue 14 (item 8): the summary rounds pending times to the second, as the HTML report does.
TEST(ReportTextTest, PendingTimesRoundToTheNearestSecond) {
  EXPECT_EQ(MeanToSecond(7500, 2), 4000);  // 3.75 s -> 4 s (it was truncated to 3 s)
  EXPECT_EQ(MeanToSecond(7000, 2), 4000);  // 3.5 s -> 4 s (half up)
  EXPECT_EQ(MeanToSecond(6998, 2), 3000);
  EXPECT_EQ(MeanToSecond(0, 0), 0);
  EXPECT_EQ(RoundToSecond(90499), 90000);
  EXPECT_EQ(RoundToSecond(90500), 91000);
}

}  // namespace
}  // namespace arbiter::sim
