// pods/eviction and PodDisruptionBudget status in the daemon's state machine (Cluster): budgets
// refuse evictions as kube-apiserver does (429 with a DisruptionBudget cause), evicted pods get
// DisruptionTarget, the budget's status follows the pods; dry runs change nothing.
#include <gtest/gtest.h>

#include <random>

#include "server/state/cluster.h"
#include "server/state/pdb_status.h"

namespace arbiter::server {
namespace {

constexpr Millis kT0 = 1764583200000;  // 2025-12-01T10:00:00Z

Mutation Create(Millis t, const Json& obj) {
  Mutation m;
  m.op = Mutation::Op::kCreate;
  m.time = t;
  m.kind = obj.at("kind");
  m.namespace_ = obj["metadata"].value("namespace", "");
  m.object = obj;
  return m;
}
Mutation Evict(Millis t, const std::string& name, bool dry_run = false) {
  Mutation m;
  m.op = Mutation::Op::kDelete;
  m.eviction = true;
  m.dry_run = dry_run;
  m.time = t;
  m.kind = "Pod";
  m.namespace_ = "default";
  m.name = name;
  return m;
}

Json Pod(const std::string& name, const std::string& app, int gpus = 1) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{"app", app}}}}},
          {"spec",
           {{"containers",
             {{{"name", "main"},
               {"image", "busybox"},
               {"resources",
                {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
                 {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
}
Json Pdb(const std::string& name, const std::string& app, const Json& min_available) {
  return {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec", {{"minAvailable", min_available}, {"selector", {{"matchLabels", {{"app", app}}}}}}}};
}

Json Ok(Cluster& c, const Mutation& m) {
  MutationResult r = c.Apply(m);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
  return r.object;
}

// Two running pods app=a on an 8-GPU node, a budget keeping one of them.
void Pool(Cluster& c) {
  Ok(c, Create(kT0,
               {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
  Ok(c,
     Create(kT0, {{"apiVersion", "v1"},
                  {"kind", "Node"},
                  {"metadata", {{"name", "gpu-0"}}},
                  {"status",
                   {{"capacity", {{"cpu", "16"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "8"}}}}}}));
  Ok(c, Create(kT0 + 1000, Pod("a-1", "a")));
  Ok(c, Create(kT0 + 1000, Pod("a-2", "a")));
  Ok(c, Create(kT0 + 2000, Pdb("keep-one", "a", 1)));
}

const Json& PdbStatus(const Cluster& c, const std::string& name = "keep-one") {
  return c.store().Get("PodDisruptionBudget", "default", name)->at("status");
}

const Json* Condition(const Json& pod, const std::string& type) {
  for (const auto& x : pod["status"]["conditions"])
    if (x["type"] == type) return &x;
  return nullptr;
}

TEST(DisruptionTest, BudgetStatusCountsExpectedAndHealthyPodsAndTheDisruptionsAllowed) {
  Cluster c("0000abcd");
  Pool(c);
  const Json& st = PdbStatus(c);
  EXPECT_EQ(st["expectedPods"], 2);
  EXPECT_EQ(st["currentHealthy"], 2);
  EXPECT_EQ(st["desiredHealthy"], 1);
  EXPECT_EQ(st["disruptionsAllowed"], 1);
  EXPECT_EQ(st["observedGeneration"], 1);
  EXPECT_EQ(st["conditions"][0]["type"], "DisruptionAllowed");
  EXPECT_EQ(st["conditions"][0]["status"], "True");
  EXPECT_EQ(st["conditions"][0]["reason"], "SufficientPods");
}

TEST(DisruptionTest, BudgetStatusFollowsNewPodsAndPercentagesRoundUp) {
  Cluster c("0000abcd");
  Pool(c);
  Ok(c, Create(kT0 + 3000, Pod("a-3", "a")));
  EXPECT_EQ(PdbStatus(c)["disruptionsAllowed"], 2);
  Mutation update = Create(kT0 + 4000, Pdb("keep-one", "a", "50%"));
  update.op = Mutation::Op::kUpdate;
  update.name = "keep-one";
  Ok(c, update);
  const Json& st = PdbStatus(c);
  EXPECT_EQ(st["desiredHealthy"], 2);  // 50% of 3, rounded up
  EXPECT_EQ(st["disruptionsAllowed"], 1);
  EXPECT_EQ(st["observedGeneration"], 2);
}

TEST(DisruptionTest, EvictionTheBudgetAllowsDeletesThePodWithDisruptionTarget) {
  Cluster c("0000abcd");
  Pool(c);
  Json pod = Ok(c, Evict(kT0 + 5000, "a-1"));
  const Json* stored = c.store().Get("Pod", "default", "a-1");
  ASSERT_NE(stored, nullptr);  // running: it stays, being deleted, until it exits
  EXPECT_TRUE((*stored)["metadata"].contains("deletionTimestamp"));
  const Json* dt = Condition(*stored, "DisruptionTarget");
  ASSERT_NE(dt, nullptr);
  EXPECT_EQ((*dt)["status"], "True");
  EXPECT_EQ((*dt)["reason"], "EvictionByEvictionAPI");
  EXPECT_EQ((*dt)["message"], "Eviction API: evicting");
  EXPECT_EQ(PdbStatus(c)["currentHealthy"], 1);
  EXPECT_EQ(PdbStatus(c)["disruptionsAllowed"], 0);
  EXPECT_EQ(PdbStatus(c)["conditions"][0]["reason"], "InsufficientPods");
}

TEST(DisruptionTest, EvictionThatWouldViolateTheBudgetIsRefusedWith429AndChangesNothing) {
  Cluster c("0000abcd");
  Pool(c);
  Ok(c, Evict(kT0 + 5000, "a-1"));
  const int64_t rv = c.store().resource_version();
  MutationResult r = c.Apply(Evict(kT0 + 6000, "a-2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kTooManyRequests);
  EXPECT_EQ(r.error->message, "Cannot evict pod as it would violate the pod's disruption budget.");
  EXPECT_EQ(r.error->cause,
            "The disruption budget keep-one needs 1 healthy pods and has 1 currently");
  EXPECT_EQ(c.store().resource_version(), rv);
  EXPECT_FALSE(
      c.store().Get("Pod", "default", "a-2")->at("metadata").contains("deletionTimestamp"));
}

TEST(DisruptionTest, PendingAndTerminatingPodsAreEvictedWithoutConsultingTheBudget) {
  Cluster c("0000abcd");
  Pool(c);
  Ok(c, Evict(kT0 + 3000, "a-1"));  // the budget is used up
  ASSERT_EQ(PdbStatus(c)["disruptionsAllowed"], 0);
  Ok(c, Create(kT0 + 4000, Pod("a-big", "a", 16)));  // never fits: Pending
  EXPECT_EQ(c.store().Get("Pod", "default", "a-big")->at("status")["phase"], "Pending");
  Ok(c, Evict(kT0 + 5000, "a-big"));
  EXPECT_EQ(c.store().Get("Pod", "default", "a-big"), nullptr);
  Ok(c, Evict(kT0 + 5000, "a-1"));  // being deleted already
}

TEST(DisruptionTest, PodThatSeveralBudgetsSelectCannotBeEvicted) {
  Cluster c("0000abcd");
  Pool(c);
  Ok(c, Create(kT0 + 3000, Pdb("also", "a", 0)));
  MutationResult r = c.Apply(Evict(kT0 + 4000, "a-1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kInternal);
  EXPECT_EQ(r.error->message,
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
            "not support.");
}

TEST(DisruptionTest, EvictionOfAMissingPodIsNotFound) {
  Cluster c("0000abcd");
  Pool(c);
  MutationResult r = c.Apply(Evict(kT0 + 4000, "nope"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kNotFound);
}

TEST(DisruptionTest, DryRunEvictionChecksTheBudgetAndChangesNothing) {
  Cluster c("0000abcd");
  Pool(c);
  const int64_t rv = c.store().resource_version();
  Ok(c, Evict(kT0 + 3000, "a-1", true));
  EXPECT_EQ(c.store().resource_version(), rv);
  EXPECT_EQ(PdbStatus(c)["disruptionsAllowed"], 1);
  Ok(c, Evict(kT0 + 3000, "a-1"));
  MutationResult r = c.Apply(Evict(kT0 + 3000, "a-2", true));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kTooManyRequests);
}

TEST(DisruptionTest, EvictionIsJournaledAndReplaysToTheSameState) {
  Mutation m = Evict(kT0 + 3000, "a-1");
  auto back = Mutation::Decode(m.Encode());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back.value().eviction);
  EXPECT_FALSE(Mutation::Decode(Create(kT0, Pod("x", "a")).Encode()).value().eviction);
  Cluster a("0000abcd"), b("0000abcd");
  for (Cluster* c : {&a, &b}) {
    Pool(*c);
    Ok(*c, Mutation::Decode(m.Encode()).value());
    (void)c->Apply(Evict(kT0 + 4000, "a-2"));  // refused alike
  }
  EXPECT_EQ(a.Snapshot(), b.Snapshot());
}

// ?dryRun=All on create, update and delete: validated and answered, nothing stored.
TEST(DryRunTest, CreateUpdateAndDeleteAreValidatedAnsweredAndChangeNothing) {
  Cluster c("0000abcd");
  Pool(c);
  const int64_t rv = c.store().resource_version();
  const std::string snapshot = c.Snapshot();
  Mutation create = Create(kT0 + 3000, Pod("b-1", "b"));
  create.dry_run = true;
  Json made = Ok(c, create);
  EXPECT_EQ(made["metadata"]["name"], "b-1");
  EXPECT_FALSE(made["metadata"].value("uid", "").empty());
  EXPECT_EQ(made["status"]["phase"], "Pending");
  EXPECT_EQ(c.store().Get("Pod", "default", "b-1"), nullptr);

  Json bad = Pod("b-2", "b");
  bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  Mutation invalid = Create(kT0 + 3000, bad);
  invalid.dry_run = true;
  MutationResult r = c.Apply(invalid);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kInvalid);

  Mutation update = Create(kT0 + 3000, Pdb("keep-one", "a", 2));
  update.op = Mutation::Op::kUpdate;
  update.name = "keep-one";
  update.dry_run = true;
  Json updated = Ok(c, update);
  EXPECT_EQ(updated["spec"]["minAvailable"], 2);
  EXPECT_EQ(updated["metadata"]["generation"], 2);

  Mutation del;
  del.op = Mutation::Op::kDelete;
  del.time = kT0 + 3000;
  del.kind = "Pod";
  del.namespace_ = "default";
  del.name = "a-1";
  del.dry_run = true;
  Json deleted = Ok(c, del);
  EXPECT_TRUE(deleted["metadata"].contains("deletionTimestamp"));

  EXPECT_EQ(c.store().resource_version(), rv);
  EXPECT_EQ(c.Snapshot(), snapshot);
}

// Every stored budget's status counts what a walk of its namespace's pods counts now (the
// algorithm the counts kept as pods are written replaced): its pods with its selector's app,
// finished ones left out (expectedPods), of those the Ready ones not being deleted
// (currentHealthy). Returns how many budgets expected a pod.
int ExpectBudgetsRecount(const Cluster& c, const std::string& step) {
  SCOPED_TRACE(step);
  int nonzero = 0;
  for (const Json* pdb : c.store().List("PodDisruptionBudget", "default")) {
    const std::string app = pdb->at("spec")["selector"]["matchLabels"].value("app", "");
    int64_t expected = 0, healthy = 0;
    for (const Json* pod : c.store().List("Pod", "default")) {
      const Json& labels = pod->at("metadata").value("labels", Json::object());
      if (labels.value("app", "") != app || PodFinished(*pod)) continue;
      ++expected;
      healthy += PodHealthy(*pod);
    }
    const Json& st = pdb->value("status", Json::object());
    EXPECT_EQ(st.value("expectedPods", int64_t{-1}), expected) << pdb->dump();
    EXPECT_EQ(st.value("currentHealthy", int64_t{-1}), healthy) << pdb->dump();
    nonzero += expected > 0;
  }
  return nonzero;
}

// One random step on the budgets' pods and the budgets themselves.
std::string BudgetStep(Cluster& c, std::mt19937& rng, Millis& t, int& serial) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::string apps[] = {"a", "b", "c"};
  const auto& pods = c.store().All("Pod");
  auto some_pod = [&]() -> std::string {
    if (pods.empty()) return "";
    return std::next(pods.begin(), pick(static_cast<int>(pods.size())))->first.second;
  };
  t += 1000;
  switch (pick(9)) {
    case 0:
    case 1: {  // a pod, some with a run that ends
      Json p = Pod("p" + std::to_string(serial++), apps[pick(3)], 1 + pick(3));
      if (pick(2))
        p["metadata"]["annotations"]["arbiter.dev/duration"] = std::to_string(2 + pick(20)) + "s";
      (void)c.Apply(Create(t, p));
      return "create";
    }
    case 2: {  // a delete, with or without grace (deletionTimestamp while it exits)
      const std::string name = some_pod();
      if (name.empty()) return "none";
      Mutation m = Evict(t, name);
      m.eviction = false;
      if (pick(2)) m.grace_period = 0;
      (void)c.Apply(m);
      return "delete " + name;
    }
    case 3: {  // an eviction (the budgets may refuse it)
      const std::string name = some_pod();
      if (name.empty()) return "none";
      (void)c.Apply(Evict(t, name));
      return "evict " + name;
    }
    case 4: {  // a pod's app label changed
      const std::string name = some_pod();
      if (name.empty()) return "none";
      Mutation m = Create(t, *c.store().Get("Pod", "default", name));
      m.op = Mutation::Op::kUpdate;
      m.name = name;
      m.object["metadata"]["labels"]["app"] = apps[pick(3)];
      (void)c.Apply(m);
      return "relabel " + name;
    }
    case 5: {  // a budget made, or changed (its selector or its minAvailable: a new generation)
      const std::string name = "keep-" + apps[pick(3)];
      Json b = Pdb(name, apps[pick(3)], pick(3));
      Mutation m = Create(t, b);
      if (const Json* was = c.store().Get("PodDisruptionBudget", "default", name)) {
        m.op = Mutation::Op::kUpdate;
        m.name = name;
        m.object["metadata"]["resourceVersion"] = was->at("metadata")["resourceVersion"];
      }
      (void)c.Apply(m);
      return "budget " + name;
    }
    case 6: {  // a budget deleted (made again later under the same name: another uid)
      const std::string name = "keep-" + apps[pick(3)];
      Mutation m;
      m.op = Mutation::Op::kDelete;
      m.time = t;
      m.kind = "PodDisruptionBudget";
      m.namespace_ = "default";
      m.name = name;
      (void)c.Apply(m);
      return "unbudget " + name;
    }
    default:  // time passes: runs end, deleted pods exit
      t += 1000 * (1 + pick(15));
      while (auto due = c.NextDue()) {
        if (*due > t) break;
        Mutation a;
        a.op = Mutation::Op::kAdvance;
        a.time = *due;
        (void)c.Apply(a);
      }
      return "advance";
  }
}

// Each budget's status, now from counts kept as pods are written (not a walk of the namespace's
// pods at every mutation: O(its pods) per create), equals the walk's after every step of random
// creates, deletes, evictions, relabels, budgets made, changed, deleted and made again, and time
// passing, and after a snapshot restore and a step more.
TEST(DisruptionTest, BudgetStatusesEqualTheWalkTheyReplaced) {
  int counted = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Cluster c("0000abcd");
    Pool(c);
    std::mt19937 rng(seed);
    Millis t = kT0 + 3000;
    int serial = 0;
    for (int step = 0; step < 150; ++step) {
      const std::string what = BudgetStep(c, rng, t, serial);
      counted += ExpectBudgetsRecount(c, std::to_string(step) + ": " + what);
      if (::testing::Test::HasFailure()) return;
    }
    Cluster restored("0000abcd");
    ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
    counted += ExpectBudgetsRecount(restored, "restored");
    const std::string what = BudgetStep(restored, rng, t, serial);
    counted += ExpectBudgetsRecount(restored, "restored, then " + what);
  }
  EXPECT_GT(counted, 100);
}

}  // namespace
}  // namespace arbiter::server
