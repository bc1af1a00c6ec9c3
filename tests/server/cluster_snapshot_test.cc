// Cluster snapshots keep the work model's state of the live workloads only (so a snapshot, and a
// start-up, does not grow with every pod ever run), and a restored cluster given the same
// mutations behaves as the one that was saved.
#include "server/durability/cluster_snapshot.h"

#include <gtest/gtest.h>

#include "core/serial.h"
#include "server/cluster_fixtures.h"

namespace arbiter::server {
namespace {

using namespace fixtures;

Json Header(const std::string& snapshot) {
  const size_t nl = snapshot.find('\n');
  const size_t nl2 = snapshot.find('\n', nl + 1);
  const size_t len = std::stoull(snapshot.substr(nl + 1, nl2 - nl - 1));
  return Json::parse(snapshot.substr(nl2 + 1, len));
}

void Apply(Cluster& c, const Mutation& m) {
  const MutationResult r = c.Apply(m);
  ASSERT_TRUE(r.ok()) << r.error->message;
}

TEST(ClusterSnapshot, OnlyTheLiveWorkloadsWorkStateIsSavedAndRestoredRunsGoOnTheSame) {
  Cluster a("0000abcd");
  Apply(a, Create(kT0, Namespace("team-a")));
  Apply(a, Create(kT0, Node("n1", 8)));
  // 40 one-GPU pods of 10 s: 8 run at a time; then 6 more of 1 h, and one waiting.
  for (int i = 0; i < 40; ++i)
    Apply(a, Create(kT0, PodIn("team-a", "s" + std::to_string(i), 1, "10s")));
  for (int k = 1; k <= 5; ++k) Apply(a, Advance(kT0 + k * 10000));
  for (int i = 0; i < 7; ++i)
    Apply(a, Create(kT0 + 60000, PodIn("team-a", "l" + std::to_string(i), 1, "1h")));
  Apply(a, Create(kT0 + 60000, PodIn("team-a", "wide", 8, "1h")));

  const std::string snap = a.Snapshot();
  const Json h = Header(snap);
  EXPECT_EQ(h.at("workCount"), 48);
  EXPECT_EQ(h.at("liveWorks").size(), 8u);  // l0..l6 and wide; the 40 finished ones are gone
  EXPECT_FALSE(h.contains("works"));

  Cluster b("0000abcd");
  ASSERT_TRUE(b.Restore(snap).ok());
  // The same mutations on both: the running pods end on their timers, the wide one starts.
  for (Cluster* c : {&a, &b}) {
    Apply(*c, Delete(kT0 + 70000, "Pod", "team-a", "l0"));
    Apply(*c, Advance(kT0 + 70000 + 30000));
    Apply(*c, Create(kT0 + 200000, PodIn("team-a", "late", 1, "1s")));
    Apply(*c, Advance(kT0 + 60000 + 3600000));
    Apply(*c, Advance(kT0 + 60000 + 7200000));
  }
  EXPECT_EQ(a.store().Save(), b.store().Save());
  EXPECT_EQ(a.decision_digest(), b.decision_digest());
  EXPECT_EQ(a.decision_count(), b.decision_count());
  EXPECT_EQ(b.store().Get("Pod", "team-a", "wide")->at("status").value("phase", ""), "Succeeded");
  EXPECT_EQ(Header(a.Snapshot()).at("liveWorks").size(), 0u);
}

// The header is streamed (its long arrays written element by element, in two passes: counted,
// then written), not made as one JSON tree and one string: its bytes are still exactly the JSON
// text nlohmann writes for it, and its length is the one announced.
TEST(ClusterSnapshot, TheStreamedHeaderIsTheJsonTextOfItsValues) {
  Cluster a("0000abcd");
  Apply(a, Create(kT0, Namespace("team-a")));
  Apply(a, Create(kT0, Node("n1", 8)));
  for (int i = 0; i < 12; ++i)
    Apply(a, Create(kT0, PodIn("team-a", "s" + std::to_string(i), 1, "10s")));
  Apply(a, Advance(kT0 + 10000));                        // 8 done (still stored), 4 running
  Apply(a, Delete(kT0 + 11000, "Pod", "team-a", "s9"));  // terminating: its timer waits

  const std::string snap = a.Snapshot();
  const size_t nl = snap.find('\n');
  const size_t nl2 = snap.find('\n', nl + 1);
  const size_t len = std::stoull(snap.substr(nl + 1, nl2 - nl - 1));
  const std::string text = snap.substr(nl2 + 1, len);
  const Json h = Json::parse(text);
  EXPECT_EQ(h.dump(), text);
  for (const char* key : {"events", "pods", "finishedPods", "liveWorks", "timers"})
    EXPECT_GT(h.at(key).size(), 0u) << key;
  EXPECT_EQ(h.at("store").at("kinds").at("Pod").size(), 12u);
  // The engine's snapshot follows the header.
  EXPECT_EQ(snap.substr(nl2 + 1 + len), a.engine().Snapshot());

  // In pieces: the same bytes; a sink's false stops the writing.
  const auto capture = a.CaptureSnapshot();
  std::string joined;
  int pieces = 0;
  EXPECT_TRUE(capture->Write([&](std::string_view p) {
    joined.append(p);
    ++pieces;
    return true;
  }));
  EXPECT_EQ(joined, snap);
  int given = 0;
  EXPECT_FALSE(capture->Write([&](std::string_view) { return ++given < 2; }));
  EXPECT_EQ(given, 2);
  EXPECT_GT(pieces, 2);
}

// A capture is the cluster at its instant (its pods' keys and work model frozen, not copied):
// what changes after it (pods created, finished, deleted; timers armed, fired, cancelled) never
// shows in its bytes, with several captures alive at once. Over 1,024 pods: several chunks each.
TEST(ClusterSnapshot, ACaptureNeverSeesLaterChanges) {
  Cluster a("0000abcd");
  Apply(a, Create(kT0, Namespace("team-a")));
  for (int n = 0; n < 80; ++n) Apply(a, Create(kT0, Node("n" + std::to_string(n), 8)));
  const char* durations[] = {"10s", "1h", ""};
  for (int i = 0; i < 1100; ++i)
    Apply(a, Create(kT0, PodIn("team-a", "p" + std::to_string(i), 0, durations[i % 3])));
  const std::string first = a.Snapshot();
  const auto capture1 = a.CaptureSnapshot();
  Apply(a, Advance(kT0 + 10000));  // a third finish
  for (int i = 1; i < 1100; i += 7)
    Apply(a, Delete(kT0 + 11000, "Pod", "team-a", "p" + std::to_string(i)));
  const std::string second = a.Snapshot();
  const auto capture2 = a.CaptureSnapshot();
  for (int i = 0; i < 300; ++i)
    Apply(a, Create(kT0 + 12000, PodIn("team-a", "q" + std::to_string(i), 0, "5s")));
  for (int i = 0; i < 1100; i += 5) {
    const std::string name = "p" + std::to_string(i);
    if (a.store().Get("Pod", "team-a", name)) Apply(a, Delete(kT0 + 13000, "Pod", "team-a", name));
  }
  Apply(a, Advance(kT0 + 3600000));
  EXPECT_NE(a.Snapshot(), second);
  EXPECT_NE(second, first);
  EXPECT_EQ(capture1->Bytes(), first);
  EXPECT_EQ(capture2->Bytes(), second);
  Cluster b("0000abcd");
  ASSERT_TRUE(b.Restore(capture2->Bytes()).ok());
  EXPECT_EQ(b.Snapshot(), second);
}

// Sealing a body taken by value gives the bytes sealing a view of it gives.
TEST(ClusterSnapshot, SealingATakenBodyGivesTheSameBytes) {
  const std::string body(5000, 'x');
  EXPECT_EQ(serial::Seal("engine", 7, std::string(body)), serial::Seal("engine", 7, body));
}

}  // namespace
}  // namespace arbiter::server
