// A namespace deleted while some of its pods still terminate stays, Terminating, until the last
// of them is gone, as kube's namespace controller keeps it; no new object may be created in it
// meanwhile (kube-apiserver's NamespaceLifecycle admission). Journal format 6 (formats 1-5 removed
// it at once: Cluster::SetFormat5Rules).
#include <gtest/gtest.h>

#include "adapters/kube/resources.h"
#include "cluster_fixtures.h"
#include "server/state/api_status.h"
#include "server/state/cluster.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace namespace_termination_test {

using fixtures::Advance;
using fixtures::Create;
using fixtures::Delete;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::PodIn;

// Namespace team with pod `slow` running (it takes 20 s to exit once deleted) on node gpu-0.
void TeamWithASlowPod(Cluster& c) {
  Ok(c, Create(kT0, Namespace("team")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Json slow = PodIn("team", "slow", 1, "1h");
  slow["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "20s";
  Ok(c, Create(kT0 + 1000, slow));
}

const Json* Ns(const Cluster& c) { return c.store().Get("Namespace", "", "team"); }

TEST(NamespaceTermination, ItStaysTerminatingUntilItsLastPodIsGoneAndRefusesNewContent) {
  Cluster c("0000abcd");
  TeamWithASlowPod(c);
  Ok(c, Delete(kT0 + 2000, "Namespace", "", "team"));
  ASSERT_NE(Ns(c), nullptr);
  EXPECT_EQ(Ns(c)->at("status").value("phase", ""), "Terminating");
  EXPECT_EQ(Ns(c)->at("metadata").value("deletionTimestamp", ""), KubeTime(kT0 + 2000));
  ASSERT_NE(c.store().Get("Pod", "team", "slow"), nullptr);
  EXPECT_TRUE(c.store().Get("Pod", "team", "slow")->at("metadata").contains("deletionTimestamp"));

  // New content is refused, in kube-apiserver's words; the namespace cannot be created again.
  MutationResult r = c.Apply(Create(kT0 + 3000, PodIn("team", "next", 1)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kForbidden);
  EXPECT_EQ(r.error->message,
            "unable to create new content in namespace team because it is being terminated");
  EXPECT_EQ(r.error->cause, "namespace team is being terminated");
  const kube::KubeStatus st =
      ToKube(*r.error, *kube::FindResourceByKind("v1", "Pod"), "team", "next");
  EXPECT_EQ(st.code, 403);
  EXPECT_EQ(st.Message(),
            "pods \"next\" is forbidden: unable to create new content in namespace team because it "
            "is being terminated");
  EXPECT_EQ(st.body["details"]["causes"],
            Json::parse(R"([{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                             "message": "namespace team is being terminated"}])"));
  r = c.Apply(Create(kT0 + 3000, Namespace("team")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->reason, ApiError::Reason::kAlreadyExists);

  // A second delete answers the namespace as it is; an update keeps it terminating.
  const std::string rv = Ns(c)->at("metadata").value("resourceVersion", "");
  r = c.Apply(Delete(kT0 + 4000, "Namespace", "", "team"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ns(c)->at("metadata").value("resourceVersion", ""), rv);
  Json labelled = *Ns(c);
  labelled["metadata"].erase("deletionTimestamp");
  labelled["metadata"]["labels"]["team"] = "x";
  Ok(c, fixtures::Update(kT0 + 4000, labelled));
  EXPECT_EQ(Ns(c)->at("metadata").value("deletionTimestamp", ""), KubeTime(kT0 + 2000));

  // A snapshot taken now restores a terminating namespace, which goes with its pod.
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  for (Cluster* x : {&c, &restored}) {
    Ok(*x, Advance(kT0 + 21000));  // (the pod exits 20 s after its delete, at kT0 + 22000)
    EXPECT_NE(x->store().Get("Namespace", "", "team"), nullptr);
    Ok(*x, Advance(kT0 + 23000));
    EXPECT_EQ(x->store().Get("Pod", "team", "slow"), nullptr);
    EXPECT_EQ(x->store().Get("Namespace", "", "team"), nullptr);
    EXPECT_TRUE(x->store().List("Event", "team").empty());  // its pod's events went with it
    Ok(*x, Create(kT0 + 24000, Namespace("team")));
    Ok(*x, Create(kT0 + 24000, PodIn("team", "next", 1)));
  }
}

TEST(NamespaceTermination, ANamespaceWithNoPodLeftGoesAtOnce) {
  Cluster c("0000abcd");
  TeamWithASlowPod(c);
  Ok(c, Delete(kT0 + 2000, "Pod", "team", "slow"));
  Ok(c, Advance(kT0 + 30000));
  Ok(c, Delete(kT0 + 31000, "Namespace", "", "team"));
  EXPECT_EQ(Ns(c), nullptr);
}

TEST(NamespaceTermination, Format5RecordsRemovedItAtOnce) {
  Cluster c("0000abcd");
  TeamWithASlowPod(c);
  c.SetFormat5Rules(true);
  Ok(c, Delete(kT0 + 2000, "Namespace", "", "team"));
  EXPECT_EQ(Ns(c), nullptr);
  EXPECT_NE(c.store().Get("Pod", "team", "slow"),
            nullptr);  // (terminating, as formats 1-5 left it)
}

// Regressions (review of d07417d): a namespace stored with a status that is not an object is
// deleted all the same (writing its phase threw half-way through the delete, engine and store
// changed, nothing journaled); a deletionTimestamp a client sends is not kept (only the server
// marks a namespace Terminating), so its delete and a restore treat it as any other.
TEST(NamespaceTermination, ANamespacesSentStatusOrDeletionTimestampDoesNotConfuseItsDelete) {
  Cluster c("0000abcd");
  Json odd = Namespace("team");
  odd["status"] = "Active";
  odd["metadata"]["deletionTimestamp"] = KubeTime(kT0);
  Ok(c, Create(kT0, odd));
  EXPECT_FALSE(Ns(c)->at("metadata").contains("deletionTimestamp"));
  Ok(c, fixtures::Update(kT0, odd));  // nor at an update
  EXPECT_FALSE(Ns(c)->at("metadata").contains("deletionTimestamp"));
  Cluster restored("0000abcd");
  ASSERT_TRUE(restored.Restore(c.Snapshot()).ok());
  Ok(restored, Create(kT0, PodIn("team", "allowed", 1)));  // not Terminating after a restore
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Json slow = PodIn("team", "slow", 1, "1h");
  slow["metadata"]["annotations"]["arbiter.dev/shutdown-time"] = "20s";
  Ok(c, Create(kT0 + 1000, slow));
  Ok(c, Delete(kT0 + 2000, "Namespace", "", "team"));
  ASSERT_NE(Ns(c), nullptr);
  EXPECT_EQ(Ns(c)->at("status").value("phase", ""), "Terminating");
  Ok(c, Advance(kT0 + 23000));
  EXPECT_EQ(Ns(c), nullptr);
}

// A namespace is stored as kube's namespace strategy stores it: Active, with the `kubernetes`
// finalizer (kubectl describe ns showed an empty Status; --field-selector status.phase=Active
// matched nothing); an update keeps them. Its pods' deletes say their own grace period.
TEST(NamespaceTermination, ANamespaceIsActiveWithItsFinalizerUntilItsDelete) {
  Cluster c("0000abcd");
  Json sent = Namespace("team");
  sent["status"] = {{"phase", "Terminating"}};
  Ok(c, Create(kT0, sent));
  EXPECT_EQ(Ns(c)->at("status"), Json({{"phase", "Active"}}));
  EXPECT_EQ(Ns(c)->at("spec").at("finalizers"), Json::array({"kubernetes"}));
  Json update = *Ns(c);
  update["spec"]["finalizers"] = Json::array();
  update["status"]["phase"] = "Terminating";
  update["metadata"]["labels"]["x"] = "y";
  Ok(c, fixtures::Update(kT0, update));
  EXPECT_EQ(Ns(c)->at("status"), Json({{"phase", "Active"}}));
  EXPECT_EQ(Ns(c)->at("spec").at("finalizers"), Json::array({"kubernetes"}));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Json slow = PodIn("team", "slow", 1, "1h");
  slow["spec"]["terminationGracePeriodSeconds"] = 60;
  Ok(c, Create(kT0 + 1000, slow));
  Ok(c, Delete(kT0 + 2000, "Namespace", "", "team"));
  EXPECT_EQ(
      c.store().Get("Pod", "team", "slow")->at("metadata").value("deletionGracePeriodSeconds", -1),
      60);
}

}  // namespace namespace_termination_test
}  // namespace arbiter::server
