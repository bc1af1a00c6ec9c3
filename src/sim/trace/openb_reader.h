// Reader for the Alibaba cluster-trace-gpu-v2023 ("openb") CSV files.
//
// Node list: sn,cpu_milli,memory_mib,gpu,model
// Pod list:  name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,creation_time,
//            deletion_time,scheduled_time]   (the multigpu* lists have only the first five)
// Columns are found by header name; extra columns are ignored. A malformed row is an error
// "FILE:LINE: message". Empty cells and "nan" mean "absent". Every number is range-checked
// (cpu_milli at most 10^9, memory_mib at most 2^30 = 1 PiB, times at most 10^10 s, GPUs at most
// 64 per node or pod) and names are at most 256 bytes, so that no sum or unit conversion
// downstream can overflow. Files are read with the shared input rules (adapters/io/input_file.h:
// regular files or "-", at most 1 GiB).
//
// Mapping to placement shapes:
//   num_gpu 0                      -> no GPU
//   num_gpu 1, 0 < gpu_milli < 1000 -> one shared GPU (gpu_milli on one device)
//   num_gpu n, gpu_milli 1000      -> n whole GPUs
//   gpu_spec "A|B"                 -> PodShape::allowed_gpu_models {A, B}
//   qos LS -> 10000, Burstable / Guaranteed -> 5000, BE -> 1000 (QosPriorities, overridable)
//   tenant: a seeded hash of the pod name modulo the tenant count
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/placement/node_state.h"
#include "core/status.h"

namespace arbiter::sim::trace {

inline constexpr int64_t kTraceMaxCpuMilli = 1000000000;         // a million cores
inline constexpr int64_t kTraceMaxMemoryMib = int64_t{1} << 30;  // 1 PiB
inline constexpr int64_t kTraceMaxSeconds = 10000000000;         // about 317 years
inline constexpr size_t kTraceMaxNameBytes = 256;

struct TraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;  // "" when the node has no GPU
};

struct QosPriorities {
  int32_t ls = 10000;
  int32_t burstable = 5000;
  int32_t guaranteed = 5000;
  int32_t be = 1000;
  int32_t unknown = 1000;  // empty or unrecognised qos
  int32_t Of(std::string_view qos) const;
};

struct PodMappingOptions {
  QosPriorities priorities;
  int32_t tenants = 1;        // >= 1
  uint64_t tenant_seed = 42;  // the seeded tenant rule
};

struct TracePod {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;
  std::vector<std::string> gpu_spec;  // allowed models, empty = any
  std::string qos;
  std::string phase;
  std::optional<int64_t> creation_s, deletion_s, scheduled_s;
  int32_t priority = 1000;
  int32_t tenant = 0;
  placement::PodShape shape;
  int64_t gpu_milli_total() const { return shape.gpu_milli_total(); }
};

struct PodTrace {
  std::vector<TracePod> pods;
  bool has_times = false;  // the file has creation/deletion/scheduled columns
};

// Parses text (`source` names it in errors). Files: Read*.
Result<std::vector<TraceNode>> ParseOpenbNodes(std::string_view text, std::string_view source);
Result<PodTrace> ParseOpenbPods(std::string_view text, std::string_view source,
                                const PodMappingOptions& options = {});
Result<std::vector<TraceNode>> ReadOpenbNodes(const std::string& path);
Result<PodTrace> ReadOpenbPods(const std::string& path, const PodMappingOptions& options = {});

// Dense node states for the placement layer (no overcommit; memory in bytes).
std::vector<placement::NodeState> ToNodeStates(const std::vector<TraceNode>& nodes);

// The seeded tenant rule: tenant index in [0, tenants) for a pod name.
int32_t TenantOf(std::string_view pod_name, int32_t tenants, uint64_t seed);

}  // namespace arbiter::sim::trace
