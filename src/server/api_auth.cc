#include "server/api_auth.h"

#include <httplib.h>

#include "adapters/kube/request_info.h"
#include "adapters/kube/status.h"
#include "server/request_log.h"

namespace arbiter::server {

namespace {

bool Unguarded(const std::string& path) {
  if (path == "/healthz" || path == "/livez" || path == "/readyz") return true;
  return path == "/ui" || path.rfind("/ui/", 0) == 0;
}

}  // namespace

AuthOutcome AuthorizeRequest(const kube::TokenTable& tokens, const httplib::Request& req) {
  AuthOutcome out;
  if (Unguarded(req.path)) return out;
  auto user = kube::Authenticate(tokens, req.get_header_value("Authorization"));
  if (!user) {
    out.code = 401;
    out.refusal = kube::Unauthorized();
    return out;
  }
  out.user = user->name;
  const std::string watch = req.has_param("watch") ? req.get_param_value("watch") : "";
  const kube::RequestAttributes a = kube::RequestAttributesOf(req.method, req.path, watch);
  if (kube::Authorize(*user, a).allowed) return out;
  out.code = 403;
  out.refusal = kube::ForbiddenStatus(*user, a);
  return out;
}

void InstallApiAuth(httplib::Server& s, std::shared_ptr<const TokenSource> tokens) {
  s.set_pre_routing_handler([tokens](const httplib::Request& req, httplib::Response& res) {
    RequestStarted();
    // HTTP/2's preface method is not served, and cpp-httplib would read its body without the
    // bound every other body has (http_api.cc).
    if (req.method == "PRI") {
      res.status = 405;
      res.set_content(kube::WireJson(kube::MethodNotAllowed().body), "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!tokens) return httplib::Server::HandlerResponse::Unhandled;
    AuthOutcome o = AuthorizeRequest(*tokens->Current(), req);
    RequestAuthenticated(o.user);
    if (o.code == 0) return httplib::Server::HandlerResponse::Unhandled;
    res.status = o.code;
    res.set_content(kube::WireJson(o.refusal.body), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
}

}  // namespace arbiter::server
