// The GPU node and the GPU pod most engine tests start from, so that a test states only what it
// changes (a taint, a priority, a namespace).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/objects.h"

namespace arbiter::engine::gpu_objects {

// A node of `gpus` GPUs, 64 CPUs (`cpu_milli`) and 256 GiB, allocatable = capacity.
inline Node GpuNode(const std::string& name, int64_t gpus = 8, std::vector<Taint> taints = {},
                    int64_t cpu_milli = 64000) {
  Node n;
  n.meta.name = name;
  n.capacity = {
      {"cpu", cpu_milli}, {"memory", int64_t{256} << 30}, {"nvidia.com/gpu", gpus * 1000}};
  n.allocatable = n.capacity;
  n.taints = std::move(taints);
  return n;
}

// A pod of one container asking 1 CPU and `gpus` GPUs (its GPU limit equal to its request), in
// namespace `ns`, at `priority` (none: resolved from its class, as a user's pod).
inline Pod GpuPod(const std::string& name, int64_t gpus, const std::string& ns = "ml",
                  std::optional<int32_t> priority = std::nullopt) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = ns;
  Container c;
  c.name = "c";
  c.requests = {{"cpu", 1000}, {"nvidia.com/gpu", gpus * 1000}};
  c.limits = {{"nvidia.com/gpu", gpus * 1000}};
  p.containers.push_back(c);
  p.priority = priority;
  return p;
}

}  // namespace arbiter::engine::gpu_objects
