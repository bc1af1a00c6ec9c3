// What `arbiter serve` does with each kind it serves: one row per kind of the one kinds table
// (core/api_kinds.h). Code looks a request's kind up here once and then dispatches on the row
// (its KindId in a switch the compiler checks, or its columns), never on the kind's name.
//
//   storage       kWorkload: Pods, the engine's workloads (SubmitPod, DeletePod); kNode: the
//   engine's
//                 nodes; kPolicy: policy objects, kept as the validation context of later requests
//                 (Cluster::policy_) and given to the engine (Upsert / Delete commands);
//                 kServerWritten: Events, written by the server only (no create, update or delete);
//                 kController: Jobs, validated by their own rules (job_controller.h) and run by
//                 the daemon's Job controller (no engine command)
//   status        who writes `status`: kServer (kept across updates; a Pod's is dropped on create)
//                 or kClient (a Node's status is its capacity, read as the manifest's)
//   update_rule   what an update may change, as kube-apiserver validates it: kAny; kPodSpec
//                 (pod_update.h); kImmutableValue (a PriorityClass's value and preemptionPolicy);
//                 and kSingleton: at most one object of the kind exists (PoolPolicy)
//   quota_effect  which quota / PDB statuses a change of it refreshes: none, its namespace's, or
//                 every namespace with one of its kind (an ElasticQuota moves its cohort's shares)
//   table         its `kubectl get` columns and cells (adapters/kube/table.h)
//   auth          its authorization class (adapters/kube/auth.h)
// Pure data.
#pragma once

#include <string>
#include <vector>

#include "adapters/kube/auth.h"
#include "adapters/kube/table.h"
#include "core/api_kinds.h"

namespace arbiter::server {

enum class Storage : uint8_t { kWorkload, kNode, kPolicy, kServerWritten, kController };
enum class StatusWriter : uint8_t { kServer, kClient };
enum class UpdateRule : uint8_t { kAny, kPodSpec, kImmutableValue, kSingleton };
enum class QuotaEffect : uint8_t { kNone, kNamespace, kEveryNamespaceOfKind };

struct KindInfo {
  KindId id;
  const char* kind;
  const char* api_version;
  bool namespaced;
  Storage storage;
  StatusWriter status;
  UpdateRule update_rule;
  QuotaEffect quota_effect;
  const kube::TablePrinter* table;
  kube::AuthClass auth;
};

// Every kind of core/api_kinds.h, in its order.
const std::vector<KindInfo>& ServedKinds();
// nullptr for a kind the server does not serve.
const KindInfo* FindKind(const std::string& kind);

}  // namespace arbiter::server
