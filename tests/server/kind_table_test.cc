// The per-kind table of `arbiter serve` (server/state/kind_table.h, issue 25): one row per kind of
// the kinds table, what each column says for the kinds whose behaviour differs; and the engine's
// facts on the Events it writes (its reason code, the preemptor as the related object).
#include "server/state/kind_table.h"

#include <gtest/gtest.h>

#include <set>

#include "cluster_fixtures.h"
#include "server/state/cluster.h"

namespace arbiter::server {
namespace kind_table_test {

TEST(KindTable, OneRowPerKindOfTheKindsTable) {
  ASSERT_EQ(ServedKinds().size(), ApiKinds().size());
  std::set<KindId> ids;
  for (size_t i = 0; i < ApiKinds().size(); ++i) {
    const KindInfo& row = ServedKinds()[i];
    const ApiKind& k = ApiKinds()[i];
    EXPECT_EQ(row.id, k.id) << k.kind;
    EXPECT_STREQ(row.kind, k.kind);
    EXPECT_EQ(row.api_version, k.ApiVersion()) << k.kind;
    EXPECT_EQ(row.namespaced, k.namespaced) << k.kind;
    EXPECT_EQ(FindKind(k.kind), &row);
    EXPECT_EQ(&ApiKindOf(k.id), &k);
    EXPECT_NE(row.table, nullptr) << k.kind;
    ids.insert(row.id);
  }
  EXPECT_EQ(ids.size(), ServedKinds().size());  // every KindId once
  EXPECT_EQ(FindKind("Deployment"), nullptr);
}

TEST(KindTable, ColumnsSayWhatDiffersByKind) {
  const KindInfo& pod = *FindKind("Pod");
  EXPECT_EQ(pod.storage, Storage::kWorkload);
  EXPECT_EQ(pod.update_rule, UpdateRule::kPodSpec);
  EXPECT_EQ(pod.quota_effect, QuotaEffect::kNamespace);
  EXPECT_EQ(pod.auth, kube::AuthClass::kTenant);
  EXPECT_EQ(pod.table->columns().size(), 9u);  // NAME READY STATUS RESTARTS AGE + 4 wide
  const KindInfo& node = *FindKind("Node");
  EXPECT_EQ(node.storage, Storage::kNode);
  EXPECT_EQ(node.status, StatusWriter::kClient);
  EXPECT_EQ(node.auth, kube::AuthClass::kPublic);
  EXPECT_EQ(FindKind("Event")->storage, Storage::kServerWritten);
  EXPECT_EQ(FindKind("PriorityClass")->update_rule, UpdateRule::kImmutableValue);
  EXPECT_EQ(FindKind("PoolPolicy")->update_rule, UpdateRule::kSingleton);
  EXPECT_EQ(FindKind("ElasticQuota")->quota_effect, QuotaEffect::kEveryNamespaceOfKind);
  EXPECT_EQ(FindKind("ElasticQuota")->auth, kube::AuthClass::kOperatorOwned);
  EXPECT_EQ(FindKind("Namespace")->auth, kube::AuthClass::kAdmin);
  for (const KindInfo& k : ServedKinds()) {
    if (k.storage == Storage::kPolicy) {
      EXPECT_EQ(k.status, StatusWriter::kServer) << k.kind;
    }
  }
  // Kinds without a printer of their own print NAME AGE.
  EXPECT_EQ(FindKind("PodGroup")->table->columns().size(), 2u);
}

Json Ok(Cluster& c, const Mutation& m) {
  MutationResult r = c.Apply(m);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->message : "") << " " << m.Encode();
  return r.object;
}

// A preemption's Event names its preemptor as the related Pod and carries the engine's reason
// code, so that nobody searches the message for "preempted by".
TEST(KindTable, EventsCarryTheEnginesReasonAndThePreemptor) {
  Cluster c("0000abcd");
  Ok(c, fixtures::Create(fixtures::kT0, fixtures::Namespace("default")));
  Ok(c, fixtures::Create(fixtures::kT0, fixtures::Node("gpu-0", 8)));
  Ok(c, fixtures::Create(fixtures::kT0, fixtures::PriorityClass("low", 100)));
  Ok(c, fixtures::Create(fixtures::kT0, fixtures::PriorityClass("high", 1000)));
  Ok(c, fixtures::Create(fixtures::kT0, fixtures::PodIn("default", "low", 8, "", "low")));
  Ok(c, fixtures::Create(fixtures::kT0 + 1000, fixtures::PodIn("default", "high", 8, "", "high")));
  const Json* preempted = nullptr;
  const Json* scheduled = nullptr;
  for (const Json* e : c.store().List("Event", "default")) {
    if (e->at("reason") == "Preempted") preempted = e;
    if (e->at("reason") == "Scheduled" && e->at("involvedObject").at("name") == "low")
      scheduled = e;
  }
  ASSERT_NE(preempted, nullptr);
  EXPECT_EQ(preempted->at("involvedObject").at("name"), "low");
  EXPECT_EQ(preempted->value("/related/kind"_json_pointer, ""), "Pod") << *preempted;
  EXPECT_EQ(preempted->value("/related/namespace"_json_pointer, ""), "default");
  EXPECT_EQ(preempted->value("/related/name"_json_pointer, ""), "high");
  EXPECT_FALSE(
      preempted->value("/metadata/annotations/arbiter.dev~1reason"_json_pointer, "").empty())
      << *preempted;
  ASSERT_NE(scheduled, nullptr);
  EXPECT_FALSE(scheduled->contains("related")) << *scheduled;
}

}  // namespace kind_table_test
}  // namespace arbiter::server
