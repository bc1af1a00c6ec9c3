// A pod update that sets or lowers spec.activeDeadlineSeconds reaches the engine
// (engine::SetPodDeadline): the backfill reservation of the pod waiting behind it moves, as its
// pending reason says; the engine's quota scopes follow (Terminating once the pod has a deadline).
#include <gtest/gtest.h>

#include "core/instant_text.h"
#include "server/cluster_fixtures.h"

namespace arbiter::server {
namespace {

using namespace fixtures;

void Apply(Cluster& c, const Mutation& m) {
  const MutationResult r = c.Apply(m);
  ASSERT_TRUE(r.ok()) << r.error->message
                      << (r.error->diagnostics.items.empty()
                              ? ""
                              : r.error->diagnostics.items[0].message);
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// The PodScheduled condition's message of a pod.
std::string Waiting(const Cluster& c, const std::string& name) {
  for (const auto& cond : c.store().Get("Pod", "team-a", name)->at("status").at("conditions"))
    if (cond.at("type") == "PodScheduled") return cond.value("message", "");
  return "";
}

Mutation UpdateDeadline(const Cluster& c, Millis t, const std::string& name, int seconds) {
  Mutation m;
  m.op = Mutation::Op::kUpdate;
  m.time = t;
  m.kind = "Pod";
  m.namespace_ = "team-a";
  m.name = name;
  m.object = *c.store().Get("Pod", "team-a", name);
  m.object["spec"]["activeDeadlineSeconds"] = seconds;
  return m;
}

// Namespace team-a, one 4-GPU node; `a` runs on all of it (deadline `a_deadline` s, 0 none),
// `b` needs all of it and waits.
void Pool(Cluster& c, int a_deadline) {
  Apply(c, Create(kT0, Namespace("team-a")));
  Apply(c, Create(kT0, Node("n1", 4)));
  Json a = PodIn("team-a", "a", 4);
  if (a_deadline > 0) a["spec"]["activeDeadlineSeconds"] = a_deadline;
  Apply(c, Create(kT0, a));
  Apply(c, Create(kT0 + 1000, PodIn("team-a", "b", 4)));
}

TEST(PodDeadlineUpdate, LoweringTheRunningPodsDeadlineMovesTheReservationBehindIt) {
  Cluster c("0000abcd");
  Pool(c, 3600);
  EXPECT_NE(Waiting(c, "b").find("reserved on n1 from " + FormatInstant(kT0 + 3600000)),
            std::string::npos)
      << Waiting(c, "b");
  Apply(c, UpdateDeadline(c, kT0 + 2000, "a", 600));
  EXPECT_EQ(c.store().Get("Pod", "team-a", "a")->at("spec").at("activeDeadlineSeconds"), 600);
  EXPECT_NE(Waiting(c, "b").find("reserved on n1 from " + FormatInstant(kT0 + 600000)),
            std::string::npos)
      << Waiting(c, "b");
  EXPECT_TRUE(c.engine().CheckInvariants().ok()) << c.engine().CheckInvariants().message();
  // Raising it back is refused (Kubernetes' rule) and changes nothing.
  EXPECT_FALSE(c.Apply(UpdateDeadline(c, kT0 + 3000, "a", 900)).ok());
  EXPECT_NE(Waiting(c, "b").find("from " + FormatInstant(kT0 + 600000)), std::string::npos);
}

// The engine moves the pod's quota usage from the NotTerminating to the Terminating quota (its
// invariants recount usage by scope); the ResourceQuota status the daemon writes does not look
// at scopes (quota_status.h), so the check here is the engine's invariants.
TEST(PodDeadlineUpdate, ADeadlineWhereThereWasNoneGivesAReservationAndMovesQuotaScopes) {
  Cluster c("0000abcd");
  Pool(c, 0);
  for (const std::string scope : {"Terminating", "NotTerminating"})
    Apply(c, Create(kT0 + 1500, {{"apiVersion", "v1"},
                                 {"kind", "ResourceQuota"},
                                 {"metadata", {{"name", Lower(scope)}, {"namespace", "team-a"}}},
                                 {"spec", {{"hard", {{"pods", "10"}}}, {"scopes", {scope}}}}}));
  EXPECT_EQ(Waiting(c, "b").find("reserved on"), std::string::npos) << Waiting(c, "b");
  Apply(c, UpdateDeadline(c, kT0 + 2000, "a", 1800));
  EXPECT_NE(Waiting(c, "b").find("reserved on n1 from " + FormatInstant(kT0 + 1800000)),
            std::string::npos)
      << Waiting(c, "b");
  EXPECT_TRUE(c.engine().CheckInvariants().ok()) << c.engine().CheckInvariants().message();
}

}  // namespace
}  // namespace arbiter::server
