// A terminating pod deleted again, as kube-apiserver answers it (rest.BeforeDelete): a shorter
// gracePeriodSeconds moves metadata.deletionTimestamp (when the grace period ends) and the
// virtual kubelet kills the pod then; a longer one, or none, changes nothing. Since journal format
// 7; records of formats 1-6 replay as those releases answered (the second delete changed nothing
// but the timestamp, the delete's instant). Found by a new-user trial: `kubectl delete pod
// --grace-period=0 --force` after an ordinary delete waited the pod's whole shutdown.
#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace pod_delete_again_test {

using fixtures::Create;
using fixtures::kT0;
using fixtures::Ok;
using fixtures::RunUntil;

constexpr Millis kS = 1000;

// A running pod on gpu-0 that takes 10 minutes to shut down, with a 60 s grace period.
void SlowToStop(Cluster& c) {
  Ok(c, Create(kT0, fixtures::Namespace("team")));
  Ok(c, Create(kT0, fixtures::Node("gpu-0", 8)));
  Json pod = fixtures::PodIn("team", "p", 1, "1h");
  pod["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "10m";
  pod["spec"]["terminationGracePeriodSeconds"] = 60;
  Ok(c, Create(kT0, pod));
  ASSERT_EQ(c.store().Get("Pod", "team", "p")->at("status").value("phase", ""), "Running");
}

Mutation DeletePod(Millis t, std::optional<int64_t> grace_seconds) {
  Mutation m = fixtures::Delete(t, "Pod", "team", "p");
  if (grace_seconds) m.grace_period = *grace_seconds * kS;
  return m;
}

const Json* Pod(const Cluster& c) { return c.store().Get("Pod", "team", "p"); }

std::string Stamp(const Cluster& c) {
  return Pod(c)->at("metadata").value("deletionTimestamp", "");
}
// The pod is still there at `still` and gone at `gone` (the daemon's clock run to each).
void ExpectGoneBetween(Cluster& c, Millis still, Millis gone) {
  RunUntil(c, still);
  ASSERT_NE(Pod(c), nullptr);
  RunUntil(c, gone);
  EXPECT_EQ(Pod(c), nullptr);
}

int64_t Grace(const Cluster& c) {
  return Pod(c)->at("metadata").value("deletionGracePeriodSeconds", int64_t{-1});
}

// The first delete's deletionTimestamp is when its grace ends; a second with a shorter grace
// moves it back by the old grace and forward by the new one (from the first delete, as kube), and
// the pod is gone then, not 60 s after the first.
TEST(PodDeleteAgain, AShorterGracePeriodEndsTheShutdownSooner) {
  Cluster c("0000abcd");
  SlowToStop(c);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 70 * kS));
  EXPECT_EQ(Grace(c), 60);
  Ok(c, DeletePod(kT0 + 15 * kS, 20));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 30 * kS));
  EXPECT_EQ(Grace(c), 20);
  ExpectGoneBetween(c, kT0 + 29 * kS, kT0 + 31 * kS);
}

// `kubectl delete --grace-period=0 --force` after an ordinary delete: grace 0, the pod goes at
// the next instant the daemon advances to.
TEST(PodDeleteAgain, ForceAfterAnOrdinaryDeleteKillsAtOnce) {
  Cluster c("0000abcd");
  SlowToStop(c);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  Ok(c, DeletePod(kT0 + 12 * kS, 0));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 12 * kS));
  EXPECT_EQ(Grace(c), 0);
  RunUntil(c, kT0 + 12 * kS + 1);
  EXPECT_EQ(Pod(c), nullptr);
}

// A shorter grace that would have ended already: now, with kube's shortest graceful period (1).
TEST(PodDeleteAgain, AGraceThatHasPassedEndsNowWithOneSecond) {
  Cluster c("0000abcd");
  SlowToStop(c);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  Ok(c, DeletePod(kT0 + 40 * kS, 5));  // 10 s + 5 s is past
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 40 * kS));
  EXPECT_EQ(Grace(c), 1);
  RunUntil(c, kT0 + 40 * kS + 1);
  EXPECT_EQ(Pod(c), nullptr);
}

// A grace no shorter, or none, changes nothing: the same object (resourceVersion) and the pod
// still goes at the first delete's end.
TEST(PodDeleteAgain, ALongerGraceOrNoneChangesNothing) {
  Cluster c("0000abcd");
  SlowToStop(c);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  const Json before = *Pod(c);
  Ok(c, DeletePod(kT0 + 15 * kS, 600));
  Ok(c, DeletePod(kT0 + 16 * kS, std::nullopt));
  Ok(c, DeletePod(kT0 + 17 * kS, 60));
  EXPECT_EQ(*Pod(c), before);
  ExpectGoneBetween(c, kT0 + 69 * kS, kT0 + 71 * kS);
}

// A record of formats 1-6 replays as its release answered: the deletionTimestamp is the delete's
// instant, and a second delete's shorter grace leaves the shutdown as it was.
TEST(PodDeleteAgain, FormatSixRecordsReplayAsTheyWereAnswered) {
  Cluster c("0000abcd");
  SlowToStop(c);
  c.SetRecordFormat(6);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 10 * kS));
  Ok(c, DeletePod(kT0 + 12 * kS, 0));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 12 * kS));
  c.SetRecordFormat(7);
  ExpectGoneBetween(c, kT0 + 69 * kS, kT0 + 71 * kS);
}

// Found by a review: a pod deleted by a format-6 record stored the delete's instant as its
// deletionTimestamp; a shorter delete after the upgrade counted the grace back from there and
// killed it at once. The grace counts from its SIGTERM: 10 s + 30 s.
TEST(PodDeleteAgain, AShorterGraceAfterTheUpgradeCountsFromTheSigterm) {
  Cluster c("0000abcd");
  SlowToStop(c);
  c.SetRecordFormat(6);
  Ok(c, DeletePod(kT0 + 10 * kS, std::nullopt));
  c.SetRecordFormat(7);
  Ok(c, DeletePod(kT0 + 15 * kS, 30));
  EXPECT_EQ(Stamp(c), KubeTime(kT0 + 40 * kS));
  EXPECT_EQ(Grace(c), 30);
  ExpectGoneBetween(c, kT0 + 39 * kS, kT0 + 41 * kS);
}

// Found by a review: deleting the namespace of a pod deleted already rewrote its timestamp and
// grace (the pod's own 60 s from now), so a later shorter delete computed a false end. kube's
// namespace controller leaves a terminating pod as it is.
TEST(PodDeleteAgain, ANamespaceDeleteLeavesATerminatingPodAsItIs) {
  Cluster c("0000abcd");
  SlowToStop(c);
  Ok(c, DeletePod(kT0 + 10 * kS, 20));
  const Json before = *Pod(c);
  Ok(c, fixtures::Delete(kT0 + 12 * kS, "Namespace", "", "team"));
  EXPECT_EQ(Pod(c)->at("metadata"), before.at("metadata"));
  ExpectGoneBetween(c, kT0 + 29 * kS, kT0 + 31 * kS);
}

}  // namespace pod_delete_again_test
}  // namespace arbiter::server
