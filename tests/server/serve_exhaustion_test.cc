// Exhaustion against the real `arbiter serve` (issue 27, "Crashes and exhaustion": one thread
// per connection from a pool of 160 let 165 watches, 200 slowloris connections or 200 silent TLS
// sockets stop the whole API). Each test holds the attack open while a normal client (the real
// kubectl, or cpp-httplib's client) gets and creates; none measures a time: the clients' own
// timeouts only bound a hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "apps/run_command.h"
#include "apps/test_pki.h"
#include "server/serve_process.h"
#include "server/state/cluster.h"

namespace arbiter::testing {
namespace serve_exhaustion_test {

using server::Json;

// A TCP connection to 127.0.0.1:port from `source` (any 127.0.0.0/8 address: each is a distinct
// client address to the daemon); -1 on failure. `rcvbuf`: a small receive buffer (0: default).
int Connect(int port, const char* source = "127.0.0.1", int rcvbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    return -1;
  }
  // A safety bound on every read below (a hang fails the test instead of stalling it).
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until `want` is in what was read (true), or EOF / error / the 30 s bound (false).
bool ReadUntil(int fd, const std::string& want, std::string* got) {
  char buf[16384];
  while (got->find(want) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    got->append(buf, static_cast<size_t>(n));
  }
  return true;
}

struct Fds {
  std::vector<int> fds;
  ~Fds() {
    for (int fd : fds) close(fd);
  }
};

httplib::Client Client(const ServeProcess& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_connection_timeout(20);
  c.set_read_timeout(20);
  c.set_write_timeout(20);
  return c;
}

std::string PodJson(const std::string& name, const Json& annotations = Json::object()) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod.dump();
}

std::string Describe(const httplib::Result& r) {
  if (!r) return "no answer: " + httplib::to_string(r.error());
  return std::to_string(r->status) + " " + r->body.substr(0, 300);
}

// A GET and a create by a normal client, and kubectl's view of the pod.
void ExpectGetAndCreate(const ServeProcess& s, const std::string& name) {
  auto c = Client(s);
  auto list = c.Get("/api/v1/namespaces/default/pods");
  ASSERT_TRUE(list) << Describe(list) << s.log().substr(0, 2000);
  EXPECT_EQ(list->status, 200) << Describe(list);
  auto created = c.Post("/api/v1/namespaces/default/pods", PodJson(name), "application/json");
  ASSERT_TRUE(created) << Describe(created);
  EXPECT_EQ(created->status, 201) << Describe(created);
  CommandOutput k = s.Kubectl("get pod " + name + " --request-timeout=20s");
  EXPECT_EQ(k.rc, 0) << k.out;
  EXPECT_NE(k.out.find(name), std::string::npos) << k.out;
}

TEST(ServeExhaustionTest, ThreeHundredIdleAndSlowlorisConnectionsLeaveTheApiServing) {
  ServeProcess s(ScratchDir("exhaust-slowloris"));
  ASSERT_TRUE(s.Start()) << s.log();
  Fds idle, slow;
  for (int i = 0; i < 150; ++i) idle.fds.push_back(Connect(s.port()));
  for (int i = 0; i < 150; ++i) {
    const int fd = Connect(s.port());
    SendAll(fd, "GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    slow.fds.push_back(fd);
  }
  for (int fd : idle.fds) ASSERT_GE(fd, 0);
  for (int fd : slow.fds) ASSERT_GE(fd, 0);
  // Slowloris: a header line every half second, never the blank line that ends them.
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done) {
      for (int fd : slow.fds) SendAll(fd, "X-Slow: 1\r\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
  ExpectGetAndCreate(s, "during-slowloris");
  done = true;
  trickle.join();
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeExhaustionTest, ThreeHundredSilentTlsSocketsLeaveTheApiServing) {
  const auto dir = ScratchDir("exhaust-tls");
  std::ofstream(dir / "tokens.csv") << "admin-token,admin,1,\"system:masters\"\n";
  ASSERT_NO_FATAL_FAILURE(MakeTestPki(dir));
  const std::string d = dir.string() + "/";
  ServeProcess s(dir, {"--token-file", d + "tokens.csv", "--tls-cert-file", d + "server.pem",
                       "--tls-private-key-file", d + "server.key"});
  ASSERT_TRUE(s.Start()) << s.log();
  const std::string kubeconfig = d + "admin.kubeconfig";
  CommandOutput kc =
      RunCommand(std::string(ARBITER_BINARY) + " kubeconfig --server https://127.0.0.1:" +
                 std::to_string(s.port()) + " --user admin --token-file " + d +
                 "tokens.csv --certificate-authority " + d + "ca.pem > " + kubeconfig);
  ASSERT_EQ(kc.rc, 0) << kc.out;
  Fds silent;  // connected, never a ClientHello
  for (int i = 0; i < 300; ++i) silent.fds.push_back(Connect(s.port()));
  for (int fd : silent.fds) ASSERT_GE(fd, 0);
  auto kubectl = [&](const std::string& args) {
    return RunCommand("kubectl --kubeconfig " + kubeconfig + " --cache-dir " + d +
                      "kcache --request-timeout=20s " + args + " 2>&1");
  };
  CommandOutput get = kubectl("get pods -n default");
  EXPECT_EQ(get.rc, 0) << get.out << s.log().substr(0, 2000);
  CommandOutput create = kubectl("create namespace during-silent-tls");
  EXPECT_EQ(create.rc, 0) << create.out;
  CommandOutput again = kubectl("get namespace during-silent-tls -o name");
  EXPECT_EQ(again.out, "namespace/during-silent-tls\n");
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeExhaustionTest, FiveHundredWatchesWhileCreatesSucceed) {
  ServeProcess s(ScratchDir("exhaust-watches"));
  ASSERT_TRUE(s.Start()) << s.log();
  Fds watches;
  for (int i = 0; i < 500; ++i) {
    const int fd = Connect(s.port());
    ASSERT_GE(fd, 0);
    watches.fds.push_back(fd);
    SendAll(fd,
            "GET /api/v1/namespaces/default/pods?watch=1&timeoutSeconds=300 HTTP/1.1\r\n"
            "Host: 127.0.0.1\r\n\r\n");
    std::string head;
    ASSERT_TRUE(ReadUntil(fd, "\r\n\r\n", &head)) << i << ": " << head;
    ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << i << ": " << head;
  }
  ExpectGetAndCreate(s, "watched");
  // Every watch is live: a sample of them sees the pod.
  for (size_t i = 0; i < watches.fds.size(); i += 50) {
    std::string got;
    EXPECT_TRUE(ReadUntil(watches.fds[i], "\"name\":\"watched\"", &got)) << i << ": " << got;
  }
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// A watcher reading 4 KB ten times a second while 100 pods of 240 KiB (24 MB of events) are
// created: its unsent bytes pass the server's cap, and the server closes it rather than keep
// them (cpp-httplib's server kept writing to it, a thread blocked for as long as it reads).
TEST(ServeExhaustionTest, AWatchThatDoesNotKeepUpIsClosed) {
  ServeProcess s(ScratchDir("exhaust-slow-watch"));
  ASSERT_TRUE(s.Start()) << s.log();
  const int fd = Connect(s.port(), "127.0.0.1", 4096);
  ASSERT_GE(fd, 0);
  Fds owned;
  owned.fds.push_back(fd);
  SendAll(fd,
          "GET /api/v1/namespaces/default/pods?watch=1&timeoutSeconds=600 HTTP/1.1\r\n"
          "Host: 127.0.0.1\r\n\r\n");
  std::string head;
  ASSERT_TRUE(ReadUntil(fd, "\r\n\r\n", &head)) << head;
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  std::atomic<bool> created{false};
  std::thread creator([&] {
    auto c = Client(s);
    const std::string note(240 << 10, 'x');
    for (int i = 0; i < 100; ++i) {
      auto r = c.Post("/api/v1/namespaces/default/pods",
                      PodJson("big-" + std::to_string(i), {{"note", note}}), "application/json");
      EXPECT_TRUE(r && r->status == 201) << Describe(r);
    }
    created = true;
  });
  size_t received = 0;
  char buf[4096];
  bool closed = false;
  while (!created && !closed) {  // slowly while the pods are created
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    closed = n <= 0;
    if (n > 0) received += static_cast<size_t>(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  creator.join();
  while (!closed) {  // then as fast as it can: what the kernel holds, then the end
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    if (n < 0 && !closed) break;  // 30 s without a byte and still open
    if (n > 0) received += static_cast<size_t>(n);
  }
  EXPECT_TRUE(closed) << "the watch is still open after " << received << " bytes";
  EXPECT_LT(received, size_t{100} * (240 << 10));  // cut, not finished
  // The daemon serves on.
  ExpectGetAndCreate(s, "after-slow-watch");
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeExhaustionTest, PerClientConnectionCapAnswers429AndOtherClientsAreServed) {
  ServeProcess s(ScratchDir("exhaust-per-client"), {"--max-connections-per-client", "20"});
  ASSERT_TRUE(s.Start()) << s.log();
  Fds held;
  for (int i = 0; i < 20; ++i) held.fds.push_back(Connect(s.port(), "127.0.0.2"));
  for (int fd : held.fds) ASSERT_GE(fd, 0);
  const int over = Connect(s.port(), "127.0.0.2");
  ASSERT_GE(over, 0);
  held.fds.push_back(over);
  std::string answer;
  ReadUntil(over, "\r\n\r\n", &answer);
  EXPECT_EQ(answer.rfind("HTTP/1.1 429", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  ExpectGetAndCreate(s, "other-client");  // from 127.0.0.1
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

TEST(ServeExhaustionTest, TheLastConnectionsAreKeptForProbesAndAdmins) {
  // 100 connections, the last 64 reserved: 40 idle ones from 127.0.0.2 leave only the reserve.
  ServeProcess s(ScratchDir("exhaust-reserve"), {"--max-connections", "100"});
  ASSERT_TRUE(s.Start()) << s.log();
  auto held = std::make_unique<Fds>();
  for (int i = 0; i < 40; ++i) held->fds.push_back(Connect(s.port(), "127.0.0.2"));
  for (int fd : held->fds) ASSERT_GE(fd, 0);
  auto c = Client(s);
  c.set_keep_alive(false);
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health) << Describe(health);
  EXPECT_EQ(health->status, 200);
  auto list = c.Get("/api/v1/namespaces");
  ASSERT_TRUE(list) << Describe(list);
  EXPECT_EQ(list->status, 429) << Describe(list);
  EXPECT_EQ(list->get_header_value("Retry-After"), "1");
  // Past all 100, a connection is closed at once.
  auto more = std::make_unique<Fds>();
  for (int i = 0; i < 70; ++i) more->fds.push_back(Connect(s.port(), "127.0.0.3"));
  std::string nothing;
  EXPECT_FALSE(ReadUntil(more->fds.back(), "HTTP", &nothing)) << nothing;
  // Once they go, everyone is served again.
  more.reset();
  held.reset();
  std::string last;
  for (int i = 0; i < 100; ++i) {
    auto again = c.Get("/api/v1/namespaces");
    last = Describe(again);
    if (again && again->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(last.rfind("200 ", 0), 0u) << last;
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// With --token-file, a body is read only for a request its headers authorize (kube-apiserver
// authenticates and authorizes before a handler reads the body): no token is 401 and a tenant
// writing to another namespace 403 at once, before any "100 Continue" and with the body unread,
// while the same tenant's own namespace gets "100 Continue". Before, 100 connections without a
// token each sending 3 MiB less a byte held 350 MB of the daemon for the 60 s body deadline.
TEST(ServeExhaustionTest, ABodyIsNotReadForARequestItsHeadersDoNotAuthorize) {
  const std::filesystem::path dir = ScratchDir("exhaust-unread-bodies");
  {
    std::ofstream f(dir / "tokens.csv");
    f << "alice-token,alice,2,\"arbiter:editors:team-a\"\n";
  }
  ServeProcess s(dir, {"--token-file", (dir / "tokens.csv").string()});
  ASSERT_TRUE(s.Start()) << s.log();
  auto first_line = [&](const std::string& path, const std::string& auth) {
    const int fd = Connect(s.port());
    EXPECT_GE(fd, 0);
    std::string answer;
    SendAll(fd, "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                    auth + "Content-Length: 3000000\r\nExpect: 100-continue\r\n\r\n");
    ReadUntil(fd, "\r\n", &answer);
    close(fd);
    return answer.substr(0, answer.find("\r\n"));
  };
  const std::string alice = "Authorization: Bearer alice-token\r\n";
  EXPECT_EQ(first_line("/api/v1/namespaces/team-a/pods", ""), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(first_line("/api/v1/namespaces/team-a/pods", "Authorization: Bearer nobody\r\n"),
            "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(first_line("/api/v1/namespaces/team-b/pods", alice), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(first_line("/healthz", ""), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(first_line("/api/v1/namespaces/team-a/pods", alice), "HTTP/1.1 100 Continue");
  // The refused requests are logged as any other (user, status).
  EXPECT_NE(s.log().find("\"status\":403,\"time\""), std::string::npos) << s.log();
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

// kube-apiserver's --min-request-timeout: a watch without timeoutSeconds lasts between min and
// 2 min, and a longer timeoutSeconds is cut to 2 min; both streams end with the last chunk.
TEST(ServeExhaustionTest, WatchesEndWithinTwiceTheMinRequestTimeout) {
  ServeProcess s(ScratchDir("exhaust-min-timeout"), {"--min-request-timeout", "1"});
  ASSERT_TRUE(s.Start()) << s.log();
  Fds watches;
  for (const char* query : {"watch=1", "watch=1&timeoutSeconds=3600"}) {
    const int fd = Connect(s.port());
    ASSERT_GE(fd, 0);
    watches.fds.push_back(fd);
    SendAll(fd, "GET /api/v1/namespaces/default/pods?" + std::string(query) +
                    " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }
  for (int fd : watches.fds) {
    std::string got;
    EXPECT_TRUE(ReadUntil(fd, "\r\n0\r\n\r\n", &got)) << got;
    EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  }
  EXPECT_EQ(s.Stop(), 0) << s.log().substr(0, 4000);
}

}  // namespace serve_exhaustion_test
}  // namespace arbiter::testing
