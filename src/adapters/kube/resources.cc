#include "adapters/kube/resources.h"

#include <algorithm>
#include <cctype>

namespace arbiter::kube {
namespace {

const std::vector<std::string> kReadWrite = {"create", "delete", "deletecollection", "get",
                                             "list",   "patch",  "update",           "watch"};
const std::vector<std::string> kStatusVerbs = {"get", "patch", "update"};

ResourceInfo Make(std::string group, std::string version, std::string kind, std::string plural,
                  std::string singular, std::vector<std::string> short_names, bool namespaced) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.kind = std::move(kind);
  r.plural = std::move(plural);
  r.singular = std::move(singular);
  r.short_names = std::move(short_names);
  r.namespaced = namespaced;
  r.verbs = kReadWrite;
  return r;
}

Subresource StatusOf(const ResourceInfo& r) {
  return {"status", r.group, r.version, r.kind, kStatusVerbs};
}

std::vector<ResourceInfo> BuildTable() {
  std::vector<ResourceInfo> t;
  t.push_back(Make("", "v1", "Event", "events", "event", {"ev"}, true));
  t.push_back(Make("", "v1", "LimitRange", "limitranges", "limitrange", {"limits"}, true));
  t.push_back(Make("", "v1", "Namespace", "namespaces", "namespace", {"ns"}, false));
  t.back().verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(Make("", "v1", "Node", "nodes", "node", {"no"}, false));
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(Make("", "v1", "Pod", "pods", "pod", {"po"}, true));
  t.back().categories = {"all"};
  t.back().subresources.push_back({"eviction", "policy", "v1", "Eviction", {"create"}});
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(Make("", "v1", "ResourceQuota", "resourcequotas", "resourcequota", {"quota"}, true));
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(Make("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets",
                   "poddisruptionbudget", {"pdb"}, true));
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(Make("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass",
                   {"pc"}, false));
  t.push_back(Make("arbiter.dev", "v1alpha1", "ElasticQuota", "elasticquotas", "elasticquota",
                   {"eq", "eqs"}, true));
  t.back().subresources.push_back(StatusOf(t.back()));
  t.push_back(
      Make("arbiter.dev", "v1alpha1", "PoolPolicy", "poolpolicies", "poolpolicy", {"pp"}, false));
  t.push_back(
      Make("arbiter.dev", "v1alpha1", "PriceBook", "pricebooks", "pricebook", {"pb"}, false));
  t.push_back(Make("arbiter.dev", "v1alpha1", "QoS", "qoses", "qos", {}, false));
  return t;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::string ResourceInfo::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceInfo::QualifiedResource() const {
  return group.empty() ? plural : plural + "." + group;
}

std::string ResourceInfo::QualifiedKind() const {
  return group.empty() ? kind : kind + "." + group;
}

const Subresource* ResourceInfo::FindSubresource(std::string_view name) const {
  for (const auto& s : subresources)
    if (s.name == name) return &s;
  return nullptr;
}

std::string GroupVersion::ToString() const {
  return group.empty() ? version : group + "/" + version;
}

const std::vector<ResourceInfo>& ServedResources() {
  static const std::vector<ResourceInfo> kTable = BuildTable();
  return kTable;
}

const std::vector<GroupVersion>& ServedGroupVersions() {
  static const std::vector<GroupVersion> kVersions = [] {
    std::vector<GroupVersion> v;
    for (const auto& r : ServedResources()) {
      bool seen = false;
      for (const auto& gv : v) seen = seen || (gv.group == r.group && gv.version == r.version);
      if (!seen) v.push_back({r.group, r.version});
    }
    return v;
  }();
  return kVersions;
}

const ResourceInfo* FindResource(std::string_view group, std::string_view version,
                                 std::string_view plural) {
  for (const auto& r : ServedResources())
    if (r.group == group && r.version == version && r.plural == plural) return &r;
  return nullptr;
}

const ResourceInfo* FindResourceByKind(std::string_view api_version, std::string_view kind) {
  GroupVersion gv = ParseApiVersion(api_version);
  for (const auto& r : ServedResources())
    if (r.group == gv.group && r.version == gv.version && r.kind == kind) return &r;
  return nullptr;
}

const ResourceInfo* FindResourceByName(std::string_view name) {
  for (const auto& r : ServedResources()) {
    if (EqualsIgnoreCase(r.plural, name) || EqualsIgnoreCase(r.singular, name) ||
        EqualsIgnoreCase(r.kind, name))
      return &r;
    for (const auto& s : r.short_names)
      if (EqualsIgnoreCase(s, name)) return &r;
  }
  return nullptr;
}

GroupVersion ParseApiVersion(std::string_view api_version) {
  size_t slash = api_version.find('/');
  if (slash == std::string_view::npos) return {"", std::string(api_version)};
  return {std::string(api_version.substr(0, slash)), std::string(api_version.substr(slash + 1))};
}

}  // namespace arbiter::kube
