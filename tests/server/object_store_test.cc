// The store's compact form: objects of the compact kinds beyond the hot ones are kept as their
// wire text and read back as the same tree, the same bytes, through every way of reading.
#include "server/state/object_store.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "adapters/kube/status.h"

namespace arbiter::server {
namespace object_store_test {

Json PodJson(int i) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "p" + std::to_string(i)},
                {"namespace", "ns"},
                {"labels", {{"app", "x"}, {"i", std::to_string(i)}}},
                {"annotations", {{"note", "caf\u00e9 \"quoted\"\n"}}}}},
              {"spec",
               {{"containers",
                 Json::array({{{"name", "main"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})},
                {"priority", -3},
                {"ratio", 0.25},
                {"big", 18446744073709551615ull},
                {"empty", Json::object()},
                {"none", nullptr}}}};
}

// The object as Put stores it (with its resourceVersion).
Json Versioned(Json j, int64_t rv) {
  j["metadata"]["resourceVersion"] = std::to_string(rv);
  return j;
}

TEST(ObjectStoreCompact, ColdObjectsReadBackAsStored) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 2);
  for (int i = 0; i < 6; ++i) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  s.Put("Node", "", "n", Json{{"metadata", {{"name", "n"}}}});
  s.Trim();
  EXPECT_EQ(s.hot_trees(), 2u);
  EXPECT_TRUE(s.All("Pod").at({"ns", "p0"}).stored().compacted());
  EXPECT_FALSE(s.All("Pod").at({"ns", "p5"}).stored().compacted());
  EXPECT_FALSE(s.All("Node").at({"", "n"}).stored().compacted());  // not a compact kind
  for (int i = 0; i < 6; ++i) {
    const Json want = Versioned(PodJson(i), i + 1);
    const StoredRef& ref = s.All("Pod").at({"ns", "p" + std::to_string(i)});
    EXPECT_EQ(*ref.json_ptr(), want) << i;                          // parsed, not kept
    EXPECT_EQ(ref.stored().WireText(), kube::WireJson(want)) << i;  // the same bytes
    EXPECT_EQ(*s.Share("Pod", "ns", "p" + std::to_string(i)), want) << i;
    ASSERT_NE(s.Get("Pod", "ns", "p" + std::to_string(i)), nullptr);
    EXPECT_EQ(*s.Get("Pod", "ns", "p" + std::to_string(i)), want) << i;  // kept till Trim
  }
  EXPECT_EQ(s.hot_trees(), 6u);
  s.Trim();
  EXPECT_EQ(s.hot_trees(), 2u);
  // The two read last are the hot ones.
  EXPECT_FALSE(s.All("Pod").at({"ns", "p5"}).stored().compacted());
  EXPECT_FALSE(s.All("Pod").at({"ns", "p4"}).stored().compacted());
  EXPECT_TRUE(s.All("Pod").at({"ns", "p3"}).stored().compacted());
}

TEST(ObjectStoreCompact, WatchEventsOfColdObjects) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 1);
  s.Put("Pod", "ns", "p0", PodJson(0));
  s.Put("Pod", "ns", "p1", PodJson(1));
  ASSERT_TRUE(s.Remove("Pod", "ns", "p1"));
  std::vector<WatchEvent> events = s.TakeEvents();
  s.Trim();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(*events[0].object.tree(), Versioned(PodJson(0), 1));
  EXPECT_EQ(events[0].object.WireText(), kube::WireJson(Versioned(PodJson(0), 1)));
  EXPECT_EQ(events[2].type, "DELETED");
  EXPECT_EQ(*events[2].object.tree(), Versioned(PodJson(1), 3));
  EXPECT_EQ(EventObject().WireText(), "null");
}

TEST(ObjectStoreCompact, SaveAndLoadKeepTheObjects) {
  ObjectStore a;
  a.SetCompact({"Pod"}, 1);
  for (int i = 0; i < 4; ++i) a.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  a.Trim();
  const Json saved = a.Save();
  ObjectStore b;
  b.SetCompact({"Pod"}, 1);
  b.Load(Json(saved));
  EXPECT_EQ(b.hot_trees(), 1u);  // trimmed as loaded
  EXPECT_EQ(b.Save(), saved);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(*b.Share("Pod", "ns", "p" + std::to_string(i)), Versioned(PodJson(i), i + 1));
}

TEST(ObjectStoreCompact, IndexesReadColdObjects) {
  ObjectStore s;
  s.AddIndex("Pod", [](const Json& o) { return o.at("metadata").at("labels").value("app", ""); });
  s.SetCompact({"Pod"}, 1);
  for (int i = 0; i < 3; ++i) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  s.Trim();
  EXPECT_EQ(s.ByIndex("Pod", "x").size(), 3u);
  s.Trim();
  Json moved = PodJson(0);
  moved["metadata"]["labels"]["app"] = "y";  // the index reads the old (cold) object
  s.Put("Pod", "ns", "p0", moved);
  EXPECT_EQ(s.ByIndex("Pod", "x").size(), 2u);
  EXPECT_EQ(s.ByIndex("Pod", "y").size(), 1u);
}

// A kind may have several indexes: each gives its own objects, in key order (of one namespace or
// all), follows writes and removals, and only the tracked ones report their touched values.
TEST(ObjectStoreIndexes, ASecondIndexListsItsObjectsInKeyOrder) {
  ObjectStore s;
  s.AddIndex("Pod", [](const Json& o) { return o.at("metadata").at("labels").value("app", ""); });
  s.AddIndex("Pod", PodNodeName, false);
  s.SetCompact({"Pod"}, 1);
  const auto on = [](int i, const std::string& ns, const std::string& node) {
    Json pod = PodJson(i);
    pod["metadata"]["namespace"] = ns;
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    return pod;
  };
  s.Put("Pod", "b", "p1", on(1, "b", "n1"));
  s.Put("Pod", "a", "p2", on(2, "a", "n1"));
  s.Put("Pod", "a", "p0", on(0, "a", "n2"));
  s.Put("Pod", "a", "p3", on(3, "a", ""));  // unbound: in no node's list
  s.Trim();
  const auto names = [&](const std::string& node, const std::string& ns) {
    std::vector<std::string> out;
    for (const StoredRef& o : s.StoredByIndex("Pod", PodNodeName, node, ns))
      out.push_back(o->at("metadata").at("namespace").get<std::string>() + "/" +
                    o->at("metadata").at("name").get<std::string>());
    return out;
  };
  EXPECT_EQ(names("n1", ""), (std::vector<std::string>{"a/p2", "b/p1"}));
  EXPECT_EQ(names("n1", "b"), (std::vector<std::string>{"b/p1"}));
  EXPECT_EQ(names("n2", ""), (std::vector<std::string>{"a/p0"}));
  EXPECT_TRUE(names("n3", "").empty());
  EXPECT_EQ(s.ByIndex("Pod", "x").size(), 4u);  // the first index: by app
  EXPECT_EQ(s.TakeTouched("Pod"), (std::set<std::string>{"x"}));
  s.Put("Pod", "a", "p2", on(2, "a", "n2"));  // moved (read from its cold tree)
  s.Put("Pod", "a", "p3", on(3, "a", "n2"));  // bound
  EXPECT_TRUE(s.Remove("Pod", "a", "p0"));
  EXPECT_EQ(names("n1", ""), (std::vector<std::string>{"b/p1"}));
  EXPECT_EQ(names("n2", ""), (std::vector<std::string>{"a/p2", "a/p3"}));
  EXPECT_EQ(s.TakeTouched("Pod"), (std::set<std::string>{"x"}));
  const Json saved = s.Save();
  ObjectStore loaded;
  loaded.AddIndex("Pod", PodNodeName, false);
  loaded.Load(Json(saved));
  EXPECT_EQ(loaded.StoredByIndex("Pod", PodNodeName, "n2").size(), 2u);
}

// A Pod's text is kept packed (packed_text.h), made once, and written back byte for byte by every
// way of writing it; other kinds keep their plain text.
TEST(ObjectStoreCompact, PodTextIsKeptPacked) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 1);
  for (int i = 0; i < 3; ++i) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  s.Put("Node", "", "n", Json{{"metadata", {{"name", "n"}}}});
  s.Trim();
  for (int i = 0; i < 3; ++i) {
    const StoredObject& o = s.All("Pod").at({"ns", "p" + std::to_string(i)}).stored();
    const std::string want = kube::WireJson(Versioned(PodJson(i), i + 1));
    EXPECT_TRUE(o.packed());
    EXPECT_EQ(o.WireText(), want) << i;
    std::string appended = "[";
    o.AppendWireText(appended);
    EXPECT_EQ(appended, "[" + want) << i;
    EXPECT_GT(o.kept_text_bytes(), 0u) << i;
    EXPECT_LT(o.kept_text_bytes(), want.size()) << i;
  }
  const StoredObject& node = s.All("Node").at({"", "n"}).stored();
  EXPECT_FALSE(node.packed());
  EXPECT_EQ(node.WireText(), kube::WireJson(*s.Get("Node", "", "n")));
  EXPECT_EQ(node.kept_text_bytes(), node.WireText().size());
}

// WireTextSize (what a list sizes its body by) is the length of the text written, in every state
// of an object: hot with its text not made yet, hot with a packed text, cold, and of a kind that
// keeps plain text (made by the first read, or not yet).
TEST(ObjectStoreCompact, WireTextSizeIsTheTextsLength) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 2);
  for (int i = 0; i < 5; ++i) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  s.Put("Node", "", "n", Json{{"metadata", {{"name", "n\u00e9"}}}});
  s.Put("Node", "", "m", Json{{"metadata", {{"name", "m"}}}});
  const StoredObject& fresh = s.All("Pod").at({"ns", "p4"}).stored();  // text not made yet
  EXPECT_EQ(fresh.kept_text_bytes(), 0u);
  EXPECT_EQ(fresh.WireTextSize(), kube::WireJson(Versioned(PodJson(4), 5)).size());
  s.Trim();
  for (int i = 0; i < 5; ++i) {
    const StoredObject& o = s.All("Pod").at({"ns", "p" + std::to_string(i)}).stored();
    EXPECT_EQ(o.WireTextSize(), kube::WireJson(Versioned(PodJson(i), i + 1)).size()) << i;
    EXPECT_EQ(o.WireTextSize(), o.WireText().size()) << i;
  }
  const StoredObject& m = s.All("Node").at({"", "m"}).stored();
  EXPECT_EQ(m.kept_text_bytes(), 0u);
  EXPECT_EQ(m.WireTextSize(), kube::WireJson(*s.Get("Node", "", "m")).size());  // made here
  const StoredObject& n = s.All("Node").at({"", "n"}).stored();
  EXPECT_EQ(n.WireText(), kube::WireJson(*s.Get("Node", "", "n")));  // made first
  EXPECT_EQ(n.WireTextSize(), n.WireText().size());
}

// A removed object's last state (the DELETED event) can be sealed: its text made, its tree let
// go (WatchLog::Publish does it, so a removed Event's tree is not kept by the watch history), and
// it reads back the same.
TEST(ObjectStoreCompact, SealedDeletedObjectsReadBackTheSame) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 4);
  s.Put("Event", "ns", "e", Json{{"metadata", {{"name", "e"}}}, {"message", "caf\u00e9"}});
  s.Put("Pod", "ns", "p0", PodJson(0));
  ASSERT_TRUE(s.Remove("Event", "ns", "e"));
  ASSERT_TRUE(s.Remove("Pod", "ns", "p0"));
  std::vector<WatchEvent> events = s.TakeEvents();
  ASSERT_EQ(events.size(), 4u);
  for (size_t i : {2u, 3u}) {
    ASSERT_EQ(events[i].type, "DELETED");
    const Json tree = *events[i].object.tree();
    const std::string text = events[i].object.WireText();
    events[i].object.Seal();
    EXPECT_EQ(events[i].object.WireText(), text) << i;
    EXPECT_EQ(*events[i].object.tree(), tree) << i;
  }
  EXPECT_EQ(events[2].object.tree()->at("message"), "caf\u00e9");
}

// A capture (Capture: the chunks of each kind shared, no object copied) writes the store as it
// was when taken, Save()'s very bytes, whatever is put, replaced or removed after it, in a kind it
// shares or a new one; the store reads on as changed.
// Its Size() (counted from the objects' text lengths, no text made) is the length of those bytes,
// whether an object keeps its text packed (Pods), plain (Nodes) or as text alone (Events).
TEST(ObjectStoreCapture, ACaptureWritesTheStoreAsItWasWhenTaken) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 8);
  s.SetTextKinds({"Event"});
  for (int i = 0; i < 600; ++i) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(i));
  s.Put("Node", "", "n", Json{{"metadata", {{"name", "n"}}}});
  s.PutText(
      "Event", "ns", "ev",
      WireTextAround(Json{{"metadata", {{"name", "ev"}}}, {"message", "caf\u00e9 \"quoted\""}}));
  s.Trim();
  const std::string then = s.Save().dump();
  const ObjectStore::Saved capture = s.Capture();
  for (int i = 0; i < 600; i += 7) ASSERT_TRUE(s.Remove("Pod", "ns", "p" + std::to_string(i)));
  for (int i = 1; i < 600; i += 5) s.Put("Pod", "ns", "p" + std::to_string(i), PodJson(-i));
  for (int i = 600; i < 900; ++i) s.Put("Pod", "ns2", "p" + std::to_string(i), PodJson(i));
  s.Put("Event", "ns", "e", Json{{"metadata", {{"name", "e"}}}});
  const std::string now = s.Save().dump();
  const ObjectStore::Saved later = s.Capture();
  s.Put("Pod", "ns", "p1", PodJson(1));
  EXPECT_EQ(capture.Size(), then.size());
  std::string bytes;
  capture.Append(bytes);
  EXPECT_EQ(bytes, then);
  bytes.clear();
  later.Append(bytes);
  EXPECT_EQ(bytes, now);
  EXPECT_EQ(s.Get("Pod", "ns", "p0"), nullptr);
  EXPECT_EQ(s.Get("Pod", "ns", "p1")->at("spec").at("priority"), -3);
  EXPECT_EQ(s.List("Pod", "ns2").size(), 300u);
  // 86 removed, of which 17 put back (21, 56, ... 581), and 300 new.
  EXPECT_EQ(s.ListStored("Pod", "").size(), 600u - 86u + 17u + 300u);
}

// A removed object's DELETED event is written from the stored tree with the new resourceVersion,
// not from a copy: the same bytes and tree as the copy's, for a hot and a cold Pod and an Event
// whose other members hold a "resourceVersion" too.
TEST(ObjectStoreCompact, DeletedObjectsAreTheLastStateWithTheNewVersion) {
  ObjectStore s;
  s.SetCompact({"Pod"}, 1);
  const Json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"involvedObject", {{"kind", "Pod"}, {"name", "p0"}, {"resourceVersion", "1"}}},
      {"metadata",
       {{"name", "e"},
        {"namespace", "ns"},
        {"annotations", {{"resourceVersion", "2"}}},
        {"uid", "u-1"},
        {"creationTimestamp", "2026-12-01T10:24:02Z"}}},
      {"message", "caf\u00e9 \"resourceVersion\":\"2\""}};
  s.Put("Pod", "ns", "p0", PodJson(0));  // 1
  s.Put("Event", "ns", "e", event);      // 2
  s.Put("Pod", "ns", "p1", PodJson(1));  // 3
  s.Trim();                              // p0 is cold, p1 hot
  ASSERT_TRUE(s.All("Pod").at({"ns", "p0"}).stored().compacted());
  ASSERT_TRUE(s.Remove("Pod", "ns", "p0"));   // 4
  ASSERT_TRUE(s.Remove("Event", "ns", "e"));  // 5
  ASSERT_TRUE(s.Remove("Pod", "ns", "p1"));   // 6
  std::vector<WatchEvent> events = s.TakeEvents();
  ASSERT_EQ(events.size(), 6u);
  const Json want[] = {Versioned(PodJson(0), 4), Versioned(event, 5), Versioned(PodJson(1), 6)};
  for (size_t i = 0; i < 3; ++i) {
    const WatchEvent& e = events[3 + i];
    EXPECT_EQ(e.type, "DELETED");
    EXPECT_EQ(e.resource_version, static_cast<int64_t>(4 + i));
    EXPECT_EQ(e.object.WireText(), kube::WireJson(want[i])) << i;
    EXPECT_EQ(*e.object.tree(), want[i]) << i;
  }
  EXPECT_EQ(events[5].object.tree()->at("metadata").at("labels").at("i"), "1");
}

}  // namespace object_store_test
}  // namespace arbiter::server
