#include "adapters/kube/patch.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "adapters/kube/limits.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

constexpr std::string_view kPatchDirective = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";

// How a list merges: atomic (replaced), or merged by `key` ("" for a set of primitives).
struct ListMeta {
  std::string key;
  bool retain_keys = false;
};
using Schema = std::map<std::string, ListMeta, std::less<>>;  // path "spec.containers.env"

Schema PodSchema() {
  Schema s = {
      {"metadata.finalizers", {""}},      {"metadata.ownerReferences", {"uid"}},
      {"spec.volumes", {"name", true}},   {"spec.imagePullSecrets", {"name"}},
      {"spec.hostAliases", {"ip"}},       {"spec.topologySpreadConstraints", {"topologyKey"}},
      {"spec.schedulingGates", {"name"}}, {"spec.resourceClaims", {"name", true}},
      {"status.conditions", {"type"}},    {"status.podIPs", {"ip"}},
      {"status.hostIPs", {"ip"}}};
  for (const char* c : {"spec.containers", "spec.initContainers", "spec.ephemeralContainers"}) {
    const std::string p = c;
    s[p] = {"name"};
    s[p + ".env"] = {"name"};
    s[p + ".ports"] = {"containerPort"};
    s[p + ".volumeMounts"] = {"mountPath"};
    s[p + ".volumeDevices"] = {"devicePath"};
  }
  return s;
}

const Schema* SchemaOf(const ResourceInfo& r) {
  static const Schema kMeta = {{"metadata.finalizers", {""}},
                               {"metadata.ownerReferences", {"uid"}}};
  static const Schema kPod = PodSchema();
  static const Schema kNode = {{"metadata.finalizers", {""}},
                               {"metadata.ownerReferences", {"uid"}},
                               {"spec.podCIDRs", {""}},
                               {"status.conditions", {"type"}},
                               {"status.addresses", {"type"}}};
  static const Schema kWithConditions = {{"metadata.finalizers", {""}},
                                         {"metadata.ownerReferences", {"uid"}},
                                         {"status.conditions", {"type"}}};
  if (r.group == "arbiter.dev") return nullptr;  // custom kinds: no patch strategies
  if (r.kind == "Pod") return &kPod;
  if (r.kind == "Node") return &kNode;
  if (r.kind == "Namespace" || r.kind == "PodDisruptionBudget") return &kWithConditions;
  return &kMeta;
}

const ListMeta* Lookup(const Schema* schema, const std::string& path) {
  if (!schema) return nullptr;
  auto it = schema->find(path);
  return it == schema->end() ? nullptr : &it->second;
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool IsDirectiveKey(const std::string& k) { return !k.empty() && k[0] == '$'; }

// A patch value taken as is (no live counterpart): directives dropped, deleted elements gone.
json Strip(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (IsDirectiveKey(it.key())) continue;
      if (it.value().is_null()) continue;
      out[it.key()] = Strip(it.value());
    }
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& e : v) {
      if (e.is_object() && e.contains(kPatchDirective)) {
        if (e[kPatchDirective] == "delete") continue;
        if (e.size() == 1) continue;  // a bare {"$patch": "replace"}
      }
      out.push_back(Strip(e));
    }
    return out;
  }
  return v;
}

Status Bad(std::string m) { return Status::InvalidArgument(std::move(m)); }

constexpr size_t kMaxDepth = 64;           // Kubernetes objects nest about 15 deep
constexpr size_t kMaxYamlNodes = 1000000;  // YAML aliases may expand a small body
// kube-apiserver's bounds on a JSON Patch (handlers/patch.go maxJSONPatchOperations, and
// JSONPatchMaxCopyBytes, its request body limit, for what "copy" operations add in all).
constexpr size_t kMaxJsonPatchOperations = 10000;
constexpr size_t kMaxJsonPatchCopyBytes = 3u << 20;

Status TooDeep() {
  return Status::InvalidArgument("the body nests deeper than " + std::to_string(kMaxDepth) +
                                 " levels");
}

// A string member, "" when absent or of another type (client input: never trust the type).
std::string StringAt(const json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<json> MergeValue(const json* live, const json& patch, const Schema* schema,
                        const std::string& path);

// Merge keys and set members compare as kube's decoder reads JSON, numbers as float64: a strict
// weak order whose equivalence is their equality, so that elements are found in O(log n) rather
// than by scanning the list (a patch of n elements against a list of n cost n^2 comparisons:
// 40k elements took 24 s). (nlohmann's == compares an integer with a float as doubles but two
// integers exactly: it is not transitive, and no index can follow it.)
int Rank(const json& v) {
  if (v.is_null()) return 0;
  if (v.is_boolean()) return 1;
  if (v.is_number()) return 2;
  if (v.is_string()) return 3;
  if (v.is_array()) return 4;
  if (v.is_object()) return 5;
  return 6;  // binary or discarded: never parsed from a body
}

int Sign(int c) { return (c > 0) - (c < 0); }

int Compare(const json& a, const json& b) {
  const int ra = Rank(a);
  const int rb = Rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 1:
      return static_cast<int>(a.get<bool>()) - static_cast<int>(b.get<bool>());
    case 2: {
      const double x = a.get<double>();
      const double y = b.get<double>();
      return x < y ? -1 : y < x ? 1 : 0;
    }
    case 3:
      return Sign(a.get_ref<const std::string&>().compare(b.get_ref<const std::string&>()));
    case 4:
    case 5: {
      auto i = a.begin();
      auto j = b.begin();
      for (; i != a.end() && j != b.end(); ++i, ++j) {
        if (ra == 5)
          if (int c = Sign(i.key().compare(j.key())); c != 0) return c;
        if (int c = Compare(*i, *j); c != 0) return c;
      }
      return i == a.end() ? (j == b.end() ? 0 : -1) : 1;
    }
    case 6:
      return Sign(a.dump().compare(b.dump()));
  }
  return 0;
}

struct KeyLess {
  bool operator()(const json& a, const json& b) const { return Compare(a, b) < 0; }
  bool operator()(const json* a, const json* b) const { return Compare(*a, *b) < 0; }
};

// A list's element's merge key ("" for a set of primitives: the element itself); nullptr when it
// has none.
const json* KeyOf(const json& element, const std::string& key) {
  if (key.empty()) return &element;
  if (!element.is_object()) return nullptr;
  auto it = element.find(key);
  return it == element.end() ? nullptr : &*it;
}

// A keyed list being merged: its elements in order (erased ones left as holes until Take) and,
// by merge key, where they are; Find gives the first element with a key, as a scan would.
class KeyedList {
 public:
  KeyedList(const json& live, std::string key) : key_(std::move(key)) {
    for (const auto& e : live) Append(e);
  }
  std::optional<size_t> Find(const json& k) const {
    auto it = index_.find(k);
    if (it == index_.end()) return std::nullopt;
    return *it->second.begin();
  }
  const json& At(size_t i) const { return *slots_[i]; }
  void Set(size_t i, json v) {
    Unindex(i);
    slots_[i] = std::move(v);
    Index(i);
  }
  void Erase(size_t i) {
    Unindex(i);
    slots_[i].reset();
  }
  void Append(json v) {
    slots_.push_back(std::move(v));
    Index(slots_.size() - 1);
  }
  json Take() && {
    json out = json::array();
    for (auto& e : slots_)
      if (e) out.push_back(std::move(*e));
    return out;
  }

 private:
  void Index(size_t i) {
    if (const json* k = KeyOf(*slots_[i], key_)) index_[*k].insert(i);
  }
  void Unindex(size_t i) {
    const json* k = KeyOf(*slots_[i], key_);
    if (!k) return;
    auto it = index_.find(*k);
    it->second.erase(i);
    if (it->second.empty()) index_.erase(it);
  }

  std::string key_;
  std::vector<std::optional<json>> slots_;
  std::map<json, std::set<size_t>, KeyLess> index_;  // merge key -> positions, in order
};

// The merged list ordered by $setElementOrder: listed elements first in that order, then the rest
// in their current order. Each entry of `order` takes the first element with its key not yet
// taken.
json Reorder(const json& list, const json& order, const ListMeta& meta) {
  struct Positions {
    std::vector<size_t> at;
    size_t next = 0;
  };
  std::map<const json*, Positions, KeyLess> where;
  for (size_t i = 0; i < list.size(); ++i)
    if (const json* k = KeyOf(list[i], meta.key)) where[k].at.push_back(i);
  json out = json::array();
  std::vector<bool> used(list.size(), false);
  for (const auto& o : order) {
    const json* k = KeyOf(o, meta.key);
    auto it = k ? where.find(k) : where.end();
    if (it == where.end() || it->second.next == it->second.at.size()) continue;
    const size_t i = it->second.at[it->second.next++];
    out.push_back(list[i]);
    used[i] = true;
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (!used[i]) out.push_back(list[i]);
  return out;
}

// A set of primitives: the patch's members that are not there yet, appended in order.
json MergeSet(const json& live, const json& patch) {
  json out = live;
  std::set<const json*, KeyLess> present;
  for (const auto& e : live) present.insert(&e);
  for (const auto& e : patch)
    if (present.insert(&e).second) out.push_back(e);
  return out;
}

Result<json> MergeList(const json& live, const json& patch, const ListMeta& meta,
                       const Schema* schema, const std::string& path) {
  // {"$patch": "replace"} anywhere in the patch list: the list is the other elements.
  for (const auto& e : patch)
    if (e.is_object() && e.contains(kPatchDirective) && e[kPatchDirective] == "replace")
      return Strip(patch);
  if (meta.key.empty()) return MergeSet(live, patch);
  KeyedList out(live, meta.key);
  for (const auto& e : patch) {
    if (!e.is_object() || !e.contains(meta.key))
      return Bad(path + ": map does not contain declared merge key: " + meta.key);
    const std::optional<size_t> at = out.Find(e[meta.key]);
    if (e.contains(kPatchDirective)) {
      const json& d = e[kPatchDirective];
      if (d == "delete") {
        if (at) out.Erase(*at);
        continue;
      }
      if (d == "replace") {
        json r = Strip(e);
        if (at)
          out.Set(*at, std::move(r));
        else
          out.Append(std::move(r));
        continue;
      }
      if (d != "merge") return Bad(path + ": unknown patch type: " + d.dump());
    }
    if (!at) {
      out.Append(Strip(e));
      continue;
    }
    auto merged = MergeValue(&out.At(*at), e, schema, path);
    if (!merged.ok()) return merged.status();
    out.Set(*at, std::move(merged).value());
  }
  return std::move(out).Take();
}

// `list` without the members of `doomed` ($deleteFromPrimitiveList).
json WithoutMembers(const json& list, const json& doomed) {
  std::set<const json*, KeyLess> gone;
  for (const auto& v : doomed) gone.insert(&v);
  json kept = json::array();
  for (const auto& v : list)
    if (!gone.count(&v)) kept.push_back(v);
  return kept;
}

// The members of `obj` that `keep` names ($retainKeys).
json Retained(const json& obj, const json& keep) {
  std::set<std::string_view> names;
  for (const auto& k : keep)
    if (k.is_string()) names.insert(k.get_ref<const std::string&>());
  json kept = json::object();
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (names.count(it.key())) kept[it.key()] = it.value();
  return kept;
}

Result<json> MergeMap(const json& live, const json& patch, const Schema* schema,
                      const std::string& path) {
  if (patch.contains(kPatchDirective)) {
    const json& d = patch[kPatchDirective];
    if (d == "replace") return Strip(patch);
    if (d == "delete") return json(nullptr);
    if (d != "merge") return Bad(Join(path, "$patch") + ": unknown patch type: " + d.dump());
  }
  json out = live.is_object() ? live : json::object();
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (key.rfind(kDeleteFromPrimitiveList, 0) == 0) {
      const std::string field = key.substr(kDeleteFromPrimitiveList.size());
      if (!it.value().is_array()) return Bad(Join(path, key) + ": must be a list");
      if (out.contains(field) && out[field].is_array())
        out[field] = WithoutMembers(out[field], it.value());
      continue;
    }
    if (IsDirectiveKey(key)) continue;  // $patch, $retainKeys, $setElementOrder: below
    const json& pv = it.value();
    if (pv.is_null()) {
      out.erase(key);
      continue;
    }
    const json* lv = out.contains(key) ? &out[key] : nullptr;
    auto merged = MergeValue(lv, pv, schema, Join(path, key));
    if (!merged.ok()) return merged.status();
    if (merged->is_null())
      out.erase(key);  // {"$patch": "delete"}
    else
      out[key] = std::move(merged).value();
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (key.rfind(kSetElementOrder, 0) != 0) continue;
    const std::string field = key.substr(kSetElementOrder.size());
    if (!it.value().is_array()) return Bad(Join(path, key) + ": must be a list");
    const ListMeta* meta = Lookup(schema, Join(path, field));
    if (meta && out.contains(field) && out[field].is_array())
      out[field] = Reorder(out[field], it.value(), *meta);
  }
  if (patch.contains(kRetainKeys)) {
    const json& keep = patch[kRetainKeys];
    if (!keep.is_array()) return Bad(Join(path, "$retainKeys") + ": must be a list");
    out = Retained(out, keep);
  }
  return out;
}

Result<json> MergeValue(const json* live, const json& patch, const Schema* schema,
                        const std::string& path) {
  if (patch.is_object()) {
    if (!live || !live->is_object()) {
      if (patch.contains(kPatchDirective) && patch[kPatchDirective] == "delete")
        return json(nullptr);
      return Strip(patch);
    }
    return MergeMap(*live, patch, schema, path);
  }
  if (patch.is_array()) {
    const ListMeta* meta = Lookup(schema, path);
    if (!meta || !live || !live->is_array()) return Strip(patch);
    return MergeList(*live, patch, *meta, schema, path);
  }
  return patch;
}

// ---------------------------------------------------------------- apply ownership (FieldsV1)

bool NotOwnedField(const std::string& path, const std::string& key, bool root) {
  if (root) return key == "apiVersion" || key == "kind" || key == "status";
  if (path == "metadata")
    return key == "name" || key == "namespace" || key == "managedFields" ||
           key == "resourceVersion" || key == "uid" || key == "creationTimestamp" ||
           key == "generation" || key == "deletionTimestamp";
  return false;
}

std::string ElementId(const json& e, const ListMeta& meta) {
  if (meta.key.empty()) return "v:" + e.dump();
  if (!e.is_object() || !e.contains(meta.key)) return "";
  return "k:" + json{{meta.key, e[meta.key]}}.dump();
}

// The fields a configuration sets, in kube's FieldsV1 shape: "f:<key>" for fields,
// "k:{"<mergeKey>":<value>}" for keyed list elements (with "." for the element itself),
// "v:<value>" for members of a set.
json FieldSet(const json& v, const Schema* schema, const std::string& path, bool root) {
  json out = json::object();
  if (!v.is_object()) return out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    if (IsDirectiveKey(k) || it.value().is_null() || NotOwnedField(path, k, root)) continue;
    const std::string p = Join(path, k);
    const json& c = it.value();
    json entry = json::object();
    if (c.is_object()) {
      entry = FieldSet(c, schema, p, false);
    } else if (c.is_array()) {
      if (const ListMeta* meta = Lookup(schema, p))
        for (const auto& e : c) {
          const std::string id = ElementId(e, *meta);
          if (id.empty()) continue;
          json sub = meta->key.empty() ? json::object() : FieldSet(e, schema, p, false);
          if (!meta->key.empty()) sub["."] = json::object();
          entry[id] = std::move(sub);
        }
    }
    out["f:" + k] = std::move(entry);
  }
  return out;
}

std::vector<const json*> Children(const std::vector<const json*>& sets, const std::string& id) {
  std::vector<const json*> out;
  for (const json* s : sets)
    if (s->is_object() && s->contains(id)) out.push_back(&(*s)[id]);
  return out;
}

// Removes from `obj` what `previous` owned and `now` does not, unless one of `others` owns it.
void RemoveDisowned(json& obj, const json& previous, const json& now,
                    const std::vector<const json*>& others, const Schema* schema,
                    const std::string& path) {
  if (!obj.is_object() || !previous.is_object()) return;
  for (auto it = previous.begin(); it != previous.end(); ++it) {
    const std::string& fk = it.key();
    if (fk.rfind("f:", 0) != 0) continue;
    const std::string k = fk.substr(2);
    if (!obj.contains(k)) continue;
    const auto other_children = Children(others, fk);
    if (!now.contains(fk) && other_children.empty()) {
      obj.erase(k);
      continue;
    }
    // Still owned, by this manager or by another: what in it is no longer anybody's goes.
    static const json kNothing = json::object();
    json& child = obj[k];
    const json& pc = it.value();
    const json& nc = now.contains(fk) ? now[fk] : kNothing;
    const std::string p = Join(path, k);
    if (child.is_object()) {
      RemoveDisowned(child, pc, nc, other_children, schema, p);
    } else if (child.is_array()) {
      const ListMeta* meta = Lookup(schema, p);
      if (!meta) continue;
      json kept = json::array();
      for (auto& e : child) {
        const std::string id = ElementId(e, *meta);
        const bool was = !id.empty() && pc.is_object() && pc.contains(id);
        const bool is = !id.empty() && nc.is_object() && nc.contains(id);
        const auto other_elements = Children(other_children, id);
        if (was && !is && other_elements.empty()) continue;
        if (was && is && !meta->key.empty())
          RemoveDisowned(e, pc[id], nc[id], other_elements, schema, p);
        kept.push_back(e);
      }
      child = std::move(kept);
    }
  }
}

// Scans digits from `i`; whether there was one.
bool ScanDigits(std::string_view s, size_t& i) {
  const size_t from = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i > from;
}

// YAML 1.2 core schema's int ([-+]?[0-9]+) and float
// ([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?), scanned by hand: libstdc++'s std::regex
// recurses once per character, and a plain scalar of 100 KB of digits overflowed the stack.
bool IsYamlInt(std::string_view s) {
  size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return ScanDigits(s, i) && i == s.size();
}
bool IsYamlFloat(std::string_view s) {
  size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!ScanDigits(s, i)) return false;
  } else {
    if (!ScanDigits(s, i)) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      (void)ScanDigits(s, i);
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!ScanDigits(s, i)) return false;
  }
  return i == s.size();
}

// YAML 1.2 core schema for plain scalars.
json ResolveScalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;  // quoted or explicitly tagged: a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsYamlInt(s)) {
    try {
      if (s[0] == '-') return std::stoll(s);
      return std::stoull(s[0] == '+' ? s.substr(1) : s);
    } catch (const std::exception&) {
      return s;
    }
  }
  if (IsYamlFloat(s)) {
    try {
      return std::stod(s);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

// kube-apiserver's YAML decoder (go-yaml v2 decode.go) refuses a document when too much of what it
// decodes comes from alias expansions: more than 100 nodes of more than 1000, and a share above
// 99% (down to 10% from 400k to 4M nodes). Counted here from the parser's events, before any node
// is built or an alias expanded (an alias adds the size of the node it names, known when that node
// closed), so that a billion-laughs body of a few KB is refused at once rather than expanded to
// tens of MB before the object's size is checked. The text aliases repeat is bounded too
// (kMaxBodyBytes), which go-yaml needs not: its strings share their bytes.
class AliasCount : public YAML::EventHandler {
 public:
  // Why the document must not be expanded; empty when it may.
  const std::string& refusal() const { return refusal_; }

  void OnDocumentStart(const YAML::Mark&) override { Add({1, 0}, false); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t a) override { Leaf(a, 0); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t a) override {
    Add({1, 0}, false);
    auto it = named_.find(a);
    if (it == named_.end()) return Refuse("an anchor's value contains itself");  // still open
    Add(it->second, true);
  }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t a,
                const std::string& value) override {
    Leaf(a, value.size());
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t a,
                       YAML::EmitterStyle::value) override {
    Open(a);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t a,
                  YAML::EmitterStyle::value) override {
    Open(a);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Size {
    uint64_t nodes = 0;
    uint64_t bytes = 0;  // of scalars
  };
  static constexpr uint64_t kCap = uint64_t{1}
                                   << 60;  // sizes double at most per level: no overflow

  static double AllowedAliasRatio(uint64_t decodes) {
    constexpr double kLow = 400000;
    constexpr double kHigh = 4000000;
    const auto d = static_cast<double>(decodes);
    if (d <= kLow) return 0.99;
    if (d >= kHigh) return 0.10;
    return 0.99 - 0.89 * ((d - kLow) / (kHigh - kLow));
  }
  void Refuse(std::string why) {
    if (refusal_.empty()) refusal_ = std::move(why);
  }
  void Add(Size s, bool aliased) {
    total_ = {std::min(kCap, total_.nodes + s.nodes), std::min(kCap, total_.bytes + s.bytes)};
    if (aliased)
      aliased_ = {std::min(kCap, aliased_.nodes + s.nodes),
                  std::min(kCap, aliased_.bytes + s.bytes)};
    if (aliased_.nodes > 100 && total_.nodes > 1000 &&
        static_cast<double>(aliased_.nodes) / static_cast<double>(total_.nodes) >
            AllowedAliasRatio(total_.nodes))
      Refuse("the document contains excessive aliasing");
    if (aliased_.bytes > kMaxBodyBytes)
      Refuse("the document contains excessive aliasing (aliases repeat more than " +
             std::to_string(kMaxBodyBytes) + " bytes of text)");
  }
  void Name(YAML::anchor_t a, Size before) {
    if (a != YAML::NullAnchor)
      named_[a] = {total_.nodes - before.nodes, total_.bytes - before.bytes};
  }
  void Leaf(YAML::anchor_t a, size_t bytes) {
    const Size before = total_;
    Add({1, bytes}, false);
    Name(a, before);
  }
  void Open(YAML::anchor_t a) {
    open_.push_back({a, total_});
    Add({1, 0}, false);
  }
  void Close() {
    if (open_.empty()) return;
    const auto [a, before] = open_.back();
    open_.pop_back();
    Name(a, before);
  }

  Size total_;
  Size aliased_;
  std::vector<std::pair<YAML::anchor_t, Size>> open_;
  std::map<YAML::anchor_t, Size> named_;
  std::string refusal_;
};

// Refuses excessive aliasing (AliasCount) in the first document of `text`, or in every one.
Status CheckAliasing(const std::string& text, bool every_document) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  do {
    AliasCount count;
    if (!parser.HandleNextDocument(count)) break;
    if (!count.refusal().empty()) return Bad(count.refusal());
  } while (every_document);
  return Status::Ok();
}

Result<json> FromYaml(const YAML::Node& n, size_t depth, size_t* budget) {
  if (depth > kMaxDepth) return TooDeep();
  if (*budget == 0)
    return Bad("the document expands to more than " + std::to_string(kMaxYamlNodes) +
               " nodes (aliases)");
  --*budget;
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      return ResolveScalar(n);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) {
        auto v = FromYaml(e, depth + 1, budget);
        if (!v.ok()) return v;
        a.push_back(std::move(v).value());
      }
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Bad("a mapping key must be a scalar");
        auto v = FromYaml(kv.second, depth + 1, budget);
        if (!v.ok()) return v;
        o[kv.first.Scalar()] = std::move(v).value();
      }
      return o;
    }
  }
  return json(nullptr);
}

}  // namespace

std::optional<PatchType> PatchTypeFromContentType(std::string_view ct) {
  ct = ct.substr(0, ct.find(';'));
  while (!ct.empty() && ct.back() == ' ') ct.remove_suffix(1);
  if (ct == "application/json-patch+json") return PatchType::kJsonPatch;
  if (ct == "application/merge-patch+json") return PatchType::kMergePatch;
  if (ct == "application/strategic-merge-patch+json") return PatchType::kStrategicMergePatch;
  if (ct == "application/apply-patch+yaml") return PatchType::kApply;
  return std::nullopt;
}

std::string ContentTypeOf(PatchType t) {
  switch (t) {
    case PatchType::kJsonPatch:
      return "application/json-patch+json";
    case PatchType::kMergePatch:
      return "application/merge-patch+json";
    case PatchType::kStrategicMergePatch:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "";
}

std::vector<PatchType> AcceptedPatchTypes(const ResourceInfo& r) {
  std::vector<PatchType> t = {PatchType::kJsonPatch, PatchType::kMergePatch};
  if (r.group != "arbiter.dev") t.push_back(PatchType::kStrategicMergePatch);
  t.push_back(PatchType::kApply);
  return t;
}

bool Accepts(const ResourceInfo& r, PatchType t) {
  auto a = AcceptedPatchTypes(r);
  return std::find(a.begin(), a.end(), t) != a.end();
}

Result<json> ApplyMergePatch(const json& live, const json& patch) {
  if (NestsDeeperThan(patch, kMaxDepth)) return TooDeep();
  json out = live;
  out.merge_patch(patch);
  return out;
}

// The bytes of `v` as JSON text, counted only as far as `limit` (then limit + 1): a copy's size
// is known without writing the text of a large value.
size_t TextBytesUpTo(const json& v, size_t limit) {
  size_t n = 0;
  auto add = [&](size_t k) { n = n + k > limit ? limit + 1 : n + k; };
  if (v.is_object()) {
    add(2);
    for (auto it = v.begin(); it != v.end() && n <= limit; ++it)
      add(it.key().size() + 4 + TextBytesUpTo(it.value(), limit - std::min(n, limit)));
  } else if (v.is_array()) {
    add(2);
    for (auto it = v.begin(); it != v.end() && n <= limit; ++it)
      add(1 + TextBytesUpTo(*it, limit - std::min(n, limit)));
  } else if (v.is_string()) {
    add(v.get_ref<const std::string&>().size() + 2);
  } else {
    add(v.dump().size());
  }
  return n;
}

// The bytes a "copy" operation adds (0 for any other operation or a source that is not there:
// the patch then fails on its own).
size_t CopiedBytes(const json& doc, const json& op, size_t limit) {
  if (!op.is_object() || StringAt(op, "op") != "copy" || !op.contains("from") ||
      !op["from"].is_string())
    return 0;
  try {
    const json::json_pointer from(op["from"].get<std::string>());
    return doc.contains(from) ? TextBytesUpTo(doc.at(from), limit) : 0;
  } catch (const json::exception&) {
    return 0;
  }
}

Result<json> ApplyJsonPatch(const json& live, const json& patch) {
  if (!patch.is_array()) return Bad("a JSON Patch must be a list of operations");
  if (NestsDeeperThan(patch, kMaxDepth)) return TooDeep();
  if (patch.size() > kMaxJsonPatchOperations)
    return Status::ResourceExhausted("The allowed maximum operations in a JSON patch is " +
                                     std::to_string(kMaxJsonPatchOperations) + ", got " +
                                     std::to_string(patch.size()));
  try {
    // Operation by operation, so that copies are counted as they grow the document: 40 copies
    // of an array into itself would make 2^40 elements (the daemon was killed for memory).
    json out = live;
    size_t copied = 0;
    for (const json& op : patch) {
      copied += CopiedBytes(out, op, kMaxJsonPatchCopyBytes);
      if (copied > kMaxJsonPatchCopyBytes)
        return Status::ResourceExhausted(
            "Unable to complete the copy, the accumulated size increase of copy is " +
            std::to_string(copied) + ", exceeding the limit " +
            std::to_string(kMaxJsonPatchCopyBytes));
      out.patch_inplace(json::array({op}));
    }
    return out;
  } catch (const json::other_error& e) {
    // nlohmann reports a failed "test" as other_error 501.
    if (e.id == 501) return Status::Conflict(std::string("testing value failed: ") + e.what());
    return Bad(std::string("the JSON Patch could not be applied: ") + e.what());
  } catch (const json::exception& e) {
    return Bad(std::string("the JSON Patch could not be applied: ") + e.what());
  }
}

Result<json> ApplyStrategicMergePatch(const json& live, const json& patch, const ResourceInfo& r) {
  if (!patch.is_object()) return Bad("a strategic merge patch must be a JSON object");
  if (NestsDeeperThan(patch, kMaxDepth)) return TooDeep();
  auto out = MergeMap(live, patch, SchemaOf(r), "");
  if (!out.ok()) return out;
  if (out->is_null()) return Bad("the patch deletes the whole object");
  return out;
}

Result<json> ApplyServerSide(const json* live, const json& applied, const ResourceInfo& r) {
  return ApplyServerSide(live, applied, r, ApplyOptions{});
}

Result<json> ApplyServerSide(const json* live, const json& applied, const ResourceInfo& r,
                             const ApplyOptions& o) {
  if (!applied.is_object()) return Bad("the applied configuration must be an object");
  if (NestsDeeperThan(applied, kMaxDepth)) return TooDeep();
  if (StringAt(applied, "apiVersion") != r.ApiVersion() || StringAt(applied, "kind") != r.kind)
    return Bad("the applied configuration is " + StringAt(applied, "apiVersion") + " " +
               StringAt(applied, "kind") + ", the resource is " + r.ApiVersion() + " " + r.kind);
  if (o.field_manager.empty()) return Bad("fieldManager is required for apply requests");
  json config = applied;
  if (config.contains("metadata") && config["metadata"].is_object())
    config["metadata"].erase("managedFields");
  const Schema* schema = SchemaOf(r);
  const json owned = FieldSet(Strip(config), schema, "", true);
  json out;
  json entries = json::array();
  if (!live) {
    out = Strip(config);
  } else {
    auto merged = MergeMap(*live, config, schema, "");
    if (!merged.ok()) return merged;
    if (merged->is_null()) return Bad("the applied configuration deletes the object");
    out = std::move(merged).value();
    // What this manager applied last time and no longer does goes, unless another apply
    // manager owns it too.
    const json* previous = nullptr;
    std::vector<const json*> others;
    const json& mf = live->contains("metadata") && (*live)["metadata"].is_object() &&
                             (*live)["metadata"].contains("managedFields")
                         ? (*live)["metadata"]["managedFields"]
                         : json();
    if (mf.is_array()) {
      for (const auto& e : mf) {
        if (!e.is_object() || !e.contains("fieldsV1") || !e["fieldsV1"].is_object()) continue;
        const bool apply = StringAt(e, "operation") == "Apply";
        if (apply && StringAt(e, "manager") == o.field_manager) {
          previous = &e["fieldsV1"];
          continue;
        }
        if (apply) others.push_back(&e["fieldsV1"]);
        entries.push_back(e);
      }
    }
    if (previous) RemoveDisowned(out, *previous, owned, others, schema, "");
  }
  json entry = {{"manager", o.field_manager},
                {"operation", "Apply"},
                {"apiVersion", r.ApiVersion()},
                {"fieldsType", "FieldsV1"},
                {"fieldsV1", owned}};
  if (!o.now_rfc3339.empty()) entry["time"] = o.now_rfc3339;
  entries.push_back(std::move(entry));
  if (!out.contains("metadata") || !out["metadata"].is_object()) out["metadata"] = json::object();
  out["metadata"]["managedFields"] = entries;
  return out;
}

Result<json> ParseBody(std::string_view text, PatchType t) {
  try {
    json j = json::parse(text);
    if (NestsDeeperThan(j, kMaxDepth)) return TooDeep();
    return j;
  } catch (const json::exception& e) {
    if (t != PatchType::kApply) return Bad(std::string("the body is not JSON: ") + e.what());
  }
  try {
    const std::string yaml(text);
    if (Status s = CheckAliasing(yaml, true); !s.ok()) return s;
    std::vector<YAML::Node> docs = YAML::LoadAll(yaml);
    if (docs.size() != 1) return Bad("the applied configuration must be one YAML document");
    size_t budget = kMaxYamlNodes;
    return FromYaml(docs[0], 1, &budget);
  } catch (const YAML::Exception& e) {
    return Bad(std::string("the body is neither JSON nor YAML: ") + e.what());
  }
}

Result<json> ParseYamlBody(std::string_view text) {
  try {
    // The first document alone is read (kube-apiserver's decoder reads one), not the others
    // built as nodes and dropped.
    const std::string yaml(text);
    if (Status s = CheckAliasing(yaml, false); !s.ok()) return s;
    const YAML::Node doc = YAML::Load(yaml);
    if (!doc.IsDefined() || doc.IsNull()) return Bad("the body is an empty YAML stream");
    size_t budget = kMaxYamlNodes;
    return FromYaml(doc, 1, &budget);
  } catch (const YAML::Exception& e) {
    return Bad(std::string("the body is not YAML: ") + e.what());
  }
}

Result<json> ApplyPatch(PatchType t, const json* live, std::string_view body,
                        const ResourceInfo& r) {
  return ApplyPatch(t, live, body, r, ApplyOptions{});
}

Result<json> ApplyPatch(PatchType t, const json* live, std::string_view body, const ResourceInfo& r,
                        const ApplyOptions& apply) {
  auto parsed = ParseBody(body, t);
  if (!parsed.ok()) return parsed;
  if (t == PatchType::kApply) return ApplyServerSide(live, *parsed, r, apply);
  if (!live) return Status::NotFound("the object does not exist");
  switch (t) {
    case PatchType::kJsonPatch:
      return ApplyJsonPatch(*live, *parsed);
    case PatchType::kMergePatch:
      return ApplyMergePatch(*live, *parsed);
    case PatchType::kStrategicMergePatch:
      if (!Accepts(r, t)) return Bad("strategic merge patch is not supported for " + r.kind);
      return ApplyStrategicMergePatch(*live, *parsed, r);
    case PatchType::kApply:
      break;
  }
  return Bad("unknown patch type");
}

}  // namespace arbiter::kube
