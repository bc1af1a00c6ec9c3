// PoolPolicy spec.preemption.victimOrder (issue 29): OldestFirst, YoungestFirst, LeastLostWork;
// unknown values refused with the allowed ones listed; YoungestFirst outside type QoS warned about.
#include <gtest/gtest.h>

#include "adapters/yaml/manifest_loader.h"
#include "core/validation.h"

namespace arbiter::yaml {
namespace victim_order_loader_test {

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

std::string Policy(const std::string& preemption) {
  return "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
         "spec:\n  preemption: " +
         preemption + "\n";
}

TEST(VictimOrderLoaderTest, ReadsEachOrder) {
  const std::pair<const char*, VictimOrder> cases[] = {
      {"{type: QoS, victimOrder: OldestFirst}", VictimOrder::kDefault},
      {"{type: QoS, victimOrder: YoungestFirst}", VictimOrder::kYoungestFirst},
      {"{type: QoS, victimOrder: LeastLostWork}", VictimOrder::kLeastLostWork},
      {"{type: Priority, victimOrder: LeastLostWork}", VictimOrder::kLeastLostWork},
      {"{type: Priority}", VictimOrder::kDefault},
  };
  for (const auto& [text, want] : cases) {
    auto l = LoadAndValidate(Policy(text));
    ASSERT_TRUE(l.set.pool_policy.has_value()) << text;
    EXPECT_EQ(l.set.pool_policy->victim_order, want) << text;
    for (const auto& d : l.diagnostics.items)  // a QoS policy without QoS objects is warned about
      EXPECT_EQ(d.field_path, "spec.preemption.type") << text << ": " << All(l);
  }
}

TEST(VictimOrderLoaderTest, AnUnknownOrderIsAnErrorListingTheAllowed) {
  auto l = LoadAndValidate(Policy("{victimOrder: LeastLostWrok}"));
  ASSERT_EQ(l.diagnostics.ErrorCount(), 1u) << All(l);
  const Diagnostic& d = l.diagnostics.items[0];
  EXPECT_EQ(d.field_path, "spec.preemption.victimOrder");
  EXPECT_EQ(d.line, 5);
  EXPECT_EQ(
      d.message,
      "unknown value \"LeastLostWrok\" (allowed: OldestFirst | YoungestFirst | LeastLostWork)")
      << All(l);
  auto lower = LoadAndValidate(Policy("{victimOrder: leastlostwork}"));  // exact spelling only
  EXPECT_EQ(lower.diagnostics.ErrorCount(), 1u) << All(lower);
  auto number = LoadAndValidate(Policy("{victimOrder: 2}"));
  EXPECT_EQ(number.diagnostics.ErrorCount(), 1u) << All(number);
}

TEST(VictimOrderLoaderTest, YoungestFirstUnderPriorityIsWarnedAbout) {
  auto l = LoadAndValidate(Policy("{type: Priority, victimOrder: YoungestFirst}"));
  ASSERT_EQ(l.diagnostics.items.size(), 1u) << All(l);
  const Diagnostic& d = l.diagnostics.items[0];
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_EQ(d.field_path, "spec.preemption.victimOrder");
  EXPECT_NE(d.message.find("applies under preemption type QoS only"), std::string::npos) << All(l);
}

}  // namespace victim_order_loader_test
}  // namespace arbiter::yaml
