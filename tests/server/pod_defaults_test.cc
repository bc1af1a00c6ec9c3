// What kube-apiserver writes into a pod's resources (server/state/pod_defaults.h): SetDefaults_Pod
// and LimitRanger's mutation, with kube's annotation.
#include "server/state/pod_defaults.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace arbiter::server {
namespace pod_defaults_test {

using Json = nlohmann::json;

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

// A LimitRange object as stored: its spec.limits items.
Json Range(const std::string& name, Json items) {
  return {{"apiVersion", "v1"},
          {"kind", "LimitRange"},
          {"metadata", {{"name", name}}},
          {"spec", {{"limits", std::move(items)}}}};
}

TEST(PodDefaultsTest, EachLimitRangeFillsWhatIsUnsetAndTheLastToSetAnythingWritesTheAnnotation) {
  // (name order: the engine's; a Pod item defaults nothing)
  const Json first = Range("a-first", {{{"type", "Container"},
                                        {"default", {{"cpu", "500m"}, {"memory", "512M"}}},
                                        {"defaultRequest", {{"cpu", "250m"}}}},
                                       {{"type", "Pod"}, {"max", {{"cpu", "64"}}}}});
  // default <- max, defaultRequest <- default; a number as its text
  const Json second =
      Range("b-second", {{{"type", "Container"}, {"max", {{"nvidia.com/gpu", 2}, {"cpu", "8"}}}}});
  const Json empty = Range("c-empty", Json::array());
  Json pod = PodOf({{{"name", "app"}, {"resources", {{"requests", {{"memory", "128Mi"}}}}}}},
                   {{{"name", "setup"}}});
  ASSERT_TRUE(ApplyLimitRangeDefaults(pod, {&first, &second, &empty}));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"],
            Json({{"limits", {{"cpu", "500m"}, {"memory", "512M"}, {"nvidia.com/gpu", "2"}}},
                  {"requests", {{"cpu", "250m"}, {"memory", "128Mi"}, {"nvidia.com/gpu", "2"}}}}));
  EXPECT_EQ(pod["spec"]["initContainers"][0]["resources"],
            Json({{"limits", {{"cpu", "500m"}, {"memory", "512M"}, {"nvidia.com/gpu", "2"}}},
                  {"requests", {{"cpu", "250m"}, {"memory", "512M"}, {"nvidia.com/gpu", "2"}}}}));
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
  const Json lr = Range("r", {{{"type", "Container"}, {"default", {{"cpu", "1"}}}}});
  for (const Json& odd : {Json(nullptr), Json(3), Json({{"spec", 3}}), Range("x", 3),
                          Range("y", {1, {{"type", "Container"}, {"default", 3}}})}) {
    Json pod = PodOf({{{"name", "a"}}});  // a LimitRange of an odd shape sets nothing
    EXPECT_FALSE(ApplyLimitRangeDefaults(pod, {&odd})) << odd.dump();
  }
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
