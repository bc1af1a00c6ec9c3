// Admission functions (issue 3): Kubernetes LimitRanger over several LimitRanges (all defaults,
// then all checks) and ResourceQuota's per-container "must specify".
#include "core/engine/admission.h"

#include <gtest/gtest.h>

namespace arbiter::engine {
namespace {

Container C(std::string name, ResourceList requests = {}, ResourceList limits = {}) {
  Container c;
  c.name = std::move(name);
  c.requests = std::move(requests);
  c.limits = std::move(limits);
  return c;
}

LimitRange Range(std::string name, std::vector<LimitRangeItem> items) {
  LimitRange lr;
  lr.meta.name = std::move(name);
  lr.meta.namespace_ = "dev";
  lr.limits = std::move(items);
  return lr;
}

constexpr int64_t kGi = int64_t{1} << 30;

TEST(LimitRanger, EarlierLimitRangeWinsForAFieldAlreadySet) {
  LimitRangeItem a;
  a.default_limit = {{"cpu", 2000}};
  a.default_request = {{"cpu", 1000}};
  LimitRangeItem b;
  b.default_limit = {{"cpu", 4000}, {"memory", 4 * kGi}};
  b.default_request = {{"cpu", 3000}};
  LimitRange first = Range("a", {a}), second = Range("b", {b});
  Pod pod;
  pod.containers = {C("app")};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&first, &second}, &out), "");
  EXPECT_EQ(out.containers[0].limits.Get("cpu"), 2000);
  EXPECT_EQ(out.containers[0].requests.Get("cpu"), 1000);
  // b still fills what a left unset; memory's request defaults to b's default limit.
  EXPECT_EQ(out.containers[0].limits.Get("memory"), 4 * kGi);
  EXPECT_EQ(out.containers[0].requests.Get("memory"), 4 * kGi);
}

TEST(LimitRanger, ChecksRunAfterAllDefaults) {
  LimitRangeItem ratio;
  ratio.max_limit_request_ratio_milli = {{"cpu", 2000}};
  LimitRangeItem defaults;
  defaults.default_limit = {{"cpu", 2000}};
  defaults.default_request = {{"cpu", 1000}};
  LimitRange checks = Range("a-checks", {ratio}), defs = Range("b-defaults", {defaults});
  Pod pod;
  pod.containers = {C("app")};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&checks, &defs}, &out), "");
  EXPECT_EQ(out.requests.Get("cpu"), 1000);
  EXPECT_EQ(out.limits.Get("cpu"), 2000);
}

// limitRequestRatioConstraint prints the observed ratio with Go's %f: float64(limit) /
// float64(request) in milli-units, six decimals (`8.000000`, `2.666667`), not a fraction.
TEST(LimitRanger, RatioPrintedAsKubernetesFloat) {
  LimitRangeItem item;
  item.max_limit_request_ratio_milli = {{"cpu", 2000}, {"memory", 1500}};
  LimitRange lr = Range("r", {item});
  Pod pod;
  pod.containers = {C("app", {{"cpu", 500}, {"memory", 768 * (kGi >> 10)}},
                      {{"cpu", 4000}, {"memory", 2 * kGi}})};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out),
            "LimitRange dev/r: [cpu max limit to request ratio per Container is 2, but provided "
            "ratio is 8.000000, memory max limit to request ratio per Container is 1500m, but "
            "provided ratio is 2.666667]");
  pod.containers = {C("app", {{"cpu", 400}}, {{"cpu", 1000}})};
  item.max_limit_request_ratio_milli = {{"cpu", 2000}};
  lr = Range("r", {item});
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out),
            "LimitRange dev/r: cpu max limit to request ratio per Container is 2, but provided "
            "ratio is 2.500000");
}

TEST(LimitRanger, LaterContainerItemOverridesEarlierInOneLimitRange) {
  LimitRangeItem first, second;
  first.default_limit = {{"cpu", 1000}};
  second.default_limit = {{"cpu", 3000}};
  LimitRange lr = Range("one", {first, second});
  Pod pod;
  pod.containers = {C("app")};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out), "");
  EXPECT_EQ(out.containers[0].limits.Get("cpu"), 3000);
}

TEST(LimitRanger, FirstFailingLimitRangeReportsAllItsViolations) {
  LimitRangeItem item;
  item.max = {{"memory", 2 * kGi}};
  item.min = {{"cpu", 500}};
  LimitRange a = Range("a", {item});
  LimitRangeItem other;
  other.max = {{"cpu", 100}};
  LimitRange b = Range("b", {other});
  Pod pod;
  pod.containers = {C("app", {{"cpu", 100}}, {{"memory", 4 * kGi}}),
                    C("side", {{"cpu", 100}}, {{"memory", 4 * kGi}})};
  AdmittedPod out;
  // Both containers break both rules the same way: de-duplicated, in item order (min, max).
  EXPECT_EQ(ApplyLimitRanges(pod, {&a, &b}, &out),
            "LimitRange dev/a: [minimum cpu usage per Container is 500m, but request is 100m, "
            "maximum memory usage per Container is 2Gi, but limit is 4Gi]");
}

TEST(LimitRanger, KubernetesWordingForMissingValues) {
  LimitRangeItem pod_item;
  pod_item.type = LimitType::kPod;
  pod_item.min = {{"memory", kGi}};
  pod_item.max = {{"cpu", 8000}};
  LimitRange lr = Range("pod", {pod_item});
  Pod pod;
  pod.containers = {C("app", {{"cpu", 1000}})};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out),
            "LimitRange dev/pod: [minimum memory usage per Pod is 1Gi.  No request is specified, "
            "maximum cpu usage per Pod is 8.  No limit is specified]");
}

TEST(LimitRanger, InitContainersAreDefaultedAndChecked) {
  LimitRangeItem item;
  item.max = {{"cpu", 2000}};
  LimitRange lr = Range("bounds", {item});
  Pod pod;
  pod.containers = {C("app")};
  pod.init_containers = {C("setup", {}, {{"cpu", 4000}})};
  AdmittedPod out;
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out),
            "LimitRange dev/bounds: maximum cpu usage per Container is 2, but limit is 4");
  pod.init_containers = {C("setup")};
  EXPECT_EQ(ApplyLimitRanges(pod, {&lr}, &out), "");
  EXPECT_EQ(out.init_containers[0].limits.Get("cpu"), 2000);
}

ResourceQuota Quota(std::vector<std::pair<std::string, QuotaTrack>> keys) {
  ResourceQuota q;
  q.meta.name = "compute";
  for (auto& [key, track] : keys) {
    QuotaItem item;
    item.key = key;
    item.track = track;
    item.resource = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
    item.hard = 1 << 20;
    q.hard.push_back(item);
  }
  return q;
}

TEST(QuotaConstraints, NamesEachContainerMissingATrackedValue) {
  ResourceQuota q = Quota({{"limits.cpu", QuotaTrack::kLimits},
                           {"memory", QuotaTrack::kRequests},
                           {"requests.nvidia.com/gpu", QuotaTrack::kRequests}});
  AdmittedPod pod;
  pod.containers = {C("b-app", {{"cpu", 1000}, {"memory", kGi}}, {{"cpu", 1000}}),
                    C("a-side", {{"cpu", 1}})};
  pod.init_containers = {C("init")};
  EXPECT_EQ(
      QuotaContainerConstraints(q, pod).value_or(""),
      "failed quota: compute: must specify limits.cpu for: a-side,init; memory for: a-side,init");
}

TEST(QuotaConstraints, TotalsDoNotCountOnlyEachContainer) {
  ResourceQuota q = Quota({{"requests.cpu", QuotaTrack::kRequests}});
  AdmittedPod pod;
  pod.containers = {C("app", {{"cpu", 1000}})};
  EXPECT_FALSE(QuotaContainerConstraints(q, pod).has_value());
  pod.containers.push_back(C("side"));
  pod.requests = {{"cpu", 1000}};  // the pod total has a request; the sidecar does not
  EXPECT_EQ(QuotaContainerConstraints(q, pod).value_or(""),
            "failed quota: compute: must specify requests.cpu for: side");
}

TEST(QuotaConstraints, ExtendedResourcesAndCountsAreNotRequired) {
  ResourceQuota q =
      Quota({{"requests.nvidia.com/gpu", QuotaTrack::kRequests}, {"pods", QuotaTrack::kCount}});
  AdmittedPod pod;
  pod.containers = {C("app")};
  EXPECT_FALSE(QuotaContainerConstraints(q, pod).has_value());
}

}  // namespace
}  // namespace arbiter::engine
