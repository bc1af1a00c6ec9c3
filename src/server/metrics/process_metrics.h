// The daemon's own process and request families on /metrics, as kube-apiserver exposes them:
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_start_time_seconds, process_open_fds, process_max_fds   (client_golang's process
//   collector, from /proc/self)
//   apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,component,code}
//   apiserver_request_duration_seconds{verb,dry_run,group,version,resource,subresource,scope,
//     component} (histogram, kube-apiserver's buckets; WATCH left out: long-running)
// Labels as kube-apiserver's endpoints/metrics MonitorRequest writes them (KubeRequestLabels).
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace arbiter::server {

// The process families, read from /proc/self now (an empty string where /proc is missing).
std::string RenderProcessMetrics();

// kube-apiserver's apiserver_request_duration_seconds bucket bounds (seconds).
const std::vector<double>& RequestDurationBuckets();

// A request's labels: verb GET (with a name), LIST, WATCH, POST, PUT, PATCH, APPLY (a server-side
// apply patch), DELETE, CONNECT (exec, attach, portforward, proxy), else the HTTP method; dry_run
// the sorted ?dryRun= values ("invalid" unless All); group, version, resource, subresource from
// the path; scope "resource" (a name, or a create), "namespace", "cluster", "" (non-resource);
// component "apiserver" ("" for a non-resource path, as the health checks: subresource the path).
struct RequestLabels {
  std::string verb, dry_run, group, version, resource, subresource, scope, component;
  auto operator<=>(const RequestLabels&) const = default;
};
// What the server knows of a request: the authorizer's view of it (adapters/kube/request_info.h)
// and its HTTP parts.
struct RequestFacts {
  std::string method, path, content_type;
  std::vector<std::string> dry_run;
  bool resource_request = false;
  std::string verb, group, resource, subresource, namespace_, name;  // the authorizer's
};
RequestLabels KubeRequestLabels(const RequestFacts& f);

// Counts of requests served, and their latencies. Thread-safe (its own mutex, never the daemon's
// lock): the server's logger observes each request after its answer.
class RequestMetrics {
 public:
  void Observe(const RequestLabels& labels, int code, double seconds);
  std::string Render() const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket (not cumulative), then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<RequestLabels, int>, uint64_t> totals_;  // labels, code
  std::map<RequestLabels, Histogram> durations_;
};

}  // namespace arbiter::server
