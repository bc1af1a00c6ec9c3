// Regression: a finished pod's object was removed without telling the engine, so `count/pods`
// kept counting it. In process: a snapshot round trip between the pod's end and its deletion, and
// the deletion of its namespace (a namespace made again with the same name, and a count/pods
// quota, counted the old pod). The kubectl version is serve_pod_delete_quota_test.cc.
#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace finished_pod_delete_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::Delete;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::PodIn;

Json CountQuota(const std::string& ns, int pods) {
  return {{"apiVersion", "v1"},
          {"kind", "ResourceQuota"},
          {"metadata", {{"name", "objects"}, {"namespace", ns}}},
          {"spec", {{"hard", {{"count/pods", std::to_string(pods)}}}}}};
}

std::string CountPods(const Cluster& c, const std::string& ns) {
  const Json* q = c.store().Get("ResourceQuota", ns, "objects");
  if (!q) return "<no quota>";
  return q->value("/status/used"_json_pointer, Json::object()).value("count/pods", "<none>");
}

std::string Phase(const Cluster& c, const std::string& ns, const std::string& pod) {
  const Json* p = c.store().Get("Pod", ns, pod);
  return p ? p->at("status").value("phase", "") : "<gone>";
}

// One node, namespace `ns` with count/pods: 1, and pod "done" there that has Succeeded.
void OneFinishedPod(Cluster& c, const std::string& ns) {
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Ok(c, Create(kT0, Namespace(ns)));
  Ok(c, Create(kT0, CountQuota(ns, 1)));
  Ok(c, Create(kT0 + 1, PodIn(ns, "done", 1, "1s")));
  Ok(c, Advance(kT0 + 5000));
  ASSERT_EQ(Phase(c, ns, "done"), "Succeeded");
  ASSERT_EQ(CountPods(c, ns), "1");
}

TEST(FinishedPodDelete, DeletingItAfterASnapshotRestoreFreesItsCountPods) {
  Cluster before("0000abcd");
  OneFinishedPod(before, "team");
  Cluster c("0000abcd");
  ASSERT_TRUE(c.Restore(before.Snapshot()).ok());
  ASSERT_EQ(CountPods(c, "team"), "1");
  Ok(c, Delete(kT0 + 6000, "Pod", "team", "done"));
  EXPECT_EQ(CountPods(c, "team"), "0");
  Ok(c, Create(kT0 + 7000, PodIn("team", "next", 1)));
  EXPECT_EQ(Phase(c, "team", "next"), "Running");
  EXPECT_EQ(CountPods(c, "team"), "1");
}

TEST(FinishedPodDelete, DeletingItsNamespaceForgetsItToo) {
  Cluster c("0000abcd");
  OneFinishedPod(c, "team");
  Ok(c, Delete(kT0 + 6000, "Namespace", "", "team"));
  EXPECT_EQ(Phase(c, "team", "done"), "<gone>");
  Ok(c, Create(kT0 + 7000, Namespace("team")));
  Ok(c, Create(kT0 + 7000, CountQuota("team", 1)));
  EXPECT_EQ(CountPods(c, "team"), "0");
  Ok(c, Create(kT0 + 8000, PodIn("team", "next", 1)));
  EXPECT_EQ(Phase(c, "team", "next"), "Running");
}

}  // namespace finished_pod_delete_test
}  // namespace arbiter::server
