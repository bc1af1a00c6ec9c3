// Pod affinity, anti-affinity and topology spread constraints as the manifest loader reads and
// validates them (adapters/yaml/pod_topology_loader.h), with Kubernetes' messages.
#include <gtest/gtest.h>

#include "adapters/yaml/manifest_loader.h"

namespace arbiter::yaml {
namespace pod_topology_loader_test {

ManifestLoad Load(const std::string& text) {
  ManifestLoad out;
  LoadManifestText(text, "m.yaml", &out);
  return out;
}

std::string All(const ManifestLoad& l) {
  std::string s;
  for (const auto& d : l.diagnostics.items) s += d.ToString() + "\n";
  return s;
}

bool Has(const ManifestLoad& l, const std::string& needle) {
  for (const auto& d : l.diagnostics.items)
    if (d.ToString().find(needle) != std::string::npos) return true;
  return false;
}

TEST(PodTopologyLoaderTest, ReadsAffinityTermsAndSpreadConstraints) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p, labels: {app: web}}
spec:
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchExpressions: [{key: app, operator: In, values: [cache]}]}
        namespaces: [team-b]
        topologyKey: topology.kubernetes.io/zone
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 30
        podAffinityTerm: {labelSelector: {}, namespaceSelector: {}, topologyKey: zone}
  topologySpreadConstraints:
  - {maxSkew: 2, minDomains: 3, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
  containers: [{name: c}]
)");
  ASSERT_TRUE(l.ok()) << All(l);
  EXPECT_TRUE(l.diagnostics.items.empty()) << All(l);
  ASSERT_EQ(l.set.pods.size(), 1u);
  const Pod& p = l.set.pods[0];
  ASSERT_EQ(p.pod_affinity.required.size(), 1u);
  const PodAffinityTerm& a = p.pod_affinity.required[0];
  ASSERT_TRUE(a.label_selector);
  ASSERT_EQ(a.label_selector->match_expressions.size(), 1u);
  EXPECT_EQ(a.label_selector->match_expressions[0].values, std::vector<std::string>{"cache"});
  EXPECT_EQ(a.namespaces, std::vector<std::string>{"team-b"});
  EXPECT_EQ(a.topology_key, "topology.kubernetes.io/zone");
  EXPECT_FALSE(a.namespace_selector);
  ASSERT_EQ(p.pod_anti_affinity.required.size(), 1u);
  EXPECT_EQ(p.pod_anti_affinity.required[0].label_selector->match_labels.at("app"), "web");
  ASSERT_EQ(p.pod_anti_affinity.preferred.size(), 1u);
  EXPECT_EQ(p.pod_anti_affinity.preferred[0].weight, 30);
  ASSERT_TRUE(p.pod_anti_affinity.preferred[0].term.label_selector);  // {}: every pod
  EXPECT_TRUE(p.pod_anti_affinity.preferred[0].term.label_selector->Empty());
  ASSERT_TRUE(p.pod_anti_affinity.preferred[0].term.namespace_selector);
  ASSERT_EQ(p.topology_spread.size(), 2u);
  EXPECT_EQ(p.topology_spread[0].max_skew, 2);
  EXPECT_EQ(p.topology_spread[0].min_domains, 3);
  EXPECT_TRUE(p.topology_spread[0].do_not_schedule);
  EXPECT_FALSE(p.topology_spread[1].do_not_schedule);
  EXPECT_FALSE(p.topology_spread[1].label_selector);  // absent: selects no pod
}

TEST(PodTopologyLoaderTest, KubernetesValidationMessages) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchExpressions: [{key: app, operator: In}, {key: x, operator: Exists, values: [a]}]}
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 0, podAffinityTerm: {topologyKey: zone}}
  topologySpreadConstraints:
  - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
  - {maxSkew: 1, topologyKey: "bad key!", whenUnsatisfiable: Sometimes}
  - {maxSkew: 1, minDomains: 2, topologyKey: host, whenUnsatisfiable: ScheduleAnyway}
  containers: [{name: c}]
)");
  EXPECT_FALSE(l.ok());
  const std::string anti = "spec.affinity.podAntiAffinity.";
  EXPECT_TRUE(Has(l, anti + "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
                            "Required value: can not be empty"))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "matchExpressions[0].values: Required value: must be specified when "
                  "`operator` is 'In' or 'NotIn'"))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "matchExpressions[1].values: Forbidden: may not be specified when "
                  "`operator` is 'Exists' or 'DoesNotExist'"))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: "
                  "0: must be in the range 1-100"))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be "
                  "greater than zero"))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "spec.topologySpreadConstraints[1]: Duplicate value: \"{zone, "
                  "DoNotSchedule}\""))
      << All(l);
  EXPECT_TRUE(Has(l, "spec.topologySpreadConstraints[2].topologyKey: Invalid value: \"bad key!\""))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "spec.topologySpreadConstraints[2].whenUnsatisfiable: Unsupported value: "
                  "\"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""))
      << All(l);
  EXPECT_TRUE(Has(l,
                  "spec.topologySpreadConstraints[3].minDomains: Invalid value: 2: can only "
                  "use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"))
      << All(l);
}

TEST(PodTopologyLoaderTest, UnmodelledFieldsWarn) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Honor}
  containers: [{name: c}]
)");
  EXPECT_TRUE(l.ok()) << All(l);
  EXPECT_TRUE(Has(l, "nodeTaintsPolicy: Honor is not modelled")) << All(l);
}

// matchLabelKeys join the selector with the pod's own values, as the API server does (the
// metadata may come after the spec).
TEST(PodTopologyLoaderTest, MatchLabelKeysJoinTheSelector) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
spec:
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [pod-template-hash, absent]
  containers: [{name: c}]
metadata: {name: p, labels: {app: web, pod-template-hash: abc123}}
)");
  ASSERT_TRUE(l.ok()) << All(l);
  EXPECT_TRUE(l.diagnostics.items.empty()) << All(l);
  ASSERT_EQ(l.set.pods.size(), 1u);
  const auto& sel = *l.set.pods[0].topology_spread[0].label_selector;
  ASSERT_EQ(sel.match_expressions.size(), 1u);  // "absent": the pod has no such label
  EXPECT_EQ(sel.match_expressions[0].key, "pod-template-hash");
  EXPECT_EQ(sel.match_expressions[0].values, std::vector<std::string>{"abc123"});
  EXPECT_FALSE(sel.Matches({{"app", "web"}, {"pod-template-hash", "old"}}));
}

}  // namespace pod_topology_loader_test
}  // namespace arbiter::yaml
