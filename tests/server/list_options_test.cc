// A list's or watch's query through the HTTP API, in process, against kube-apiserver 1.36's
// answers (ListOptions as its parameter codec decodes it, ValidateListOptions with WatchList
// on). Before: limit and timeoutSeconds that were not integers were a 400 in other words or
// ignored, `watch=yes` was a list, resourceVersionMatch and sendInitialEvents were ignored (a
// watch list never got its initial-events-end bookmark).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "served_api.h"

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
