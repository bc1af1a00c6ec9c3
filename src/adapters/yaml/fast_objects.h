// Pods and Nodes built straight from the fast reader's light tree (fast_yaml.h), with no yaml-cpp
// tree: the bulk of a generated million-pod manifest. It takes only documents that the yaml-cpp
// path (manifest_loader.cc) would load without a single message, with fields it knows; for
// anything else (an error, a warning, a field or an annotation it does not handle) it gives up
// and the loader takes the document the usual way, so every message keeps its text and line.
// The object is the same either way (tests/adapters/fast_yaml_test.cc compares both on every
// manifest of the repository). Pure: no shared state, so documents can be built in parallel.
#pragma once

#include <string>
#include <string_view>

#include "adapters/yaml/fast_yaml.h"
#include "core/objects.h"

namespace arbiter::yaml {

struct DirectObject {
  enum class Kind { kNone, kPod, kNode };
  Kind kind = Kind::kNone;
  Pod pod;
  Node node;
  int line = 0;  // 1-based line of the object (its SourceRef line)
};

// `text`: one document cut by the loader, after `lines_before` lines of `file`. False (and
// out->kind kNone) when the document is not a Pod or Node the direct path takes.
bool BuildDirect(FastReader& reader, std::string_view text, const std::string& file,
                 int lines_before, DirectObject* out);
// The same from the tree the reader holds (parsed from text or from JSON).
bool BuildDirectTree(const FastReader& reader, const std::string& file, int lines_before,
                     DirectObject* out);

}  // namespace arbiter::yaml
