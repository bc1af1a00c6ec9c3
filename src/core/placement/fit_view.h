// A what-if copy of one node's free resources: start from a NodeState, give back the resources of
// pods that would leave, take those of pods that would come, and ask the node's fit rule
// (node_state.h) without touching the node. Preemption dry runs, reclaim planning and nominated
// protection use it; it allocates nothing once warm (reuse one view across nodes).
#pragma once

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/placement/node_state.h"

namespace arbiter::placement {

class FitView {
 public:
  // Starts from `node`'s current usage. With `interest`, only the extended resources it asks for
  // are tracked and checked (a preemption dry run asks whether one pod fits: resources it does not
  // ask for cannot change the answer); without, every extended resource is.
  void Reset(const NodeState& node, const PodShape* interest = nullptr);
  // `pod` on `gpus` leaves (its resources become free) / comes back.
  void Give(const PodShape& pod, const GpuAssignment& gpus) { Apply(pod, gpus, +1); }
  void Take(const PodShape& pod, const GpuAssignment& gpus) { Apply(pod, gpus, -1); }
  // Takes room for `pod` on the devices NodeState::DefaultGpuChoice would pick (a nominated pod's
  // room). Call only when Fits(pod).
  void Hold(const PodShape& pod);
  // The fit rule on the view.
  bool Fits(const PodShape& pod) const;
  // Nothing is over-taken: cpu, memory, every device, the tracked extended resources.
  bool Valid() const;

 private:
  void Apply(const PodShape& pod, const GpuAssignment& gpus, int sign);
  int64_t& Slot(
      std::string_view r);  // every-resource mode: the free amount of `r`, tracked from now
  int64_t FreeOf(std::string_view r) const;

  const NodeState* node_ = nullptr;
  bool all_ = true;    // every extended resource is tracked (no interest)
  bool pods_ = false;  // the node declares a `pods` capacity
  int64_t cpu_free_ = 0, mem_free_ = 0;
  int32_t gpu_free_[kMaxGpusPerNode] = {};
  int devices_ = 0;
  // Free extended resources, by name (views into the node's or the pods' names, which outlive a
  // dry run): with an interest, its names (the `pods` count only where declared), set at Reset;
  // without, the names seen so far.
  std::vector<std::pair<std::string_view, int64_t>> ext_;
};

// Inline: preemption dry runs call these tens of millions of times.
inline void FitView::Reset(const NodeState& n, const PodShape* interest) {
  node_ = &n;
  all_ = interest == nullptr;
  pods_ = n.declares_pods();
  cpu_free_ = n.cpu_free();
  mem_free_ = n.mem_free();
  devices_ = n.gpu_devices();
  for (int d = 0; d < devices_; ++d) gpu_free_[d] = kMilliPerGpu - n.gpu_used_milli[d];
  ext_.clear();
  if (interest)
    for (const auto& [r, v] : interest->ext.entries()) {
      if (r == kPods && !pods_) continue;
      ext_.emplace_back(r, n.ext_free(r));
    }
}

inline int64_t& FitView::Slot(std::string_view r) {
  for (auto& [name, f] : ext_)
    if (name == r) return f;
  ext_.emplace_back(r, node_->ext_free(r));
  return ext_.back().second;
}

inline int64_t FitView::FreeOf(std::string_view r) const {
  for (const auto& [name, f] : ext_)
    if (name == r) return f;
  return node_->ext_free(r);
}

inline void FitView::Apply(const PodShape& s, const GpuAssignment& g, int sign) {
  cpu_free_ += sign * s.cpu_milli;
  mem_free_ += sign * s.mem_bytes;
  for (int16_t d : g.devices) gpu_free_[d] += sign * s.gpu_milli_per_device;
  if (!all_) {
    for (auto& [r, f] : ext_) f += sign * s.ext.Get(r);
    return;
  }
  for (const auto& [r, v] : s.ext.entries()) Slot(r) += sign * v;
}

inline bool FitView::Fits(const PodShape& p) const {
  int32_t full = 0, max_free = 0;
  for (int d = 0; d < devices_; ++d) {
    full += gpu_free_[d] == kMilliPerGpu;
    max_free = std::max(max_free, gpu_free_[d]);
  }
  if (!FitsNumbers(cpu_free_, mem_free_, full, max_free, p) || !ModelAccepts(node_->gpu_model, p))
    return false;
  if (!all_) {
    for (const auto& [r, f] : ext_)
      if (p.ext.Get(r) > f) return false;
    return true;
  }
  return ExtFits(p, pods_, [&](std::string_view r) { return FreeOf(r); });
}

inline void FitView::Hold(const PodShape& p) {
  cpu_free_ -= p.cpu_milli;
  mem_free_ -= p.mem_bytes;
  if (!all_) {
    for (auto& [r, f] : ext_) f -= p.ext.Get(r);
  } else {
    for (const auto& [r, v] : p.ext.entries()) Slot(r) -= v;
  }
  int need = p.gpu_count;
  if (need == 0) return;
  if (p.gpu_milli_per_device >= kMilliPerGpu) {  // the lowest-index fully free devices
    for (int d = 0; d < devices_ && need > 0; ++d)
      if (gpu_free_[d] == kMilliPerGpu) gpu_free_[d] = 0, --need;
    return;
  }
  int best = -1;  // a shared GPU: the fullest device that fits, lowest index on ties
  for (int d = 0; d < devices_; ++d)
    if (gpu_free_[d] >= p.gpu_milli_per_device && (best < 0 || gpu_free_[d] < gpu_free_[best]))
      best = d;
  if (best >= 0) gpu_free_[best] -= p.gpu_milli_per_device;
}

inline bool FitView::Valid() const {
  if (cpu_free_ < 0 || mem_free_ < 0) return false;
  for (int d = 0; d < devices_; ++d)
    if (gpu_free_[d] < 0) return false;
  for (const auto& [r, f] : ext_)
    if ((all_ && r == kPods && !pods_) ? false : f < 0) return false;
  return true;
}

}  // namespace arbiter::placement
