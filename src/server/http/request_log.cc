#include "server/http/request_log.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "adapters/kube/request_info.h"
#include "adapters/kube/request_options.h"
#include "adapters/kube/status.h"
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

std::shared_ptr<void> SaveRequestContext() { return std::make_shared<RequestContext>(tl_request); }

void RestoreRequestContext(std::shared_ptr<void> saved) {
  tl_request = saved ? *static_cast<const RequestContext*>(saved.get()) : RequestContext{};
}

double LoggedLatencyMs(const RequestLogInput& in) {
  return std::round(in.latency_ms * 1000) / 1000;
}

nlohmann::json RequestLogFields(const RequestLogInput& in) {
  const kube::RequestAttributes a = kube::RequestAttributesOf(in.method, in.path, in.watch_param);
  nlohmann::json line = {{"time", KubeTime(in.now)},
                         {"level", in.status >= 500 ? "error" : "info"},
                         {"msg", "request"},
                         {"method", in.method},
                         {"path", in.path},
                         {"status", in.status},
                         {"latencyMs", LoggedLatencyMs(in)},
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

namespace {

// `"key":` and a string as kube::WireJson writes it: printable ASCII without quote or backslash
// as is, anything else by WireJson itself (escapes, invalid UTF-8).
void AppendField(std::string& out, const char* key, const std::string& value) {
  out += '"';
  out += key;
  out += "\":";
  const bool plain = std::all_of(value.begin(), value.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) return kube::AppendWireJson(out, nlohmann::json(value));
  out += '"';
  out += value;
  out += '"';
}

}  // namespace

// The keys in the order of nlohmann::json's object (sorted), as RequestLogFields makes them.
std::string RequestLogText(const RequestLogInput& in) {
  const kube::RequestAttributes a = kube::RequestAttributesOf(in.method, in.path, in.watch_param);
  std::string out;
  out.reserve(256 + in.path.size());
  out += "{\"latencyMs\":";
  kube::AppendWireJson(out, nlohmann::json(LoggedLatencyMs(in)));
  out += ',';
  AppendField(out, "level", in.status >= 500 ? "error" : "info");
  out += ',';
  AppendField(out, "method", in.method);
  out += ",\"msg\":\"request\"";
  const bool resource = a.resource_request;
  if (resource && !a.name.empty()) AppendField(out += ',', "name", a.name);
  if (resource && !a.namespace_.empty()) AppendField(out += ',', "namespace", a.namespace_);
  AppendField(out += ',', "path", in.path);
  AppendField(out += ',', "remote", in.remote);
  if (resource) AppendField(out += ',', "resource", a.resource);
  char buf[16];
  out += ",\"status\":";
  out.append(buf, std::to_chars(buf, buf + sizeof buf, in.status).ptr);
  if (resource && !a.subresource.empty()) AppendField(out += ',', "subresource", a.subresource);
  AppendField(out += ',', "time", KubeTime(in.now));
  AppendField(out += ',', "user", in.user);
  AppendField(out += ',', "verb", a.verb);
  out += '}';
  return out;
}

nlohmann::json RequestLogLine(const httplib::Request& req, const httplib::Response& res) {
  return RequestLogFields(RequestLogInputOf(req, res));
}

RequestLogInput RequestLogInputOf(const httplib::Request& req, const httplib::Response& res) {
  RequestLogInput in;
  in.method = req.method;
  in.path = req.path;
  in.watch_param = kube::QueryBool(req.params, "watch") ? "true" : "false";
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
  return in;
}

}  // namespace arbiter::server
