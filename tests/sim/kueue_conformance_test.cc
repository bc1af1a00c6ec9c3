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
// A case's `strategies` (Kueue's fairSharing.preemptionStrategies) become the PoolPolicy's.
std::string CaseManifests(const YAML::Node& flavors, const YAML::Node& queues,
                          const YAML::Node& c) {
  std::ostringstream m;
  m << "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
       "status: {capacity: {cpu: \"1000\", memory: 1Ti, pods: \"1000\"}}\n";
  if (c["strategies"])
    m << "---\napiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
      << "spec: {fairSharing: {preemptionStrategies: " << Flow(c["strategies"]) << "}}\n";
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
    for (const char* f : {"min", "max", "lendingLimit", "preemption", "flavors", "fairSharing"})
      if (q[f]) m << "  " << f << ": " << Flow(q[f]) << "\n";
  }
  auto pod = [&](const YAML::Node& w, const std::string& name, int at) {
    m << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " << name
      << ", namespace: " << w["ns"].as<std::string>()
      << ", annotations: {arbiter.dev/submit-time: " << at << "s, arbiter.dev/duration: 10h}}\n"
      << "spec: {priority: " << w["priority"].as<int>();
    if (w["flavor"])
      m << ", nodeSelector: {arbiter.dev/flavor: " << w["flavor"].as<std::string>() << "}";
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

// Runs a table of preemption cases; prints "<table> cases: P of N pass, D differ (documented)".
void RunPreemptionTable(const std::string& file, const std::string& table) {
  const YAML::Node data =
      YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) + "/tests/data/kueue/" + file);
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
  std::cout << "Kueue " << table << " cases: " << pass << " of " << total << " pass, " << differ
            << " differ (documented)\n";
  EXPECT_EQ(pass + differ, total);
}

TEST(KueueConformance, TestPreemptionTable) {
  RunPreemptionTable("preemption-cases.yaml", "TestPreemption");
}

// Kueue's fair-sharing preemption (TestFairPreemptions, flat cohorts): fair-preemption-cases.yaml.
TEST(KueueConformance, TestFairPreemptionsTable) {
  RunPreemptionTable("fair-preemption-cases.yaml", "TestFairPreemptions");
}

// Kueue's flavor assignment table (tests/data/kueue/flavorassigner-cases.yaml describes the
// mapping): the flavor the incoming workload is admitted on at its instant, or none.
std::string FlavorCaseManifests(const YAML::Node& flavors, const YAML::Node& c) {
  std::ostringstream m;
  const YAML::Node selector = c["incoming"]["nodeSelector"];
  std::set<std::string> used;
  auto collect = [&](const YAML::Node& fl) {
    for (const auto& f : fl) used.insert(f["name"].as<std::string>());
  };
  collect(c["flavors"]);
  for (const auto& o : c["others"]) collect(o["flavors"]);
  for (const auto& name : used) {
    const YAML::Node labels = flavors[name];
    YAML::Node node_labels(YAML::NodeType::Map);
    for (const auto& kv : labels)
      node_labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
    for (const auto& kv : selector)
      if (!labels[kv.first.as<std::string>()])
        node_labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
    m << "---\napiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: " << name
      << "}\nspec: {nodeLabels: " << Flow(labels.size() ? labels : YAML::Node(YAML::NodeType::Map))
      << "}\n"
      << "---\napiVersion: v1\nkind: Node\nmetadata: {name: n-" << name
      << ", labels: " << Flow(node_labels)
      << "}\nstatus: {capacity: {cpu: \"1000\", memory: 1Ti, pods: \"1000\"}}\n";
  }
  auto queue = [&](const std::string& ns, const YAML::Node& q) {
    m << "---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: " << ns
      << ", namespace: " << ns << "}\nspec:\n";
    if (c["cohort"]) m << "  cohort: " << c["cohort"].as<std::string>() << "\n";
    m << "  flavors: " << Flow(q["flavors"]) << "\n";
    int i = 0;
    for (const auto& u : q["usage"]) {
      const YAML::Node labels = flavors[u["flavor"].as<std::string>()];
      m << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: used-" << i++ << ", namespace: " << ns
        << ", annotations: {arbiter.dev/duration: 10h}}\nspec: {";
      if (labels.size()) m << "nodeSelector: " << Flow(labels) << ", ";
      m << "containers: [{name: c, resources: {requests: " << Flow(u["requests"]) << "}}]}\n";
    }
  };
  queue("cq", c);
  for (const auto& o : c["others"]) queue(o["name"].as<std::string>(), o);
  const YAML::Node& in = c["incoming"];
  m << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: in, namespace: cq, annotations: "
       "{arbiter.dev/submit-time: 10s, arbiter.dev/duration: 10h}}\nspec: {";
  if (selector) m << "nodeSelector: " << Flow(selector) << ", ";
  m << "containers: [{name: c, resources: {requests: " << Flow(in["requests"]) << "}}]}\n";
  return m.str();
}

TEST(KueueConformance, TestAssignFlavorsTable) {
  const YAML::Node data = YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) +
                                         "/tests/data/kueue/flavorassigner-cases.yaml");
  int total = 0, pass = 0;
  for (const auto& c : data["cases"]) {
    ++total;
    const std::string name = c["name"].as<std::string>();
    yaml::ManifestLoad load;
    yaml::LoadManifestText(FlavorCaseManifests(data["resourceFlavors"], c), name, &load);
    for (const auto& d : load.diagnostics.items)
      if (d.severity == Severity::kError) ADD_FAILURE() << name << ": " << d.ToString();
    ASSERT_TRUE(load.ok()) << name;
    sim::SimOptions opts;
    opts.check_invariants = true;
    opts.until = 10'000;
    auto r = sim::RunSimulation(load.set, opts);
    ASSERT_TRUE(r.ok()) << name << ": " << r.message();
    std::string got = "null", message;
    for (const auto& w : r->workloads())
      if (w.key == "cq/in") {
        if (w.phase == engine::Phase::kRunning) got = w.flavor;
        message = w.message;
      }
    const std::string want = c["want"].IsNull() ? "null" : c["want"].as<std::string>();
    if (got == want)
      ++pass;
    else
      ADD_FAILURE() << name << ": Kueue assigns " << want << ", Arbiter " << got << " (" << message
                    << ")";
  }
  std::cout << "Kueue TestAssignFlavors cases: " << pass << " of " << total << " pass\n";
}

}  // namespace
}  // namespace arbiter
