// A fast reader for the plain subset of YAML that generated manifests use: block mappings and
// lists indented with spaces, one-line flow mappings and lists, plain, single- and double-quoted
// one-line scalars, comments. It builds a light tree (FastReader: nodes in one array, scalars
// viewing the text) that fast_objects.h turns into Pods and Nodes directly, and can build the
// same yaml-cpp tree as YAML::Load would (ParseFastDocument: types, keys in order, tags "!" for
// quoted and "?" for plain values), without marks (the caller knows the document's line) and
// without tags on keys (the loader reads keys as text). Anything outside the subset (anchors,
// tags, block scalars, multi-line scalars, escapes other than \\ and \", tabs, duplicate keys,
// ...) makes it give up, and the caller parses the document with yaml-cpp, which gives the exact
// tree or the exact error. yaml-cpp's scanner is most of the time of loading a million-pod
// manifest; this is about ten times faster.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <deque>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::yaml {

constexpr uint32_t kNoNode = UINT32_MAX;

// One node of the light tree. A mapping's children are key, value, key, value, ...; a list's
// are its items. Children are linked through `next`.
struct FastNode {
  enum class Type : uint8_t { kNull, kScalar, kMap, kSeq };
  Type type = Type::kNull;
  bool quoted = false;  // a scalar written in quotes (a string whatever its text)
  uint32_t first = kNoNode;
  uint32_t next = kNoNode;
  uint32_t size = 0;      // mapping entries or list items
  std::string_view text;  // a scalar's text (in the document, or unescaped in the reader)
};

// Reads one document at a time; its buffers are reused from one document to the next. Not
// shared between threads (one reader per thread).
class FastReader {
 public:
  // Parses one document (a piece cut by the loader at `---` / `...`: an optional leading `---`
  // line, then one mapping or list). False: outside the subset, or no document at all. The
  // tree views `text`, which must outlive it.
  bool Parse(std::string_view text);
  // The tree of a JSON object as LoadManifestJson (manifest_loader.h) reads it: strings quoted
  // scalars, numbers and booleans plain ones with the JSON text, null null. False outside the
  // subset Parse takes (a string or key with a byte outside printable ASCII, an empty key). The
  // tree views the object's strings: the object must outlive it and not change.
  bool ParseJson(const nlohmann::json& object);
  const FastNode& root() const { return nodes_[0]; }
  const FastNode& at(uint32_t i) const { return nodes_[i]; }
  int line() const { return line_; }  // 0-based line of the root node in the text

  // The value of a mapping entry whose key is `key`.
  const FastNode& value(const FastNode& key) const { return nodes_[key.next]; }
  // The key after this mapping entry's, or nullptr.
  const FastNode* next_key(const FastNode& key) const {
    const uint32_t n = nodes_[key.next].next;
    return n == kNoNode ? nullptr : &nodes_[n];
  }
  const FastNode* first(const FastNode& n) const {
    return n.first == kNoNode ? nullptr : &nodes_[n.first];
  }
  const FastNode* next(const FastNode& n) const {
    return n.next == kNoNode ? nullptr : &nodes_[n.next];
  }

  // The yaml-cpp tree of node i.
  void ToYaml(uint32_t i, YAML::Node& out) const;

 private:
  friend class FastParser;
  bool AddJson(const nlohmann::json& j, uint32_t v);
  std::vector<std::string_view> lines_;
  std::vector<int> indent_;  // -1: blank, comment or marker line
  std::vector<FastNode> nodes_;
  std::deque<std::string> owned_;  // unescaped quoted scalars
  int line_ = 0;
};

struct FastDocument {
  YAML::Node root;
  int line = 0;  // 0-based line of the root node in the text
};

// The yaml-cpp tree of one document (see FastReader::Parse); nullopt outside the subset.
std::optional<FastDocument> ParseFastDocument(std::string_view text);

}  // namespace arbiter::yaml
