// Cross-object checks on a loaded ManifestSet (pure: no I/O).
//
// The YAML loader checks each field on its own (types, malformed or negative quantities and
// durations, unknown fields). ValidateManifestSet then checks what needs several fields or
// several objects: duplicates, references between objects (PriorityClass, QoS), limits against
// requests, policy ranges (overcommit, scrape interval), ElasticQuota min/max/lendingLimit,
// LimitRange consistency, PodDisruptionBudget fields, and pods that can never be placed.
// Every rule and its severity is listed in docs/manifests.md.
//
// Guarantees: never throws, never aborts on any input; diagnostics are appended in a
// deterministic order (kind by kind, objects in load order).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/objects.h"

namespace arbiter {

// Where each field of each loaded object was written, so cross-object messages can point at the
// exact line. Objects are identified by their SourceRef (file + line of the document). Lines come
// from explicit records or, for a loader that can re-read its input, from a resolver asked on
// demand (so a million objects cost nothing until a message needs a line).
class SourceLocator {
 public:
  // Returns the line of the deepest part of `field_path` found in `object`, or 0.
  using Resolver = std::function<int(const SourceRef& object, std::string_view field_path)>;

  void Record(const SourceRef& object, std::string_view field_path, int line);
  void SetResolver(Resolver r) { resolver_ = std::move(r); }
  bool has_resolver() const { return static_cast<bool>(resolver_); }
  // Line of `field_path` inside `object`; falls back to the nearest known parent path
  // (`spec.containers[0].resources` for `spec.containers[0].resources.limits.cpu`), then to
  // the object's own line.
  int LineOf(const SourceRef& object, std::string_view field_path) const;

 private:
  static std::string Key(const SourceRef& object, std::string_view field_path);
  std::map<std::string, int> lines_;
  Resolver resolver_;
};

// Runs every cross-object rule. `locator` may be null (messages then use object lines).
void ValidateManifestSet(const ManifestSet& set, const SourceLocator* locator, Diagnostics* out);

// Edit distance (byte-wise): insertions, deletions, substitutions and adjacent transpositions.
int EditDistance(std::string_view a, std::string_view b);
// The closest candidate to `word` (case-insensitive edit distance small relative to its
// length), or nothing. Ties go to the earlier candidate.
std::optional<std::string> DidYouMean(std::string_view word,
                                      const std::vector<std::string>& candidates);

// Field paths as diagnostics print them: `path.key`, or `path[key]` when the key is not a plain
// identifier (`spec.hard[requests.cpu]`, `spec.min[nvidia.com/gpu]`). Shared with the loader.
std::string FieldPathChild(const std::string& path, std::string_view key);

// Number of objects in a set (every kind).
size_t CountObjects(const ManifestSet& set);

}  // namespace arbiter
