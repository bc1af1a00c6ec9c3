// The Kubernetes API resources `arbiter serve` serves: every kind of the one kinds table
// (core/api_kinds.h: kind, group, version, plural, short names, scope; shared with the manifest
// loader and the daemon's store), with the verbs and subresources the API adds.
//
//   core/v1                 namespaces (ns), nodes (no), pods (po; pods/status, pods/eviction),
//                           resourcequotas (quota; resourcequotas/status), limitranges (limits),
//                           events (ev)
//   scheduling.k8s.io/v1    priorityclasses (pc)
//   policy/v1               poddisruptionbudgets (pdb; poddisruptionbudgets/status)
//   arbiter.dev/v1alpha1    elasticquotas (eq), poolpolicies (pp), pricebooks (pb), qoses
//   scheduling.x-k8s.io/v1alpha1  podgroups (pg)
//
// Verbs are those kube-apiserver lists for the resource minus `deletecollection` (not served:
// kubectl deletes one object at a time) — the daemon may extend the table if it serves more.
// Pure data: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/api_kinds.h"

namespace arbiter::kube {

// A subresource such as pods/status: `name` is the part after the slash. The response kind is
// the parent's unless group/version/kind say otherwise (pods/eviction answers policy/v1 Eviction).
struct Subresource {
  std::string name;  // "status", "eviction"
  std::string group;
  std::string version;
  std::string kind;
  std::vector<std::string> verbs;
};

struct ResourceInfo {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;          // "Pod"
  KindId id = KindId::kPod;  // the kind as a type, to dispatch on (core/api_kinds.h)
  std::string plural;        // "pods": the URL segment and RBAC resource name
  std::string singular;      // "pod"
  std::vector<std::string> short_names;
  std::vector<std::string> categories;  // "all" for pods (kubectl get all)
  bool namespaced = false;
  std::vector<std::string> verbs;  // sorted, as kube-apiserver lists them
  std::vector<Subresource> subresources;

  // "v1" for the core group, "group/version" otherwise.
  std::string ApiVersion() const;
  // "pods" for the core group, "poddisruptionbudgets.policy" otherwise: kube-apiserver's
  // qualified resource, as its error messages name it.
  std::string QualifiedResource() const;
  // "Pod" for the core group, "PodDisruptionBudget.policy" otherwise (422 messages).
  std::string QualifiedKind() const;
  const Subresource* FindSubresource(std::string_view name) const;
};

struct GroupVersion {
  std::string group;  // "" for core
  std::string version;
  std::string ToString() const;  // "v1", "policy/v1"
};

// Every served resource, in a stable order: core, policy, scheduling.k8s.io, then arbiter.dev (as
// /apis lists the groups: built-in groups before custom ones); by plural within a group version.
const std::vector<ResourceInfo>& ServedResources();
// The served group versions in the order /apis lists them (core "v1" first; /apis skips it).
const std::vector<GroupVersion>& ServedGroupVersions();

// Lookups return nullptr when the resource is not served. Group "" is core.
const ResourceInfo* FindResource(std::string_view group, std::string_view version,
                                 std::string_view plural);
// By an object's apiVersion ("v1", "policy/v1") and kind ("Pod").
const ResourceInfo* FindResourceByKind(std::string_view api_version, std::string_view kind);
// By any name kubectl accepts for a resource: plural, singular, short name or kind,
// case-insensitive
// ("po", "Pod", "pods"); the first match in table order.
const ResourceInfo* FindResourceByName(std::string_view name);

// Splits an apiVersion into group and version: "v1" -> {"", "v1"}, "policy/v1" -> {"policy", "v1"}.
GroupVersion ParseApiVersion(std::string_view api_version);

}  // namespace arbiter::kube
