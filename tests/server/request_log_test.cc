// The structured request log line (server/http/request_log.h): who, what (verb, resource,
// namespace), the code and the latency; never a token.
#include "server/http/request_log.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <random>
#include <string>
#include <vector>

#include "adapters/kube/status.h"

namespace arbiter::server {
namespace {

TEST(RequestLog, AResourceRequestNamesItsUserVerbResourceNamespaceCodeAndLatency) {
  RequestLogInput in;
  in.method = "GET";
  in.path = "/api/v1/namespaces/team-a/pods/train-1/status";
  in.remote = "127.0.0.1";
  in.user = "alice";
  in.status = 200;
  in.latency_ms = 1.23456;
  in.now = 1764583200000;
  const nlohmann::json l = RequestLogFields(in);
  EXPECT_EQ(l["msg"], "request");
  EXPECT_EQ(l["level"], "info");
  EXPECT_EQ(l["time"], "2025-12-01T10:00:00Z");
  EXPECT_EQ(l["user"], "alice");
  EXPECT_EQ(l["verb"], "get");
  EXPECT_EQ(l["resource"], "pods");
  EXPECT_EQ(l["subresource"], "status");
  EXPECT_EQ(l["namespace"], "team-a");
  EXPECT_EQ(l["name"], "train-1");
  EXPECT_EQ(l["status"], 200);
  EXPECT_DOUBLE_EQ(l["latencyMs"].get<double>(), 1.235);
}

TEST(RequestLog, ListsWatchesAndNonResourcePathsAndServerErrors) {
  RequestLogInput in;
  in.method = "GET";
  in.path = "/api/v1/pods";
  in.watch_param = "true";
  in.status = 200;
  nlohmann::json l = RequestLogFields(in);
  EXPECT_EQ(l["verb"], "watch");
  EXPECT_EQ(l["resource"], "pods");
  EXPECT_FALSE(l.contains("namespace"));  // all namespaces
  EXPECT_EQ(l["user"], "");
  in = {};
  in.method = "GET";
  in.path = "/metrics";
  in.status = 503;
  l = RequestLogFields(in);
  EXPECT_EQ(l["verb"], "get");
  EXPECT_FALSE(l.contains("resource"));
  EXPECT_EQ(l["level"], "error");
}

TEST(RequestLog, TheServingThreadsContextGivesTheUserAndNeverTheToken) {
  httplib::Request req;
  req.method = "POST";
  req.path = "/api/v1/namespaces/team-a/pods";
  req.headers.emplace("Authorization", "Bearer secret-token-123");
  req.params.emplace("token", "secret-token-123");
  httplib::Response res;
  res.status = 201;
  RequestStarted();
  RequestAuthenticated("alice");
  const std::string line = RequestLogLine(req, res).dump();
  EXPECT_NE(line.find("\"user\":\"alice\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"verb\":\"create\""), std::string::npos) << line;
  EXPECT_EQ(line.find("secret-token-123"), std::string::npos) << line;
  // The context is per request: the next line on this thread has no user.
  RequestStarted();
  EXPECT_EQ(RequestLogLine(req, res)["user"], "");
}

// RequestLogText writes the line without its tree: the same bytes as the tree's WireJson, for
// random requests (resource and other paths, watches, escapes, control characters, UTF-8 valid
// and not, empty and odd fields, latencies of every size), and the saved context comes back.
TEST(RequestLog, TheLineAsTextIsTheTreesWireJson) {
  std::mt19937_64 rng(27);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  const std::vector<std::string> parts = {
      "pods",     "team-a", "x\"y",   "a\\b", "new\nline", "\x7f",  "\xc3\xa9t\xc3\xa9",
      "\xff\xfe", "",       "status", "%2F",  "\x01",      "nodes", "apis",
      "batch",    "v1",     "jobs",   "a b"};
  for (int i = 0; i < 5000; ++i) {
    RequestLogInput in;
    in.method = pick({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "X\""});
    in.path = pick({"/api/v1/", "/apis/batch/v1/", "/api/v1/namespaces/", "/metrics", "/", ""});
    for (int k = static_cast<int>(rng() % 6); k > 0; --k) in.path += pick(parts) + "/";
    if (rng() % 2) in.path += pick(parts);
    in.watch_param = pick({"", "true", "1", "false", "x"});
    in.remote = pick({"127.0.0.1", "::1", "", "10.1.2.3"});
    in.user = pick(parts);
    in.status = static_cast<int>(100 + rng() % 500);
    const double scale[] = {0, 1e-7, 1e-3, 0.5, 1, 37.25, 1e3, 1e6, 1e12};
    in.latency_ms = scale[rng() % 9] * static_cast<double>(rng() % 100000) / 997.0;
    in.now = static_cast<Millis>(rng() % 4102444800000);
    ASSERT_EQ(RequestLogText(in), kube::WireJson(RequestLogFields(in)))
        << in.method << " " << in.path << " " << in.latency_ms;
  }
  RequestStarted();
  RequestAuthenticated("bob");
  const auto saved = SaveRequestContext();
  RequestStarted();
  RestoreRequestContext(saved);
  httplib::Request req;
  req.method = "GET";
  req.path = "/api/v1/pods";
  httplib::Response res;
  res.status = 200;
  EXPECT_EQ(RequestLogInputOf(req, res).user, "bob");
}

}  // namespace
}  // namespace arbiter::server
