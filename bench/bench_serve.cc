// arbiter serve: acknowledged (durable) pod creates per second through the HTTP API with 64
// concurrent keep-alive clients, with latency percentiles; and start-up (journal replay, and
// snapshot + replay) with a large journal. In process, on loopback, a temporary --data directory.
//   build/bench_serve --benchmark_filter=Creates     (counters: creates_per_s, p50_ms, p99_ms)
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <httplib.h>
#include <malloc.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <type_traits>

#include "adapters/kube/patch.h"
#include "adapters/kube/selector_reads.h"
#include "adapters/kube/selectors.h"
#include "adapters/kube/status.h"
#include "adapters/kube/table.h"
#include "server/daemon.h"
#include "server/dashboard/history.h"
#include "server/dashboard/views.h"
#include "server/durability/cluster_snapshot.h"
#include "server/http/http_api.h"
#include "server/http/http_server.h"
#include "server/http/list_pages.h"
#include "server/metrics/metrics.h"

namespace {

using arbiter::server::Json;
namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  auto p = fs::temp_directory_path() / ("arbiter-bench-serve-" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  return p;
}

arbiter::server::Mutation Create(const Json& obj) {
  arbiter::server::Mutation m;
  m.op = arbiter::server::Mutation::Op::kCreate;
  m.kind = obj.at("kind");
  m.namespace_ = obj["metadata"].value("namespace", "");
  m.object = obj;
  return m;
}

// The clock advanced to `t` (a mutation of its own, its watch events taken): the seconds it took.
double AdvanceTo(arbiter::server::Cluster& c, arbiter::Millis t) {
  arbiter::server::Mutation m;
  m.op = arbiter::server::Mutation::Op::kAdvance;
  m.time = t;
  const auto start = std::chrono::steady_clock::now();
  (void)c.Apply(m);
  (void)c.TakeWatchEvents();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Json NodeJson(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "node-" + std::to_string(i)}}},
          {"status", {{"capacity", {{"cpu", "256"}, {"memory", "2Ti"}, {"nvidia.com/gpu", "8"}}}}}};
}

std::string PodJson(const std::string& name) {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}}
      .dump();
}

void BM_ServeCreates(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  const int per_client = static_cast<int>(state.range(1));
  for (auto _ : state) {
    auto d = arbiter::server::Daemon::Open({TempDir("creates").string(), nullptr, 0, false});
    if (!d.ok()) {
      state.SkipWithError(d.message().c_str());
      return;
    }
    for (int i = 0; i < 16; ++i) (void)d.value()->Mutate(Create(NodeJson(i)));
    arbiter::server::ApiServer api(*d.value(), {});
    auto port = api.Bind("127.0.0.1", 0);
    std::thread serve([&] { api.Run(); });
    std::vector<std::vector<double>> latencies(clients);
    std::atomic<int> failures{0};
    std::mutex why_mu;
    std::map<std::string, int> why;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c)
      threads.emplace_back([&, c] {
        httplib::Client cli("127.0.0.1", port.value());
        cli.set_keep_alive(true);
        cli.set_tcp_nodelay(true);  // as Go's net/http (kubectl, client-go) does
        for (int i = 0; i < per_client; ++i) {
          const auto s = std::chrono::steady_clock::now();
          auto r = cli.Post("/api/v1/namespaces/default/pods",
                            PodJson("p-" + std::to_string(c) + "-" + std::to_string(i)),
                            "application/json");
          if (!r || r->status != 201) {
            ++failures;
            std::lock_guard<std::mutex> l(why_mu);
            why[r ? "status " + std::to_string(r->status) + " " + r->body.substr(0, 80)
                  : "error " + httplib::to_string(r.error())]++;
          }
          latencies[c].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s)
                  .count());
        }
      });
    for (auto& t : threads) t.join();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    api.Stop();
    serve.join();
    const auto journal = d.value()->journal().stats();
    d.value()->Stop();
    std::vector<double> all;
    for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());
    state.counters["creates_per_s"] = static_cast<double>(all.size()) / secs;
    state.counters["p50_ms"] = all[all.size() / 2];
    state.counters["p99_ms"] = all[all.size() * 99 / 100];
    state.counters["failures"] = failures.load();
    for (const auto& [w, n] : why) std::fprintf(stderr, "failure x%d: %s\n", n, w.c_str());
    state.counters["records_per_commit"] =
        static_cast<double>(journal.records) / static_cast<double>(journal.commits);
  }
}
BENCHMARK(BM_ServeCreates)
    ->Args({64, 100})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Watch fan-out: `watchers` plain watch streams on pods (HTTP, from the resourceVersion before
// the load) while 64 clients create 64 x 50 pods; done when every watcher has seen every pod
// ADDED. Counters: creates_per_s with the watchers attached, events_per_s delivered in total
// (all watchers), all_seen_s from the start to the moment the last watcher had every ADDED.
void BM_ServeWatchFanout(benchmark::State& state) {
  const int watchers = static_cast<int>(state.range(0));
  constexpr int kClients = 64, kPerClient = 50, kPods = kClients * kPerClient;
  for (auto _ : state) {
    auto d = arbiter::server::Daemon::Open({TempDir("fanout").string(), nullptr, 0, false});
    if (!d.ok()) {
      state.SkipWithError(d.message().c_str());
      return;
    }
    for (int i = 0; i < 16; ++i) (void)d.value()->Mutate(Create(NodeJson(i)));
    arbiter::server::ApiOptions options;
    arbiter::server::ApiServer api(*d.value(), options);
    auto port = api.Bind("127.0.0.1", 0);
    std::thread serve([&] { api.Run(); });
    const int64_t from = d.value()->Read(
        [](const arbiter::server::Cluster& c) { return c.store().resource_version(); });
    std::atomic<int64_t> delivered{0};
    std::atomic<int> complete{0};
    std::vector<std::chrono::steady_clock::time_point> done_at(watchers);
    std::vector<std::thread> watch_threads;
    for (int w = 0; w < watchers; ++w)
      watch_threads.emplace_back([&, w] {
        httplib::Client cli("127.0.0.1", port.value());
        cli.set_read_timeout(120, 0);
        std::string buffer;
        int added = 0;
        cli.Get("/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=300&resourceVersion=" +
                    std::to_string(from),
                [&](const char* data, size_t n) {
                  buffer.append(data, n);
                  size_t at = 0, nl;
                  while ((nl = buffer.find('\n', at)) != std::string::npos) {
                    ++delivered;
                    constexpr std::string_view kAdded = "{\"type\":\"ADDED\"";
                    if (buffer.compare(at, kAdded.size(), kAdded) == 0) ++added;
                    at = nl + 1;
                  }
                  buffer.erase(0, at);
                  if (added < kPods) return true;
                  done_at[w] = std::chrono::steady_clock::now();
                  ++complete;
                  return false;
                });
      });
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> clients;
    std::atomic<int> failures{0};
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        httplib::Client cli("127.0.0.1", port.value());
        cli.set_keep_alive(true);
        cli.set_tcp_nodelay(true);
        for (int i = 0; i < kPerClient; ++i) {
          auto r = cli.Post("/api/v1/namespaces/default/pods",
                            PodJson("p-" + std::to_string(c) + "-" + std::to_string(i)),
                            "application/json");
          if (!r || r->status != 201) ++failures;
        }
      });
    for (auto& t : clients) t.join();
    const auto acked = std::chrono::steady_clock::now();
    for (auto& t : watch_threads) t.join();
    const auto last = *std::max_element(done_at.begin(), done_at.end());
    api.Stop();
    serve.join();
    d.value()->Stop();
    state.counters["creates_per_s"] = kPods / std::chrono::duration<double>(acked - t0).count();
    state.counters["events_per_s"] =
        static_cast<double>(delivered.load()) / std::chrono::duration<double>(last - t0).count();
    state.counters["all_seen_s"] = std::chrono::duration<double>(last - t0).count();
    state.counters["complete_watchers"] = complete.load();
    state.counters["failures"] = failures.load();
  }
}
BENCHMARK(BM_ServeWatchFanout)
    ->Arg(100)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Lists of `range(0)` pods (range(1) = 1: as the Table `kubectl get` asks for), 20 in a row on
// one keep-alive connection, the body read and dropped: list_p50_ms / list_max_ms (the request
// on loopback: the server's time, the transfer of the body included), cpu_ms_per_list (the
// process's CPU time per list: the server's work and the client's reading), body_mb, and the
// process's RSS before the first list, after it and after the 20th (rss_mb_before, rss_mb_after1,
// rss_mb_after): the first list keeps each pod's wire text (StoredObject), the others nothing.
double RssMb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double mb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) mb = std::atof(line + 6) / 1024;
  std::fclose(f);
  return mb;
}

// The process's CPU time (every thread) in ms: the server's work per list on a shared machine,
// with the client's reading of the body.
double CpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

void BM_ServeList(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  const bool table = state.range(1) == 1;
  constexpr int kLists = 20;
  arbiter::server::UseServeHeapPolicy();  // as arbiter serve does
  for (auto _ : state) {
    auto d = arbiter::server::Daemon::Open({TempDir("list").string(), nullptr, 0, false});
    if (!d.ok()) return state.SkipWithError(d.message().c_str());
    for (int i = 0; i < 16; ++i) (void)d.value()->Mutate(Create(NodeJson(i)));
    std::vector<std::thread> writers;
    for (int t = 0; t < 32; ++t)
      writers.emplace_back([&, t] {
        for (int i = t; i < pods; i += 32)
          (void)d.value()->Mutate(Create(Json::parse(PodJson("p-" + std::to_string(i)))));
      });
    for (auto& t : writers) t.join();
    arbiter::server::ApiServer api(*d.value(), {});
    auto port = api.Bind("127.0.0.1", 0);
    std::thread serve([&] { api.Run(); });
    httplib::Client cli("127.0.0.1", port.value());
    cli.set_keep_alive(true);
    cli.set_read_timeout(120, 0);
    httplib::Headers headers;
    if (table) headers.emplace("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io");
    const double rss_before = RssMb();
    const double cpu_before = CpuMs();
    std::vector<double> ms;
    size_t bytes = 0;
    double rss_first = 0;
    for (int i = 0; i < kLists; ++i) {
      if (i == 1) rss_first = RssMb();
      bytes = 0;
      const auto s = std::chrono::steady_clock::now();
      auto r = cli.Get("/api/v1/pods", headers, [&](const char*, size_t n) {
        bytes += n;
        return true;
      });
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
      if (!r || r->status != 200) {
        state.SkipWithError("a list failed");
        break;
      }
    }
    const double rss_after = RssMb();
    const double cpu_ms = (CpuMs() - cpu_before) / kLists;
    api.Stop();
    serve.join();
    d.value()->Stop();
    std::sort(ms.begin(), ms.end());
    state.counters["list_p50_ms"] = ms[ms.size() / 2];
    state.counters["list_max_ms"] = ms.back();
    state.counters["body_mb"] = static_cast<double>(bytes) / (1 << 20);
    state.counters["cpu_ms_per_list"] = cpu_ms;
    state.counters["rss_mb_before"] = rss_before;
    state.counters["rss_mb_after1"] = rss_first;
    state.counters["rss_mb_after"] = rss_after;
  }
}
BENCHMARK(BM_ServeList)
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Start-up with N journaled pod creates: replay of the whole journal, or (range 1 = 1) the
// snapshot written after them.
void BM_ServeStartup(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool snapshot = state.range(1) == 1;
  const auto dir = TempDir("startup-" + std::to_string(n) + (snapshot ? "-snap" : ""));
  {
    auto d = arbiter::server::Daemon::Open({dir.string(), nullptr, 0, false});
    for (int i = 0; i < 16; ++i) (void)d.value()->Mutate(Create(NodeJson(i)));
    // Many writers, so the journal's group commit keeps up.
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t)
      threads.emplace_back([&, t] {
        for (int i = t; i < n; i += 32)
          (void)d.value()->Mutate(Create(Json::parse(PodJson("p-" + std::to_string(i)))));
      });
    for (auto& t : threads) t.join();
    if (snapshot) d.value()->SnapshotNow();
  }
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto d = arbiter::server::Daemon::Open({dir.string(), nullptr, 0, false});
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.counters["startup_s"] = secs;
    state.counters["replayed"] = static_cast<double>(d.value()->startup().replayed);
  }
}
BENCHMARK(BM_ServeStartup)
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A journal of `n` commands as the daemon writes them, generated straight into DIR/journal.db
// (no HTTP, no daemon): the default namespace, 16 nodes, then pods created one per 10 ms and,
// once 2,000 are live, the oldest deleted (grace 0) with the clock's advance after it:
// create, delete, advance, ... Records [first, last] (1-based) are written.
std::string StartupRecord(int64_t seq) {
  using arbiter::server::Mutation;
  const int64_t t0 = 1764583200000;
  Mutation m;
  if (seq == 1) {
    m.op = Mutation::Op::kCreate;
    m.kind = "Namespace";
    m.object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}};
    m.time = t0;
    return m.Encode();
  }
  if (seq <= 17) {
    m = Create(NodeJson(static_cast<int>(seq - 2)));
    m.time = t0;
    return m.Encode();
  }
  constexpr int64_t kLive = 2000;
  const int64_t k = seq - 18;  // 0-based after the nodes
  // The first kLive records create pods 0..kLive-1; then triples: create i, delete i - kLive,
  // advance.
  int64_t pod, phase;
  if (k < kLive) {
    pod = k;
    phase = 0;
  } else {
    pod = kLive + (k - kLive) / 3;
    phase = (k - kLive) % 3;
  }
  m.time = t0 + 10 * (pod + 1);
  if (phase == 0) {
    m = Create(Json::parse(PodJson("p-" + std::to_string(pod))));
    m.time = t0 + 10 * (pod + 1);
  } else if (phase == 1) {
    m.op = Mutation::Op::kDelete;
    m.kind = "Pod";
    m.namespace_ = "default";
    m.name = "p-" + std::to_string(pod - kLive);
    m.grace_period = 0;
  } else {
    m.op = Mutation::Op::kAdvance;
  }
  return m.Encode();
}

// Writes the records as the daemon journals them (format 2): each mutation applied by a live
// Cluster (the daemon's state machine), with the engine commands it gave the engine. Successive
// Write calls continue the same cluster.
class StartupJournalWriter {
 public:
  explicit StartupJournalWriter(const std::string& dir) : dir_(dir) {
    auto j = arbiter::server::Journal::Open(dir);  // the schema and the instance id
    cluster_ = std::make_unique<arbiter::server::Cluster>(j.value()->instance_id());
  }
  bool Write(int64_t first, int64_t last) {
    sqlite3* db = nullptr;
    sqlite3_open((dir_ + "/journal.db").c_str(), &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; BEGIN", nullptr, nullptr, nullptr);
    sqlite3_stmt* ins = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO journal (seq, record, commands) VALUES (?, ?, ?)", -1, &ins,
                       nullptr);
    bool ok = true;
    for (int64_t seq = first; seq <= last && ok; ++seq) {
      const std::string r = StartupRecord(seq);
      auto m = arbiter::server::Mutation::Decode(r);
      ok = m.ok() && cluster_->ApplyShared(m.value()).ok();
      (void)cluster_->TakeWatchEvents();
      const std::string tape = cluster_->TakeTape();
      sqlite3_reset(ins);
      sqlite3_bind_int64(ins, 1, seq);
      sqlite3_bind_text(ins, 2, r.data(), static_cast<int>(r.size()), SQLITE_TRANSIENT);
      sqlite3_bind_blob(ins, 3, tape.data(), static_cast<int>(tape.size()), SQLITE_TRANSIENT);
      sqlite3_step(ins);
    }
    sqlite3_finalize(ins);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    return ok;
  }

 private:
  std::string dir_;
  std::unique_ptr<arbiter::server::Cluster> cluster_;
};

// Start-up after `n` commands (range 0): replay of all of them (range 1 = 0), or the snapshot
// taken `tail` records before the end plus the replay of those (range 1 = tail, as a daemon
// snapshotting every `tail` records has at worst).
void BM_ServeStartupJournal(benchmark::State& state) {
  const int64_t n = state.range(0), tail = state.range(1);
  const auto dir = TempDir("journal-" + std::to_string(n) + "-" + std::to_string(tail)).string();
  const auto g0 = std::chrono::steady_clock::now();
  StartupJournalWriter writer(dir);
  if (tail == 0) {
    if (!writer.Write(1, n)) return state.SkipWithError("a generated record was refused");
  } else {
    // The snapshot where a daemon could have taken it: not between a delete and the clock's
    // advance after it (the daemon opened here would append that advance itself, at today's
    // wall time, and the tail written after it would replay a year late).
    int64_t cut = n - tail;
    if (cut - 18 >= 2000 && (cut - 18 - 2000) % 3 == 1) ++cut;
    if (!writer.Write(1, cut)) return state.SkipWithError("a generated record was refused");
    {
      auto d = arbiter::server::Daemon::Open({dir, nullptr, 0, false});
      if (!d.ok()) return state.SkipWithError(d.message().c_str());
      if (d.value()->journal().last_seq() != cut)
        return state.SkipWithError("the daemon appended records to the generated journal");
      d.value()->SnapshotNow();
    }  // stopped: the snapshot is committed and the records it covers deleted
    if (!writer.Write(cut + 1, n)) return state.SkipWithError("a generated record was refused");
  }
  state.counters["prepare_s"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
  for (auto _ : state) {
    auto d = arbiter::server::Daemon::Open({dir, nullptr, 0, false});
    if (!d.ok()) return state.SkipWithError(d.message().c_str());
    const auto& st = d.value()->startup();
    state.counters["startup_s"] = st.seconds;
    state.counters["replayed"] = static_cast<double>(st.replayed);
    state.counters["from_snapshot"] = st.from_snapshot;
    state.counters["live_pods"] = static_cast<double>(d.value()->Read(
        [](const arbiter::server::Cluster& c) { return c.store().List("Pod", "").size(); }));
  }
}
BENCHMARK(BM_ServeStartupJournal)
    ->Args({1000000, 100000})
    ->Args({1000000, 50000})  // the default --snapshot-every: the worst tail a daemon replays
    ->Args({1000000, 20000})
    ->Args({1000000, 0})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The journal's commit latency beside the storage's own floor (issue 27: commits of 80-90 ms now
// and then, with nothing else writing, set the fill's longest create). Alternates, for range(0)
// seconds in all, 5-second turns of (a) a bare append of 8 records' bytes and fdatasync() of one
// file, what one WAL commit asks of the device, and (b) the daemon's Journal committing 8 pod
// creates' records (Append x 8, then WaitDurable on the last: one group commit, as 64 clients
// make at about 5k creates/s), in the same directory. Counters for each, `raw_` and `journal_`:
// p50_ms, p99_ms, p999_ms, max_ms, over_50ms (how many commits took over 50 ms), commits_per_s
// (a journal "commit" is a group of 8 waited for; journal_transactions: the transactions the
// writer made for them, which may split a group).
// A journal's tail that follows the raw one's says the outliers are the device's, not the
// journal's.
struct Latencies {
  std::vector<double> ms;
  double secs = 0;
  void Count(benchmark::State& state, const std::string& k) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) {
      return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
    };
    state.counters[k + "p50_ms"] = at(0.5);
    state.counters[k + "p99_ms"] = at(0.99);
    state.counters[k + "p999_ms"] = at(0.999);
    state.counters[k + "max_ms"] = ms.empty() ? 0.0 : ms.back();
    state.counters[k + "over_50ms"] =
        static_cast<double>(std::count_if(ms.begin(), ms.end(), [](double x) { return x > 50; }));
    state.counters[k + "commits_per_s"] = secs > 0 ? static_cast<double>(ms.size()) / secs : 0;
  }
};

template <typename F>
void TimeCommits(double secs, Latencies& out, F&& commit) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto until =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
  auto t = start;
  while (t < until) {
    if (!commit()) break;
    const auto done = Clock::now();
    out.ms.push_back(std::chrono::duration<double, std::milli>(done - t).count());
    t = done;
  }
  out.secs += std::chrono::duration<double>(t - start).count();
}

void BM_JournalCommitLatency(benchmark::State& state) {
  constexpr int kBatch = 8;
  constexpr double kTurn = 5;
  const fs::path dir = TempDir("commit-latency");
  fs::create_directories(dir / "journal");
  std::string record = Create(Json::parse(PodJson("p"))).Encode();
  const std::string raw_bytes(record.size() * kBatch, 'x');
  for (auto _ : state) {
    const int fd = ::open((dir / "raw.bin").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    auto journal = arbiter::server::Journal::Open((dir / "journal").string());
    if (fd >= 0 && !journal.ok()) ::close(fd);
    if (fd < 0 || !journal.ok()) return state.SkipWithError("cannot open the files");
    journal.value()->Start(0);
    Latencies raw, jl;
    bool ok = true;
    for (double done = 0; done < static_cast<double>(state.range(0)) && ok; done += 2 * kTurn) {
      TimeCommits(kTurn, raw, [&] {
        if (::lseek(fd, 0, SEEK_CUR) > (64 << 20)) ::lseek(fd, 0, SEEK_SET);  // a WAL's reuse
        ok = ::write(fd, raw_bytes.data(), raw_bytes.size()) ==
                 static_cast<ssize_t>(raw_bytes.size()) &&
             ::fdatasync(fd) == 0;
        return ok;
      });
      TimeCommits(kTurn, jl, [&] {
        int64_t seq = 0;
        for (int i = 0; i < kBatch; ++i) seq = journal.value()->Append(record, "");
        ok = journal.value()->WaitDurable(seq);
        return ok;
      });
    }
    const uint64_t transactions = journal.value()->stats().commits;
    journal.value()->Stop();
    ::close(fd);
    if (!ok) return state.SkipWithError("a write or a commit failed");
    raw.Count(state, "raw_");
    jl.Count(state, "journal_");
    // The writer may split a group of 8 in two transactions: how many it made for jl's groups.
    state.counters["journal_transactions"] = static_cast<double>(transactions);
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_JournalCommitLatency)
    ->Arg(60)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

namespace {
// The state machine alone (validation, engine, statuses, events): no HTTP, no journal.
void BM_ClusterCreatePod(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  arbiter::server::Mutation ns =
      Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}});
  (void)c.Apply(ns);
  for (int i = 0; i < 16; ++i) (void)c.Apply(Create(NodeJson(i)));
  int64_t i = 0;
  for (auto _ : state) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i++))));
    m.time = i;
    benchmark::DoNotOptimize(c.Apply(m));
    benchmark::DoNotOptimize(c.TakeWatchEvents());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClusterCreatePod)->Iterations(20000);

// The same behind a queue of `range(0)` pods that cannot fit (32 GPUs on 8-GPU nodes): what
// keeping pending pods' status current costs a create.
void BM_ClusterCreatePodBehindQueue(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  (void)c.Apply(
      Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
  for (int i = 0; i < 16; ++i) (void)c.Apply(Create(NodeJson(i)));
  int64_t i = 0;
  for (int q = 0; q < state.range(0); ++q) {
    Json pod = Json::parse(PodJson("big-" + std::to_string(q)));
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "32";
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "32";
    auto m = Create(pod);
    m.time = ++i;
    (void)c.Apply(m);
  }
  (void)c.TakeWatchEvents();
  for (auto _ : state) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = ++i;
    benchmark::DoNotOptimize(c.Apply(m));
    benchmark::DoNotOptimize(c.TakeWatchEvents());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClusterCreatePodBehindQueue)->Arg(1000)->Iterations(5000);

// The namespace "default" and `nodes` nodes (NodeJson), as the cluster benchmarks start.
void AddDefaultNamespaceAndNodes(arbiter::server::Cluster& c, int nodes) {
  (void)c.Apply(
      Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
  for (int i = 0; i < nodes; ++i) (void)c.Apply(Create(NodeJson(i)));
}

// `pods` pods (PodJson, p-0 ...) created one millisecond apart; their watch events are taken (and
// dropped) every 1,024 creates, as the daemon's watchers would.
void AddRunningPods(arbiter::server::Cluster& c, int64_t pods) {
  for (int64_t i = 0; i < pods; ++i) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = i;
    (void)c.ApplyShared(m);
    if (i % 1024 == 0) (void)c.TakeWatchEvents();
  }
  (void)c.TakeWatchEvents();
}

// A Job of range(0) running pods failing at its activeDeadlineSeconds, by the rules of journal
// format range(1): the advance that fails it (the iteration's time: the sync that counts its
// unfinished pods and deletes the first of them) and, as counters, the median and the longest of
// the advances after it, which count and delete the rest (format 11: 500 in the failing sync,
// then 200 an advance; format 10: every one counted in the failing sync).
void BM_ClusterJobFailsAtItsDeadline(benchmark::State& state) {
  const int64_t pods = state.range(0);
  std::vector<double> after;
  for (auto _ : state) {
    arbiter::server::Cluster c("0000abcd");
    c.SetRecordFormat(static_cast<int>(state.range(1)));
    (void)c.Apply(
        Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
    (void)c.Apply(Create({{"apiVersion", "v1"},
                          {"kind", "Node"},
                          {"metadata", {{"name", "big"}}},
                          {"status", {{"capacity", {{"cpu", "100000"}, {"pods", "200000"}}}}}}));
    Json job = {{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", "late"}, {"namespace", "default"}}},
                {"spec",
                 {{"parallelism", pods},
                  {"completions", pods},
                  {"activeDeadlineSeconds", 100},
                  {"template",
                   {{"metadata", {{"annotations", {{"arbiter.dev/duration", "1h"}}}}},
                    {"spec",
                     {{"restartPolicy", "Never"},
                      {"containers",
                       {{{"name", "c"},
                         {"image", "busybox"},
                         {"resources", {{"requests", {{"cpu", "10m"}}}}}}}}}}}}}}};
    (void)c.Apply(Create(job));
    const auto advance = [&](arbiter::Millis t) { return AdvanceTo(c, t); };
    for (auto due = c.NextDue(); due && *due <= c.now(); due = c.NextDue()) advance(*due);
    const auto deadline = c.NextDue();
    state.SetIterationTime(advance(*deadline));
    for (auto due = c.NextDue(); due && *due <= *deadline; due = c.NextDue())
      after.push_back(advance(*due) * 1000);
  }
  std::sort(after.begin(), after.end());
  state.counters["after_median_ms"] = after.empty() ? 0 : after[after.size() / 2];
  state.counters["after_max_ms"] = after.empty() ? 0 : after.back();
  state.counters["advances_after"] = static_cast<double>(after.size()) / state.iterations();
}
BENCHMARK(BM_ClusterJobFailsAtItsDeadline)
    ->Args({10000, 11})
    ->Args({10000, 10})
    ->Args({100000, 11})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Creates in a namespace that has a PodDisruptionBudget (selecting app=web; the pods do not carry
// it) beside range(0) running pods of that namespace: what keeping the budget's status current
// costs a create.
void BM_ClusterCreatePodBesideBudget(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 64);
  (void)c.Apply(
      Create({{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web"}, {"namespace", "default"}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}}));
  AddRunningPods(c, state.range(0));
  int64_t i = state.range(0);
  for (auto _ : state) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = ++i;
    benchmark::DoNotOptimize(c.ApplyShared(m));
    benchmark::DoNotOptimize(c.TakeWatchEvents());
  }
}
BENCHMARK(BM_ClusterCreatePodBesideBudget)
    ->Arg(0)
    ->Arg(10000)
    ->Arg(100000)
    ->Iterations(20)
    ->Unit(benchmark::kMicrosecond);

// Creates into namespace "default" beside range(0) other tenants, each a namespace with a
// ResourceQuota and an ElasticQuota in one cohort (with "default"'s own, so each create moves
// quota usage): what keeping quota statuses current costs a create as tenants grow. Also what
// making the last 50 tenants cost, by kind (the medians tenant_{ns,rq,eq}_us).
void BM_ClusterCreatePodAmongTenants(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 64);
  std::vector<double> made[3];  // microseconds: Namespace, ResourceQuota, ElasticQuota
  auto timed = [&](int kind, const Json& obj) {
    const auto s = std::chrono::steady_clock::now();
    (void)c.Apply(Create(obj));
    made[kind].push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
  };
  auto tenant = [&](const std::string& ns) {
    if (ns != "default")
      timed(0, {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
    timed(1, {{"apiVersion", "v1"},
              {"kind", "ResourceQuota"},
              {"metadata", {{"name", "q"}, {"namespace", ns}}},
              {"spec", {{"hard", {{"requests.cpu", "100k"}, {"pods", "1M"}}}}}});
    timed(2, {{"apiVersion", "arbiter.dev/v1alpha1"},
              {"kind", "ElasticQuota"},
              {"metadata", {{"name", "e"}, {"namespace", ns}}},
              {"spec",
               {{"cohort", "pool"},
                {"min", {{"cpu", "10"}, {"nvidia.com/gpu", "1"}}},
                {"max", {{"cpu", "100k"}, {"nvidia.com/gpu", "8"}}}}}});
  };
  tenant("default");
  for (int t = 0; t < state.range(0); ++t) tenant("t-" + std::to_string(t));
  (void)c.TakeWatchEvents();
  const char* names[] = {"tenant_ns_us", "tenant_rq_us", "tenant_eq_us"};
  for (int k = 0; k < 3; ++k) {
    std::vector<double> last(made[k].end() - std::min<ptrdiff_t>(50, std::ssize(made[k])),
                             made[k].end());
    std::sort(last.begin(), last.end());
    if (!last.empty()) state.counters[names[k]] = last[last.size() / 2];
  }
  int64_t i = 0;
  for (auto _ : state) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = ++i;
    benchmark::DoNotOptimize(c.ApplyShared(m));
    benchmark::DoNotOptimize(c.TakeWatchEvents());
  }
}
BENCHMARK(BM_ClusterCreatePodAmongTenants)
    ->Arg(0)
    ->Arg(100)
    ->Arg(1000)
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);

// Churn behind a queue: 1,000 running pods and `range(0)` pending ones that cannot fit (32 GPUs
// on 8-GPU nodes); each iteration deletes a running pod (at once: its release makes the next
// cycle a full one, over the whole queue) and creates another. range(1) = 1: the pending walk
// of journal formats 1-3 (Cluster::SetPendingWalk, every pending pod read after such a cycle),
// 0: the pods the engine restated (format 4). The time is a delete and a create's.
void BM_ClusterChurnBehindQueue(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  c.SetPendingWalk(state.range(1) == 1);
  AddDefaultNamespaceAndNodes(c, 16);
  int64_t i = 0;
  for (; i < 1000; ++i) {
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = i;
    (void)c.ApplyShared(m);
  }
  for (int q = 0; q < state.range(0); ++q) {
    Json pod = Json::parse(PodJson("big-" + std::to_string(q)));
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "32";
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "32";
    auto m = Create(pod);
    m.time = i;
    (void)c.ApplyShared(m);
    if (q % 1024 == 0) (void)c.TakeWatchEvents();
  }
  (void)c.TakeWatchEvents();
  int64_t gone = 0;
  for (auto _ : state) {
    arbiter::server::Mutation del;
    del.op = arbiter::server::Mutation::Op::kDelete;
    del.kind = "Pod";
    del.namespace_ = "default";
    del.name = "p-" + std::to_string(gone++);
    del.grace_period = 0;
    del.time = ++i;
    benchmark::DoNotOptimize(c.ApplyShared(del));
    auto m = Create(Json::parse(PodJson("p-" + std::to_string(i))));
    m.time = i;
    benchmark::DoNotOptimize(c.ApplyShared(m));
    benchmark::DoNotOptimize(c.TakeWatchEvents());
  }
}
BENCHMARK(BM_ClusterChurnBehindQueue)
    ->Args({1000, 1})
    ->Args({1000, 0})
    ->Args({20000, 1})
    ->Args({20000, 0})
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);

// Memory per live pod: `range(0)` running pods created through the cluster state (validation,
// engine, statuses, events; no HTTP, no journal) on 64 nodes. Counters: rss_mb (the process's
// RSS after the creates), bytes_per_pod (RSS growth over the creates / pods; the goal of issue 27,
// 1,000,000 live pods under 4 GiB, is about 4,300 bytes per pod with the rest of the daemon),
// creates_per_s.
void BM_ClusterLivePodsMemory(benchmark::State& state) {
  for (auto _ : state) {
    const double rss_before = RssMb();
    arbiter::server::Cluster c("0000abcd");
    AddDefaultNamespaceAndNodes(c, 64);
    const auto t0 = std::chrono::steady_clock::now();
    AddRunningPods(c, state.range(0));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rss_after = RssMb();
    state.counters["rss_mb"] = rss_after;
    state.counters["bytes_per_pod"] =
        (rss_after - rss_before) * 1024 * 1024 / static_cast<double>(state.range(0));
    state.counters["creates_per_s"] = static_cast<double>(state.range(0)) / seconds;
    state.counters["live_pods"] = static_cast<double>(c.engine().live_workloads());
  }
}
BENCHMARK(BM_ClusterLivePodsMemory)
    ->Arg(100000)
    ->Arg(200000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// The goal's size, 1,000,000 pods, only when ARBITER_BENCH_MILLION is set (about 10 minutes and
// 3 GB of memory on the 2-core machine).
[[maybe_unused]] const bool kMillionPods =
    std::getenv("ARBITER_BENCH_MILLION") != nullptr &&
    benchmark::RegisterBenchmark("BM_ClusterLivePodsMemory", BM_ClusterLivePodsMemory)
            ->Arg(1000000)
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime() != nullptr;

// A snapshot of `range(0)` running pods (issue 27: snapshots off the request path). capture_ms:
// what the daemon's lock is held for (Cluster::CaptureSnapshot; before the split, the whole
// Cluster::Snapshot was), of which engine_capture_ms is the engine's copy (Engine::Capture; before
// the engine's own snapshot bytes were made there, engine_ms now); bytes_ms: the bytes made from
// the capture on the snapshot thread (the engine's encoding included); snapshot_mb: their size;
// capture_cpu_ms: capture_ms as the thread's CPU time (steadier on a loaded machine);
// capture_heap_mb: the heap the capture holds (its copies); write_heap_mb: the heap above the one
// before the capture at its highest while the bytes are written to a sink that keeps none;
// after_ms: what the engine pays after a capture at worst, where it next touches the workload
// table (each chunk copied once, slot_table.h): a read of every workload (Engine::Workloads) right
// after the captures, less the same read again. store_cpu_ms, counters_cpu_ms,
// pods_cpu_ms, works_cpu_ms, engine_cpu_ms: capture_cpu_ms by step (Cluster::CaptureStep): the
// stored objects, the events and counters, the live and finished pods' keys, the work model's
// state, the engine's.
// recapture_cpu_ms: the same capture again at once; cold_recapture_cpu_ms: again after 256 MB
// written elsewhere (the caches emptied, as the snapshot's own bytes empty them in the daemon).
// This binary has glibc's malloc, the daemon jemalloc: under glibc the first capture after the
// previous one's work costs 5-20 times a recapture (100k pods: 10-12 ms against 1.3 ms, and the
// cold recapture 1.6 ms, so not the caches), under jemalloc about the same as a recapture (0.8
// against 0.9 ms). For the daemon's figure run it as
// LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 (the heap counters, from glibc's
// mallinfo2, then read 0).
// The heap in use (malloc's, MB).
double HeapMb() { return static_cast<double>(mallinfo2().uordblks) / 1e6; }

// The thread's CPU time (ms) of a capture after 256 MB written elsewhere: the caches emptied of
// what the capture reads, as the snapshot's bytes (160 MB at 100k pods) empty them before the
// daemon's next one.
double ColdCaptureCpuMs(const arbiter::server::Cluster& c) {
  const auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  std::vector<char> flood(size_t{256} << 20);
  std::memset(flood.data(), 1, flood.size());
  benchmark::DoNotOptimize(flood.data());
  const double t0 = cpu_ms();
  benchmark::DoNotOptimize(c.CaptureSnapshot());
  return cpu_ms() - t0;
}

void BM_ClusterSnapshot(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 64);
  AddRunningPods(c, state.range(0));
  double capture = 0, engine_capture = 0, engine = 0, bytes_ms = 0, after = 0, capture_cpu = 0;
  auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  size_t bytes = 0;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a) {
    return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
  };
  double capture_heap = 0, write_heap = 0;
  using Step = arbiter::server::Cluster::CaptureStep;
  double step_cpu[5] = {};  // by Step
  double step_faults[5] = {};
  auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return static_cast<double>(u.ru_minflt + u.ru_majflt);
  };
  double recapture_cpu = 0, cold_recapture_cpu = 0;
  const char* thrash = getenv("ARBITER_BENCH_THRASH_MB");
  for (auto _ : state) {
    if (thrash) {
      const size_t mb = static_cast<size_t>(atoll(thrash)) << 20;
      char* p = static_cast<char*>(malloc(mb));
      memset(p, 1, mb);
      benchmark::DoNotOptimize(p);
      free(p);
    }
    const double heap0 = HeapMb();
    auto t0 = Clock::now();
    const double cpu0 = cpu_ms();
    double at = cpu0;  // the CPU time at the end of the previous step
    double f_at = faults();
    const auto cap = c.CaptureSnapshot([&](Step s) {
      const double now = cpu_ms();
      step_cpu[static_cast<size_t>(s)] += now - at;
      at = now;
      const double f = faults();
      step_faults[static_cast<size_t>(s)] += f - f_at;
      f_at = f;
    });
    capture_cpu += cpu_ms() - cpu0;
    if (thrash) fprintf(stderr, "capture %.3f ms\n", cpu_ms() - cpu0);
    capture += ms(t0);
    capture_heap += HeapMb() - heap0;
    {  // the same capture again at once (nothing changed, nothing freed between)
      const double again0 = cpu_ms();
      benchmark::DoNotOptimize(c.CaptureSnapshot());
      recapture_cpu += cpu_ms() - again0;
    }
    cold_recapture_cpu += ColdCaptureCpuMs(c);
    // The bytes given to a sink that keeps none (as the daemon's file writer does): the heap
    // above what it was before the capture, at its highest when a piece is given.
    t0 = Clock::now();
    bytes = 0;
    size_t sampled = 0;  // mallinfo2 walks the heap: sampled once a MB written
    (void)cap->Write([&](std::string_view piece) {
      bytes += piece.size();
      if (bytes - sampled < (1u << 20)) return true;
      sampled = bytes;
      write_heap = std::max(write_heap, HeapMb() - heap0);
      return true;
    });
    bytes_ms += ms(t0);
    t0 = Clock::now();
    auto engine_cap = c.engine().Capture();  // freed after the timing, as on the snapshot thread
    engine_capture += ms(t0);
    benchmark::DoNotOptimize(engine_cap);
    engine_cap.reset();
    t0 = Clock::now();
    benchmark::DoNotOptimize(c.engine().Snapshot());
    engine += ms(t0);
    t0 = Clock::now();
    benchmark::DoNotOptimize(c.engine().Workloads());
    after += ms(t0);
    t0 = Clock::now();
    benchmark::DoNotOptimize(c.engine().Workloads());
    after -= ms(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["capture_ms"] = capture / n;
  state.counters["capture_cpu_ms"] = capture_cpu / n;
  state.counters["recapture_cpu_ms"] = recapture_cpu / n;
  state.counters["cold_recapture_cpu_ms"] = cold_recapture_cpu / n;
  state.counters["engine_capture_ms"] = engine_capture / n;
  state.counters["engine_ms"] = engine / n;
  state.counters["bytes_ms"] = bytes_ms / n;
  state.counters["after_ms"] = after / n;
  state.counters["snapshot_mb"] = static_cast<double>(bytes) / 1e6;
  state.counters["capture_heap_mb"] = capture_heap / n;
  state.counters["write_heap_mb"] = write_heap;
  const char* step_names[] = {"store_cpu_ms", "counters_cpu_ms", "pods_cpu_ms", "works_cpu_ms",
                              "engine_cpu_ms"};
  for (size_t i = 0; i < 5; ++i) state.counters[step_names[i]] = step_cpu[i] / n;
  const char* fault_names[] = {"store_faults", "counters_faults", "pods_faults", "works_faults",
                               "engine_faults"};
  for (size_t i = 0; i < 5; ++i) state.counters[fault_names[i]] = step_faults[i] / n;
}
BENCHMARK(BM_ClusterSnapshot)
    ->Arg(10000)
    ->Arg(20000)
    ->Arg(100000)
    ->Apply([](benchmark::internal::Benchmark* b) {  // ARBITER_BENCH_SNAPSHOT_PODS=1000000
      if (const char* pods = getenv("ARBITER_BENCH_SNAPSHOT_PODS")) b->Arg(atoll(pods));
    })
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// What a capture of the stored objects defers (issue 27: ObjectStore::Capture shares each kind's
// chunks, chunk_map.h): the first write to a chunk after it copies the chunk's keys and object
// pointers. store_after_cpu_ms: every 64th of `range(0)` stored pods replaced while a capture is
// held (every chunk written at least once), less the same writes again with none; capture_cpu_ms
// apart (thread CPU times).
void BM_StoreWritesAfterCapture(benchmark::State& state) {
  arbiter::server::ObjectStore s;
  s.SetCompact({"Pod"}, 4096);
  const Json pod = Json::parse(PodJson("p"));
  const int64_t n = state.range(0);
  auto name = [](int64_t i) { return "p-" + std::to_string(i); };
  for (int64_t i = 0; i < n; ++i) s.Put("Pod", "default", name(i), pod);
  s.Trim();
  auto cpu_ms = [] {  // the thread's CPU time: steadier than the wall's on a loaded machine
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  auto writes = [&] {
    for (int64_t i = 0; i < n; i += 64) s.Put("Pod", "default", name(i), pod);
    (void)s.TakeEvents();
    s.Trim();
  };
  double capture = 0, after = 0;
  // Untimed before each part: glibc consolidates the small blocks freed before (the trimmed
  // trees) at the next large allocation, whichever part makes it.
  for (auto _ : state) {
    malloc_trim(0);
    double t0 = cpu_ms();
    auto cap = s.Capture();
    capture += cpu_ms() - t0;
    malloc_trim(0);
    t0 = cpu_ms();
    writes();
    after += cpu_ms() - t0;
    cap = {};
    malloc_trim(0);
    t0 = cpu_ms();
    writes();
    after -= cpu_ms() - t0;
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["capture_cpu_ms"] = capture / iterations;
  state.counters["store_after_cpu_ms"] = after / iterations;
}
BENCHMARK(BM_StoreWritesAfterCapture)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(5);

// One /metrics render with `range(0)` running pods, every other one declaring its use
// (arbiter.dev/usage). locked_ms: the part under the daemon's lock (CollectMetrics), per render
// (locked_max_ms the longest);
// render_ms: the text, made after the lock is released; node_locked_ms: the lock's part of one
// node's endpoints (CollectNodeMetrics, 1/16 of the pods).
// 16 nodes and `pods` running pods, every other one declaring its use (arbiter.dev/usage).
void FillForScrapes(arbiter::server::Cluster& c, int64_t pods) {
  (void)c.Apply(
      Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
  for (int i = 0; i < 16; ++i) (void)c.Apply(Create(NodeJson(i)));
  for (int64_t i = 0; i < pods; ++i) {
    Json pod = Json::parse(PodJson("p-" + std::to_string(i)));
    if (i % 2) pod["metadata"]["annotations"]["arbiter.dev/usage"] = "cpu=5m";
    auto m = Create(pod);
    m.time = i;
    (void)c.Apply(m);
  }
  (void)c.TakeWatchEvents();
  c.store().Trim();
}

void BM_RenderMetrics(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  FillForScrapes(c, state.range(0));
  // One scrape first, untimed: the fill's freed blocks (the trimmed trees) are consolidated by
  // glibc at the thread's next large allocation, which would be the first timed one.
  benchmark::DoNotOptimize(arbiter::server::RenderMetrics(
      arbiter::server::CollectMetrics(c, state.range(0) + 1000), arbiter::server::JournalStats{}));
  size_t bytes = 0;
  double locked_seconds = 0, render_seconds = 0, node_seconds = 0, locked_max = 0;
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  for (auto _ : state) {
    auto t0 = Clock::now();
    const auto facts = arbiter::server::CollectMetrics(c, state.range(0) + 1000);
    locked_max = std::max(locked_max, seconds(t0));
    locked_seconds += seconds(t0);
    t0 = Clock::now();
    const std::string text = arbiter::server::RenderMetrics(facts, arbiter::server::JournalStats{});
    render_seconds += seconds(t0);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
    t0 = Clock::now();
    benchmark::DoNotOptimize(
        arbiter::server::CollectNodeMetrics(c, "node-3", state.range(0) + 1000));
    node_seconds += seconds(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["locked_ms"] = locked_seconds * 1000 / n;
  state.counters["locked_max_ms"] = locked_max * 1000;
  state.counters["render_ms"] = render_seconds * 1000 / n;
  state.counters["node_locked_ms"] = node_seconds * 1000 / n;
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RenderMetrics)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(5);

// One sample of the dashboard's history (dashboard/sampler.h) with `range(0)` running pods, as
// BM_RenderMetrics fills them. locked_ms: the part under the daemon's lock (CollectSample; before
// the live facts, the whole TakeSample), per sample (locked_max_ms the longest); sample_ms: the
// whole sample.
void BM_DashboardSample(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  FillForScrapes(c, state.range(0));
  benchmark::DoNotOptimize(arbiter::server::dashboard::TakeSample(c, 1));  // as BM_RenderMetrics
  double locked_seconds = 0, sample_seconds = 0, locked_max = 0;
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a) {
    return std::chrono::duration<double>(Clock::now() - a).count();
  };
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto facts = arbiter::server::dashboard::CollectSample(c, state.range(0) + 1000);
    const double locked = seconds(t0);
    const auto sample = arbiter::server::dashboard::MakeSample(facts);
    locked_max = std::max(locked_max, locked);
    locked_seconds += locked;
    sample_seconds += seconds(t0);
    benchmark::DoNotOptimize(sample.pool.used.entries().data());
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["locked_ms"] = locked_seconds * 1000 / n;
  state.counters["locked_max_ms"] = locked_max * 1000;
  state.counters["sample_ms"] = sample_seconds * 1000 / n;
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DashboardSample)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// The dashboard's cluster views (/ui/api/pool, /ui/api/tenants, /ui/api/queue; dashboard/views.h)
// with `range(0)` running pods, as BM_RenderMetrics fills them, and `range(1)` pending ones (no
// node fits them), for an admin. Each collects its
// facts under the daemon's lock (Daemon::Read: the live facts shared, nodes, namespaces, quotas)
// and is built after it. pool_ms, tenants_ms, queue_ms: the whole view (the median of 5);
// queue_every_row_ms: the queue with every row (before its page of kQueueRows);
// *_lock_ms: its collection alone, what the lock is held for; workloads_ms, nodes_ms:
// Engine::Workloads() and Engine::Nodes() alone, which the views read under the lock until they
// read the facts; *_after_capture_ms: the same first after a
// snapshot's capture (Cluster::CaptureSnapshot, its capture kept as the snapshot thread keeps it
// while it writes), where the engine's table is copied as it is read (slot_table.h).
void BM_DashboardViews(benchmark::State& state) {
  namespace dash = arbiter::server::dashboard;
  arbiter::server::Cluster c("0000abcd");
  FillForScrapes(c, state.range(0));
  for (int64_t i = 0; i < state.range(1); ++i) {  // pending: no node has 1000 CPUs
    Json pod = Json::parse(PodJson("wait-" + std::to_string(i)));
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1000";
    auto m = Create(pod);
    m.time = state.range(0) + i;
    (void)c.Apply(m);
  }
  (void)c.TakeWatchEvents();
  c.store().Trim();
  if (c.engine().Workloads().size() < static_cast<size_t>(state.range(0) + state.range(1)))
    return state.SkipWithError("the fill made fewer workloads than asked");
  const dash::Viewer admin;
  using Clock = std::chrono::steady_clock;
  const auto ms = [](auto&& f) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(f());
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  // `name_ms`: the whole view; `name_lock_ms`: what the daemon's lock is held for (the facts'
  // collection, dash::CollectFacts), the view being built after it is released.
  using View = dash::ClusterView;
  auto lock = [&](View kind) { return Json(dash::CollectFacts(c, kind).live.chunks()); };
  const std::pair<const char*, std::function<Json()>> views[] = {
      {"pool", [&] { return dash::PoolView(c, admin); }},
      {"pool_lock", [&] { return lock(View::kPool); }},
      {"tenants", [&] { return dash::TenantsView(c, admin); }},
      {"tenants_lock", [&] { return lock(View::kTenants); }},
      {"queue", [&] { return dash::QueueView(c, admin, c.now()); }},  // the default page
      {"queue_every_row", [&] { return dash::QueueView(c, admin, c.now(), SIZE_MAX); }},
      {"queue_lock", [&] { return lock(View::kQueue); }},
      {"workloads", [&] { return Json(c.engine().Workloads().size()); }},
      {"nodes", [&] { return Json(c.engine().Nodes().size()); }}};
  for (auto _ : state) {
    for (const auto& [name, view] : views) {
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) t.push_back(ms(view));
      std::sort(t.begin(), t.end());
      state.counters[std::string(name) + "_ms"] = t[2];
      const auto capture = c.CaptureSnapshot();
      state.counters[std::string(name) + "_after_capture_ms"] = ms(view);
    }
  }
}
BENCHMARK(BM_DashboardViews)
    ->Args({100000, 0})
    ->Args({100000, 20000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The body of a list of `range(0)` pods written from the stored objects (no HTTP, no lock): what
// a list costs the worker that answers it. range(1) = 0: every object's tree walked
// (kube::AppendWireJson); 1: the stored wire texts written (StoredObject::AppendWireText: a
// Pod's packed text unpacked).
void BM_ListBodyWrite(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 16);
  AddRunningPods(c, state.range(0));
  const auto pods = c.store().ListStored("Pod", "");
  const bool texts = state.range(1) == 1;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    for (const auto& p : pods) {
      if (texts)
        p.stored().AppendWireText(out);
      else
        arbiter::kube::AppendWireJson(out, *p);
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ListBodyWrite)->Args({10000, 0})->Args({10000, 1})->Unit(benchmark::kMillisecond);

// The rows of a `kubectl get pods` Table of `range(0)` pods written from the stored objects (no
// HTTP, no lock), includeObject=Metadata (kubectl's default). range(1) = 0: only each object's tree
// got (a cold Pod's text parsed again); 1: the rows written from the trees (kube::TableRow); 2: the
// rows written as a list asked as Table writes them, a cold Pod's from its text
// (kube::TableRowFromText: its text unpacked, only what the printer reads parsed).
void BM_ListTableWrite(benchmark::State& state) {
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 16);
  AddRunningPods(c, state.range(0));
  c.store().Trim();
  const auto pods = c.store().ListStored("Pod", "");
  c.store().Trim();
  const auto& r = *arbiter::kube::FindResourceByKind("v1", "Pod");
  const bool rows = state.range(1) == 1;
  const bool from_text = state.range(1) == 2;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out, text;
    for (size_t i = 0; i < pods.size(); ++i) {
      if (from_text) {
        text.clear();
        pods[i].stored().AppendWireText(text);
        if (!arbiter::kube::TableRowFromText(out, r, text, 1000000,
                                             arbiter::kube::IncludeObject::kMetadata, i == 0))
          state.SkipWithError("a row not written from its text");
        continue;
      }
      const auto tree = pods[i].stored().tree();
      if (rows)
        arbiter::kube::TableRow(out, r, *tree, 1000000, arbiter::kube::IncludeObject::kMetadata,
                                i == 0);
      benchmark::DoNotOptimize(tree.get());
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ListTableWrite)
    ->Args({10000, 0})
    ->Args({10000, 1})
    ->Args({10000, 2})
    ->Unit(benchmark::kMillisecond);

// The chunks of `frozen` where `keys` are or would go: their number.
size_t ChunksReached(const arbiter::server::ObjectStore::Objects::Frozen& frozen,
                     const std::vector<arbiter::server::ObjectStore::Key>& keys) {
  if (frozen.chunks() == 0) return 0;
  std::vector<arbiter::server::ObjectStore::Key> firsts;  // each chunk's first key
  for (size_t c = 0; c < frozen.chunks(); ++c) firsts.push_back(frozen.chunk(c).front().first);
  std::set<std::ptrdiff_t> reached;  // the last chunk whose first key is not above the key
  for (const auto& k : keys)
    reached.insert(std::upper_bound(firsts.begin() + 1, firsts.end(), k) - firsts.begin() - 1);
  return reached.size();
}

// What the first writes after a list's pick cost (issue 27): a whole pick shares the store's
// chunks (ObjectStore::Freeze) and starts a new epoch of its map, so the first write to each
// chunk after it copies the chunk's rows (chunk_map.h); a namespace's pick (FreezeNamespace)
// shares only its chunks, which alone are copied so. 6,400 pods created through the Cluster,
// named after existing pods spread over every namespace (so they reach most chunks, near the
// worst case), timed with no pick since the chunks they reach were last written (writes_ms),
// right after a whole pick, its range held (writes_after_pick_ms), and right after a pick of
// ns-7 (3,000 pods at 300k), its range held (writes_after_ns_pick_ms): 7 rounds of the three
// alternated, after one untimed, each round's pods deleted after it (untimed; the deletes write
// the same chunks); medians, writes_extra_ms and writes_ns_extra_ms the medians of each round's
// difference with writes_ms, writes_copies and writes_ns_copies the chunks the writes copied.
// chunks: the Pods' chunks, chunks_written those the writes reach; chunk_copy_us: a copy of one
// chunk's rows, the mean over them all.
void MeasureWritesAfterPick(arbiter::server::Cluster& c, int64_t pods, benchmark::State& state) {
  constexpr int kWrites = 6400, kNamespaces = 100;
  int64_t step = std::max<int64_t>(1, pods / kWrites);
  while (std::gcd(step, kNamespaces) != 1) --step;  // every namespace: step and 100 coprime
  const auto key_of = [&](int64_t j, const std::string& tail) {
    return arbiter::server::ObjectStore::Key{"ns-" + std::to_string(j * step % kNamespaces),
                                             "p-" + std::to_string(j * step) + tail};
  };
  int round = 0;
  int64_t time = pods;  // after the fill's
  const auto writes = [&] {
    const std::string tail = "w" + std::to_string(round++);
    std::vector<arbiter::server::ObjectStore::Key> made;
    for (int64_t j = 0; j < kWrites; ++j) {
      made.push_back(key_of(j, tail));
      Json pod = Json::parse(PodJson(made.back().second));
      pod["metadata"]["namespace"] = made.back().first;
      auto m = Create(pod);
      m.time = ++time;
      if (!c.ApplyShared(m).ok()) state.SkipWithError("a create was refused");
    }
    return made;
  };
  const auto remove = [&](const std::vector<arbiter::server::ObjectStore::Key>& made) {
    for (const auto& [ns, name] : made) {
      arbiter::server::Mutation m;
      m.op = arbiter::server::Mutation::Op::kDelete;
      m.kind = "Pod";
      m.namespace_ = ns;
      m.name = name;
      m.grace_period = 0;
      m.time = ++time;
      if (!c.ApplyShared(m).ok()) state.SkipWithError("a delete was refused");
    }
    (void)c.TakeWatchEvents();
    c.store().Trim();
  };
  const auto since = [](std::chrono::steady_clock::time_point s) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
  };
  const auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const auto copied_yet = [&] { return static_cast<double>(c.store().All("Pod").copies()); };
  remove(writes());  // untimed: the chunks the writes reach are all written since the last pick
  std::vector<double> without, after, extra, after_ns, extra_ns, copied, copied_ns;
  for (int r = 0; r < 7; ++r) {
    auto s = std::chrono::steady_clock::now();
    auto made = writes();
    without.push_back(since(s));
    remove(made);
    for (const std::string ns : {"", "ns-7"}) {  // a whole pick, then one namespace's
      const auto range = arbiter::server::PickObjects(c.store(), "Pod", ns, nullptr);
      const double was = copied_yet();
      s = std::chrono::steady_clock::now();
      made = writes();
      const double t = since(s);
      (ns.empty() ? after : after_ns).push_back(t);
      (ns.empty() ? extra : extra_ns).push_back(t - without.back());
      (ns.empty() ? copied : copied_ns).push_back(copied_yet() - was);
      remove(made);
    }
  }
  state.counters["writes_ms"] = median(without);
  state.counters["writes_after_pick_ms"] = median(after);
  state.counters["writes_extra_ms"] = median(extra);
  state.counters["writes_copies"] = median(copied);
  state.counters["writes_after_ns_pick_ms"] = median(after_ns);
  state.counters["writes_ns_extra_ms"] = median(extra_ns);
  state.counters["writes_ns_copies"] = median(copied_ns);
  const auto frozen = c.store().Freeze("Pod");
  state.counters["chunks"] = static_cast<double>(frozen.chunks());
  std::vector<arbiter::server::ObjectStore::Key> keys;
  for (int64_t j = 0; j < kWrites; ++j) keys.push_back(key_of(j, "w0"));
  state.counters["chunks_written"] = static_cast<double>(ChunksReached(frozen, keys));
  using Rows = std::decay_t<decltype(frozen.chunk(0))>;
  std::vector<Rows> copies;
  copies.reserve(frozen.chunks());
  const auto s = std::chrono::steady_clock::now();
  for (size_t i = 0; i < frozen.chunks(); ++i) copies.push_back(frozen.chunk(i));
  state.counters["chunk_copy_us"] = since(s) * 1000 / static_cast<double>(frozen.chunks());
}

// `pods` more running pods in a namespace of their own, ns-big, created after
// MeasureWritesAfterPick's (as many as all the others together at first).
void FillBigNamespace(arbiter::server::Cluster& c, int64_t pods) {
  (void)c.Apply(
      Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ns-big"}}}}));
  for (int64_t i = 0; i < pods; ++i) {
    Json pod = Json::parse(PodJson("p-" + std::to_string(i)));
    pod["metadata"]["namespace"] = "ns-big";
    auto m = Create(pod);
    m.time = 2 * pods + 1'000'000 + i;  // after MeasureWritesAfterPick's
    (void)c.ApplyShared(m);
    if (i % 1024 == 0) (void)c.TakeWatchEvents();
  }
  (void)c.TakeWatchEvents();
  c.store().Trim();
}

// The median of 5 picks' time (ms), each range let go after its timing, as the daemon lets a
// list's range go after the lock is released (freeing 300k refs is milliseconds of its own).
template <typename F>
double PickMs(F&& pick) {
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    std::optional<arbiter::server::ListRange> kept;
    const auto s = std::chrono::steady_clock::now();
    kept.emplace(pick());
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// What a list of one namespace's, one node's or all the pods holds the daemon's lock for, with
// `range(0)` running pods in 100 namespaces on 64 nodes (issue 27: lists at 1M live pods). The
// pick is PickObjects (list_pages.h), under the lock; the match is the list's selectors applied
// after, off the lock (a compacted pod's text parsed again). Counters (ms, the median of 5; a
// pick's range let go after its timing, PickMs):
// ns_pick_ms (`kubectl get pods -n X`: one namespace), all_pick_ms (`kubectl get pods -A`, whose
// first page of 500 picks every pod for its continues), node_scan_ms / node_scan_match_ms (a
// field selector spec.nodeName=NODE, NODE the first pod's, picked as a list of every pod, then
// matched: the way before the index), node_pick_ms / node_match_ms (picked from the index, then
// matched), node_match_text_ms (the same match as lists make it: of a compacted pod only
// spec.nodeName parsed from its text), node_pods (the node's); ns_refs_ms (the namespace picked
// as refs, as PickObjects did before it shared a namespace's chunks); then the first writes after
// a pick (MeasureWritesAfterPick: writes_ms, writes_after_pick_ms, writes_extra_ms,
// writes_copies, writes_after_ns_pick_ms, writes_ns_extra_ms, writes_ns_copies, chunks,
// chunks_written, chunk_copy_us); last, `range(0)` more pods in a namespace of their own
// (big_ns_pods, the kind's objects now 2 * range(0)) picked as PickObjects does (big_ns_pick_ms)
// and as refs (big_ns_refs_ms), each median of 5 twice, alternated, the second kept.
void BM_ListPick(benchmark::State& state) {
  constexpr int kNamespaces = 100;
  arbiter::server::Cluster c("0000abcd");
  AddDefaultNamespaceAndNodes(c, 64);
  for (int n = 0; n < kNamespaces; ++n)
    (void)c.Apply(Create({{"apiVersion", "v1"},
                          {"kind", "Namespace"},
                          {"metadata", {{"name", "ns-" + std::to_string(n)}}}}));
  for (int64_t i = 0; i < state.range(0); ++i) {
    Json pod = Json::parse(PodJson("p-" + std::to_string(i)));
    pod["metadata"]["namespace"] = "ns-" + std::to_string(i % kNamespaces);
    auto m = Create(pod);
    m.time = i;
    (void)c.ApplyShared(m);
    if (i % 1024 == 0) (void)c.TakeWatchEvents();
  }
  (void)c.TakeWatchEvents();
  c.store().Trim();
  const auto& r = *arbiter::kube::FindResourceByKind("v1", "Pod");
  const Json* first = c.store().Get("Pod", "ns-0", "p-0");
  const std::string node = first ? arbiter::server::PodNodeName(*first) : "";  // the first pod's
  const auto fields = arbiter::kube::ParseFieldSelector("spec.nodeName=" + node, r).value();
  const auto ms = [](auto&& f) {
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      const auto s = std::chrono::steady_clock::now();
      f();
      t.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const auto matched = [&](const arbiter::server::ListRange& range) {
    size_t n = 0;
    for (const auto& o : range) n += fields.Matches(*o.stored().tree()) ? 1 : 0;
    return n;
  };
  // As a list matches since a51fc5a: of a compacted pod only what the selector reads is parsed.
  const arbiter::json_sparse::Keep reads = arbiter::kube::SelectorReads({}, fields);
  const auto matched_text = [&](const arbiter::server::ListRange& range) {
    size_t n = 0;
    std::string scratch;
    const auto match = [&](const Json& o) { return fields.Matches(o); };
    for (const auto& o : range) n += MatchesStored(o.stored(), reads, match, scratch) ? 1 : 0;
    return n;
  };
  using arbiter::server::ListRange;
  using arbiter::server::PickObjects;
  const auto& store = c.store();
  size_t node_pods = 0;
  for (auto _ : state) {
    state.counters["ns_pick_ms"] =
        PickMs([&] { return PickObjects(store, "Pod", "ns-7", nullptr); });
    state.counters["all_pick_ms"] = PickMs([&] { return PickObjects(store, "Pod", "", nullptr); });
    const auto all = PickObjects(store, "Pod", "", nullptr);
    state.counters["node_scan_ms"] = state.counters["all_pick_ms"];
    state.counters["node_scan_match_ms"] = ms([&] { node_pods = matched(all); });
    state.counters["node_pick_ms"] = PickMs([&] { return PickObjects(store, "Pod", "", &node); });
    const auto picked = PickObjects(store, "Pod", "", &node);
    state.counters["node_match_ms"] = ms([&] { (void)matched(picked); });
    state.counters["node_match_text_ms"] = ms([&] {
      if (matched_text(picked) != node_pods) state.SkipWithError("the text's match differs");
    });
    if (picked.size() != node_pods || node.empty())
      state.SkipWithError("the index and the scan differ, or the first pod is not bound");
    state.counters["ns_refs_ms"] =
        PickMs([&] { return ListRange(store.ListStored("Pod", "ns-7")); });
    // Last: the matches above took ~35% longer after its writes (on either backing).
    MeasureWritesAfterPick(c, state.range(0), state);
    FillBigNamespace(c, state.range(0));
    for (int round = 0; round < 2; ++round) {  // alternated
      state.counters["big_ns_pick_ms"] =
          PickMs([&] { return PickObjects(store, "Pod", "ns-big", nullptr); });
      state.counters["big_ns_refs_ms"] =
          PickMs([&] { return ListRange(store.ListStored("Pod", "ns-big")); });
    }
    state.counters["big_ns_pods"] =
        static_cast<double>(PickObjects(store, "Pod", "ns-big", nullptr).size());
  }
  state.counters["node_pods"] = static_cast<double>(node_pods);
}
BENCHMARK(BM_ListPick)->Arg(300000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// What one namespace's pick costs on either backing, by the namespace's size: the measure behind
// kNamespaceRefsBelow (list_pages.h). An ObjectStore (no Cluster; Pods compact as the daemon's)
// of `range(0)` pods in 100 namespaces, and namespaces s-8 .. s-2048 of n pods each created
// among them (as a namespace's pods come over time, not in one run). For each n, 21 rounds of a
// refs' pick (ListRange(ListStored)) and a shared one (ListRange(FreezeNamespace)), each followed
// by an overwrite of the namespace's n pods, its range held: refs_us_N and shared_us_N, the
// picks alone (a range is let go untimed, as lists let it go off the lock); write_extra_us_N,
// the overwrites after a shared pick less those after a refs' pick in the same round (the copies
// of the chunks it shares: chunks_N); medians.
void BM_NamespacePickSizes(benchmark::State& state) {
  using arbiter::server::ListRange;
  const std::vector<int64_t> sizes = {8, 32, 128, 512, 2048};
  const int64_t pods = state.range(0);
  arbiter::server::ObjectStore store;
  store.SetCompact({"Pod"}, arbiter::server::Cluster::kHotTrees);
  const Json pod = Json::parse(PodJson("p"));
  const auto put = [&](const std::string& ns, const std::string& name, int64_t gen) {
    Json o = pod;
    o["metadata"]["name"] = name;
    o["metadata"]["namespace"] = ns;
    o["metadata"]["labels"] = {{"gen", std::to_string(gen)}};
    (void)store.Put("Pod", ns, name, std::move(o));
  };
  const auto settle = [&] {
    (void)store.TakeEvents();
    store.Trim();
  };
  for (int64_t i = 0; i < pods; ++i) {
    put("ns-" + std::to_string(i % 100), "p-" + std::to_string(i), 0);
    for (const int64_t n : sizes)
      if (const int64_t every = std::max<int64_t>(1, pods / n); i % every == 0 && i / every < n)
        put("s-" + std::to_string(n), "p-" + std::to_string(i), 0);
    if (i % 1024 == 0) settle();
  }
  settle();
  const auto us_since = [](std::chrono::steady_clock::time_point s) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
  };
  const auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  for (auto _ : state) {
    for (const int64_t n : sizes) {
      const std::string ns = "s-" + std::to_string(n), tag = std::to_string(n);
      std::vector<std::string> names;
      for (const auto& o : store.ListStored("Pod", ns))
        names.push_back(o.stored().tree()->at("metadata").at("name").get<std::string>());
      settle();
      std::vector<double> refs, shared, extra;
      for (int64_t round = 1; round <= 21; ++round) {
        double after[2] = {0, 0};
        for (const bool share : {false, true}) {
          auto s = std::chrono::steady_clock::now();
          ListRange range(share ? ListRange(store.FreezeNamespace("Pod", ns))
                                : ListRange(store.ListStored("Pod", ns)));
          (share ? shared : refs).push_back(us_since(s));
          s = std::chrono::steady_clock::now();
          for (const std::string& name : names) put(ns, name, round);
          after[share] = us_since(s);
          settle();
        }
        extra.push_back(after[1] - after[0]);
      }
      state.counters["refs_us_" + tag] = median(refs);
      state.counters["shared_us_" + tag] = median(shared);
      state.counters["write_extra_us_" + tag] = median(extra);
      if (names.size() != static_cast<size_t>(n)) state.SkipWithError("a namespace's size");
    }
  }
  for (const int64_t n : sizes)  // last: each freeze marks its chunks
    state.counters["chunks_" + std::to_string(n)] =
        static_cast<double>(store.FreezeNamespace("Pod", "s-" + std::to_string(n)).chunks());
}
BENCHMARK(BM_NamespacePickSizes)
    ->Arg(300000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// `range(0)` batch/v1 Jobs of 4 pods each (parallelism 4, completions 4) created one after the
// other in one namespace, on the state machine alone: what the Job controller costs a create as
// Jobs and their pods accumulate (jobs_per_s: Job creates, each making its 4 pods).
void BM_ClusterCreateJobs(benchmark::State& state) {
  Json tmpl = Json::parse(PodJson("x"));
  tmpl["spec"]["restartPolicy"] = "Never";
  tmpl["metadata"] = {{"annotations", {{"arbiter.dev/duration", "1h"}}}};
  double seconds = 0;
  for (auto _ : state) {
    arbiter::server::Cluster c("0000abcd");
    (void)c.Apply(
        Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
    for (int i = 0; i < 16; ++i) (void)c.Apply(Create(NodeJson(i)));
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t j = 0; j < state.range(0); ++j) {
      auto m =
          Create({{"apiVersion", "batch/v1"},
                  {"kind", "Job"},
                  {"metadata", {{"name", "job-" + std::to_string(j)}, {"namespace", "default"}}},
                  {"spec", {{"parallelism", 4}, {"completions", 4}, {"template", tmpl}}}});
      m.time = j + 1;
      if (!c.Apply(m).ok()) state.SkipWithError("job create refused");
      (void)c.TakeWatchEvents();
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (c.store().List("Pod", "default").size() != static_cast<size_t>(4 * state.range(0)))
      state.SkipWithError("not 4 pods per Job");
  }
  state.counters["jobs_per_s"] =
      static_cast<double>(state.iterations() * state.range(0)) / std::max(seconds, 1e-9);
}
BENCHMARK(BM_ClusterCreateJobs)->Arg(250)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The median of the milliseconds in [begin, end) of `ms` (0 if none).
double MedianMs(std::vector<double>::const_iterator begin,
                std::vector<double>::const_iterator end) {
  std::vector<double> v(begin, end);
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// One batch/v1 Job of range(0) running pods (parallelism range(0), completions twice that), on the
// state machine alone: its create (create_ms: the first sync's worth of pods, 200) and the clock's
// advances that make the rest, 200 each (fill_ms, all of them; advance_first_ms and
// advance_last_ms, the median advance of the first and the last tenth of the fill: what a sync
// costs as the Job grows); then 40 of its pods deleted one at a time (grace 0), each a mutation
// the Job controller answers with a replacement: what one event of a big Job costs (event_ms,
// the median; event_max_ms). range(1) = 1: an Indexed Job (completions range(0), kube's most for
// one), whose syncs still walk every active pod for their indexes.
void BM_ClusterBigJobPodEvents(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point s) {
    return std::chrono::duration<double, std::milli>(Clock::now() - s).count();
  };
  const int64_t n = state.range(0);
  const bool indexed = state.range(1) == 1;
  Json tmpl = Json::parse(PodJson("x"));
  tmpl["spec"]["restartPolicy"] = "Never";
  tmpl["metadata"] = {{"annotations", {{"arbiter.dev/duration", "10h"}}}};
  for (auto _ : state) {
    arbiter::server::Cluster c("0000abcd");
    (void)c.Apply(
        Create({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}}));
    for (int i = 0; i < 16; ++i) (void)c.Apply(Create(NodeJson(i)));
    Json spec = {{"parallelism", n}, {"completions", 2 * n}, {"template", tmpl}};
    if (indexed) spec.update({{"completions", n}, {"completionMode", "Indexed"}});
    auto job = Create({{"apiVersion", "batch/v1"},
                       {"kind", "Job"},
                       {"metadata", {{"name", "big"}, {"namespace", "default"}}},
                       {"spec", spec}});
    job.time = 1000;
    const auto t0 = Clock::now();
    if (!c.Apply(job).ok()) return state.SkipWithError("job create refused");
    state.counters["create_ms"] = ms_since(t0);
    (void)c.TakeWatchEvents();
    std::vector<double> advances;
    for (auto due = c.NextDue(); due && *due <= c.now(); due = c.NextDue())
      advances.push_back(AdvanceTo(c, *due) * 1000);
    state.counters["fill_ms"] = ms_since(t0);
    const auto tenth = static_cast<std::ptrdiff_t>(advances.size() / 10);
    state.counters["advance_first_ms"] = MedianMs(advances.begin(), advances.begin() + tenth);
    state.counters["advance_last_ms"] = MedianMs(advances.end() - tenth, advances.end());
    std::vector<std::string> names;
    for (const auto& [key, pod] : c.store().All("Pod")) names.push_back(key.second);
    if (names.size() != static_cast<size_t>(n)) return state.SkipWithError("not n pods");
    std::vector<double> ms;
    for (int i = 0; i < 40; ++i) {
      arbiter::server::Mutation del;
      del.op = arbiter::server::Mutation::Op::kDelete;
      del.kind = "Pod";
      del.namespace_ = "default";
      del.name = names[static_cast<size_t>(i) * names.size() / 40];
      del.grace_period = 0;
      del.time = c.now() + 1;
      const auto s = Clock::now();
      if (!c.Apply(del).ok()) return state.SkipWithError("delete refused");
      ms.push_back(ms_since(s));
      (void)c.TakeWatchEvents();
    }
    if (c.store().List("Pod", "default").size() != static_cast<size_t>(n))
      return state.SkipWithError("a deleted pod not replaced");
    std::sort(ms.begin(), ms.end());
    state.counters["event_ms"] = ms[ms.size() / 2];
    state.counters["event_max_ms"] = ms.back();
  }
}
BENCHMARK(BM_ClusterBigJobPodEvents)
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Args({100000, 0})
    ->Args({10000, 1})
    ->Args({100000, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
}  // namespace

// A strategic merge patch of a Pod whose lists hold `range(0)` elements, applied to a live Pod with
// as many (kube::ApplyPatch: the body parsed, then merged; no HTTP, no lock): what a hostile
// `PATCH ...?dryRun=All` costs the worker that answers it. range(1) = 0: spec.containers merged
// by name (every patch element matches a live one, in reverse order); 1: the list directives
// ($setElementOrder of the containers reversed, $deleteFromPrimitiveList of every finalizer but
// one, $retainKeys of as many fields on a container that has them all).
void BM_StrategicMergePatch(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool directives = state.range(1) == 1;
  Json live = Json::parse(PodJson("p"));
  Json containers = Json::array();
  Json finalizers = Json::array();
  for (int i = 0; i < n; ++i) {
    containers.push_back({{"name", "c" + std::to_string(i)}, {"image", "i"}});
    finalizers.push_back("f" + std::to_string(i));
  }
  live["spec"]["containers"] = containers;
  live["metadata"]["finalizers"] = finalizers;
  Json patch = {{"spec", Json::object()}};
  Json order = Json::array();
  Json keys = Json::array();
  for (int i = n - 1; i >= 0; --i) {
    order.push_back({{"name", "c" + std::to_string(i)}});
    keys.push_back("k" + std::to_string(i));
  }
  if (directives) {
    patch["spec"]["$setElementOrder/containers"] = order;
    finalizers.erase(finalizers.begin());
    patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = finalizers;
    keys.push_back("name");
    Json c0 = {{"name", "c0"}, {"$retainKeys", keys}};
    for (int i = 0; i < n; ++i) c0["k" + std::to_string(i)] = "v";
    patch["spec"]["containers"] = {c0};
  } else {
    for (auto& e : order) e["image"] = "j";
    patch["spec"]["containers"] = order;
  }
  const std::string body = patch.dump();
  const auto* pods = arbiter::kube::FindResource("", "v1", "pods");
  size_t out_size = 0;
  for (auto _ : state) {
    auto out = arbiter::kube::ApplyPatch(arbiter::kube::PatchType::kStrategicMergePatch, &live,
                                         body, *pods);
    if (!out.ok()) {
      state.SkipWithError(out.message().c_str());
      return;
    }
    out_size = (*out)["spec"]["containers"].size();
  }
  state.counters["body_bytes"] = static_cast<double>(body.size());
  state.counters["containers_out"] = static_cast<double>(out_size);
}
BENCHMARK(BM_StrategicMergePatch)
    ->Args({20000, 0})
    ->Args({20000, 1})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
