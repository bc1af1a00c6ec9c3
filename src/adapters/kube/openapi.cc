#include "adapters/kube/openapi.h"

#include <cstdio>

#include "adapters/kube/patch.h"
#include "adapters/kube/resources.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

std::string GvPath(const GroupVersion& gv) {
  return gv.group.empty() ? "api/" + gv.version : "apis/" + gv.group + "/" + gv.version;
}

// io.k8s.api.core.v1.Pod; other groups by their reversed domain, as CRD schemas are named:
// dev.arbiter.v1alpha1.ElasticQuota, io.x-k8s.scheduling.v1alpha1.PodGroup.
std::string SchemaName(const ResourceInfo& r) {
  if (r.group.empty()) return "io.k8s.api.core." + r.version + "." + r.kind;
  if (r.group == "policy" || r.group == "batch")
    return "io.k8s.api." + r.group + "." + r.version + "." + r.kind;
  if (r.group == "scheduling.k8s.io") return "io.k8s.api.scheduling." + r.version + "." + r.kind;
  std::string reversed;
  std::string_view g = r.group;
  while (!g.empty()) {
    const size_t dot = g.rfind('.');
    reversed += std::string(dot == std::string_view::npos ? g : g.substr(dot + 1)) + ".";
    g = dot == std::string_view::npos ? std::string_view() : g.substr(0, dot);
  }
  return reversed + r.version + "." + r.kind;
}

json Gvk(const ResourceInfo& r) {
  return json{{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
}

json Ref(const ResourceInfo& r) { return json{{"$ref", "#/components/schemas/" + SchemaName(r)}}; }

json QueryParam(const char* name, const char* description) {
  return json{{"name", name},
              {"in", "query"},
              {"description", description},
              {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json PathParam(const char* name) {
  return json{{"name", name},
              {"in", "path"},
              {"required", true},
              {"schema", {{"type", "string"}, {"uniqueItems", true}}}};
}

json JsonContent(const json& schema) {
  return json{{"application/json", {{"schema", schema}}},
              {"application/yaml", {{"schema", schema}}}};
}

json Operation(const ResourceInfo& r, const char* action, const std::string& id,
               const json& response) {
  return json{{"operationId", id},
              {"x-kubernetes-action", action},
              {"x-kubernetes-group-version-kind", Gvk(r)},
              {"responses",
               {{"200", {{"description", "OK"}, {"content", JsonContent(response)}}},
                {"401", {{"description", "Unauthorized"}}}}}};
}

json ItemPath(const ResourceInfo& r) {
  const std::string id = r.kind;
  json item;
  item["get"] = Operation(r, "get", "read" + id, Ref(r));
  item["put"] = Operation(r, "put", "replace" + id, Ref(r));
  item["put"]["parameters"] =
      json::array({QueryParam("dryRun", "dry run"), QueryParam("fieldManager", "field manager"),
                   QueryParam("fieldValidation", "Ignore, Warn or Strict")});
  item["put"]["requestBody"] = {{"required", true}, {"content", JsonContent(Ref(r))}};
  item["delete"] = Operation(r, "delete", "delete" + id, json{{"type", "object"}});
  item["patch"] = Operation(r, "patch", "patch" + id, Ref(r));
  item["patch"]["parameters"] =
      json::array({QueryParam("dryRun", "dry run"), QueryParam("fieldManager", "field manager"),
                   QueryParam("fieldValidation", "Ignore, Warn or Strict"),
                   QueryParam("force", "force apply")});
  json content = json::object();
  for (PatchType t : {PatchType::kJsonPatch, PatchType::kMergePatch, PatchType::kApply})
    content[ContentTypeOf(t)] = {{"schema", {{"type", "object"}}}};
  item["patch"]["requestBody"] = {{"required", true}, {"content", content}};
  json params = json::array({PathParam("name")});
  if (r.namespaced) params.push_back(PathParam("namespace"));
  item["parameters"] = params;
  return item;
}

json CollectionPath(const ResourceInfo& r) {
  json col;
  col["get"] = Operation(r, "list", "list" + r.kind, json{{"type", "object"}});
  col["get"]["parameters"] = json::array(
      {QueryParam("labelSelector", "label selector"), QueryParam("fieldSelector", "field selector"),
       QueryParam("resourceVersion", "resource version"), QueryParam("watch", "watch")});
  col["post"] = Operation(r, "post", "create" + r.kind, Ref(r));
  col["post"]["parameters"] =
      json::array({QueryParam("dryRun", "dry run"), QueryParam("fieldManager", "field manager"),
                   QueryParam("fieldValidation", "Ignore, Warn or Strict")});
  col["post"]["requestBody"] = {{"required", true}, {"content", JsonContent(Ref(r))}};
  if (r.namespaced) col["parameters"] = json::array({PathParam("namespace")});
  return col;
}

json KindSchema(const ResourceInfo& r) {
  json props = {
      {"apiVersion",
       {{"type", "string"}, {"description", "APIVersion of this object: " + r.ApiVersion()}}},
      {"kind", {{"type", "string"}, {"description", "Kind of this object: " + r.kind}}},
      {"metadata",
       {{"type", "object"},
        {"description", "Standard object's metadata."},
        {"x-kubernetes-preserve-unknown-fields", true}}}};
  if (r.kind == "Event") {
    for (const char* f : {"involvedObject", "source", "series", "related"})
      props[f] = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    for (const char* f : {"reason", "message", "type", "action", "reportingComponent",
                          "reportingInstance", "firstTimestamp", "lastTimestamp", "eventTime"})
      props[f] = {{"type", "string"}};
    props["count"] = {{"type", "integer"}, {"format", "int32"}};
  } else if (r.kind == "PriorityClass") {
    props["value"] = {{"type", "integer"}, {"format", "int32"}};
    props["globalDefault"] = {{"type", "boolean"}};
    props["description"] = {{"type", "string"}};
    props["preemptionPolicy"] = {{"type", "string"}};
  } else {
    props["spec"] = {{"type", "object"},
                     {"description", "See docs/manifests.md."},
                     {"x-kubernetes-preserve-unknown-fields", true}};
    props["status"] = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  }
  return json{{"type", "object"},
              {"description", r.kind + " (" + r.ApiVersion() +
                                  ") as Arbiter serves it; fields: docs/manifests.md."},
              {"properties", props},
              {"x-kubernetes-group-version-kind", json::array({Gvk(r)})}};
}

json BuildDocument(const GroupVersion& gv) {
  json paths = json::object();
  json schemas = json::object();
  const std::string prefix = "/" + GvPath(gv);
  for (const auto& r : ServedResources()) {
    if (r.group != gv.group || r.version != gv.version) continue;
    const std::string base =
        r.namespaced ? prefix + "/namespaces/{namespace}/" + r.plural : prefix + "/" + r.plural;
    paths[base] = CollectionPath(r);
    paths[base + "/{name}"] = ItemPath(r);
    schemas[SchemaName(r)] = KindSchema(r);
  }
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", paths},
              {"components", {{"schemas", schemas}}}};
}

std::string Hash(const std::string& text) {  // FNV-1a 64, hex
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llX", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

json OpenApiV3Index() {
  json paths = json::object();
  for (const auto& gv : ServedGroupVersions()) {
    const std::string p = GvPath(gv);
    paths[p] = {
        {"serverRelativeURL", "/openapi/v3/" + p + "?hash=" + Hash(BuildDocument(gv).dump())}};
  }
  return json{{"paths", paths}};
}

std::optional<json> OpenApiV3Document(std::string_view path) {
  if (path.rfind("/openapi/v3/", 0) == 0) path.remove_prefix(12);
  path = path.substr(0, path.find('?'));
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  for (const auto& gv : ServedGroupVersions())
    if (GvPath(gv) == path) return BuildDocument(gv);
  return std::nullopt;
}

}  // namespace arbiter::kube
