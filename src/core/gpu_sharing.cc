#include "core/gpu_sharing.h"

#include "core/text.h"

namespace arbiter {

Result<int64_t> ParseGpuReplicas(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Result<int64_t>::Error(std::string(kGpuReplicasLabel) + " \"" + Echo(text) +
                                  "\": " + why);
  };
  if (text.empty()) return bad("must be a positive integer (replicas per GPU)");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("must be a positive integer (replicas per GPU)");
    v = v * 10 + (c - '0');
    if (v > kMaxGpuReplicas)
      return bad("more than " + std::to_string(kMaxGpuReplicas) + " replicas per GPU");
  }
  if (v == 0) return bad("must be at least 1 (replicas per GPU)");
  return v;
}

Status ValidateGpuSharingLabels(const std::map<std::string, std::string>& labels) {
  if (auto it = labels.find(std::string(kGpuReplicasLabel)); it != labels.end()) {
    auto r = ParseGpuReplicas(it->second);
    if (!r.ok()) return r.status();
  }
  if (auto it = labels.find(std::string(kGpuSharingStrategyLabel)); it != labels.end()) {
    const std::string& s = it->second;
    if (s != "time-slicing" && s != "mps" && s != "none")
      return Status::Error(std::string(kGpuSharingStrategyLabel) + " \"" + s +
                           "\": must be time-slicing, mps or none");
  }
  return Status::Ok();
}

int64_t GpuReplicasOf(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(std::string(kGpuReplicasLabel));
  if (it == labels.end()) return 1;
  auto r = ParseGpuReplicas(it->second);
  return r.ok() ? *r : 1;
}

}  // namespace arbiter
