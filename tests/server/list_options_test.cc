// A list's or watch's query through the HTTP API, in process, against kube-apiserver 1.36's
// answers (ListOptions as its parameter codec decodes it, ValidateListOptions with WatchList
// on). Before: limit and timeoutSeconds that were not integers were a 400 in other words or
// ignored, `watch=yes` was a list, resourceVersionMatch and sendInitialEvents were ignored (a
// watch list never got its initial-events-end bookmark).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "served_api.h"
#include "server/http/http_api.h"

namespace arbiter::server {
namespace list_options_test {

using api_fixture::Check;

struct Served : api_fixture::ServedApi {
  explicit Served(const std::string& name)
      : ServedApi(api_fixture::FreshDir("list-options-test", name)) {}
};

const std::string kPods = "/api/v1/namespaces/default/pods";

TEST(ListOptionsTest, LimitAndTimeoutSecondsAreParsedAsStrconvParseInt) {
  Served s("integers");
  s.Pod("p0");
  s.Pod("p1");
  for (const char* name : {"limit", "timeoutSeconds"}) {
    Json bad = Check(s.cli->Get(kPods + "?" + name + "=abc"), 400);
    EXPECT_EQ(bad["message"], "strconv.ParseInt: parsing \"abc\": invalid syntax") << name;
    Json range = Check(s.cli->Get(kPods + "?" + name + "=99999999999999999999"), 400);
    EXPECT_EQ(range["message"],
              "strconv.ParseInt: parsing \"99999999999999999999\": value out of range");
  }
  EXPECT_EQ(Check(s.cli->Get(kPods + "?limit=-1"), 200)["items"].size(), 2u);
  EXPECT_EQ(Check(s.cli->Get(kPods + "?limit=9223372036854775807"), 200)["items"].size(), 2u);
}

TEST(ListOptionsTest, ResourceVersionMatchAndSendInitialEventsAreValidated) {
  Served s("validation");
  const std::string head = "ListOptions.meta.k8s.io \"\" is invalid: ";
  for (const auto& [query, message] : std::vector<std::pair<std::string, std::string>>{
           {"resourceVersionMatch=x&resourceVersion=1",
            "resourceVersionMatch: Unsupported value: \"x\": supported values: \"Exact\", "
            "\"NotOlderThan\", \"\""},
           {"resourceVersionMatch=Exact&resourceVersion=0",
            "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for "
            "resourceVersion \"0\""},
           {"resourceVersionMatch=Exact",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
            "resourceVersion is provided"},
           {"resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=abc",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is "
            "provided"},
           {"sendInitialEvents=true",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"},
           {"watch=1&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
            "sendInitialEvents is provided"},
           {"watch=1&sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
            "resourceVersionMatch to NotOlderThan"}}) {
    Json q = Check(s.cli->Get(kPods + "?" + query), 422);
    EXPECT_EQ(q["message"], head + message) << query;
    EXPECT_EQ(q["details"]["kind"], "ListOptions");
  }
}

// The watch's lines until it ends (timeoutSeconds=1).
std::vector<Json> WatchLines(Served& s, const std::string& query, std::string* type = nullptr) {
  auto r = s.cli->Get(kPods + "?timeoutSeconds=1&" + query);
  EXPECT_TRUE(r);
  std::vector<Json> lines;
  if (!r) return lines;
  if (type) *type = r->get_header_value("Content-Type");
  size_t at = 0;
  for (size_t nl; (nl = r->body.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(Json::parse(r->body.substr(at, nl - at)));
  return lines;
}

// A negative timeoutSeconds: kube-apiserver's watch times out before it starts; 200 with its ERROR
// event `context deadline exceeded` (or nothing: its timer races the watch) and never an object,
// on a collection or one object (a watch path). It was taken as none: the watch sent the pods and
// lasted
// --min-request-timeout (1 s here, so that the old answer comes back to fail on).
TEST(ListOptionsTest, AWatchWithANegativeTimeoutEndsAtOnceWithItsDeadlineError) {
  ApiOptions options;
  options.min_request_timeout_s = 1;
  api_fixture::ServedApi s(api_fixture::FreshDir("list-options-test", "negative-timeout"), options);
  s.Pod("p0");
  for (const std::string& path :
       std::vector<std::string>{kPods + "?watch=1&timeoutSeconds=-1",
                                "/api/v1/watch/namespaces/default/pods/p0?timeoutSeconds=-5"}) {
    auto r = s.cli->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json;stream=watch");
    const Json line = Json::parse(r->body.substr(0, r->body.find('\n')));
    EXPECT_EQ(line["type"], "ERROR") << r->body;
    EXPECT_EQ(line["object"]["message"], "context deadline exceeded");
    EXPECT_EQ(line["object"]["reason"], "InternalError");
    EXPECT_EQ(line["object"]["code"], 500);
    EXPECT_EQ(r->body.find("ADDED"), std::string::npos) << r->body;
  }
}

// kube-apiserver's deprecated watch paths, /api/v1/watch/..., which 1.36.3 still serves (they
// were 404): a GET watches the list or one object whatever ?watch says; a POST is 405 and a
// subresource 404, as there.
TEST(ListOptionsTest, WatchPathsWatchAListOrOneObject) {
  Served s("watch-paths");
  s.Pod("p0");
  s.Pod("p1");
  auto names = [&](const std::string& path) {
    auto r = s.cli->Get(path);
    std::vector<std::string> out;
    EXPECT_TRUE(r) << path;
    if (!r) return out;
    EXPECT_EQ(r->status, 200) << path << " " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json;stream=watch") << path;
    size_t at = 0;
    for (size_t nl; (nl = r->body.find('\n', at)) != std::string::npos; at = nl + 1)
      out.push_back(Json::parse(r->body.substr(at, nl - at))["object"]["metadata"]["name"]);
    return out;
  };
  const std::string watch = "/api/v1/watch/namespaces/default/pods";
  EXPECT_EQ(names(watch + "?timeoutSeconds=1"), (std::vector<std::string>{"p0", "p1"}));
  EXPECT_EQ(names(watch + "?timeoutSeconds=1&watch=false"), (std::vector<std::string>{"p0", "p1"}));
  EXPECT_EQ(names(watch + "/p1?timeoutSeconds=1"), (std::vector<std::string>{"p1"}));
  EXPECT_EQ(names("/api/v1/watch/pods?timeoutSeconds=1"), (std::vector<std::string>{"p0", "p1"}));
  EXPECT_EQ(names("/api/v1/watch/namespaces/default?timeoutSeconds=1"),
            (std::vector<std::string>{"default"}));
  Check(s.cli->Post(watch, "{}", "application/json"), 405);
  Check(s.cli->Get(watch + "/p0/status"), 404);
  Check(s.cli->Get("/api/v1/watch"), 404);
  // A pod's GET with ?watch is its GET, as in kube-apiserver (the get handler ignores it).
  EXPECT_EQ(Check(s.cli->Get(kPods + "/p0?watch=true"), 200)["kind"], "Pod");
}

// A list or a GET at a resourceVersion the store has not reached: kube-apiserver 1.36.3's 504
// (it was the objects of now, 200); a GET's bad resourceVersion is its bare 500 (it was ignored).
TEST(ListOptionsTest, AResourceVersionAheadOfTheStoreIs504) {
  Served s("too-large");
  s.Pod("p0");
  const std::string now = Check(s.cli->Get(kPods), 200)["metadata"]["resourceVersion"];
  const std::string message = "Timeout: Too large resource version: 99999999999, current: " + now;
  for (const std::string& path :
       std::vector<std::string>{kPods + "?resourceVersion=99999999999",
                                kPods + "?resourceVersion=99999999999&resourceVersionMatch=Exact",
                                kPods + "?resourceVersion=99999999999&limit=1",
                                kPods + "/p0?resourceVersion=99999999999",
                                // A watch from there skipped every change up to it.
                                kPods + "?watch=true&resourceVersion=99999999999"}) {
    Json q = Check(s.cli->Get(path), 504);
    EXPECT_EQ(q["message"], message) << path;
    EXPECT_EQ(q["details"]["causes"][0]["reason"], "ResourceVersionTooLarge") << path;
  }
  EXPECT_EQ(Check(s.cli->Get(kPods + "/p0?resourceVersion=" + now), 200)["kind"], "Pod");
  EXPECT_EQ(Check(s.cli->Get(kPods + "?resourceVersion=" + now), 200)["items"].size(), 1u);
  Json bad = Check(s.cli->Get(kPods + "/p0?resourceVersion=abc"), 500);
  EXPECT_EQ(bad["message"],
            "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid "
            "syntax");
}

TEST(ListOptionsTest, WatchIsAGoBoolAndAWatchListEndsItsInitialEventsWithABookmark) {
  Served s("watch-list");
  s.Pod("p0");
  std::string type;
  std::vector<Json> yes = WatchLines(s, "watch=yes", &type);
  EXPECT_EQ(type, "application/json;stream=watch");
  ASSERT_EQ(yes.size(), 1u);
  EXPECT_EQ(yes[0]["type"], "ADDED");
  EXPECT_EQ(Check(s.cli->Get(kPods + "?watch=False"), 200)["kind"], "PodList");
  const std::vector<Json> list = WatchLines(
      s, "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=1");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["type"], "ADDED");
  EXPECT_EQ(list[1]["type"], "BOOKMARK");
  EXPECT_EQ(list[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  EXPECT_FALSE(list[1]["object"]["metadata"]["resourceVersion"].get<std::string>().empty());
  // sendInitialEvents=true with a resourceVersion: the current objects all the same.
  EXPECT_EQ(WatchLines(s,
                       "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
                       "resourceVersion=1")
                .size(),
            1u);
  // sendInitialEvents=false: only what changes from now.
  EXPECT_TRUE(
      WatchLines(s, "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan").empty());
}

}  // namespace list_options_test
}  // namespace arbiter::server
