#include "server/http/request_log.h"

#include <httplib.h>

#include <chrono>
#include <cmath>

#include "adapters/kube/request_info.h"
#include "server/state/pod_status.h"

namespace arbiter::server {

namespace {
struct RequestContext {
  std::chrono::steady_clock::time_point start{};
  std::string user;
};
thread_local RequestContext tl_request;
}  // namespace

void RequestStarted() { tl_request = {std::chrono::steady_clock::now(), ""}; }

void RequestAuthenticated(std::string user) { tl_request.user = std::move(user); }

nlohmann::json RequestLogFields(const RequestLogInput& in) {
  const kube::RequestAttributes a = kube::RequestAttributesOf(in.method, in.path, in.watch_param);
  nlohmann::json line = {{"time", KubeTime(in.now)},
                         {"level", in.status >= 500 ? "error" : "info"},
                         {"msg", "request"},
                         {"method", in.method},
                         {"path", in.path},
                         {"status", in.status},
                         {"latencyMs", std::round(in.latency_ms * 1000) / 1000},
                         {"remote", in.remote},
                         {"user", in.user},
                         {"verb", a.verb}};
  if (a.resource_request) {
    line["resource"] = a.resource;
    for (const auto& [key, value] :
         {std::pair<const char*, const std::string&>{"subresource", a.subresource},
          {"namespace", a.namespace_},
          {"name", a.name}})
      if (!value.empty()) line[key] = value;
  }
  return line;
}

nlohmann::json RequestLogLine(const httplib::Request& req, const httplib::Response& res) {
  RequestLogInput in;
  in.method = req.method;
  in.path = req.path;
  in.watch_param = req.has_param("watch") ? req.get_param_value("watch") : "";
  in.remote = req.remote_addr;
  in.status = res.status;
  in.user = tl_request.user;
  const auto now = std::chrono::steady_clock::now();
  // A request refused before the pre-routing hook ran has no start: latency 0.
  if (tl_request.start != std::chrono::steady_clock::time_point{})
    in.latency_ms = std::chrono::duration<double, std::milli>(now - tl_request.start).count();
  in.now = std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  tl_request = {};
  return RequestLogFields(in);
}

}  // namespace arbiter::server
