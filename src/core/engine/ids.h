// Stable identities of the engine's nodes and workloads.
//
// WorkloadId: given to a pod when SubmitPod accepts it, in submission order (0, 1, 2, ...), and
// never given to another pod, even after the workload has finished and left the engine. A pod
// deleted and submitted again under the same namespace/name is a new workload with a new id.
//
// NodeId: interned by node name the first time a name is seen (0, 1, 2, ...); a node removed and
// added again under the same name gets its old id back. Ids are not positions: adding or removing
// a node never renumbers anything.
//
// Neither id orders anything by itself except where documented: workloads tie-break by
// WorkloadId (= submission order); nodes are ordered by (UpsertNode::order, name).
#pragma once

#include <cstdint>
#include <functional>

namespace arbiter::engine {

enum class WorkloadId : uint64_t {};
enum class NodeId : uint32_t {};

inline constexpr uint64_t Value(WorkloadId id) { return static_cast<uint64_t>(id); }
inline constexpr uint32_t Value(NodeId id) { return static_cast<uint32_t>(id); }

// Event::workload of pool events (NodeAdded, NodeRemoved): no workload.
inline constexpr WorkloadId kNoWorkload = static_cast<WorkloadId>(~uint64_t{0});

}  // namespace arbiter::engine
