#include "adapters/kube/resources.h"

#include <algorithm>
#include <cctype>

#include "core/api_kinds.h"

namespace arbiter::kube {
namespace {

const std::vector<std::string> kReadWrite = {"create", "delete", "deletecollection", "get",
                                             "list",   "patch",  "update",           "watch"};
// The daemon serves status subresources read-only (a PUT or PATCH there is 405: status is the
// server's to write), and Events are written by the daemon only.
const std::vector<std::string> kStatusVerbs = {"get"};
const std::vector<std::string> kReadOnly = {"get", "list", "watch"};

Subresource StatusOf(const ResourceInfo& r) {
  return {"status", r.group, r.version, r.kind, kStatusVerbs};
}

// The kinds of the one table (core/api_kinds.h), with what the API adds: verbs, subresources,
// categories.
std::vector<ResourceInfo> BuildTable() {
  std::vector<ResourceInfo> t;
  for (const ApiKind& k : ApiKinds()) {
    ResourceInfo r;
    r.group = k.group;
    r.version = k.version;
    r.kind = k.kind;
    r.id = k.id;
    r.plural = k.plural;
    r.singular = k.singular;
    r.short_names.assign(k.short_names.begin(), k.short_names.end());
    r.namespaced = k.namespaced;
    r.verbs = r.id == KindId::kEvent ? kReadOnly : kReadWrite;
    if (r.id == KindId::kJob) r.categories = {"all"};
    if (r.id == KindId::kPod) {
      r.categories = {"all"};
      r.subresources.push_back({"eviction", "policy", "v1", "Eviction", {"create"}});
    }
    for (KindId with_status :
         {KindId::kNamespace, KindId::kNode, KindId::kPod, KindId::kResourceQuota,
          KindId::kPodDisruptionBudget, KindId::kElasticQuota, KindId::kJob})
      if (r.id == with_status) r.subresources.push_back(StatusOf(r));
    if (r.id == KindId::kNamespace)  // kube-apiserver serves no deletecollection of namespaces
      r.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    t.push_back(std::move(r));
  }
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
