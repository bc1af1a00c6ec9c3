// The structured request log line (server/http/request_log.h): who, what (verb, resource,
// namespace), the code and the latency; never a token.
#include "server/http/request_log.h"

#include <gtest/gtest.h>
#include <httplib.h>

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

}  // namespace
}  // namespace arbiter::server
