// EventRecorder (src/kubesched/event_recorder.h): client-go's events series, bounded; and the
// events the controller asks for. Written to a real kube-apiserver in
// tests/integration/kube_events_test.cc.
#include "kubesched/event_recorder.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "kubesched/controller.h"
#include "kubesched/event_writer.h"

namespace arbiter::kubesched {
namespace event_recorder_test {

using Json = nlohmann::json;

constexpr Millis kT0 = 1764000000000;  // 2025-11-24T16:00:00Z

EventRequest Failed(const std::string& pod, const std::string& note) {
  return {{"v1", "Pod", "team-a", pod, "uid-" + pod},
          std::nullopt,
          true,
          "FailedScheduling",
          "Scheduling",
          note};
}

TEST(KubeschedEvents, FirstCreatesSecondStartsASeriesLaterOnesCountUntilRefresh) {
  EventRecorderOptions o;
  o.reporting_controller = "arbiter";
  o.reporting_instance = "arbiter-host";
  EventRecorder r(o);
  auto w = r.Record(Failed("p", "0/2 nodes are available"), kT0);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(w[0].create);
  EXPECT_EQ(w[0].path, "/apis/events.k8s.io/v1/namespaces/team-a/events");
  const Json e = Json::parse(w[0].body);
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["reason"], "FailedScheduling");
  EXPECT_EQ(e["action"], "Scheduling");
  EXPECT_EQ(e["note"], "0/2 nodes are available");
  EXPECT_EQ(e["regarding"]["uid"], "uid-p");
  EXPECT_EQ(e["reportingController"], "arbiter");
  EXPECT_EQ(e["reportingInstance"], "arbiter-host");
  EXPECT_EQ(e["eventTime"], "2025-11-24T16:00:00.000000Z");
  const std::string name = e["metadata"]["name"];
  EXPECT_EQ(name.rfind("p.", 0), 0u);
  // The same (object, reason, action), another note: the series starts (count 2), one patch.
  w = r.Record(Failed("p", "0/3 nodes are available"), kT0 + 1000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_FALSE(w[0].create);
  EXPECT_EQ(w[0].path, "/apis/events.k8s.io/v1/namespaces/team-a/events/" + name);
  EXPECT_EQ(Json::parse(w[0].body)["series"]["count"], 2);
  // Later ones only count (observed every minute: the series goes on), until the refresh
  // interval since the last write has passed.
  const Millis last = kT0 + 2000 + 31 * 60000;
  for (Millis t = kT0 + 2000; t <= last; t += 60000)
    EXPECT_TRUE(r.Record(Failed("p", "x"), t).empty());
  EXPECT_TRUE(r.Flush(kT0 + 1000 + o.refresh - 1).empty());
  w = r.Flush(last);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(Json::parse(w[0].body)["series"]["count"], 34);
  EXPECT_TRUE(r.Flush(last + 1000).empty());  // written: nothing new
  EXPECT_EQ(r.created(), 1);
  EXPECT_EQ(r.patched(), 2);
  // Another object or reason is another event.
  EXPECT_TRUE(r.Record(Failed("q", "x"), kT0 + 3000)[0].create);
  EventRequest s = Failed("p", "Successfully assigned team-a/p to n1");
  s.reason = "Scheduled";
  s.action = "Binding";
  s.warning = false;
  EXPECT_TRUE(r.Record(s, kT0 + 3000)[0].create);
  EXPECT_EQ(r.series(), 3u);
}

// Every write of a series names its Event, and the writer keeps an Event's writes on one of its
// connections (so its patch never overtakes its create), while the Events spread over them all.
TEST(KubeschedEvents, EachSeriesStaysOnOneConnectionAndEventsSpreadOverAll) {
  EventRecorder r;
  constexpr size_t kConnections = 16;
  std::map<size_t, int> per_connection;
  for (int i = 0; i < 1000; ++i) {
    const std::string pod = "p-" + std::to_string(i);
    auto create = r.Record(Failed(pod, "x"), kT0 + i);
    auto patch = r.Record(Failed(pod, "y"), kT0 + i);
    ASSERT_EQ(create.size(), 1u);
    ASSERT_EQ(patch.size(), 1u);
    const std::string name = Json::parse(create[0].body)["metadata"]["name"];
    EXPECT_EQ(create[0].name, name);
    EXPECT_EQ(patch[0].name, name);
    EXPECT_EQ(EventWriter::ConnectionOf(name, kConnections),
              EventWriter::ConnectionOf(patch[0].name, kConnections));
    ++per_connection[EventWriter::ConnectionOf(name, kConnections)];
  }
  ASSERT_EQ(per_connection.size(), kConnections);
  for (const auto& [c, n] : per_connection) EXPECT_GT(n, 1000 / 16 / 2) << "connection " << c;
  EXPECT_EQ(EventWriter::ConnectionOf("anything", 1), 0u);
}

TEST(KubeschedEvents, SeriesEndAfterFinishAndTheCacheIsBounded) {
  EventRecorderOptions o;
  o.max_series = 3;
  EventRecorder r(o);
  r.Record(Failed("a", "x"), kT0);
  r.Record(Failed("a", "x"), kT0 + 1);  // count 2, written
  r.Record(Failed("a", "x"), kT0 + 2);  // count 3, not yet written
  // Not observed for `finish`: the series ends, its last count written, and it is forgotten.
  auto w = r.Flush(kT0 + 2 + o.finish);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(Json::parse(w[0].body)["series"]["count"], 3);
  EXPECT_EQ(r.series(), 0u);
  EXPECT_TRUE(r.Record(Failed("a", "x"), kT0 + 3 + o.finish)[0].create);  // a new event
  // A fourth object with three series kept: the least recently observed series goes.
  r.Record(Failed("b", "x"), kT0 + o.finish + 10);
  r.Record(Failed("c", "x"), kT0 + o.finish + 11);
  r.Record(Failed("a", "x"), kT0 + o.finish + 12);  // a is observed again: b is the oldest
  r.Record(Failed("d", "x"), kT0 + o.finish + 13);
  EXPECT_EQ(r.series(), 3u);
  EXPECT_TRUE(r.Record(Failed("b", "x"), kT0 + o.finish + 14)[0].create);  // b was forgotten
  EXPECT_TRUE(r.Record(Failed("a", "x"), kT0 + o.finish + 15).empty());    // a still counts
}

TEST(KubeschedEvents, LongNotesAreCutAndNamesAreUnique) {
  EventRecorder r;
  const std::string long_note(5000, 'x');
  auto w = r.Record(Failed("p", long_note), kT0);
  EXPECT_EQ(Json::parse(w[0].body)["note"].get<std::string>().size(), 1024u);
  // Two events of one object in the same millisecond get different names.
  EventRequest other = Failed("p", "y");
  other.reason = "Scheduled";
  auto v = r.Record(other, kT0);
  EXPECT_NE(Json::parse(w[0].body)["metadata"]["name"], Json::parse(v[0].body)["metadata"]["name"]);
  // A name stays within 253 characters.
  auto l = r.Record(Failed(std::string(253, 'n'), "z"), kT0);
  EXPECT_LE(Json::parse(l[0].body)["metadata"]["name"].get<std::string>().size(), 253u);
}

Json NodeJson(const std::string& name, int gpus) {
  const std::string g = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status",
           {{"capacity", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", g}}},
            {"allocatable", {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", g}}}}}};
}

Json PodJson(const std::string& name, int gpus) {
  const std::string g = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", "uid-" + name}}},
          {"spec",
           {{"schedulerName", "arbiter"},
            {"containers",
             {{{"name", "main"},
               {"resources",
                {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", g}}},
                 {"limits", {{"nvidia.com/gpu", g}}}}}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST(KubeschedEvents, ControllerSaysScheduledAndFailedSchedulingWithTheEnginesMessage) {
  Controller c({});
  c.Synced("Node", {NodeJson("n1", 8)});
  c.Synced("Pod", {PodJson("fits", 8), PodJson("waits", 8)});
  std::vector<Action> a = c.Step(kT0);
  std::string message;
  for (const auto& x : a) {
    if (x.type == Action::Type::kStatus) message = x.message;
    c.Done(x, ActionResult{201, "", ""}, kT0);
  }
  ASSERT_FALSE(message.empty());
  std::vector<EventRequest> e = c.TakeEvents();
  ASSERT_EQ(e.size(), 2u);
  std::map<std::string, EventRequest> by_reason;
  for (const auto& x : e) by_reason[x.reason] = x;
  EXPECT_EQ(by_reason["Scheduled"].regarding.name, "fits");
  EXPECT_EQ(by_reason["Scheduled"].note, "Successfully assigned team-a/fits to n1");
  EXPECT_FALSE(by_reason["Scheduled"].warning);
  EXPECT_EQ(by_reason["FailedScheduling"].regarding.name, "waits");
  EXPECT_EQ(by_reason["FailedScheduling"].regarding.uid, "uid-waits");
  EXPECT_EQ(by_reason["FailedScheduling"].note, message);  // the engine's message, verbatim
  EXPECT_TRUE(by_reason["FailedScheduling"].warning);
  EXPECT_TRUE(c.TakeEvents().empty());
}

}  // namespace event_recorder_test
}  // namespace arbiter::kubesched
