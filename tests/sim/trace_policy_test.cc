// Trace replay under a policy file (issue 9): the openb trace as four teams with elastic quotas in
// one cohort, a pod-count ResourceQuota, priority classes by qos tier and a PriceBook. The replay
// admits against the quotas (QuotaExceeded), preempts best-effort pods for the others (Preempted,
// Requeued), bills every team, and stays deterministic; without a policy file nothing of it
// happens (the FGD paper's protocol).
#include <gtest/gtest.h>

#include <set>

#include "adapters/yaml/manifest_loader.h"
#include "sim/trace/trace_report.h"
#include "sim/trace/trace_sim.h"

namespace arbiter::sim::trace {
namespace trace_policy_test {

const std::string kData = std::string(ARBITER_SOURCE_DIR) + "/data/openb/";

struct Inputs {
  std::vector<TraceNode> nodes;
  PodTrace pods;
  ManifestSet policy;
};

Inputs Load(int32_t tenants) {
  Inputs in;
  in.nodes = *ReadOpenbNodes(kData + "openb_node_list_gpu_node.csv");
  PodMappingOptions mo;
  mo.tenants = tenants;
  in.pods = *ReadOpenbPods(kData + "openb_pod_list_default.csv", mo);
  auto load =
      yaml::LoadManifestFiles({std::string(ARBITER_SOURCE_DIR) + "/examples/trace-policy.yaml"});
  EXPECT_TRUE(load.ok());
  in.policy = load.set;
  return in;
}

size_t Count(const driver::SimResult& r, engine::EventType type) {
  size_t n = 0;
  for (const auto& e : r.events()) n += e.type == type;
  return n;
}

TEST(TracePolicyTest, SaturateUnderThePolicyFileQueuesPreemptsAndIsDeterministic) {
  Inputs in = Load(4);
  TraceRunOptions o;
  o.policy.reset();  // the policy file's PoolPolicy: FGD
  o.policy_file = &in.policy;
  o.check_invariants = false;
  auto a = RunSaturate(in.nodes, in.pods, o);
  ASSERT_TRUE(a.ok()) << a.message();
  ASSERT_NE(a->policy_run, nullptr);
  EXPECT_EQ(a->policy, "fgd");
  const driver::SimResult& r = a->policy_run->result;
  EXPECT_EQ(r.workloads().size(), static_cast<size_t>(a->pods_submitted));
  EXPECT_GT(Count(r, engine::EventType::kQuotaExceeded), 0u);
  EXPECT_GT(Count(r, engine::EventType::kPreempted), 100u);
  EXPECT_EQ(Count(r, engine::EventType::kPreempted), Count(r, engine::EventType::kRequeued));
  std::set<std::string> namespaces;
  for (const auto& w : r.workloads()) namespaces.insert(std::string(w.namespace_));
  EXPECT_EQ(namespaces, (std::set<std::string>{"tenant-0", "tenant-1", "tenant-2", "tenant-3"}));
  for (const auto& w : r.workloads())
    if (w.priority == 1000) {
      EXPECT_EQ(w.priority_class, "best-effort");
    }
  // Quotas are never exceeded by admissions: tenant-3 never runs more than its 1500 pods.
  size_t running3 = 0;
  for (const auto& w : r.workloads()) running3 += w.namespace_ == "tenant-3" && w.on_node;
  EXPECT_LE(running3, 1500u);
  auto b = RunSaturate(in.nodes, in.pods, o);
  ASSERT_TRUE(b.ok());
  auto ra = ReportPolicyRun(*a->policy_run), rb = ReportPolicyRun(*b->policy_run);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->json.dump(), rb->json.dump());
  EXPECT_EQ(ra->json["kind"], "SimulationReport");
}

TEST(TracePolicyTest, TimelineUnderThePolicyFileBillsEveryTeam) {
  Inputs in = Load(4);
  // Three busy days of the trace, moved to its start (the whole of it spans five months of hourly
  // bills, mostly of an empty pool).
  constexpr int64_t kDay = 24 * 3600;
  std::vector<TracePod> busy;
  for (auto p : in.pods.pods) {
    if (!p.creation_s || *p.creation_s < 115 * kDay || *p.creation_s >= 118 * kDay) continue;
    if (!p.deletion_s || *p.deletion_s > 125 * kDay) continue;
    for (auto* t : {&p.creation_s, &p.deletion_s, &p.scheduled_s})
      if (*t) **t -= 115 * kDay;
    busy.push_back(p);
  }
  ASSERT_GT(busy.size(), 300u);
  in.pods.pods = busy;
  TraceRunOptions o;
  o.policy_file = &in.policy;
  auto t = RunTimeline(in.nodes, in.pods, o);
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_NE(t->policy_run, nullptr);
  auto report = ReportPolicyRun(*t->policy_run);
  ASSERT_TRUE(report.ok()) << report.message();
  const auto& invoices = report->json["invoices"];
  std::set<std::string> billed;
  for (const auto& inv : invoices)
    if (inv["namespace"] != "__idle__" && inv["total"].get<std::string>() != "0.000000")
      billed.insert(inv["namespace"]);
  EXPECT_EQ(billed, (std::set<std::string>{"tenant-0", "tenant-1", "tenant-2", "tenant-3"}));
  EXPECT_NE(report->text.find("invoice tenant-2: "), std::string::npos) << report->text;
  // Every pod of the trace ran and completed, once.
  EXPECT_EQ(Count(t->policy_run->result, engine::EventType::kCompleted), in.pods.pods.size());
}

// A timeline replay ticks at a due wake-up although nothing waits in the queue: a victim backing
// off (PoolPolicy preemption.requeuingStrategy) is out of the queue until its back-off ends, and
// the replay used to tick only with something pending, so it stopped at that instant forever
// ("no progress after a million steps (livelock)").
TEST(TracePolicyTest, TimelineTicksWhenAVictimsBackOffEnds) {
  auto nodes = ParseOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,1,V100\n", "n");
  ASSERT_TRUE(nodes.ok()) << nodes.message();
  // `low` (BE) runs from 0 to 3600 s; `high` (LS) arrives at 100 s for 30 s and preempts it.
  auto pods = ParseOpenbPods(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "low,1000,1024,1,1000,,BE,Running,0,3600,0\n"
      "high,1000,1024,1,1000,,LS,Running,100,130,100\n",
      "p");
  ASSERT_TRUE(pods.ok()) << pods.message();
  yaml::ManifestLoad load;
  yaml::LoadManifestText(
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
      "spec: {preemption: {type: Priority, requeuingStrategy: {backoffBaseSeconds: 60}}}\n---\n"
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: be}\n"
      "value: 1000\n---\n"
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: ls}\n"
      "value: 10000\n",
      "policy.yaml", &load);
  ASSERT_EQ(load.diagnostics.ErrorCount(), 0u);
  TraceRunOptions o;
  o.policy_file = &load.set;
  auto t = RunTimeline(*nodes, *pods, o);
  ASSERT_TRUE(t.ok()) << t.message();
  ASSERT_NE(t->policy_run, nullptr);
  const driver::SimResult& r = t->policy_run->result;
  EXPECT_EQ(Count(r, engine::EventType::kPreempted), 1u);
  EXPECT_EQ(Count(r, engine::EventType::kCompleted), 2u);
  std::vector<int64_t> low_starts;
  for (const auto& e : r.events())
    if (e.type == engine::EventType::kScheduled &&
        r.workloads()[engine::Value(e.workload)].key == "tenant-0/low")
      low_starts.push_back(e.time);
  EXPECT_EQ(low_starts, (std::vector<int64_t>{0, 160000})) << "restarted when its 60 s end";
}

TEST(TracePolicyTest, WithoutAPolicyFileThereIsNoPolicyRun) {
  Inputs in = Load(1);
  auto t = RunSaturate(in.nodes, in.pods, TraceRunOptions{});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->policy_run, nullptr);
}

TEST(TracePolicyTest, WaitingWithoutAPolicyFilePlacesMoreThanDropping) {
  Inputs in = Load(1);
  TraceRunOptions drop, wait;
  wait.unschedulable = TraceRunOptions::Unschedulable::kWait;
  auto d = RunTimeline(in.nodes, in.pods, drop);
  auto w = RunTimeline(in.nodes, in.pods, wait);
  ASSERT_TRUE(d.ok() && w.ok());
  EXPECT_GE(w->pods_placed, d->pods_placed);
  EXPECT_EQ(w->pods_placed + w->pods_failed, w->pods_submitted);
}

}  // namespace trace_policy_test
}  // namespace arbiter::sim::trace
