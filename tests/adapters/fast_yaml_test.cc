#include "adapters/yaml/fast_yaml.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/load_fingerprint.h"
#include "adapters/yaml/fast_objects.h"
#include "adapters/yaml/manifest_loader.h"
#include "core/object_serial.h"

namespace arbiter::yaml {
namespace {

using testing::Fingerprint;

// `threads`: 0 the default; the diagnostics in the order the load made them unless `sorted`.
std::string LoadWith(const std::string& text, bool fast, int threads = 0, bool sorted = true) {
  ManifestLoad out;
  out.fast_yaml = fast;
  out.threads = threads;
  LoadManifestText(text, "m.yaml", &out);
  ValidateManifestSet(out.set, &out.locator, &out.diagnostics);
  if (sorted) out.diagnostics.Sort();
  return Fingerprint(out);
}

void ExpectSameLoad(const std::string& text, const std::string& what) {
  EXPECT_EQ(LoadWith(text, false), LoadWith(text, true)) << what;
}

TEST(FastYaml, EveryManifestInTheRepositoryLoadsAsWithYamlCpp) {
  namespace fs = std::filesystem;
  size_t files = 0;
  for (const char* dir : {"examples", "tests/scenarios", "docs", "data"}) {
    const fs::path root = fs::path(ARBITER_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      ExpectSameLoad(ss.str(), e.path().string());
      ++files;
    }
  }
  EXPECT_GT(files, 50u);
}

// The shapes bench/large_sim.sh generates, and variations of every construct the fast reader
// takes (and of some it leaves to yaml-cpp), with errors and warnings among them.
std::string GeneratedWorkload(int pods) {
  std::string t =
      "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: "
      "10000\n";
  for (int i = 0; i < 40; ++i) {
    t += "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-" + std::to_string(i) + "\n";
    t += "  labels: {nvidia.com/gpu.product: " +
         std::string(i % 4 ? "NVIDIA-A100-SXM4-80GB" : "NVIDIA-H100-80GB-HBM3") + "}\n";
    t += i % 3 ? "status:\n  capacity: {cpu: \"128\", memory: 1Ti, nvidia.com/gpu: \"8\"}\n"
               : "status:\n  capacity:\n    cpu: '128'   # a comment\n    memory: 1Ti\n"
                 "    \"nvidia.com/gpu\": \"8\"\n";
  }
  const char* variants[] = {
      "",                                        // as the bench writes them
      "  labels:\n    app: web\n    tier: ~\n",  // a null label value
      "  labels: {app: 'it''s'}\n",              // an invalid label value: an error
      "  labels: {app: \"a\\\"b\"}\n",           // an escape
      "  labels: {app: \"a\\tb\"}\n",            // an escape left to yaml-cpp
      "  bogus: 1\n",                            // an unknown field: an error
      "  labels: {app: x, app: y}\n",            // a duplicate key: left to yaml-cpp
      "  labels: &a {app: x}\n",                 // an anchor: left to yaml-cpp
      "  labels:\n    app: two\n      lines\n",  // a multi-line plain scalar
      "  labels: {}\n  annotations: {}\n",       // empty mappings
      "  labels: {n: 12, b: true}\n",            // numbers and booleans: errors
      "  labels: {app: [x]}\n",                  // a list where a string goes
  };
  for (int i = 0; i < pods; ++i) {
    const int k = (i * 7) % 6;
    const char* cpu[] = {"4", "8", "2", "1", "16", "2"};
    const char* mem[] = {"16", "32", "8", "4", "64", "8"};
    const char* gpu[] = {"1", "2", "0.5", "0", "4", "0.25"};
    t += "---\n# pod " + std::to_string(i) +
         "\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-" + std::to_string(i) +
         "\n  namespace: team-" + std::to_string(i % 3) + "\n";
    t += variants[i % (sizeof(variants) / sizeof(variants[0]))];
    t += "  annotations: {arbiter.dev/submit-time: \"" + std::to_string(i * 50) +
         "ms\", arbiter.dev/duration: \"" + std::to_string(600 + (i % 17) * 60) + "s\"}\n";
    t +=
        "spec:\n  priorityClassName: " + std::string(i % 10 ? "low" : "high") + "\n  containers:\n";
    if (i % 5 == 0)
      t += "    - name: c\n      resources:\n        requests:\n          cpu: \"" +
           std::string(cpu[k]) + "\"\n          memory: " + mem[k] + "Gi\n";
    else
      t += "  - name: c\n    resources:\n      requests: {cpu: \"" + std::string(cpu[k]) +
           "\", memory: " + mem[k] + "Gi" +
           (std::string(gpu[k]) == "0" ? "" : std::string(", nvidia.com/gpu: \"") + gpu[k] + "\"") +
           "}\n";
    if (i % 7 == 3) t += "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n";
    if (i % 11 == 4) t += "  tolerations:\n  - {key: a, operator: Exists}\n";
  }
  return t +
         "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\n"
         "value: 1000\n";
}

TEST(FastYaml, GeneratedWorkloadLoadsAsWithYamlCpp) {
  const std::string text = GeneratedWorkload(600);
  ExpectSameLoad(text, "generated workload");
  // Not vacuous: most documents took the fast path, and the variants made errors.
  ManifestLoad fast;
  LoadManifestText(text, "m.yaml", &fast);
  EXPECT_TRUE(fast.diagnostics.HasErrors());
  EXPECT_GT(fast.set.pods.size(), 500u);
}

// The diagnostics (text, lines, order), objects and their lines are the same whatever the
// number of threads building Pods and Nodes, across several batches of documents.
TEST(FastYaml, MultiThreadedLoadEqualsOneThreadedLoad) {
  const std::string text = GeneratedWorkload(8300);  // more than one batch (8192 documents)
  const std::string one = LoadWith(text, true, 1, false);
  EXPECT_NE(one.find("invalid label value"), std::string::npos);  // errors among the pods
  EXPECT_EQ(one, LoadWith(text, true, 2, false));
}

// One document through BuildDirect, and through the whole loader with yaml-cpp only.
void ExpectDirectLike(const std::string& doc, bool taken) {
  FastReader reader;
  DirectObject d;
  const std::string text = "---\n# before\n" + doc;
  EXPECT_EQ(BuildDirect(reader, text, "m.yaml", 0, &d), taken) << doc;
  if (!taken) return;
  ManifestLoad slow;
  slow.fast_yaml = false;
  LoadManifestText(text, "m.yaml", &slow);
  ASSERT_FALSE(slow.diagnostics.HasErrors()) << doc;
  ManifestLoad direct;
  if (d.kind == DirectObject::Kind::kPod) direct.set.pods.push_back(d.pod);
  if (d.kind == DirectObject::Kind::kNode) direct.set.nodes.push_back(d.node);
  EXPECT_EQ(Fingerprint(slow), Fingerprint(direct)) << doc;
  EXPECT_EQ(d.line, 3);
}

TEST(FastYaml, DirectPathBuildsWhatTheYamlCppPathLoads) {
  const std::string pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n";
  ExpectDirectLike(pod +
                       "  namespace: team-1\n  labels: {app: web, tier: ~}\n"
                       "  annotations: {arbiter.dev/submit-time: \"50ms\", arbiter.dev/duration: "
                       "\"600s\", note: x, empty: ~}\n  uid: abc\n"
                       "spec:\n  priorityClassName: high\n  priority: -7\n  tolerations: []\n"
                       "  nodeSelector: {nvidia.com/gpu.product: H100}\n  containers:\n"
                       "  - name: c\n    image: x\n    resources:\n      requests: {cpu: \"4\", "
                       "memory: 16Gi, nvidia.com/gpu: \"0.5\"}\n      limits: {cpu: 8}\n"
                       "  - name: d\n    resources: {limits: {memory: 1Gi}}\nstatus: {phase: x}\n",
                   true);
  ExpectDirectLike(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n-1, labels: {a: b}}\n"
      "spec: {unschedulable: true}\nstatus:\n  capacity: {cpu: \"128\", memory: 1Ti, "
      "nvidia.com/gpu: \"8\"}\n  allocatable: {cpu: \"120\"}\n  phase: Ready\n",
      true);
  // Anything with a message, or not handled here, goes the usual way.
  for (const char* spec : {
           "spec:\n  containers:\n  - name: c\n  - name: c\n",                // duplicate names
           "spec:\n  containers:\n  - name: C\n",                             // invalid name
           "spec:\n  containers: []\n  affinity: {}\n",                       // not handled here
           "spec:\n  containers: []\n  tolerations: [{operator: Exists}]\n",  // not handled here
           "spec:\n  containers: []\n  initContainers: []\n",                 // not handled here
           "spec:\n  containers: []\n  priority: \"1\"\n",                    // a quoted integer
           "spec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: true}}\n",
           "spec:\n  containers:\n  - name: c\n    resources: {requests: {gpus: 1}}\n",
           "spec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: 1x}}\n",
           "spec:\n  containers:\n  - name: c\n    bogus: 1\n", "spec: ~\n",
           "",  // no spec
       })
    ExpectDirectLike(pod + spec, false);
  for (const char* meta : {
           "  labels: {app: 'a b'}\n",                          // an invalid label value
           "  labels: {app: 12}\n",                             // a number
           "  annotations: {arbiter.dev/qos: gold}\n",          // not handled here
           "  annotations: {arbiter.dev/duration: \"-1s\"}\n",  // negative
           "  name: q\n",                                       // a duplicate key
       })
    ExpectDirectLike(pod + meta + "spec: {containers: []}\n", false);
  ExpectDirectLike("apiVersion: v1\nkind: Node\nmetadata: {name: n, namespace: x}\n", false);
  ExpectDirectLike("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taints: []}\n", true);
  ExpectDirectLike(
      "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {taints: [{key: a, effect: "
      "NoSchedule}]}\n",
      false);
  ExpectDirectLike("apiVersion: v2\nkind: Pod\nmetadata: {name: n}\nspec: {containers: []}\n",
                   false);
  ExpectDirectLike("apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n", false);
}

TEST(FastYaml, ReadsTheSubsetWithYamlCppTypesAndTags) {
  auto d = ParseFastDocument(
      "--- # first\n\n  # note\nkind: Pod\nmeta: {a: \"1\", b: 'x', c: 2, d: ~, e: []}\nlist:\n- "
      "one\n- k: v\n  k2: [1, \"2\"]\n-\n");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->line, 3);
  const YAML::Node& r = d->root;
  ASSERT_TRUE(r.IsMap());
  EXPECT_EQ(r["kind"].Scalar(), "Pod");
  EXPECT_EQ(r["kind"].Tag(), "?");
  EXPECT_EQ(r["meta"]["a"].Tag(), "!");
  EXPECT_EQ(r["meta"]["b"].Scalar(), "x");
  EXPECT_TRUE(r["meta"]["d"].IsNull());
  EXPECT_TRUE(r["meta"]["e"].IsSequence());
  EXPECT_EQ(r["meta"]["e"].size(), 0u);
  ASSERT_TRUE(r["list"].IsSequence());
  ASSERT_EQ(r["list"].size(), 3u);
  EXPECT_EQ(r["list"][1]["k2"][1].Scalar(), "2");
  EXPECT_TRUE(r["list"][2].IsNull());
}

TEST(FastYaml, LeavesEverythingOutsideTheSubsetToYamlCpp) {
  for (const char* text : {"a: &x 1\n",
                           "a: *x\n",
                           "a: !!str 1\n",
                           "a: |\n  text\n",
                           "a: >\n  text\n",
                           "a: \"two\n  lines\"\n",
                           "a: plain\n  more\n",
                           "a:\tb\n",
                           "a: 1\na: 2\n",
                           "? a\n: b\n",
                           "a: {b: 1,}\n",
                           "a: [1, 2\n",
                           "- - a\n",
                           "%YAML 1.2\n---\na: 1\n",
                           "a: 1\n...\n",
                           "a: \"\\n\"\n",
                           "a: caf\xc3\xa9\n",
                           "a: b: c\n",
                           "just text\n",
                           "a: 1\n b: 2\n",
                           ""})
    EXPECT_FALSE(ParseFastDocument(text).has_value()) << text;
}

}  // namespace
}  // namespace arbiter::yaml
