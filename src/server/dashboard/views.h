// The dashboard's JSON views (served under /ui/api/), built from the daemon's Cluster by pure
// functions: the pool's nodes × GPU devices with each device's occupants, per-tenant quota use,
// the pending queue in the engine's order, one workload with its events. Every view shows only
// what its Viewer may see: a tenant sees its own namespaces' workloads by name; devices used by
// other tenants appear as occupied ("another tenant") without names.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "server/state/cluster.h"

namespace arbiter::server::dashboard {

// Who looks: everything (an admin, or a daemon without tokens) or a set of namespaces.
struct Viewer {
  std::string user;  // "" without tokens
  bool all = true;
  std::set<std::string> namespaces;
  bool Sees(const std::string& ns) const { return all || namespaces.count(ns) > 0; }
};

// {"nodes": [{name, gpuModel, schedulable, cpuMilli: {used, capacity}, memoryBytes: {used,
// capacity}, gpus: [{index, usedMilli, occupants: [{namespace, name, milli} | {hidden: true,
// milli}]}], migDevices: [{resource, profile, slots: [{namespace, name} | {hidden: true} |
// null (free)]}]}], "gpuMilli": {allocated, capacity}}. GPU milli: 1000 per device. MIG slices
// are counted per node by the engine: the map fills each profile's devices in order.
Json PoolView(const Cluster& c, const Viewer& v);

// {"tenants": [{namespace, running, pending, used: {gpuMilli, cpuMilli, memoryBytes},
// requests: {resource: amount in canonical units (resources.h)} of running workloads,
// borrowedGpuMilli, preemptions (suffered by its live workloads), elasticQuota: {min, max} | null,
// resourceQuotas: [{name, hard, used}], pendingWorkloads: [{name, reason, message}],
// fairShare ("0.25", null outside a cohort), borrowed and lent ({resource: amount},
// quota_state.h), preemptionsSuffered and preemptionsCaused (counted from the Events the daemon
// keeps: Cluster::preemptions), recentPreemptions: [{time, type, victim, by}] (the newest 10 of
// either side; names of other tenants' workloads are null)}]}, by namespace name.
Json TenantsView(const Cluster& c, const Viewer& v);

// What a viewer may not see by name: the namespaces it does not see (none for an admin).
std::vector<std::string> HiddenNamespaces(const Cluster& c, const Viewer& v);
// `text` with every "NS/NAME" of a hidden namespace replaced by "another tenant's workload":
// the engine's messages name preemptors and victims, which may be other tenants' workloads.
std::string Redact(std::string text, const std::vector<std::string>& hidden);

// The backfill reservation of a pending workload, as the engine gives it
// (engine::WorkloadStatus::reservation, core/engine/backfill.cc): {nodes: [..], from: RFC 3339},
// or null.
Json ReservationOf(const engine::WorkloadStatus& w);

// {"pending": [{position, namespace, name, priority, reason, message, nominatedNode,
// reservation (ReservationOf), pendingSeconds}]}: the engine's queue order (priority, then submit
// time, then key, then id). pendingSeconds counts to `now` (Unix ms, the request's wall clock:
// the engine's clock moves only on events), or to the engine's clock if that is later.
Json QueueView(const Cluster& c, const Viewer& v, Millis now);

// Every message in these views is redacted for the viewer (Redact).

// One pod: {namespace, name, phase, node, nominatedNode, reason, message, priority, events:
// [{time, type, reason, message}] oldest first}; null when absent or not visible.
Json WorkloadView(const Cluster& c, const Viewer& v, const std::string& ns,
                  const std::string& name);

}  // namespace arbiter::server::dashboard
