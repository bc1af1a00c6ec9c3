// A fast reader for the plain subset of YAML that generated manifests use: block mappings and
// lists indented with spaces, one-line flow mappings and lists, plain, single- and double-quoted
// one-line scalars, comments. It builds the same yaml-cpp tree as YAML::Load would (types, keys in
// order, tags "!" for quoted and "?" for plain values), without marks (the caller knows the
// document's line) and without tags on keys (the loader reads keys as text). Anything outside the
// subset (anchors, tags, block scalars, multi-line scalars, escapes other than \\ and \", tabs,
// duplicate keys, ...) makes it give up, and the caller parses the document with yaml-cpp, which
// gives the exact tree or the exact error. yaml-cpp's scanner is most of the time of loading a
// million-pod manifest; this is about ten times faster.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

namespace arbiter::yaml {

struct FastDocument {
  YAML::Node root;
  int line = 0;  // 0-based line of the root node in the text
};

// Parses one document (a piece cut by the loader at `---` / `...`: an optional leading `---`
// line, then one mapping or list). nullopt: outside the subset, or no document at all.
std::optional<FastDocument> ParseFastDocument(std::string_view text);

}  // namespace arbiter::yaml
