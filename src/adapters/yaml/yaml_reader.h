// Strict typed reading of yaml-cpp nodes for the manifest loader.
//
// A DocReader belongs to one YAML document (one object). Every getter checks the node's type
// (scalar / map / sequence, and for scalars the YAML type a Kubernetes decoder would give it:
// string, integer, boolean), parses text with the exact core parsers (never via double),
// reports problems as Diagnostics with the node's line. Nothing here throws. (Cross-object checks
// find a field's line through the SourceLocator, which re-reads the document on demand.)
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/decimal.h"
#include "core/diagnostics.h"
#include "core/duration.h"
#include "core/objects.h"
#include "core/validation.h"

namespace arbiter::yaml {

// `path.key`, or `path[key]` when the key is not a plain identifier (`requests.cpu`,
// `nvidia.com/gpu`).
std::string ChildPath(const std::string& path, std::string_view key);
std::string IndexPath(const std::string& path, size_t index);

// 1-based line of a node in its file, 0 when yaml-cpp has no mark for it. Documents are parsed
// one at a time; while a LineOffsetScope is alive, marks are shifted by the line where the
// current document's text starts.
int NodeLine(const YAML::Node& node);
class LineOffsetScope {
 public:
  explicit LineOffsetScope(int lines_before);
  ~LineOffsetScope();
  LineOffsetScope(const LineOffsetScope&) = delete;
  LineOffsetScope& operator=(const LineOffsetScope&) = delete;

 private:
  int saved_;
};

class DocReader {
 public:
  DocReader(std::string file, SourceRef source, Diagnostics* diags, SourceLocator* locator)
      : file_(std::move(file)), source_(std::move(source)), diags_(diags), locator_(locator) {}

  void SetObject(std::string kind, std::string display_name) {
    kind_ = std::move(kind);
    name_ = std::move(display_name);
  }
  const SourceRef& source() const { return source_; }

  void Error(const YAML::Node& at, const std::string& path, std::string message);
  void Warn(const YAML::Node& at, const std::string& path, std::string message);
  void ErrorAtLine(int line, const std::string& path, std::string message);
  size_t errors() const { return errors_; }

  // ---- structures
  struct Field {
    std::string_view name;
    std::function<void(const YAML::Node& value, const std::string& path)> read;
  };
  // Reads a mapping with a fixed set of fields. `ignored`: fields valid in Kubernetes that
  // Arbiter accepts and does not use. `ignored_warn`: same, but they change scheduling in
  // Kubernetes, so their being ignored is worth a warning. Unknown fields are errors with a
  // did-you-mean. A null node is an empty mapping. Returns false when the node is not a map.
  bool ReadStruct(const YAML::Node& node, const std::string& path, const std::vector<Field>& fields,
                  const std::vector<std::string_view>& ignored = {},
                  const std::vector<std::string_view>& ignored_warn = {});
  // Every entry of a mapping with free-form keys (resources, labels). Duplicate and
  // non-scalar keys are errors and skipped.
  bool ForEachEntry(
      const YAML::Node& node, const std::string& path,
      const std::function<void(const std::string& key, const YAML::Node& key_node,
                               const YAML::Node& value, const std::string& path)>& fn);
  bool ForEachItem(const YAML::Node& node, const std::string& path,
                   const std::function<void(const YAML::Node& item, const std::string& path)>& fn);

  // ---- scalars (nullopt after reporting an error)
  std::optional<std::string> String(const YAML::Node& node, const std::string& path);
  std::optional<int64_t> Int(const YAML::Node& node, const std::string& path, int64_t min,
                             int64_t max);
  std::optional<bool> Bool(const YAML::Node& node, const std::string& path);
  // Any scalar (quoted or not) as its text; for quantities, durations and decimals.
  std::optional<std::string> Text(const YAML::Node& node, const std::string& path);
  std::optional<int64_t> Quantity(std::string_view resource, const YAML::Node& node,
                                  const std::string& path);
  // Non-negative duration.
  std::optional<Millis> Duration(const YAML::Node& node, const std::string& path);
  std::optional<Decimal> NonNegativeDecimal(const YAML::Node& node, const std::string& path);
  // One of `allowed` exactly (index into it); a case-insensitive match gets a did-you-mean.
  std::optional<size_t> Enum(const YAML::Node& node, const std::string& path,
                             const std::vector<std::string>& allowed);
  std::vector<std::string> StringList(const YAML::Node& node, const std::string& path);
  std::map<std::string, std::string> StringMap(const YAML::Node& node, const std::string& path,
                                               bool label_values);
  ResourceList Resources(const YAML::Node& node, const std::string& path);

 private:
  void Report(Severity sev, int line, const std::string& path, std::string message);
  std::string file_;
  SourceRef source_;
  Diagnostics* diags_;
  SourceLocator* locator_;
  std::string kind_, name_;
  size_t errors_ = 0;
};

// YAML 1.1 reading of a plain scalar, as kubectl's YAML-to-JSON step (go-yaml) resolves it
// (except the single letters y/n, read as strings). A string field given a plain boolean or
// number is an error: kubectl would send a bool/number and the API server would refuse it.
enum class PlainType { kString, kBool, kInt, kFloat };
PlainType ResolvePlain(std::string_view text);
bool IsQuotedScalar(const YAML::Node& node);

}  // namespace arbiter::yaml
