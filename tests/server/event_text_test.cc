// Events kept as text (event_text.h, ObjectStore::SetTextKinds): the text written without a tree
// is the tree's (pod_status.h KubeEvent) as kube::WireJson writes it; an Event kept as text alone
// reads back, and is removed, as the tree it replaces.
#include "server/state/event_text.h"

#include <gtest/gtest.h>

#include <vector>

#include "adapters/kube/status.h"
#include "server/state/pod_status.h"

namespace arbiter::server {
namespace event_text_test {

Json PodOf(const std::string& ns, const std::string& name, bool with_namespace = true) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"uid", "uid-\"" + name + "\""}}}};
  if (with_namespace) pod["metadata"]["namespace"] = ns;
  return pod;
}

engine::Event EventOf(engine::EventType type, const std::string& message, const std::string& by,
                      std::string_view reason) {
  engine::Event e;
  e.time = 1764930000123;
  e.type = type;
  e.workload = engine::WorkloadId{7};
  e.node = "node-\"1\"";
  e.by = by;
  e.reason = reason;
  e.message = message;
  return e;
}

// The text KubeEventText writes, with resourceVersion `rv`, and the tree's (KubeEvent's with the
// uid and the version set).
std::pair<std::string, std::string> Both(const engine::Event& e, const Json& involved,
                                         const std::string& name, const std::string& uid) {
  const Millis now = 1764930001456;
  const Json& meta = involved.at("metadata");
  auto d = driver::PodEventOf(e, meta.value("namespace", "default"), meta.value("name", ""));
  EXPECT_TRUE(d.has_value());
  if (!d) return {};
  const EventText text = KubeEventText(e.time, *d, involved, name, uid, now);
  Json tree = KubeEvent(e, involved, name, now);
  tree["metadata"]["uid"] = uid;
  tree["metadata"]["resourceVersion"] = "42";
  EXPECT_EQ(text.ns, tree["metadata"]["namespace"]);
  EXPECT_EQ(text.preemption, PreemptionOf(tree));
  std::string wire = text.text.head;
  kube::AppendWireString(wire, "42");
  return {wire + text.text.tail, kube::WireJson(tree)};
}

TEST(EventText, IsTheTreesWireTextForEveryKindOfEvent) {
  using engine::EventType;
  const std::string odd = "a\"b\\c\nd\te\x01 caf\xc3\xa9 \xe2\x82\xac </script> \x7f";
  const std::vector<engine::Event> events = {
      EventOf(EventType::kScheduled, "", "", ""),
      EventOf(EventType::kScheduled, "bound to " + odd, "", ""),
      EventOf(EventType::kFailedScheduling, "0/3 nodes: " + odd, "", "Unschedulable"),
      EventOf(EventType::kQuotaExceeded, odd, "", "QuotaExceeded"),
      EventOf(EventType::kPreempted, "preempted by ns-\"2\"/p\\2; " + odd, "ns-\"2\"/p\\2", "PDB"),
      EventOf(EventType::kReclaimed, "reclaimed", "other/p2", ""),
      EventOf(EventType::kPreempted, "node removed", "", ""),
      EventOf(EventType::kTerminated, odd, "", "NodeRemoved"),
      EventOf(EventType::kFailed, "exit 3", "", ""),
  };
  const std::vector<Json> involved = {PodOf("team-a", "p-1"), PodOf("team-\"b\"", odd),
                                      PodOf("", "p-2"), PodOf("x", "p-3", false)};
  for (const Json& inv : involved)
    for (size_t i = 0; i < events.size(); ++i) {
      auto [text, tree] = Both(events[i], inv, inv["metadata"]["name"].get<std::string>() + ".1f",
                               "uid-" + std::to_string(i) + odd);
      EXPECT_EQ(text, tree) << i << " " << inv.dump();
      EXPECT_EQ(Json::parse(text), Json::parse(tree)) << i;
    }
}

TEST(EventText, IsTheTreesWireTextForANodesEvent) {
  Json node = {{"kind", "Node"}, {"metadata", {{"name", "node-\"1\""}, {"uid", "n-1"}}}};
  engine::Event e = EventOf(engine::EventType::kNodeAdded, "", "", "");
  e.workload = engine::kNoWorkload;
  auto [text, tree] = Both(e, node, "node-\"1\".2", "u");
  EXPECT_EQ(text, tree);
}

TEST(EventText, InvalidUtf8IsWrittenAsTheTreesReplacement) {
  engine::Event e = EventOf(engine::EventType::kFailedScheduling, "bad \xff\xfe byte", "", "X");
  auto [text, tree] = Both(e, PodOf("ns", "p\xc3"), "p\xc3.3", "u");
  EXPECT_EQ(text, tree);
}

TEST(EventText, APreemptionIsKeptAsAFact) {
  engine::Event e = EventOf(engine::EventType::kPreempted, "m", "team-b/big", "");
  const Json pod = PodOf("team-a", "small");
  auto d = driver::PodEventOf(e, "team-a", "small");
  ASSERT_TRUE(d.has_value());
  const EventText ev = KubeEventText(e.time, *d, pod, "small.1", "u", 0);
  ASSERT_TRUE(ev.preemption.has_value());
  EXPECT_EQ(ev.preemption->type, "Preempted");
  EXPECT_EQ(ev.preemption->victim_namespace, "team-a");
  EXPECT_EQ(ev.preemption->victim, "small");
  EXPECT_EQ(ev.preemption->by_namespace, "team-b");
  EXPECT_EQ(ev.preemption->by, "big");
  e.type = engine::EventType::kScheduled;
  d = driver::PodEventOf(e, "team-a", "small");
  EXPECT_FALSE(KubeEventText(e.time, *d, pod, "small.2", "u", 0).preemption.has_value());
}

// ---------------------------------------------------------------- the store's text kinds

Json EventJson(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"involvedObject", {{"kind", "Pod"}, {"name", "p0"}, {"resourceVersion", "1"}}},
          {"metadata",
           {{"name", name},
            {"namespace", "ns"},
            {"annotations", {{"resourceVersion", "2"}}},
            {"uid", "u-1"},
            {"creationTimestamp", "2026-12-01T10:24:02Z"}}},
          {"message", "caf\u00e9 \"resourceVersion\":\"2\""}};
}

Json Versioned(Json j, int64_t rv) {
  j["metadata"]["resourceVersion"] = std::to_string(rv);
  return j;
}

TEST(ObjectStoreTextKinds, AreKeptAsTextAndRemovedAsTheirLastStateWithTheNewVersion) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 0);  // (no tree kept past a Trim)
  s.SetTextKinds({"Event"});
  s.Put("Event", "ns", "a", EventJson("a"));                         // 1: a tree, kept as text
  s.PutText("Event", "ns", "b", WireTextAround(EventJson("b")));     // 2: text
  s.Put("Event", "ns", "a", Versioned(EventJson("a"), 99));          // 3: its version replaced
  EXPECT_TRUE(s.All("Event").at({"ns", "a"}).stored().compacted());  // no tree kept
  EXPECT_TRUE(s.All("Event").at({"ns", "b"}).stored().compacted());
  EXPECT_EQ(*s.Get("Event", "ns", "b"), Versioned(EventJson("b"), 2));  // parsed when read
  s.Trim();
  EXPECT_TRUE(s.All("Event").at({"ns", "b"}).stored().compacted());  // and let go
  ASSERT_TRUE(s.Remove("Event", "ns", "a"));                         // 4
  ASSERT_TRUE(s.Remove("Event", "ns", "b"));                         // 5
  const std::vector<WatchEvent> events = s.TakeEvents();
  ASSERT_EQ(events.size(), 5u);
  const Json want[] = {Versioned(EventJson("a"), 1), Versioned(EventJson("b"), 2),
                       Versioned(EventJson("a"), 3), Versioned(EventJson("a"), 4),
                       Versioned(EventJson("b"), 5)};
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].resource_version, static_cast<int64_t>(i + 1));
    EXPECT_EQ(events[i].object.WireText(), kube::WireJson(want[i])) << i;
    EXPECT_EQ(*events[i].object.tree(), want[i]) << i;
  }
  EXPECT_EQ(events[4].type, "DELETED");
}

TEST(ObjectStoreTextKinds, SaveAndLoadKeepTheirBytes) {
  ObjectStore s;
  s.SetTextKinds({"Event"});
  s.PutText("Event", "ns", "b", WireTextAround(EventJson("b")));
  s.Put("Event", "", "c", {{"kind", "Event"}, {"metadata", {{"name", "c"}}}});  // no namespace
  std::string saved;
  s.AppendSaved(saved);
  EXPECT_EQ(saved, s.Save().dump());
  ObjectStore t;
  t.SetTextKinds({"Event"});
  t.Load(Json::parse(saved));
  EXPECT_TRUE(t.All("Event").at({"ns", "b"}).stored().compacted());
  std::string again;
  t.AppendSaved(again);
  EXPECT_EQ(again, saved);
}

TEST(WireTextAround, SplitsAtTheVersionWhereverItGoes) {
  for (const Json& obj :
       {Json{{"metadata", {{"name", "x"}}}}, Json{{"metadata", {{"uid", "u"}}}},
        Json{{"metadata", {{"resourceVersion", "7"}, {"zz", 1}}}, {"a", 1}, {"z", {1, 2}}},
        Json{{"metadata", Json::object()}}, Json{{"kind", "Event"}}}) {
    const VersionedText t = WireTextAround(obj);
    Json want = obj;
    want["metadata"]["resourceVersion"] = "123";
    EXPECT_EQ(t.head + "\"123\"" + t.tail, kube::WireJson(want)) << obj.dump();
  }
}

}  // namespace event_text_test
}  // namespace arbiter::server
