// deploy/crds.yaml and deploy/validating-policy.yaml on the real test cluster (CTest fixture
// "kube"; docs/kubernetes.md, "deploy/"): kube-apiserver refuses an ElasticQuota or a PoolPolicy
// that `arbiter validate` refuses, with `arbiter validate`'s words, warns where it warns, and
// accepts every Arbiter object of the repository that Arbiter accepts. Server-side dry runs:
// nothing is stored.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "adapters/yaml/manifest_loader.h"
#include "core/validation.h"
#include "integration/kube_fixture.h"

namespace kube_policy_test {

using kube_fixture::Kubectl;
using kube_fixture::KubeTest;

class KubePolicy : public KubeTest {
 protected:
  // `kubectl create --dry-run=server` of these documents: exit code and output (warnings too).
  arbiter::testing::CommandOutput DryRunText(const std::string& yaml) {
    const std::string file = (arbiter::testing::Scratch("kube-policy") / "objects.yaml").string();
    std::ofstream(file) << yaml;
    return Kubectl("create --dry-run=server -f " + file);
  }
  // ... of an object of `kind` with this spec (an ElasticQuota in namespace kv).
  arbiter::testing::CommandOutput DryRun(const std::string& spec,
                                         const std::string& kind = "ElasticQuota") {
    const std::string meta = kind == "ElasticQuota" ? "{name: quota, namespace: kv}" : "{name: p}";
    return DryRunText("apiVersion: arbiter.dev/v1alpha1\nkind: " + kind + "\nmetadata: " + meta +
                      "\nspec:\n" + spec);
  }
  // The answer to `spec` once the policy is in force (kube-apiserver loads a new policy and its
  // binding within seconds): the first refusal (or answer containing `until`), or the last
  // answer after 60 s.
  arbiter::testing::CommandOutput Refused(const std::string& spec,
                                          const std::string& kind = "ElasticQuota",
                                          const std::string& until = "") {
    auto done = [&](const arbiter::testing::CommandOutput& r) {
      return until.empty() ? r.rc != 0 : r.out.find(until) != std::string::npos;
    };
    auto r = DryRun(spec, kind);
    for (int i = 0; i < 300 && !done(r); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      r = DryRun(spec, kind);
    }
    return r;
  }
  void Namespace(const std::string& ns) {
    ASSERT_EQ(Kubectl("create namespace " + ns + " --dry-run=client -o yaml | " +
                      kube_fixture::KubectlCmd() + "apply -f -")
                  .rc,
              0);
  }
};

#define EXPECT_SAYS(r, text) EXPECT_NE((r).out.find(text), std::string::npos) << (r).out

TEST_F(KubePolicy, ElasticQuotaChecksBeyondTheSchemaRefuseWithArbiterValidatesWords) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kv", "kv-0"));
  ASSERT_EQ(Kubectl("create namespace kv --dry-run=client -o yaml | " + kube_fixture::KubectlCmd() +
                    "apply -f -")
                .rc,
            0);
  auto r = Refused("  min: {nvidia.com/gpu: 6}\n  max: {nvidia.com/gpu: 4}\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("ValidatingAdmissionPolicy 'arbiter-elasticquota'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("spec.min[nvidia.com/gpu]: min 6 exceeds max 4"), std::string::npos)
      << r.out;
  r = Refused("  min: {cpu: \"2\"}\n  lendingLimit: {memory: 1Gi}\n");
  EXPECT_NE(r.out.find("spec.lendingLimit.memory: lending limit for memory, which has no min "
                       "(only guaranteed quota is lent)"),
            std::string::npos)
      << r.out;
  r = Refused("  min: {nvidia.com/gpu: 4}\n  lendingLimit: {nvidia.com/gpu: 8}\n");
  EXPECT_NE(r.out.find("spec.lendingLimit[nvidia.com/gpu]: lending limit 8 exceeds min 4"),
            std::string::npos)
      << r.out;
  // Within bounds (quantities compared as quantities: 500m below 1): accepted.
  r = DryRun(
      "  min: {nvidia.com/gpu: 4, cpu: 500m}\n  max: {nvidia.com/gpu: 8, cpu: \"1\"}\n"
      "  lendingLimit: {nvidia.com/gpu: 2}\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  Kubectl("delete namespace kv --wait=false");
}

TEST_F(KubePolicy, ElasticQuotaFlavorsAndPreemptionRulesRefuseWithArbiterValidatesWords) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kv", "kv-0"));
  ASSERT_NO_FATAL_FAILURE(Namespace("kv"));
  auto r = Refused(
      "  min: {cpu: \"4\"}\n  flavors:\n"
      "  - {name: a100, min: {nvidia.com/gpu: 6}, max: {nvidia.com/gpu: 4}}\n"
      "  - {name: h100}\n"
      "  - {name: a100, min: {nvidia.com/gpu: 1}, lendingLimit: {nvidia.com/gpu: 2, memory: 1Gi}}\n"
      "  - {name: l4, max: {cpu: \"8\"}}\n");
  EXPECT_NE(r.rc, 0);
  EXPECT_SAYS(r, "spec.flavors[0].min[nvidia.com/gpu]: min 6 exceeds max 4");
  EXPECT_SAYS(r, "spec.flavors[1]: flavor \"h100\" sets no min or max: it covers no resource");
  EXPECT_SAYS(r,
              "spec.flavors[2].name: flavor \"a100\" is listed twice (first at spec.flavors[0])");
  EXPECT_SAYS(r, "spec.flavors[2].lendingLimit[nvidia.com/gpu]: lending limit 2 exceeds min 1");
  EXPECT_SAYS(r, "spec.flavors[2].lendingLimit.memory: lending limit 1Gi exceeds min 0");
  EXPECT_SAYS(r,
              "spec.flavors[3].max.cpu: cpu is quota per flavor here and also in spec.min/"
              "spec.max: name it in one place");
  r = Refused(
      "  min: {cpu: \"4\"}\n  cohort: c\n  preemption:\n    reclaimWithinCohort: Never\n"
      "    borrowWithinCohort: {policy: LowerPriority}\n");
  EXPECT_SAYS(r,
              "spec.preemption.borrowWithinCohort.policy: borrowWithinCohort.policy LowerPriority "
              "needs reclaimWithinCohort other than Never");
  r = Refused(
      "  min: {cpu: \"4\"}\n  cohort: c\n  preemption:\n"
      "    borrowWithinCohort: {maxPriorityThreshold: 100}\n");
  EXPECT_SAYS(r,
              "spec.preemption.borrowWithinCohort.maxPriorityThreshold: maxPriorityThreshold "
              "applies only with borrowWithinCohort.policy LowerPriority");
  // Flavors and rules within bounds: accepted.
  r = DryRun(
      "  min: {cpu: \"4\"}\n  cohort: c\n  preemption:\n    reclaimWithinCohort: Any\n"
      "    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}\n  flavors:\n"
      "  - {name: a100, min: {nvidia.com/gpu: 4}, max: {nvidia.com/gpu: 8}, "
      "lendingLimit: {nvidia.com/gpu: 2}}\n  - {name: h100, max: {nvidia.com/gpu: 2}}\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  Kubectl("delete namespace kv --wait=false");
}

TEST_F(KubePolicy, PoolPolicyErrorsRefuseAndWarningsWarnInArbiterValidatesWords) {
  auto r = Refused(
      "  overcommit: {cpu: \"0.8\", memory: \"0.5\", nvidia.com/gpu: \"1.5\", disk: \"2\"}\n"
      "  metering: {scrapeInterval: 500ms}\n",
      "PoolPolicy");
  EXPECT_NE(r.rc, 0);
  EXPECT_SAYS(r, "ValidatingAdmissionPolicy 'arbiter-poolpolicy'");
  EXPECT_SAYS(r,
              "spec.overcommit.disk: unknown overcommit resource \"disk\" (allowed: cpu, memory, "
              "nvidia.com/gpu)");
  EXPECT_SAYS(r,
              "spec.overcommit[nvidia.com/gpu]: GPUs are never overcommitted: the ratio for "
              "nvidia.com/gpu must be 1.0 (got \"1.5\")");
  EXPECT_SAYS(r, "spec.overcommit.cpu: CPU overcommit 0.8 is below 1.0 (it would strand capacity)");
  EXPECT_SAYS(r, "spec.overcommit.memory: memory overcommit 0.5 is below 1.0");
  EXPECT_SAYS(r, "spec.metering.scrapeInterval: scrape interval 500ms is below 1s");
  // Warnings: stored (rc 0), with the validator's words.
  r = Refused(
      "  overcommit: {cpu: \"1.5\", memory: \"1.1\", nvidia.com/gpu: 1}\n"
      "  metering: {scrapeInterval: 2m}\n  preemption: {victimOrder: YoungestFirst}\n",
      "PoolPolicy", "Warning:");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_SAYS(r, "spec.overcommit.cpu: CPU overcommit 1.5 is above the recommended range 1.0-1.2");
  EXPECT_SAYS(r, "spec.overcommit.memory: memory overcommit 1.1 is above 1.0");
  EXPECT_SAYS(r,
              "spec.metering.scrapeInterval: scrape interval 2m is outside the recommended range");
  EXPECT_SAYS(r, "spec.preemption.victimOrder: YoungestFirst applies under preemption type QoS");
  r = Refused("  priority: 10\n  preempt: [low, p]\n", "QoS", "Warning:");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_SAYS(r, "spec.preempt[1]: a QoS that preempts itself lets its jobs preempt each other");
  // Within bounds: accepted without a warning.
  r = DryRun(
      "  overcommit: {cpu: \"1.2\", memory: 1, nvidia.com/gpu: \"1.0\"}\n"
      "  metering: {scrapeInterval: 30s}\n  preemption: {victimOrder: LeastLostWork}\n",
      "PoolPolicy");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("Warning"), std::string::npos) << r.out;
}

// Issue 26: the validator's warnings on one ElasticQuota (deploy/validating-policy.yaml,
// arbiter-elasticquota-warnings): preemption within a cohort, or fair sharing, without a cohort.
// Stored (rc 0), kubectl prints them in `arbiter validate`'s words; with a cohort, none.
TEST_F(KubePolicy, ElasticQuotaWarningsWarnInArbiterValidatesWords) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kv", "kv-0"));
  ASSERT_NO_FATAL_FAILURE(Namespace("kv"));
  auto r = Refused("  min: {cpu: \"4\"}\n  preemption: {reclaimWithinCohort: Any}\n",
                   "ElasticQuota", "Warning:");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_SAYS(r, "ValidatingAdmissionPolicy 'arbiter-elasticquota-warnings'");
  EXPECT_SAYS(r,
              "spec.preemption.reclaimWithinCohort: the namespace is in no cohort: there is "
              "nothing to reclaim or borrow");
  r = Refused("  min: {cpu: \"4\"}\n  preemption:\n    borrowWithinCohort: {policy: Never}\n",
              "ElasticQuota", "Warning:");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_SAYS(r,
              "spec.preemption.borrowWithinCohort: the namespace is in no cohort: there is "
              "nothing to reclaim or borrow");
  r = Refused("  min: {cpu: \"4\"}\n  fairSharing: {weight: 2}\n", "ElasticQuota", "Warning:");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_SAYS(r,
              "spec.fairSharing.weight: the namespace is in no cohort: its fair-sharing weight "
              "orders nothing");
  // In a cohort: no warning.
  r = DryRun(
      "  min: {cpu: \"4\"}\n  cohort: c\n  preemption: {reclaimWithinCohort: Any}\n"
      "  fairSharing: {weight: 2}\n");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("Warning"), std::string::npos) << r.out;
  Kubectl("delete namespace kv --wait=false");
}

// Issue 26: a cohort whose min adds up to more than the pool's allocatable needs the nodes, which
// no admission policy sees: `arbiter scheduler` (its pool the whole cluster: no --node-selector)
// sets the condition Warning on each ElasticQuota of the cohort, in `arbiter validate`'s words,
// and removes it once the min fits. (The cluster's other nodes, of tests running beside this
// one, count in the pool: the min is far above any of it, then at most this test's node.)
TEST_F(KubePolicy, ACohortsMinBeyondThePoolIsAWarningConditionUntilFixed) {
  ASSERT_NO_FATAL_FAILURE(Fresh("kw-a", "kw-0"));
  ASSERT_NO_FATAL_FAILURE(Fresh("kw-b", "kw-0"));
  ASSERT_NO_FATAL_FAILURE(Node("kw-0", "kw"));
  auto quotas = [](const std::string& gpus) {
    std::string y;
    for (const char* ns : {"kw-a", "kw-b"})
      y += "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + std::string(ns) +
           "}\n---\napiVersion: arbiter.dev/v1alpha1\nkind: ElasticQuota\nmetadata: {name: "
           "quota, namespace: " +
           ns + "}\nspec:\n  cohort: kw\n  min: {nvidia.com/gpu: " + gpus + "}\n";
    return y;
  };
  ASSERT_NO_FATAL_FAILURE(Apply(quotas("100000")));
  const std::string log = LogFile("kw");
  kube_fixture::Scheduler s("arbiter-kw", "", log);
  const std::string warning = "{.status.conditions[?(@.type==\"Warning\")].message}";
  for (const char* ns : {"kw-a", "kw-b"}) {
    const std::string m = kube_fixture::Until(std::string("elasticquota quota -n ") + ns, warning,
                                              [](const std::string& v) { return !v.empty(); });
    EXPECT_EQ(m.rfind("spec.min[nvidia.com/gpu]: the min of cohort \"kw\" adds up to ", 0), 0u)
        << ns << ": " << m << "\n"
        << kube_fixture::ReadFile(log);
    EXPECT_NE(m.find(" of nvidia.com/gpu, more than the pool's "), std::string::npos) << m;
    EXPECT_NE(m.find(": guarantees cannot all be honoured"), std::string::npos) << m;
    EXPECT_EQ(kube_fixture::Get(std::string("elasticquota quota -n ") + ns,
                                "{.status.conditions[?(@.type==\"Valid\")].status}"),
              "True");
  }
  // Fixed: 2 GPUs in all, and this test's node has 8. The condition goes.
  ASSERT_NO_FATAL_FAILURE(Apply(quotas("1")));
  for (const char* ns : {"kw-a", "kw-b"})
    EXPECT_EQ(kube_fixture::Until(std::string("elasticquota quota -n ") + ns, warning,
                                  [](const std::string& v) { return v.empty(); }),
              "")
        << ns << "\n"
        << kube_fixture::ReadFile(log);
  s.Stop();
  Kubectl("delete namespace kw-a kw-b --wait=false");
  Kubectl("delete node kw-0 --wait=false");
}

// Every ElasticQuota, PoolPolicy, PriceBook, QoS and ResourceFlavor in the repository's examples,
// scenarios, test data and docs (YAML files and the docs' yaml blocks) that `arbiter validate`
// accepts on its own, kube-apiserver accepts too: the CRDs' schemas (types, enums, no unknown
// field) and the admission policies refuse nothing Arbiter accepts.
std::vector<std::string> YamlTexts(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream all;
  all << in.rdbuf();
  if (file.extension() == ".yaml") return {all.str()};
  std::vector<std::string> blocks;  // ```yaml ... ``` in a Markdown page
  std::string line, block;
  bool in_block = false;
  while (std::getline(all, line)) {
    if (!in_block && line.rfind("```yaml", 0) == 0) {
      in_block = true;
      block.clear();
    } else if (in_block && line.rfind("```", 0) == 0) {
      in_block = false;
      blocks.push_back(block);
    } else if (in_block) {
      block += line + "\n";
    }
  }
  return blocks;
}

bool AcceptedAlone(const YAML::Node& doc) {
  arbiter::yaml::ManifestLoad load;
  arbiter::yaml::LoadManifestText(YAML::Dump(doc), "doc.yaml", &load);
  if (!load.ok()) return false;
  arbiter::Diagnostics d;
  arbiter::ValidateManifestSet(load.set, nullptr, &d);
  for (const auto& item : d.items)
    if (item.severity == arbiter::Severity::kError) return false;
  return true;
}

TEST_F(KubePolicy, EveryArbiterObjectArbiterAcceptsTheClusterAccepts) {
  namespace fs = std::filesystem;
  ASSERT_NO_FATAL_FAILURE(Fresh("kcrd", "kcrd-0"));
  ASSERT_NO_FATAL_FAILURE(Namespace("kcrd"));
  const std::set<std::string> kinds = {"ElasticQuota", "PoolPolicy", "PriceBook", "QoS",
                                       "ResourceFlavor"};
  std::string out;
  std::map<std::string, int> count;
  int n = 0;
  for (const char* dir : {"examples", "tests/scenarios", "tests/integration/data", "docs"})
    for (const auto& e :
         fs::recursive_directory_iterator(arbiter::testing::SourceDir() + "/" + dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".yaml" && ext != ".md")) continue;
      for (const std::string& text : YamlTexts(e.path())) {
        std::vector<YAML::Node> docs;
        try {
          docs = YAML::LoadAll(text);
        } catch (const YAML::Exception&) {
          continue;  // not YAML on purpose (a test of the loader's messages)
        }
        for (YAML::Node doc : docs) {
          if (!doc.IsMap() || !doc["kind"] || !kinds.count(doc["kind"].as<std::string>("")) ||
              doc["apiVersion"].as<std::string>("") != "arbiter.dev/v1alpha1" ||
              !AcceptedAlone(doc))
            continue;
          const std::string kind = doc["kind"].as<std::string>();
          doc["metadata"]["name"] = "doc-" + std::to_string(n++);  // as many as there are
          if (kind == "ElasticQuota")
            doc["metadata"]["namespace"] = "kcrd";
          else
            doc["metadata"].remove("namespace");
          doc.remove("status");
          out += "---\n# " + e.path().lexically_relative(arbiter::testing::SourceDir()).string() +
                 "\n" + YAML::Dump(doc) + "\n";
          ++count[kind];
        }
      }
    }
  for (const auto& k : kinds) EXPECT_GT(count[k], 0) << "no " << k << " found";
  EXPECT_GT(n, 100);
  const std::string file = (arbiter::testing::Scratch("kube-crds") / "all.yaml").string();
  std::ofstream(file) << out;
  auto r = Kubectl("create --dry-run=server -f " + file);
  EXPECT_EQ(r.rc, 0) << r.out << "\n(the documents: " << file << ")";
  Kubectl("delete namespace kcrd --wait=false");
}

}  // namespace kube_policy_test
