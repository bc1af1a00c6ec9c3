// deploy/crds.yaml against the manifest loader: every enum in the CRDs' schemas lists exactly the
// values the loader accepts for that field (the manifest spellings of core/policy_names.h, or the
// loader's own list), so that what `arbiter validate` accepts kube-apiserver accepts too. A value
// added to a table and not to the CRD (LeastLostWork was missing from victimOrder) fails here.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/policy_names.h"

namespace arbiter {
namespace deploy_crds_test {

template <typename T>
std::vector<std::string> Manifest(const std::vector<PolicyName<T>>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.manifest);
  return out;
}

// Every enum under `schema`, by its path below spec ("preemption.victimOrder"; an array's items
// add "[]").
void CollectEnums(const YAML::Node& schema, const std::string& path,
                  std::map<std::string, std::vector<std::string>>* out) {
  if (schema["enum"])
    for (const auto& v : schema["enum"]) (*out)[path].push_back(v.as<std::string>());
  if (schema["items"]) CollectEnums(schema["items"], path + "[]", out);
  if (schema["additionalProperties"] && schema["additionalProperties"].IsMap())
    CollectEnums(schema["additionalProperties"], path + ".*", out);
  if (schema["properties"])
    for (const auto& kv : schema["properties"]) {
      const std::string key = kv.first.as<std::string>();
      CollectEnums(kv.second, path.empty() ? key : path + "." + key, out);
    }
}

// kind -> path -> enum values, from every CRD of the file (the spec's schema).
std::map<std::string, std::map<std::string, std::vector<std::string>>> CrdEnums() {
  std::map<std::string, std::map<std::string, std::vector<std::string>>> out;
  for (const auto& doc :
       YAML::LoadAllFromFile(std::string(ARBITER_SOURCE_DIR) + "/deploy/crds.yaml")) {
    if (!doc.IsMap() || doc["kind"].as<std::string>("") != "CustomResourceDefinition") continue;
    const std::string kind = doc["spec"]["names"]["kind"].as<std::string>();
    for (const auto& v : doc["spec"]["versions"]) {
      const YAML::Node spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"];
      CollectEnums(spec, "", &out[kind]);
    }
  }
  return out;
}

TEST(DeployCrds, EveryEnumListsWhatTheLoaderAccepts) {
  const std::map<std::string, std::map<std::string, std::vector<std::string>>> want = {
      {"ElasticQuota",
       {{"preemption.withinNamespace", Manifest(WithinNamespacePolicyNames())},
        {"preemption.reclaimWithinCohort", Manifest(ReclaimModeNames())},
        {"preemption.borrowWithinCohort.policy", Manifest(BorrowWithinCohortPolicyNames())}}},
      {"PoolPolicy",
       {{"quota.whenExceeded", Manifest(QuotaExceededActionNames())},
        {"placement.policy", Manifest(PlacementPolicyNames())},
        {"preemption.type", Manifest(PreemptionTypeNames())},
        {"preemption.mode", Manifest(PreemptModeNames())},
        {"preemption.disruptionBudgets", Manifest(DisruptionBudgetModeNames())},
        {"preemption.reclaim", Manifest(ReclaimModeNames())},
        {"preemption.victimOrder", Manifest(VictimOrderNames())},
        {"fairSharing.preemptionStrategies[]", Manifest(FairShareStrategyNames())}}},
      // The loader's own lists (src/adapters/yaml/manifest_loader.cc, LoadPriceBook).
      {"PriceBook",
       {{"mode", {"Request", "Usage", "Max", "Blended"}},
        {"namespaceModes.*", {"Request", "Usage", "Max", "Blended"}},
        {"migRule", {"Compute", "Memory", "Max"}},
        {"preemptionCredit", {"None", "LostWork"}},
        {"shareIdle", {"None", "Weighted", "Even"}}}},
      {"QoS", {{"preemptMode", Manifest(PreemptModeNames())}}},
  };
  const auto have = CrdEnums();
  for (const auto& [kind, fields] : want) {
    ASSERT_TRUE(have.count(kind)) << kind << " has no CRD in deploy/crds.yaml";
    for (const auto& [path, values] : fields) {
      const auto& h = have.at(kind);
      ASSERT_TRUE(h.count(path)) << kind << " spec." << path << " has no enum in the CRD";
      EXPECT_EQ(std::set<std::string>(h.at(path).begin(), h.at(path).end()),
                std::set<std::string>(values.begin(), values.end()))
          << kind << " spec." << path;
    }
  }
  // And no enum in the CRDs that this test does not know (a new one gets a row above).
  for (const auto& [kind, fields] : have)
    for (const auto& [path, values] : fields) {
      const auto k = want.find(kind);
      EXPECT_TRUE(k != want.end() && k->second.count(path))
          << kind << " spec." << path << " is an enum this test does not check";
    }
}

}  // namespace deploy_crds_test
}  // namespace arbiter
