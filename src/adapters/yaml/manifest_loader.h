// Loads multi-document YAML manifests into a ManifestSet, with strict typing and line numbers.
// yaml-cpp exceptions never escape: every problem becomes a Diagnostic.
// A load with any error must not be used (ManifestLoad::ok() is false).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/objects.h"
#include "core/validation.h"

namespace YAML {
class Node;
}

namespace arbiter::yaml {

class DocIndex;  // the loaded documents' text, for the locator

struct ManifestLoad {
  ManifestSet set;
  Diagnostics diagnostics;
  SourceLocator locator;  // finds the line of any field, for cross-object messages
  std::shared_ptr<DocIndex> doc_index;
  // Pods and Nodes in the plain YAML subset are built by the fast reader (fast_yaml.h,
  // fast_objects.h), the rest read by yaml-cpp; the result is the same either way (false:
  // yaml-cpp only, for tests).
  bool fast_yaml = true;
  // Threads that build those Pods and Nodes (0: up to 2, the machine's cores); the result is the
  // same with any number.
  int threads = 0;
  // Drops the documents' text kept for on-demand line lookups (later messages use object lines).
  void ReleaseSources() {
    locator.SetResolver(nullptr);
    doc_index.reset();
  }
  bool ok() const { return !diagnostics.HasErrors(); }
};

// Parses one file's text (`file` is the name used in messages).
void LoadManifestText(const std::string& text, const std::string& file, ManifestLoad* out);
// Loads one object given as a tree, as LoadManifestText loads one document (the same objects and
// messages, without source lines): an object an API server sent, already parsed, is not
// written out and scanned again. LoadManifestNode takes the tree yaml-cpp would build;
// LoadManifestJson a JSON object (manifest_json.cc: strings as quoted scalars, numbers, booleans
// and null as plain ones, as YAML reads the object's JSON text).
void LoadManifestNode(const YAML::Node& doc, const std::string& file, ManifestLoad* out);
void LoadManifestJson(const nlohmann::json& object, const std::string& file, ManifestLoad* out);
// Reads and parses files in order, then runs the cross-object checks (core/validation.h).
// A file that cannot be read is an error diagnostic with line 0.
ManifestLoad LoadManifestFiles(const std::vector<std::string>& paths);

}  // namespace arbiter::yaml
