// A loopback HTTP server for the kube library tests: serves discovery (and whatever a test adds)
// from src/adapters/kube so that the real kubectl 1.32 can be pointed at it, and records every
// request it gets (to see what kubectl really sends: patches, Accept headers, query strings).
#pragma once

#include <httplib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kube/discovery.h"
#include "adapters/kube/openapi.h"
#include "apps/run_command.h"

namespace arbiter::kube::testing {

struct Recorded {
  std::string method, path, query, content_type, accept, body;
  std::string authorization;
};

class FakeApiServer {
 public:
  // `extra` may register more routes before the discovery routes (first match wins).
  // With `tls_cert`/`tls_key` (PEM files) it serves HTTPS: kubectl sends bearer tokens only there.
  explicit FakeApiServer(std::function<void(httplib::Server&)> extra = {},
                         bool serve_openapi = true, const std::string& tls_cert = "",
                         const std::string& tls_key = "")
      : owned_(tls_cert.empty()
                   ? std::make_unique<httplib::Server>()
                   : std::unique_ptr<httplib::Server>(
                         std::make_unique<httplib::SSLServer>(tls_cert.c_str(), tls_key.c_str()))),
        server_(*owned_),
        scheme_(tls_cert.empty() ? "http" : "https") {
    // Recorded before the response is written (the post-routing handler; the logger runs after
    // it is sent, and a test that read the requests once kubectl had exited could miss the last
    // one: KubectlApply's PATCH once, in a full run).
    server_.set_post_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard<std::mutex> lock(mu_);
      std::string query;
      for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
      requests_.push_back({req.method, req.path, query, req.get_header_value("Content-Type"),
                           req.get_header_value("Accept"), req.body,
                           req.get_header_value("Authorization")});
    });
    if (extra) extra(server_);
    server_.Get("/version", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(VersionBody(ArbiterVersionInfo("0.1.0")).dump(), "application/json");
    });
    auto discovery = [this](bool core) {
      return [this, core](const httplib::Request& req, httplib::Response& res) {
        DiscoveryShape shape = NegotiateDiscovery(req.get_header_value("Accept"));
        res.set_header("Vary", "Accept");
        if (shape != DiscoveryShape::kLegacy && aggregated)
          res.set_content(AggregatedDiscovery(core, shape).dump(), DiscoveryContentType(shape));
        else
          res.set_content((core ? CoreApiVersions() : ApiGroupList()).dump(), "application/json");
      };
    };
    server_.Get("/api", discovery(true));
    server_.Get("/apis", discovery(false));
    server_.Get("/api/v1", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(ApiResourceList("", "v1")->dump(), "application/json");
    });
    server_.Get(R"(/apis/([^/]+)/([^/]+))",
                [](const httplib::Request& req, httplib::Response& res) {
                  auto body = ApiResourceList(req.matches[1].str(), req.matches[2].str());
                  if (!body) {
                    res.status = 404;
                    return;
                  }
                  res.set_content(body->dump(), "application/json");
                });
    if (serve_openapi) {
      server_.Get("/openapi/v3", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(OpenApiV3Index().dump(), "application/json");
      });
      server_.Get(R"(/openapi/v3/(.+))", [](const httplib::Request& req, httplib::Response& res) {
        auto doc = OpenApiV3Document(req.matches[1].str());
        if (!doc) {
          res.status = 404;
          return;
        }
        res.set_content(doc->dump(), "application/json");
      });
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  std::string Url() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_); }
  std::vector<Recorded> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // kubectl against this server, with a fresh discovery cache under `scratch`.
  arbiter::testing::BoundedRun Kubectl(const std::string& args,
                                       const std::filesystem::path& scratch) {
    std::filesystem::create_directories(scratch / "cache");
    return arbiter::testing::RunBounded("kubectl --kubeconfig=/dev/null --server=" + Url() +
                                            " --cache-dir=" + (scratch / "cache").string() + " " +
                                            args,
                                        scratch, {60, 2048});
  }

  bool aggregated = true;  // false: answer /api and /apis with the plain bodies only

 private:
  std::unique_ptr<httplib::Server> owned_;
  httplib::Server& server_;
  std::string scheme_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<Recorded> requests_;
};

inline std::filesystem::path Scratch(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-kube-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

}  // namespace arbiter::kube::testing
