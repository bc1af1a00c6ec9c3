#include "adapters/kube/watch.h"

#include <gtest/gtest.h>

#include "kube/fake_apiserver.h"

namespace arbiter::kube {
namespace watch_test {

using nlohmann::json;

const Millis kNow = *ParseRfc3339("2026-12-01T12:00:00Z");

const ResourceInfo& R(const char* plural) { return *FindResource("", "v1", plural); }

std::multimap<std::string, std::string> Q(
    std::initializer_list<std::pair<const std::string, std::string>> l) {
  return l;
}

TEST(KubeWatch, ListOptionsParseSelectorsVersionsAndFlags) {
  auto o = ParseListOptions(Q({{"watch", "1"},
                               {"resourceVersion", "42"},
                               {"allowWatchBookmarks", "true"},
                               {"labelSelector", "app=web"},
                               {"fieldSelector", "spec.nodeName=n1"},
                               {"timeoutSeconds", "30"},
                               {"includeObject", "Object"}}),
                            R("pods"));
  ASSERT_TRUE(o.ok()) << o.message();
  EXPECT_TRUE(o->watch);
  EXPECT_EQ(o->resource_version, 42u);
  EXPECT_TRUE(o->allow_watch_bookmarks);
  EXPECT_EQ(o->label_selector.requirements.size(), 1u);
  EXPECT_EQ(o->field_selector.requirements[0].value, "n1");
  EXPECT_EQ(o->timeout_seconds, 30);
  EXPECT_EQ(o->include_object, IncludeObject::kObject);
  EXPECT_FALSE(
      ParseListOptions(Q({{"resourceVersion", "0"}}), R("pods"))->resource_version.has_value());
  EXPECT_EQ(ParseListOptions(Q({{"resourceVersion", "x"}}), R("pods")).message(),
            "resourceVersion: Invalid value: \"x\": must be a non-negative integer");
  EXPECT_EQ(ParseListOptions(Q({{"fieldSelector", "status.phase=Running"}}), R("nodes")).message(),
            "field label not supported: status.phase");
  EXPECT_FALSE(ParseListOptions(Q({{"resourceVersionMatch", "Exact"}}), R("pods")).ok());
  EXPECT_FALSE(ParseListOptions(Q({{"watch", "maybe"}}), R("pods")).ok());
}

// APIObjectVersioner.ParseResourceVersion: strconv.ParseUint, no sign, no base prefix.
TEST(KubeWatch, ResourceVersionsParseAsGoParseUint) {
  EXPECT_EQ(ParseResourceVersion("").value(), 0u);
  EXPECT_EQ(ParseResourceVersion("0").value(), 0u);
  EXPECT_EQ(ParseResourceVersion("18446744073709551615").value(), UINT64_MAX);
  for (const char* bad : {"abc", "0x10", "-1", "+5", " 5", "5 "})
    EXPECT_FALSE(ParseResourceVersion(bad).ok()) << bad;
  EXPECT_EQ(ParseResourceVersion(std::string("5\0", 2)).status().message(),
            "resourceVersion: Invalid value: \"5\\x00\": strconv.ParseUint: parsing \"5\\x00\": "
            "invalid syntax");
  EXPECT_EQ(ParseResourceVersion("18446744073709551616").status().message(),
            "resourceVersion: Invalid value: \"18446744073709551616\": strconv.ParseUint: parsing "
            "\"18446744073709551616\": value out of range");
  EXPECT_EQ(GoQuote("a\"\\\n\x7f"), "\"a\\\"\\\\\\n\\x7f\"");
}

TEST(KubeWatch, EventsBookmarksAndErrorsHaveKubeShapes) {
  EXPECT_EQ(WatchLine(WatchEventType::kAdded, json{{"kind", "Pod"}}),
            "{\"object\":{\"kind\":\"Pod\"},\"type\":\"ADDED\"}\n");
  json b = BookmarkEvent(R("pods"), 17, true);
  EXPECT_EQ(b["type"], "BOOKMARK");
  EXPECT_EQ(b["object"]["kind"], "Pod");
  EXPECT_EQ(b["object"]["metadata"]["resourceVersion"], "17");
  EXPECT_EQ(b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
  json e = ErrorEvent(TooOldResourceVersion(5, 20));
  EXPECT_EQ(e["type"], "ERROR");
  EXPECT_EQ(e["object"]["code"], 410);
}

// kubectl get events --watch: the list as a Table, then Table watch events streamed in chunks;
// kubectl prints the new rows under the first header.
TEST(KubeWatch, KubectlGetWatchPrintsRowsOfTableWatchEvents) {
  auto event = [](const char* name, const char* reason, const char* rv) {
    return json{{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name}, {"namespace", "a"}, {"resourceVersion", rv}}},
                {"type", "Warning"},
                {"reason", reason},
                {"message", std::string(reason) + " of p"},
                {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "a"}}},
                {"lastTimestamp", "2026-12-01T11:59:00Z"},
                {"count", 1}};
  };
  testing::FakeApiServer server([&](httplib::Server& s) {
    s.Get("/api/v1/namespaces/a/events", [&](const httplib::Request& req, httplib::Response& res) {
      auto opts = ParseListOptions(
          std::multimap<std::string, std::string>(req.params.begin(), req.params.end()),
          R("events"));
      ASSERT_TRUE(opts.ok()) << opts.message();
      const IncludeObject include = opts->include_object;
      if (!opts->watch) {
        std::vector<json> items = {event("p.1", "FailedScheduling", "5")};
        res.set_content(
            MakeTable(R("events"), items, kNow, include, {{"resourceVersion", "5"}}).dump(),
            "application/json;as=Table;v=v1;g=meta.k8s.io");
        return;
      }
      EXPECT_EQ(opts->resource_version, 5u);
      std::string body = TableWatchEvent(WatchEventType::kAdded, R("events"),
                                         event("p.2", "Preempted", "6"), kNow, include, true)
                             .dump() +
                         "\n" +
                         TableWatchEvent(WatchEventType::kAdded, R("events"),
                                         event("p.3", "Scheduled", "7"), kNow, include, false)
                             .dump() +
                         "\n";
      res.set_chunked_content_provider("application/json;as=Table;v=v1;g=meta.k8s.io",
                                       [body](size_t, httplib::DataSink& sink) {
                                         sink.write(body.data(), body.size());
                                         sink.done();  // the server ends the watch
                                         return true;
                                       });
    });
  });
  auto scratch = testing::Scratch("watch");
  auto run = server.Kubectl("get events -n a --watch", scratch);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.out,
            "LAST SEEN   TYPE      REASON             OBJECT   MESSAGE\n"
            "60s         Warning   FailedScheduling   pod/p    FailedScheduling of p\n"
            "60s         Warning   Preempted          pod/p    Preempted of p\n"
            "60s         Warning   Scheduled          pod/p    Scheduled of p\n")
      << run.err;
}

}  // namespace watch_test
}  // namespace arbiter::kube
