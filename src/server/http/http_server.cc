#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <regex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/http/http_request_parser.h"

namespace arbiter::server {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::seconds;

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxBuffered = 256 * 1024;  // unparsed input kept while a request is handled
constexpr auto kBookmarkEvery = Seconds(5);
constexpr auto kLingerFor = Seconds(5);        // reading what follows a refused request
constexpr size_t kLingerBytes = 64u << 20;     // ... at most this much
constexpr size_t kKeepBufferBytes = 1u << 20;  // an idle connection keeps at most this buffer

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

bool EqualNoCase(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

bool SkippedHeader(const std::string& name) {
  return EqualNoCase(name, "Content-Length") || EqualNoCase(name, "Transfer-Encoding") ||
         EqualNoCase(name, "Connection");
}

// A chunk's size line (chunked transfer coding).
void AppendChunkHead(std::string& out, size_t size) {
  char line[20];
  const int n = std::snprintf(line, sizeof line, "%zx\r\n", size);
  out.append(line, static_cast<size_t>(n));
}

void AppendChunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  AppendChunkHead(out, data.size());
  out.append(data.data(), data.size());
  out.append("\r\n", 2);
}

thread_local std::unique_ptr<WatchStream>* tl_watch_slot = nullptr;
thread_local int64_t* tl_after_seq = nullptr;

}  // namespace

struct HttpServer::Impl {
  enum class Phase { kHandshake, kHeader, kIdle, kBody, kBusy, kStream, kClosing, kDraining };

  struct Conn {
    explicit Conn(HttpParseLimits l) : parser(l) {}
    uint64_t id = 0;
    int fd = -1;
    SSL* ssl = nullptr;
    std::string addr;
    int port = 0;
    Phase phase = Phase::kHeader;
    Clock::time_point deadline;
    Clock::time_point last_write;
    std::string in, out;
    size_t out_off = 0;
    // Bytes to send before `out`, in order: a change's chunk, the same buffer for every plain
    // watch (sent with one sendmsg for all of them, never copied), and any of `out` that was
    // pending when such a chunk came. `shared_off` is how much of the first is sent.
    std::deque<std::shared_ptr<const std::string>> shared;
    size_t shared_off = 0;
    size_t shared_bytes = 0;  // unsent bytes in `shared`
    HttpRequestParser parser;
    bool continue_sent = false;
    bool body_dropped = false;  // refused by body_admission: its input is dropped once answered
    bool reserved = false;      // accepted from the reserve
    bool keep_alive = true;
    bool ssl_wants_write = false;
    bool eof = false;
    // The socket may hold input not read yet: set by every epoll event (edge-triggered), cleared
    // when a read finds it drained. No read is tried again until the next event.
    bool readable = true;
    // The peer's end of input was signalled (EPOLLRDHUP): a short read does not mean drained, the
    // end is still to be read (no edge comes for it again).
    bool peer_closed = false;
    size_t drained = 0;
    std::unique_ptr<WatchStream> watch;
    size_t watch_allowance = 0;
    Clock::time_point watch_last_sent;
    size_t pending() const { return shared_bytes + out.size() - out_off; }
    // Queues `chunk` (shared, not copied) after what is pending. TLS copies it into `out`: one
    // SSL_write (one record) then carries all that is pending, not one a chunk.
    void AppendShared(const std::shared_ptr<const std::string>& chunk) {
      if (ssl) {
        out += *chunk;
        return;
      }
      if (out_off < out.size()) {  // what `out` holds goes first
        if (out_off > 0) out.erase(0, out_off);
        out_off = 0;
        shared_bytes += out.size();
        shared.push_back(std::make_shared<const std::string>(std::move(out)));
        out = std::string();
      }
      shared_bytes += chunk->size();
      shared.push_back(chunk);
    }
    // Counts `n` bytes sent, first from `shared`, then from `out`.
    void Sent(size_t n) {
      while (n > 0 && !shared.empty()) {
        const size_t left = shared.front()->size() - shared_off;
        const size_t k = std::min(n, left);
        shared_off += k;
        shared_bytes -= k;
        n -= k;
        if (shared_off == shared.front()->size()) {
          shared.pop_front();
          shared_off = 0;
        }
      }
      out_off += n;
    }
  };

  struct Job {
    uint64_t conn = 0;
    std::string addr;
    std::unique_ptr<httplib::Request> req;
    bool body_dropped = false;
  };
  struct Done {
    uint64_t conn = 0;
    std::string addr;
    bool head = false;
    httplib::Response res;
    std::unique_ptr<WatchStream> watch;
    int64_t after_seq = 0;  // AnswerAfter: held until this journal record is durable
    std::unique_ptr<httplib::Request> req;  // a held answer's, for its log line
    std::shared_ptr<void> context;          // Durability::save's, for its log line
    Clock::time_point deadline;             // a held answer's: timed_out's answer after it
  };
  struct Client {
    int conns = 0;
    int in_flight = 0;
  };
  // A route's pattern, matched without the regex engine when it is a plain path (kExact), a plain
  // path and anything under it ("P(/.*)?": kSubtree) or anything (".*"); otherwise only when the
  // path starts with the pattern's plain prefix is the regex tried, and only on a path of at most
  // kMaxRegexPath bytes (libstdc++'s regex_match recurses once a character: a 30,000-byte path
  // overflowed a thread's stack); a longer one matches no regex route. req.matches is set by the
  // regex alone: handlers that read it have patterns of the last kind.
  struct Route {
    static constexpr size_t kMaxRegexPath = 4096;
    enum class Kind { kExact, kSubtree, kAny, kRegex } kind;
    std::string prefix;  // the pattern up to its first regex character
    std::regex pattern;
    Handler handler;
    static Route Of(const std::string& p, Handler h) {
      const size_t special = p.find_first_of(R"(.[]{}()\*+?|^$)");
      std::string prefix = p.substr(0, std::min(special, p.size()));
      // A quantifier applies to the character before it; an alternation to the whole pattern.
      if (special != std::string::npos &&
          std::string_view("*+?{").find(p[special]) != std::string_view::npos && !prefix.empty())
        prefix.pop_back();
      if (p.find('|') != std::string::npos) prefix.clear();
      Kind kind = Kind::kRegex;
      if (special == std::string::npos)
        kind = Kind::kExact;
      else if (p.compare(special, std::string::npos, "(/.*)?") == 0)
        kind = Kind::kSubtree;
      else if (p == ".*")
        kind = Kind::kAny;
      return Route{kind, std::move(prefix), std::regex(p), std::move(h)};
    }
    bool Matches(httplib::Request& req) const {
      const std::string& path = req.path;
      switch (kind) {
        case Kind::kExact:
          return path == prefix;
        case Kind::kSubtree:  // "." matches no line terminator
          return path.starts_with(prefix) &&
                 (path.size() == prefix.size() ||
                  (path[prefix.size()] == '/' &&
                   path.find_first_of("\r\n", prefix.size()) == std::string::npos));
        case Kind::kAny:
          return path.find_first_of("\r\n") == std::string::npos;
        case Kind::kRegex:
          return path.size() <= kMaxRegexPath && path.starts_with(prefix) &&
                 std::regex_match(path, req.matches, pattern);
      }
      return false;
    }
  };

  HttpLimits limits;
  WatchLog* watches = nullptr;
  std::shared_ptr<ssl_ctx_st> tls;
  std::unordered_map<std::string, std::vector<Route>> routes;  // by method
  std::function<HandlerResponse(const Request&, Response&)> pre;
  std::function<void(const Request&, const Response&)> logger;
  std::function<void(const Request&, Response&, std::exception_ptr)> on_exception;
  Handler on_error;
  std::function<void(int, const std::string&, Response&)> refusal;
  std::function<bool(const Request&)> reserved;
  std::function<bool(const Request&)> body_admission;
  Durability durability;

  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::set<uint64_t> filling;  // watches whose first answer goes on at the next turn (FillInitial)
  std::atomic<bool> watch_news{false};
  std::atomic<bool> wake_pending{false};  // the eventfd was written and the loop has not woken
  uint64_t next_id = 2;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, Client> clients;
  // Streams by kind + '\0' + namespace ("" for all namespaces).
  std::unordered_map<std::string, std::unordered_set<uint64_t>> streams;
  int64_t hub_rv = 0;
  int max_connections = 0;

  std::mutex mu;  // done, stats
  // The workers' queue, apart from `mu`: the loop queueing a request and a worker queueing an
  // answer do not wait for each other.
  std::mutex jobs_mu;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  std::deque<Done> done;
  std::deque<Done> held;  // the loop's: answers waiting for their journal record
  int64_t known_durable = 0, known_pending = 0;  // Ready's, for one pass of the loop
  bool workers_stop = false;
  std::vector<std::thread> workers;
  HttpServerStats counters;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) close(fd);
  }

  // One write to the eventfd however many threads call this before the loop wakes: the loop
  // clears `wake_pending` before it looks at what they left (AnswerFinished, watch_news).
  void Wake() {
    if (wake_pending.exchange(true)) return;
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd, &one, sizeof one);
  }
  void Woken() {
    uint64_t v;
    [[maybe_unused]] ssize_t r = read(wake_fd, &v, sizeof v);
    wake_pending = false;
  }
  void Count(uint64_t HttpServerStats::*field) {
    std::lock_guard<std::mutex> l(mu);
    ++(counters.*field);
  }

  // ---------------------------------------------------------------- workers

  void Worker() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> l(jobs_mu);
        jobs_cv.wait(l, [&] { return workers_stop || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Done d;
      d.conn = job.conn;
      d.addr = std::move(job.addr);
      d.head = job.req->method == "HEAD";
      tl_watch_slot = &d.watch;
      tl_after_seq = durability.durable ? &d.after_seq : nullptr;
      d.deadline = Clock::now() + std::chrono::milliseconds(limits.request_timeout_ms);
      Handle(*job.req, d.res, job.body_dropped);
      tl_watch_slot = nullptr;
      tl_after_seq = nullptr;
      if (d.after_seq > 0) {  // logged when answered
        d.req = std::move(job.req);
        if (durability.save) d.context = durability.save();
      }
      const int64_t after_seq = d.after_seq;
      {
        std::lock_guard<std::mutex> l(mu);
        if (after_seq > 0) ++counters.held;
        done.push_back(std::move(d));
      }
      if (!HeldForACommit(after_seq)) Wake();
    }
  }

  // True when an answer waits for record `seq`, whose commit (or the journal's failure) will
  // wake the loop (the watch feed's listener): the worker need not wake it first. Asked after
  // the answer is queued, so a commit that comes between is not missed.
  bool HeldForACommit(int64_t seq) const {
    return seq > 0 && watches && durability.durable && durability.durable(seq) == 0;
  }

  void Handle(httplib::Request& req, httplib::Response& res, bool body_dropped) {
    bool routed = false;
    try {
      if (pre && pre(req, res) == HandlerResponse::kHandled) {
        routed = true;
      } else if (body_dropped) {  // admitted now (the tokens changed?), but its body is gone
        Refusal(401, "the request's body was not read: its headers were not authorized", res);
        routed = true;
      } else {
        auto it = routes.find(req.method == "HEAD" ? std::string("GET") : req.method);
        if (it != routes.end())
          for (const Route& r : it->second) {
            if (r.Matches(req)) {
              r.handler(req, res);
              routed = true;
              break;
            }
          }
      }
    } catch (...) {
      res.status = 500;
      if (on_exception) on_exception(req, res, std::current_exception());
      routed = true;
    }
    if (res.status == -1) res.status = routed ? 200 : 404;
    if (res.status >= 400 && on_error) on_error(req, res);
    if (logger && !(tl_after_seq && *tl_after_seq > 0)) logger(req, res);
  }

  // On the loop: whether record `seq` is durable (1), not yet (0) or never will be (-1). What
  // this pass learnt is kept: records are committed in order, so one question answers for many.
  int Decided(int64_t seq) {
    if (seq <= known_durable) return 1;
    if (seq >= known_pending) return 0;
    const int state = durability.durable ? durability.durable(seq) : 1;
    if (state == 1) known_durable = seq;
    if (state == 0) known_pending = seq;
    return state;
  }

  // On the loop: true when `d` may be sent (its record is durable; or will never be: then its
  // answer is `lost`'s; or it waited past its deadline: then timed_out's), after its log line if
  // it was held.
  bool Ready(Done& d, Clock::time_point now) {
    if (d.after_seq <= 0 || !d.req) return true;
    const int state = Decided(d.after_seq);
    if (state == 0 && now < d.deadline) return false;
    if (state != 1) {
      d.res = httplib::Response{};
      d.res.status = state < 0 ? 503 : 504;
      if (const auto& answer = state < 0 ? durability.lost : durability.timed_out) answer(d.res);
      if (state == 0) Count(&HttpServerStats::held_timed_out);
      if (on_error) on_error(*d.req, d.res);
    }
    if (logger) {
      if (durability.restore) durability.restore(std::move(d.context));
      logger(*d.req, d.res);
    }
    return true;
  }

  // ---------------------------------------------------------------- connections

  void CloseConn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (c.watch) Unindex(c);
    if (c.ssl) SSL_free(c.ssl);
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    auto cl = clients.find(c.addr);
    if (cl != clients.end() && --cl->second.conns <= 0 && cl->second.in_flight <= 0)
      clients.erase(cl);
    conns.erase(it);
  }

  void Accept() {
    for (int i = 0; i < 512; ++i) {
      sockaddr_storage sa{};
      socklen_t len = sizeof sa;
      const int fd =
          accept4(listen_fd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      char host[INET6_ADDRSTRLEN] = "";
      char serv[8] = "";
      getnameinfo(reinterpret_cast<sockaddr*>(&sa), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV);
      if (static_cast<int>(conns.size()) >= max_connections) {
        Count(&HttpServerStats::refused_connections);
        close(fd);
        continue;
      }
      Client& client = clients[host];
      if (client.conns >= limits.max_connections_per_client) {
        Count(&HttpServerStats::refused_connections);
        if (!tls) {  // a plain client is told why; a TLS one cannot be before its handshake
          httplib::Response res;
          Refusal(429, "too many connections from " + std::string(host), res);
          const std::string bytes = Serialize(res, false, false);
          [[maybe_unused]] ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
          shutdown(fd, SHUT_WR);
        }
        if (client.conns <= 0 && client.in_flight <= 0) clients.erase(host);
        close(fd);
        continue;
      }
      ++client.conns;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c =
          std::make_unique<Conn>(HttpParseLimits{limits.max_header_bytes, limits.max_body_bytes});
      c->id = next_id++;
      c->fd = fd;
      c->addr = host;
      c->port = std::atoi(serv);
      c->reserved = static_cast<int>(conns.size()) >=
                    max_connections - std::max(0, limits.reserved_connections);
      const auto now = Clock::now();
      if (tls) {
        c->ssl = SSL_new(tls.get());
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        c->phase = Phase::kHandshake;
        c->deadline = now + Seconds(limits.tls_handshake_timeout_s);
      } else {
        c->deadline = now + Seconds(limits.header_timeout_s);
      }
      // Edge-triggered, both ways, once: no epoll_ctl per request. Input is read until the
      // socket is drained (a busy connection's once its answer is queued), output written until
      // the socket is full (the next EPOLLOUT edge writes the rest).
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u64 = c->id;
      epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
      Count(&HttpServerStats::accepted);
      conns.emplace(c->id, std::move(c));
    }
  }

  // Reads what the socket holds (as far as kMaxBuffered); false on a fatal error. A plain
  // socket that gave less than was asked for is drained (more input brings another edge).
  bool ReadInput(Conn& c) {
    char buf[kReadChunk];
    while (c.in.size() < kMaxBuffered + kReadChunk) {
      if (!c.readable && !(c.ssl && SSL_pending(c.ssl) > 0)) return true;
      ssize_t n;
      if (c.ssl) {
        ERR_clear_error();
        n = SSL_read(c.ssl, buf, sizeof buf);
        if (n <= 0) {
          const int e = SSL_get_error(c.ssl, static_cast<int>(n));
          if (e == SSL_ERROR_WANT_READ) {
            c.readable = false;
            return true;
          }
          if (e == SSL_ERROR_WANT_WRITE) {
            c.ssl_wants_write = true;
            return true;
          }
          if (e == SSL_ERROR_ZERO_RETURN) {
            c.eof = true;
            c.readable = false;
            return true;
          }
          return false;
        }
      } else {
        n = recv(c.fd, buf, sizeof buf, 0);
        if (n == 0) {
          c.eof = true;
          c.readable = false;
          return true;
        }
        if (n < 0) {
          if (errno == EINTR) continue;
          c.readable = false;
          return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        if (static_cast<size_t>(n) < sizeof buf && !c.peer_closed) c.readable = false;
      }
      if (c.phase == Phase::kDraining || c.phase == Phase::kStream) {
        c.drained += static_cast<size_t>(n);  // dropped: a watcher has nothing more to say
        if (c.drained > kLingerBytes && c.phase == Phase::kDraining) return false;
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  // Writes what is pending; false on a fatal error. Plain sockets gather the shared chunks and
  // `out` into one sendmsg; TLS writes them one by one, at most 1 MB at a time.
  bool Flush(Conn& c) {
    c.ssl_wants_write = false;
    while (c.pending() > 0) {
      iovec iov[64];
      int count = 0;
      for (size_t i = 0; i < c.shared.size() && count < 64; ++i) {
        const std::string& s = *c.shared[i];
        const size_t off = i == 0 ? c.shared_off : 0;
        iov[count++] = {const_cast<char*>(s.data()) + off, s.size() - off};
      }
      if (count < 64 && c.out_off < c.out.size())
        iov[count++] = {c.out.data() + c.out_off,
                        std::min<size_t>(c.out.size() - c.out_off, 1u << 20)};
      ssize_t n;
      if (c.ssl) {
        ERR_clear_error();
        n = SSL_write(c.ssl, iov[0].iov_base,
                      static_cast<int>(std::min<size_t>(iov[0].iov_len, 1u << 20)));
        if (n <= 0) {
          const int e = SSL_get_error(c.ssl, static_cast<int>(n));
          if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) break;
          return false;
        }
      } else {
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = static_cast<size_t>(count);
        n = sendmsg(c.fd, &m, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
          return false;
        }
      }
      c.Sent(static_cast<size_t>(n));
      c.last_write = Clock::now();
    }
    if (c.out_off == c.out.size()) {
      // A large answer's buffer is given back once sent, not kept by an idle connection.
      if (c.out.capacity() > kKeepBufferBytes)
        std::string().swap(c.out);
      else
        c.out.clear();
      c.out_off = 0;
    } else if (c.out_off > (1u << 20) && c.out_off * 2 > c.out.size()) {
      c.out.erase(0, c.out_off);
      c.out_off = 0;
    }
    return true;
  }

  void Refusal(int status, const std::string& message, httplib::Response& res) {
    res.status = status;
    if (refusal) refusal(status, message, res);
    if (status == 429 || status == 503) res.set_header("Retry-After", "1");
  }

  std::string Serialize(const httplib::Response& res, bool keep_alive, bool head) {
    std::string s = SerializeHead(res, keep_alive);
    if (!head) s += res.body;
    return s;
  }

  std::string SerializeHead(const httplib::Response& res, bool keep_alive) {
    std::string s = "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
    for (const auto& [k, v] : res.headers)
      if (!SkippedHeader(k)) s += k + ": " + v + "\r\n";
    s += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
    s += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    return s;
  }

  // The answer into the connection's buffer, its body copied once (or not at all when nothing
  // is waiting: the body's buffer becomes the output and the head is put in front of it).
  void Queue(Conn& c, httplib::Response& res, bool head) {
    const std::string h = SerializeHead(res, c.keep_alive);
    if (head || res.body.size() < kKeepBufferBytes || c.pending() > 0) {
      c.out += h;
      if (!head) c.out += res.body;
      return;
    }
    std::string body = std::move(res.body);
    body.insert(0, h);
    c.out = std::move(body);
    c.out_off = 0;
  }

  // An answer the loop gives itself, then the connection ends (after reading what the client
  // is still sending, so that it sees the answer rather than a reset).
  void RefuseAndClose(Conn& c, int status, const std::string& message) {
    httplib::Response res;
    Refusal(status, message, res);
    c.out += Serialize(res, false, false);
    c.in.clear();
    c.phase = Phase::kDraining;
    c.deadline = Clock::now() + kLingerFor;
    Count(&HttpServerStats::refused_requests);
  }

  void StartIdle(Conn& c) {
    c.phase = Phase::kIdle;
    c.deadline = Clock::now() + Seconds(limits.idle_timeout_s);
  }

  // Parses what came in; dispatches a complete request to the workers.
  void Process(Conn& c) {
    while (c.phase == Phase::kHeader || c.phase == Phase::kIdle || c.phase == Phase::kBody) {
      if (c.in.empty()) return;
      if (c.phase == Phase::kIdle) {
        c.phase = Phase::kHeader;
        c.deadline = Clock::now() + Seconds(limits.header_timeout_s);
      }
      const size_t used = c.parser.Feed(c.in);
      c.in.erase(0, used);
      const auto state = c.parser.state();
      if (state == HttpRequestParser::State::kError)
        return RefuseAndClose(c, c.parser.error_status(), c.parser.error_message());
      if (state == HttpRequestParser::State::kBody && c.phase == Phase::kHeader) {
        if (body_admission && !body_admission(c.parser.request())) return DispatchWithoutBody(c);
        c.phase = Phase::kBody;
        c.deadline = Clock::now() + Seconds(limits.body_timeout_s);
        if (c.parser.expects_continue() && !c.continue_sent) {
          c.out += "HTTP/1.1 100 Continue\r\n\r\n";
          c.continue_sent = true;
        }
      }
      if (state == HttpRequestParser::State::kHeaders && used > 0) continue;  // blank lines
      if (state != HttpRequestParser::State::kDone) return;
      Dispatch(c);
    }
  }

  // A request whose body body_admission refused: handled with none, the connection then ends
  // (its input, the body included, is dropped meanwhile and afterwards: kDraining).
  void DispatchWithoutBody(Conn& c) {
    c.in.clear();
    c.body_dropped = true;
    Dispatch(c);
  }

  // After an answer that ends the connection: closed once written, or first drained of what the
  // client still sends when its body was not read (so that it sees the answer, not a reset).
  void EndAfterAnswer(Conn& c) {
    if (!c.body_dropped) {
      c.phase = Phase::kClosing;
      return;
    }
    c.phase = Phase::kDraining;
    c.deadline = Clock::now() + kLingerFor;
  }

  void Dispatch(Conn& c) {
    c.keep_alive = c.parser.keep_alive() && !c.body_dropped;
    c.continue_sent = false;
    std::unique_ptr<httplib::Request> req = c.parser.Take();
    req->remote_addr = c.addr;
    req->remote_port = c.port;
    Client& client = clients[c.addr];
    if (c.reserved && !(reserved && reserved(*req))) {
      httplib::Response res;
      Refusal(429, "the server's connections are all in use; try again later", res);
      c.out += Serialize(res, false, req->method == "HEAD");
      EndAfterAnswer(c);
      Count(&HttpServerStats::refused_requests);
      return;
    }
    if (client.in_flight >= limits.max_in_flight_per_client) {
      httplib::Response res;
      Refusal(429, "too many requests in flight from " + c.addr, res);
      c.out += Serialize(res, c.keep_alive, req->method == "HEAD");
      EndAfterAnswer(c);
      if (c.keep_alive) StartIdle(c);
      Count(&HttpServerStats::refused_requests);
      return;
    }
    ++client.in_flight;
    c.phase = Phase::kBusy;
    {
      std::lock_guard<std::mutex> l(jobs_mu);
      jobs.push_back(Job{c.id, c.addr, std::move(req), c.body_dropped});
    }
    jobs_cv.notify_one();
  }

  void Complete(Done& d) {
    auto cl = clients.find(d.addr);
    if (cl != clients.end() && --cl->second.in_flight <= 0 && cl->second.conns <= 0)
      clients.erase(cl);
    auto it = conns.find(d.conn);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (d.watch) {
      StartWatch(c, std::move(d.watch), d.res);
    } else {
      Queue(c, d.res, d.head);
      if (c.keep_alive)
        StartIdle(c);
      else
        EndAfterAnswer(c);
    }
    // What came while it was busy (a pipelined request, the end of input, a body to drain): its
    // edge has passed, so it is read now.
    if (c.phase != Phase::kClosing && c.phase != Phase::kBusy && !ReadAndProcess(c)) c.eof = true;
  }

  // Reads and parses while the connection takes input and the socket (or TLS, which may hold
  // decrypted bytes the socket no longer signals) has more: with edge-triggered events nothing
  // left unread is signalled again. False on a fatal error.
  bool ReadAndProcess(Conn& c) {
    do {
      if (!ReadInput(c)) return false;
      Process(c);
    } while ((c.readable || (c.ssl && SSL_pending(c.ssl) > 0)) && c.in.size() < kMaxBuffered &&
             (c.phase == Phase::kHeader || c.phase == Phase::kIdle || c.phase == Phase::kBody));
    return true;
  }

  // ---------------------------------------------------------------- watches

  static std::string Key(const std::string& kind, const std::string& ns) {
    return kind + '\0' + ns;
  }
  void Unindex(Conn& c) {
    auto it = streams.find(Key(c.watch->kind, c.watch->namespace_));
    if (it == streams.end()) return;
    it->second.erase(c.id);
    if (it->second.empty()) streams.erase(it);
  }

  void StartWatch(Conn& c, std::unique_ptr<WatchStream> w, const httplib::Response& res) {
    std::string head = "HTTP/1.1 200 OK\r\n";
    for (const auto& [k, v] : res.headers)
      if (!SkippedHeader(k) && !EqualNoCase(k, "Content-Type")) head += k + ": " + v + "\r\n";
    head += "Content-Type: " + w->content_type + "\r\nTransfer-Encoding: chunked\r\n\r\n";
    c.out += head;
    if (!w->initial.empty()) {  // the current objects, moved rather than copied (a list's size)
      AppendChunkHead(c.out, w->initial.size());
      c.AppendShared(std::make_shared<const std::string>(std::move(w->initial)));
      c.out += "\r\n";
    }
    w->initial = std::string();
    c.watch = std::move(w);
    c.phase = Phase::kStream;
    c.watch_last_sent = Clock::now();
    if (c.watch->initial_more) {
      c.watch_allowance = std::numeric_limits<size_t>::max();  // (FillInitial's window)
      return FillInitial(c);
    }
    JoinStreams(c);
  }

  // The first answer's next lines while less than a window is unsent, at most a few batches a
  // turn of the loop (the others' I/O goes on between: a reader as fast as the loop, or a
  // selector that matches little, would hold it for the whole list); once it is whole, the stream
  // joins the others. A stream that wants more with nothing unsent (no write to wake it) is
  // served again at the next turn (`filling`).
  static constexpr size_t kInitialWindow = 256u << 10;
  static constexpr int kInitialBatchesPerTurn = 8;
  void FillInitial(Conn& c) {
    for (int i = 0; i < kInitialBatchesPerTurn && c.watch && c.watch->initial_more &&
                    c.pending() < kInitialWindow;
         ++i) {
      std::string out;
      const bool more = c.watch->initial_more(out);
      AppendChunk(c.out, out);
      if (!more) {
        c.watch->initial_more = nullptr;
        JoinStreams(c);
      }
    }
  }

  // Catch up from the stream's resourceVersion to the loop's, then get the changes as they come.
  void JoinStreams(Conn& c) {
    if (watches && c.watch->after_rv < hub_rv) {
      auto entries = watches->After(c.watch->after_rv);
      if (!entries) return EndWatch(c, c.watch->too_old ? c.watch->too_old(c.watch->after_rv) : "");
      std::string out;
      for (const auto& e : *entries) {
        if (e->event.resource_version > hub_rv) break;
        if (e->event.kind == c.watch->kind &&
            (c.watch->namespace_.empty() || e->event.namespace_ == c.watch->namespace_)) {
          if (c.watch->plain)
            e->AppendLine(out);
          else
            c.watch->append(*e, out);
        }
      }
      AppendChunk(c.out, out);
      c.watch->after_rv = hub_rv;
    }
    // The first answer (current objects, or the changes caught up on) is not the watcher's lag.
    c.watch_allowance = c.pending() + limits.watch_buffer_bytes;
    streams[Key(c.watch->kind, c.watch->namespace_)].insert(c.id);
  }

  // The stream's last bytes, its end, then the connection waits for another request.
  void EndWatch(Conn& c, const std::string& last) {
    if (c.watch) Unindex(c);
    AppendChunk(c.out, last);
    c.out += "0\r\n\r\n";
    c.watch.reset();
    if (c.keep_alive) {
      StartIdle(c);
    } else {
      c.phase = Phase::kClosing;
    }
  }

  // The feed's changes since the last call, to every stream they concern.
  void DispatchWatches(std::vector<uint64_t>& touched) {
    watch_news = false;
    if (!watches) return;
    auto entries = watches->After(hub_rv);
    if (!entries) {  // the loop fell behind the feed's history: every watcher lists again
      std::vector<uint64_t> all;
      for (const auto& [key, ids] : streams) all.insert(all.end(), ids.begin(), ids.end());
      for (uint64_t id : all) {
        Conn& c = *conns.at(id);
        EndWatch(c, c.watch->too_old ? c.watch->too_old(c.watch->after_rv) : "");
        touched.push_back(id);
      }
      hub_rv = watches->last_rv();
      return;
    }
    std::string out, line;
    std::shared_ptr<const std::string> chunk;
    std::unordered_set<uint64_t> seen;
    const auto now = Clock::now();
    for (const auto& e : *entries) {
      const WatchEvent& ev = e->event;
      chunk.reset();  // the change's line as a chunk, made once for all plain streams
      for (const std::string& key : {Key(ev.kind, ev.namespace_), Key(ev.kind, "")}) {
        auto it = streams.find(key);
        if (it == streams.end()) continue;
        for (uint64_t id : it->second) {
          Conn& c = *conns.at(id);
          if (ev.resource_version <= c.watch->after_rv) continue;
          c.watch->after_rv = ev.resource_version;
          if (c.watch->plain) {
            if (!chunk) {
              line.clear();
              e->AppendLine(line);
              auto made = std::make_shared<std::string>();
              AppendChunk(*made, line);
              chunk = std::move(made);
            }
            c.AppendShared(chunk);
          } else {
            out.clear();
            c.watch->append(*e, out);
            if (out.empty()) continue;
            AppendChunk(c.out, out);
          }
          c.watch_last_sent = now;
          if (seen.insert(id).second) touched.push_back(id);
        }
        if (ev.namespace_.empty()) break;  // a cluster-scoped kind: one key
      }
      hub_rv = ev.resource_version;
    }
  }

  // Slow watchers are closed; the others are written to.
  void FlushTouched(const std::vector<uint64_t>& touched) {
    for (uint64_t id : touched) {
      auto it = conns.find(id);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      if (c.watch && c.pending() > c.watch_allowance) {
        Count(&HttpServerStats::slow_watchers_closed);
        CloseConn(id);
        continue;
      }
      AfterIo(c);
    }
  }

  // ---------------------------------------------------------------- the loop

  // After any change of a connection: writes, closes when done, sets its events.
  void AfterIo(Conn& c) {
    if (!Flush(c)) return CloseConn(c.id);
    if (c.watch && c.watch->initial_more && c.pending() < kInitialWindow) {
      FillInitial(c);
      if (!Flush(c)) return CloseConn(c.id);
      if (c.watch && c.watch->initial_more && c.pending() < kInitialWindow) filling.insert(c.id);
    }
    if (c.pending() == 0 && c.phase == Phase::kClosing) return CloseConn(c.id);
    if (c.pending() == 0 && c.phase == Phase::kDraining && !c.ssl) {
      shutdown(c.fd, SHUT_WR);
    }
    if (c.eof && c.phase != Phase::kBusy) {  // the client sends no more: answer, then close
      if (c.pending() == 0) return CloseConn(c.id);
      if (c.phase != Phase::kStream && c.phase != Phase::kDraining) c.phase = Phase::kClosing;
    }
  }

  void OnIo(Conn& c, uint32_t events) {
    // A reset (or a socket shut both ways) ends the connection, a busy one too: its answer
    // could not be sent. Otherwise what is readable, an end of input included, is read.
    if ((events & (EPOLLERR | EPOLLHUP)) && (!(events & EPOLLIN) || c.phase == Phase::kBusy))
      return CloseConn(c.id);
    if (events & (EPOLLIN | EPOLLRDHUP)) c.readable = true;
    if (events & (EPOLLRDHUP | EPOLLHUP)) c.peer_closed = true;
    if (c.phase == Phase::kHandshake) {
      ERR_clear_error();
      const int r = SSL_do_handshake(c.ssl);
      if (r != 1) {
        const int e = SSL_get_error(c.ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return CloseConn(c.id);
        c.ssl_wants_write = e == SSL_ERROR_WANT_WRITE;
        return;
      }
      c.phase = Phase::kHeader;
      c.deadline = Clock::now() + Seconds(limits.header_timeout_s);
    }
    if (c.phase != Phase::kBusy && c.phase != Phase::kClosing && !ReadAndProcess(c))
      return CloseConn(c.id);
    AfterIo(c);
  }

  void Sweep() {
    const auto now = Clock::now();
    std::vector<uint64_t> expired, touched;
    for (auto& [id, cp] : conns) {
      Conn& c = *cp;
      switch (c.phase) {
        case Phase::kHandshake:
        case Phase::kHeader:
        case Phase::kIdle:
        case Phase::kBody:
        case Phase::kDraining:
          if (now >= c.deadline) expired.push_back(id);
          break;
        case Phase::kStream:
          if (now >= c.watch->end || (watches && watches->closed())) {
            EndWatch(c, "");
            touched.push_back(id);
          } else if (c.watch->bookmark && !c.watch->initial_more &&
                     now - c.watch_last_sent >= kBookmarkEvery) {
            AppendChunk(c.out, c.watch->bookmark(std::max(c.watch->after_rv, hub_rv)));
            c.watch_last_sent = now;
            touched.push_back(id);
          }
          [[fallthrough]];
        case Phase::kBusy:
        case Phase::kClosing:
          if (c.pending() > 0 && now - c.last_write > Seconds(limits.write_timeout_s))
            expired.push_back(id);
          break;
      }
    }
    for (uint64_t id : expired) {
      Count(&HttpServerStats::timed_out);
      CloseConn(id);
    }
    FlushTouched(touched);
  }

  void Loop() {
    hub_rv = watches ? watches->last_rv() : 0;
    if (watches)
      watches->SetListener([this] {
        watch_news = true;
        Wake();
      });
    std::vector<epoll_event> events(512);
    auto next_sweep = Clock::now() + Seconds(1);
    while (!stopping) {
      const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                               filling.empty() ? 250 : 0);
      std::vector<uint64_t> touched;
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[static_cast<size_t>(i)].data.u64;
        if (id == kListenId) {
          Accept();
        } else if (id == kWakeId) {
          Woken();
        } else if (auto it = conns.find(id); it != conns.end()) {
          OnIo(*it->second, events[static_cast<size_t>(i)].events);
        }
      }
      AnswerFinished(touched);
      if (watch_news) DispatchWatches(touched);
      FlushTouched(touched);
      std::set<uint64_t> more;
      more.swap(filling);
      for (uint64_t id : more)
        if (auto it = conns.find(id); it != conns.end()) AfterIo(*it->second);
      if (Clock::now() >= next_sweep) {
        Sweep();
        next_sweep = Clock::now() + Seconds(1);
      }
    }
  }

  // The answers the workers finished and those held for their journal record: each sent once
  // Ready, held ones first (in the order they were handled), then the new ones.
  void AnswerFinished(std::vector<uint64_t>& touched) {
    std::deque<Done> ready;
    held.swap(ready);
    {
      std::lock_guard<std::mutex> l(mu);
      for (Done& d : done) ready.push_back(std::move(d));
      done.clear();
    }
    known_durable = 0;
    known_pending = std::numeric_limits<int64_t>::max();
    const auto now = Clock::now();
    for (Done& d : ready) {
      if (!Ready(d, now)) {
        held.push_back(std::move(d));
        continue;
      }
      const uint64_t id = d.conn;
      Complete(d);
      if (conns.count(id)) touched.push_back(id);
    }
  }

  // Stopping, once the loop ended and the workers finished: what they answered, and the answers
  // held for their journal record (the journal outlives the server: its records are committed, or
  // will never be, and the answer is lost's), are still sent, each connection closed once its
  // answer is written. At most 10 s (the write timeout if shorter): a client that reads nothing
  // or a disk that never answers does not hold the process.
  void Drain() {
    const auto deadline = Clock::now() + Seconds(std::min(limits.write_timeout_s, 10));
    for (auto& [id, c] : conns) c->keep_alive = false;
    while (true) {
      std::vector<uint64_t> touched;
      AnswerFinished(touched);
      for (auto& [id, c] : conns)
        if (c->phase == Phase::kClosing && c->pending() > 0) touched.push_back(id);
      FlushTouched(touched);
      bool writing = false;
      for (auto& [id, c] : conns)
        writing = writing || (c->phase == Phase::kClosing && c->pending() > 0);
      if ((held.empty() && !writing) || Clock::now() >= deadline) return;
      pollfd p{wake_fd, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) Woken();  // a commit (the listener), else writes tried again
    }
  }
};

void UseServeHeapPolicy() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 20);  // the moving threshold had raised this one too
  });
}

HttpServer::HttpServer(HttpLimits limits, WatchLog* watches, std::shared_ptr<ssl_ctx_st> tls)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->watches = watches;
  impl_->tls = std::move(tls);
}

HttpServer::~HttpServer() {
  Stop();
  while (!impl_->conns.empty()) impl_->CloseConn(impl_->conns.begin()->first);
}

void HttpServer::Get(const std::string& p, Handler h) {
  impl_->routes["GET"].push_back(Impl::Route::Of(p, std::move(h)));
}
void HttpServer::Post(const std::string& p, Handler h) {
  impl_->routes["POST"].push_back(Impl::Route::Of(p, std::move(h)));
}
void HttpServer::Put(const std::string& p, Handler h) {
  impl_->routes["PUT"].push_back(Impl::Route::Of(p, std::move(h)));
}
void HttpServer::Patch(const std::string& p, Handler h) {
  impl_->routes["PATCH"].push_back(Impl::Route::Of(p, std::move(h)));
}
void HttpServer::Delete(const std::string& p, Handler h) {
  impl_->routes["DELETE"].push_back(Impl::Route::Of(p, std::move(h)));
}
void HttpServer::set_pre_routing_handler(
    std::function<HandlerResponse(const Request&, Response&)> h) {
  impl_->pre = std::move(h);
}
void HttpServer::set_logger(std::function<void(const Request&, const Response&)> f) {
  impl_->logger = std::move(f);
}
void HttpServer::set_exception_handler(
    std::function<void(const Request&, Response&, std::exception_ptr)> h) {
  impl_->on_exception = std::move(h);
}
void HttpServer::set_error_handler(Handler h) { impl_->on_error = std::move(h); }
void HttpServer::set_refusal(std::function<void(int, const std::string&, Response&)> f) {
  impl_->refusal = std::move(f);
}
void HttpServer::set_reserved(std::function<bool(const Request&)> f) {
  impl_->reserved = std::move(f);
}
void HttpServer::set_body_admission(std::function<bool(const Request&)> f) {
  impl_->body_admission = std::move(f);
}

bool HttpServer::ServeWatch(WatchStream stream) {
  if (!tl_watch_slot) return false;
  *tl_watch_slot = std::make_unique<WatchStream>(std::move(stream));
  return true;
}

bool HttpServer::AnswerAfter(int64_t seq) {
  if (!tl_after_seq) return false;
  if (seq > 0) *tl_after_seq = std::max(*tl_after_seq, seq);  // 0: nothing to wait for
  return true;
}

void HttpServer::set_durability(Durability d) { impl_->durability = std::move(d); }

Result<int> HttpServer::Bind(const std::string& host, int port) {
  Impl& m = *impl_;
  const std::string where = "cannot listen on " + host + ":" + std::to_string(port);
  // Every connection is a file: the soft open-file limit is raised to the hard one.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  m.max_connections = m.limits.max_connections;
  if (m.max_connections <= 0)
    m.max_connections = static_cast<int>(std::min<rlim_t>(rl.rlim_cur, 1u << 20)) - 128;
  m.max_connections = std::max(m.max_connections, 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string h =
      host.size() > 2 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  if (getaddrinfo(h.empty() ? nullptr : h.c_str(), std::to_string(port).c_str(), &hints, &res) != 0)
    return Result<int>::Error(where + ": unknown host");
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return Result<int>::Error(where + ": " + std::strerror(errno));
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  const int bound = sa.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  m.listen_fd = fd;
  m.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  return bound;
}

void HttpServer::Run() {
  Impl& m = *impl_;
  if (m.listen_fd < 0 || m.stopping) return;
  for (int i = 0; i < std::max(1, m.limits.workers); ++i)
    m.workers.emplace_back([&m] { m.Worker(); });
  m.Loop();
  {
    std::lock_guard<std::mutex> l(m.jobs_mu);
    m.workers_stop = true;
    m.jobs.clear();
  }
  m.jobs_cv.notify_all();
  for (auto& t : m.workers) t.join();
  m.workers.clear();
  m.Drain();
  if (m.watches) m.watches->SetListener(nullptr);
  while (!m.conns.empty()) m.CloseConn(m.conns.begin()->first);
  m.done.clear();
  m.held.clear();
}

void HttpServer::Stop() {
  impl_->stopping = true;
  if (impl_->wake_fd >= 0) impl_->Wake();
}

HttpServerStats HttpServer::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->counters;
}

}  // namespace arbiter::server
