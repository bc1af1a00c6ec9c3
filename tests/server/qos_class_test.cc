// Kubernetes' QoS class of a pod spec (server/state/pod_status.h QosClass), case by case as
// GetPodQOS decides it: each row is a spec and the class kube-apiserver reports for it. And
// KubeTime, which formats each second once per thread.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/duration.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace qos_class_test {

using Json = nlohmann::json;

Json Container(Json requests, Json limits) {
  Json resources = Json::object();
  if (!requests.is_null()) resources["requests"] = std::move(requests);
  if (!limits.is_null()) resources["limits"] = std::move(limits);
  return Json{{"name", "c"}, {"resources", resources}};
}

TEST(QosClass, AsKubernetesDecidesIt) {
  const Json none;
  const Json both = {{"cpu", "1"}, {"memory", "1Gi"}};
  struct Row {
    const char* what;
    Json spec;
    const char* want;
  } rows[] = {
      {"no containers", Json::object(), "BestEffort"},
      {"no resources", {{"containers", {Json{{"name", "c"}}}}}, "BestEffort"},
      {"only a GPU limit (not cpu or memory)",
       {{"containers", {Container(none, {{"nvidia.com/gpu", "1"}})}}},
       "BestEffort"},
      {"requests equal to limits", {{"containers", {Container(both, both)}}}, "Guaranteed"},
      {"limits alone (requests default to them)",
       {{"containers", {Container(none, both)}}},
       "Guaranteed"},
      {"a request below its limit",
       {{"containers", {Container({{"cpu", "500m"}, {"memory", "1Gi"}}, both)}}},
       "Burstable"},
      {"cpu limited, memory not", {{"containers", {Container(none, {{"cpu", "1"}})}}}, "Burstable"},
      {"requests alone", {{"containers", {Container(both, none)}}}, "Burstable"},
      {"one guaranteed container and one best-effort",
       {{"containers", {Container(none, both), Json{{"name", "d"}}}}},
       "Burstable"},
      {"an init container that is not guaranteed",
       {{"initContainers", {Container(both, none)}}, {"containers", {Container(none, both)}}},
       "Burstable"},
      {"two guaranteed containers",
       {{"containers", {Container(none, both), Container(both, both)}}},
       "Guaranteed"},
      {"a quantity that is not a string",
       {{"containers", {Container(none, {{"cpu", 1}, {"memory", "1Gi"}})}}},
       "Guaranteed"},
      {"a null request", {{"containers", {Container({{"cpu", nullptr}}, none)}}}, "BestEffort"},
      {"containers that are not a list", {{"containers", "x"}}, "BestEffort"},
      {"a spec that is not an object", Json("x"), "BestEffort"},
  };
  for (const Row& r : rows) EXPECT_EQ(QosClass(r.spec), r.want) << r.what << ": " << r.spec.dump();
}

// The second formatted last is kept per thread: times that come back to a second, or stay in
// it, read as FormatRfc3339 of their whole second.
TEST(KubeTime, IsTheWholeSecondWhicheverCameBefore) {
  const Millis t = 1'780'000'000'000;  // 2026-05-28T...
  for (const Millis at : {t, t + 1000, t + 1, t + 999, t + 1500, t, t - 1000})
    EXPECT_EQ(KubeTime(at), FormatRfc3339(at / 1000 * 1000)) << at;
}

}  // namespace qos_class_test
}  // namespace arbiter::server
