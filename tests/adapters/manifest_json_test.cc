// LoadManifestJson (adapters/yaml/manifest_loader.h): an object already parsed as JSON loads as its
// JSON text does through LoadManifestText: the same objects and messages (lines aside: the text of
// one object is one line, the tree has none). Checked on every document of every manifest in the
// repository, turned into JSON as a YAML reader types it. A Pod or Node the direct path takes
// (fast_objects.h, from the fast reader's tree of the object) loads as through yaml-cpp's tree.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "adapters/load_fingerprint.h"
#include "adapters/yaml/fast_objects.h"
#include "adapters/yaml/fast_yaml.h"
#include "adapters/yaml/manifest_loader.h"

namespace arbiter::yaml {
namespace manifest_json_test {

using Json = nlohmann::json;

// A YAML tree as JSON: quoted scalars are strings; plain ones numbers, booleans or null when they
// read as such (YAML 1.2's core schema), else strings.
Json FromYaml(const YAML::Node& n) {
  if (n.IsNull()) return nullptr;
  if (n.IsScalar()) {
    const std::string& s = n.Scalar();
    if (n.Tag() == "!") return s;
    static const std::regex integer("[-+]?[0-9]+"), real("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+)");
    if (std::regex_match(s, integer) && s.size() < 18) return std::stoll(s);
    if (std::regex_match(s, real)) return std::stod(s);
    if (s == "true" || s == "True") return true;
    if (s == "false" || s == "False") return false;
    return s;
  }
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& item : n) a.push_back(FromYaml(item));
    return a;
  }
  Json o = Json::object();
  for (const auto& kv : n) o[kv.first.Scalar()] = FromYaml(kv.second);
  return o;
}

using testing::Fingerprint;

void ExpectSameLoad(const Json& object, const std::string& what) {
  ManifestLoad text, tree, yaml_cpp;
  LoadManifestText(object.dump(), "o", &text);
  LoadManifestJson(object, "o", &tree);
  yaml_cpp.fast_yaml = false;
  LoadManifestJson(object, "o", &yaml_cpp);
  EXPECT_EQ(Fingerprint(text, false), Fingerprint(tree, false)) << what << "\n" << object.dump();
  EXPECT_EQ(Fingerprint(yaml_cpp), Fingerprint(tree)) << what << "\n" << object.dump();
}

// True when the direct path builds the object (no yaml-cpp tree).
bool Direct(const Json& object) {
  FastReader reader;
  DirectObject d;
  return reader.ParseJson(object) && BuildDirectTree(reader, "o", 0, &d);
}

TEST(ManifestJson, EveryDocumentInTheRepositoryLoadsAsItsJsonText) {
  namespace fs = std::filesystem;
  size_t docs = 0;
  for (const char* dir : {"examples", "tests/scenarios", "docs", "deploy"}) {
    const fs::path root = fs::path(ARBITER_SOURCE_DIR) / dir;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
      std::vector<YAML::Node> all;
      try {
        all = YAML::LoadAllFromFile(e.path().string());
      } catch (const YAML::Exception&) {
        continue;  // not YAML on purpose (a test of the loader's messages)
      }
      for (const auto& doc : all) {
        if (!doc.IsMap()) continue;
        ExpectSameLoad(FromYaml(doc), e.path().string());
        ++docs;
      }
    }
  }
  EXPECT_GT(docs, 500u);
}

TEST(ManifestJson, ObjectsAsAnApiServerSendsThemAndBadOnes) {
  // Server fields, strings that read as numbers, wrong types, nulls, an empty object.
  for (const char* text : {
           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"a",
              "uid":"u","resourceVersion":"9","labels":{"x":"true","y":"8"}},
              "spec":{"schedulerName":"arbiter","priority":0,"containers":[{"name":"c",
              "resources":{"requests":{"cpu":"2","memory":"8Gi","nvidia.com/gpu":"1"}}}]}})",
           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[
              {"name":"c","resources":{"requests":{"cpu":2.5,"memory":null}}}]}})",
           R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":1}},
              "spec":{"containers":"no"}})",
           R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},
              "status":{"capacity":{"cpu":"64","memory":"1Ti","nvidia.com/gpu":8}}})",
           R"({"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup",
              "metadata":{"name":"g","namespace":"a"},"spec":{"minMember":3}})",
           R"({"kind":"Nope"})",
           R"({})",
       })
    ExpectSameLoad(Json::parse(text), text);
}

TEST(ManifestJson, DirectPathTakesPlainPodsAndNodesAndLeavesTheRest) {
  const Json pod = Json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
      "namespace":"a","uid":"u","labels":{"x":"true"},"annotations":{"arbiter.dev/duration":"60s",
      "note":null}},"spec":{"priority":3,"nodeSelector":{"zone":"b"},"containers":[{"name":"c",
      "resources":{"requests":{"cpu":"10m","memory":"1Gi"},"limits":{"cpu":1}}}]},
      "status":{"phase":"Pending"}})");
  const Json node = Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},
      "spec":{"unschedulable":false},"status":{"capacity":{"cpu":"64","memory":"1Ti"}}})");
  EXPECT_TRUE(Direct(pod));
  EXPECT_TRUE(Direct(node));
  ExpectSameLoad(pod, "pod");
  ExpectSameLoad(node, "node");
  // Outside the subset (non-ASCII, control characters, an empty key), with a message, or a field
  // the direct path does not read: yaml-cpp's tree, the same objects and messages.
  std::vector<Json> others;
  auto with = [&](const Json& base, const Json::json_pointer& at, const Json& v) {
    Json o = base;
    o[at] = v;
    others.push_back(o);
  };
  with(pod, Json::json_pointer("/metadata/annotations/note"), "caf\u00e9");
  with(pod, Json::json_pointer("/metadata/annotations/note"), "a\nb");
  with(pod, Json::json_pointer("/metadata/annotations/"), "x");
  with(pod, Json::json_pointer("/metadata/labels/x"), "caf\u00e9");
  with(pod, Json::json_pointer("/metadata/name"), "P");
  with(pod, Json::json_pointer("/metadata/name"), 7);
  with(pod, Json::json_pointer("/spec/priority"), "3");
  with(pod, Json::json_pointer("/spec/priority"), 3.5);
  with(pod, Json::json_pointer("/spec/priority"), 3000000000LL);
  with(pod, Json::json_pointer("/spec/tolerations"), Json::parse(R"([{"operator":"Exists"}])"));
  with(pod, Json::json_pointer("/spec/containers/0/resources/requests/cpu"), true);
  with(pod, Json::json_pointer("/spec/containers/0/resources/requests/cpu"), "1x");
  with(pod, Json::json_pointer("/spec/containers/1"), Json::parse(R"({"name":"c"})"));
  with(pod, Json::json_pointer("/apiVersion"), "v2");
  with(node, Json::json_pointer("/metadata/namespace"), "x");
  with(node, Json::json_pointer("/spec/unschedulable"), "true");
  with(node, Json::json_pointer("/status/capacity/cpu"), Json::array());
  for (const Json& o : others) {
    EXPECT_FALSE(Direct(o)) << o.dump();
    ExpectSameLoad(o, "changed");
  }
}

}  // namespace manifest_json_test
}  // namespace arbiter::yaml
