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

// Lists of thousands of elements merge as small ones do (each patch element finds its live one by
// key, not by a scan of the list: BM_StrategicMergePatch measures the cost): a key met twice is
// the first element with it still there, elements a patch adds are found by its later ones, and
// the order is the live one with the added elements at the end.
TEST(KubePatch, StrategicMergeOfLargeListsKeepsOrderAndFirstMatchSemantics) {
  constexpr int kN = 10000;
  auto name = [](const char* p, int i) { return p + std::to_string(i); };
  json live = json::parse(kLivePod);
  json& containers = live["spec"]["containers"];
  containers = json::array({{{"name", "d"}, {"image", "1"}}});
  for (int i = 0; i < kN; ++i) containers.push_back({{"name", name("c", i)}, {"image", "i"}});
  containers.push_back({{"name", "d"}, {"image", "2"}});
  json list = json::array();
  for (int i = kN - 1; i >= 0; --i) {  // reverse order: the order comes from the live list
    if (i % 3 == 0) list.push_back({{"name", name("c", i)}, {"$patch", "delete"}});
    if (i % 3 == 1) list.push_back({{"name", name("c", i)}, {"image", "j"}});
  }
  for (int i = 0; i < kN / 10; ++i) {
    list.push_back({{"name", name("n", i)}, {"image", "a"}});
    list.push_back({{"name", name("n", i)}, {"args", {"x"}}});  // merges into the one just added
  }
  list.push_back({{"name", "d"}, {"$patch", "delete"}});  // the first "d"
  list.push_back({{"name", "d"}, {"image", "3"}});        // the second one, now the first
  json out = Smp(live, {{"spec", {{"containers", list}}}});

  json want = json::array();
  for (int i = 0; i < kN; ++i) {
    if (i % 3 == 0) continue;
    want.push_back({{"name", name("c", i)}, {"image", i % 3 == 1 ? "j" : "i"}});
  }
  want.push_back({{"name", "d"}, {"image", "3"}});
  for (int i = 0; i < kN / 10; ++i)
    want.push_back({{"name", name("n", i)}, {"image", "a"}, {"args", {"x"}}});
  ASSERT_EQ(out["spec"]["containers"].size(), want.size());
  EXPECT_EQ(out["spec"]["containers"], want);
}

// $setElementOrder, $deleteFromPrimitiveList, $retainKeys and merged sets of primitives, on
// thousands of elements with duplicates.
TEST(KubePatch, StrategicMergeDirectivesOnLargeListsKeepTheirSemantics) {
  constexpr int kN = 10000;
  auto name = [](const char* p, int i) { return p + std::to_string(i); };
  json live = json::parse(kLivePod);
  json& containers = live["spec"]["containers"];
  containers = json::array();
  for (int i = 0; i < kN; ++i) containers.push_back({{"name", name("c", i)}, {"image", "i"}});
  containers.push_back({{"name", "c0"}, {"image", "dup"}});
  json finalizers = json::array();
  for (int i = 0; i < kN; ++i) finalizers.push_back(name("f", i % (kN / 2)));  // each twice
  live["metadata"]["finalizers"] = finalizers;
  // The even containers listed, in reverse, c0 twice (its two elements, in order) and an unknown
  // name (ignored); then the others in their order.
  json order = json::array({{{"name", "zz"}}});
  for (int i = kN - 2; i >= 0; i -= 2) order.push_back({{"name", name("c", i)}});
  order.push_back({{"name", "c0"}});
  json doomed = json::array();
  for (int i = 0; i < kN / 2; i += 2) doomed.push_back(name("f", i));  // both copies go
  json added = json::array({"f1", "new", "new", "f3"});
  json retained = {{"name", "c1"}, {"$retainKeys", json::array({"name"})}};
  for (int i = 0; i < kN; ++i) {
    retained[name("k", i)] = "v";
    if (i % 2) retained["$retainKeys"].push_back(name("k", i));
  }
  json patch = {
      {"metadata", {{"$deleteFromPrimitiveList/finalizers", doomed}, {"finalizers", added}}},
      {"spec", {{"$setElementOrder/containers", order}, {"containers", {retained}}}}};
  json out = Smp(live, patch);

  json want_names = json::array();
  for (int i = kN - 2; i >= 0; i -= 2) want_names.push_back(name("c", i));
  want_names.push_back("c0");
  for (int i = 1; i < kN; i += 2) want_names.push_back(name("c", i));
  json names = json::array();
  for (const auto& c : out["spec"]["containers"]) names.push_back(c["name"]);
  EXPECT_EQ(names, want_names);
  const json& listed_c0 = out["spec"]["containers"][kN / 2 - 1];
  EXPECT_EQ(listed_c0["image"], "i");  // the first c0 where the last even name was listed
  EXPECT_EQ(out["spec"]["containers"][kN / 2]["image"], "dup");
  json c1 = out["spec"]["containers"][kN / 2 + 1];
  EXPECT_EQ(c1["name"], "c1");
  EXPECT_EQ(c1.size(), 1u + kN / 2);  // name and the odd k's: image and the even k's gone
  EXPECT_TRUE(c1.contains("k1"));
  EXPECT_FALSE(c1.contains("k0"));

  json want_finalizers = json::array();
  for (int i = 0; i < kN; ++i)
    if ((i % (kN / 2)) % 2) want_finalizers.push_back(name("f", i % (kN / 2)));
  want_finalizers.push_back("new");  // once; f1 and f3 were there
  EXPECT_EQ(out["metadata"]["finalizers"], want_finalizers);
}

// Merge keys compare as JSON values: 80 and 80.0 are one port, as they are for kube's decoder.
TEST(KubePatch, StrategicMergeKeysCompareAsJsonValues) {
  json out = Smp(json::parse(kLivePod), json::parse(R"({"spec":{"containers":[{"name":"main",
                   "ports":[{"containerPort":80.0,"name":"http"},{"containerPort":"81","name":"s"}]}]}})"));
  EXPECT_EQ(out["spec"]["containers"][0]["ports"],
            json::parse(R"([{"containerPort":80.0,"name":"http"},{"containerPort":81},
                            {"containerPort":"81","name":"s"}])"));
}

TEST(KubePatch, StrategicMergeRefusesAMergeListElementWithoutItsKey) {
  auto out = ApplyStrategicMergePatch(
      json::parse(kLivePod), json::parse(R"({"spec":{"containers":[{"image":"x"}]}})"), Pods());
  EXPECT_EQ(out.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.message().find("merge key: name"), std::string::npos) << out.message();
}

TEST(KubePatch, ServerSideApplyCreatesThenMergesByKeysKeepingWhatItNeverApplied) {
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
  EXPECT_FALSE((*applied)["spec"]["containers"][0].contains("ports"));  // applied before, not now
  EXPECT_EQ((*applied)["status"]["phase"], "Running");                  // never applied: kept
  EXPECT_EQ(
      ApplyPatch(PatchType::kApply, &live, R"({"apiVersion":"v1","kind":"Node"})", Pods()).code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(ApplyPatch(PatchType::kApply, &live, "a: [", Pods()).code(),
            StatusCode::kInvalidArgument);
}

TEST(KubePatch, ServerSideApplyRemovesWhatAManagerStopsApplyingUnlessAnotherOwnsIt) {
  auto apply = [](const json* live, const char* text, const char* manager) {
    auto out = ApplyServerSide(live, json::parse(text), Pods(),
                               ApplyOptions{manager, "2026-12-01T12:00:00Z"});
    EXPECT_TRUE(out.ok()) << out.message();
    return out.ok() ? *out : json();
  };
  json a = apply(
      nullptr,
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"a":"1","shared":"s"}},
      "spec":{"containers":[{"name":"m","image":"i","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}})",
      "alice");
  const json& fields = a["metadata"]["managedFields"][0]["fieldsV1"];
  EXPECT_TRUE(fields["f:spec"]["f:containers"].contains(R"(k:{"name":"m"})")) << fields.dump();
  EXPECT_TRUE(
      fields["f:spec"]["f:containers"][R"(k:{"name":"m"})"]["f:env"].contains(R"(k:{"name":"B"})"));
  EXPECT_FALSE(fields["f:metadata"].contains("f:name"));
  EXPECT_EQ(a["metadata"]["managedFields"][0]["time"], "2026-12-01T12:00:00Z");
  json b = apply(
      &a,
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"shared":"s","b":"2"}}})",
      "bob");
  json c = apply(&b, R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},
      "spec":{"containers":[{"name":"m","image":"i","env":[{"name":"B","value":"2"}]}]}})",
                 "alice");
  EXPECT_EQ(c["metadata"]["labels"],
            json({{"shared", "s"}, {"b", "2"}}));  // "a" gone, "shared" is bob's too
  EXPECT_EQ(c["spec"]["containers"][0]["env"], json::parse(R"([{"name":"B","value":"2"}])"));
  ASSERT_EQ(c["metadata"]["managedFields"].size(), 2u);
  EXPECT_EQ(c["metadata"]["managedFields"][0]["manager"], "bob");
  EXPECT_EQ(ApplyServerSide(&c, json::parse(R"({"apiVersion":"v1","kind":"Pod"})"), Pods(),
                            ApplyOptions{"", ""})
                .code(),
            StatusCode::kInvalidArgument);
}

// A billion laughs of `levels` levels of ten aliases over ten strings of `width` bytes.
std::string Laughs(int levels, size_t width) {
  std::string y = "a0: &a0 [";
  for (int k = 0; k < 10; ++k) y += (k ? "," : "") + std::string(width, 'x');
  y += "]\n";
  for (int i = 1; i < levels; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) y += (k ? ",*a" : "*a") + std::to_string(i - 1);
    y += "]\n";
  }
  return y;
}

// YAML bodies are refused, before any alias is expanded, when aliases make up too much of them, as
// kube-apiserver's decoder (go-yaml) does: a 4 KB body of 5 levels expanded to 10^5 strings, 34
// MB, before its size was checked.
TEST(KubePatch, YamlBodiesWithExcessiveAliasingAreRefusedBeforeExpansion) {
  for (const std::string& bomb : {Laughs(5, 340), Laughs(9, 1)}) {
    for (auto parsed : {ParseYamlBody(bomb), ParseBody(bomb, PatchType::kApply)}) {
      EXPECT_EQ(parsed.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(parsed.message(), "the document contains excessive aliasing");
    }
  }
  // Few aliases repeating much text: bounded by the bytes they repeat.
  const std::string big = "a: &a " + std::string(100000, 'x') + "\nb: [" + [] {
    std::string l;
    for (int i = 0; i < 40; ++i) l += i ? ",*a" : "*a";
    return l;
  }() + "]\n";
  auto bytes = ParseYamlBody(big);
  EXPECT_EQ(bytes.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.message().find("excessive aliasing"), std::string::npos) << bytes.message();
  // An anchor used inside itself.
  EXPECT_EQ(ParseYamlBody("a: &a [1, *a]").code(), StatusCode::kInvalidArgument);
  // Aliases in moderation are expanded (a level of ten over a thousand plain strings; 3 levels).
  auto some = ParseYamlBody(Laughs(3, 4) + "plain: [" + [] {
    std::string l;
    for (int i = 0; i < 1000; ++i) l += i ? ",p" : "p";
    return l;
  }() + "]\n");
  ASSERT_TRUE(some.ok()) << some.message();
  EXPECT_EQ((*some)["a2"].size(), 10u);
  EXPECT_EQ((*some)["a2"][9][9][9], "xxxx");
  EXPECT_EQ((*some)["plain"].size(), 1000u);
  // A document of under 1000 nodes may be all aliases.
  auto small = ParseYamlBody(Laughs(2, 1));
  ASSERT_TRUE(small.ok()) << small.message();
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
