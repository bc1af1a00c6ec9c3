#include "adapters/kube/patch.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

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

Result<json> MergeValue(const json* live, const json& patch, const Schema* schema,
                        const std::string& path);

bool SameKey(const json& element, const std::string& key, const json& value) {
  return element.is_object() && element.contains(key) && element[key] == value;
}

// The merged list ordered by $setElementOrder: listed elements first in that order, then the rest
// in their current order.
json Reorder(const json& list, const json& order, const ListMeta& meta) {
  json out = json::array();
  std::vector<bool> used(list.size(), false);
  for (const auto& o : order) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (used[i]) continue;
      bool match = meta.key.empty() ? list[i] == o
                                    : (o.is_object() && o.contains(meta.key) &&
                                       SameKey(list[i], meta.key, o[meta.key]));
      if (match) {
        out.push_back(list[i]);
        used[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i)
    if (!used[i]) out.push_back(list[i]);
  return out;
}

Result<json> MergeList(const json& live, const json& patch, const ListMeta& meta,
                       const Schema* schema, const std::string& path) {
  // {"$patch": "replace"} anywhere in the patch list: the list is the other elements.
  for (const auto& e : patch)
    if (e.is_object() && e.contains(kPatchDirective) && e[kPatchDirective] == "replace")
      return Strip(patch);
  json out = live;
  if (meta.key.empty()) {  // a set of primitives
    for (const auto& e : patch)
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
    return out;
  }
  for (const auto& e : patch) {
    if (!e.is_object() || !e.contains(meta.key))
      return Bad(path + ": map does not contain declared merge key: " + meta.key);
    const json& k = e[meta.key];
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const json& x) { return SameKey(x, meta.key, k); });
    if (e.contains(kPatchDirective)) {
      const json& d = e[kPatchDirective];
      if (d == "delete") {
        if (it != out.end()) out.erase(it);
        continue;
      }
      if (d == "replace") {
        json r = Strip(e);
        if (it != out.end())
          *it = r;
        else
          out.push_back(r);
        continue;
      }
      if (d != "merge") return Bad(path + ": unknown patch type: " + d.dump());
    }
    if (it == out.end()) {
      out.push_back(Strip(e));
    } else {
      auto merged = MergeValue(&*it, e, schema, path);
      if (!merged.ok()) return merged.status();
      *it = std::move(merged).value();
    }
  }
  return out;
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
      if (out.contains(field) && out[field].is_array()) {
        json kept = json::array();
        for (const auto& v : out[field])
          if (std::find(it.value().begin(), it.value().end(), v) == it.value().end())
            kept.push_back(v);
        out[field] = kept;
      }
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
    json kept = json::object();
    for (auto it = out.begin(); it != out.end(); ++it)
      if (std::find(keep.begin(), keep.end(), json(it.key())) != keep.end())
        kept[it.key()] = it.value();
    out = kept;
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

// YAML 1.2 core schema for plain scalars.
json ResolveScalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;  // quoted or explicitly tagged: a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kInt)) {
    try {
      if (s[0] == '-') return std::stoll(s);
      return std::stoull(s[0] == '+' ? s.substr(1) : s);
    } catch (const std::exception&) {
      return s;
    }
  }
  if (std::regex_match(s, kFloat)) {
    try {
      return std::stod(s);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

Result<json> FromYaml(const YAML::Node& n, int depth) {
  if (depth > 200) return Bad("the document nests too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      return ResolveScalar(n);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) {
        auto v = FromYaml(e, depth + 1);
        if (!v.ok()) return v;
        a.push_back(std::move(v).value());
      }
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Bad("a mapping key must be a scalar");
        auto v = FromYaml(kv.second, depth + 1);
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
  json out = live;
  out.merge_patch(patch);
  return out;
}

Result<json> ApplyJsonPatch(const json& live, const json& patch) {
  if (!patch.is_array()) return Bad("a JSON Patch must be a list of operations");
  try {
    return live.patch(patch);
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
  auto out = MergeMap(live, patch, SchemaOf(r), "");
  if (!out.ok()) return out;
  if (out->is_null()) return Bad("the patch deletes the whole object");
  return out;
}

Result<json> ApplyServerSide(const json* live, const json& applied, const ResourceInfo& r) {
  if (!applied.is_object()) return Bad("the applied configuration must be an object");
  if (applied.value("apiVersion", "") != r.ApiVersion() || applied.value("kind", "") != r.kind)
    return Bad("the applied configuration is " + applied.value("apiVersion", "") + " " +
               applied.value("kind", "") + ", the resource is " + r.ApiVersion() + " " + r.kind);
  if (!live) return Strip(applied);
  auto out = MergeMap(*live, applied, SchemaOf(r), "");
  if (!out.ok()) return out;
  if (out->is_null()) return Bad("the applied configuration deletes the object");
  return out;
}

Result<json> ParseBody(std::string_view text, PatchType t) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    if (t != PatchType::kApply) return Bad(std::string("the body is not JSON: ") + e.what());
  }
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(std::string(text));
    if (docs.size() != 1) return Bad("the applied configuration must be one YAML document");
    return FromYaml(docs[0], 0);
  } catch (const YAML::Exception& e) {
    return Bad(std::string("the body is neither JSON nor YAML: ") + e.what());
  }
}

Result<json> ApplyPatch(PatchType t, const json* live, std::string_view body,
                        const ResourceInfo& r) {
  auto parsed = ParseBody(body, t);
  if (!parsed.ok()) return parsed;
  if (t == PatchType::kApply) return ApplyServerSide(live, *parsed, r);
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
