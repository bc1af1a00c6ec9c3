// The dashboard's JSON views (served under /ui/api/), built from the daemon's Cluster by pure
// functions: the pool's nodes × GPU devices with each device's occupants, per-tenant quota use,
// the pending queue in the engine's order, one workload with its events. Every view shows only
// what its Viewer may see: a tenant sees its own namespaces' workloads by name; devices used by
// other tenants appear as occupied ("another tenant") without names.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/dashboard/quota_state.h"
#include "server/state/cluster.h"

namespace arbiter::server::dashboard {

// Who looks: everything (an admin, or a daemon without tokens) or a set of namespaces.
struct Viewer {
  std::string user;  // "" without tokens
  bool all = true;
  std::set<std::string> namespaces;
  bool Sees(const std::string& ns) const { return all || namespaces.count(ns) > 0; }
};

// What the pool, tenants and queue views read of the cluster, collected under the daemon's lock
// in O(live workloads / 256 + nodes + namespaces + quotas + kept preemptions): the live
// workloads' facts (live_facts.h) are shared, not copied, and each view is built from them after
// the lock is released (routes.cc). The overloads taking a Cluster collect and build in one call.
enum class ClusterView { kPool, kTenants, kQueue };
struct ClusterFacts {
  LiveFacts::View live;                   // the live workloads, by id
  std::vector<engine::NodeStatus> nodes;  // pool: Engine::NodeTotals, in node order
  std::vector<std::string> namespaces;    // tenants, queue: the stored Namespaces' names
  // tenants: by namespace, {name, min, max} of its ElasticQuota (the last listed, as stored) and
  // [{name, hard, used}] of its ResourceQuotas (their status)
  std::map<std::string, Json> elastic_quotas;
  std::map<std::string, Json> resource_quotas;
  std::map<std::string, QuotaState> quota_states;  // tenants: ElasticQuotaStates
  std::vector<Preemption> preemptions;             // tenants: Cluster::preemptions, oldest first
  Millis now = 0;                                  // the engine's clock
};
ClusterFacts CollectFacts(const Cluster& c, ClusterView view);

// {"nodes": [{name, gpuModel, schedulable, cpuMilli: {used, capacity}, memoryBytes: {used,
// capacity}, gpus: [{index, usedMilli, occupants: [{namespace, name, milli} | {hidden: true,
// milli}]}], migDevices: [{resource, profile, slots: [{namespace, name} | {hidden: true} |
// null (free)]}]}], "gpuMilli": {allocated, capacity}}. GPU milli: 1000 per device. A device's
// occupants are listed by workload id (submission order). MIG slices are counted per node by the
// engine: the map fills each profile's devices in order, the node's workloads by id.
Json PoolView(const ClusterFacts& f, const Viewer& v);
Json PoolView(const Cluster& c, const Viewer& v);

// {"tenants": [{namespace, running, pending, used: {gpuMilli, cpuMilli, memoryBytes},
// requests: {resource: amount in canonical units (resources.h)} of running workloads,
// borrowedGpuMilli, preemptions (suffered by its live workloads), elasticQuota: {min, max} | null,
// resourceQuotas: [{name, hard, used}], pendingWorkloads: [{name, reason, message}] by id,
// fairShare ("0.25", null outside a cohort), borrowed and lent ({resource: amount},
// quota_state.h), preemptionsSuffered and preemptionsCaused (counted from the Events the daemon
// keeps: Cluster::preemptions), recentPreemptions: [{time, type, victim, by}] (the newest 10 of
// either side; names of other tenants' workloads are null)}]}, by namespace name.
Json TenantsView(const ClusterFacts& f, const Viewer& v);
Json TenantsView(const Cluster& c, const Viewer& v);

// What a viewer may not see by name: the namespaces it does not see (none for an admin).
std::vector<std::string> HiddenNamespaces(const Cluster& c, const Viewer& v);
// `text` with every "NS/NAME" of a hidden namespace replaced by "another tenant's workload":
// the engine's messages name preemptors and victims, which may be other tenants' workloads.
std::string Redact(std::string text, const std::vector<std::string>& hidden);

// The backfill reservation of a pending workload, as the engine gives it
// (engine::WorkloadStatus::reservation, core/engine/backfill.cc): {nodes: [..], from: RFC 3339},
// or null.
Json ReservationOf(const std::optional<engine::BackfillReservation>& r);

// {"pending": [{position, namespace, name, priority, reason, message, nominatedNode,
// reservation (ReservationOf), pendingSeconds}], "total", "visible"}: the engine's queue order
// (priority, then submit time, then key, then id), the first `limit` pending workloads the viewer
// sees (a page of rows, not 20,000: issue 27); `total` counts every pending workload, `visible`
// those the viewer sees, and `position` counts the hidden ones too. pendingSeconds counts to `now`
// (Unix ms, the request's wall clock: the engine's clock moves only on events), or to the engine's
// clock if that is later.
inline constexpr size_t kQueueRows = 500;       // the default page
inline constexpr size_t kMaxQueueRows = 10000;  // ?limit= at most
Json QueueView(const ClusterFacts& f, const Viewer& v, Millis now, size_t limit = kQueueRows);
Json QueueView(const Cluster& c, const Viewer& v, Millis now, size_t limit = kQueueRows);

// Every message in these views is redacted for the viewer (Redact).

// One pod: {namespace, name, phase, node, nominatedNode, reason, message, priority, events:
// [{time, type, reason, message}] oldest first}; null when absent or not visible.
Json WorkloadView(const Cluster& c, const Viewer& v, const std::string& ns,
                  const std::string& name);

}  // namespace arbiter::server::dashboard
