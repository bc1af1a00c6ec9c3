// kill -9 of `arbiter serve` under concurrent creates, at seeded random moments, several rounds
// on one data directory: after each restart every acknowledged create is present exactly once,
// the engine's invariants hold, and at the end the daemon's state (resourceVersion, scheduling
// decisions) equals one uninterrupted replay of the journal.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "server/durability/journal.h"
#include "server/serve_process.h"
#include "server/state/cluster.h"

namespace arbiter::testing {
namespace {

using server::Json;

std::string PodJson(const std::string& name) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "250m"}}}}}}}}}}}
      .dump();
}

Json State(const ServeProcess& s) {
  httplib::Client c("127.0.0.1", s.port());
  auto r = c.Get("/debug/arbiter/state");
  if (!r || r->status != 200) return nullptr;
  return Json::parse(r->body);
}

std::map<std::string, int> PodNames(const ServeProcess& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(30);
  auto r = c.Get("/api/v1/namespaces/default/pods");
  std::map<std::string, int> names;
  EXPECT_TRUE(r && r->status == 200)
      << (r ? std::to_string(r->status) : httplib::to_string(r.error()));
  if (!r || r->status != 200) return names;
  const Json list = Json::parse(r->body);
  for (const auto& p : list["items"]) ++names[p["metadata"]["name"].get<std::string>()];
  return names;
}

// A node, then `rounds` rounds of: restart, check that what was acknowledged is there once and
// the invariants hold, creates from 8 clients, kill -9 at a seeded random moment. Returns the
// acknowledged pod names.
std::set<std::string> CrashRounds(const std::filesystem::path& dir,
                                  const std::string& snapshot_every, int rounds) {
  std::mt19937 rng(20261201);
  std::set<std::string> acked;
  std::mutex mu;
  const std::vector<std::string> flags = {"--check-invariants", "--snapshot-every", snapshot_every,
                                          "--snapshot-growth", "0"};
  {
    ServeProcess s(dir, flags);
    EXPECT_TRUE(s.Start()) << s.log();
    httplib::Client c("127.0.0.1", s.port());
    auto node = c.Post("/api/v1/nodes",
                       Json{{"apiVersion", "v1"},
                            {"kind", "Node"},
                            {"metadata", {{"name", "n1"}}},
                            {"status", {{"capacity", {{"cpu", "64"}, {"memory", "256Gi"}}}}}}
                           .dump(),
                       "application/json");
    EXPECT_TRUE(node && node->status == 201);
    s.Kill9();
  }
  for (int round = 0; round < rounds; ++round) {
    ServeProcess s(dir, flags);
    EXPECT_TRUE(s.Start()) << s.log();
    // What earlier rounds acknowledged is there, once.
    auto names = PodNames(s);
    for (const auto& n : acked) EXPECT_EQ(names[n], 1) << "round " << round << ": " << n;
    Json st = State(s);
    EXPECT_FALSE(st.is_null());
    if (!st.is_null()) {
      EXPECT_EQ(st["invariants"], "ok");
    }
    // Creates from 8 clients until the kill.
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int t = 0; t < 8; ++t)
      clients.emplace_back([&, t] {
        httplib::Client c("127.0.0.1", s.port());
        c.set_connection_timeout(2);
        c.set_read_timeout(5);
        for (int i = 0; !stop; ++i) {
          const std::string name =
              "r" + std::to_string(round) + "-c" + std::to_string(t) + "-" + std::to_string(i);
          auto r = c.Post("/api/v1/namespaces/default/pods", PodJson(name), "application/json");
          if (r && r->status == 201) {
            std::lock_guard<std::mutex> l(mu);
            acked.insert(name);
          } else if (!r) {
            break;
          }
        }
      });
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 600)(rng)));
    s.Kill9();
    stop = true;
    for (auto& th : clients) th.join();
  }
  return acked;
}

TEST(ServeCrashTest, KillNineUnderConcurrentCreatesLosesNoAcknowledgedCreate) {
  const auto dir = ScratchDir("crash");
  const std::set<std::string> acked = CrashRounds(dir, "0", 4);
  // The last restart: everything acknowledged, invariants, and the same state as an uninterrupted
  // replay of the whole journal.
  ServeProcess s(dir, {"--check-invariants", "--snapshot-every", "0"});
  ASSERT_TRUE(s.Start()) << s.log();
  auto names = PodNames(s);
  size_t present = 0;
  for (const auto& n : acked) {
    EXPECT_EQ(names[n], 1) << n;
    present += names[n] == 1;
  }
  EXPECT_EQ(present, acked.size());
  EXPECT_GT(acked.size(), 20u);
  Json st = State(s);
  ASSERT_FALSE(st.is_null());
  EXPECT_EQ(st["invariants"], "ok");
  ASSERT_EQ(s.Stop(), 0) << s.log();

  auto journal = server::Journal::Open((dir / "data").string());
  ASSERT_TRUE(journal.ok()) << journal.message();
  server::Cluster replay(journal.value()->instance_id());
  Status r = journal.value()->Replay(0, [&](int64_t, const std::string& text) -> Status {
    auto m = server::Mutation::Decode(text);
    if (!m.ok()) return m.status();
    server::MutationResult res = replay.Apply(m.value());
    return res.ok() ? Status::Ok() : Status::Internal(res.error->message);
  });
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(std::to_string(replay.decision_digest()), st["decisionDigest"].get<std::string>());
  EXPECT_EQ(replay.store().resource_version(), st["resourceVersion"].get<int64_t>());
  EXPECT_TRUE(replay.engine().CheckInvariants().ok());
}

// The same with a snapshot (and journal compaction) every 25 records, so kills also land while
// a snapshot is written: nothing acknowledged is lost, and two restarts from the compacted
// journal reach the same state (the snapshot restores what the replay would have built).
TEST(ServeCrashTest, KillNineWhileSnapshottingLosesNothingAndRestartsAreDeterministic) {
  const auto dir = ScratchDir("crash-snapshots");
  const std::set<std::string> acked = CrashRounds(dir, "25", 4);
  EXPECT_GT(acked.size(), 20u);
  Json first;
  for (int restart = 0; restart < 2; ++restart) {
    ServeProcess s(dir, {"--check-invariants", "--snapshot-every", "0"});
    ASSERT_TRUE(s.Start()) << s.log();
    auto names = PodNames(s);
    for (const auto& n : acked) EXPECT_EQ(names[n], 1) << n;
    Json st = State(s);
    ASSERT_FALSE(st.is_null());
    EXPECT_EQ(st["invariants"], "ok");
    if (restart == 0) {
      first = st;
      EXPECT_TRUE(first["startup"].value("fromSnapshot", false)) << first;
    } else {
      EXPECT_EQ(st["decisionDigest"], first["decisionDigest"]);
      EXPECT_EQ(st["resourceVersion"], first["resourceVersion"]);
    }
    s.Kill9();
  }
}

}  // namespace
}  // namespace arbiter::testing
