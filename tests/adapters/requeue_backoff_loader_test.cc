// PoolPolicy spec.preemption.requeuingStrategy (issue 29): Kueue's field names, defaults (60 s,
// 3600 s) and validation (>= 0, int32), Arbiter's immediateRequeues, the warnings for values that
// do not back off as meant, and deploy/crds.yaml's bounds equal to the loader's.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "adapters/yaml/manifest_loader.h"
#include "core/validation.h"

namespace arbiter::yaml {
namespace requeue_backoff_loader_test {

ManifestLoad LoadAndValidate(const std::string& text) {
  ManifestLoad out;
  LoadManifestText(text, "m.yaml", &out);
  ValidateManifestSet(out.set, &out.locator, &out.diagnostics);
  return out;
}

std::string All(const ManifestLoad& l) {
  std::string s;
  for (const auto& d : l.diagnostics.items) s += d.ToString() + "\n";
  return s;
}

ManifestLoad Strategy(const std::string& strategy) {
  return LoadAndValidate(
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
      "spec:\n  preemption: {type: Priority, requeuingStrategy: " +
      strategy + "}\n");
}

TEST(RequeueBackoffLoaderTest, ReadsSecondsWithKueuesDefaults) {
  auto l = Strategy("{backoffBaseSeconds: 30, backoffMaxSeconds: 600}");
  ASSERT_TRUE(l.set.pool_policy && l.set.pool_policy->requeue_backoff) << All(l);
  EXPECT_EQ(l.set.pool_policy->requeue_backoff->base, 30000);
  EXPECT_EQ(l.set.pool_policy->requeue_backoff->max, 600000);
  EXPECT_TRUE(l.diagnostics.items.empty()) << All(l);
  auto d = Strategy("{}");
  ASSERT_TRUE(d.set.pool_policy && d.set.pool_policy->requeue_backoff) << All(d);
  EXPECT_EQ(d.set.pool_policy->requeue_backoff->base, 60000);
  EXPECT_EQ(d.set.pool_policy->requeue_backoff->max, 3600000);
  auto none = LoadAndValidate(
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
      "spec: {preemption: {type: Priority}}\n");
  ASSERT_TRUE(none.set.pool_policy) << All(none);
  EXPECT_FALSE(none.set.pool_policy->requeue_backoff.has_value()) << "absent: no back-off";
}

// Arbiter's immediateRequeues: the first preemptions requeued at once (default 0), >= 0.
TEST(RequeueBackoffLoaderTest, ReadsImmediateRequeues) {
  auto l = Strategy("{backoffBaseSeconds: 600, immediateRequeues: 1}");
  ASSERT_TRUE(l.set.pool_policy && l.set.pool_policy->requeue_backoff) << All(l);
  EXPECT_EQ(l.set.pool_policy->requeue_backoff->immediate, 1);
  EXPECT_EQ(l.set.pool_policy->requeue_backoff->base, 600000);
  EXPECT_TRUE(l.diagnostics.items.empty()) << All(l);
  EXPECT_EQ(Strategy("{}").set.pool_policy->requeue_backoff->immediate, 0);
  auto neg = Strategy("{immediateRequeues: -1}");
  ASSERT_EQ(neg.diagnostics.ErrorCount(), 1u) << All(neg);
  EXPECT_EQ(neg.diagnostics.items[0].field_path,
            "spec.preemption.requeuingStrategy.immediateRequeues");
}

TEST(RequeueBackoffLoaderTest, NegativeOversizedAndUnknownFieldsAreErrors) {
  auto neg = Strategy("{backoffBaseSeconds: -5}");
  ASSERT_EQ(neg.diagnostics.ErrorCount(), 1u) << All(neg);
  EXPECT_EQ(neg.diagnostics.items[0].field_path,
            "spec.preemption.requeuingStrategy.backoffBaseSeconds");
  EXPECT_EQ(neg.diagnostics.items[0].message,
            "invalid value -5: must be greater than or equal to 0 (seconds, as Kueue's)");
  auto big = Strategy("{backoffMaxSeconds: 2147483648}");
  ASSERT_EQ(big.diagnostics.ErrorCount(), 1u) << All(big);
  EXPECT_NE(big.diagnostics.items[0].message.find("out of range"), std::string::npos) << All(big);
  auto limit = Strategy("{backoffLimitCount: 3}");  // Kueue's deactivation: not modelled
  ASSERT_EQ(limit.diagnostics.ErrorCount(), 1u) << All(limit);
  EXPECT_NE(limit.diagnostics.items[0].message.find("unknown field"), std::string::npos)
      << All(limit);
  auto text = Strategy("{backoffBaseSeconds: \"60\"}");
  EXPECT_EQ(text.diagnostics.ErrorCount(), 1u) << All(text);
}

TEST(RequeueBackoffLoaderTest, ValuesThatDoNotBackOffAsMeantAreWarnedAbout) {
  const std::pair<const char*, const char*> cases[] = {
      {"{backoffBaseSeconds: 0}", "every back-off is 0s"},
      {"{backoffMaxSeconds: 0}", "means no cap (as in Kueue)"},
      {"{backoffBaseSeconds: 120, backoffMaxSeconds: 60}",
       "the first back-off is 2m, every later one 1m"},
  };
  for (const auto& [text, want] : cases) {
    auto l = Strategy(text);
    ASSERT_EQ(l.diagnostics.items.size(), 1u) << text << ": " << All(l);
    EXPECT_EQ(l.diagnostics.items[0].severity, Severity::kWarning) << text;
    EXPECT_NE(l.diagnostics.items[0].message.find(want), std::string::npos) << All(l);
  }
}

// The CRD admits what the loader admits: integers from 0 to 2147483647.
TEST(RequeueBackoffLoaderTest, TheCrdBoundsAreTheLoaders) {
  YAML::Node strategy;
  for (const auto& doc :
       YAML::LoadAllFromFile(std::string(ARBITER_SOURCE_DIR) + "/deploy/crds.yaml"))
    if (doc.IsMap() && doc["kind"].as<std::string>("") == "CustomResourceDefinition" &&
        doc["spec"]["names"]["kind"].as<std::string>() == "PoolPolicy")
      strategy = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                    ["properties"]["preemption"]["properties"]["requeuingStrategy"];
  ASSERT_TRUE(strategy.IsMap()) << "no requeuingStrategy in the PoolPolicy CRD";
  for (const char* field : {"backoffBaseSeconds", "backoffMaxSeconds", "immediateRequeues"}) {
    const YAML::Node f = strategy["properties"][field];
    ASSERT_TRUE(f.IsMap()) << field;
    EXPECT_EQ(f["type"].as<std::string>(), "integer") << field;
    const auto lo = f["minimum"].as<int64_t>(), hi = f["maximum"].as<int64_t>();
    auto accepted = [&](int64_t v) {
      return Strategy("{" + std::string(field) + ": " + std::to_string(v) + "}")
                 .diagnostics.ErrorCount() == 0;
    };
    EXPECT_TRUE(accepted(lo)) << field;
    EXPECT_TRUE(accepted(hi)) << field;
    EXPECT_FALSE(accepted(lo - 1)) << field;
    EXPECT_FALSE(accepted(hi + 1)) << field;
  }
}

}  // namespace requeue_backoff_loader_test
}  // namespace arbiter::yaml
