// What kube-apiserver writes into a pod's resources (server/state/pod_defaults.h): SetDefaults_Pod
// and LimitRanger's mutation, with kube's annotation.
#include "server/state/pod_defaults.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "core/objects.h"
#include "core/resources.h"

namespace arbiter::server {
namespace pod_defaults_test {

using Json = nlohmann::json;

ResourceList Quantities(std::initializer_list<std::pair<const char*, const char*>> items) {
  ResourceList l;
  for (const auto& [r, text] : items) l.Set(r, ParseResourceQuantity(r, text).value());
  return l;
}

Json PodOf(Json containers, Json init = Json()) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"containers", std::move(containers)}}}};
  if (!init.is_null()) pod["spec"]["initContainers"] = std::move(init);
  return pod;
}

TEST(PodDefaultsTest, ALimitWithoutARequestIsRequested) {
  Json pod = PodOf(
      {{{"name", "a"}, {"resources", {{"limits", {{"cpu", "1.5"}, {"memory", "1G"}}}}}},
       {{"name", "b"}, {"resources", {{"limits", {{"cpu", "2"}}}, {"requests", {{"cpu", "1"}}}}}}},
      {{{"name", "init"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}});
  EXPECT_TRUE(DefaultRequestsFromLimits(pod));
  const Json& c = pod["spec"]["containers"];
  EXPECT_EQ(c[0]["resources"]["requests"], Json({{"cpu", "1.5"}, {"memory", "1G"}}));  // as sent
  EXPECT_EQ(c[1]["resources"]["requests"], Json({{"cpu", "1"}}));  // its own request kept
  EXPECT_EQ(pod["spec"]["initContainers"][0]["resources"]["requests"],
            Json({{"nvidia.com/gpu", "1"}}));
  EXPECT_FALSE(DefaultRequestsFromLimits(pod));  // nothing more to do
  Json bare = PodOf({{{"name", "a"}}});
  EXPECT_FALSE(DefaultRequestsFromLimits(bare));
  EXPECT_EQ(bare, PodOf({{{"name", "a"}}}));
}

TEST(PodDefaultsTest, EachLimitRangeFillsWhatIsUnsetAndTheLastToSetAnythingWritesTheAnnotation) {
  LimitRange first;  // (name order: the engine's)
  first.meta.name = "a-first";
  LimitRangeItem item;
  item.default_limit = Quantities({{"cpu", "500m"}, {"memory", "256Mi"}});
  item.default_request = Quantities({{"cpu", "250m"}});
  first.limits.push_back(item);
  LimitRangeItem pod_item;  // a Pod item defaults nothing
  pod_item.type = LimitType::kPod;
  pod_item.max = Quantities({{"cpu", "64"}});
  first.limits.push_back(pod_item);
  LimitRange second;
  second.meta.name = "b-second";
  LimitRangeItem gpu;
  gpu.max =
      Quantities({{"nvidia.com/gpu", "2"}, {"cpu", "8"}});  // default <- max, request <- default
  second.limits.push_back(gpu);
  LimitRange empty;
  empty.meta.name = "c-empty";
  Json pod = PodOf({{{"name", "app"}, {"resources", {{"requests", {{"memory", "128Mi"}}}}}}},
                   {{{"name", "setup"}}});
  ASSERT_TRUE(ApplyLimitRangeDefaults(pod, {&first, &second, &empty}));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
            Json({{"limits", {{"cpu", "500m"}, {"memory", "256Mi"}, {"nvidia.com/gpu", "2"}}},
                  {"requests", {{"cpu", "250m"}, {"memory", "128Mi"}, {"nvidia.com/gpu", "2"}}}}));
  EXPECT_EQ(pod["spec"]["initContainers"][0]["resources"],
            Json({{"limits", {{"cpu", "500m"}, {"memory", "256Mi"}, {"nvidia.com/gpu", "2"}}},
                  {"requests", {{"cpu", "250m"}, {"memory", "256Mi"}, {"nvidia.com/gpu", "2"}}}}));
  // kube writes the annotation at each LimitRange that set something: b-second's is kept.
  EXPECT_EQ(pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
            "LimitRanger plugin set: nvidia.com/gpu request for container app; nvidia.com/gpu "
            "limit for container app; nvidia.com/gpu request for init container setup; "
            "nvidia.com/gpu limit for init container setup");
  Json again = pod;
  EXPECT_FALSE(ApplyLimitRangeDefaults(again, {&first, &second}));  // all set already
  EXPECT_EQ(again, pod);
  Json alone = PodOf({{{"name", "app"}}});
  ASSERT_TRUE(ApplyLimitRangeDefaults(alone, {&first}));
  EXPECT_EQ(alone["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
            "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit "
            "for container app");
}

TEST(PodDefaultsTest, ShapesValidationRefusesAreLeftAlone) {
  LimitRange lr;
  LimitRangeItem item;
  item.default_limit = Quantities({{"cpu", "1"}});
  lr.limits.push_back(item);
  for (Json pod :
       {Json(nullptr), Json::array(), Json({{"spec", 3}}), Json({{"spec", {{"containers", "x"}}}}),
        PodOf({1, "x", nullptr}), PodOf({{{"name", "a"}, {"resources", "x"}}}),
        PodOf({{{"name", "a"}, {"resources", {{"limits", 7}}}}})}) {
    SCOPED_TRACE(pod.dump());
    const Json before = pod;
    EXPECT_FALSE(ApplyLimitRangeDefaults(pod, {&lr}));
    EXPECT_FALSE(DefaultRequestsFromLimits(pod));
    EXPECT_EQ(pod, before);
  }
}

}  // namespace pod_defaults_test
}  // namespace arbiter::server
