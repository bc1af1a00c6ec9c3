// Authentication and authorization of `arbiter serve`'s API (--token-file): one hook at the
// entry of every request, before routing. The bearer token names the user (adapters/kube/auth.h:
// kube-apiserver's token file), the request's path names what it does
// (adapters/kube/request_info.h), the documented policy decides. Refusals are kube-apiserver's:
// 401 `Unauthorized` without a known token, 403 `pods is forbidden: User "alice" cannot list
// resource "pods" in API group "" in the namespace "team-b"`.
// Not guarded here: /healthz, /livez, /readyz (probes, as kube-apiserver lets anonymous callers
// read them) and the dashboard under /ui (its static files carry no data; /ui/api/* checks the
// same tokens itself: dashboard/routes.h).
#pragma once

#include <memory>
#include <string>

#include "adapters/kube/auth.h"
#include "server/http/http_server.h"
#include "server/http/token_source.h"

namespace httplib {
struct Request;
}  // namespace httplib

namespace arbiter::server {

// What the hook decided for one request.
struct AuthOutcome {
  int code = 0;      // 0 allowed, else 401 or 403
  std::string user;  // "" when not authenticated
  kube::KubeStatus refusal;
};

// The decision for one request (pure apart from reading `req`).
AuthOutcome AuthorizeRequest(const kube::TokenTable& tokens, const httplib::Request& req);

// Whether `req`'s body may be read (HttpServer::set_body_admission), decided from its headers: a
// known token that AuthorizeRequest allows. Without one the request is refused (401 or 403) with
// its body unread, as kube-apiserver's filters refuse it before a handler reads the body; the
// unguarded paths (probes, the dashboard) take no body.
bool BodyAdmitted(const kube::TokenTable& tokens, const httplib::Request& req);

// Whether `req` may use the server's reserved connections (http_server.h): the probes
// (/healthz, /livez, /readyz), and with `tokens` any request of a cluster admin
// (system:masters, arbiter:admins), so that an operator gets in when tenants took every other
// connection.
bool ReservedRequest(const TokenSource* tokens, const httplib::Request& req);

// Installs `s`'s pre-routing handler: it starts the request's log context (request_log.h) and,
// with `tokens` (null: no authentication), decides by AuthorizeRequest on the table in force
// (token_source.h: reloadable); a refused request is answered there.
void InstallApiAuth(HttpServer& s, std::shared_ptr<const TokenSource> tokens);

}  // namespace arbiter::server
