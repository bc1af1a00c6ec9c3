// The daemon's core, without HTTP: the Cluster behind one lock, its journal, its watch feed and
// the wall clock. Start-up restores the latest snapshot and replays the journal after it;
// Mutate() applies a request at the clock's time, journals it and returns once it is durable
// (the caller acknowledges then); a clock thread advances the cluster when a timer (a virtual
// pod ends, a signalled pod exits) or an engine wake-up is due. Every `snapshot_every` records a
// snapshot is taken and the journal compacted.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "server/cluster.h"
#include "server/journal.h"
#include "server/watch_log.h"

namespace arbiter::server {

struct DaemonOptions {
  std::string data_dir;
  std::function<Millis()> clock;   // Unix ms; default: the system clock
  int64_t snapshot_every = 50000;  // records between snapshots (0: never); docs/serve.md
  bool check_invariants = false;   // Engine::CheckInvariants after start-up and every mutation
};

struct StartupInfo {
  bool from_snapshot = false;
  int64_t snapshot_seq = 0;
  int64_t replayed = 0;
  double seconds = 0;
};

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> Open(DaemonOptions options);
  ~Daemon();

  // Applies `m` at the clock's time (m.time is set here); on success journals it and waits until
  // it is durable. A journal failure answers an error (kUnavailable).
  MutationResult Mutate(Mutation m);

  // Runs `f` on the cluster under the lock (reads only).
  template <typename F>
  auto Read(F&& f) const {
    std::lock_guard<std::mutex> l(mu_);
    return f(static_cast<const Cluster&>(*cluster_));
  }

  WatchLog& watch_log() { return watch_; }
  const Journal& journal() const { return *journal_; }
  const StartupInfo& startup() const { return startup_; }
  // Writes a snapshot now (also done every snapshot_every records).
  void SnapshotNow();

  // Stops the clock thread and the journal writer (what was acknowledged is durable already).
  void Stop();

 private:
  explicit Daemon(DaemonOptions o) : options_(std::move(o)) {}
  Millis Now() const;
  void ClockLoop();
  // Journals an applied mutation (lock held) given its EncodeBody(); returns its sequence number.
  int64_t Record(const Mutation& m, const std::string& body);
  void MaybeSnapshot();

  DaemonOptions options_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Cluster> cluster_;
  WatchLog watch_;
  StartupInfo startup_;
  mutable std::mutex mu_;
  std::condition_variable clock_cv_;
  bool stopping_ = false;
  Millis last_time_ = 0;
  int64_t since_snapshot_ = 0;
  std::thread clock_;
};

}  // namespace arbiter::server
