// Kubernetes conformance of LimitRange admission: the cases of Kubernetes' TestPodLimitFunc
// (tests/data/kubernetes/limitranger-cases.yaml), run through the engine's admission; and of
// ResourceQuota admission: Kubernetes' TestAdmit* and TestPodEvaluatorMatchingScopes
// (tests/data/kubernetes/resourcequota-cases.yaml), run through the engine's QuotaBook.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <iostream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "core/engine/admission.h"
#include "core/engine/pod_topology.h"
#include "core/engine/quota_book.h"

namespace arbiter::engine {
namespace {

std::string Flow(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

TEST(KubernetesConformance, LimitRangerPodLimitFunc) {
  const YAML::Node data = YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) +
                                         "/tests/data/kubernetes/limitranger-cases.yaml");
  int total = 0, pass = 0, differ = 0;
  for (const auto& c : data["cases"]) {
    ++total;
    const std::string name = c["name"].as<std::string>();
    std::ostringstream m;
    m << "apiVersion: v1\nkind: LimitRange\nmetadata: {name: abc, namespace: test}\nspec:\n  "
         "limits:\n  - type: "
      << c["type"].as<std::string>() << "\n";
    for (const char* f : {"min", "max", "maxLimitRequestRatio"})
      if (c[f]) m << "    " << f << ": " << Flow(c[f]) << "\n";
    m << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " << name
      << ", namespace: test}\nspec:\n  containers:\n";
    for (int i = 0; i < c["containers"].as<int>(); ++i) {
      m << "  - name: foo-" << i << "\n    resources: {";
      if (c["requests"]) m << "requests: " << Flow(c["requests"]) << (c["limits"] ? ", " : "");
      if (c["limits"]) m << "limits: " << Flow(c["limits"]);
      m << "}\n";
    }
    yaml::ManifestLoad load;
    yaml::LoadManifestText(m.str(), name, &load);
    ASSERT_TRUE(load.ok()) << name << "\n" << m.str();
    ASSERT_EQ(load.set.pods.size(), 1u);
    AdmittedPod admitted;
    const std::string why =
        ApplyLimitRanges(load.set.pods[0], {&load.set.limit_ranges[0]}, &admitted);
    const bool admit = why.empty();
    if (admit == c["admit"].as<bool>()) {
      ++pass;
      EXPECT_FALSE(c["differs"]) << name << ": gives Kubernetes' answer now; remove its `differs`";
      continue;
    }
    ++differ;
    EXPECT_TRUE(c["differs"]) << name << ": Kubernetes "
                              << (c["admit"].as<bool>() ? "admits" : "refuses") << ", Arbiter "
                              << (admit ? "admits" : "refuses: " + why);
  }
  std::cout << "Kubernetes TestPodLimitFunc cases: " << pass << " of " << total << " pass, "
            << differ << " differ (documented)\n";
}

// A pod of `containers` identical containers (requests / limits), with the optional
// priorityClassName, activeDeadlineSeconds and affinity, in namespace `test`, as the engine admits
// it.
struct QuotaPod {
  Workload w;
  AdmittedPod admitted;
};
QuotaPod MakeQuotaPod(const YAML::Node& spec, const std::string& name) {
  std::ostringstream m;
  m << "apiVersion: v1\nkind: Pod\nmetadata: {name: pod, namespace: test}\nspec:\n";
  if (spec["priorityClassName"])
    m << "  priorityClassName: " << spec["priorityClassName"].as<std::string>() << "\n";
  if (spec["activeDeadlineSeconds"])
    m << "  activeDeadlineSeconds: " << spec["activeDeadlineSeconds"].as<int>() << "\n";
  if (spec["affinity"]) m << "  affinity: " << Flow(spec["affinity"]) << "\n";
  m << "  containers:\n";
  const int n = spec["containers"] ? spec["containers"].as<int>() : 1;
  for (int i = 0; i < n; ++i) {
    m << "  - name: c" << i << "\n    resources: {";
    if (spec["requests"])
      m << "requests: " << Flow(spec["requests"]) << (spec["limits"] ? ", " : "");
    if (spec["limits"]) m << "limits: " << Flow(spec["limits"]);
    m << "}\n";
  }
  yaml::ManifestLoad load;
  yaml::LoadManifestText(m.str(), name, &load);
  EXPECT_EQ(load.diagnostics.ErrorCount(), 0u) << name << "\n" << m.str();
  QuotaPod out;
  if (load.set.pods.empty()) return out;
  const Pod& pod = load.set.pods[0];
  EXPECT_EQ(ApplyLimitRanges(pod, {}, &out.admitted), "") << name;
  out.w.id = WorkloadId{1};
  out.w.namespace_ = "test";
  out.w.name = "pod";
  out.w.priority_class = pod.priority_class_name.value_or("");
  out.w.time_limit = pod.active_deadline.value_or(0);
  out.w.topology = PodTopologyRules::Of(pod);
  out.w.requests = out.admitted.requests;
  out.w.limits = out.admitted.limits;
  return out;
}

// ResourceQuotas from a case: `hard` and `scopes` / `scopeSelector` through the manifest loader;
// `used` (status.used) read as a quota's hard list and set as its usage.
std::vector<ResourceQuota> LoadQuotas(const YAML::Node& quotas, bool used,
                                      const std::string& name) {
  std::ostringstream m;
  for (const auto& q : quotas) {
    m << "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: "
      << q["name"].as<std::string>()
      << ", namespace: " << (q["namespace"] ? q["namespace"].as<std::string>() : "test")
      << "}\nspec:\n";
    const YAML::Node hard = used ? q["used"] : q["hard"];
    m << "  hard: " << (hard ? Flow(hard) : "{}") << "\n";
    if (!used && q["scopes"]) m << "  scopes: " << Flow(q["scopes"]) << "\n";
    if (!used && q["scopeSelector"])
      m << "  scopeSelector: {matchExpressions: " << Flow(q["scopeSelector"]) << "}\n";
  }
  yaml::ManifestLoad load;
  yaml::LoadManifestText(m.str(), name, &load);
  EXPECT_EQ(load.diagnostics.ErrorCount(), 0u) << name << "\n" << m.str();
  return load.set.resource_quotas;
}

std::map<std::string, int64_t> UsedOf(const ResourceQuota& q) {
  std::map<std::string, int64_t> out;
  for (const auto& item : q.hard) out[item.key] = item.hard;
  return out;
}

TEST(KubernetesConformance, ResourceQuotaScopesMatchingScopes) {
  const YAML::Node data = YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) +
                                         "/tests/data/kubernetes/resourcequota-cases.yaml");
  int total = 0, pass = 0, not_run = 0;
  const std::vector<std::string> all = {"Terminating",   "NotTerminating",
                                        "BestEffort",    "NotBestEffort",
                                        "PriorityClass", "CrossNamespacePodAffinity"};
  for (const auto& c : data["scopes"]) {
    ++total;
    const std::string name = c["name"].as<std::string>();
    if (c["notRun"]) {
      ++not_run;
      continue;
    }
    QuotaPod p = MakeQuotaPod(c["pod"], name);
    std::vector<std::string> selectors = all;
    if (c["selectors"]) selectors = c["selectors"].as<std::vector<std::string>>();
    std::vector<std::string> matched;
    for (const auto& scope : selectors) {
      // A matching pod can never be admitted under `pods: 0`.
      ResourceQuota q;
      q.meta.name = "q";
      q.meta.namespace_ = "test";
      q.hard.push_back({"pods", QuotaTrack::kCount, "pods", 0});
      if (scope == "PriorityClass")
        q.scope_selector.push_back({scope, SelectorOperator::kIn, {"class1"}});
      else
        q.scope_selector.push_back({scope, SelectorOperator::kExists, {}});
      QuotaBook book;
      book.SetResourceQuota(q);
      if (book.NeverAdmissible(p.w, p.admitted)) matched.push_back(scope);
    }
    const auto want = c["match"].as<std::vector<std::string>>();
    EXPECT_EQ(matched, want) << name;
    pass += matched == want;
  }
  std::cout << "Kubernetes TestPodEvaluatorMatchingScopes cases: " << pass << " of " << total
            << " pass, " << not_run << " not run (each says why)\n";
}

TEST(KubernetesConformance, ResourceQuotaAdmission) {
  const YAML::Node data = YAML::LoadFile(std::string(ARBITER_SOURCE_DIR) +
                                         "/tests/data/kubernetes/resourcequota-cases.yaml");
  int total = 0, pass = 0, not_run = 0, differ = 0;
  for (const auto& c : data["admission"]) {
    ++total;
    const std::string name = c["name"].as<std::string>();
    if (c["notRun"]) {
      ++not_run;
      continue;
    }
    QuotaPod p = MakeQuotaPod(c["pod"], name);
    const auto quotas = LoadQuotas(c["quotas"], false, name);
    const auto used = LoadQuotas(c["quotas"], true, name);
    ASSERT_EQ(quotas.size(), used.size()) << name;
    QuotaBook book;
    for (const auto& q : quotas) book.SetResourceQuota(q);
    for (size_t i = 0; i < used.size(); ++i) book.rqs()[i].used = UsedOf(used[i]);
    std::optional<std::string> why;
    if (auto never = book.NeverAdmissible(p.w, p.admitted)) why = never->words;
    if (!why) why = book.ResourceQuotaBlocked(p.w);
    bool ok = why.has_value() != c["admit"].as<bool>();
    std::string detail = why ? "refused: " + *why : "admitted";
    if (ok && why && c["message"] &&
        why->find(c["message"].as<std::string>()) == std::string::npos) {
      ok = false;
      detail = "message differs: " + *why;
    }
    if (ok && !why && c["usage"]) {
      book.Charge(p.w);
      for (size_t i = 0; i < quotas.size(); ++i) {
        const YAML::Node want = c["usage"][quotas[i].meta.name];
        if (!want) continue;
        YAML::Node one;
        one["name"] = quotas[i].meta.name;
        one["used"] = want;
        YAML::Node list;
        list.push_back(one);
        const auto expect = UsedOf(LoadQuotas(list, true, name).at(0));
        for (const auto& [key, v] : expect) {
          auto it = book.rqs()[i].used.find(key);
          const int64_t got = it == book.rqs()[i].used.end() ? 0 : it->second;
          if (got != v) {
            ok = false;
            detail = quotas[i].meta.name + " " + key + " used " + std::to_string(got) +
                     ", Kubernetes " + std::to_string(v);
          }
        }
      }
    }
    if (ok) {
      ++pass;
      EXPECT_FALSE(c["differs"]) << name << ": gives Kubernetes' answer now; remove its `differs`";
      continue;
    }
    ++differ;
    EXPECT_TRUE(c["differs"]) << name << ": Kubernetes "
                              << (c["admit"].as<bool>() ? "admits" : "refuses") << ", Arbiter "
                              << detail;
  }
  std::cout << "Kubernetes ResourceQuota admission cases: " << pass << " of " << total << " pass, "
            << differ << " differ (documented), " << not_run << " not run (each says why)\n";
}

}  // namespace
}  // namespace arbiter::engine
