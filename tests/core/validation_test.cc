// One test per cross-object rule of core/validation.h (see docs/manifests.md, "Validation").
#include "core/validation.h"

#include <gtest/gtest.h>

#include <limits>

namespace arbiter {
namespace {

int g_line = 0;

ObjectMeta Meta(const std::string& name, const std::string& ns = "") {
  ObjectMeta m;
  m.name = name;
  m.namespace_ = ns;
  m.source = {"v.yaml", ++g_line * 10};
  return m;
}

Pod MakePod(const std::string& name, const std::string& ns, ResourceList req,
            ResourceList lim = {}) {
  Pod p;
  p.meta = Meta(name, ns);
  Container c;
  c.name = "c";
  c.requests = std::move(req);
  c.limits = std::move(lim);
  p.containers.push_back(c);
  return p;
}

Node MakeNode(const std::string& name, ResourceList cap) {
  Node n;
  n.meta = Meta(name);
  n.capacity = cap;
  n.allocatable = cap;
  return n;
}

Diagnostics Check(const ManifestSet& s, const SourceLocator* loc = nullptr) {
  Diagnostics d;
  ValidateManifestSet(s, loc, &d);
  return d;
}

std::string All(const Diagnostics& d) {
  std::string s;
  for (const auto& x : d.items) s += x.ToString() + "\n";
  return s;
}

// The only diagnostic; fails unless there is exactly one.
Diagnostic One(const Diagnostics& d) {
  EXPECT_EQ(d.items.size(), 1u) << All(d);
  return d.items.empty() ? Diagnostic{} : d.items[0];
}

bool Has(const Diagnostics& d, Severity sev, const std::string& needle) {
  for (const auto& x : d.items)
    if (x.severity == sev && x.ToString().find(needle) != std::string::npos) return true;
  return false;
}

TEST(ValidationTest, EmptySetIsClean) { EXPECT_TRUE(Check({}).items.empty()); }

TEST(ValidationTest, DuplicateObjects) {
  ManifestSet s;
  s.pods.push_back(MakePod("p", "a", {}));
  s.pods.push_back(MakePod("p", "b", {}));  // other namespace: fine
  s.pods.push_back(MakePod("p", "a", {}));
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.name, "a/p");
  EXPECT_EQ(d.line, s.pods[2].meta.source.line);
  EXPECT_NE(d.message.find("duplicate Pod \"a/p\" (first defined at v.yaml:" +
                           std::to_string(s.pods[0].meta.source.line) + ")"),
            std::string::npos);
  ManifestSet q;
  q.qos.push_back({Meta("high"), 1, {}, {}, {}, {}});
  q.qos.push_back({Meta("high"), 2, {}, {}, {}, {}});
  EXPECT_TRUE(Has(Check(q), Severity::kError, "duplicate QoS"));
}

// A PodGroup whose minMember is above PoolPolicy quota.maxSubmittedPerNamespace never has all its
// pods submitted at once: it never starts (warned; a group of the cap's size is fine).
TEST(ValidationTest, APodGroupLargerThanTheSubmitLimitIsWarnedOf) {
  ManifestSet s;
  s.pool_policy = PoolPolicy{};
  s.pool_policy->max_submitted_per_namespace = 4;
  PodGroup g;
  g.meta.name = "wide";
  g.meta.namespace_ = "ml";
  g.min_member = 5;
  s.pod_groups.push_back(g);
  g.meta.name = "fits";
  g.min_member = 4;
  s.pod_groups.push_back(g);
  const Diagnostics d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "minMember is 5 but PoolPolicy quota.maxSubmittedPerNamespace lets namespace ml "
                  "have 4 pods pending or running: the group never starts"))
      << All(d);
  EXPECT_FALSE(Has(d, Severity::kWarning, "minMember is 4 but PoolPolicy")) << All(d);
}

TEST(ValidationTest, MoreThanOneGlobalDefaultPriorityClass) {
  ManifestSet s;
  for (const char* n : {"a", "b", "c"}) {
    PriorityClass pc;
    pc.meta = Meta(n);
    pc.global_default = std::string(n) != "b";
    s.priority_classes.push_back(pc);
  }
  auto d = One(Check(s));
  EXPECT_EQ(d.name, "c");
  EXPECT_EQ(d.field_path, "globalDefault");
  EXPECT_NE(d.message.find("more than one globalDefault"), std::string::npos);
}

TEST(ValidationTest, PodNamesUnknownPriorityClass) {
  ManifestSet s;
  PriorityClass pc;
  pc.meta = Meta("training");
  pc.value = 5000;
  s.priority_classes.push_back(pc);
  Pod p = MakePod("p", "a", {});
  p.priority_class_name = "trainig";
  s.pods.push_back(p);
  Pod ok = MakePod("q", "a", {});
  ok.priority_class_name = "system-cluster-critical";
  s.pods.push_back(ok);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.priorityClassName");
  EXPECT_NE(d.message.find("unknown PriorityClass \"trainig\"; did you mean \"training\"?"),
            std::string::npos);
}

TEST(ValidationTest, PodPriorityMustMatchItsClass) {
  ManifestSet s;
  PriorityClass pc;
  pc.meta = Meta("training");
  pc.value = 5000;
  s.priority_classes.push_back(pc);
  Pod p = MakePod("p", "a", {});
  p.priority_class_name = "training";
  p.priority = 4000;
  s.pods.push_back(p);
  Pod q = MakePod("q", "a", {});
  q.priority_class_name = "training";
  q.priority = 5000;
  s.pods.push_back(q);
  EXPECT_EQ(One(Check(s)).field_path, "spec.priority");
}

TEST(ValidationTest, PodNamesUnknownQoS) {
  ManifestSet s;
  s.qos.push_back({Meta("high"), 10, {}, {}, {}, {}});
  Pod p = MakePod("p", "a", {});
  p.sim.qos = "hihg";
  s.pods.push_back(p);
  Pod q = MakePod("q", "a", {});
  q.sim.qos = "high";
  s.pods.push_back(q);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "metadata.annotations[arbiter.dev/qos]");
  EXPECT_NE(d.message.find("unknown QoS \"hihg\"; did you mean \"high\"?"), std::string::npos);
}

TEST(ValidationTest, LimitBelowRequestInAContainer) {
  ManifestSet s;
  s.pods.push_back(
      MakePod("p", "a", {{"cpu", 4000}, {"memory", 2048}}, {{"cpu", 2000}, {"memory", 2048}}));
  Pod init = MakePod("q", "a", {});
  init.init_containers.push_back({"i", {{"memory", 10}}, {{"memory", 5}}});
  s.pods.push_back(init);
  auto d = Check(s);
  ASSERT_EQ(d.items.size(), 2u) << All(d);
  EXPECT_EQ(d.items[0].field_path, "spec.containers[0].resources.limits.cpu");
  EXPECT_NE(d.items[0].message.find("limit 2 is below the request 4"), std::string::npos);
  EXPECT_EQ(d.items[1].field_path, "spec.initContainers[0].resources.limits.memory");
}

TEST(ValidationTest, GpuLimitMustEqualRequest) {
  ManifestSet s;
  s.pods.push_back(MakePod("p", "a", {{"nvidia.com/gpu", 1000}}, {{"nvidia.com/gpu", 2000}}));
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.containers[0].resources.limits[nvidia.com/gpu]");
  EXPECT_NE(d.message.find("must equal its request"), std::string::npos);
}

TEST(ValidationTest, PdbWithBothMinAvailableAndMaxUnavailable) {
  ManifestSet s;
  PodDisruptionBudget p;
  p.meta = Meta("pdb", "a");
  p.min_available = IntOrPercent{false, 1};
  p.max_unavailable = IntOrPercent{false, 1};
  s.pdbs.push_back(p);
  EXPECT_NE(One(Check(s)).message.find("mutually exclusive"), std::string::npos);
}

TEST(ValidationTest, PdbPercentageOutOfRange) {
  ManifestSet s;
  PodDisruptionBudget p;
  p.meta = Meta("pdb", "a");
  p.max_unavailable = IntOrPercent{true, 150};
  s.pdbs.push_back(p);
  p.meta = Meta("pdb2", "a");
  p.max_unavailable = IntOrPercent{true, 100};
  s.pdbs.push_back(p);
  auto d = One(Check(s));
  EXPECT_EQ(d.name, "a/pdb");
  EXPECT_NE(d.message.find("150% is outside 0%-100%"), std::string::npos);
}

TEST(ValidationTest, PdbThatSelectsNothingOrBlocksEverything) {
  ManifestSet s;
  Pod p = MakePod("web-0", "a", {});
  p.meta.labels = {{"app", "web"}};
  s.pods.push_back(p);
  PodDisruptionBudget none;
  none.meta = Meta("none", "a");
  none.min_available = IntOrPercent{false, 1};
  none.selector.match_labels = {{"app", "db"}};
  s.pdbs.push_back(none);
  PodDisruptionBudget all;
  all.meta = Meta("all", "a");
  all.min_available = IntOrPercent{true, 100};
  all.selector.match_labels = {{"app", "web"}};
  s.pdbs.push_back(all);
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 0u);
  EXPECT_TRUE(Has(d, Severity::kWarning, "selects no Pod")) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning, "no voluntary disruption")) << All(d);
}

PoolPolicy Policy() {
  PoolPolicy p;
  p.meta = Meta("default");
  return p;
}

TEST(ValidationTest, CpuOvercommitRange) {
  for (int64_t milli : {1000, 1100, 1200}) {
    ManifestSet s;
    s.pool_policy = Policy();
    s.pool_policy->cpu_overcommit_milli = milli;
    EXPECT_TRUE(Check(s).items.empty()) << milli;
  }
  ManifestSet low;
  low.pool_policy = Policy();
  low.pool_policy->cpu_overcommit_milli = 900;
  auto d = One(Check(low));
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.field_path, "spec.overcommit.cpu");
  EXPECT_NE(d.message.find("0.9 is below 1.0"), std::string::npos);
  ManifestSet high;
  high.pool_policy = Policy();
  high.pool_policy->cpu_overcommit_milli = 1500;
  d = One(Check(high));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_NE(d.message.find("1.5 is above the recommended range 1.0-1.2"), std::string::npos);
}

TEST(ValidationTest, MemoryOvercommitRange) {
  ManifestSet s;
  s.pool_policy = Policy();
  s.pool_policy->memory_overcommit_milli = 999;
  EXPECT_EQ(One(Check(s)).severity, Severity::kError);
  s.pool_policy->memory_overcommit_milli = 1100;
  EXPECT_EQ(One(Check(s)).severity, Severity::kWarning);
}

TEST(ValidationTest, ScrapeInterval) {
  for (Millis ms : {15000, 30000, 60000}) {
    ManifestSet s;
    s.pool_policy = Policy();
    s.pool_policy->scrape_interval = ms;
    EXPECT_TRUE(Check(s).items.empty()) << ms;
  }
  ManifestSet s;
  s.pool_policy = Policy();
  s.pool_policy->scrape_interval = 500;
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_NE(d.message.find("500ms is below 1s"), std::string::npos);
  s.pool_policy->scrape_interval = 5000;
  EXPECT_EQ(One(Check(s)).severity, Severity::kWarning);
  s.pool_policy->scrape_interval = 120000;
  d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_NE(d.message.find("2m is outside the recommended range 15s-60s"), std::string::npos);
}

TEST(ValidationTest, QoSPreemptionWithoutQoSObjects) {
  ManifestSet s;
  s.pool_policy = Policy();
  s.pool_policy->preemption_type = PreemptionType::kQoS;
  EXPECT_EQ(One(Check(s)).field_path, "spec.preemption.type");
}

ElasticQuota Eq(const std::string& ns, ResourceList min,
                std::optional<ResourceList> max = std::nullopt) {
  ElasticQuota q;
  q.meta = Meta(ns, ns);
  q.cohort = "pool";
  q.min = std::move(min);
  q.max = std::move(max);
  return q;
}

TEST(ValidationTest, ElasticQuotaMinAboveMax) {
  ManifestSet s;
  s.elastic_quotas.push_back(Eq("a", {{"nvidia.com/gpu", 16000}, {"cpu", 1000}},
                                ResourceList{{"nvidia.com/gpu", 8000}, {"cpu", 2000}}));
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.min[nvidia.com/gpu]");
  EXPECT_NE(d.message.find("min 16 exceeds max 8"), std::string::npos);
}

// One ElasticQuota a namespace: the second names the first and where it was read, but for an
// object `arbiter serve` was sent (its source kApiRequest: no place in a file).
TEST(ValidationTest, ASecondElasticQuotaInANamespaceNamesTheFirst) {
  ManifestSet s;
  s.elastic_quotas.push_back(Eq("a", {{"nvidia.com/gpu", 4000}}));
  s.elastic_quotas.push_back(Eq("a", {{"nvidia.com/gpu", 4000}}));
  s.elastic_quotas[1].meta.name = "b";
  const std::string where = "v.yaml:" + std::to_string(s.elastic_quotas[0].meta.source.line);
  EXPECT_EQ(One(Check(s)).message,
            "namespace \"a\" already has ElasticQuota \"a\" (at " + where + "); one per namespace");
  s.elastic_quotas[0].meta.source = {kApiRequest, 1};
  EXPECT_EQ(One(Check(s)).message,
            "namespace \"a\" already has ElasticQuota \"a\"; one per namespace");
}

TEST(ValidationTest, ElasticQuotaLendingLimit) {
  ManifestSet s;
  ElasticQuota q = Eq("a", {{"nvidia.com/gpu", 4000}});
  q.lending_limit = {{"nvidia.com/gpu", 8000}, {"cpu", 1000}};
  q.lending_limit_set = {"cpu", "nvidia.com/gpu"};
  s.elastic_quotas.push_back(q);
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 2u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kError, "lending limit 8 exceeds min 4"));
  EXPECT_TRUE(Has(d, Severity::kError, "which has no min"));
}

TEST(ValidationTest, OneElasticQuotaPerNamespace) {
  ManifestSet s;
  s.elastic_quotas.push_back(Eq("a", {}));
  ElasticQuota other = Eq("a", {});
  other.meta.name = "other";
  s.elastic_quotas.push_back(other);
  EXPECT_NE(One(Check(s)).message.find("already has ElasticQuota"), std::string::npos);
}

TEST(ValidationTest, CohortGuaranteesBeyondThePool) {
  ManifestSet s;
  s.nodes.push_back(MakeNode("n", {{"nvidia.com/gpu", 8000}}));
  s.elastic_quotas.push_back(Eq("a", {{"nvidia.com/gpu", 6000}}));
  s.elastic_quotas.push_back(Eq("b", {{"nvidia.com/gpu", 4000}}));
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_NE(d.message.find("adds up to 10"), std::string::npos);
}

TEST(ValidationTest, ResourceQuotaBelowElasticQuotaCeiling) {
  ManifestSet s;
  s.elastic_quotas.push_back(
      Eq("a", {{"nvidia.com/gpu", 4000}}, ResourceList{{"nvidia.com/gpu", 16000}}));
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 8000});
  s.resource_quotas.push_back(rq);
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_NE(d.message.find("can never use all of it"), std::string::npos);
}

// QoS spec.namespaces: an empty list is a warning (no namespace may use the QoS); a pod of a
// namespace the list leaves out is a warning (the engine rejects it, a daemon refuses its create).
TEST(ValidationTest, QoSNamespacesWarnOfAnEmptyListAndOfPodsLeftOut) {
  ManifestSet s;
  s.qos.push_back({Meta("inference"), 10, {}, {}, {}, std::vector<std::string>{"team-a"}});
  s.qos.push_back({Meta("retired"), 1, {}, {}, {}, std::vector<std::string>{}});
  Pod in, out;
  in.meta = Meta("in", "team-a");
  in.sim.qos = "inference";
  out.meta = Meta("out", "team-b");
  out.sim.qos = "inference";
  s.pods = {in, out};
  auto d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kWarning, "no namespace may use this QoS"));
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "QoS \"inference\" may not be used in namespace \"team-b\" (not in its "
                  "spec.namespaces): the pod will be rejected"));
  EXPECT_FALSE(Has(d, Severity::kWarning, "namespace \"team-a\" (not in"));
}

TEST(ValidationTest, QoSPreemptsUnknownOrItself) {
  ManifestSet s;
  s.qos.push_back({Meta("high"), 10, {"low", "hihg", "nope"}, {}, {}, {}});
  s.qos.push_back({Meta("low"), 1, {}, {}, {}, {}});
  s.qos.push_back({Meta("self"), 1, {"self"}, {}, {}, {}});
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 2u) << All(d);
  EXPECT_TRUE(
      Has(d, Severity::kError, "spec.preempt[1]: unknown QoS \"hihg\"; did you mean \"high\"?"));
  EXPECT_TRUE(Has(d, Severity::kError, "spec.preempt[2]: unknown QoS \"nope\""));
  EXPECT_TRUE(Has(d, Severity::kWarning, "preempts itself"));
}

TEST(ValidationTest, ResourceQuotaSameExtendedQuotaTwice) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 1000});
  rq.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 2000});
  s.resource_quotas.push_back(rq);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.hard[requests.nvidia.com/gpu]");
  EXPECT_NE(d.message.find("set the same quota"), std::string::npos);
}

// Kubernetes accepts `cpu` with `requests.cpu` and `pods` with `count/pods` in one quota (and
// enforces each).
TEST(ValidationTest, ResourceQuotaBareAndPrefixedComputeAndPodCountsLoadAsKubernetesAccepts) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"cpu", QuotaTrack::kRequests, "cpu", 1000});
  rq.hard.push_back({"requests.cpu", QuotaTrack::kRequests, "cpu", 2000});
  rq.hard.push_back({"limits.cpu", QuotaTrack::kLimits, "cpu", 2000});
  rq.hard.push_back({"pods", QuotaTrack::kCount, "pods", 3});
  rq.hard.push_back({"count/pods", QuotaTrack::kCount, "pods", 5});
  s.resource_quotas.push_back(rq);
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 0u) << All(d);
}

TEST(ValidationTest, ResourceQuotaBestEffortScopeCountsPodsOnly) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"pods", QuotaTrack::kCount, "pods", 3});
  rq.hard.push_back({"requests.cpu", QuotaTrack::kRequests, "cpu", 2000});
  rq.scope_selector.push_back({"BestEffort", SelectorOperator::kExists, {}});
  s.resource_quotas.push_back(rq);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.hard[requests.cpu]");
  EXPECT_NE(d.message.find("unsupported scope applied to resource"), std::string::npos);
}

// Kubernetes' ValidateResourceQuota: Terminating and NotTerminating exclude each other.
TEST(ValidationTest, ResourceQuotaTerminatingAndNotTerminatingConflict) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"pods", QuotaTrack::kCount, "pods", 3});
  rq.scope_selector.push_back({"Terminating", SelectorOperator::kExists, {}});
  rq.scope_selector.push_back({"NotTerminating", SelectorOperator::kExists, {}});
  s.resource_quotas.push_back(rq);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.scopes");
  EXPECT_EQ(d.message, "conflicting scopes: Terminating and NotTerminating");
}

// Kubernetes' IsResourceQuotaScopeValidForResource: Terminating applies to pods, cpu and memory.
TEST(ValidationTest, ResourceQuotaTerminatingScopeRefusesEphemeralStorage) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"pods", QuotaTrack::kCount, "pods", 3});
  rq.hard.push_back({"requests.cpu", QuotaTrack::kRequests, "cpu", 2000});
  rq.hard.push_back({"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 2});
  rq.hard.push_back({"requests.ephemeral-storage", QuotaTrack::kRequests, "ephemeral-storage", 1});
  rq.scope_selector.push_back({"Terminating", SelectorOperator::kExists, {}});
  s.resource_quotas.push_back(rq);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.hard[requests.ephemeral-storage]");
  EXPECT_NE(d.message.find("unsupported scope applied to resource"), std::string::npos);
}

TEST(ValidationTest, ResourceQuotaScopeNamesUnknownPriorityClass) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.scope_selector.push_back({"PriorityClass", SelectorOperator::kIn, {"ghost"}});
  s.resource_quotas.push_back(rq);
  EXPECT_EQ(One(Check(s)).severity, Severity::kWarning);
}

// Kubernetes' built-in system-cluster-critical and system-node-critical exist without an object:
// a quota that keeps them out of a namespace (examples/pool.yaml) drew a warning each.
TEST(ValidationTest, ResourceQuotaScopeMayNameTheBuiltInSystemClasses) {
  ManifestSet s;
  ResourceQuota rq;
  rq.meta = Meta("rq", "a");
  rq.hard.push_back({"pods", QuotaTrack::kCount, "pods", 0});
  rq.scope_selector.push_back({"PriorityClass",
                               SelectorOperator::kIn,
                               {"system-cluster-critical", "system-node-critical"}});
  s.resource_quotas.push_back(rq);
  EXPECT_TRUE(Check(s).items.empty());
}

TEST(ValidationTest, LimitRangeConsistency) {
  ManifestSet s;
  LimitRange lr;
  lr.meta = Meta("lr", "a");
  LimitRangeItem li;
  li.min = {{"cpu", 2000}};
  li.max = {{"cpu", 1000}};
  li.default_limit = {{"memory", 100}, {"nvidia.com/gpu", 2000}};
  li.default_request = {{"memory", 200}, {"nvidia.com/gpu", 1000}};
  lr.limits.push_back(li);
  LimitRangeItem ratio;
  ratio.default_limit = {{"cpu", 4000}};
  ratio.default_request = {{"cpu", 1000}};
  ratio.max_limit_request_ratio_milli = {{"cpu", 2000}};
  lr.limits.push_back(ratio);
  s.limit_ranges.push_back(lr);
  auto d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kError, "spec.limits[0].min.cpu: min 2 of cpu is above max 1"))
      << All(d);
  EXPECT_TRUE(Has(d, Severity::kError, "defaultRequest 200 of memory is above default 100"));
  EXPECT_TRUE(Has(d, Severity::kError, "default must equal defaultRequest"));
  EXPECT_TRUE(Has(d, Severity::kError, "spec.limits[1].maxLimitRequestRatio.cpu"));
}

TEST(ValidationTest, NodeAllocatableAboveCapacityAndMigProfiles) {
  ManifestSet s;
  Node n =
      MakeNode("n", {{"cpu", 8000}, {"nvidia.com/mig-3g.40gb", 2}, {"nvidia.com/mig-9g.99gb", 1}});
  n.allocatable.Set("cpu", 9000);
  n.meta.labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB";
  s.nodes.push_back(n);
  s.nodes.push_back(MakeNode("empty", {}));
  auto d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kError, "allocatable 9 exceeds capacity 8")) << All(d);
  EXPECT_TRUE(
      Has(d, Severity::kWarning, "nvidia.com/mig-3g.40gb is not a MIG profile of A100-40GB"));
  EXPECT_TRUE(
      Has(d, Severity::kWarning, "nvidia.com/mig-9g.99gb is not a MIG profile of A100-40GB"));
  EXPECT_TRUE(Has(d, Severity::kWarning, "Node/empty: status: warning: node has no capacity"));
}

// Time-slicing / MPS: nvidia.com/gpu.replicas must be a positive integer (billing divides the
// card by it), the strategy one of GPU feature discovery's values; a capacity that is not a
// whole number of cards is suspicious.
TEST(ValidationTest, GpuSharingLabels) {
  ManifestSet s;
  Node zero = MakeNode("zero", {{"nvidia.com/gpu", 4000}});
  zero.meta.labels["nvidia.com/gpu.replicas"] = "0";
  Node frac = MakeNode("frac", {{"nvidia.com/gpu", 4000}});
  frac.meta.labels["nvidia.com/gpu.replicas"] = "1.5";
  Node strat = MakeNode("strat", {{"nvidia.com/gpu", 4000}});
  strat.meta.labels["nvidia.com/gpu.sharing-strategy"] = "timeslicing";
  Node odd = MakeNode("odd", {{"nvidia.com/gpu", 10000}});
  odd.meta.labels["nvidia.com/gpu.replicas"] = "4";
  Node renamed = MakeNode("renamed", {{"nvidia.com/gpu.shared", 10}});
  renamed.meta.labels["nvidia.com/gpu.replicas"] = "4";
  s.nodes.push_back(renamed);
  Node good = MakeNode("good", {{"nvidia.com/gpu", 16000}});
  good.meta.labels["nvidia.com/gpu.replicas"] = "4";
  good.meta.labels["nvidia.com/gpu.sharing-strategy"] = "mps";
  for (const Node& n : {zero, frac, strat, odd, good}) s.nodes.push_back(n);
  auto d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kError,
                  "Node/zero: metadata.labels[nvidia.com/gpu.replicas]: nvidia.com/gpu.replicas "
                  "\"0\": must be at least 1"))
      << All(d);
  EXPECT_TRUE(Has(d, Severity::kError,
                  "Node/frac: metadata.labels[nvidia.com/gpu.replicas]: nvidia.com/gpu.replicas "
                  "\"1.5\": must be a positive integer"))
      << All(d);
  EXPECT_TRUE(Has(d, Severity::kError, "must be time-slicing, mps or none")) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Node/odd: status.capacity[nvidia.com/gpu]: warning: nvidia.com/gpu 10 is not a "
                  "whole number of cards of 4 replicas"))
      << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Node/renamed: status.capacity[nvidia.com/gpu.shared]: warning: "
                  "nvidia.com/gpu.shared 10 is not a whole number of cards of 4 replicas"))
      << All(d);
  for (const auto& x : d.items)
    EXPECT_EQ(x.ToString().find("Node/good"), std::string::npos) << x.ToString();
}

TEST(ValidationTest, PodsThatCanNeverBePlaced) {
  ManifestSet s;
  Node n = MakeNode("n", {{"cpu", 10000}, {"nvidia.com/gpu", 8000}});
  n.meta.labels["pool"] = "gpu";
  s.nodes.push_back(n);
  s.pool_policy = Policy();
  s.pool_policy->cpu_overcommit_milli = 1200;
  s.pods.push_back(MakePod("fits-with-overcommit", "default", {{"cpu", 12000}}));
  s.pods.push_back(MakePod("too-many-gpus", "default", {{"nvidia.com/gpu", 16000}}));
  Pod sel = MakePod("selector", "default", {{"cpu", 1000}});
  sel.node_selector = {{"pool", "cpu"}};
  s.pods.push_back(sel);
  Pod host = MakePod("by-hostname", "default", {{"cpu", 1000}});
  host.node_selector = {{"kubernetes.io/hostname", "n"}};  // set by the kubelet on every node
  s.pods.push_back(host);
  auto d = Check(s);
  EXPECT_EQ(d.items.size(), 2u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Pod/default/too-many-gpus: spec.containers: warning: requests nvidia.com/gpu=16 "
                  "fit on no schedulable node"));
  EXPECT_TRUE(Has(d, Severity::kWarning, "Pod/default/selector: spec.nodeSelector"));
}

// Regression: the "fits on some node" check is memoised per (requests, nodeSelector); selector
// text that looks like two entries must not share a memo entry with the two entries.
TEST(ValidationTest, SelectorMemoKeysDoNotCollide) {
  ManifestSet s;
  Node n = MakeNode("n", {{"cpu", 10000}});
  n.meta.labels["a"] = "1";
  n.meta.labels["b"] = "2";
  s.nodes.push_back(n);
  Pod odd = MakePod("odd", "default", {{"cpu", 1000}});
  odd.node_selector = {{"a", "1\nb=2"}};
  s.pods.push_back(odd);
  Pod two = MakePod("two", "default", {{"cpu", 1000}});
  two.node_selector = {{"a", "1"}, {"b", "2"}};
  s.pods.push_back(two);
  auto d = Check(s);
  EXPECT_EQ(d.items.size(), 1u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning, "Pod/default/odd: spec.nodeSelector"));
}

TEST(ValidationTest, PodsThatLimitRangeAdmissionWillReject) {
  ManifestSet s;
  LimitRange lr;
  lr.meta = Meta("lr", "a");
  LimitRangeItem c;
  c.type = LimitType::kContainer;
  c.max = {{"cpu", 4000}};
  c.min = {{"memory", 100}};
  c.default_request = {{"memory", 200}};
  c.max_limit_request_ratio_milli = {{"cpu", 2000}};
  lr.limits.push_back(c);
  LimitRangeItem pod;
  pod.type = LimitType::kPod;
  pod.max = {{"nvidia.com/gpu", 4000}};
  lr.limits.push_back(pod);
  s.limit_ranges.push_back(lr);
  // Fine: cpu limited within max, memory request from defaultRequest, GPU limited.
  s.pods.push_back(MakePod("ok", "a", {{"cpu", 1000}, {"nvidia.com/gpu", 1000}},
                           {{"cpu", 2000}, {"nvidia.com/gpu", 1000}}));
  s.pods.push_back(
      MakePod("bursty", "a", {{"cpu", 1000}}, {{"cpu", 3000}, {"nvidia.com/gpu", 1000}}));
  s.pods.push_back(MakePod("cpu-over-max", "a", {}, {{"cpu", 8000}, {"nvidia.com/gpu", 1000}}));
  s.pods.push_back(MakePod("no-gpu-limit", "a", {}, {{"cpu", 1000}}));
  s.pods.push_back(MakePod("other-namespace", "b", {}, {}));
  // The API server's LimitRange defaulting: default <- max, defaultRequest <- default <- min.
  LimitRange defaulted;
  defaulted.meta = Meta("bounds", "dev");
  LimitRangeItem b;
  b.max = {{"memory", 16}};
  b.min = {{"cpu", 500}};
  defaulted.limits.push_back(b);
  s.limit_ranges.push_back(defaulted);
  s.pods.push_back(MakePod("bare", "dev", {}));
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 0u) << All(d);
  ASSERT_EQ(d.items.size(), 3u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Pod/a/bursty: spec.containers: warning: LimitRange \"lr\" will reject this "
                  "pod at admission: cpu max limit to request ratio per Container is 2, but "
                  "provided ratio is 3.000000"));
  EXPECT_TRUE(Has(d, Severity::kWarning, "maximum cpu usage per Container is 4, but limit is 8"));
  // Kubernetes' wording (limitranger's maxConstraint).
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "maximum nvidia.com/gpu usage per Pod is 4.  No limit is specified"));
}

// validate's pre-check is the engine's admission: Pod-type items on max(sum of containers,
// largest init container), Pod min and maxLimitRequestRatio, and the API server's request <=
// limit after defaults.
TEST(ValidationTest, LimitRangePodItemsAndDefaultedLimitBelowRequest) {
  ManifestSet s;
  LimitRange lr;
  lr.meta = Meta("pod-bounds", "a");
  LimitRangeItem pod;
  pod.type = LimitType::kPod;
  pod.max = {{"cpu", 4000}};
  pod.min = {{"memory", 1000}};
  pod.max_limit_request_ratio_milli = {{"cpu", 2000}};
  lr.limits.push_back(pod);
  s.limit_ranges.push_back(lr);
  // Two 1-cpu containers and a 3-cpu init container: the pod's limit is max(2, 3) = 3 <= 4
  // (summing all three, 5, would be over); memory 2k >= 1k; ratio 3/3.
  Pod ok = MakePod("ok", "a", {{"cpu", 1000}, {"memory", 1000}}, {{"cpu", 1000}, {"memory", 1000}});
  ok.containers.push_back(ok.containers[0]);
  ok.containers[1].name = "c2";
  ok.init_containers.push_back(ok.containers[0]);
  ok.init_containers[0].name = "init";
  ok.init_containers[0].requests = {{"cpu", 3000}};
  ok.init_containers[0].limits = {{"cpu", 3000}};
  s.pods.push_back(ok);
  s.pods.push_back(MakePod("small", "a", {{"cpu", 1000}, {"memory", 500}}, {{"cpu", 1000}}));
  s.pods.push_back(MakePod("bursty", "a", {{"cpu", 1000}, {"memory", 1000}}, {{"cpu", 3000}}));
  LimitRange defaults;
  defaults.meta = Meta("defaults", "b");
  LimitRangeItem c;
  c.default_limit = {{"cpu", 1000}};
  defaults.limits.push_back(c);
  s.limit_ranges.push_back(defaults);
  s.pods.push_back(MakePod("big", "b", {{"cpu", 2000}}));
  auto d = Check(s);
  ASSERT_EQ(d.items.size(), 3u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Pod/a/small: spec.containers: warning: LimitRange \"pod-bounds\" will reject "
                  "this pod at admission: minimum memory usage per Pod is 1k, but request is 500"))
      << All(d);
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "cpu max limit to request ratio per Pod is 2, but provided ratio is 3.000000"));
  EXPECT_TRUE(Has(d, Severity::kWarning,
                  "Pod/b/big: spec.containers: warning: will be refused at admission after "
                  "LimitRange defaults: "
                  "Pod \"big\" is invalid: spec.containers[0].resources.requests[cpu]: Invalid "
                  "value: \"2\": must be "
                  "less than or equal to cpu limit of 1"));
}

// ResourceList arithmetic aborts on overflow (a broken invariant), so amounts whose totals do not
// fit in 64 bits are refused before anything adds them.
TEST(ValidationTest, TotalsThatOverflowAreErrorsNotAborts) {
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  ManifestSet s;
  s.pods.push_back(MakePod("a", "ns", {{"memory", big}}));
  s.pods.push_back(MakePod("b", "ns", {{"memory", big}}));
  s.nodes.push_back(MakeNode("n1", {{"memory", big}}));
  s.elastic_quotas.push_back(Eq("ns", {{"memory", big}}, ResourceList{{"memory", big}}));
  auto d = Check(s);
  EXPECT_TRUE(Has(d, Severity::kError, "amounts too large: the total over all pods of memory"))
      << All(d);
  Pod two = MakePod("c", "ns", {{"memory", big}});
  two.containers.push_back(two.containers[0]);
  ManifestSet one;
  one.pods.push_back(two);
  EXPECT_TRUE(Has(Check(one), Severity::kError, "amounts too large"));
}

TEST(ValidationTest, SimulatedUsage) {
  ManifestSet s;
  Pod p = MakePod("p", "a", {{"cpu", 2000}, {"nvidia.com/gpu", 1000}},
                  {{"cpu", 2000}, {"nvidia.com/gpu", 1000}});
  p.sim.usage = ResourceList{{"cpu", 3000}, {"nvidia.com/gpu", 2000}, {"memory", 10}};
  s.pods.push_back(p);
  auto d = Check(s);
  EXPECT_EQ(d.ErrorCount(), 1u) << All(d);
  EXPECT_TRUE(Has(d, Severity::kError, "usage 2 of nvidia.com/gpu exceeds the request 1"));
  EXPECT_TRUE(Has(d, Severity::kWarning, "usage 3 of cpu exceeds the limit 2"));
  EXPECT_TRUE(Has(d, Severity::kWarning, "usage names memory, which the pod does not request"));
}

TEST(ValidationTest, UndeclaredNamespace) {
  ManifestSet s;
  s.pods.push_back(MakePod("p", "ghost", {}));
  EXPECT_TRUE(Check(s).items.empty());  // no Namespace objects at all: namespaces are implicit
  s.namespaces.push_back({Meta("team-a")});
  s.pods.push_back(MakePod("q", "default", {}));
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_NE(d.message.find("namespace \"ghost\" is not declared"), std::string::npos);
}

TEST(ValidationTest, PriceBooksWithTheSameEffectiveTime) {
  ManifestSet s;
  PriceBook a;
  a.meta = Meta("a");
  PriceBook b = a;
  b.meta = Meta("b");
  s.price_books = {a, b};
  auto d = One(Check(s));
  EXPECT_EQ(d.name, "b");
  EXPECT_NE(d.message.find("ambiguous"), std::string::npos);
  s.price_books[1].effective_from = 1;
  EXPECT_TRUE(Check(s).items.empty());
}

TEST(ValidationTest, LocatorPointsAtTheField) {
  ManifestSet s;
  s.pods.push_back(MakePod("p", "a", {{"cpu", 4000}}, {{"cpu", 2000}}));
  SourceLocator loc;
  const SourceRef& src = s.pods[0].meta.source;
  loc.Record(src, "spec.containers[0].resources", src.line + 7);
  loc.Record(src, "spec.containers[0].resources.limits.cpu", src.line + 9);
  EXPECT_EQ(One(Check(s, &loc)).line, src.line + 9);
  EXPECT_EQ(loc.LineOf(src, "spec.containers[0].resources.requests[nvidia.com/gpu]"), src.line + 7);
  EXPECT_EQ(loc.LineOf(src, "metadata.name"), src.line);
  EXPECT_EQ(loc.LineOf(SourceRef{"other", 1}, "spec.containers[0].resources"), 1);
}

TEST(ValidationTest, DidYouMean) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("hihg", "high"), 1);
  std::vector<std::string> fields = {"containers", "initContainers", "priorityClassName",
                                     "priority"};
  EXPECT_EQ(DidYouMean("containres", fields), "containers");
  EXPECT_EQ(DidYouMean("PriorityClassName", fields), "priorityClassName");
  EXPECT_EQ(DidYouMean("priorty", fields), "priority");
  EXPECT_FALSE(DidYouMean("volumes", fields));
  EXPECT_FALSE(DidYouMean("", fields));
  EXPECT_EQ(FieldPathChild("spec.hard", "requests.cpu"), "spec.hard[requests.cpu]");
  EXPECT_EQ(FieldPathChild("spec.hard", "pods"), "spec.hard.pods");
  EXPECT_EQ(FieldPathChild("", "spec"), "spec");
}

// Issue 29: pod topology no node of the manifests can satisfy, in kube-scheduler's words.
namespace topology {

PodAffinityTerm Term(const std::string& app, const std::string& key) {
  PodAffinityTerm t;
  t.label_selector = LabelSelector{{{"app", app}}, {}};
  t.topology_key = key;
  return t;
}

ManifestSet ThreeNodes() {
  ManifestSet s;
  for (const char* name : {"n1", "n2", "n3"}) {
    Node n = MakeNode(name, {{"cpu", 8000}, {"memory", int64_t{1} << 34}});
    n.meta.labels["zone"] = std::string(name) == "n3" ? "b" : "a";
    s.nodes.push_back(n);
  }
  return s;
}

Pod App(const std::string& name, const std::string& app) {
  Pod p = MakePod(name, "a", {{"cpu", 1000}});
  p.meta.labels["app"] = app;
  return p;
}

TEST(ValidationTest, PodAffinityOverALabelNoNodeCarries) {
  ManifestSet s = ThreeNodes();
  s.pods.push_back(App("db", "db"));
  Pod web = App("web", "web");
  web.pod_affinity.required.push_back(Term("db", "rack"));
  s.pods.push_back(web);
  auto d = One(Check(s));
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_EQ(d.field_path,
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
            "topologyKey");
  EXPECT_NE(d.message.find("no node that admits the pod has the label \"rack\""), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("node(s) didn't match pod affinity rules"), std::string::npos);
}

TEST(ValidationTest, PodAffinityThatSelectsNoPod) {
  ManifestSet s = ThreeNodes();
  Pod web = App("web", "web");
  web.pod_affinity.required.push_back(Term("db", "zone"));
  s.pods.push_back(web);
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path,
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
            "labelSelector");
  EXPECT_NE(d.message.find("no pod of these manifests matches this term"), std::string::npos);
  // The first pod of a group that selects itself may run: no warning.
  s.pods[0].pod_affinity.required[0] = Term("web", "zone");
  EXPECT_TRUE(Check(s).items.empty()) << All(Check(s));
  // A pod the term selects: no warning either.
  s.pods[0].pod_affinity.required[0] = Term("db", "zone");
  s.pods.push_back(App("db", "db"));
  EXPECT_TRUE(Check(s).items.empty()) << All(Check(s));
}

TEST(ValidationTest, SpreadOverALabelNoAdmittingNodeCarries) {
  ManifestSet s = ThreeNodes();
  Pod p = App("p", "p");
  TopologySpreadConstraint c;
  c.topology_key = "zone";
  c.label_selector = LabelSelector{{{"app", "p"}}, {}};
  p.topology_spread.push_back(c);
  s.pods.push_back(p);
  EXPECT_TRUE(Check(s).items.empty()) << All(Check(s));
  // Only n1 admits it (nodeSelector), and n1 loses its zone label: the key is missing.
  s.nodes[0].meta.labels.erase("zone");
  s.pods[0].node_selector["kubernetes.io/hostname"] = "n1";
  auto d = One(Check(s));
  EXPECT_EQ(d.field_path, "spec.topologySpreadConstraints[0].topologyKey");
  EXPECT_NE(d.message.find("node(s) didn't match pod topology spread constraints (missing "
                           "required label)"),
            std::string::npos)
      << d.message;
  // ScheduleAnyway only scores: no warning.
  s.pods[0].topology_spread[0].do_not_schedule = false;
  EXPECT_TRUE(Check(s).items.empty()) << All(Check(s));
}

TEST(ValidationTest, MoreReplicasThanDomainsUnderSelfAntiAffinity) {
  ManifestSet s = ThreeNodes();
  for (int i = 0; i < 4; ++i) {
    Pod r = App("r" + std::to_string(i), "r");
    r.pod_anti_affinity.required.push_back(Term("r", "kubernetes.io/hostname"));
    s.pods.push_back(r);
  }
  auto d = One(Check(s));  // said once, on the first replica
  EXPECT_EQ(d.name, "a/r0");
  EXPECT_EQ(d.field_path,
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]");
  EXPECT_NE(d.message.find("4 pods with these labels exclude each other by this term, but the "
                           "nodes that admit them have only 3 value(s) of "
                           "\"kubernetes.io/hostname\": at most 3 run at once"),
            std::string::npos)
      << d.message;
  s.pods.pop_back();  // three replicas on three nodes: fine
  EXPECT_TRUE(Check(s).items.empty()) << All(Check(s));
  // Over zones (two values), three replicas are too many.
  for (auto& p : s.pods) p.pod_anti_affinity.required[0].topology_key = "zone";
  EXPECT_NE(One(Check(s)).message.find("only 2 value(s) of \"zone\""), std::string::npos);
}

}  // namespace topology

}  // namespace
}  // namespace arbiter
