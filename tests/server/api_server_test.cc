// The HTTP server in process, on loopback: how it takes connections under load (a burst of new
// keep-alive clients) and fans watch streams out (100 watchers), which the kubectl tests
// cannot isolate.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "served_api.h"
#include "server/daemon.h"
#include "server/http/http_api.h"

namespace arbiter::server {
namespace {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-api-server-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

// A daemon with its API on a free loopback port, served by a thread until destroyed.
struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name, ApiOptions options = {})
      : ServedApi(Dir(name), std::move(options)) {}
};

// The accept backlog of the socket listening on `port`, as `ss` reports it (Send-Q of a
// listening socket), or -1.
int ListenBacklog(int port) {
  const std::string cmd = "ss -ltnH 'sport = :" + std::to_string(port) + "'";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  char state[32];
  int recv_q = 0, send_q = -1;
  const int n = std::fscanf(f, "%31s %d %d", state, &recv_q, &send_q);
  pclose(f);
  return n == 3 ? send_q : -1;
}

// cpp-httplib listens with a backlog of 5; 64 clients connecting at once overflowed it, the
// kernel dropped handshakes and first requests, and some requests found their connection closed
// by the server's keep-alive wait (bench_serve lost 6-41 of 6,400 creates that way).
TEST(ApiServerTest, ListeningSocketHasABacklogForABurstOfClients) {
  Served s("backlog");
  EXPECT_GE(ListenBacklog(s.port), 128);
}

TEST(ApiServerTest, BurstOfNewKeepAliveClientsIsAnsweredWithoutALostRequest) {
  Served s("burst");
  constexpr int kClients = 64, kRequests = 5;
  std::atomic<int> ok{0};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", s.port);
      cli.set_keep_alive(true);
      for (int i = 0; i < kRequests; ++i) {
        auto r = cli.Get("/api/v1/namespaces/default");
        if (r && r->status == 200)
          ++ok;
        else
          failures[c] = r ? "status " + std::to_string(r->status) : httplib::to_string(r.error());
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(failures[c], "") << "client " << c;
}

Mutation PodCreate(const std::string& name) {
  Mutation m;
  m.op = Mutation::Op::kCreate;
  m.kind = "Pod";
  m.namespace_ = "default";
  m.object = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}};
  return m;
}

// What one watch stream delivered: its events (type, name, resourceVersion) in arrival order,
// up to the first BOOKMARK after every pod was ADDED.
struct Watched {
  std::vector<std::tuple<std::string, std::string, int64_t>> events;
  int64_t bookmark_rv = -1;
  std::string error;
};

Watched WatchPods(int port, int64_t from_rv, int pods) {
  Watched w;
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);  // a bookmark comes after 5 s without events
  std::string buffer;
  std::set<std::string> added;
  auto r = cli.Get(
      "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=120&"
      "resourceVersion=" +
          std::to_string(from_rv),
      [&](const char* data, size_t n) {
        buffer.append(data, n);
        size_t nl;
        while ((nl = buffer.find('\n')) != std::string::npos) {
          const Json e = Json::parse(buffer.substr(0, nl));
          buffer.erase(0, nl + 1);
          const std::string type = e.at("type");
          const int64_t rv =
              std::stoll(e.at("object").at("metadata").at("resourceVersion").get<std::string>());
          if (type == "BOOKMARK") {
            if (static_cast<int>(added.size()) == pods) {
              w.bookmark_rv = rv;
              return false;  // done
            }
            continue;
          }
          const std::string name = e.at("object").at("metadata").at("name");
          w.events.emplace_back(type, name, rv);
          if (type == "ADDED") added.insert(name);
        }
        return true;
      });
  if (w.bookmark_rv < 0) w.error = r ? "stream ended" : httplib::to_string(r.error());
  return w;
}

// 100 concurrent watch streams on pods while pods are created: each sees every change once, in
// resourceVersion order, the same sequence as the others, then a BOOKMARK at or past the last.
TEST(ApiServerTest, HundredWatchersEachSeeEveryPodEventOnceInResourceVersionOrder) {
  Served s("fanout");
  constexpr int kWatchers = 100, kPods = 200;
  const int64_t from =
      s.daemon->Read([](const Cluster& c) { return c.store().resource_version(); });
  std::vector<Watched> watched(kWatchers);
  std::vector<std::thread> watchers;
  for (int i = 0; i < kWatchers; ++i)
    watchers.emplace_back([&, i] { watched[i] = WatchPods(s.port, from, kPods); });
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      for (int i = t; i < kPods; i += 4)
        EXPECT_TRUE(s.daemon->Mutate(PodCreate("p-" + std::to_string(i))).ok());
    });
  for (auto& t : writers) t.join();
  for (auto& t : watchers) t.join();

  for (int i = 0; i < kWatchers; ++i) {
    const Watched& w = watched[i];
    ASSERT_EQ(w.error, "") << "watcher " << i;
    std::map<std::string, int> added;
    for (size_t k = 0; k < w.events.size(); ++k) {
      if (std::get<0>(w.events[k]) == "ADDED") ++added[std::get<1>(w.events[k])];
      if (k > 0) {
        ASSERT_LT(std::get<2>(w.events[k - 1]), std::get<2>(w.events[k])) << "watcher " << i;
      }
    }
    EXPECT_EQ(added.size(), static_cast<size_t>(kPods)) << "watcher " << i;
    for (const auto& [name, n] : added) EXPECT_EQ(n, 1) << name << " watcher " << i;
    ASSERT_FALSE(w.events.empty());
    EXPECT_GE(w.bookmark_rv, std::get<2>(w.events.back())) << "watcher " << i;
  }
  // Every watcher got the same changes up to the last ADDED (after it, a stream may have stopped
  // before a later MODIFIED).
  auto upto_last_added = [](const Watched& w) {
    auto last = std::find_if(w.events.rbegin(), w.events.rend(),
                             [](const auto& e) { return std::get<0>(e) == "ADDED"; });
    return std::vector<std::tuple<std::string, std::string, int64_t>>(w.events.begin(),
                                                                      last.base());
  };
  const auto reference = upto_last_added(watched[0]);
  for (int i = 1; i < kWatchers; ++i) EXPECT_EQ(upto_last_added(watched[i]), reference) << i;
}

// The journal's commits held back by a test (Daemon::SetCommitHook): once armed, the next
// commit waits until Release, then fails with `fail` if it is set (a write error).
struct CommitGate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false, entered = false, released = false;
  std::string fail;
  std::chrono::steady_clock::time_point entered_at;

  void Install(Daemon& d) {
    d.SetCommitHook([this] {
      std::unique_lock<std::mutex> l(mu);
      if (!armed) return Status::Ok();
      entered = true;
      entered_at = std::chrono::steady_clock::now();
      cv.notify_all();
      cv.wait(l, [&] { return released; });
      armed = false;
      return fail.empty() ? Status::Ok() : Status::Error(fail);
    });
  }
  void AwaitEntered() {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return entered; });
  }
  // Lets the commit go; the milliseconds it was held.
  double Release(const std::string& failure = "") {
    std::lock_guard<std::mutex> l(mu);
    fail = failure;
    released = true;
    cv.notify_all();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - entered_at)
        .count();
  }
};

int ConnectTo(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  timeval tv{30, 0};  // a hang fails the test instead of stalling it
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// A pod's create on a connection of its own (answered, then closed), by `token`'s user.
int SendPodCreate(int port, const std::string& name, const std::string& token) {
  const int fd = ConnectTo(port);
  const std::string body = PodCreate(name).object.dump();
  const std::string req =
      "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\n"
      "Authorization: Bearer " +
      token +
      "\r\nContent-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

std::string ReadToClose(int fd) {
  std::string out;
  char buf[8192];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// A server whose requests are logged (captured) and authenticated by a token of alice's.
struct LoggedServer {
  std::mutex mu;
  std::vector<Json> lines;
  std::unique_ptr<Served> served;
  CommitGate gate;
  explicit LoggedServer(const std::string& name, int64_t request_timeout_ms = 60000) {
    ApiOptions o;
    o.limits.request_timeout_ms = request_timeout_ms;
    o.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> l(mu);
      lines.push_back(Json::parse(line));
    };
    auto table = kube::ParseTokenFile("tok-alice,alice,u1,\"system:masters\"\n", "tokens");
    EXPECT_TRUE(table.ok()) << table.message();
    o.tokens = std::make_shared<TokenSource>(std::move(table).value());
    served = std::make_unique<Served>(name, std::move(o));
    gate.Install(*served->daemon);
  }
  // A create sent while the commit is held back: returns its connection once the server has
  // handled it and holds its answer, and a request answered after it (/healthz, never waiting
  // for the journal) shows the loop has judged it.
  int HeldCreate(const std::string& name) {
    {
      std::lock_guard<std::mutex> l(gate.mu);
      gate.armed = true;
    }
    const uint64_t held = served->api->stats().held;
    const int fd = SendPodCreate(served->port, name, "tok-alice");
    gate.AwaitEntered();
    while (served->api->stats().held == held)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    httplib::Client c("127.0.0.1", served->port);
    auto h = c.Get("/healthz");
    EXPECT_TRUE(h && h->status == 200);
    return fd;
  }
  std::vector<Json> Lines(const std::string& method) {
    std::lock_guard<std::mutex> l(mu);
    std::vector<Json> out;
    for (const Json& j : lines)
      if (j.value("method", "") == method) out.push_back(j);
    return out;
  }
};

// Durable before visible, without a worker waiting for the disk: a create's answer is held by the
// server until its journal record is committed, then sent (201), and logged then with its user
// and its whole latency (the time it was held included).
TEST(ApiServerTest, AChangeIsAnsweredAndLoggedOnlyOnceItsRecordIsCommitted) {
  LoggedServer s("held-answer");
  const int fd = s.HeldCreate("held");
  char buf[256];
  EXPECT_LT(recv(fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "answered before its record";
  EXPECT_TRUE(s.Lines("POST").empty()) << "logged before its answer";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a hold the latency must show
  const double held_ms = s.gate.Release();
  const std::string got = ReadToClose(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 201", 0), 0u) << got;
  EXPECT_NE(got.find("\"name\":\"held\""), std::string::npos) << got;
  const std::vector<Json> posts = s.Lines("POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0]["status"], 201);
  EXPECT_EQ(posts[0]["user"], "alice");
  EXPECT_EQ(posts[0]["verb"], "create");
  EXPECT_GE(posts[0]["latencyMs"].get<double>(), held_ms);
  EXPECT_EQ(s.served->daemon->Read([](const Cluster& c) {
    return c.store().Share("Pod", "default", "held") != nullptr;
  }),
            true);
}

// A journal write that fails while answers are held: each is answered 503 with the reason (the
// daemon is read-only), its change is never shown, and later changes are refused at once.
TEST(ApiServerTest, AChangeHeldWhenTheJournalFailsIsAnswered503AndNeverShown) {
  LoggedServer s("held-failed");
  const int fd = s.HeldCreate("doomed");
  s.gate.Release("disk on fire");
  const std::string got = ReadToClose(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("read-only"), std::string::npos) << got;
  EXPECT_NE(got.find("disk on fire"), std::string::npos) << got;
  EXPECT_EQ(got.find("\"name\":\"doomed\""), std::string::npos) << got;
  httplib::Client c("127.0.0.1", s.served->port);
  httplib::Headers alice = {{"Authorization", "Bearer tok-alice"}};
  auto g = c.Get("/api/v1/namespaces/default/pods/doomed", alice);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 404) << g->body;
  const std::string again = ReadToClose(SendPodCreate(s.served->port, "later", "tok-alice"));
  EXPECT_EQ(again.rfind("HTTP/1.1 503", 0), 0u) << again;
  const std::vector<Json> posts = s.Lines("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[0]["status"], 503);
  EXPECT_EQ(posts[0]["level"], "error");
  EXPECT_EQ(posts[0]["user"], "alice");
}

// A change whose record is not committed within the request timeout (a stuck disk) is answered
// kube-apiserver's 504 Timeout, logged so, and its connection freed; the commit that comes later
// shows the change (it "may still be committed"), and a change after it is answered as usual.
// Before the deadline the client waited for as long as the journal did.
TEST(ApiServerTest, AChangeHeldPastTheRequestTimeoutIsAnswered504) {
  LoggedServer s("held-timeout", 100);
  const int fd = s.HeldCreate("slow");
  const std::string got = ReadToClose(fd);
  ASSERT_EQ(got.rfind("HTTP/1.1 504", 0), 0u) << got;
  const size_t body = got.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << got;
  const Json status = Json::parse(got.substr(body + 4));
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["code"], 504);
  EXPECT_EQ(status["reason"], "Timeout");
  EXPECT_EQ(status["message"].get<std::string>().rfind("Timeout: ", 0), 0u) << status;
  EXPECT_NE(status["message"].get<std::string>().find("may still be committed"), std::string::npos)
      << status;
  EXPECT_EQ(s.served->api->stats().held_timed_out, 1u);
  std::vector<Json> posts = s.Lines("POST");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0]["status"], 504);
  EXPECT_EQ(posts[0]["level"], "error");
  EXPECT_EQ(posts[0]["user"], "alice");
  s.gate.Release();  // the record is committed late: the change is there
  httplib::Client c("127.0.0.1", s.served->port);
  httplib::Headers alice = {{"Authorization", "Bearer tok-alice"}};
  auto g = c.Get("/api/v1/namespaces/default/pods/slow", alice);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200) << g->body;
  const std::string again = ReadToClose(SendPodCreate(s.served->port, "later", "tok-alice"));
  EXPECT_EQ(again.rfind("HTTP/1.1 201", 0), 0u) << again;
  posts = s.Lines("POST");
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[1]["status"], 201);
}

// A read behind a change the journal has not committed (a stuck disk) waits for it at most the
// request timeout too, then is answered 504 Timeout (before, it waited with no limit, and the
// changes behind such readers with it); once the commit comes, the same read is answered as usual.
TEST(ApiServerTest, AReadBehindAStuckJournalIsAnswered504AfterTheRequestTimeout) {
  LoggedServer s("read-timeout", 100);
  const int fd = s.HeldCreate("stuck");
  httplib::Client c("127.0.0.1", s.served->port);
  c.set_read_timeout(30, 0);  // a hang fails the test instead of stalling it
  httplib::Headers alice = {{"Authorization", "Bearer tok-alice"}};
  for (const char* path : {"/api/v1/namespaces/default/pods/stuck", "/api/v1/pods"}) {
    auto g = c.Get(path, alice);
    ASSERT_TRUE(g) << path;
    EXPECT_EQ(g->status, 504) << path << " " << g->body;
    const Json status = Json::parse(g->body);
    EXPECT_EQ(status["reason"], "Timeout") << status;
    EXPECT_NE(status["message"].get<std::string>().find("has not committed"), std::string::npos)
        << status;
  }
  EXPECT_EQ(ReadToClose(fd).rfind("HTTP/1.1 504", 0), 0u);  // the create's own answer timed out
  s.gate.Release();
  auto g = c.Get("/api/v1/namespaces/default/pods/stuck", alice);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200) << g->body;
}

}  // namespace
}  // namespace arbiter::server
