// Pod spec updates as Kubernetes' ValidatePodUpdate allows them (pod_update.h).
#include "server/state/pod_update.h"

#include <gtest/gtest.h>

namespace arbiter::server {
namespace {

using Json = nlohmann::json;

Json Spec() {
  return {{"containers", {{{"name", "main"}, {"image", "busybox:1"}}}},
          {"activeDeadlineSeconds", 600},
          {"tolerations", {{{"key", "gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}};
}

TEST(PodUpdateTest, ImageChangeIsAllowed) {
  Json n = Spec();
  n["containers"][0]["image"] = "busybox:2";
  EXPECT_TRUE(ValidatePodSpecUpdate(Spec(), n).empty());
}

TEST(PodUpdateTest, ActiveDeadlineMayBeLoweredButNotRaisedNorRemoved) {
  Json lower = Spec();
  lower["activeDeadlineSeconds"] = 300;
  EXPECT_TRUE(ValidatePodSpecUpdate(Spec(), lower).empty());
  Json raise = Spec();
  raise["activeDeadlineSeconds"] = 900;
  auto e = ValidatePodSpecUpdate(Spec(), raise);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].field, "spec.activeDeadlineSeconds");
  EXPECT_EQ(e[0].message, "Invalid value: 900: must be less than or equal to previous value");
  Json removed = Spec();
  removed.erase("activeDeadlineSeconds");
  e = ValidatePodSpecUpdate(Spec(), removed);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].message,
            "Invalid value: \"null\": must not update from a positive integer to nil value");
  Json old = Spec();
  old.erase("activeDeadlineSeconds");
  EXPECT_TRUE(ValidatePodSpecUpdate(old, Spec()).empty());  // set where there was none
}

TEST(PodUpdateTest, TolerationsMayOnlyBeAdded) {
  Json added = Spec();
  added["tolerations"].push_back({{"key", "spot"}, {"operator", "Exists"}});
  EXPECT_TRUE(ValidatePodSpecUpdate(Spec(), added).empty());
  Json changed = Spec();
  changed["tolerations"][0]["effect"] = "NoExecute";
  auto e = ValidatePodSpecUpdate(Spec(), changed);
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e[0].field, "spec.tolerations");
  EXPECT_EQ(e[0].message,
            "Forbidden: existing toleration can not be modified except its tolerationSeconds");
}

TEST(PodUpdateTest, OtherSpecChangesAreForbiddenWithKubernetesMessage) {
  Json n = Spec();
  n["containers"][0]["resources"] = {{"requests", {{"cpu", "2"}}}};
  auto e = ValidatePodSpecUpdate(Spec(), n);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].field, "spec");
  EXPECT_EQ(e[0].message.rfind(
                "Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec."
                "activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
                "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
                "was previously negative)",
                0),
            0u)
      << e[0].message;
  EXPECT_NE(e[0].message.find("spec.containers: changed"), std::string::npos) << e[0].message;
}

TEST(PodUpdateTest, SchedulingGatesMayBeRemovedNotAdded) {
  Json old = Spec();
  old["schedulingGates"] = {{{"name", "a"}}, {{"name", "b"}}};
  Json fewer = old;
  fewer["schedulingGates"] = {{{"name", "b"}}};
  EXPECT_TRUE(ValidatePodSpecUpdate(old, fewer).empty());
  Json none = old;
  none.erase("schedulingGates");
  EXPECT_TRUE(ValidatePodSpecUpdate(old, none).empty());
  Json more = old;
  more["schedulingGates"].push_back({{"name", "c"}});
  EXPECT_FALSE(ValidatePodSpecUpdate(old, more).empty());
}

TEST(PodUpdateTest, TerminationGracePeriodMayGoFromNegativeToOneOnly) {
  Json old = Spec();
  old["terminationGracePeriodSeconds"] = -1;
  Json one = old;
  one["terminationGracePeriodSeconds"] = 1;
  EXPECT_TRUE(ValidatePodSpecUpdate(old, one).empty());
  Json two = old;
  two["terminationGracePeriodSeconds"] = 2;
  EXPECT_FALSE(ValidatePodSpecUpdate(old, two).empty());
}

}  // namespace
}  // namespace arbiter::server
