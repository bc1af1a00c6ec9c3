// The Kubernetes API client over a kept-alive TLS connection that the server closes while it is
// idle, as kube-apiserver does after 90 s (its http.Server's IdleTimeout). Over TLS such a
// connection still looks alive to the client (the server's close_notify waits to be read), so the
// first request after a quiet spell used to fail: `arbiter scheduler` lost an event ("could not
// be sent") after 101 s without one. Here an httplib TLS server that closes a connection idle for
// 1 s plays that part (the client's behaviour, not Kubernetes', is under test; the Kube* tests run
// it against kube-apiserver).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "adapters/kubeclient/api_client.h"
#include "apps/test_pki.h"

namespace arbiter::kubeclient {
namespace kube_api_client_test {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class IdleClosingServer {
 public:
  explicit IdleClosingServer(const std::filesystem::path& dir)
      : server_((dir / "server.pem").c_str(), (dir / "server.key").c_str()) {
    server_.set_keep_alive_timeout(1);  // seconds
    server_.Get("/version", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"gitVersion\":\"v1.36.3\"}", "application/json");
    });
    server_.Post("/api/v1/namespaces/a/events",
                 [](const httplib::Request& req, httplib::Response& res) {
                   res.status = 201;
                   res.set_content(req.body, "application/json");
                 });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~IdleClosingServer() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
};

// After each quiet spell (longer than the server's idle timeout) a POST and a GET both succeed:
// with the client's own idle limit below the server's (it reconnects before sending), and with no
// idle limit at all (the dead connection is found when used, and the request sent again on a new
// one: a POST only when it was not sent).
TEST(KubeApiClient, RequestsAfterTheServerClosedAnIdleConnectionSucceed) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("arbiter-apiclient-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_NO_FATAL_FAILURE(arbiter::testing::MakeTestPki(dir));
  IdleClosingServer server(dir);
  KubeConfig k;
  k.server = "https://127.0.0.1:" + std::to_string(server.port());
  k.ca_pem = Slurp(dir / "ca.pem");
  for (Millis max_idle : {Millis{300}, Millis{3600000}}) {
    SCOPED_TRACE("max_idle " + std::to_string(max_idle) + " ms");
    ClientOptions o;
    o.max_idle = max_idle;
    auto c = ApiClient::Connect(k, o);
    ASSERT_TRUE(c.ok()) << c.message();
    auto first = (*c)->Get("/version");
    ASSERT_TRUE(first.ok()) << first.message();
    EXPECT_EQ(first->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    auto post = (*c)->Post("/api/v1/namespaces/a/events", "{\"reason\":\"Scheduled\"}");
    ASSERT_TRUE(post.ok()) << post.message();
    EXPECT_EQ(post->status, 201);
    EXPECT_EQ(post->body, "{\"reason\":\"Scheduled\"}");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    auto get = (*c)->Get("/version");
    ASSERT_TRUE(get.ok()) << get.message();
    EXPECT_EQ(get->status, 200);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace kube_api_client_test
}  // namespace arbiter::kubeclient
