// GPU sharing by time-slicing or MPS, as the NVIDIA device plugin and GPU feature discovery
// advertise it: each physical card is offered as N replicas of `nvidia.com/gpu`, and the node is
// labelled `nvidia.com/gpu.replicas=N` (replicas per card) and
// `nvidia.com/gpu.sharing-strategy=time-slicing|mps|none`. With the plugin's default
// (renameByDefault: false) the product label carries a "-SHARED" suffix.
//
// Billing: one replica (a request of nvidia.com/gpu: 1) on such a node costs 1/N of the card.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter {

inline constexpr std::string_view kGpuReplicasLabel = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kGpuSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";
inline constexpr std::string_view kSharedProductSuffix = "-SHARED";
// The replicas' resource when the device plugin renames them (renameByDefault: true).
inline constexpr std::string_view kGpuSharedResource = "nvidia.com/gpu.shared";
inline constexpr int64_t kMaxGpuReplicas = 1024;

// Parses the value of nvidia.com/gpu.replicas: a positive integer, at most kMaxGpuReplicas.
// Errors say why ("0" is not a replica count, "1.5" is not an integer).
Result<int64_t> ParseGpuReplicas(std::string_view text);

// Checks the sharing labels of a node: replicas (as above) and the strategy (time-slicing, mps
// or none). Ok when neither label is present.
Status ValidateGpuSharingLabels(const std::map<std::string, std::string>& labels);

// Resources whose units are replicas of a card on a time-sliced / MPS node: nvidia.com/gpu
// (when the node's replicas label is above 1) and nvidia.com/gpu.shared (always).
inline bool IsGpuReplicaResource(std::string_view resource) {
  return resource == "nvidia.com/gpu" || resource == kGpuSharedResource;
}

// Replicas per card from a node's labels: 1 when the label is absent or invalid (validation
// rejects invalid labels before a simulation runs).
int64_t GpuReplicasOf(const std::map<std::string, std::string>& labels);

}  // namespace arbiter
