// The daemon hands this library whatever clients send. Seeded random JSON (of the shapes the
// library looks into: metadata, spec, containers, directives, conditions, wrong types everywhere)
// must never make a function throw or crash: every entry point answers with a value or a Status.
#include <gtest/gtest.h>

#include <random>

#include "adapters/kube/patch.h"
#include "adapters/kube/selectors.h"
#include "adapters/kube/table.h"
#include "adapters/kube/watch.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  json Value(int depth) {
    switch (rng_() % (depth > 3 ? 5 : 8)) {
      case 0:
        return nullptr;
      case 1:
        return rng_() % 2 == 0;
      case 2:
        return static_cast<int64_t>(rng_() % 7) - 2;
      case 3:
        return Pick(kStrings);
      case 4:
        return 1.5;
      case 5:
      case 6: {
        json o = json::object();
        const int n = rng_() % 5;
        for (int i = 0; i < n; ++i) o[Pick(kKeys)] = Value(depth + 1);
        return o;
      }
      default: {
        json a = json::array();
        const int n = rng_() % 4;
        for (int i = 0; i < n; ++i) a.push_back(Value(depth + 1));
        return a;
      }
    }
  }
  uint32_t Next() { return rng_(); }

 private:
  std::string Pick(const std::vector<std::string>& v) { return v[rng_() % v.size()]; }
  const std::vector<std::string> kKeys = {"apiVersion",
                                          "kind",
                                          "metadata",
                                          "name",
                                          "namespace",
                                          "labels",
                                          "spec",
                                          "status",
                                          "containers",
                                          "env",
                                          "ports",
                                          "containerPort",
                                          "volumes",
                                          "conditions",
                                          "type",
                                          "reason",
                                          "$patch",
                                          "$retainKeys",
                                          "$setElementOrder/containers",
                                          "$deleteFromPrimitiveList/finalizers",
                                          "finalizers",
                                          "nodeName",
                                          "phase",
                                          "containerStatuses",
                                          "state",
                                          "waiting",
                                          "ready",
                                          "used",
                                          "hard",
                                          "min",
                                          "max",
                                          "creationTimestamp",
                                          "matchLabels",
                                          "matchExpressions",
                                          "key",
                                          "operator",
                                          "values",
                                          "op",
                                          "path",
                                          "value",
                                          "from",
                                          "involvedObject",
                                          "count",
                                          "restartCount"};
  const std::vector<std::string> kStrings = {
      "",       "a",    "delete", "replace", "merge", "v1",  "Pod",    "2026-12-01T11:00:00Z",
      "8",      "500m", "1Gi",    "x y",     "/spec", "add", "remove", "In",
      "Exists", "True"};
  std::mt19937 rng_;
};

TEST(KubeHostileJson, RandomObjectsAndPatchesNeverThrow) {
  Gen g(20261201);
  const ResourceInfo& pods = *FindResource("", "v1", "pods");
  for (int i = 0; i < 4000; ++i) {
    json live = g.Value(0), patch = g.Value(0);
    if (g.Next() % 2)
      live = json{
          {"apiVersion", "v1"}, {"kind", "Pod"}, {"spec", g.Value(1)}, {"metadata", g.Value(1)}};
    try {
      (void)ApplyMergePatch(live, patch);
      (void)ApplyJsonPatch(live, patch);
      (void)ApplyJsonPatch(live, json::array({patch}));
      for (const auto& r : ServedResources()) {
        (void)ApplyStrategicMergePatch(live, patch, r);
        (void)ApplyServerSide(&live, patch, r);
        (void)ApplyServerSide(nullptr, patch, r);
        (void)CellsOf(r, live, 0);
        (void)FieldSelector{{{"metadata.name", true, "a"}, {"source", false, ""}}}.Matches(live);
        (void)TableWatchEvent(WatchEventType::kAdded, r, live, 0, IncludeObject::kMetadata, true);
      }
      (void)ApplyPatch(PatchType::kApply, &live, patch.dump(), pods);
      (void)LabelSelectorFromJson(patch);
      auto sel = ParseLabelSelector("a,b!=x,c in (a,b)");
      (void)sel->MatchesObject(live);
    } catch (const std::exception& e) {
      FAIL() << "iteration " << i << ": " << e.what() << "\nlive: " << live.dump()
             << "\npatch: " << patch.dump();
    }
  }
}

TEST(KubeHostileJson, DeepNestingAndYamlAliasBombsAreRefusedNotFollowed) {
  const ResourceInfo& pods = *FindResource("", "v1", "pods");
  const json live = json::object();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (PatchType t : {PatchType::kJsonPatch, PatchType::kMergePatch,
                      PatchType::kStrategicMergePatch, PatchType::kApply}) {
    auto r = ApplyPatch(t, &live, deep, pods);
    EXPECT_EQ(r.code(), StatusCode::kInvalidArgument) << ContentTypeOf(t);
    EXPECT_NE(r.message().find("nests deeper than 64 levels"), std::string::npos) << r.message();
  }
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += (i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  auto r = ApplyPatch(PatchType::kApply, nullptr, bomb, pods);  // 10^9 nodes if expanded
  EXPECT_EQ(r.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.message(), "the document contains excessive aliasing");
}

// A JSON Patch whose "copy" operations copy an array into itself doubles it each time: 40 of them
// (a 3 KB body from a tenant) would make 2^40 elements, and the daemon was killed for memory (22
// GB). As kube-apiserver: what copies add is bounded (3 MiB in all), and so is the number of
// operations (10,000); both are kResourceExhausted (the API's 413). Copies within the bound and
// every other operation still apply.
TEST(KubeHostileJson, JsonPatchCopyBombsAndOperationFloodsAreRefused) {
  const ResourceInfo& pods = *FindResource("", "v1", "pods");
  const json live = {{"metadata", {{"name", "p"}, {"annotations", json::object()}}}};
  json bomb =
      json::array({{{"op", "add"}, {"path", "/metadata/x"}, {"value", {std::string(1000, 'x')}}}});
  for (int i = 0; i < 40; ++i)
    bomb.push_back({{"op", "copy"}, {"from", "/metadata/x"}, {"path", "/metadata/x/-"}});
  auto r = ApplyPatch(PatchType::kJsonPatch, &live, bomb.dump(), pods);
  EXPECT_EQ(r.code(), StatusCode::kResourceExhausted) << r.message();
  EXPECT_NE(
      r.message().find("Unable to complete the copy, the accumulated size increase of copy is"),
      std::string::npos)
      << r.message();
  EXPECT_NE(r.message().find("exceeding the limit 3145728"), std::string::npos) << r.message();

  json many = json::array();
  for (int i = 0; i < 10001; ++i)
    many.push_back({{"op", "add"}, {"path", "/metadata/annotations/a"}, {"value", "v"}});
  r = ApplyPatch(PatchType::kJsonPatch, &live, many.dump(), pods);
  EXPECT_EQ(r.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.message(), "The allowed maximum operations in a JSON patch is 10000, got 10001");

  json fine = json::array({{{"op", "add"}, {"path", "/metadata/x"}, {"value", {"a", "b"}}},
                           {{"op", "copy"}, {"from", "/metadata/x"}, {"path", "/metadata/y"}},
                           {{"op", "move"}, {"from", "/metadata/y"}, {"path", "/metadata/z"}},
                           {{"op", "test"}, {"path", "/metadata/z/1"}, {"value", "b"}}});
  r = ApplyPatch(PatchType::kJsonPatch, &live, fine.dump(), pods);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ((*r)["metadata"]["z"], json({"a", "b"}));
  EXPECT_FALSE((*r)["metadata"].contains("y"));
  fine.push_back({{"op", "test"}, {"path", "/metadata/z/0"}, {"value", "b"}});
  EXPECT_EQ(ApplyPatch(PatchType::kJsonPatch, &live, fine.dump(), pods).code(),
            StatusCode::kConflict);
}

}  // namespace
}  // namespace arbiter::kube
