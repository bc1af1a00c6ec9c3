#include "adapters/yaml/manifest_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace arbiter::yaml {
namespace {

ManifestLoad Load(const std::string& text) {
  ManifestLoad out;
  LoadManifestText(text, "m.yaml", &out);
  return out;
}

// Loads and runs the cross-object checks, like LoadManifestFiles.
ManifestLoad LoadAndValidate(const std::string& text) {
  ManifestLoad out = Load(text);
  ValidateManifestSet(out.set, &out.locator, &out.diagnostics);
  return out;
}

std::string All(const ManifestLoad& l) {
  std::string s;
  for (const auto& d : l.diagnostics.items) s += d.ToString() + "\n";
  return s;
}

// The one diagnostic whose text contains `needle`, or fails.
const Diagnostic* Find(const ManifestLoad& l, const std::string& needle) {
  for (const auto& d : l.diagnostics.items)
    if (d.ToString().find(needle) != std::string::npos) return &d;
  return nullptr;
}

#define EXPECT_CLEAN(load) EXPECT_TRUE((load).diagnostics.items.empty()) << All(load)

// ------------------------------------------------------------------ issue 2 objects

constexpr const char* kIssueObjects = R"(apiVersion: v1
kind: ResourceQuota
metadata: {name: team-a-gpu, namespace: team-a}
spec:
  hard:
    requests.cpu: 64
    requests.memory: 256Gi
    requests.nvidia.com/gpu: 16
    limits.cpu: 128
    limits.memory: 512Gi
    limits.nvidia.com/gpu: 32
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 10000
globalDefault: false
preemptionPolicy: PreemptLowerPriority
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inference-pdb}
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: inference}
)";

TEST(ManifestLoaderTest, IssueObjectsLoadExactlyAsWritten) {
  auto l = LoadAndValidate(kIssueObjects);
  ASSERT_TRUE(l.ok()) << All(l);
  // Only the intended warning about limits.nvidia.com/gpu.
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  const Diagnostic& w = l.diagnostics.items[0];
  EXPECT_EQ(w.severity, Severity::kWarning);
  EXPECT_EQ(w.line, 11);
  EXPECT_EQ(w.kind, "ResourceQuota");
  EXPECT_EQ(w.name, "team-a/team-a-gpu");
  EXPECT_EQ(w.field_path, "spec.hard[limits.nvidia.com/gpu]");
  EXPECT_NE(w.message.find("GPU limits always equal requests"), std::string::npos);

  ASSERT_EQ(l.set.resource_quotas.size(), 1u);
  const auto& q = l.set.resource_quotas[0];
  EXPECT_EQ(q.meta.name, "team-a-gpu");
  EXPECT_EQ(q.meta.namespace_, "team-a");
  EXPECT_EQ(q.meta.source.line, 1);
  ASSERT_EQ(q.hard.size(), 6u);
  struct Want {
    const char* key;
    QuotaTrack track;
    const char* resource;
    int64_t hard;
  } want[] = {
      {"requests.cpu", QuotaTrack::kRequests, "cpu", 64000},
      {"requests.memory", QuotaTrack::kRequests, "memory", 256LL << 30},
      {"requests.nvidia.com/gpu", QuotaTrack::kRequests, "nvidia.com/gpu", 16000},
      {"limits.cpu", QuotaTrack::kLimits, "cpu", 128000},
      {"limits.memory", QuotaTrack::kLimits, "memory", 512LL << 30},
      {"limits.nvidia.com/gpu", QuotaTrack::kLimits, "nvidia.com/gpu", 32000},
  };
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(q.hard[i].key, want[i].key);
    EXPECT_EQ(q.hard[i].track, want[i].track) << want[i].key;
    EXPECT_EQ(q.hard[i].resource, want[i].resource);
    EXPECT_EQ(q.hard[i].hard, want[i].hard) << want[i].key;
  }

  ASSERT_EQ(l.set.priority_classes.size(), 1u);
  const auto& pc = l.set.priority_classes[0];
  EXPECT_EQ(pc.meta.name, "high-priority");
  EXPECT_EQ(pc.meta.namespace_, "");
  EXPECT_EQ(pc.value, 10000);
  EXPECT_FALSE(pc.global_default);
  EXPECT_EQ(pc.preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
  EXPECT_EQ(pc.meta.source.line, 13);

  ASSERT_EQ(l.set.pdbs.size(), 1u);
  const auto& pdb = l.set.pdbs[0];
  EXPECT_EQ(pdb.meta.name, "inference-pdb");
  EXPECT_EQ(pdb.meta.namespace_, "default");
  ASSERT_TRUE(pdb.min_available);
  EXPECT_FALSE(pdb.min_available->is_percent);
  EXPECT_EQ(pdb.min_available->value, 2);
  EXPECT_FALSE(pdb.max_unavailable);
  EXPECT_EQ(pdb.selector.match_labels.at("app"), "inference");
}

// ------------------------------------------------------------------ every kind

TEST(ManifestLoaderTest, Namespace) {
  auto l =
      Load("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {tier: gold}\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.namespaces.size(), 1u);
  EXPECT_EQ(l.set.namespaces[0].meta.name, "team-a");
  EXPECT_EQ(l.set.namespaces[0].meta.labels.at("tier"), "gold");
  EXPECT_EQ(l.set.namespaces[0].meta.namespace_, "");
}

TEST(ManifestLoaderTest, NodeCapacityAllocatableLabels) {
  auto l = Load(R"(apiVersion: v1
kind: Node
metadata:
  name: a100-mig-0
  labels:
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
spec:
  unschedulable: true
  podCIDR: 10.0.0.0/24
status:
  capacity:
    cpu: 128
    memory: 1Ti
    nvidia.com/gpu: 4
    nvidia.com/mig-1g.10gb: 14
    nvidia.com/mig-3g.40gb: 4
    pods: 110
  allocatable:
    cpu: 126500m
    memory: 1000Gi
  conditions: []
)");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.nodes.size(), 1u);
  const Node& n = l.set.nodes[0];
  EXPECT_TRUE(n.unschedulable);
  EXPECT_EQ(n.meta.labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(n.capacity.Get("cpu"), 128000);
  EXPECT_EQ(n.capacity.Get("memory"), 1LL << 40);
  EXPECT_EQ(n.capacity.Get("nvidia.com/mig-1g.10gb"), 14);
  EXPECT_EQ(n.allocatable.Get("cpu"), 126500);
  EXPECT_EQ(n.allocatable.Get("memory"), 1000LL << 30);
  // Resources only in capacity are allocatable in full.
  EXPECT_EQ(n.allocatable.Get("nvidia.com/gpu"), 4000);
  EXPECT_EQ(n.allocatable.Get("nvidia.com/mig-3g.40gb"), 4);
  EXPECT_EQ(n.allocatable.Get("pods"), 110);
}

TEST(ManifestLoaderTest, NodeAllocatableDefaultsToCapacity) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: 8, memory: "
      "32Gi}}\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.nodes.size(), 1u);
  EXPECT_EQ(l.set.nodes[0].allocatable, l.set.nodes[0].capacity);
  EXPECT_FALSE(l.set.nodes[0].unschedulable);
}

TEST(ManifestLoaderTest, NodeTaintsAreRead) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints: [{key: a, effect: "
      "NoSchedule}, {key: b, value: x, effect: PreferNoSchedule, timeAdded: null}]\n"
      "status: {capacity: {cpu: 8}}\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.nodes.size(), 1u);
  ASSERT_EQ(l.set.nodes[0].taints.size(), 2u);
  EXPECT_EQ(l.set.nodes[0].taints[0].key, "a");
  EXPECT_EQ(l.set.nodes[0].taints[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(l.set.nodes[0].taints[1].value, "x");
  EXPECT_EQ(l.set.nodes[0].taints[1].effect, TaintEffect::kPreferNoSchedule);
}

// Kubernetes' validateNodeTaints: key, value, effect required and known, unique (key, effect).
TEST(ManifestLoaderTest, NodeTaintsAreValidatedWithKubernetesMessages) {
  auto l = Load(R"(apiVersion: v1
kind: Node
metadata: {name: n1}
spec:
  taints:
  - {key: a, effect: NoSchedul}
  - {key: b}
  - {key: "bad key", effect: NoSchedule}
  - {key: c, effect: NoExecute}
  - {key: c, value: other, effect: NoExecute}
status: {capacity: {cpu: 8}}
)");
  EXPECT_FALSE(l.ok());
  const Diagnostic* d = Find(l,
                             "spec.taints[0].effect: Unsupported value: \"NoSchedul\": "
                             "supported values: \"NoSchedule\", \"PreferNoSchedule\", "
                             "\"NoExecute\"");
  ASSERT_TRUE(d) << All(l);
  EXPECT_EQ(d->line, 6);
  EXPECT_TRUE(Find(l, "spec.taints[1].effect: Required value")) << All(l);
  EXPECT_TRUE(Find(l, "spec.taints[2].key: Invalid value: \"bad key\": name part must consist"))
      << All(l);
  EXPECT_TRUE(Find(l,
                   "spec.taints[4]: Duplicate value: {\"key\": \"c\", \"effect\": "
                   "\"NoExecute\"}: taints must be unique by key and effect pair"))
      << All(l);
}

// Kubernetes' ValidateTolerations.
TEST(ManifestLoaderTest, TolerationsAreReadAndValidated) {
  auto ok = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  - {key: team, value: ml}
  - {operator: Exists}
  - {key: spot, operator: Equal, value: "true", effect: NoExecute, tolerationSeconds: 300}
  containers: [{name: c}]
)");
  EXPECT_CLEAN(ok);
  ASSERT_EQ(ok.set.pods.size(), 1u);
  const auto& t = ok.set.pods[0].tolerations;
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].op, TolerationOperator::kExists);
  EXPECT_EQ(t[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(t[1].op, TolerationOperator::kEqual);
  EXPECT_FALSE(t[1].effect.has_value());
  EXPECT_TRUE(t[2].key.empty());
  EXPECT_EQ(t[3].toleration_seconds, 300000);

  auto bad = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  tolerations:
  - {value: x}
  - {key: a, operator: Exists, value: x}
  - {key: a, operator: Eq}
  - {key: a, effect: NoSchedule, tolerationSeconds: 5}
  - {key: a, effect: Never}
  containers: [{name: c}]
)");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(Find(bad,
                   "spec.tolerations[0].operator: Invalid value: \"\": operator must be "
                   "Exists when `key` is empty, which means \"match all values and all "
                   "keys\""))
      << All(bad);
  EXPECT_TRUE(Find(bad,
                   "spec.tolerations[1].value: Invalid value: \"x\": value must be empty "
                   "when `operator` is 'Exists'"))
      << All(bad);
  EXPECT_TRUE(Find(bad,
                   "spec.tolerations[2].operator: Unsupported value: \"Eq\": supported "
                   "values: \"Equal\", \"Exists\""))
      << All(bad);
  EXPECT_TRUE(Find(bad,
                   "spec.tolerations[3].effect: Invalid value: \"NoSchedule\": effect must "
                   "be 'NoExecute' when `tolerationSeconds` is set"))
      << All(bad);
  EXPECT_TRUE(Find(bad, "spec.tolerations[4].effect: Unsupported value: \"Never\"")) << All(bad);
}

// Kubernetes' ValidateNodeSelector / ValidatePreferredSchedulingTerms; podAffinity and
// podAntiAffinity are read (pod_topology_loader: PodTopologyLoaderTest).
TEST(ManifestLoaderTest, NodeAffinityIsReadAndValidated) {
  auto ok = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: zone, operator: In, values: [a, b]}
          - {key: kernel, operator: Gt, values: ["5"]}
        - matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 7
        preference: {matchExpressions: [{key: disk, operator: Exists}]}
  containers: [{name: c}]
)");
  EXPECT_CLEAN(ok);
  ASSERT_EQ(ok.set.pods.size(), 1u);
  const NodeAffinity& a = ok.set.pods[0].node_affinity;
  ASSERT_TRUE(a.required.has_value());
  ASSERT_EQ(a.required->size(), 2u);
  EXPECT_EQ((*a.required)[0].match_expressions[1].op, NodeSelectorOperator::kGt);
  EXPECT_EQ((*a.required)[1].match_fields[0].op, NodeSelectorOperator::kNotIn);
  ASSERT_EQ(a.preferred.size(), 1u);
  EXPECT_EQ(a.preferred[0].weight, 7);

  auto bad = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  affinity:
    podAntiAffinity: {}
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: a, operator: In}
          - {key: b, operator: Exists, values: [x]}
          - {key: c, operator: Gt, values: ["1", "2"]}
          - {key: d, operator: Lt, values: [ten]}
          - {key: e, operator: Near, values: [x]}
          matchFields:
          - {key: spec.nodeName, operator: In, values: [n1]}
          - {key: metadata.name, operator: In, values: [n1, n2]}
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 0, preference: {matchExpressions: [{key: x, operator: Exists}]}}
  containers: [{name: c}]
)");
  EXPECT_FALSE(bad.ok());
  const std::string t =
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
      ".nodeSelectorTerms[0]";
  EXPECT_TRUE(Find(bad, t + ".matchExpressions[0].values: Required value: must be specified "
                            "when `operator` is 'In' or 'NotIn'"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchExpressions[1].values: Forbidden: may not be specified when "
                            "`operator` is 'Exists' or 'DoesNotExist'"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchExpressions[2].values: Required value: must be specified "
                            "single value when `operator` is 'Lt' or 'Gt'"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchExpressions[3].values[0]: Invalid value: \"ten\": for 'Gt', "
                            "'Lt' operators, the value must be an integer"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchExpressions[4].operator: Invalid value: \"Near\": not a "
                            "valid selector operator"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchFields[0].key: Invalid value: \"spec.nodeName\": not a "
                            "valid field selector key"))
      << All(bad);
  EXPECT_TRUE(Find(bad, t + ".matchFields[1].values: Required value: must be only one value "
                            "when `operator` is 'In' or 'NotIn' for node field selector"))
      << All(bad);
  EXPECT_TRUE(Find(bad,
                   "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid "
                   "value: 0: must be in the range 1-100"))
      << All(bad);
  EXPECT_FALSE(Find(bad, "spec.affinity.podAntiAffinity")) << All(bad);  // modelled now

  auto empty = Load(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}
  containers: [{name: c}]
)");
  EXPECT_TRUE(Find(empty,
                   "nodeSelectorTerms: Required value: must have at least one node "
                   "selector term"))
      << All(empty);
}

constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: train-1
  namespace: team-b
  labels: {app: train}
  annotations:
    arbiter.dev/submit-time: "1h30m"
    arbiter.dev/duration: 4h
    arbiter.dev/usage: "cpu=4, memory=8Gi,nvidia.com/gpu=1"
    arbiter.dev/checkpoint-interval: 30m
    arbiter.dev/shutdown-time: 45s
    arbiter.dev/preempt-mode: CANCEL
    arbiter.dev/qos: high
    example.com/owner: alice
spec:
  priorityClassName: training
  priority: 5000
  preemptionPolicy: Never
  terminationGracePeriodSeconds: 120
  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  restartPolicy: Never
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  initContainers:
  - name: fetch
    image: busybox
    resources:
      requests: {cpu: 8, memory: 1Gi}
  containers:
  - name: main
    image: trainer:1
    command: [python, train.py]
    resources:
      requests: {cpu: 4, memory: 16Gi, nvidia.com/gpu: 2}
      limits: {cpu: 8, memory: 16Gi, nvidia.com/gpu: 2}
  - name: sidecar
    image: logger
    resources:
      limits: {cpu: 500m, memory: 256Mi}
)";

TEST(ManifestLoaderTest, PodFullSchema) {
  auto l = Load(kPod);
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.pods.size(), 1u);
  const Pod& p = l.set.pods[0];
  EXPECT_EQ(p.meta.name, "train-1");
  EXPECT_EQ(p.meta.namespace_, "team-b");
  EXPECT_EQ(p.meta.labels.at("app"), "train");
  EXPECT_EQ(p.meta.annotations.at("example.com/owner"), "alice");
  EXPECT_EQ(p.priority_class_name, "training");
  EXPECT_EQ(p.priority, 5000);
  EXPECT_EQ(p.preemption_policy, PreemptionPolicy::kNever);
  EXPECT_EQ(p.termination_grace_period, 120000);
  EXPECT_EQ(p.node_selector.at("nvidia.com/gpu.product"), "NVIDIA-H100-80GB-HBM3");
  ASSERT_EQ(p.init_containers.size(), 1u);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].name, "main");
  EXPECT_EQ(p.containers[0].requests.Get("nvidia.com/gpu"), 2000);
  EXPECT_EQ(p.containers[0].limits.Get("cpu"), 8000);
  // Kubernetes defaulting: a limit without a request requests the limit.
  EXPECT_EQ(p.containers[1].requests.Get("cpu"), 500);
  EXPECT_EQ(p.containers[1].requests.Get("memory"), 256LL << 20);
  // Effective request: max(sum of containers, max of init containers).
  ResourceList eff = p.EffectiveRequests();
  EXPECT_EQ(eff.Get("cpu"), 8000);
  EXPECT_EQ(eff.Get("memory"), (16LL << 30) + (256LL << 20));
  EXPECT_EQ(eff.Get("nvidia.com/gpu"), 2000);
  // Simulation annotations.
  EXPECT_EQ(p.sim.submit_time, 5400000);
  EXPECT_EQ(p.sim.duration, 4 * 3600000);
  ASSERT_TRUE(p.sim.usage);
  EXPECT_EQ(p.sim.usage->Get("cpu"), 4000);
  EXPECT_EQ(p.sim.usage->Get("memory"), 8LL << 30);
  EXPECT_EQ(p.sim.usage->Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(p.sim.checkpoint_interval, 1800000);
  EXPECT_EQ(p.sim.shutdown_time, 45000);
  EXPECT_EQ(p.sim.preempt_mode, PreemptMode::kCancel);
  EXPECT_EQ(p.sim.qos, "high");
}

TEST(ManifestLoaderTest, PodDefaults) {
  auto l =
      Load("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c}]\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.pods.size(), 1u);
  const Pod& p = l.set.pods[0];
  EXPECT_EQ(p.meta.namespace_, "default");
  EXPECT_EQ(p.sim.submit_time, 0);
  EXPECT_FALSE(p.sim.duration);
  EXPECT_FALSE(p.sim.usage);
  EXPECT_FALSE(p.sim.checkpoint_interval);
  EXPECT_EQ(p.sim.shutdown_time, 0);
  EXPECT_FALSE(p.sim.preempt_mode);
  EXPECT_FALSE(p.sim.qos);
  EXPECT_FALSE(p.termination_grace_period);
  EXPECT_FALSE(p.priority_class_name);
}

TEST(ManifestLoaderTest, PodGpuRequestWithoutLimitGetsLimitEqualRequest) {
  auto l = Load(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
      "  - {name: c, resources: {requests: {cpu: 1, nvidia.com/gpu: 1, nvidia.com/mig-1g.10gb: "
      "2}}}\n");
  EXPECT_CLEAN(l);
  const Container& c = l.set.pods.at(0).containers.at(0);
  EXPECT_EQ(c.limits.Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(c.limits.Get("nvidia.com/mig-1g.10gb"), 2);
  EXPECT_FALSE(c.limits.Has("cpu"));
}

// Documents are parsed one at a time (split at `---` / `...` lines); lines stay those of the file.
TEST(ManifestLoaderTest, DocumentsAreSplitAndKeepFileLines) {
  auto l = LoadAndValidate(
      "# leading comment\n"                                           // 1
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"       // 2-3
      "metadata: {name: low}\nvalue: 10\n"                            // 4-5
      "...\n"                                                         // 6
      "--- # a comment after the marker\n"                            // 7
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"             // 8-11
      "spec:\n  priorityClassName: lwo\n  containers: [{name: c}]\n"  // 12-14
      "---\n---\n"                                                    // 15-16 (an empty document)
      "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"              // 17-19
      "spec: {priority: x, containers: [{name: c}]}\n");              // 20
  ASSERT_EQ(l.set.priority_classes.size(), 1u) << All(l);
  EXPECT_EQ(l.set.priority_classes[0].meta.source.line, 2);
  ASSERT_EQ(l.set.pods.size(), 2u) << All(l);
  EXPECT_EQ(l.set.pods[0].meta.source.line, 8);
  EXPECT_EQ(l.set.pods[1].meta.source.line, 17);
  auto* unknown =
      Find(l, "unknown PriorityClass \"lwo\"");  // a cross-object check: line found on demand
  ASSERT_TRUE(unknown) << All(l);
  EXPECT_EQ(unknown->line, 13);
  auto* bad = Find(l, "spec.priority: expected an integer");
  ASSERT_TRUE(bad) << All(l);
  EXPECT_EQ(bad->line, 20);
}

// ResourceFlavor and ElasticQuota spec.flavors load with the flavor's node labels copied in; the
// flavor rules (unknown name with a did-you-mean, a flavor listed twice, min above max, a resource
// quota both per flavor and plain) are reported at their lines.
TEST(ManifestLoaderTest, ResourceFlavorsAndQuotaFlavors) {
  auto l = LoadAndValidate(
      "apiVersion: arbiter.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: h100}\n"  // 1-3
      "spec: {nodeLabels: {nvidia.com/gpu.product: H100}}\n"                              // 4
      "---\n"                                                                             // 5
      "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\n"                            // 6-7
      "metadata: {name: q, namespace: a}\n"                                               // 8
      "spec:\n  min: {cpu: 4, nvidia.com/gpu: 1}\n  flavors:\n"                           // 9-11
      "    - {name: h100, min: {nvidia.com/gpu: 8}, max: {nvidia.com/gpu: 4}}\n"          // 12
      "    - {name: h10, min: {nvidia.com/gpu: 8}}\n"                                     // 13
      "    - {name: h100, min: {nvidia.com/gpu: 2}}\n"                                    // 14
      "    - {name: a100}\n");                                                            // 15
  ASSERT_EQ(l.set.resource_flavors.size(), 1u) << All(l);
  EXPECT_EQ(l.set.resource_flavors[0].node_labels.at("nvidia.com/gpu.product"), "H100");
  ASSERT_EQ(l.set.elastic_quotas.at(0).flavors.size(), 4u);
  EXPECT_EQ(l.set.elastic_quotas[0].flavors[0].node_labels.at("nvidia.com/gpu.product"), "H100");
  EXPECT_EQ(l.set.elastic_quotas[0].flavors[0].max->Get("nvidia.com/gpu"), 4000);
  auto* unknown = Find(l, "unknown ResourceFlavor \"h10\"; did you mean \"h100\"?");
  ASSERT_TRUE(unknown) << All(l);
  EXPECT_EQ(unknown->line, 13);
  EXPECT_EQ(unknown->field_path, "spec.flavors[1].name");
  auto* twice = Find(l, "flavor \"h100\" is listed twice (first at spec.flavors[0])");
  ASSERT_TRUE(twice) << All(l);
  EXPECT_EQ(twice->line, 14);
  auto* above = Find(l, "min 8 exceeds max 4");
  ASSERT_TRUE(above) << All(l);
  EXPECT_EQ(above->line, 12);
  auto* both = Find(l, "nvidia.com/gpu is quota per flavor here and also in spec.min/spec.max");
  ASSERT_TRUE(both) << All(l);
  auto* empty = Find(l, "flavor \"a100\" sets no min or max");
  ASSERT_TRUE(empty) << All(l);
  EXPECT_EQ(empty->line, 15);
  EXPECT_TRUE(Find(l, "unknown ResourceFlavor \"a100\"")) << All(l);
}

// A syntax error is reported at its line in the file, and the other documents still load.
TEST(ManifestLoaderTest, SyntaxErrorInOneDocumentKeepsTheOthers) {
  auto l = Load(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: [b\n---\n"
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 1u) << All(l);
  EXPECT_GE(l.diagnostics.items.at(0).line, 7);
  EXPECT_LE(l.diagnostics.items.at(0).line, 8);
  ASSERT_EQ(l.set.namespaces.size(), 2u);
  EXPECT_EQ(l.set.namespaces[1].meta.name, "c");
  EXPECT_EQ(l.set.namespaces[1].meta.source.line, 9);
}

// A line starting with `---` inside a block scalar is indented, so it does not split the stream;
// streams with directives are parsed whole.
TEST(ManifestLoaderTest, MarkersOnlyAtColumnZeroAndDirectives) {
  auto l = Load(
      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  annotations:\n    note: |\n"
      "      ---\n      not a marker\n---\n"
      "%YAML 1.2\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.namespaces.size(), 2u);
  EXPECT_EQ(l.set.namespaces[1].meta.source.line, 12);
}

// A stream with a directive is parsed in one piece; cross-object messages still find the line of
// the field in its document (regression: only single-document pieces were indexed).
TEST(ManifestLoaderTest, DirectiveStreamStillHasFieldLines) {
  auto l = LoadAndValidate(
      "\xEF\xBB\xBF%YAML 1.2\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"  // 1-5
      "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"                               // 6-9
      "spec:\n  priorityClassName: nope\n  containers: [{name: c}]\n");                     // 10-12
  auto* d = Find(l, "unknown PriorityClass \"nope\"");
  ASSERT_TRUE(d) << All(l);
  EXPECT_EQ(d->line, 11);
}

TEST(ManifestLoaderTest, PodPreemptModeAnyCase) {
  for (const char* v : {"requeue", "Requeue", "REQUEUE", "cancel", "Cancel"}) {
    auto l = Load(std::string("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: "
                              "{arbiter.dev/preempt-mode: ") +
                  v + "}\nspec: {containers: [{name: c}]}\n");
    EXPECT_CLEAN(l);
    bool cancel = std::string(v).find_first_of("cC") == 0;
    EXPECT_EQ(l.set.pods.at(0).sim.preempt_mode,
              cancel ? PreemptMode::kCancel : PreemptMode::kRequeue)
        << v;
  }
  auto bad = Load(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {arbiter.dev/preempt-mode: "
      "suspend}\n"
      "spec: {containers: [{name: c}]}\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(Find(bad, "unknown preempt mode \"suspend\"")) << All(bad);
}

TEST(ManifestLoaderTest, PodBadSimAnnotations) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    arbiter.dev/submit-time: soon
    arbiter.dev/usage: "cpu=4,memory"
    arbiter.dev/checkpoint-interval: 0s
    arbiter.dev/shutdown-time: -5s
    arbiter.dev/durration: 1h
spec: {containers: [{name: c}]}
)");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 5u) << All(l);
  auto* d = Find(l, "arbiter.dev/submit-time");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->line, 6);
  EXPECT_TRUE(Find(l, "usage item \"memory\" is not resource=quantity"));
  EXPECT_TRUE(Find(l, "checkpoint interval must be positive"));
  EXPECT_TRUE(Find(l, "must not be negative"));
  auto* typo = Find(l, "did you mean \"arbiter.dev/duration\"");
  ASSERT_TRUE(typo) << All(l);
  EXPECT_EQ(typo->line, 10);
}

TEST(ManifestLoaderTest, NodeAddAndRemoveTimes) {
  auto l = Load(R"(apiVersion: v1
kind: Node
metadata:
  name: n
  annotations: {arbiter.dev/add-time: 30m, arbiter.dev/remove-time: 2h, other.io/x: y}
status: {capacity: {cpu: "8"}}
---
apiVersion: v1
kind: Node
metadata: {name: m}
status: {capacity: {cpu: "8"}}
)");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.nodes.size(), 2u);
  EXPECT_EQ(l.set.nodes[0].sim.add_time, 30 * 60000);
  EXPECT_EQ(l.set.nodes[0].sim.remove_time, std::optional<Millis>(2 * 3600000));
  EXPECT_EQ(l.set.nodes[1].sim.add_time, 0);
  EXPECT_FALSE(l.set.nodes[1].sim.remove_time.has_value());
}

TEST(ManifestLoaderTest, NodeBadSimAnnotations) {
  auto l = Load(R"(apiVersion: v1
kind: Node
metadata:
  name: n
  annotations:
    arbiter.dev/add-time: later
    arbiter.dev/remove-tme: 1h
status: {capacity: {cpu: "8"}}
---
apiVersion: v1
kind: Node
metadata:
  name: m
  annotations:
    arbiter.dev/add-time: 2h
    arbiter.dev/remove-time: 1h
status: {capacity: {cpu: "8"}}
---
apiVersion: v1
kind: Node
metadata:
  name: k
  annotations: {arbiter.dev/submit-time: 1h}
status: {capacity: {cpu: "8"}}
)");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 4u) << All(l);
  auto* bad = Find(l, "arbiter.dev/add-time");
  ASSERT_TRUE(bad) << All(l);
  EXPECT_EQ(bad->line, 6);
  auto* typo = Find(l, "did you mean \"arbiter.dev/remove-time\"");
  ASSERT_TRUE(typo) << All(l);
  EXPECT_EQ(typo->line, 7);
  auto* order = Find(l, "remove-time 1h must be after add-time 2h");
  ASSERT_TRUE(order) << All(l);
  EXPECT_EQ(order->line, 16);
  EXPECT_TRUE(Find(l, "unknown Arbiter annotation \"arbiter.dev/submit-time\" on a Node"))
      << All(l);
}

TEST(ManifestLoaderTest, PodRequiresContainersAndNames) {
  auto l = Load(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: 3}\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers: [{image: x}]\n---\n"
      "apiVersion: v1\nkind: Pod\nmetadata: {name: r}\nspec:\n  containers: [{name: c}, {name: "
      "c}]\n");
  EXPECT_TRUE(Find(l, "spec.containers: is required"));
  EXPECT_TRUE(Find(l, "spec.containers[0].name: is required"));
  EXPECT_TRUE(Find(l, "duplicate container name \"c\""));
}

TEST(ManifestLoaderTest, PodSchedulingFieldsArbiterIgnoresWarn) {
  auto l = Load(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeName: n1\n  schedulingGates: "
      "[{name: g}]\n"
      "  containers: [{name: c}]\n");
  EXPECT_TRUE(l.ok());
  EXPECT_EQ(l.diagnostics.WarningCount(), 2u) << All(l);
}

TEST(ManifestLoaderTest, ResourceQuotaKeysAndScopes) {
  auto l = Load(R"(apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: team-c}
spec:
  hard:
    cpu: "10"
    memory: 20Gi
    pods: 5
    count/pods: 6
    nvidia.com/mig-1g.10gb: 7
    requests.nvidia.com/mig-3g.40gb: 2
    requests.ephemeral-storage: 100Gi
    count/services: 3
  scopeSelector:
    matchExpressions:
    - scopeName: PriorityClass
      operator: In
      values: [interactive, training]
    - {scopeName: PriorityClass, operator: Exists}
)");
  EXPECT_TRUE(l.ok()) << All(l);
  EXPECT_EQ(l.diagnostics.WarningCount(), 1u) << All(l);  // count/services ignored
  const auto& q = l.set.resource_quotas.at(0);
  ASSERT_EQ(q.hard.size(), 7u);
  EXPECT_EQ(q.hard[0].track, QuotaTrack::kRequests);
  EXPECT_EQ(q.hard[0].resource, "cpu");
  EXPECT_EQ(q.hard[0].hard, 10000);
  EXPECT_EQ(q.hard[2].track, QuotaTrack::kCount);
  EXPECT_EQ(q.hard[2].resource, "pods");
  EXPECT_EQ(q.hard[3].track, QuotaTrack::kCount);
  EXPECT_EQ(q.hard[3].hard, 6);
  EXPECT_EQ(q.hard[4].resource, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(q.hard[4].track, QuotaTrack::kRequests);
  EXPECT_EQ(q.hard[5].resource, "nvidia.com/mig-3g.40gb");
  ASSERT_EQ(q.scope_selector.size(), 2u);
  EXPECT_EQ(q.scope_selector[0].scope_name, "PriorityClass");
  EXPECT_EQ(q.scope_selector[0].op, SelectorOperator::kIn);
  EXPECT_EQ(q.scope_selector[0].values, (std::vector<std::string>{"interactive", "training"}));
  EXPECT_EQ(q.scope_selector[1].op, SelectorOperator::kExists);
}

TEST(ManifestLoaderTest, ResourceQuotaBadKeysAndSelectors) {
  auto l = Load(R"(apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard:
    request.cpu: 1
    requests.cpu: -1
  scopeSelector:
    matchExpressions:
    - {scopeName: PriorityClass, operator: In}
    - {scopeName: PriorityClass, operator: Exists, values: [a]}
    - {scopeName: PriorityClass, operator: Maybe}
)");
  EXPECT_TRUE(Find(l, "unknown quota key \"request.cpu\"; did you mean \"requests.cpu\"?"))
      << All(l);
  EXPECT_TRUE(Find(l, "must not be negative"));
  // kube-apiserver's words (issue 27), each once.
  EXPECT_TRUE(Find(l,
                   "spec.scopeSelector.matchExpressions[0].values: Required value: must be at "
                   "least one value when `operator` is 'In' or 'NotIn' for scope selector"))
      << All(l);
  EXPECT_TRUE(Find(l,
                   "spec.scopeSelector.matchExpressions[1].values: must be no value when "
                   "`operator` is 'Exist' or 'DoesNotExist' for scope selector"))
      << All(l);
  EXPECT_TRUE(Find(l,
                   "spec.scopeSelector.matchExpressions[2].operator: invalid value \"Maybe\": "
                   "not a valid selector operator (In, NotIn, Exists, DoesNotExist)"))
      << All(l);
  EXPECT_FALSE(Find(l, "operator: Required value"))
      << All(l);  // a bad operator is not also missing
  EXPECT_EQ(l.diagnostics.ErrorCount(), 5u) << All(l);
}

// Terminating / NotTerminating are enforced (no warning); only PriorityClass takes operators
// other than Exists; an unknown scope is an error naming the allowed ones.
TEST(ManifestLoaderTest, ResourceQuotaTerminatingScopesAndOperators) {
  auto l = Load(R"(apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {pods: 2}
  scopes: [Terminating, NotBestEffort]
  scopeSelector:
    matchExpressions:
    - {scopeName: PriorityClass, operator: NotIn, values: [low]}
)");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.resource_quotas.at(0).scope_selector.size(), 3u);
  EXPECT_EQ(l.set.resource_quotas.at(0).scope_selector[0].scope_name, "Terminating");

  auto bad = Load(R"(apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {pods: 2}
  scopes: [Terminatng]
  scopeSelector:
    matchExpressions:
    - {scopeName: NotTerminating, operator: DoesNotExist}
    - {scopeName: BestEffort, operator: Exists, values: [x]}
    - {scopeName: BestEffort, operator: NotIn, values: [x]}
    - {scopeName: Priority, operator: Exists}
)");
  EXPECT_TRUE(Find(bad, "spec.scopes[0]: invalid value \"Terminatng\": unsupported scope"))
      << All(bad);
  const std::string only_exists =
      "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
      "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
      "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity";
  EXPECT_TRUE(
      Find(bad, "matchExpressions[0].operator: invalid value \"DoesNotExist\": " + only_exists))
      << All(bad);
  EXPECT_TRUE(Find(bad, "matchExpressions[1].values: must be no value")) << All(bad);
  EXPECT_TRUE(Find(bad, "matchExpressions[2].operator: invalid value \"NotIn\": " + only_exists))
      << All(bad);
  EXPECT_TRUE(Find(bad,
                   "matchExpressions[3].scopeName: invalid value \"Priority\": unsupported "
                   "scope (PriorityClass, Terminating, NotTerminating, BestEffort, "
                   "NotBestEffort, CrossNamespacePodAffinity)"))
      << All(bad);
  EXPECT_EQ(bad.diagnostics.ErrorCount(), 5u) << All(bad);
}

TEST(ManifestLoaderTest, LimitRange) {
  auto l = Load(R"(apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: team-a}
spec:
  limits:
  - type: Container
    min: {cpu: 100m}
    max: {cpu: 8, memory: 64Gi}
    default: {cpu: 2, memory: 4Gi}
    defaultRequest: {cpu: 1, memory: 2Gi}
    maxLimitRequestRatio: {cpu: 2.5, memory: "1"}
  - type: Pod
    max: {nvidia.com/gpu: 4}
)");
  EXPECT_CLEAN(l);
  const auto& lr = l.set.limit_ranges.at(0);
  ASSERT_EQ(lr.limits.size(), 2u);
  EXPECT_EQ(lr.limits[0].type, LimitType::kContainer);
  EXPECT_EQ(lr.limits[0].min.Get("cpu"), 100);
  EXPECT_EQ(lr.limits[0].max.Get("memory"), 64LL << 30);
  EXPECT_EQ(lr.limits[0].default_limit.Get("cpu"), 2000);
  EXPECT_EQ(lr.limits[0].default_request.Get("memory"), 2LL << 30);
  EXPECT_EQ(lr.limits[0].max_limit_request_ratio_milli.Get("cpu"), 2500);
  EXPECT_EQ(lr.limits[0].max_limit_request_ratio_milli.Get("memory"), 1000);
  EXPECT_EQ(lr.limits[1].type, LimitType::kPod);
  EXPECT_EQ(lr.limits[1].max.Get("nvidia.com/gpu"), 4000);
}

TEST(ManifestLoaderTest, LimitRangeErrors) {
  auto l = Load(R"(apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - max: {cpu: 8}
  - type: Pod
    default: {cpu: 1}
  - type: container
    maxLimitRequestRatio: {cpu: "0.5"}
)");
  EXPECT_TRUE(Find(l, "spec.limits[0].type: is required")) << All(l);
  EXPECT_TRUE(Find(l, "spec.limits[1].default: may not be set when type is Pod"));
  EXPECT_TRUE(Find(l, "did you mean \"Container\"?"));
  EXPECT_TRUE(Find(l, "must be at least 1"));
}

TEST(ManifestLoaderTest, PriorityClass) {
  auto l = Load(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: -5\n"
      "globalDefault: true\npreemptionPolicy: Never\ndescription: \"Best effort work\"\n");
  EXPECT_CLEAN(l);
  const auto& pc = l.set.priority_classes.at(0);
  EXPECT_EQ(pc.value, -5);
  EXPECT_TRUE(pc.global_default);
  EXPECT_EQ(pc.preemption_policy, PreemptionPolicy::kNever);
  EXPECT_EQ(pc.description, "Best effort work");
}

TEST(ManifestLoaderTest, PriorityClassErrors) {
  auto l = Load(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nglobalDefault: "
      "false\n---\n"
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: "
      "2000000000\n---\n"
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-x}\nvalue: "
      "1\n");
  EXPECT_TRUE(Find(l, "PriorityClass/a: value: is required")) << All(l);
  EXPECT_TRUE(Find(l, "at most 1000000000"));
  EXPECT_TRUE(Find(l, "reserved"));
}

TEST(ManifestLoaderTest, PodDisruptionBudget) {
  auto l = Load(R"(apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: team-a}
spec:
  maxUnavailable: "25%"
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels: {app: web}
    matchExpressions:
    - {key: tier, operator: NotIn, values: [canary]}
    - {key: track, operator: DoesNotExist}
)");
  EXPECT_CLEAN(l);
  const auto& p = l.set.pdbs.at(0);
  EXPECT_FALSE(p.min_available);
  ASSERT_TRUE(p.max_unavailable);
  EXPECT_TRUE(p.max_unavailable->is_percent);
  EXPECT_EQ(p.max_unavailable->value, 25);
  ASSERT_EQ(p.selector.match_expressions.size(), 2u);
  EXPECT_EQ(p.selector.match_expressions[0].op, SelectorOperator::kNotIn);
  EXPECT_EQ(p.selector.match_expressions[1].op, SelectorOperator::kDoesNotExist);
  EXPECT_TRUE(p.selector.Matches({{"app", "web"}, {"tier", "prod"}}));
  EXPECT_FALSE(p.selector.Matches({{"app", "web"}, {"tier", "canary"}}));
}

TEST(ManifestLoaderTest, PodDisruptionBudgetBadValues) {
  auto l = Load(
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: a}\nspec:\n  "
      "minAvailable: \"2\"\n"
      "  selector: {matchLabels: {app: x}}\n---\n"
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: b}\nspec:\n  "
      "minAvailable: -1\n"
      "  selector: {matchLabels: {app: x}}\n---\n"
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: c}\nspec:\n  "
      "minAvailable: 1.5\n"
      "  selector: {matchLabels: {app: x}}\n");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 3u) << All(l);
  EXPECT_EQ(Find(l, "PodDisruptionBudget/default/a")->line, 5);
}

TEST(ManifestLoaderTest, PoolPolicyAsInBrief) {
  auto l = Load(R"(apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: default}
spec:
  overcommit: {cpu: "1.2", memory: "1.0", nvidia.com/gpu: 1}
  quota: {whenExceeded: Reject}
  placement: {policy: FGD}
  preemption:
    type: QoS
    mode: Cancel
    disruptionBudgets: BestEffort
    minRuntime: 10m
    reclaim: LowerPriority
  metering: {scrapeInterval: 15s}
)");
  EXPECT_CLEAN(l);
  ASSERT_TRUE(l.set.pool_policy);
  const PoolPolicy& p = *l.set.pool_policy;
  EXPECT_EQ(p.cpu_overcommit_milli, 1200);
  EXPECT_EQ(p.memory_overcommit_milli, 1000);
  EXPECT_EQ(p.when_quota_exceeded, QuotaExceededAction::kReject);
  EXPECT_EQ(p.placement, PlacementPolicyName::kFGD);
  EXPECT_EQ(p.preemption_type, PreemptionType::kQoS);
  EXPECT_EQ(p.preempt_mode, PreemptMode::kCancel);
  EXPECT_EQ(p.disruption_budgets, DisruptionBudgetMode::kBestEffort);
  EXPECT_EQ(p.min_runtime, 600000);
  EXPECT_EQ(p.reclaim, ReclaimMode::kLowerPriority);
  EXPECT_EQ(p.scrape_interval, 15000);
}

TEST(ManifestLoaderTest, PoolPolicyDefaultsAndEveryPlacement) {
  const char* names[] = {"BestFit", "LeastAllocated", "FGD", "Packing", "DotProduct", "Random"};
  for (int i = 0; i < 6; ++i) {
    auto l = Load(std::string("apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: "
                              "{name: d}\nspec:\n  placement: {policy: ") +
                  names[i] + "}\n");
    EXPECT_CLEAN(l);
    EXPECT_EQ(static_cast<int>(l.set.pool_policy->placement), i);
    EXPECT_STREQ(ToString(l.set.pool_policy->placement), names[i]);
    EXPECT_EQ(l.set.pool_policy->scrape_interval, 30000);
    EXPECT_EQ(l.set.pool_policy->cpu_overcommit_milli, 1000);
  }
}

TEST(ManifestLoaderTest, PoolPolicyGpuOvercommitOnlyOne) {
  for (const char* ok : {"\"1\"", "\"1.0\"", "1", "1.0"}) {
    auto l =
        Load(std::string(
                 "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: d}\nspec:\n"
                 "  overcommit: {nvidia.com/gpu: ") +
             ok + "}\n");
    EXPECT_CLEAN(l);
  }
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: d}\nspec:\n"
      "  overcommit: {nvidia.com/gpu: \"1.5\", gpu: 2}\n");
  EXPECT_TRUE(Find(l, "GPUs are never overcommitted")) << All(l);
  EXPECT_TRUE(Find(l, "unknown overcommit resource \"gpu\""));
}

// scheduling.backfillDepth (1..16) and fairSharing.preemptionStrategies (Kueue's Configuration:
// each name exact, the list one of [F], [I], [F, I]; empty keeps the default).
TEST(ManifestLoaderTest, PoolPolicyBackfillDepthAndFairSharingStrategies) {
  const std::string head =
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: d}\nspec:\n";
  using S = FairShareStrategy;
  auto d = Load(head + "  scheduling: {backfill: true}\n");
  EXPECT_CLEAN(d);
  EXPECT_EQ(d.set.pool_policy->backfill_depth, 1);
  EXPECT_EQ(d.set.pool_policy->fair_preemption_strategies,
            (std::vector<S>{S::kLessThanOrEqualToFinalShare, S::kLessThanInitialShare}));
  auto l = Load(head +
                "  scheduling: {backfillDepth: 3}\n"
                "  fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n");
  EXPECT_CLEAN(l);
  EXPECT_EQ(l.set.pool_policy->backfill_depth, 3);
  EXPECT_EQ(l.set.pool_policy->fair_preemption_strategies,
            std::vector<S>{S::kLessThanInitialShare});
  auto e = Load(head + "  fairSharing: {preemptionStrategies: []}\n");
  EXPECT_CLEAN(e);
  EXPECT_EQ(e.set.pool_policy->fair_preemption_strategies.size(), 2u);
  auto zero = Load(head + "  scheduling: {backfillDepth: 0}\n");
  EXPECT_TRUE(Find(zero, "spec.scheduling.backfillDepth")) << All(zero);
  auto typo = Load(head + "  fairSharing: {preemptionStrategies: [LessThanFinalShare]}\n");
  EXPECT_TRUE(Find(typo,
                   "unknown value \"LessThanFinalShare\" (allowed: "
                   "LessThanOrEqualToFinalShare | LessThanInitialShare)"))
      << All(typo);
  auto order = Load(head +
                    "  fairSharing: {preemptionStrategies: [LessThanInitialShare, "
                    "LessThanOrEqualToFinalShare]}\n");
  EXPECT_TRUE(Find(order, "unsupported list of strategies")) << All(order);
  EXPECT_EQ(order.set.pool_policy->fair_preemption_strategies.size(), 2u);  // the default kept
  auto twice = Load(head +
                    "  fairSharing: {preemptionStrategies: [LessThanInitialShare, "
                    "LessThanInitialShare]}\n");
  EXPECT_TRUE(Find(twice, "unsupported list of strategies")) << All(twice);
}

// quota.maxSubmittedPerNamespace: an integer 1..10^9; absent: 0, no cap.
TEST(ManifestLoaderTest, PoolPolicySubmitLimit) {
  const std::string head =
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: d}\nspec:\n";
  auto none = Load(head + "  quota: {whenExceeded: Queue}\n");
  EXPECT_CLEAN(none);
  EXPECT_EQ(none.set.pool_policy->max_submitted_per_namespace, 0);
  auto l = Load(head + "  quota: {maxSubmittedPerNamespace: 5000}\n");
  EXPECT_CLEAN(l);
  EXPECT_EQ(l.set.pool_policy->max_submitted_per_namespace, 5000);
  for (const char* bad : {"0", "-3", "1000000001", "\"5k\"", "1.5"}) {
    auto b = Load(head + "  quota: {maxSubmittedPerNamespace: " + bad + "}\n");
    EXPECT_TRUE(Find(b, "spec.quota.maxSubmittedPerNamespace")) << bad << ": " << All(b);
    EXPECT_EQ(b.set.pool_policy->max_submitted_per_namespace, 0) << bad;
  }
}

TEST(ManifestLoaderTest, MoreThanOnePoolPolicy) {
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: a}\n---\n"
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: b}\n");
  auto* d = Find(l, "more than one PoolPolicy");
  ASSERT_TRUE(d) << All(l);
  EXPECT_EQ(d->line, 5);
  EXPECT_EQ(l.set.pool_policy->meta.name, "a");
}

TEST(ManifestLoaderTest, ElasticQuotaAsInBrief) {
  auto l = Load(R"(apiVersion: arbiter.dev/v1alpha1
kind: ElasticQuota
metadata: {name: team-a, namespace: team-a}
spec:
  cohort: gpu-pool
  min: {nvidia.com/gpu: 16, cpu: 64, memory: 256Gi}
  max: {nvidia.com/gpu: 32, cpu: 128, memory: 512Gi}
  lendingLimit: {nvidia.com/gpu: 8}
)");
  EXPECT_CLEAN(l);
  const auto& q = l.set.elastic_quotas.at(0);
  EXPECT_EQ(q.meta.namespace_, "team-a");
  EXPECT_EQ(q.cohort, "gpu-pool");
  EXPECT_EQ(q.min.Get("nvidia.com/gpu"), 16000);
  ASSERT_TRUE(q.max);
  EXPECT_EQ(q.max->Get("memory"), 512LL << 30);
  EXPECT_EQ(q.lending_limit.Get("nvidia.com/gpu"), 8000);
  EXPECT_EQ(q.lending_limit_set, std::vector<std::string>{"nvidia.com/gpu"});
}

TEST(ManifestLoaderTest, ElasticQuotaWithoutMax) {
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: t}\n"
      "spec: {min: {cpu: 1}}\n");
  EXPECT_CLEAN(l);
  EXPECT_FALSE(l.set.elastic_quotas.at(0).max);
  EXPECT_TRUE(l.set.elastic_quotas.at(0).lending_limit_set.empty());
}

TEST(ManifestLoaderTest, PriceBookAsInBrief) {
  auto l = Load(R"(apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: standard}
spec:
  currency: CNY
  effectiveFrom: "2026-01-01T00:00:00Z"
  mode: Blended
  blendedRequestWeight: "0.25"
  prices:
    cpu: "0.05"
    memory: 0.01
    nvidia.com/gpu: "7.00"
    nvidia.com/mig-1g.10gb: "1.10"
  gpuModels:
    NVIDIA-H100-80GB-HBM3: "14.00"
  migRule: Compute
  preemptionCredit: None
  shareIdle: Weighted
  namespaceModes: {team-c: Usage, team-a: Request}
)");
  EXPECT_CLEAN(l);
  const auto& pb = l.set.price_books.at(0);
  EXPECT_EQ(pb.currency, "CNY");
  EXPECT_EQ(pb.effective_from, 1767225600000);
  EXPECT_EQ(pb.mode, BillingMode::kBlended);
  EXPECT_EQ(pb.blended_request_weight.ToString(), "0.25");
  EXPECT_EQ(pb.prices.at("cpu").ToString(), "0.05");
  EXPECT_EQ(pb.prices.at("memory").ToString(), "0.01");
  EXPECT_EQ(pb.prices.at("nvidia.com/gpu").ToString(), "7");
  EXPECT_EQ(pb.prices.at("nvidia.com/mig-1g.10gb").ToString(), "1.1");
  EXPECT_EQ(pb.gpu_models.at("NVIDIA-H100-80GB-HBM3").ToString(), "14");
  EXPECT_EQ(pb.mig_rule, MigRule::kCompute);
  EXPECT_EQ(pb.preemption_credit, CreditPolicy::kNone);
  EXPECT_EQ(pb.share_idle, IdleSharing::kWeighted);
  EXPECT_EQ(pb.namespace_modes.at("team-c"), BillingMode::kUsage);
  EXPECT_EQ(pb.namespace_modes.at("team-a"), BillingMode::kRequest);
}

TEST(ManifestLoaderTest, PriceBookErrors) {
  auto l = Load(R"(apiVersion: arbiter.dev/v1alpha1
kind: PriceBook
metadata: {name: p}
spec:
  currency: yuan
  effectiveFrom: "2026-13-01T00:00:00Z"
  blendedRequestWeight: "1.5"
  prices: {cpu: "-1", memory: "0.0000000001"}
  mode: max
  shareIdle: ByCost
)");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 7u) << All(l);
  EXPECT_TRUE(Find(l, "ISO 4217"));
  EXPECT_TRUE(Find(l, "between 0 and 1"));
  EXPECT_TRUE(Find(l, "did you mean \"Max\"?"));
}

TEST(ManifestLoaderTest, QoSAsInBrief) {
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: QoS\nmetadata: {name: high}\nspec:\n  priority: "
      "1000\n"
      "  preempt: [low, normal]\n  preemptMode: Requeue\n  graceTime: 60s\n");
  EXPECT_CLEAN(l);
  const auto& q = l.set.qos.at(0);
  EXPECT_EQ(q.priority, 1000);
  EXPECT_EQ(q.preempt, (std::vector<std::string>{"low", "normal"}));
  EXPECT_EQ(q.preempt_mode, PreemptMode::kRequeue);
  EXPECT_EQ(q.grace_time, 60000);
  EXPECT_FALSE(q.namespaces);  // no list: every namespace may name it
  EXPECT_TRUE(q.AllowsNamespace("anyone"));
}

// spec.namespaces (issue 27): the namespaces whose pods may name the QoS, each a DNS label; an
// empty list is kept (no namespace may).
TEST(ManifestLoaderTest, QoSNamespacesAreDnsLabels) {
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: QoS\nmetadata: {name: inference}\nspec:\n"
      "  namespaces: [team-a, ml]\n---\napiVersion: arbiter.dev/v1alpha1\nkind: QoS\n"
      "metadata: {name: retired}\nspec: {namespaces: []}\n");
  EXPECT_CLEAN(l);
  ASSERT_EQ(l.set.qos.size(), 2u);
  EXPECT_EQ(l.set.qos[0].namespaces, (std::vector<std::string>{"team-a", "ml"}));
  EXPECT_TRUE(l.set.qos[0].AllowsNamespace("ml"));
  EXPECT_FALSE(l.set.qos[0].AllowsNamespace("team-b"));
  EXPECT_EQ(l.set.qos[1].namespaces, std::vector<std::string>{});
  EXPECT_FALSE(l.set.qos[1].AllowsNamespace("team-a"));
  auto bad = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: QoS\nmetadata: {name: q}\nspec:\n"
      "  namespaces: [team-a, Team_B]\n");
  // `namespaces:` with no value (null, as kubectl sends it) is no list, as kube-apiserver prunes
  // a null field of a CRD: every namespace (it was read as [], none).
  auto null = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: QoS\nmetadata: {name: q}\nspec:\n"
      "  namespaces:\n");
  EXPECT_CLEAN(null);
  EXPECT_FALSE(null.set.qos.at(0).namespaces);
  EXPECT_EQ(bad.diagnostics.ErrorCount(), 1u) << All(bad);
  EXPECT_TRUE(Find(bad, "spec.namespaces[1]: invalid namespace \"Team_B\"")) << All(bad);
}

// ------------------------------------------------------------------ typing and messages

TEST(ManifestLoaderTest, UnquotedAndQuotedNumbersParseExactly) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity:\n"
      "    cpu: 0.1\n    memory: \"1.5Gi\"\n    nvidia.com/gpu: .5\n    example.com/fpga: 1e3\n");
  EXPECT_CLEAN(l);
  const Node& n = l.set.nodes.at(0);
  EXPECT_EQ(n.capacity.Get("cpu"), 100);
  EXPECT_EQ(n.capacity.Get("memory"), 1610612736);
  EXPECT_EQ(n.capacity.Get("nvidia.com/gpu"), 500);
  EXPECT_EQ(n.capacity.Get("example.com/fpga"), 1000);
}

TEST(ManifestLoaderTest, MalformedAndImpreciseQuantities) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity:\n"
      "    cpu: 0.0001\n    memory: 12XB\n    nvidia.com/gpu: 1.5\n    nvidia.com/mig-1g.10gb: "
      "0.5\n"
      "    pods: -3\n    cpu2: 1\n");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 6u) << All(l);
  EXPECT_EQ(Find(l, "capacity.cpu")->line, 6);
  EXPECT_EQ(Find(l, "capacity.memory")->line, 7);
  EXPECT_EQ(Find(l, "capacity[nvidia.com/gpu]")->line, 8);
  EXPECT_EQ(Find(l, "capacity[nvidia.com/mig-1g.10gb]")->line, 9);
  EXPECT_EQ(Find(l, "capacity.pods")->line, 10);
  EXPECT_TRUE(Find(l, "did you mean \"cpu\"?"));
}

TEST(ManifestLoaderTest, WrongTypes) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: [a, b]
spec:
  priority: high
  terminationGracePeriodSeconds: "30"
  priorityClassName: {a: 1}
  nodeSelector: {gpu: true}
  containers:
    name: c
)");
  EXPECT_EQ(l.diagnostics.ErrorCount(), 6u) << All(l);
  EXPECT_EQ(Find(l, "metadata.labels: expected a mapping, got a list")->line, 5);
  EXPECT_EQ(Find(l, "spec.priority: expected an integer")->line, 7);
  EXPECT_EQ(Find(l, "remove the quotes")->line, 8);
  EXPECT_EQ(Find(l, "spec.priorityClassName: expected a scalar value, got a mapping")->line, 9);
  EXPECT_EQ(Find(l, "expected a string, got a boolean true; quote it")->line, 10);
  EXPECT_EQ(Find(l, "spec.containers: expected a list, got a mapping")->line, 12);
}

TEST(ManifestLoaderTest, UnknownFieldsSuggestTheClosest) {
  auto l = Load(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  namespce: x
spec:
  priorityClass: high
  containers:
  - name: c
    resource: {}
  zzzzzz: 1
)");
  EXPECT_EQ(Find(l, "unknown field \"namespce\"; did you mean \"namespace\"?")->line, 5);
  EXPECT_EQ(Find(l, "unknown field \"priorityClass\"; did you mean \"priorityClassName\"?")->line,
            7);
  EXPECT_EQ(Find(l, "unknown field \"resource\"; did you mean \"resources\"?")->line, 10);
  const Diagnostic* z = Find(l, "unknown field \"zzzzzz\"");
  ASSERT_TRUE(z) << All(l);
  EXPECT_NE(z->message.find("valid fields: containers"), std::string::npos);
  EXPECT_EQ(z->ToString(), "m.yaml:11: Pod/default/p: spec.zzzzzz: " + z->message);
}

TEST(ManifestLoaderTest, ArbiterKindsRejectUnknownFields) {
  auto l = Load(
      "apiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: q, namespace: t}\n"
      "spec:\n  cohrt: x\n  lendinglimit: {cpu: 1}\n");
  EXPECT_TRUE(Find(l, "did you mean \"cohort\"?")) << All(l);
  EXPECT_TRUE(Find(l, "did you mean \"lendingLimit\"?"));
}

TEST(ManifestLoaderTest, UnknownKindAndApiVersion) {
  auto l = Load(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\n"
      "apiVersion: v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: 1\n---\n"
      "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n---\n"
      "apiVersion: arbiter.dev/v1alpha1\nkind: Qos\nmetadata: {name: x}\n---\n"
      "metadata: {name: x}\n");
  auto* d = Find(l, "unknown kind \"Deployment\"");
  ASSERT_TRUE(d) << All(l);
  EXPECT_EQ(d->line, 2);
  // The supported kinds, from the one kinds table (core/api_kinds.h), by group in table order.
  EXPECT_NE(d->message.find("arbiter.dev/v1alpha1 ElasticQuota, PoolPolicy, PriceBook, QoS, "
                            "ResourceFlavor; scheduling.x-k8s.io/v1alpha1 PodGroup)"),
            std::string::npos)
      << d->message;
  EXPECT_TRUE(Find(l,
                   "PriorityClass/x: apiVersion: unsupported apiVersion \"v1\" for PriorityClass "
                   "(expected scheduling.k8s.io/v1"));
  EXPECT_TRUE(Find(l, "expected policy/v1"));
  EXPECT_TRUE(Find(l, "unknown kind \"Qos\"; did you mean \"QoS\"?"));
  EXPECT_TRUE(Find(l, "kind: is required"));
  EXPECT_EQ(CountObjects(l.set), 0u);
}

TEST(ManifestLoaderTest, NotYamlReportsTheParserLine) {
  auto l = Load("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\nfoo: [1, 2\nbar: }\n");
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  const Diagnostic& d = l.diagnostics.items[0];
  EXPECT_EQ(d.severity, Severity::kError);
  EXPECT_EQ(d.line, 6);
  EXPECT_NE(d.message.find("not valid YAML"), std::string::npos);
  EXPECT_FALSE(l.ok());
}

// yaml-cpp 0.7 never returns from LoadAll on a document starting with ',' (yaml-cpp#1040).
TEST(ManifestLoaderTest, LoneCommaIsAnErrorNotAHang) {
  auto l = Load("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n,\n");
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  EXPECT_EQ(l.diagnostics.items[0].line, 5);
  EXPECT_NE(l.diagnostics.items[0].message.find("not valid YAML"), std::string::npos);
}

TEST(ManifestLoaderTest, PlainTextIsNotAManifest) {
  auto l = Load("This is a README, not a manifest.\nIt has two lines.\n");
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  EXPECT_NE(l.diagnostics.items[0].message.find("not a manifest object"), std::string::npos);
  EXPECT_EQ(l.diagnostics.items[0].line, 1);
  auto tabs = Load("apiVersion: v1\n\tkind: Namespace\n");
  EXPECT_FALSE(tabs.ok());
}

TEST(ManifestLoaderTest, EmptyDocumentsAreSkipped) {
  auto l = Load(
      "---\n---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: "
      "a}\n---\n");
  EXPECT_CLEAN(l);
  EXPECT_EQ(l.set.namespaces.size(), 1u);
  EXPECT_EQ(l.set.namespaces[0].meta.source.line, 5);
  EXPECT_CLEAN(Load(""));
}

TEST(ManifestLoaderTest, DuplicateKeysAreErrors) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity: {cpu: 1, cpu: 2}\n"
      "metadata: {name: m}\n");
  EXPECT_TRUE(Find(l, "duplicate key \"cpu\"")) << All(l);
  EXPECT_EQ(Find(l, "duplicate field \"metadata\"")->line, 6);
}

TEST(ManifestLoaderTest, NamesAndLabelsAreValidated) {
  auto l = Load(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: Team_A}\n---\n"
      "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {\"bad key!\": x, ok: "
      "\"-bad\"}\n---\n"
      "apiVersion: v1\nkind: Node\nmetadata: {labels: {}}\n");
  EXPECT_TRUE(Find(l, "invalid name \"Team_A\"")) << All(l);
  EXPECT_TRUE(Find(l, "invalid label key"));
  EXPECT_TRUE(Find(l, "invalid label value"));
  EXPECT_TRUE(Find(l, "metadata.name: is required"));
}

// k8s.io/apimachinery IsDNS1123Subdomain: at most 253 in all, no limit on a dot-separated part
// (a Pod or PriorityClass named with 100 or 253 'a's is accepted); Namespaces are DNS-1123 labels.
TEST(ManifestLoaderTest, SubdomainNamesHaveNoPerPartLimit) {
  const std::string a100(100, 'a'), a253(253, 'a'), a254(254, 'a');
  auto pod = [](const std::string& name) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           ", namespace: d}\nspec:\n  containers:\n  - {name: c, image: i}\n";
  };
  auto pc = [](const std::string& name) {
    return "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: " + name +
           "}\nvalue: 1\n";
  };
  for (const std::string& ok : {a100, a253, a100 + "." + std::string(100, 'b')}) {
    auto l = Load(pod(ok) + "---\n" + pc(ok));
    EXPECT_CLEAN(l);
    EXPECT_EQ(l.set.pods.size(), 1u);
  }
  for (const std::string& bad : {a254, std::string("a..b"), std::string("a.-b")}) {
    auto l = Load(pod(bad));
    EXPECT_TRUE(Find(l, "invalid name")) << bad << All(l);
  }
  auto ns =
      Load("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + std::string(64, 'a') + "}\n");
  EXPECT_TRUE(Find(ns, "must be a DNS label")) << All(ns);
}

TEST(ManifestLoaderTest, ClusterScopedNamespaceIsIgnoredWithWarning) {
  auto l = Load(
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p, namespace: "
      "x}\nvalue: 1\n");
  EXPECT_TRUE(l.ok());
  EXPECT_EQ(l.diagnostics.WarningCount(), 1u);
  EXPECT_EQ(l.set.priority_classes.at(0).meta.namespace_, "");
}

TEST(ManifestLoaderTest, AnchorsAndCyclesDoNotHang) {
  auto l = Load(
      "apiVersion: v1\nkind: Node\nmetadata: &m {name: n, labels: *m}\nstatus: &s {capacity: "
      "*s}\n");
  EXPECT_FALSE(l.ok());
}

TEST(ManifestLoaderTest, ErrorsCarryFileKindNameAndPath) {
  auto l = Load(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n"
      "  - name: c\n    resources:\n      requests: {memory: lots}\n");
  ASSERT_EQ(l.diagnostics.items.size(), 1u);
  const Diagnostic& d = l.diagnostics.items[0];
  EXPECT_EQ(d.file, "m.yaml");
  EXPECT_EQ(d.line, 8);
  EXPECT_EQ(d.kind, "Pod");
  EXPECT_EQ(d.name, "ns/p");
  EXPECT_EQ(d.field_path, "spec.containers[0].resources.requests.memory");
}

TEST(ManifestLoaderTest, MissingFileIsAnError) {
  auto l = LoadManifestFiles({"/nonexistent/arbiter/pool.yaml"});
  EXPECT_FALSE(l.ok());
  ASSERT_EQ(l.diagnostics.items.size(), 1u);
  EXPECT_NE(l.diagnostics.items[0].message.find("cannot read file"), std::string::npos);
}

TEST(ManifestLoaderTest, CrossFileChecksRunInLoadManifestFiles) {
  auto dir = std::filesystem::temp_directory_path() /
             ("arbiter_loader_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const char* text) {
    auto p = dir / name;
    FILE* f = std::fopen(p.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
    return p.string();
  };
  std::string a = write(
      "a.yaml",
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: 1\n");
  std::string b = write(
      "b.yaml",
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\nvalue: 2\n");
  auto l = LoadManifestFiles({a, b});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  EXPECT_EQ(l.diagnostics.items[0].file, b);
  EXPECT_NE(l.diagnostics.items[0].message.find("duplicate PriorityClass \"x\" (first defined at " +
                                                a + ":1)"),
            std::string::npos)
      << All(l);
}

// ------------------------------------------------------------------ examples/

TEST(ManifestLoaderTest, EveryExampleValidatesWithoutErrors) {
  std::filesystem::path dir = std::filesystem::path(ARBITER_SOURCE_DIR) / "examples";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    auto ext = e.path().extension();
    // examples/serve/ holds kinds only `arbiter serve` runs (batch/v1 Job), not manifest kinds.
    if (e.path().parent_path().filename() == "serve") continue;
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml"))
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    auto l = LoadManifestFiles({f});
    EXPECT_EQ(l.diagnostics.ErrorCount(), 0u) << f << "\n" << All(l);
    EXPECT_GT(CountObjects(l.set), 0u) << f;
  }
}

TEST(ManifestLoaderTest, ExamplePoolHasTheDocumentedShape) {
  auto l = LoadManifestFiles({std::string(ARBITER_SOURCE_DIR) + "/examples/pool.yaml"});
  ASSERT_TRUE(l.ok()) << All(l);
  // Exactly the one intended warning (limits.nvidia.com/gpu in the issue's ResourceQuota).
  ASSERT_EQ(l.diagnostics.WarningCount(), 1u) << All(l);
  EXPECT_EQ(l.diagnostics.items[0].field_path, "spec.hard[limits.nvidia.com/gpu]");
  EXPECT_EQ(l.set.namespaces.size(), 3u);
  EXPECT_EQ(l.set.nodes.size(), 9u);
  EXPECT_GE(l.set.pods.size(), 15u);
  EXPECT_LE(l.set.pods.size(), 25u);
  EXPECT_EQ(l.set.elastic_quotas.size(), 3u);
  ASSERT_TRUE(l.set.pool_policy);
  EXPECT_EQ(l.set.pool_policy->cpu_overcommit_milli, 1200);
  EXPECT_EQ(l.set.price_books.size(), 1u);
  std::vector<int32_t> tiers;
  int defaults = 0;
  for (const auto& pc : l.set.priority_classes) {
    tiers.push_back(pc.value);
    defaults += pc.global_default;
  }
  std::sort(tiers.begin(), tiers.end());
  EXPECT_EQ(tiers, (std::vector<int32_t>{1000, 5000, 10000}));
  EXPECT_EQ(defaults, 1);
  int mig_nodes = 0;
  for (const auto& n : l.set.nodes)
    if (n.capacity.Has("nvidia.com/mig-1g.10gb")) ++mig_nodes;
  EXPECT_EQ(mig_nodes, 2);
}

// ------------------------------------------------------------------ issue 14: v1 List

// What `kubectl get pods,nodes -o yaml` prints: one v1 List whose items are the objects. Each item
// loads as an object of its own, with its own lines (also for cross-object checks).
TEST(ManifestLoaderTest, KubectlListLoadsItsItemsWithTheirLines) {
  auto l = LoadAndValidate(
      "apiVersion: v1\n"                                   // 1
      "items:\n"                                           // 2
      "- apiVersion: scheduling.k8s.io/v1\n"               // 3
      "  kind: PriorityClass\n"                            // 4
      "  metadata: {name: low, resourceVersion: \"7\"}\n"  // 5
      "  value: 10\n"                                      // 6
      "- apiVersion: v1\n"                                 // 7
      "  kind: Pod\n"                                      // 8
      "  metadata:\n"                                      // 9
      "    name: p\n"                                      // 10
      "    namespace: team-a\n"                            // 11
      "  spec:\n"                                          // 12
      "    priorityClassName: lwo\n"                       // 13
      "    containers: [{name: c}]\n"                      // 14
      "  status: {phase: Pending}\n"                       // 15
      "- apiVersion: v1\n"                                 // 16
      "  kind: Pod\n"                                      // 17
      "  metadata: {name: q}\n"                            // 18
      "  spec: {priority: x, containers: [{name: c}]}\n"   // 19
      "kind: List\n"                                       // 20
      "metadata:\n"                                        // 21
      "  resourceVersion: \"\"\n");                        // 22
  ASSERT_EQ(l.set.priority_classes.size(), 1u) << All(l);
  EXPECT_EQ(l.set.priority_classes[0].meta.source.line, 3);
  ASSERT_EQ(l.set.pods.size(), 2u) << All(l);
  EXPECT_EQ(l.set.pods[0].meta.source.line, 7);
  EXPECT_EQ(l.set.pods[0].meta.namespace_, "team-a");
  EXPECT_EQ(l.set.pods[1].meta.source.line, 16);
  auto* unknown = Find(l, "unknown PriorityClass \"lwo\"");  // found on demand through the List
  ASSERT_TRUE(unknown) << All(l);
  EXPECT_EQ(unknown->line, 13);
  EXPECT_EQ(unknown->name, "team-a/p");
  auto* bad = Find(l, "spec.priority: expected an integer");
  ASSERT_TRUE(bad) << All(l);
  EXPECT_EQ(bad->line, 19);
  EXPECT_EQ(l.diagnostics.ErrorCount(), 2u) << All(l);
}

TEST(ManifestLoaderTest, ListMistakes) {
  auto v2 = Load("apiVersion: v2\nkind: List\nitems: []\n");
  ASSERT_TRUE(Find(v2, "List/<unnamed>: apiVersion: a List is apiVersion v1, got \"v2\""))
      << All(v2);
  auto nested =
      Load("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n");
  auto* n = Find(nested, "items[0]: a List inside a List is not supported");
  ASSERT_TRUE(n) << All(nested);
  EXPECT_EQ(n->line, 4);
  auto extra = Load("apiVersion: v1\nkind: List\nitmes: []\n");
  ASSERT_TRUE(Find(extra, "unknown field \"itmes\"; did you mean \"items\"?")) << All(extra);
  auto scalar = Load("apiVersion: v1\nkind: List\nitems:\n- just text\n");
  auto* t = Find(scalar, "document is text, not a manifest object");
  ASSERT_TRUE(t) << All(scalar);
  EXPECT_EQ(t->line, 4);
  // The real thing: a kubectl get -o yaml List with server fields (status, uid, managed fields...).
  ManifestLoad file =
      LoadManifestFiles({std::string(ARBITER_SOURCE_DIR) + "/tests/data/kubectl/get-list.yaml"});
  EXPECT_TRUE(file.ok()) << All(file);
  EXPECT_EQ(file.set.nodes.size(), 1u);
  EXPECT_EQ(file.set.pods.size(), 2u);
}

}  // namespace
}  // namespace arbiter::yaml
