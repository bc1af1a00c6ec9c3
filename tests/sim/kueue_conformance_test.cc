// Kueue conformance: the cases of Kueue's own TestPreemption table, rewritten as ElasticQuotas
// (tests/data/kueue/preemption-cases.yaml describes the mapping), run through the simulator. A
// case passes when Arbiter preempts exactly the workloads Kueue preempts; a case that differs on
// purpose says why and what Arbiter does instead, and is checked against that.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "sim/simulator.h"

namespace arbiter {
namespace {

std::string Flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// The manifests of one case: a node that never limits placement (and one per resource flavor,
// labelled arbiter.dev/flavor: NAME, the flavor's node label), one ElasticQuota per queue, the
// admitted workloads at their admission time and the incoming one at t = 10 s. A workload with
// `flavor` is pinned to it by nodeSelector (Kueue's table gives each admitted workload its flavor).
std::string CaseManifests(const YAML::Node& flavors, const YAML::Node& queues, const YAML::Node& c) {
  std::ostringstream m;
  m << "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
       "status: {capacity: {cpu: \"1000\", memory: 1Ti, pods: \"1000\"}}\n";
  for (const auto& f : flavors) {
    const std::string name = f.as<std::string>();
    m << "---\napiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: " << name
      << "}\nspec: {nodeLabels: {arbiter.dev/flavor: " << name << "}}\n"
      << "---\napiVersion: v1\nkind: Node\nmetadata: {name: n-" << name
      << ", labels: {arbiter.dev/flavor: " << name << "}}\n"
      << "status: {capacity: {cpu: \"1000\", memory: 1Ti, pods: \"1000\"}}\n";
  }
  for (const auto& q : queues) {
    const std::string name = q["name"].as<std::string>();
    m << "---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: " << name
      << ", namespace: " << name << "}\nspec:\n";
    if (q["cohort"]) m << "  cohort: " << q["cohort"].as<std::string>() << "\n";
    for (const char* f : {"min", "max", "lendingLimit", "preemption", "flavors"})
      if (q[f]) m << "  " << f << ": " << Flow(q[f]) << "\n";
  }
  auto pod = [&](const YAML::Node& w, const std::string& name, int at) {
    m << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " << name
      << ", namespace: " << w["ns"].as<std::string>()
      << ", annotations: {arbiter.dev/submit-time: " << at << "s, arbiter.dev/duration: 10h}}\n"
      << "spec: {priority: " << w["priority"].as<int>();
    if (w["flavor"]) m << ", nodeSelector: {arbiter.dev/flavor: " << w["flavor"].as<std::string>() << "}";
    m << ", containers: [{name: c, resources: {requests: " << Flow(w["requests"]) << "}}]}\n";
  };
  for (const auto& w : c["admitted"])
    pod(w, w["name"].as<std::string>(), w["at"] ? w["at"].as<int>() : 0);
  pod(c["incoming"], "in", 10);
  return m.str();
}

std::set<std::string> Names(const YAML::Node& list) {
  std::set<std::string> out;
  for (const auto& n : list) out.insert(n.as<std::string>());
  return out;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return "[" + out + "]";
}

TEST(KueueConformance, TestPreemptionTable) {
  const YAML::Node data =
      YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) + "/tests/data/kueue/preemption-cases.yaml");
  int total = 0, pass = 0, differ = 0;
  for (const auto& c : data["cases"]) {
    ++total;
    const std::string name = c["name"].as<std::string>();
    const YAML::Node queues =
        data["queueSets"][c["queues"] ? c["queues"].as<std::string>() : "default"];
    yaml::ManifestLoad load;
    yaml::LoadManifestText(CaseManifests(data["resourceFlavors"], queues, c), name, &load);
    for (const auto& d : load.diagnostics.items)
      if (d.severity == Severity::kError) ADD_FAILURE() << name << ": " << d.ToString();
    ASSERT_TRUE(load.ok()) << name;
    sim::SimOptions opts;
    opts.check_invariants = true;
    opts.until = 10'000;  // the incoming workload's instant
    auto r = sim::RunSimulation(load.set, opts);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message();
    const std::string in_key = c["incoming"]["ns"].as<std::string>() + "/in";
    std::set<std::string> got;
    for (const auto& e : r->events())
      if ((e.type == engine::EventType::kPreempted || e.type == engine::EventType::kReclaimed) &&
          e.by == in_key) {
        const std::string& key = r->workloads()[Value(e.workload)].key;
        got.insert(key.substr(key.find('/') + 1));
      }
    const std::set<std::string> want = Names(c["want"]);
    if (got == want) {
      ++pass;
      EXPECT_FALSE(c["differs"]) << name << ": passes now; remove its `differs`";
      continue;
    }
    ++differ;
    if (!c["differs"]) {
      ADD_FAILURE() << name << ": Kueue preempts " << Join(want) << ", Arbiter " << Join(got);
      continue;
    }
    EXPECT_EQ(got, Names(c["arbiter"]))
        << name << ": documented Arbiter answer changed (" << Join(got) << ")";
  }
  std::cout << "Kueue TestPreemption cases: " << pass << " of " << total << " pass, " << differ
            << " differ (documented)\n";
  EXPECT_EQ(pass + differ, total);
}

}  // namespace
}  // namespace arbiter
