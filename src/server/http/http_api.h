// The Kubernetes-compatible HTTP API of `arbiter serve` on the event-driven server of
// http_server.h (handlers on a few worker threads, watches served by the event loop), on a Daemon:
// health (/healthz /readyz /livez), discovery (/version /api /apis ...), CRUD, list (label and
// field selectors) and watch (chunked JSON lines, resourceVersion semantics, bookmarks) of every
// served resource (adapters/kube/resources.h), pods/status, pods/eviction. Bodies and errors
// are built by the pure library in adapters/kube; this file only routes and streams.
// Every request is logged as one JSON line (structured logs, request_log.h) through `log`.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "adapters/kube/auth.h"
#include "core/status.h"
#include "server/daemon.h"
#include "server/dashboard/routes.h"
#include "server/http/http_server.h"
#include "server/http/tls_server.h"
#include "server/http/token_source.h"

namespace arbiter::server {

class ListSnapshots;
class RequestMetrics;

struct ApiOptions {
  std::string version = "0.1.0";  // arbiter's, for /version
  // Connections, deadlines, caps and handler threads (http_server.h); the body limit is
  // kube::kMaxBodyBytes whatever is set here.
  HttpLimits limits;
  // kube-apiserver's --min-request-timeout: a watch without timeoutSeconds lasts a random time in
  // [min, 2 min], and no watch longer than 2 min.
  int min_request_timeout_s = 1800;
  std::function<void(const std::string& json_line)> log;
  dashboard::DashboardOptions dashboard;  // the web dashboard at /ui/ (dashboard/routes.h)
  // More of /metrics, appended (e.g. the meter job's, MeterJob::MetricsText); called per scrape.
  std::function<std::string()> extra_metrics;
  // The virtual pods' cAdvisor and dcgm-exporter series on /metrics too (--pod-metrics daemon);
  // each node serves its own in any case (metrics.h).
  bool pod_usage_on_metrics = true;
  TlsFiles tls;  // HTTPS when set (tls_server.h)
  // --token-file: every request authenticated and authorized (api_auth.h) against the table in
  // force (token_source.h: reloadable while serving); null: open.
  std::shared_ptr<const TokenSource> tokens;
};

class ApiServer {
 public:
  ApiServer(Daemon& daemon, ApiOptions options);
  ~ApiServer();
  // Binds host:port (port 0: any free port); returns the port. Fails too when the TLS files of
  // the options cannot serve (tls_server.h's messages).
  Result<int> Bind(const std::string& host, int port);
  // What the server refused or cut so far.
  HttpServerStats stats() const;
  // Serves until Stop() (from another thread or a signal handler thread).
  void Run();
  void Stop();

 private:
  void Routes();
  kube::UserInfo Caller(const httplib::Request& req) const;
  void SelfReviewRoutes(
      HttpServer& s, const std::function<HttpServer::Handler(const HttpServer::Handler&)>& bounded);
  Daemon& daemon_;
  ApiOptions options_;
  std::unique_ptr<HttpServer> svr_;
  std::string address_;
  Status setup_;                          // the TLS set-up's error, reported by Bind
  std::unique_ptr<ListSnapshots> lists_;  // the ranges paged lists continue from (list_pages.h)
  // apiserver_request_total / _duration_seconds (process_metrics.h), fed by the logger.
  std::shared_ptr<RequestMetrics> requests_;
};

}  // namespace arbiter::server
