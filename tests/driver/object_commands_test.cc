// The driver's objects -> engine commands (src/driver/object_commands.h) and a due work-model
// timer's command (src/driver/work_model.h): every kind has its Upsert and Delete (or none, for
// the kinds the engine does not keep), the same by KindId and by name.
#include "driver/object_commands.h"

#include <gtest/gtest.h>

#include "driver/work_model.h"

namespace arbiter::driver {
namespace object_commands_test {

// Every kind once: a pool whose PolicyUpsertCommands and UpsertCommand have something to give.
ManifestSet OneOfEach() {
  ManifestSet m;
  m.namespaces.emplace_back().meta.name = "team-a";
  m.nodes.emplace_back().meta.name = "n1";
  m.pods.emplace_back().meta.name = "p";
  m.resource_quotas.emplace_back().meta.name = "rq";
  m.limit_ranges.emplace_back().meta.name = "lr";
  m.priority_classes.emplace_back().meta.name = "high";
  m.pdbs.emplace_back().meta.name = "pdb";
  m.pool_policy = PoolPolicy{};
  m.elastic_quotas.emplace_back().meta.name = "eq";
  m.price_books.emplace_back().meta.name = "standard";
  m.qos.emplace_back().meta.name = "normal";
  m.pod_groups.emplace_back().meta.name = "gang";
  m.resource_flavors.emplace_back().meta.name = "h100";
  return m;
}

std::string NameOf(const std::optional<engine::CommandOp>& op) {
  return op ? engine::CommandName(engine::Command{0, *op}) : "none";
}

TEST(DriverObjectCommandsTest, PolicyUpsertsInPoolOrder) {
  std::vector<std::string> names;
  for (const auto& op : PolicyUpsertCommands(OneOfEach())) names.push_back(NameOf(op));
  EXPECT_EQ(names, (std::vector<std::string>{"UpsertPoolPolicy", "UpsertPriorityClass", "UpsertQoS",
                                             "UpsertNamespace", "UpsertLimitRange",
                                             "UpsertResourceQuota", "UpsertElasticQuota",
                                             "UpsertPodDisruptionBudget", "UpsertPriceBook"}));
}

TEST(DriverObjectCommandsTest, EveryKindHasItsUpsertAndDelete) {
  const ManifestSet m = OneOfEach();
  for (const ApiKind& k : ApiKinds()) {
    SCOPED_TRACE(k.kind);
    const auto up = UpsertCommand(k.id, m);
    const auto del = DeleteCommand(k.id, "team-a", "x");
    EXPECT_EQ(NameOf(del), NameOf(DeleteCommand(std::string(k.kind), "team-a", "x")));
    switch (k.id) {
      case KindId::kPod:
        EXPECT_EQ(NameOf(up), "SubmitPod");
        EXPECT_EQ(NameOf(del), "none");  // a pod's deletion names its workload
        break;
      case KindId::kNode:
        EXPECT_EQ(NameOf(up), "UpsertNode");
        EXPECT_EQ(NameOf(del), "RemoveNode");
        break;
      case KindId::kEvent:
      case KindId::kResourceFlavor:
      case KindId::kPodGroup:
      case KindId::kJob:
        EXPECT_EQ(NameOf(up), "none");
        EXPECT_EQ(NameOf(del), "none");
        break;
      default:
        EXPECT_EQ(NameOf(up), std::string("Upsert") + k.kind);
        EXPECT_EQ(NameOf(del), std::string("Delete") + k.kind);
    }
  }
  EXPECT_EQ(NameOf(DeleteCommand(std::string("NoSuchKind"), "", "x")), "none");
}

TEST(DriverObjectCommandsTest, UpsertOfAKindTheSetLacksIsNone) {
  const ManifestSet empty;
  for (const ApiKind& k : ApiKinds()) EXPECT_EQ(NameOf(UpsertCommand(k.id, empty)), "none");
}

TEST(DriverObjectCommandsTest, UpsertCommandCarriesTheObject) {
  const ManifestSet m = OneOfEach();
  auto node = UpsertCommand(KindId::kNode, m);
  ASSERT_TRUE(node);
  EXPECT_EQ(std::get<engine::UpsertNode>(*node).node.meta.name, "n1");
  auto pod = UpsertCommand(KindId::kPod, m);
  ASSERT_TRUE(pod);
  const auto& submit = std::get<engine::SubmitPod>(*pod);
  EXPECT_EQ(submit.pod.meta.name, "p");
  EXPECT_FALSE(submit.immediate);
  auto del = DeleteCommand(KindId::kResourceQuota, "team-a", "rq");
  ASSERT_TRUE(del);
  EXPECT_EQ(std::get<engine::DeleteResourceQuota>(*del).ref.name, "rq");
}

TEST(DriverWorkModelTest, DueTimersBecomeTheirCommandsAtTheirTime) {
  WorkTimers timers;
  timers.Arm(engine::WorkloadId{3}, 500, WorkTimers::Kind::kExit);
  timers.Arm(engine::WorkloadId{1}, 200, WorkTimers::Kind::kComplete);
  auto first = timers.PopDue(1000);
  ASSERT_TRUE(first);
  const engine::Command done = DueCommand(*first);
  EXPECT_EQ(done.time, 200);
  ASSERT_TRUE(std::holds_alternative<engine::PodFinished>(done.op));
  EXPECT_EQ(std::get<engine::PodFinished>(done.op).id, engine::WorkloadId{1});
  EXPECT_EQ(std::get<engine::PodFinished>(done.op).exit_code, 0);
  auto second = timers.PopDue(1000);
  ASSERT_TRUE(second);
  const engine::Command exited = DueCommand(*second);
  EXPECT_EQ(exited.time, 500);
  ASSERT_TRUE(std::holds_alternative<engine::VictimExited>(exited.op));
  EXPECT_EQ(std::get<engine::VictimExited>(exited.op).id, engine::WorkloadId{3});
}

}  // namespace object_commands_test
}  // namespace arbiter::driver
