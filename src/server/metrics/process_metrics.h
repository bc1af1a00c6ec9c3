// The daemon's own process and request families on /metrics, as kube-apiserver exposes them:
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_start_time_seconds, process_open_fds, process_max_fds   (client_golang's process
//   collector, from /proc/self)
//   apiserver_request_total{verb,resource,code}                     every request served
//   apiserver_request_duration_seconds{verb,resource} (histogram)   kube-apiserver's buckets;
//                                                                   WATCH left out (long-running)
// verb as kube-apiserver writes it: the method, LIST for a collection GET, WATCH for a watch;
// resource "" for non-resource paths (/healthz, /metrics, /version, ...).
#pragma once

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

// Counts of requests served, and their latencies. Thread-safe (its own mutex, never the daemon's
// lock): the server's logger observes each request after its answer.
class RequestMetrics {
 public:
  // `verb` the authorizer's (get, list, watch, create, ...), `method` the HTTP one.
  void Observe(const std::string& verb, const std::string& method, const std::string& resource,
               int code, double seconds);
  std::string Render() const;

 private:
  struct Histogram {
    std::vector<uint64_t> counts;  // per bucket (not cumulative), then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> totals_;  // verb, resource, code
  std::map<std::pair<std::string, std::string>, Histogram> durations_;    // verb, resource
};

}  // namespace arbiter::server
