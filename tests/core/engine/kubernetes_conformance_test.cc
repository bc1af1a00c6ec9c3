// Kubernetes conformance of LimitRange admission: the cases of Kubernetes' TestPodLimitFunc
// (tests/data/kubernetes/limitranger-cases.yaml), run through the engine's admission.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <iostream>
#include <sstream>

#include "adapters/yaml/manifest_loader.h"
#include "core/engine/admission.h"

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

}  // namespace
}  // namespace arbiter::engine
