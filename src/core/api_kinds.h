// The one table of the object kinds Arbiter reads and serves: kind, API group and version,
// plural (the URL segment and RBAC resource), singular, short names, scope. The manifest loader
// (which kinds a file may hold), the daemon's store (src/server/state/cluster.cc ServedKinds) and
// the Kubernetes API resource table (src/adapters/kube/resources.cc, which adds verbs and
// subresources) are all built from it: a kind added here is loaded, kept and served.
//
//   core/v1                       Namespace, Node, Pod, ResourceQuota, LimitRange, Event (served
//                                 only: the daemon writes events, manifests do not hold them)
//   batch/v1                      Job (served only: the daemon's Job controller runs it,
//                                 job_controller.h; manifests for `arbiter sim` do not hold them)
//   policy/v1                     PodDisruptionBudget
//   scheduling.k8s.io/v1          PriorityClass
//   arbiter.dev/v1alpha1          ElasticQuota, PoolPolicy, PriceBook, QoS, ResourceFlavor
//   scheduling.x-k8s.io/v1alpha1  PodGroup (scheduler-plugins coscheduling)
// Pure data.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter {

// Each kind as a type: what code dispatches on (a switch the compiler checks for every kind),
// once a kind's name has been looked up in the table.
enum class KindId : uint8_t {
  kEvent,
  kLimitRange,
  kNamespace,
  kNode,
  kPod,
  kResourceQuota,
  kPodDisruptionBudget,
  kPriorityClass,
  kElasticQuota,
  kPoolPolicy,
  kPriceBook,
  kQoS,
  kResourceFlavor,
  kPodGroup,
  kJob,
};

struct ApiKind {
  const char* kind;      // "Pod"
  const char* group;     // "" for core
  const char* version;   // "v1"
  const char* plural;    // "pods"
  const char* singular;  // "pod"
  std::vector<const char*> short_names;
  bool namespaced;
  bool in_manifests;  // the manifest loader accepts it (Event: served, never loaded)
  KindId id;
  // "v1" for core, "group/version" otherwise.
  std::string ApiVersion() const;
};

// Every kind, in the order the API lists them: core, batch, policy, scheduling.k8s.io, arbiter.dev,
// scheduling.x-k8s.io (built-in groups before custom ones); by plural within a group version.
const std::vector<ApiKind>& ApiKinds();

// nullptr for a kind not in the table.
const ApiKind* FindApiKind(std::string_view kind);
// The row of a kind (every KindId has one).
const ApiKind& ApiKindOf(KindId id);

// The kinds for which keep(kind) holds, by API version in table order, for help texts:
// "v1 LimitRange, Namespace; policy/v1 PodDisruptionBudget; ...".
std::string ApiKindsText(const std::function<bool(const ApiKind&)>& keep);

}  // namespace arbiter
