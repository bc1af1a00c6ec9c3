#include "core/placement/node_state.h"

#include <algorithm>

#include "core/status.h"

namespace arbiter::placement {

PodShape PodShape::FromRequests(const ResourceList& requests, std::string gpu_model) {
  PodShape s;
  s.gpu_model = std::move(gpu_model);
  for (const auto& [name, v] : requests.entries()) {
    if (name == kCpu) {
      s.cpu_milli = v;
    } else if (name == kMemory) {
      s.mem_bytes = v;
    } else if (name == kGpu) {
      if (v <= 0) continue;
      if (v < kMilliPerGpu) {
        s.gpu_count = 1;
        s.gpu_milli_per_device = static_cast<int32_t>(v);
      } else {
        s.gpu_count = static_cast<int32_t>(v / kMilliPerGpu);
        s.gpu_milli_per_device = kMilliPerGpu;
      }
    } else if (name == kPods) {
      continue;
    } else if (v != 0) {
      s.ext.Set(name, v);
    }
  }
  s.ext.Set(kPods, 1);
  return s;
}

int64_t NodeState::CountGpuFree() const {
  int64_t f = 0;
  for (int32_t u : gpu_used_milli) f += kMilliPerGpu - u;
  return f;
}

int NodeState::CountFullFree() const {
  return static_cast<int>(std::count(gpu_used_milli.begin(), gpu_used_milli.end(), 0));
}

int32_t NodeState::CountMaxFree() const {
  int32_t m = 0;
  for (int32_t u : gpu_used_milli) m = std::max(m, kMilliPerGpu - u);
  return m;
}

void NodeState::RecountGpus() {
  gpu_full_free = 0;
  gpu_max_free = 0;
  gpu_free_total = 0;
  for (int32_t u : gpu_used_milli) {
    gpu_full_free += u == 0;
    gpu_max_free = std::max(gpu_max_free, kMilliPerGpu - u);
    gpu_free_total += kMilliPerGpu - u;
  }
  gpu_summary_ok = true;
}

bool ModelConstraintAccepts(const std::string& node_model, const PodShape& p) {
  if (p.gpu_count == 0) return true;
  if (!p.gpu_model.empty() && p.gpu_model != node_model) return false;
  if (!p.allowed_gpu_models.empty() &&
      std::find(p.allowed_gpu_models.begin(), p.allowed_gpu_models.end(), node_model) ==
          p.allowed_gpu_models.end())
    return false;
  return true;
}

namespace {
bool GpuFits(const NodeState& n, const PodShape& p) {
  if (p.gpu_count == 0) return true;
  // The counts first: on a busy pool most nodes fail there, before any string comparison.
  if (!GpuNumbersFit(n.full_free_gpus(), n.max_device_free(), p)) return false;
  return ModelAccepts(n.gpu_model, p);
}
bool NodeExtFits(const NodeState& n, const PodShape& p) {
  if (n.ext_capacity.empty()) {  // nothing declared: only requests of 0 (and the pod count) fit
    for (const auto& [k, v] : p.ext.entries())
      if (v > 0 && k != kPods) return false;
    return true;
  }
  return ExtFits(p, n.declares_pods(), [&](std::string_view k) { return n.ext_free(k); });
}
}  // namespace

bool NodeState::Fits(const PodShape& p) const {
  return FitsNumbers(cpu_free(), mem_free(), full_free_gpus(), max_device_free(), p) &&
         ModelAccepts(gpu_model, p) && NodeExtFits(*this, p);
}

unsigned NodeState::ShortOf(const PodShape& p) const {
  unsigned m = 0;
  if (p.cpu_milli > cpu_free()) m |= kShortCpu;
  if (p.mem_bytes > mem_free()) m |= kShortMemory;
  if (p.gpu_count > 0 && ModelAccepts(gpu_model, p) && !GpuFits(*this, p)) m |= kShortGpu;
  if (!NodeExtFits(*this, p)) m |= kShortExtended;
  return m;
}

std::vector<std::string> NodeState::Insufficient(const PodShape& p) const {
  std::vector<std::string> out;
  if (p.cpu_milli > cpu_free()) out.emplace_back(kCpu);
  if (p.mem_bytes > mem_free()) out.emplace_back(kMemory);
  if (p.gpu_count > 0 && ModelAccepts(gpu_model, p) && !GpuFits(*this, p)) out.emplace_back(kGpu);
  for (const auto& [k, v] : p.ext.entries()) {
    if (k == kPods && !ext_capacity.Has(kPods)) continue;
    if (ext_used.Get(k) + v > ext_capacity.Get(k)) out.push_back(k);
  }
  return out;
}

GpuAssignment NodeState::DefaultGpuChoice(const PodShape& p) const {
  GpuAssignment a;
  a.milli_per_device = p.gpu_milli_per_device;
  if (p.gpu_count == 0) return a;
  if (p.gpu_milli_per_device >= kMilliPerGpu) {
    for (int i = 0; i < gpu_devices() && static_cast<int>(a.devices.size()) < p.gpu_count; ++i)
      if (gpu_used_milli[i] == 0) a.devices.push_back(static_cast<int16_t>(i));
    return a;
  }
  int best = -1;
  for (int i = 0; i < gpu_devices(); ++i) {
    int32_t free = kMilliPerGpu - gpu_used_milli[i];
    if (free < p.gpu_milli_per_device) continue;
    if (best < 0 || free < kMilliPerGpu - gpu_used_milli[best]) best = i;
  }
  if (best >= 0) a.devices.push_back(static_cast<int16_t>(best));
  return a;
}

bool NodeState::CanUse(const PodShape& p, const GpuAssignment& a) const {
  if (static_cast<int>(a.devices.size()) != p.gpu_count) return false;
  for (int16_t d : a.devices) {
    if (d < 0 || d >= gpu_devices()) return false;
    if (gpu_used_milli[d] + p.gpu_milli_per_device > kMilliPerGpu) return false;
  }
  return true;
}

void NodeState::Allocate(const PodShape& p, const GpuAssignment& a) {
  ARB_CHECK_MSG(CanUse(p, a), "GPU assignment does not fit on " + name);
  cpu_used_milli += p.cpu_milli;
  mem_used_bytes += p.mem_bytes;
  for (int16_t d : a.devices) gpu_used_milli[d] += p.gpu_milli_per_device;
  if (!a.devices.empty() || !gpu_summary_ok) RecountGpus();
  ext_used += p.ext;
}

void NodeState::Release(const PodShape& p, const GpuAssignment& a) {
  cpu_used_milli -= p.cpu_milli;
  mem_used_bytes -= p.mem_bytes;
  for (int16_t d : a.devices) {
    gpu_used_milli[d] -= p.gpu_milli_per_device;
    ARB_CHECK_MSG(gpu_used_milli[d] >= 0, "GPU release below zero on " + name);
  }
  if (!a.devices.empty() || !gpu_summary_ok) RecountGpus();
  ext_used -= p.ext;
  ARB_CHECK_MSG(cpu_used_milli >= 0 && mem_used_bytes >= 0 && !ext_used.AnyNegative(),
                "release below zero on " + name);
}

}  // namespace arbiter::placement
