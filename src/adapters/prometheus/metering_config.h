// Configuration of live metering from Prometheus (`arbiter meter --config FILE`): the scrape
// interval (query step), paging, HTTP behaviour, and the names of the series and labels read.
// Defaults are the standard kube-state-metrics, cAdvisor and dcgm-exporter shapes documented in
// docs/metering-live.md.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/billing/metering.h"
#include "core/status.h"

namespace arbiter::prometheus {

struct MeteringConfig {
  Millis scrape_interval = 30000;      // query step; divides one hour
  Millis page = billing::kHourMs;      // time range of one query_range call
  Millis request_gap_bridge = 300000;  // longest KSM hole inside a run that is bridged
  Millis timeout = 30000;              // per HTTP request
  int retries = 3;
  std::string selector;  // extra matchers, e.g. cluster="prod"

  std::string pod_phase = "kube_pod_status_phase";
  std::string pod_info = "kube_pod_info";
  std::string requests = "kube_pod_container_resource_requests";
  std::string node_labels = "kube_node_labels";
  std::string cpu_usage = "container_cpu_usage_seconds_total";
  std::string memory_usage = "container_memory_working_set_bytes";
  std::string gpu_usage = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
  bool gpu_percent = false;  // gpuUsage.scale: Percent (0..100) instead of Ratio (0..1)

  std::string label_namespace = "namespace";
  std::string label_pod = "pod";
  std::string label_container = "container";
  std::string label_node = "node";
  std::string label_resource = "resource";
  std::string label_mig_profile = "GPU_I_PROFILE";
  std::string label_gpu_product = "label_nvidia_com_gpu_product";
  std::string label_gpu_replicas = "label_nvidia_com_gpu_replicas";
  // dcgm-exporter's labels of one device: the card and the MIG instance on it (with namespace,
  // pod, container and migProfile they identify a GPU usage series; docs/metering-live.md).
  std::string label_gpu_device = "UUID";
  std::string label_mig_instance = "GPU_I_ID";

  std::map<std::string, std::string> resources;  // extra KSM resource label -> resource name
};

Status ValidateMeteringConfig(const MeteringConfig& c);
// Reads a `kind: PrometheusMetering` YAML document; unknown fields are errors (with the closest
// known name), durations are Go-style ("30s").
Result<MeteringConfig> LoadMeteringConfig(const std::string& path);

// The Kubernetes resource name of a kube-state-metrics `resource` label value
// ("nvidia_com_gpu" -> "nvidia.com/gpu", "nvidia_com_mig_1g_10gb" -> "nvidia.com/mig-1g.10gb").
std::string ResourceFromKsmLabel(std::string_view label, const MeteringConfig& c);

}  // namespace arbiter::prometheus
