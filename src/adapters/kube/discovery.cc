#include "adapters/kube/discovery.h"

#include <vector>

#include "adapters/kube/resources.h"

namespace arbiter::kube {
namespace {

using nlohmann::json;

json GroupVersionForDiscovery(const GroupVersion& gv) {
  return json{{"groupVersion", gv.ToString()}, {"version", gv.version}};
}

std::vector<const ResourceInfo*> ResourcesOf(std::string_view group, std::string_view version) {
  std::vector<const ResourceInfo*> out;
  for (const auto& r : ServedResources())
    if (r.group == group && r.version == version) out.push_back(&r);
  return out;
}

json ApiResource(const ResourceInfo& r) {
  json j = {{"name", r.plural},
            {"singularName", r.singular},
            {"namespaced", r.namespaced},
            {"kind", r.kind},
            {"verbs", r.verbs}};
  if (!r.short_names.empty()) j["shortNames"] = r.short_names;
  if (!r.categories.empty()) j["categories"] = r.categories;
  return j;
}

json ApiSubresource(const ResourceInfo& r, const Subresource& s) {
  json j = {{"name", r.plural + "/" + s.name},
            {"singularName", ""},
            {"namespaced", r.namespaced},
            {"kind", s.kind},
            {"verbs", s.verbs}};
  if (s.group != r.group || s.version != r.version) {
    j["group"] = s.group;
    j["version"] = s.version;
  }
  return j;
}

json ResponseKind(std::string_view group, std::string_view version, std::string_view kind) {
  return json{{"group", group}, {"version", version}, {"kind", kind}};
}

json AggregatedResource(const ResourceInfo& r) {
  json j = {{"resource", r.plural},
            {"responseKind", ResponseKind(r.group, r.version, r.kind)},
            {"scope", r.namespaced ? "Namespaced" : "Cluster"},
            {"singularResource", r.singular},
            {"verbs", r.verbs}};
  if (!r.short_names.empty()) j["shortNames"] = r.short_names;
  if (!r.categories.empty()) j["categories"] = r.categories;
  if (!r.subresources.empty()) {
    json subs = json::array();
    for (const auto& s : r.subresources)
      subs.push_back({{"subresource", s.name},
                      {"responseKind", ResponseKind(s.group, s.version, s.kind)},
                      {"verbs", s.verbs}});
    j["subresources"] = subs;
  }
  return j;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

VersionInfo ArbiterVersionInfo(std::string_view arbiter_version) {
  VersionInfo v;
  std::string build;
  for (char c : arbiter_version) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      build += c;
    else if (c == '.' || c == '-')
      build += c;
    else if (c == ' ')
      break;  // "0.1.0 (git abc)" -> "0.1.0"
  }
  if (!build.empty()) v.git_version += "+arbiter-" + build;
  return v;
}

json VersionBody(const VersionInfo& v) {
  return json{{"major", v.major},          {"minor", v.minor},        {"gitVersion", v.git_version},
              {"gitCommit", v.git_commit}, {"gitTreeState", "clean"}, {"buildDate", v.build_date},
              {"goVersion", "go1.23.0"},   {"compiler", "gc"},        {"platform", v.platform}};
}

json CoreApiVersions(std::string_view server_address) {
  json j = {{"kind", "APIVersions"}, {"versions", json::array({"v1"})}};
  json cidrs = json::array();
  if (!server_address.empty())
    cidrs.push_back({{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}});
  j["serverAddressByClientCIDRs"] = cidrs;
  return j;
}

std::optional<json> ApiGroup(std::string_view group) {
  if (group.empty()) return std::nullopt;
  json versions = json::array();
  for (const auto& gv : ServedGroupVersions())
    if (gv.group == group) versions.push_back(GroupVersionForDiscovery(gv));
  if (versions.empty()) return std::nullopt;
  return json{{"kind", "APIGroup"},
              {"apiVersion", "v1"},
              {"name", group},
              {"versions", versions},
              {"preferredVersion", versions[0]}};
}

json ApiGroupList() {
  json groups = json::array();
  std::vector<std::string> seen;
  for (const auto& gv : ServedGroupVersions()) {
    if (gv.group.empty()) continue;
    bool dup = false;
    for (const auto& g : seen) dup = dup || g == gv.group;
    if (dup) continue;
    seen.push_back(gv.group);
    json g = *ApiGroup(gv.group);
    g.erase("kind");
    g.erase("apiVersion");
    groups.push_back(g);
  }
  return json{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<json> ApiResourceList(std::string_view group, std::string_view version) {
  auto resources = ResourcesOf(group, version);
  if (resources.empty()) return std::nullopt;
  json list = json::array();
  for (const ResourceInfo* r : resources) {
    list.push_back(ApiResource(*r));
    for (const auto& s : r->subresources) list.push_back(ApiSubresource(*r, s));
  }
  json j = {{"kind", "APIResourceList"}};
  if (!group.empty()) j["apiVersion"] = "v1";
  j["groupVersion"] = GroupVersion{std::string(group), std::string(version)}.ToString();
  j["resources"] = list;
  return j;
}

DiscoveryShape NegotiateDiscovery(std::string_view accept) {
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view media = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::string_view type = Trim(media.substr(0, media.find(';')));
    if (type != "application/json") continue;
    std::string_view g, v, as;
    std::string_view params =
        media.find(';') == std::string_view::npos ? "" : media.substr(media.find(';') + 1);
    while (!params.empty()) {
      size_t semi = params.find(';');
      std::string_view p = Trim(params.substr(0, semi));
      params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
      size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = Trim(p.substr(0, eq)), val = Trim(p.substr(eq + 1));
      if (key == "g") g = val;
      if (key == "v") v = val;
      if (key == "as") as = val;
    }
    if (g.empty() && v.empty() && as.empty()) return DiscoveryShape::kLegacy;
    if (g != "apidiscovery.k8s.io" || as != "APIGroupDiscoveryList") continue;
    if (v == "v2") return DiscoveryShape::kAggregatedV2;
    if (v == "v2beta1") return DiscoveryShape::kAggregatedV2Beta1;
  }
  return DiscoveryShape::kLegacy;
}

std::string DiscoveryContentType(DiscoveryShape shape) {
  switch (shape) {
    case DiscoveryShape::kAggregatedV2:
      return "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    case DiscoveryShape::kAggregatedV2Beta1:
      return "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    case DiscoveryShape::kLegacy:
      break;
  }
  return "application/json";
}

json AggregatedDiscovery(bool core, DiscoveryShape shape) {
  json items = json::array();
  std::vector<std::string> groups;
  for (const auto& gv : ServedGroupVersions()) {
    if (gv.group.empty() != core) continue;
    bool dup = false;
    for (const auto& g : groups) dup = dup || g == gv.group;
    if (!dup) groups.push_back(gv.group);
  }
  for (const auto& group : groups) {
    json versions = json::array();
    for (const auto& gv : ServedGroupVersions()) {
      if (gv.group != group) continue;
      json resources = json::array();
      for (const ResourceInfo* r : ResourcesOf(gv.group, gv.version))
        resources.push_back(AggregatedResource(*r));
      versions.push_back(
          {{"version", gv.version}, {"resources", resources}, {"freshness", "Current"}});
    }
    json metadata = {{"creationTimestamp", nullptr}};
    if (!group.empty()) metadata["name"] = group;
    items.push_back({{"metadata", metadata}, {"versions", versions}});
  }
  std::string api_version = shape == DiscoveryShape::kAggregatedV2Beta1
                                ? "apidiscovery.k8s.io/v2beta1"
                                : "apidiscovery.k8s.io/v2";
  return json{{"kind", "APIGroupDiscoveryList"},
              {"apiVersion", api_version},
              {"metadata", json::object()},
              {"items", items}};
}

}  // namespace arbiter::kube
