#include "server/http/api_auth.h"

#include <httplib.h>

#include "adapters/kube/request_info.h"
#include "adapters/kube/request_options.h"
#include "adapters/kube/status.h"
#include "server/http/request_log.h"

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
  // kube-apiserver's RequestInfo reads ?watch as its parameter codec does ("yes" is a watch).
  const std::string watch = kube::QueryBool(req.params, "watch") ? "true" : "false";
  const kube::RequestAttributes a = kube::RequestAttributesOf(req.method, req.path, watch);
  if (kube::Authorize(*user, a).allowed) return out;
  out.code = 403;
  out.refusal = kube::ForbiddenStatus(*user, a);
  return out;
}

bool BodyAdmitted(const kube::TokenTable& tokens, const httplib::Request& req) {
  return kube::Authenticate(tokens, req.get_header_value("Authorization")) &&
         AuthorizeRequest(tokens, req).code == 0;
}

bool ReservedRequest(const TokenSource* tokens, const httplib::Request& req) {
  if (req.path == "/healthz" || req.path == "/livez" || req.path == "/readyz") return true;
  if (!tokens) return false;
  auto user = kube::Authenticate(*tokens->Current(), req.get_header_value("Authorization"));
  return user && (user->InGroup("system:masters") || user->InGroup("arbiter:admins"));
}

void InstallApiAuth(HttpServer& s, std::shared_ptr<const TokenSource> tokens) {
  // Methods the server does not serve (HTTP/2's PRI...) are refused by its parser, before any
  // body is read (http_request_parser.h).
  s.set_pre_routing_handler([tokens](const httplib::Request& req, httplib::Response& res) {
    RequestStarted();
    if (!tokens) return HttpServer::HandlerResponse::kUnhandled;
    AuthOutcome o = AuthorizeRequest(*tokens->Current(), req);
    RequestAuthenticated(o.user);
    if (o.code == 0) return HttpServer::HandlerResponse::kUnhandled;
    res.status = o.code;
    res.set_content(kube::WireJson(o.refusal.body), "application/json");
    return HttpServer::HandlerResponse::kHandled;
  });
  if (tokens)
    s.set_body_admission(
        [tokens](const httplib::Request& req) { return BodyAdmitted(*tokens->Current(), req); });
}

}  // namespace arbiter::server
