// The in-process fixture of the HTTP API tests: a daemon with fresh data under a temporary
// directory, its API on a free loopback port served by a thread until destroyed, a client of it,
// and pods created through the daemon (not the API) for the tests to read or change.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "server/daemon.h"
#include "server/http/http_api.h"

namespace arbiter::server::api_fixture {

// TMPDIR/arbiter-SUITE-PID/NAME, emptied.
inline std::filesystem::path FreshDir(const std::string& suite, const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-" + suite + "-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

struct ServedApi {
  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<ApiServer> api;
  std::thread thread;
  int port = 0;
  std::unique_ptr<httplib::Client> cli;

  explicit ServedApi(const std::filesystem::path& dir, ApiOptions options = {}) {
    auto d = Daemon::Open({dir.string(), nullptr, 0, false});
    EXPECT_TRUE(d.ok()) << d.message();
    daemon = std::move(d).value();
    api = std::make_unique<ApiServer>(*daemon, std::move(options));
    auto p = api->Bind("127.0.0.1", 0);
    EXPECT_TRUE(p.ok()) << p.message();
    port = p.value();
    thread = std::thread([this] { api->Run(); });
    cli = std::make_unique<httplib::Client>("127.0.0.1", port);
  }
  ~ServedApi() {
    api->Stop();
    thread.join();
    daemon->Stop();
  }
  // Pod `name` in "default", with these metadata members (labels, annotations, ...) besides its
  // name and namespace.
  void Pod(const std::string& name, Json metadata = Json::object()) {
    metadata["name"] = name;
    metadata["namespace"] = "default";
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Pod";
    m.namespace_ = "default";
    m.object = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", std::move(metadata)},
                {"spec", {{"containers", {{{"name", "c"}, {"image", "x"}}}}}}};
    ASSERT_TRUE(daemon->Mutate(std::move(m)).ok()) << name;
  }
  // Node `name` with this status.capacity.
  void Node(const std::string& name, Json capacity) {
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Node";
    m.object = {{"apiVersion", "v1"},
                {"kind", "Node"},
                {"metadata", {{"name", name}}},
                {"status", {{"capacity", std::move(capacity)}}}};
    ASSERT_TRUE(daemon->Mutate(std::move(m)).ok()) << name;
  }
  // Whether pod `name` is stored in "default".
  bool Has(const std::string& name) {
    return daemon->Read([&](const Cluster& c) { return c.store().Get("Pod", "default", name); }) !=
           nullptr;
  }
};

// The answer's body as JSON, once its status is checked to be `want` (a failure names the body).
inline Json Check(const httplib::Result& r, int want) {
  EXPECT_TRUE(r);
  if (!r) return Json();
  EXPECT_EQ(r->status, want) << r->body;
  return Json::parse(r->body);
}

}  // namespace arbiter::server::api_fixture
