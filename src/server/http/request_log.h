// The structured log line of every API request (`arbiter serve`'s stderr, one JSON object):
//   {"time","level":"info"|"error" (5xx),"msg":"request","method","path","status" (the HTTP
//    code),"latencyMs","remote","user" ("" unauthenticated or without --token-file),"verb",
//    and for a resource request "resource", "subresource", "namespace", "name" (when not empty)}
// verb, resource and namespace as the authorizer sees them (adapters/kube/request_info.h). The
// query string and the headers are never logged: no token is ever written.
// The server (http_server.h) runs a request's pre-routing hook, its handler and the logger on one
// worker thread, so the start time and the authenticated user are kept per thread between
// RequestStarted() (the pre-routing hook, api_auth.h) and RequestLogLine() (the logger). An
// answer held until its journal record is durable is logged later on the server's loop: its
// context is saved on the worker and restored there (HttpServer::Durability).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/duration.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace arbiter::server {

// At a request's entry: its clock starts, its user is unknown.
void RequestStarted();
// Once its bearer token named a user.
void RequestAuthenticated(std::string user);
// This thread's request context (start, user), kept for a held answer's log line, and put back.
std::shared_ptr<void> SaveRequestContext();
void RestoreRequestContext(std::shared_ptr<void> saved);

// The fields of a request's line (pure): `latency_ms` measured by the caller.
struct RequestLogInput {
  std::string method, path, watch_param, remote, user;
  int status = 0;
  double latency_ms = 0;
  Millis now = 0;  // Unix ms
};
nlohmann::json RequestLogFields(const RequestLogInput& in);

// The same line as text: exactly kube::WireJson(RequestLogFields(in)), written without the tree
// (a create's log line cost about as much as its JSON tree; request_log_test compares them).
std::string RequestLogText(const RequestLogInput& in);
// The latency as the line gives it (ms, rounded to the µs).
double LoggedLatencyMs(const RequestLogInput& in);

// The line of the request this thread serves (RequestStarted() .. now).
nlohmann::json RequestLogLine(const httplib::Request& req, const httplib::Response& res);
// Its input: the request this thread serves, its status, its start and user (then forgotten).
RequestLogInput RequestLogInputOf(const httplib::Request& req, const httplib::Response& res);

}  // namespace arbiter::server
