#include "server/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "server/metrics/metrics.h"

namespace arbiter::server {

namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// /proc/self/stat's fields after the command (field 3 on: state, ppid, ...), split on spaces.
std::vector<std::string> StatFields() {
  const std::string stat = ReadFile("/proc/self/stat");
  const size_t close = stat.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream in(stat.substr(close + 1));
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// The boot time (btime of /proc/stat, Unix seconds), 0 if unknown.
double BootTime() {
  std::istringstream in(ReadFile("/proc/stat"));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  return 0;
}

int64_t OpenFds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int64_t n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

void Family(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
         name + " " + GoNumber(value) + "\n";
}

}  // namespace

std::string RenderProcessMetrics() {
  const std::vector<std::string> f = StatFields();  // f[0] is field 3 (state)
  if (f.size() < 22) return "";
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime, stime (14, 15)
  const double start = BootTime() + std::stod(f[19]) / ticks;        // starttime (22)
  const double vsize = std::stod(f[20]);                             // (23)
  const double rss = std::stod(f[21]) * page;                        // (24)
  std::string out;
  Family(out, "process_cpu_seconds_total", "counter",
         "Total user and system CPU time spent in seconds.", cpu);
  Family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss);
  Family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", vsize);
  Family(out, "process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", start);
  Family(out, "process_open_fds", "gauge", "Number of open file descriptors.",
         static_cast<double>(OpenFds()));
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    Family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
           static_cast<double>(lim.rlim_cur));
  return out;
}

const std::vector<double>& RequestDurationBuckets() {
  // kube-apiserver's requestLatencies (staging/src/k8s.io/apiserver/pkg/endpoints/metrics).
  static const std::vector<double> kBuckets = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
                                               1.0,   1.25,  1.5,  2,   3,   4,   5,   6,
                                               8,     10,    15,   20,  30,  45,  60};
  return kBuckets;
}

namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// kube's CleanVerb / cleanVerb from the authorizer's verb.
std::string KubeVerb(const RequestFacts& f) {
  if (!f.resource_request) return Upper(f.method);
  static const std::set<std::string> kConnect = {"attach", "exec", "portforward", "proxy"};
  if (kConnect.count(f.subresource)) return "CONNECT";
  if (f.verb == "list") return "LIST";
  if (f.verb == "watch") return "WATCH";
  if (f.verb == "patch" && f.content_type.rfind("application/apply-patch", 0) == 0) return "APPLY";
  return Upper(f.method);
}

// kube's cleanDryRun: the distinct values sorted, "invalid" unless each is All.
std::string DryRun(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::string out;
  for (const std::string& v : values) {
    if (v != "All") return "invalid";
    out += (out.empty() ? "" : ",") + v;
  }
  return out;
}

// The API version of a resource path: /api/VERSION/..., /apis/GROUP/VERSION/...
std::string PathVersion(const std::string& path) {
  std::vector<std::string> parts;
  for (size_t pos = 1; pos <= path.size();) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  if (parts.size() > 1 && parts[0] == "api") return parts[1];
  if (parts.size() > 2 && parts[0] == "apis") return parts[2];
  return "";
}

}  // namespace

RequestLabels KubeRequestLabels(const RequestFacts& f) {
  RequestLabels l;
  l.verb = KubeVerb(f);
  l.dry_run = DryRun(f.dry_run);
  if (!f.resource_request) {
    static const std::set<std::string> kHealth = {"/healthz", "/livez", "/readyz"};
    if (kHealth.count(f.path)) l.subresource = f.path;
    return l;
  }
  l.group = f.group;
  l.version = PathVersion(f.path);
  l.resource = f.resource;
  l.subresource = f.subresource;
  l.scope = !f.name.empty() || f.verb == "create" ? "resource"
            : !f.namespace_.empty()               ? "namespace"
                                                  : "cluster";
  l.component = "apiserver";
  return l;
}

void RequestMetrics::Observe(const RequestLabels& labels, int code, double seconds) {
  const auto& bounds = RequestDurationBuckets();
  std::lock_guard<std::mutex> l(mu_);
  ++totals_[{labels, code}];
  if (labels.verb == "WATCH") return;  // long-running: not a latency
  Histogram& h = durations_[labels];
  if (h.counts.empty()) h.counts.assign(bounds.size() + 1, 0);
  const size_t i = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  ++h.counts[i];
  h.sum += seconds;
  ++h.count;
}

namespace {
// The labels in client_golang's order (sorted by name), without code and le.
std::string LabelText(const RequestLabels& l) {
  auto v = [](const std::string& s) { return "\"" + PrometheusLabelValue(s) + "\""; };
  return "component=" + v(l.component) + ",dry_run=" + v(l.dry_run) + ",group=" + v(l.group) +
         ",resource=" + v(l.resource) + ",scope=" + v(l.scope) +
         ",subresource=" + v(l.subresource) + ",verb=" + v(l.verb) + ",version=" + v(l.version);
}
}  // namespace

std::string RequestMetrics::Render() const {
  const auto& bounds = RequestDurationBuckets();
  std::lock_guard<std::mutex> l(mu_);
  std::string out =
      "# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry "
      "run value, group, version, resource, scope, component, and HTTP response code.\n"
      "# TYPE apiserver_request_total counter\n";
  for (const auto& [key, n] : totals_)
    out += "apiserver_request_total{code=\"" + std::to_string(key.second) + "\"," +
           LabelText(key.first) + "} " + std::to_string(n) + "\n";
  out +=
      "# HELP apiserver_request_duration_seconds Response latency distribution in seconds for "
      "each verb, dry run value, group, version, resource, subresource, scope and component.\n"
      "# TYPE apiserver_request_duration_seconds histogram\n";
  for (const auto& [key, h] : durations_) {
    const std::string labels = LabelText(key);
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += h.counts[i];
      const std::string le = i < bounds.size() ? GoNumber(bounds[i]) : "+Inf";
      out += "apiserver_request_duration_seconds_bucket{" + labels + ",le=\"" + le + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "apiserver_request_duration_seconds_sum{" + labels + "} " + GoNumber(h.sum) + "\n";
    out += "apiserver_request_duration_seconds_count{" + labels + "} " + std::to_string(h.count) +
           "\n";
  }
  return out;
}

}  // namespace arbiter::server
