// What kube-apiserver's defaulting and admission write into a pod at its create and update, as
// `arbiter serve` stores it: since journal format 6 the LimitRange's defaults in its own quantity
// text (server/state/pod_defaults.h), pods stored before format 6 updated as they were; the
// priority resolved at the create kept by an update that leaves it out (Priority admission).
#include <gtest/gtest.h>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace pod_mutation_test {

using fixtures::Create;
using fixtures::kT0;
using fixtures::Namespace;
using fixtures::Node;
using fixtures::Ok;
using fixtures::Update;

Json Bare(const std::string& name, Json resources = Json()) {
  Json c = {{"name", "c"}, {"image", "busybox"}};
  if (!resources.is_null()) c["resources"] = std::move(resources);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team"}}},
          {"spec", {{"containers", {c}}}}};
}

void Team(Cluster& c) {
  Ok(c, Create(kT0, Namespace("team")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Ok(c,
     Create(kT0,
            {{"apiVersion", "v1"},
             {"kind", "LimitRange"},
             {"metadata", {{"name", "defaults"}, {"namespace", "team"}}},
             {"spec",
              {{"limits",
                {{{"type", "Container"}, {"default", {{"cpu", "500m"}, {"memory", "512M"}}}}}}}}}));
}

// kube keeps a LimitRange default's form ("512M"); FormatResourceQuantity wrote "500000Ki".
TEST(PodMutation, TheDefaultsKeepTheLimitRangesText) {
  Cluster c("0000abcd");
  Team(c);
  Ok(c, Create(kT0 + 1000, Bare("p")));
  EXPECT_EQ(c.store().Get("Pod", "team", "p")->at("spec").at("containers").at(0).at("resources"),
            Json({{"limits", {{"cpu", "500m"}, {"memory", "512M"}}},
                  {"requests", {{"cpu", "500m"}, {"memory", "512M"}}}}));
}

// A pod stored as sent by a format-5 record (limits, no requests) gets a label after the
// upgrade: defaulting its requests at that update changed its spec, refused with 422.
TEST(PodMutation, APodStoredBeforeFormat6IsUpdatedAsItWas) {
  Cluster c("0000abcd");
  Team(c);
  c.SetFormat5Rules(true);
  Ok(c, Create(kT0 + 1000, Bare("old", {{"limits", {{"cpu", "1"}}}})));
  c.SetFormat5Rules(false);
  Json labelled = *c.store().Get("Pod", "team", "old");
  labelled["metadata"]["labels"]["x"] = "y";
  Ok(c, Update(kT0 + 2000, labelled));
  EXPECT_FALSE(c.store()
                   .Get("Pod", "team", "old")
                   ->at("spec")
                   .at("containers")
                   .at(0)
                   .at("resources")
                   .contains("requests"));
  // A pod of format 6 sent again without the requests it was given (kubectl replace of its
  // manifest) is defaulted as at its create, so the update is no spec change.
  Ok(c, Create(kT0 + 3000, Bare("new", {{"limits", {{"cpu", "1"}}}})));
  Json resent = *c.store().Get("Pod", "team", "new");
  resent["spec"]["containers"][0]["resources"].erase("requests");
  resent["metadata"]["labels"]["x"] = "y";
  Ok(c, Update(kT0 + 4000, resent));
}

// `kubectl replace -f` of a pod's own manifest (no spec.priority: the class resolved it) was 422
// "spec.priority: changed"; kube's Priority admission keeps the stored one at an update.
TEST(PodMutation, AnUpdateThatLeavesOutThePriorityKeepsIt) {
  Cluster c("0000abcd");
  Team(c);
  Ok(c, Create(kT0, fixtures::PriorityClass("high", 100)));
  // (every resource set: the LimitRange writes nothing, which only its create would write)
  Json pod = Bare("p", {{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}});
  pod["spec"]["priorityClassName"] = "high";
  Ok(c, Create(kT0 + 1000, pod));
  const Json& spec = c.store().Get("Pod", "team", "p")->at("spec");
  EXPECT_EQ(spec.value("priority", 0), 100);
  EXPECT_EQ(spec.value("preemptionPolicy", ""), "PreemptLowerPriority");
  pod["spec"]["containers"][0]["image"] = "busybox:2";  // an image update, as kubectl replace
  Ok(c, Update(kT0 + 2000, pod));
  const Json& after = c.store().Get("Pod", "team", "p")->at("spec");
  EXPECT_EQ(after.value("priority", 0), 100);
  EXPECT_EQ(after["containers"][0].value("image", ""), "busybox:2");
  pod["spec"]["priority"] = 5;  // still immutable when sent
  EXPECT_FALSE(c.Apply(Update(kT0 + 3000, pod)).ok());
}

// A delete without gracePeriodSeconds waits the pod's terminationGracePeriodSeconds (the engine
// did: its event said "grace 1m"), and the pod now says so (it said 30).
TEST(PodMutation, ADeletedPodSaysTheGracePeriodItIsGiven) {
  Cluster c("0000abcd");
  Team(c);
  Json pod = Bare("p");
  pod["metadata"]["annotations"]["arbiter.dev/duration"] = "1h";
  pod["spec"]["terminationGracePeriodSeconds"] = 60;
  Ok(c, Create(kT0 + 1000, pod));
  Ok(c, fixtures::Delete(kT0 + 2000, "Pod", "team", "p"));
  EXPECT_EQ(
      c.store().Get("Pod", "team", "p")->at("metadata").value("deletionGracePeriodSeconds", -1),
      60);
}

// Found by a new-user trial: the engine kept the labels a pod was created with, so a pod labelled
// into a PodDisruptionBudget afterwards was preempted as if no budget protected it, while one
// labelled out of it was spared (the budget's status, made from the stored labels, said
// otherwise). An update's new labels reach the engine (SetPodLabels).
// `old_release`: the relabelling is a format-5 record (no SetPodLabels, as releases before it
// wrote them), and a later update of the pod's annotations alone mends the engine's labels.
void ExpectTheUnprotectedPodIsTheVictim(bool old_release) {
  Cluster c("0000abcd");
  Ok(c, Create(kT0, Namespace("team")));
  Ok(c, Create(kT0, Node("gpu-0", 8)));
  Ok(c, Create(kT0, fixtures::PriorityClass("low", 10)));
  Ok(c, Create(kT0, fixtures::PriorityClass("high", 100)));
  Ok(c, Create(kT0,
               {{"apiVersion", "policy/v1"},
                {"kind", "PodDisruptionBudget"},
                {"metadata", {{"name", "keep"}, {"namespace", "team"}}},
                {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "p"}}}}}}}}));
  auto pod = [](const std::string& name, const std::string& app, const std::string& pc) {
    Json p = fixtures::PodIn("team", name, 4, "1h", pc);
    if (!app.empty()) p["metadata"]["labels"]["app"] = app;
    return p;
  };
  Ok(c, Create(kT0 + 1000, pod("pa", "p", "low")));  // under the budget at its create
  Ok(c, Create(kT0 + 1000, pod("pb", "", "low")));
  // The budget moves from pa to pb.
  c.SetFormat5Rules(old_release);
  Json pa = *c.store().Get("Pod", "team", "pa");
  pa["metadata"]["labels"].erase("app");
  Ok(c, Update(kT0 + 2000, pa));
  Json pb = *c.store().Get("Pod", "team", "pb");
  pb["metadata"]["labels"]["app"] = "p";
  Ok(c, Update(kT0 + 2000, pb));
  c.SetFormat5Rules(false);
  if (old_release)
    for (const char* name : {"pa", "pb"}) {
      Json annotated = *c.store().Get("Pod", "team", name);
      annotated["metadata"]["annotations"]["note"] = "x";
      Ok(c, Update(kT0 + 2500, annotated));
    }
  Ok(c, Create(kT0 + 3000, pod("urgent", "", "high")));
  Ok(c, fixtures::Advance(kT0 + 40000));  // (its victim exits within its 30 s grace)
  auto phase = [&](const char* name) {
    return c.store().Get("Pod", "team", name)->at("status").value("phase", "");
  };
  EXPECT_EQ(phase("urgent"), "Running");
  EXPECT_NE(phase("pa"), "Running");  // the pod no budget protects now was the victim
  EXPECT_EQ(phase("pb"), "Running");
}

TEST(PodMutation, APodLabelledIntoABudgetIsProtectedByIt) {
  ExpectTheUnprotectedPodIsTheVictim(false);
}

TEST(PodMutation, APodRelabelledByAnOlderReleaseIsMendedByItsNextUpdate) {
  ExpectTheUnprotectedPodIsTheVictim(true);
}

}  // namespace pod_mutation_test
}  // namespace arbiter::server
