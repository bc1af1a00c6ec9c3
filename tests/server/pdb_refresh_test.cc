// PodDisruptionBudget status refreshed for the budgets that moved only (Cluster::RefreshPdbs,
// pdbs_dirty_): after every step of a random run over two namespaces (pods made, deleted,
// evicted, relabelled, preempted, bound when room is made, ended; budgets made, changed in spec
// or in labels only, deleted and made again; Jobs; a namespace deleted and made again; time
// passing; snapshots restored) every budget's status is what its object and a count of its
// namespace's pods make (Cluster::CheckPdbStatuses), and the cluster holds the same objects, at
// the same resourceVersions, as one that walks every budget of a dirty namespace at each refresh
// (SetPdbWalk: the algorithm this replaced).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace pdb_refresh_test {

using fixtures::Create;
using fixtures::Delete;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::PodIn;
using fixtures::PriorityClass;
using fixtures::Update;

const char* const kNamespaces[] = {"default", "team"};
const char* const kApps[] = {"a", "b", "c"};

// A budget of `app`'s pods: minAvailable (a number or a percentage) or maxUnavailable.
Json Budget(const std::string& ns, const std::string& name, const std::string& app, int form,
            int n) {
  Json spec = {{"selector", {{"matchLabels", {{"app", app}}}}}};
  switch (form) {
    case 0:
      spec["minAvailable"] = n;
      break;
    case 1:
      spec["minAvailable"] = std::to_string(25 * n) + "%";
      break;
    default:
      spec["maxUnavailable"] = n;
      break;
  }
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

Json JobIn(const std::string& ns, const std::string& name, const std::string& app, int n) {
  Json j = fixtures::GpuJob(ns, name, {{"parallelism", n}, {"completions", n}}, "7s");
  j["spec"]["template"]["metadata"]["labels"]["app"] = app;
  return j;
}

// Two clusters given the same steps: `fast` refreshes the budgets that moved, `walk` every
// budget of a dirty namespace.
struct Pair {
  Cluster fast{"0000abcd"}, walk{"0000abcd"};
  Pair() { walk.SetPdbWalk(true); }
  void Apply(const Mutation& m) {
    const MutationResult a = fast.Apply(m), b = walk.Apply(m);
    EXPECT_EQ(a.ok(), b.ok()) << m.Encode();
  }
};

// One random step; what it did, for the failure's trace.
std::string Step(Pair& p, std::mt19937& rng, Millis& t, int& serial) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const Cluster& c = p.fast;
  const std::string ns = kNamespaces[pick(2)];
  auto some = [&](const char* kind) -> std::string {
    const auto objects = c.store().List(kind, ns);
    if (objects.empty()) return "";
    return objects[pick(static_cast<int>(objects.size()))]->at("metadata").value("name", "");
  };
  t += 1000;
  if (!c.store().Get("Namespace", "", ns)) {  // (deleted: made again)
    p.Apply(Create(t, Namespace(ns)));
    return "namespace " + ns;
  }
  const std::string budget = std::string("keep-") + kApps[pick(3)];
  switch (pick(14)) {
    case 0:
    case 1:
    case 2: {  // a pod, of either priority, some with a run that ends
      Json pod =
          PodIn(ns, "p" + std::to_string(serial++), 1 + pick(3),
                pick(2) ? std::to_string(2 + pick(20)) + "s" : "", pick(3) == 0 ? "high" : "low");
      pod["metadata"]["labels"]["app"] = kApps[pick(3)];
      p.Apply(Create(t, pod));
      return "create in " + ns;
    }
    case 3: {  // a delete, with or without grace (deletionTimestamp while it exits)
      const std::string name = some("Pod");
      if (name.empty()) return "none";
      Mutation m = Delete(t, "Pod", ns, name);
      if (pick(2)) m.grace_period = 0;
      p.Apply(m);
      return "delete " + ns + "/" + name;
    }
    case 4: {  // an eviction (the budgets may refuse it)
      const std::string name = some("Pod");
      if (name.empty()) return "none";
      Mutation m = Delete(t, "Pod", ns, name);
      m.eviction = true;
      p.Apply(m);
      return "evict " + ns + "/" + name;
    }
    case 5: {  // a pod's app label changed, or another label
      const std::string name = some("Pod");
      if (name.empty()) return "none";
      Json pod = *c.store().Get("Pod", ns, name);
      if (pick(3) == 0)
        pod["metadata"]["labels"]["tier"] = std::to_string(pick(2));
      else
        pod["metadata"]["labels"]["app"] = kApps[pick(3)];
      p.Apply(Update(t, pod));
      return "relabel " + ns + "/" + name;
    }
    case 6:
    case 7: {  // a budget made, or changed (selector, minAvailable, maxUnavailable: a new
               // generation)
      Json b = Budget(ns, budget, kApps[pick(3)], pick(3), pick(4));
      if (const Json* was = c.store().Get("PodDisruptionBudget", ns, budget)) {
        b["metadata"]["resourceVersion"] = was->at("metadata")["resourceVersion"];
        p.Apply(Update(t, b));
        return "budget changed " + ns + "/" + budget;
      }
      p.Apply(Create(t, b));
      return "budget " + ns + "/" + budget;
    }
    case 8: {  // a budget's labels changed, its spec not (the same generation)
      const Json* was = c.store().Get("PodDisruptionBudget", ns, budget);
      if (!was) return "none";
      Json b = *was;
      b["metadata"]["labels"]["touched"] = std::to_string(serial++);
      p.Apply(Update(t, b));
      return "budget labelled " + ns + "/" + budget;
    }
    case 9:  // a budget deleted (made again later under the same name: another uid)
      p.Apply(Delete(t, "PodDisruptionBudget", ns, budget));
      return "unbudget " + ns + "/" + budget;
    case 10: {  // a Job: its controller makes, finishes and deletes pods
      const std::string name = "j" + std::to_string(serial++);
      p.Apply(Create(t, JobIn(ns, name, kApps[pick(3)], 1 + pick(2))));
      return "job " + ns + "/" + name;
    }
    case 11:
      if (ns == "default" || pick(4)) return "none";
      p.Apply(Delete(t, "Namespace", "", ns));  // its pods terminate, its budgets go
      return "namespace deleted " + ns;
    default:  // time passes: runs end, deleted pods exit, pending pods bind
      t += 1000 * (1 + pick(15));
      while (auto due = p.fast.NextDue()) {
        if (*due > t) break;
        p.Apply(fixtures::Advance(*due));
      }
      p.Apply(fixtures::Advance(t));
      return "advance";
  }
}

// Every budget of both namespaces, as stored (status, resourceVersion and all).
std::string Budgets(const Cluster& c) {
  Json out = Json::array();
  for (const Json* o : c.store().List("PodDisruptionBudget", "")) out.push_back(*o);
  return out.dump();
}

TEST(PdbRefreshTest, StatusesOfTheBudgetsThatMovedEqualTheWalkOfEveryBudget) {
  int statuses = 0, preempted = 0;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto p = std::make_unique<Pair>();
    for (Cluster* c : {&p->fast, &p->walk}) {
      for (const char* ns : kNamespaces) ASSERT_TRUE(c->Apply(Create(kT0, Namespace(ns))).ok());
      ASSERT_TRUE(c->Apply(Create(kT0, Node("gpu-0", 8))).ok());
      ASSERT_TRUE(c->Apply(Create(kT0, PriorityClass("high", 1000))).ok());
      ASSERT_TRUE(c->Apply(Create(kT0, PriorityClass("low", 0))).ok());
    }
    std::mt19937 rng(seed);
    Millis t = kT0 + 1000;
    int serial = 0;
    for (int step = 0; step < 300; ++step) {
      const std::string what = Step(*p, rng, t, serial);
      SCOPED_TRACE("step " + std::to_string(step) + ": " + what);
      const Status s = p->fast.CheckPdbStatuses();
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_EQ(Budgets(p->fast), Budgets(p->walk));
      ASSERT_EQ(p->fast.store().resource_version(), p->walk.store().resource_version());
      statuses += static_cast<int>(p->fast.store().List("PodDisruptionBudget", "").size());
      if (step % 100 == 99) {  // both restored from their snapshots, then on
        const std::string fast = p->fast.Snapshot(), walk = p->walk.Snapshot();
        ASSERT_EQ(fast, walk);
        auto q = std::make_unique<Pair>();
        ASSERT_TRUE(q->fast.Restore(fast).ok());
        ASSERT_TRUE(q->walk.Restore(walk).ok());
        p = std::move(q);
        const Status r = p->fast.CheckPdbStatuses();
        ASSERT_TRUE(r.ok()) << "restored: " << r.message();
      }
    }
    EXPECT_EQ(p->fast.Snapshot(), p->walk.Snapshot());
    for (const char* ns : kNamespaces)
      for (const Json* e : p->fast.store().List("Event", ns))
        preempted += e->value("reason", "") == "Preempted";
  }
  EXPECT_GT(statuses, 1000);  // the budgets were there to check
  EXPECT_GT(preempted, 0);    // and pods were preempted among them
}

// A pod written in a namespace no refresh follows in the same mutation still moves its budgets'
// status at the namespace's next refresh (its mark is kept), and a budget nothing moved is not
// written again.
TEST(PdbRefreshTest, ABudgetIsWrittenOnlyWhenItsStatusMoves) {
  Cluster c("0000abcd");
  for (const Json& o : {Namespace("default"), Node("gpu-0", 8)})
    ASSERT_TRUE(c.Apply(Create(kT0, o)).ok());
  for (const char* app : kApps) {
    Json pod = PodIn("default", std::string("p-") + app, 1);
    pod["metadata"]["labels"]["app"] = app;
    ASSERT_TRUE(c.Apply(Create(kT0 + 1000, pod)).ok());
    ASSERT_TRUE(
        c.Apply(Create(kT0 + 1000, Budget("default", std::string("keep-") + app, app, 0, 1))).ok());
  }
  auto versions = [&] {
    std::string v;
    for (const Json* o : c.store().List("PodDisruptionBudget", "default"))
      v += o->at("metadata").value("resourceVersion", "") + " ";
    return v;
  };
  const std::string before = versions();
  Json pod = PodIn("default", "p-a2", 1);
  pod["metadata"]["labels"]["app"] = "a";
  ASSERT_TRUE(c.Apply(Create(kT0 + 2000, pod)).ok());
  const Json& a = c.store().Get("PodDisruptionBudget", "default", "keep-a")->at("status");
  EXPECT_EQ(a["expectedPods"], 2);
  const std::string after = versions();
  // keep-a was written again; keep-b and keep-c were not.
  EXPECT_NE(before.substr(0, before.find(' ')), after.substr(0, after.find(' ')));
  EXPECT_EQ(before.substr(before.find(' ')), after.substr(after.find(' ')));
  EXPECT_TRUE(c.CheckPdbStatuses().ok()) << c.CheckPdbStatuses().message();
}

}  // namespace pdb_refresh_test
}  // namespace arbiter::server
