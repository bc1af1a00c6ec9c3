// The daemon's HTTP/1.1 server: one event loop (epoll) owns every connection, a small pool of
// worker threads runs the handlers (which take the cluster's lock), and watches are served by
// the loop itself from the watch feed (watch_log.h), so an open watch costs a buffer, not a
// thread. Handlers keep cpp-httplib's Request/Response types and its routing style (regex paths,
// a pre-routing hook, a logger, exception and error handlers); none of its sockets are used.
//
// What a client cannot do to it (HttpLimits, defaults after kube-apiserver and Go's net/http):
//   - hold a connection without sending a request: a header deadline from the connection's start
//     (or from the first byte after an idle keep-alive wait), a TLS handshake deadline, an idle
//     keep-alive timeout, a body deadline, a stalled-write deadline;
//   - send more than the limits: headers (431), bodies, Content-Length or chunked (413 as soon as
//     the limit is passed; the rest is read and dropped, then the connection closes);
//   - make it hold a body it will refuse: `set_body_admission` decides from the headers (the
//     daemon: a known token allowed the request), before any of the body is kept;
//   - take every connection: a cap per client address (429 + Retry-After on the first request,
//     or at once) and a global cap whose last `reserved_connections` only serve the requests
//     `set_reserved` names (probes, admins); beyond it new connections are closed at once;
//   - take every worker: a cap of requests in flight per client address (429 + Retry-After);
//   - hold memory with a watch it never reads: its first answer (the current objects) is made a
//     window at a time as it is read (WatchStream::initial_more), and a watch whose unsent bytes
//     pass `watch_buffer_bytes` beyond it (and the changes caught up on) is closed, as
//     kube-apiserver closes an unresponsive watcher.
// Pimpl: no system or OpenSSL header here.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/http/watch_log.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace arbiter::server {

struct HttpLimits {
  size_t max_header_bytes = 64 * 1024;
  size_t max_body_bytes = 3u << 20;
  int header_timeout_s = 30;              // a request's line and headers, from its first byte
  int tls_handshake_timeout_s = 10;       // from the connection's accept
  int idle_timeout_s = 90;                // a keep-alive connection between requests
  int body_timeout_s = 60;                // a request's whole body, after its headers
  int write_timeout_s = 60;               // an answer that makes no progress
  int64_t request_timeout_ms = 60000;     // a held answer (AnswerAfter), from its handler's start
  int max_connections = 0;                // 0: the open-file limit (raised to its maximum) less 128
  int reserved_connections = 64;          // of max_connections, for set_reserved's requests only
  int max_connections_per_client = 1024;  // per remote address
  int max_in_flight_per_client = 256;     // requests handled or queued, per remote address
  int workers = 16;                       // handler threads
  size_t watch_buffer_bytes = 4u << 20;   // unsent watch bytes before the watch is closed
};

// A watch: what a handler hands to the event loop instead of a finished answer
// (HttpServer::ServeWatch). The loop sends `initial`, then, for every change of `kind` (in
// `namespace_`, or any when empty) after `after_rv`, what `append` adds (its line when `plain`);
// a bookmark every 5 s without a change when `bookmark` is set; `too_old` when the feed no longer
// holds `after_rv`; and ends the stream at `end`. The callbacks run on the event loop: no lock, no
// I/O.
struct WatchStream {
  std::string content_type;
  std::string kind, namespace_;
  int64_t after_rv = 0;
  std::chrono::steady_clock::time_point end;
  std::string initial;
  // The rest of the first answer (the current objects: a list's size), made as the connection
  // drains rather than whole: each call appends the next lines (a bounded batch) to `out` and
  // returns whether more follow. Until it is done the stream gets no change, no bookmark; then
  // it catches up from `after_rv`. A watcher that never reads holds a window, not the list.
  std::function<bool(std::string& out)> initial_more;
  std::function<void(const WatchLog::Entry&, std::string& out)> append;
  // Every change is sent as its line (WatchLog::Entry::AppendLine: no selector, no Table): the
  // loop writes the one chunk it made of the change for all such streams; `append` is not called.
  bool plain = false;
  std::function<std::string(int64_t rv)> bookmark;
  std::function<std::string(int64_t rv)> too_old;
};

// Counters of what the server refused or cut (for tests and the log at stop).
struct HttpServerStats {
  uint64_t accepted = 0, refused_connections = 0, refused_requests = 0, timed_out = 0,
           slow_watchers_closed = 0;
  uint64_t held = 0;            // answers held until their journal record was durable (AnswerAfter)
  uint64_t held_timed_out = 0;  // of those, answered `timed_out`'s (request_timeout_ms) instead
};

// The daemon's malloc policy, set by its main (`arbiter serve`) and by bench_serve, once per
// process (a library does not set a process's malloc policy by being constructed). glibc's malloc
// raises its mmap threshold to the size of each large block freed (up to 32 MiB), after which a
// large answer (a list: megabytes) is carved from the heap of whichever worker thread's arena built
// it and stays in the process once freed: 16 workers grew RSS from 195 MB to 1.3 GB over 20 lists
// of 10k pods. A fixed threshold keeps blocks of 1 MiB and more mapped, so each is given back when
// freed, and a fixed trim threshold returns an arena's free top beyond 1 MiB (bench_serve
// BM_ServeList: RSS flat across lists).
void UseServeHeapPolicy();

class HttpServer {
 public:
  using Request = httplib::Request;
  using Response = httplib::Response;
  using Handler = std::function<void(const Request&, Response&)>;
  enum class HandlerResponse { kHandled, kUnhandled };

  // `watches`: the feed watches are served from (may be null: no watches). `tls`: HTTPS with this
  // context (the server keeps a reference), else plain HTTP.
  HttpServer(HttpLimits limits, WatchLog* watches, std::shared_ptr<ssl_ctx_st> tls);
  ~HttpServer();

  // Routes, tried in the order added; HEAD is routed as GET (the body is not sent).
  void Get(const std::string& pattern, Handler h);
  void Post(const std::string& pattern, Handler h);
  void Put(const std::string& pattern, Handler h);
  void Patch(const std::string& pattern, Handler h);
  void Delete(const std::string& pattern, Handler h);
  // Before routing, on the worker: kHandled when it answered.
  void set_pre_routing_handler(std::function<HandlerResponse(const Request&, Response&)> h);
  // After each answer (a watch: when its stream starts), on the worker.
  void set_logger(std::function<void(const Request&, const Response&)> f);
  void set_exception_handler(std::function<void(const Request&, Response&, std::exception_ptr)> h);
  // Every answer with a status >= 400, after its handler.
  void set_error_handler(Handler h);
  // The body of an answer the loop gives itself (400, 405, 413, 429, 431, 501, 505).
  void set_refusal(std::function<void(int status, const std::string& message, Response&)> f);
  // Which requests a connection from the reserve may make (default: none).
  void set_reserved(std::function<bool(const Request&)> f);
  // On the loop, once a request's headers are in and a body follows: whether its body may be
  // read (default: every one). A request refused here is handled at once without its body (no
  // "100 Continue" is sent): the pre-routing handler is expected to refuse it too, else it is
  // answered 401; then what the client still sends is read and dropped (at most 5 s) and the
  // connection closes. kube-apiserver authenticates and authorizes a request before its handler
  // reads the body, so a client without a token cannot make it hold megabytes.
  void set_body_admission(std::function<bool(const Request&)> f);

  // Called by a handler: its answer is this watch instead (false outside a handler).
  static bool ServeWatch(WatchStream stream);

  // Durable answers without a worker waiting for the disk. A handler that changed something
  // calls AnswerAfter(seq) instead of waiting for journal record `seq` (false outside a
  // handler, or without set_durability: then it waits itself); its answer is held by the event
  // loop and sent once `durable(seq)` is 1 (the loop asks after every wake-up: the WatchLog's
  // Notify() after each commit, and at least every 250 ms), or replaced by `lost`'s answer when it
  // is -1 (the record will never be durable), or by `timed_out`'s (status 504) when it is still
  // 0 `request_timeout_ms` after its handler started: the connection is free again, and the
  // record's later fate is not asked about (its answer is gone; a new request on the connection
  // gets its own). The logger runs then, for such an answer, on the loop, with the context `save`
  // took on the worker given back by `restore` (a request log's thread-local start and user).
  static bool AnswerAfter(int64_t seq);
  struct Durability {
    std::function<int(int64_t seq)> durable;  // 1 durable, 0 not yet, -1 never
    std::function<void(Response&)> lost;
    std::function<void(Response&)> timed_out;
    std::function<std::shared_ptr<void>()> save;
    std::function<void(std::shared_ptr<void>)> restore;
  };
  void set_durability(Durability d);  // before Run

  // Binds host:port (0: any free port); returns the port.
  Result<int> Bind(const std::string& host, int port);
  // Serves on this thread until Stop(); then sends what was handled (a held answer once its
  // record is durable or never will be; at most 10 s) and closes every connection.
  void Run();
  // From any thread, or before Run (which then returns at once).
  void Stop();
  HttpServerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace arbiter::server
