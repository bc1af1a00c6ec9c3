// Dense, allocation-level view of one node, and the fit rule every placement decision uses.
//
// CPU and memory are pooled per node (capacity already multiplied by the PoolPolicy overcommit
// ratio). GPUs are per device: each device has 1000 milli-GPU; a shared-GPU pod (request below
// one GPU) takes part of one device, a whole-GPU pod takes whole free devices. Every other
// resource (MIG profiles, pods, extended) is a pooled count in `ext`.
//
// The fit rule. A pod fits on a node when its cpu and memory requests fit in what is free, its
// GPUs fit on the devices (whole GPUs: that many fully free devices; a shared GPU: one device with
// at least its milli-GPU free), the node's GPU model is one the pod allows (GPU pods only), and
// every extended resource it asks fits (the `pods` count only where the node declares one). It is
// written once, below (FitsNumbers, ModelAccepts, ExtFits), and answered by NodeState::Fits, by
// FitView (a what-if copy for preemption dry runs, fit_view.h) and by the engine's dense scan.
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
  int32_t gpu_count = 0;             // devices touched
  int32_t gpu_milli_per_device = 0;  // 1000 for whole GPUs; 1..999 for a shared GPU
  ResourceList ext;                  // MIG profiles, pods, other extended resources
  std::string gpu_model;             // required nvidia.com/gpu.product, "" = any
  // Alternative form of the model constraint (trace gpu_spec "A|B"): the pod runs on a node whose
  // model is any of these. Empty = no constraint beyond gpu_model. Only GPU pods are constrained.
  std::vector<std::string> allowed_gpu_models;

  int64_t gpu_milli_total() const { return int64_t{gpu_count} * gpu_milli_per_device; }
  // From canonical requests. The `pods` resource is always counted as 1.
  static PodShape FromRequests(const ResourceList& requests, std::string gpu_model = "");
};

// The numeric part of the fit rule: cpu, memory and GPU devices (`full_free` devices with nothing
// used, `max_free` the largest free milli-GPU on one device).
inline bool GpuNumbersFit(int32_t full_free, int32_t max_free, const PodShape& p) {
  if (p.gpu_count == 0) return true;
  return p.gpu_milli_per_device >= kMilliPerGpu ? full_free >= p.gpu_count
                                                : max_free >= p.gpu_milli_per_device;
}
inline bool FitsNumbers(int64_t cpu_free, int64_t mem_free, int32_t full_free, int32_t max_free,
                        const PodShape& p) {
  return p.cpu_milli <= cpu_free && p.mem_bytes <= mem_free &&
         GpuNumbersFit(full_free, max_free, p);
}
// The model part: a GPU pod's gpu_model / allowed_gpu_models accept the node's model.
bool ModelConstraintAccepts(const std::string& node_model, const PodShape& p);
inline bool ModelAccepts(const std::string& node_model, const PodShape& p) {
  if (p.gpu_count == 0 || (p.gpu_model.empty() && p.allowed_gpu_models.empty())) return true;
  return ModelConstraintAccepts(node_model, p);
}
// The extended-resource part, given free(name) of the node (`declares_pods`: the node has a
// `pods` capacity; without one the pod count is not limited).
template <typename FreeOf>
bool ExtFits(const PodShape& p, bool declares_pods, FreeOf free_of) {
  for (const auto& [k, v] : p.ext.entries()) {
    if (k == kPods && !declares_pods) continue;
    if (v > free_of(k)) return false;
  }
  return true;
}

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
  int32_t gpu_full_free = 0;   // devices with nothing used
  int32_t gpu_max_free = 0;    // largest free milli-GPU on one device
  int64_t gpu_free_total = 0;  // free milli-GPU over all devices
  void RecountGpus();

  int gpu_devices() const { return static_cast<int>(gpu_used_milli.size()); }
  int64_t cpu_free() const { return cpu_capacity_milli - cpu_used_milli; }
  int64_t mem_free() const { return mem_capacity_bytes - mem_used_bytes; }
  // From the summary when it is current (the hot path), else from the devices.
  int64_t gpu_free_milli() const { return gpu_summary_ok ? gpu_free_total : CountGpuFree(); }
  int full_free_gpus() const { return gpu_summary_ok ? gpu_full_free : CountFullFree(); }
  int32_t max_device_free() const { return gpu_summary_ok ? gpu_max_free : CountMaxFree(); }
  int64_t CountGpuFree() const;
  int CountFullFree() const;
  int32_t CountMaxFree() const;

  // The fit rule (no selectors): CPU, memory, GPU devices, model, extended counts.
  bool Fits(const PodShape& pod) const;
  int64_t ext_free(std::string_view name) const {
    return ext_capacity.Get(name) - ext_used.Get(name);
  }
  bool declares_pods() const { return ext_capacity.Has(kPods); }
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
