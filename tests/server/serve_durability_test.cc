// Durable before visible, against the real `arbiter serve`:
// - kill -9 under concurrent creates, GETs and a watch, at seeded random moments: after each
//   restart every acknowledged create is present exactly once, and so is every pod a client saw
//   (in a list or as a watch event) before the kill.
// - a failing disk: the daemon runs with RLIMIT_FSIZE (the kernel refuses to grow any of its
//   files past the limit, EFBIG, as a full filesystem refuses with ENOSPC; a tmpfs would need a
//   mount): the journal's writes fail under load, and the daemon turns read-only: 503 with a
//   Status saying why for every mutation after it, /readyz failing with the reason, the log
//   saying it once; every acknowledged create is shown and kept, none of the refused ones ever.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "server/serve_process.h"
#include "server/state/object_store.h"

namespace arbiter::testing {
namespace serve_durability_test {

using server::Json;

std::string PodJson(const std::string& name) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}}
      .dump();
}

std::string NodeJson(const std::string& name) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}}},
              {"status", {{"capacity", {{"cpu", "256"}, {"memory", "1Ti"}}}}}}
      .dump();
}

// Pod names in namespace default, with how often each is listed; nullopt if the list failed.
std::optional<std::map<std::string, int>> ListPods(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(30);
  auto r = c.Get("/api/v1/namespaces/default/pods");
  if (!r || r->status != 200) return std::nullopt;
  std::map<std::string, int> names;
  const Json list = Json::parse(r->body);  // (not a temporary: the loop reads into it)
  for (const auto& p : list["items"]) ++names[p["metadata"]["name"].get<std::string>()];
  return names;
}

// What clients learnt during a round: acknowledged creates, and pods seen by a GET or a watch.
struct Seen {
  std::mutex mu;
  std::set<std::string> acked, listed, watched;
};

// Creates from `creators` clients, lists from 2, one watch, until `stop`.
std::vector<std::thread> Load(int port, const std::string& prefix, int creators,
                              std::atomic<bool>& stop, Seen& seen) {
  std::vector<std::thread> threads;
  for (int t = 0; t < creators; ++t)
    threads.emplace_back([&, t, port, prefix] {
      httplib::Client c("127.0.0.1", port);
      c.set_connection_timeout(2);
      c.set_read_timeout(5);
      for (int i = 0; !stop; ++i) {
        const std::string name = prefix + "-c" + std::to_string(t) + "-" + std::to_string(i);
        auto r = c.Post("/api/v1/namespaces/default/pods", PodJson(name), "application/json");
        if (!r) break;
        if (r->status == 201) {
          std::lock_guard<std::mutex> l(seen.mu);
          seen.acked.insert(name);
        }
      }
    });
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, port] {
      while (!stop) {
        auto names = ListPods(port);
        if (!names) break;
        std::lock_guard<std::mutex> l(seen.mu);
        for (const auto& [n, count] : *names) seen.listed.insert(n);
      }
    });
  threads.emplace_back([&, port] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(5);
    std::string buffer;
    c.Get("/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=60",
          [&](const char* data, size_t n) {
            buffer.append(data, n);
            size_t at = 0, nl;
            while ((nl = buffer.find('\n', at)) != std::string::npos) {
              const Json ev = Json::parse(buffer.substr(at, nl - at), nullptr, false);
              at = nl + 1;
              if (ev.is_object() && ev.value("type", "") == "ADDED") {
                std::lock_guard<std::mutex> l(seen.mu);
                seen.watched.insert(ev["object"]["metadata"]["name"].get<std::string>());
              }
            }
            buffer.erase(0, at);
            return !stop.load();
          });
  });
  return threads;
}

TEST(ServeDurabilityTest, KillNineLosesNothingAnyClientSawOrWasAcknowledged) {
  const auto dir = ScratchDir("durability-kill");
  const std::vector<std::string> flags = {"--check-invariants", "--snapshot-every", "40",
                                          "--snapshot-growth", "0"};
  std::mt19937 rng(20261202);
  Seen seen;
  {
    ServeProcess s(dir, flags);
    ASSERT_TRUE(s.Start()) << s.log();
    httplib::Client c("127.0.0.1", s.port());
    auto node = c.Post("/api/v1/nodes", NodeJson("n1"), "application/json");
    ASSERT_TRUE(node && node->status == 201);
    ASSERT_EQ(s.Stop(), 0);
  }
  constexpr int kRounds = 6;
  for (int round = 0; round <= kRounds; ++round) {
    ServeProcess s(dir, flags);
    ASSERT_TRUE(s.Start()) << s.log();
    auto names = ListPods(s.port());
    ASSERT_TRUE(names);
    {
      std::lock_guard<std::mutex> l(seen.mu);
      for (const auto& n : seen.acked) EXPECT_EQ((*names)[n], 1) << "acknowledged: " << n;
      for (const auto& n : seen.listed) EXPECT_EQ((*names)[n], 1) << "listed: " << n;
      for (const auto& n : seen.watched) EXPECT_EQ((*names)[n], 1) << "watched: " << n;
    }
    if (round == kRounds) break;
    std::atomic<bool> stop{false};
    auto threads = Load(s.port(), "r" + std::to_string(round), 6, stop, seen);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(150, 700)(rng)));
    s.Kill9();
    stop = true;
    for (auto& t : threads) t.join();
  }
  std::lock_guard<std::mutex> l(seen.mu);
  EXPECT_GT(seen.acked.size(), 50u);
  EXPECT_FALSE(seen.listed.empty());
  EXPECT_FALSE(seen.watched.empty());
}

// The serve process with every file it writes limited to `bytes` (SIGXFSZ ignored, so a write
// past the limit fails with EFBIG instead of killing it).
void LimitFileSize(ServeProcess& s, rlim_t bytes) {
  s.in_child = [bytes] {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{bytes, bytes};
    setrlimit(RLIMIT_FSIZE, &lim);
  };
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ServeDurabilityTest, AFullDiskTurnsTheDaemonReadOnlyAndShowsOnlyWhatWasWritten) {
  const auto dir = ScratchDir("durability-full");
  ServeProcess s(dir, {"--check-invariants", "--snapshot-every", "0"});
  LimitFileSize(s, 768 * 1024);
  ASSERT_TRUE(s.Start()) << s.log();
  httplib::Client c("127.0.0.1", s.port());
  auto node = c.Post("/api/v1/nodes", NodeJson("n1"), "application/json");
  ASSERT_TRUE(node && node->status == 201);
  // Creates from 8 clients until each has been refused 20 times (bounded: 4,000 each).
  std::mutex mu;
  std::set<std::string> acked, refused;
  std::vector<std::string> bodies;
  std::atomic<int> after_refusal_acked{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t)
    clients.emplace_back([&, t] {
      httplib::Client cl("127.0.0.1", s.port());
      cl.set_read_timeout(30);
      int refusals = 0;
      for (int i = 0; i < 4000 && refusals < 20; ++i) {
        const std::string name = "p-" + std::to_string(t) + "-" + std::to_string(i);
        auto r = cl.Post("/api/v1/namespaces/default/pods", PodJson(name), "application/json");
        ASSERT_TRUE(r) << httplib::to_string(r.error());
        std::lock_guard<std::mutex> l(mu);
        if (r->status == 201) {
          acked.insert(name);
          if (refusals > 0) ++after_refusal_acked;
        } else {
          EXPECT_EQ(r->status, 503) << r->body;
          refused.insert(name);
          if (bodies.size() < 3) bodies.push_back(r->body);
          ++refusals;
        }
      }
    });
  for (auto& t : clients) t.join();
  ASSERT_FALSE(refused.empty()) << "the journal never filled the limit";
  EXPECT_GT(acked.size(), 0u);
  EXPECT_EQ(after_refusal_acked.load(), 0) << "a create was acknowledged after a refusal";
  for (const auto& b : bodies) {
    const Json st = Json::parse(b);
    EXPECT_EQ(st["kind"], "Status");
    EXPECT_EQ(st["code"], 503);
    EXPECT_EQ(st["reason"], "ServiceUnavailable");
    EXPECT_NE(st["message"].get<std::string>().find("journal is not writable"), std::string::npos)
        << b;
  }
  // Read-only: other mutations are refused too, reads work and show exactly what was written.
  auto del = c.Delete("/api/v1/namespaces/default/pods/" + *acked.begin());
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 503) << del->body;
  auto node2 = c.Post("/api/v1/nodes", NodeJson("n2"), "application/json");
  ASSERT_TRUE(node2);
  EXPECT_EQ(node2->status, 503);
  auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("journal"), std::string::npos) << ready->body;
  auto live = c.Get("/healthz");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  auto names = ListPods(s.port());
  ASSERT_TRUE(names);
  for (const auto& n : acked) EXPECT_EQ((*names)[n], 1) << "acknowledged: " << n;
  for (const auto& n : refused) EXPECT_EQ(names->count(n), 0u) << "refused but shown: " << n;
  EXPECT_EQ(names->size(), acked.size());
  EXPECT_EQ(Count(s.log(), "\"journal write failed"), 1) << s.log();
  EXPECT_EQ(s.Stop(), 0) << s.log();

  // Restarted without the limit: what was acknowledged is there once, nothing refused, and the
  // daemon takes writes again.
  ServeProcess again(dir, {"--check-invariants", "--snapshot-every", "0"});
  ASSERT_TRUE(again.Start()) << again.log();
  names = ListPods(again.port());
  ASSERT_TRUE(names);
  for (const auto& n : acked) EXPECT_EQ((*names)[n], 1) << "acknowledged: " << n;
  for (const auto& n : refused) EXPECT_EQ(names->count(n), 0u) << "refused but kept: " << n;
  httplib::Client c2("127.0.0.1", again.port());
  auto more = c2.Post("/api/v1/namespaces/default/pods", PodJson("after"), "application/json");
  ASSERT_TRUE(more);
  EXPECT_EQ(more->status, 201) << more->body;
  auto ready2 = c2.Get("/readyz");
  ASSERT_TRUE(ready2);
  EXPECT_EQ(ready2->status, 200);
}

}  // namespace serve_durability_test
}  // namespace arbiter::testing
