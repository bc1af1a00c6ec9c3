// Dense, allocation-level view of one node, shared by the engine and the trace simulator.
//
// CPU and memory are pooled per node (capacity already multiplied by the PoolPolicy overcommit
// ratio). GPUs are per device: each device has 1000 milli-GPU; a shared-GPU pod (request below
// one GPU) takes part of one device, a whole-GPU pod takes whole free devices. Every other
// resource (MIG profiles, pods, extended) is a pooled count in `ext`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/resources.h"

namespace arbiter::placement {

inline constexpr int32_t kMilliPerGpu = 1000;

// What a pod asks of a node, in dense form.
struct PodShape {
  int64_t cpu_milli = 0;
  int64_t mem_bytes = 0;
  int32_t gpu_count = 0;           // devices touched
  int32_t gpu_milli_per_device = 0;  // 1000 for whole GPUs; 1..999 for a shared GPU
  ResourceList ext;                // MIG profiles, pods, other extended resources
  std::string gpu_model;           // required nvidia.com/gpu.product, "" = any
  // Alternative form of the model constraint (trace gpu_spec "A|B"): the pod runs on a node whose
  // model is any of these. Empty = no constraint beyond gpu_model. Only GPU pods are constrained.
  std::vector<std::string> allowed_gpu_models;

  int64_t gpu_milli_total() const { return int64_t{gpu_count} * gpu_milli_per_device; }
  // From canonical requests. The `pods` resource is always counted as 1.
  static PodShape FromRequests(const ResourceList& requests, std::string gpu_model = "");
};

// Device indices of one placement, stored inline (no heap allocation on the scoring hot path).
// A node has at most kMaxGpusPerNode devices (checked when the node is added).
inline constexpr int kMaxGpusPerNode = 64;
class DeviceList {
 public:
  void push_back(int16_t d) {
    if (size_ >= kMaxGpusPerNode) std::abort();
    v_[size_++] = d;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  const int16_t* begin() const { return v_; }
  const int16_t* end() const { return v_ + size_; }
  int16_t operator[](size_t i) const { return v_[i]; }
  int16_t back() const { return v_[size_ - 1]; }
  bool operator==(const DeviceList& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }

 private:
  int16_t v_[kMaxGpusPerNode];
  uint8_t size_ = 0;
};

// Which devices a placement uses.
struct GpuAssignment {
  DeviceList devices;  // ascending
  int32_t milli_per_device = 0;
  bool operator==(const GpuAssignment&) const = default;
};

struct NodeState {
  std::string name;
  std::string gpu_model;  // nvidia.com/gpu.product label, "" if none
  const std::map<std::string, std::string>* labels = nullptr;  // owned by the caller
  bool schedulable = true;
  int64_t cpu_capacity_milli = 0;  // allocatable × overcommit
  int64_t mem_capacity_bytes = 0;  // allocatable × overcommit
  int64_t cpu_used_milli = 0;
  int64_t mem_used_bytes = 0;
  std::vector<int32_t> gpu_used_milli;  // per device, 0..1000
  ResourceList ext_capacity;
  ResourceList ext_used;

  // A summary of gpu_used_milli kept by Allocate / Release / RecountGpus, so that fit checks on
  // thousands of nodes per placement read three numbers instead of every device. Code that
  // writes gpu_used_milli directly must call RecountGpus() (until then the summary is unused).
  bool gpu_summary_ok = false;
  int32_t gpu_full_free = 0;    // devices with nothing used
  int32_t gpu_max_free = 0;     // largest free milli-GPU on one device
  int64_t gpu_free_total = 0;   // free milli-GPU over all devices
  void RecountGpus();

  int gpu_devices() const { return static_cast<int>(gpu_used_milli.size()); }
  int64_t cpu_free() const { return cpu_capacity_milli - cpu_used_milli; }
  int64_t mem_free() const { return mem_capacity_bytes - mem_used_bytes; }
  int64_t gpu_free_milli() const;
  int full_free_gpus() const;
  int32_t max_device_free() const;

  // Resource fit only (no selectors): CPU, memory, GPU devices, extended counts, model.
  bool Fits(const PodShape& pod) const;
  // What does not fit, as bits (no allocation; Insufficient() has the extended resources' names).
  enum : unsigned { kShortCpu = 1, kShortMemory = 2, kShortGpu = 4, kShortExtended = 8 };
  unsigned ShortOf(const PodShape& pod) const;
  // Names of the resources that do not fit, in Kubernetes order (cpu, memory, nvidia.com/gpu, ext).
  std::vector<std::string> Insufficient(const PodShape& pod) const;
  // Default device choice: shared pods go to the fullest device that still fits (ties: lowest
  // index); whole-GPU pods take the lowest-index free devices. Requires Fits().
  GpuAssignment DefaultGpuChoice(const PodShape& pod) const;
  bool CanUse(const PodShape& pod, const GpuAssignment& a) const;

  void Allocate(const PodShape& pod, const GpuAssignment& a);
  void Release(const PodShape& pod, const GpuAssignment& a);
};

}  // namespace arbiter::placement
