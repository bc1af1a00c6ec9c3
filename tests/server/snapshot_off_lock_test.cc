// Snapshots off the request path (issue 27): the daemon captures the state under its lock and
// makes and stores the snapshot's bytes on its snapshot thread, so a create completes while a
// snapshot is being written; a snapshot taken while creates go on restores, with the records
// after it, to exactly the acknowledged state.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "server/daemon.h"

namespace arbiter::server {
namespace snapshot_off_lock_test {

std::filesystem::path Dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("arbiter-snapshot-off-lock-test-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(p);
  return p;
}

Mutation CreateOf(const Json& obj) {
  Mutation m;
  m.op = Mutation::Op::kCreate;
  m.kind = obj.at("kind");
  m.namespace_ = obj["metadata"].value("namespace", "");
  m.object = obj;
  return m;
}

Json Node(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status", {{"capacity", {{"cpu", "256"}, {"memory", "1Ti"}}}}}};
}

Json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}};
}

// The snapshot thread stops in the hook until the test lets it go.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false;
  void Hook() {
    std::unique_lock<std::mutex> l(mu);
    entered = true;
    cv.notify_all();
    cv.wait(l, [&] { return open; });
  }
  bool WaitEntered() {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(60), [&] { return entered; });
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu);
    open = true;
    cv.notify_all();
  }
};

// While the snapshot thread holds a capture of 2,000 pods (stopped in the hook, before its bytes
// are made), creates are applied, journaled and acknowledged: the lock is not held for the
// serialization. The restart restores that snapshot and replays the creates made after it.
TEST(SnapshotOffLockTest, CreatesCompleteWhileASnapshotIsBeingWritten) {
  const auto dir = Dir("during");
  Gate gate;
  Json saved;
  int64_t during_seq = 0, last_seq = 0;
  {
    auto d = Daemon::Open({dir.string(), nullptr, 0, false});
    ASSERT_TRUE(d.ok()) << d.message();
    d.value()->SetSnapshotHook([&] { gate.Hook(); });
    ASSERT_TRUE(d.value()->Mutate(CreateOf(Node("n1"))).ok());
    for (int i = 0; i < 2000; ++i)
      ASSERT_TRUE(d.value()->Mutate(CreateOf(Pod("p" + std::to_string(i)))).ok());
    const int64_t captured_seq = d.value()->journal().last_seq();
    auto snapshot = std::async(std::launch::async, [&] { d.value()->SnapshotNow(); });
    ASSERT_TRUE(gate.WaitEntered());
    // Bounded waits only so that a regression fails instead of hanging the suite.
    auto create = std::async(std::launch::async,
                             [&] { return d.value()->Mutate(CreateOf(Pod("during"))).ok(); });
    const bool done = create.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
    EXPECT_TRUE(done) << "a create waited for the snapshot being written";
    if (done) {
      EXPECT_TRUE(create.get());
      during_seq = d.value()->journal().last_seq();
      EXPECT_GT(during_seq, captured_seq);
      EXPECT_EQ(d.value()->journal().durable_seq(), during_seq);
    }
    gate.Open();
    snapshot.get();
    EXPECT_EQ(d.value()->snapshot_stats().stored, 1u) << d.value()->snapshot_stats().last_error;
    saved = d.value()->Read([](const Cluster& c) { return c.store().Save(); });
    last_seq = d.value()->journal().last_seq();
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "snapshot.bin"));
  auto d = Daemon::Open({dir.string(), nullptr, 0, false});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(d.value()->startup().from_snapshot);
  EXPECT_LT(d.value()->startup().snapshot_seq, during_seq);  // the create was not in it
  EXPECT_EQ(d.value()->startup().replayed, last_seq - d.value()->startup().snapshot_seq);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return c.store().Save(); }), saved);
}

// The engine's part of the snapshot is encoded on the snapshot thread from the copy taken under
// the lock (Engine::Capture): pods created while the snapshot thread waits change the engine, not
// the snapshot, which ends with exactly the engine's snapshot bytes of the captured state.
TEST(SnapshotOffLockTest, TheEngineIsSnapshottedAsCapturedNotAsWritten) {
  const auto dir = Dir("engine");
  Gate gate;
  std::string engine_at_capture, engine_after;
  {
    // A fixed clock: nothing but the creates changes the engine.
    auto d = Daemon::Open({dir.string(), [] { return Millis{1700000000000}; }, 0, false});
    ASSERT_TRUE(d.ok()) << d.message();
    d.value()->SetSnapshotHook([&] { gate.Hook(); });
    ASSERT_TRUE(d.value()->Mutate(CreateOf(Node("n1"))).ok());
    for (int i = 0; i < 500; ++i)
      ASSERT_TRUE(d.value()->Mutate(CreateOf(Pod("p" + std::to_string(i)))).ok());
    engine_at_capture = d.value()->Read([](const Cluster& c) { return c.engine().Snapshot(); });
    auto snapshot = std::async(std::launch::async, [&] { d.value()->SnapshotNow(); });
    ASSERT_TRUE(gate.WaitEntered());
    for (int i = 0; i < 50; ++i)
      ASSERT_TRUE(d.value()->Mutate(CreateOf(Pod("during-" + std::to_string(i)))).ok());
    engine_after = d.value()->Read([](const Cluster& c) { return c.engine().Snapshot(); });
    gate.Open();
    snapshot.get();
    ASSERT_EQ(d.value()->snapshot_stats().stored, 1u) << d.value()->snapshot_stats().last_error;
  }
  std::ifstream in(dir / "snapshot.bin", std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(engine_at_capture, engine_after);
  ASSERT_GT(file.size(), engine_at_capture.size());
  EXPECT_TRUE(file.ends_with(engine_at_capture)) << "the snapshot has the engine of its capture";
}

// Eight writers create pods without pause while snapshots are taken every 150 records: each
// snapshot is captured between two creates and written while later ones are applied. A restart
// restores the last snapshot and replays the records after it into exactly the state that was
// acknowledged: every pod created, the same objects and resourceVersions, the same scheduling.
TEST(SnapshotOffLockTest, SnapshotsUnderConcurrentCreatesRestoreTheAcknowledgedState) {
  const auto dir = Dir("concurrent");
  Json saved;
  uint64_t digest = 0;
  int64_t last_seq = 0;
  std::set<std::string> acknowledged;
  {
    auto d = Daemon::Open({dir.string(), nullptr, 150, true, 0});
    ASSERT_TRUE(d.ok()) << d.message();
    ASSERT_TRUE(d.value()->Mutate(CreateOf(Node("n1"))).ok());
    std::mutex mu;
    std::vector<std::thread> writers;
    for (int t = 0; t < 8; ++t)
      writers.emplace_back([&, t] {
        for (int i = 0; i < 150; ++i) {
          const std::string name = "w" + std::to_string(t) + "-" + std::to_string(i);
          if (d.value()->Mutate(CreateOf(Pod(name))).ok()) {
            std::lock_guard<std::mutex> l(mu);
            acknowledged.insert(name);
          }
        }
      });
    for (auto& w : writers) w.join();
    EXPECT_EQ(acknowledged.size(), 1200u);
    d.value()->SnapshotNow();  // waits for the automatic one in flight too
    EXPECT_GE(d.value()->snapshot_stats().stored, 3u);
    EXPECT_EQ(d.value()->snapshot_stats().failed, 0u);
    // A few creates after the last snapshot, for the replay.
    for (int i = 0; i < 20; ++i) {
      const std::string name = "after-" + std::to_string(i);
      ASSERT_TRUE(d.value()->Mutate(CreateOf(Pod(name))).ok());
      acknowledged.insert(name);
    }
    saved = d.value()->Read([](const Cluster& c) { return c.store().Save(); });
    digest = d.value()->Read([](const Cluster& c) { return c.decision_digest(); });
    last_seq = d.value()->journal().last_seq();
  }
  auto d = Daemon::Open({dir.string(), nullptr, 0, true});
  ASSERT_TRUE(d.ok()) << d.message();
  EXPECT_TRUE(d.value()->startup().from_snapshot);
  EXPECT_GE(d.value()->startup().replayed, 20);
  EXPECT_EQ(d.value()->startup().replayed, last_seq - d.value()->startup().snapshot_seq);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return c.store().Save(); }), saved);
  EXPECT_EQ(d.value()->Read([](const Cluster& c) { return c.decision_digest(); }), digest);
  const auto pods = d.value()->Read([](const Cluster& c) {
    std::set<std::string> names;
    for (const auto& [key, obj] : c.store().All("Pod")) names.insert(key.second);
    return names;
  });
  EXPECT_EQ(pods, acknowledged);
}

}  // namespace snapshot_off_lock_test
}  // namespace arbiter::server
