#include "adapters/kube/patch.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

const ResourceInfo& Pods() { return *FindResource("", "v1", "pods"); }
const ResourceInfo& ElasticQuotas() {
  return *FindResource("arbiter.dev", "v1alpha1", "elasticquotas");
}

json Smp(const json& live, const json& patch, const ResourceInfo& r = Pods()) {
  auto out = ApplyStrategicMergePatch(live, patch, r);
  EXPECT_TRUE(out.ok()) << out.message();
  return out.ok() ? *out : json();
}

TEST(KubePatch, ContentTypesSelectThePatchTypeAndCustomKindsRefuseStrategic) {
  EXPECT_EQ(PatchTypeFromContentType("application/strategic-merge-patch+json"),
            PatchType::kStrategicMergePatch);
  EXPECT_EQ(PatchTypeFromContentType("application/merge-patch+json; charset=utf-8"),
            PatchType::kMergePatch);
  EXPECT_EQ(PatchTypeFromContentType("application/json-patch+json"), PatchType::kJsonPatch);
  EXPECT_EQ(PatchTypeFromContentType("application/apply-patch+yaml"), PatchType::kApply);
  EXPECT_EQ(PatchTypeFromContentType("application/json"), std::nullopt);
  EXPECT_TRUE(Accepts(Pods(), PatchType::kStrategicMergePatch));
  EXPECT_FALSE(Accepts(ElasticQuotas(), PatchType::kStrategicMergePatch));
  EXPECT_TRUE(Accepts(ElasticQuotas(), PatchType::kApply));
  const json empty = json::object();
  EXPECT_FALSE(ApplyPatch(PatchType::kStrategicMergePatch, &empty, "{}", ElasticQuotas()).ok());
}

TEST(KubePatch, MergePatchFollowsRfc7386) {
  // RFC 7386 appendix A, a few of its cases.
  json live = json::parse(R"({"a":"b","c":{"d":"e","f":"g"},"l":[1,2]})");
  json patch = json::parse(R"({"a":"z","c":{"f":null},"l":[3],"n":{"x":null}})");
  EXPECT_EQ(*ApplyMergePatch(live, patch),
            json::parse(R"({"a":"z","c":{"d":"e"},"l":[3],"n":{}})"));
  EXPECT_EQ(*ApplyMergePatch(json::parse(R"({"a":"b"})"), json::parse(R"(["c"])")),
            json::parse(R"(["c"])"));
}

TEST(KubePatch, JsonPatchFollowsRfc6902AndAFailedTestIsAConflict) {
  json live = json::parse(R"({"metadata":{"labels":{"a":"1"}},"spec":{"l":[1,2]}})");
  json ops = json::parse(R"([{"op":"add","path":"/metadata/labels/b","value":"2"},
    {"op":"remove","path":"/metadata/labels/a"},{"op":"replace","path":"/spec/l/0","value":9},
    {"op":"add","path":"/spec/l/-","value":3},{"op":"copy","from":"/spec/l","path":"/spec/m"},
    {"op":"move","from":"/spec/m","path":"/spec/n"},{"op":"test","path":"/spec/l/1","value":2}])");
  EXPECT_EQ(*ApplyJsonPatch(live, ops),
            json::parse(R"({"metadata":{"labels":{"b":"2"}},"spec":{"l":[9,2,3],"n":[9,2,3]}})"));
  auto failed =
      ApplyJsonPatch(live, json::parse(R"([{"op":"test","path":"/spec/l/0","value":7}])"));
  EXPECT_EQ(failed.code(), StatusCode::kConflict);
  EXPECT_EQ(ApplyJsonPatch(live, json::parse(R"([{"op":"remove","path":"/nope"}])")).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyJsonPatch(live, json::object()).code(), StatusCode::kInvalidArgument);
}

const char* kLivePod =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"a","finalizers":["f1"],"labels":{"app":"t"}},
  "spec":{"containers":[
    {"name":"main","image":"i:1","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"ports":[{"containerPort":80},{"containerPort":81}]},
    {"name":"side","image":"s:1"}],
  "tolerations":[{"key":"gpu","operator":"Exists"}],
  "volumes":[{"name":"v","emptyDir":{}}]}})";

TEST(KubePatch, StrategicMergeMergesContainersByNameEnvByNamePortsByContainerPort) {
  json out = Smp(json::parse(kLivePod), json::parse(R"({"spec":{"containers":[
     {"name":"main","image":"i:2","env":[{"name":"B","value":"3"},{"name":"C","value":"4"}],"ports":[{"containerPort":81,"name":"metrics"}]},
     {"name":"new","image":"n:1"}]}})"));
  const json& c = out["spec"]["containers"];
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0]["image"], "i:2");
  EXPECT_EQ(c[0]["env"],
            json::parse(
                R"([{"name":"A","value":"1"},{"name":"B","value":"3"},{"name":"C","value":"4"}])"));
  EXPECT_EQ(c[0]["ports"],
            json::parse(R"([{"containerPort":80},{"containerPort":81,"name":"metrics"}])"));
  EXPECT_EQ(c[1]["name"], "side");
  EXPECT_EQ(c[2]["name"], "new");
}

TEST(KubePatch, StrategicMergeTolerationsAreAtomicAsInKubernetes) {
  json out = Smp(json::parse(kLivePod),
                 json::parse(R"({"spec":{"tolerations":[{"key":"cpu","operator":"Exists"}]}})"));
  EXPECT_EQ(out["spec"]["tolerations"], json::parse(R"([{"key":"cpu","operator":"Exists"}])"));
}

TEST(KubePatch, StrategicMergeDirectivesDeleteReplaceOrderRetainAndPrimitiveDeletes) {
  json out = Smp(json::parse(kLivePod), json::parse(R"({
    "metadata":{"labels":{"app":null,"b":"2"},"finalizers":["f2"],"$deleteFromPrimitiveList/finalizers":["f1"]},
    "spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}],
            "containers":[{"name":"main","$patch":"delete"},{"name":"side","env":[{"name":"Z","value":"z"}]}],
            "volumes":[{"name":"v","$retainKeys":["name","hostPath"],"hostPath":{"path":"/d"}}]}})"));
  EXPECT_EQ(out["metadata"]["labels"], json({{"b", "2"}}));
  EXPECT_EQ(out["metadata"]["finalizers"], json({"f2"}));
  ASSERT_EQ(out["spec"]["containers"].size(), 1u);
  EXPECT_EQ(out["spec"]["containers"][0]["env"][0]["name"], "Z");
  EXPECT_EQ(out["spec"]["volumes"], json::parse(R"([{"name":"v","hostPath":{"path":"/d"}}])"));

  json replaced = Smp(
      json::parse(kLivePod),
      json::parse(R"({"spec":{"containers":[{"$patch":"replace"},{"name":"only","image":"o"}]}})"));
  EXPECT_EQ(replaced["spec"]["containers"], json::parse(R"([{"name":"only","image":"o"}])"));
  json map_replace = Smp(json::parse(kLivePod),
                         json::parse(R"({"metadata":{"labels":{"$patch":"replace","z":"1"}}})"));
  EXPECT_EQ(map_replace["metadata"]["labels"], json({{"z", "1"}}));

  json ordered = Smp(
      json::parse(kLivePod),
      json::parse(R"({"spec":{"$setElementOrder/containers":[{"name":"side"},{"name":"main"}]}})"));
  EXPECT_EQ(ordered["spec"]["containers"][0]["name"], "side");
}

TEST(KubePatch, StrategicMergeRefusesAMergeListElementWithoutItsKey) {
  auto out = ApplyStrategicMergePatch(
      json::parse(kLivePod), json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"), Pods());
  EXPECT_EQ(out.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.message().find("merge key: name"), std::string::npos) << out.message();
}

TEST(KubePatch, ServerSideApplyCreatesThenMergesByKeysKeepingUnmentionedFields) {
  auto created = ApplyPatch(PatchType::kApply, nullptr, R"(
apiVersion: v1
kind: Pod
metadata: {name: x, namespace: a, labels: {n: "1", m: 2}}
spec:
  containers: [{name: main, image: "i:1", ports: [{containerPort: 80}]}]
  enableServiceLinks: false
  priority: ~
)",
                            Pods());
  ASSERT_TRUE(created.ok()) << created.message();
  EXPECT_EQ((*created)["metadata"]["labels"], json({{"n", "1"}, {"m", 2}}));
  EXPECT_EQ((*created)["spec"]["enableServiceLinks"], false);
  EXPECT_FALSE((*created)["spec"].contains("priority"));
  EXPECT_EQ((*created)["spec"]["containers"][0]["ports"][0]["containerPort"], 80);

  json live = *created;
  live["status"] = {{"phase", "Running"}};
  auto applied =
      ApplyPatch(PatchType::kApply, &live,
                 R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"a"},
                               "spec":{"containers":[{"name":"main","image":"i:2"}]}})",
                 Pods());
  ASSERT_TRUE(applied.ok()) << applied.message();
  EXPECT_EQ((*applied)["spec"]["containers"][0]["image"], "i:2");
  EXPECT_EQ((*applied)["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
  EXPECT_EQ((*applied)["status"]["phase"], "Running");
  EXPECT_EQ(
      ApplyPatch(PatchType::kApply, &live, R"({"apiVersion":"v1","kind":"Node"})", Pods()).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyPatch(PatchType::kApply, &live, "a: [", Pods()).code(),
            StatusCode::kInvalidArgument);
}

TEST(KubePatch, ServerSideApplyOfACustomKindReplacesLists) {
  json live = json::parse(
      R"({"apiVersion":"arbiter.dev/v1alpha1","kind":"ElasticQuota","metadata":{"name":"q","namespace":"a"},
     "spec":{"min":{"nvidia.com/gpu":"8"},"l":[1,2]}})");
  auto out = ApplyServerSide(
      &live, json::parse(R"({"apiVersion":"arbiter.dev/v1alpha1","kind":"ElasticQuota",
     "metadata":{"name":"q","namespace":"a"},"spec":{"max":{"nvidia.com/gpu":"16"},"l":[3]}})"),
      ElasticQuotas());
  ASSERT_TRUE(out.ok()) << out.message();
  EXPECT_EQ((*out)["spec"],
            json::parse(R"({"min":{"nvidia.com/gpu":"8"},"max":{"nvidia.com/gpu":"16"},"l":[3]})"));
}

}  // namespace
}  // namespace arbiter::kube
