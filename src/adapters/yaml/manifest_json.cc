// LoadManifestJson (manifest_loader.h): a JSON object as the yaml-cpp tree YAML::Load builds from
// its JSON text, then loaded as that document. Strings are quoted scalars (tag "!": "true" or
// "8" stay strings), numbers and booleans plain scalars written as the JSON text writes them
// (tag "?"), null YAML's null; mappings keep the object's key order. The same tree as
// fast_yaml.cc's ToYaml builds for the same text. A Pod or Node the direct path takes
// (fast_objects.h: no message, fields it knows) is built from the fast reader's tree of the
// object instead, with no yaml-cpp tree: the same object (tests/adapters/fast_yaml_test.cc).
#include <yaml-cpp/yaml.h>

#include <exception>
#include <nlohmann/json.hpp>

#include "adapters/yaml/fast_objects.h"
#include "adapters/yaml/fast_yaml.h"
#include "adapters/yaml/manifest_loader.h"

namespace arbiter::yaml {
namespace {

void ToYaml(const nlohmann::json& j, YAML::Node& v) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      v = YAML::Null;
      return;
    case nlohmann::json::value_t::string:
      v = j.get_ref<const std::string&>();
      v.SetTag("!");
      return;
    case nlohmann::json::value_t::boolean:
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
    case nlohmann::json::value_t::binary:
      v = j.dump();
      break;
    case nlohmann::json::value_t::object:
      v = YAML::Node(YAML::NodeType::Map);
      for (const auto& [key, value] : j.items()) {
        YAML::Node child = v[key];
        ToYaml(value, child);
      }
      break;
    case nlohmann::json::value_t::array: {
      v = YAML::Node(YAML::NodeType::Sequence);
      for (const auto& value : j) {
        YAML::Node child;
        ToYaml(value, child);
        v.push_back(child);
      }
      break;
    }
  }
  v.SetTag("?");
}

// True when the object was a Pod or Node the direct path built (added to out->set).
bool LoadDirect(const nlohmann::json& object, const std::string& file, ManifestLoad* out) {
  thread_local FastReader reader;  // buffers reused from one request to the next
  DirectObject d;
  try {
    if (!out->fast_yaml || !reader.ParseJson(object) || !BuildDirectTree(reader, file, 0, &d))
      return false;
  } catch (const std::exception&) {  // e.g. out of memory: the usual path reports it
    return false;
  }
  if (d.kind == DirectObject::Kind::kPod)
    out->set.pods.push_back(std::move(d.pod));
  else
    out->set.nodes.push_back(std::move(d.node));
  ResolvePodGroups(&out->set);
  ResolveFlavors(&out->set);
  return true;
}

}  // namespace

void LoadManifestJson(const nlohmann::json& object, const std::string& file, ManifestLoad* out) {
  if (LoadDirect(object, file, out)) return;
  YAML::Node doc;
  ToYaml(object, doc);
  LoadManifestNode(doc, file, out);
}

}  // namespace arbiter::yaml
