// LoadManifestJson (adapters/yaml/manifest_loader.h): an object already parsed as JSON loads as its
// JSON text does through LoadManifestText: the same objects and messages (lines aside: the text of
// one object is one line, the tree has none). Checked on every document of every manifest in the
// repository, turned into JSON as a YAML reader types it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "adapters/load_fingerprint.h"
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
  ManifestLoad text, tree;
  LoadManifestText(object.dump(), "o", &text);
  LoadManifestJson(object, "o", &tree);
  EXPECT_EQ(Fingerprint(text, false), Fingerprint(tree, false)) << what << "\n" << object.dump();
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

}  // namespace manifest_json_test
}  // namespace arbiter::yaml
