// The daemon's core, without HTTP: the Cluster behind one lock, its journal, its watch feed and
// the wall clock. Start-up restores the latest snapshot and replays the journal after it;
// Mutate() applies a request at the clock's time, journals it and returns once it is durable
// (the caller acknowledges then); a clock thread advances the cluster when a timer (a virtual
// pod ends, a signalled pod exits) or an engine wake-up is due. Every `snapshot_every` records (or
// more, as the state grows: SnapshotInterval), or sooner once the records since the last snapshot
// hold `snapshot_bytes` (or more: SnapshotBytes), a snapshot is taken and the journal compacted:
// the state is captured under the lock (Cluster::CaptureSnapshot, cheap per live object), and a
// snapshot thread makes its bytes and stores them (Journal::StoreSnapshot) while requests go on.
//
// Durable before visible. A mutation is applied to the cluster under the lock and queued for the
// journal (group commit: one fsync for every request applied meanwhile), but no one sees the
// cluster while it holds a change that is not durable yet: Read() (GET, list, /metrics, the
// dashboard, the meter job) waits until the journal has committed everything applied, holding
// new mutations back meanwhile (at most one commit, at most the read timeout: then ReadTimeout);
// watch events are published once durable;
// a refused request is answered only once the state it was judged on is durable.
// A failed journal write is sticky (LevelDB's bg_error_): the cluster is rebuilt from what is
// durable (the changes applied after it are dropped, never shown), every mutation after it is
// refused (503, with the reason), the clock stops, Health() says why (/readyz) and the
// OnJournalFailure() callback is told once (the log).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/durability/journal.h"
#include "server/http/watch_log.h"
#include "server/state/cluster.h"

namespace arbiter::server {

struct DaemonOptions {
  std::string data_dir;
  std::function<Millis()> clock;   // Unix ms; default: the system clock
  int64_t snapshot_every = 50000;  // records between snapshots (0: never); docs/serve.md
  // Engine::CheckInvariants, Cluster::CheckJobPodFacts and Cluster::CheckPdbStatuses after
  // start-up and every mutation (a violation fails the start, or aborts).
  bool check_invariants = false;
  // And at least this many records per object the last snapshot held (0: snapshot_every alone):
  // a snapshot costs about its objects, so spread over as many records it costs each record the
  // same whatever the cluster's size (issue 27: flat to 1M live pods).
  double snapshot_growth = 1.0;
  // Also a snapshot once the records since the last one hold this many bytes (their text and
  // commands, as Journal::Append stores them), or snapshot_growth times the last snapshot's size
  // if more (0: by records alone). The record count alone let a tenant patching a 1.5 MB object
  // write ~3 MB records until the disk filled (50,000 of them before a snapshot). Snapshots are
  // never taken with snapshot_every 0, whatever this says.
  // `arbiter serve --snapshot-bytes` refuses less than kMinSnapshotBytes (but 0): 1 byte took a
  // snapshot of the whole state after every record. (Tests give less, with small states.)
  static constexpr int64_t kDefaultSnapshotBytes = int64_t{256} << 20;
  static constexpr int64_t kMinSnapshotBytes = int64_t{1} << 20;
  int64_t snapshot_bytes = kDefaultSnapshotBytes;
  // The clock of the daemon's own delays (a failed snapshot's back-off), not of the cluster:
  // steady, so that the wall clock stepped back (NTP, a VM resumed) does not put them off.
  // Tests; default std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> steady_clock = nullptr;
};

struct StartupInfo {
  bool from_snapshot = false;
  int64_t snapshot_seq = 0;
  int64_t replayed = 0;
  int64_t replayed_bytes = 0;  // the replayed records' text and commands
  int64_t snapshot_size = 0;   // the restored snapshot's bytes
  int migrated_from = 0;  // the journal's format when it was older (migrated at start-up), else 0
  double seconds = 0;
  double restore_seconds = 0;  // reading and restoring the snapshot
  double replay_seconds = 0;   // replaying the records after it
  // What the daemon could not make its user's alone in the data directory (Journal::warnings):
  // `arbiter serve` logs each as a warning.
  std::vector<std::string> warnings;
};

// Daemon::Read() gave up: what was applied before the read was not committed within the read
// timeout (the HTTP API answers kube-apiserver's 504 Timeout; background readers retry later).
class ReadTimeout : public std::runtime_error {
 public:
  explicit ReadTimeout(int64_t ms)
      : std::runtime_error("the journal has not committed the changes before this read within " +
                           std::to_string(ms) + " ms (a stuck disk?)") {}
};

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> Open(DaemonOptions options);
  ~Daemon();

  // Applies `m` at the clock's time (m.time is set here); on success journals it and waits until
  // it is durable. A journal failure, now or earlier, answers an error (kUnavailable) and
  // changes nothing that anyone can see.
  // copy_object = false: MutationResult::object is left empty when stored_object is set (the
  // response is written from the stored object's wire text: no copy of its tree, no second dump).
  MutationResult Mutate(Mutation m, bool copy_object = true);

  // The HTTP server's held answers (HttpServer::AnswerAfter): when `defer` is set and takes the
  // record's sequence number (it is called on Mutate's thread), Mutate returns without waiting
  // for it, and the caller answers once Durable(seq) is 1 (-1: never; answer Health()'s reason).
  void SetDeferral(bool (*defer)(int64_t seq)) { defer_ = defer; }
  int Durable(int64_t seq) const { return journal_->Durable(seq); }
  // Tests: runs on the journal's writer before each commit; an error fails it (Journal).
  void SetCommitHook(std::function<Status()> hook) { journal_->SetCommitHook(std::move(hook)); }

  // Runs `f` on the cluster under the lock (reads only), once everything applied is durable.
  // Throws ReadTimeout when that has not happened within the read timeout (a stuck journal;
  // SetReadTimeout, 0: no limit): kube-apiserver's --request-timeout bounds every request.
  template <typename F>
  auto Read(F&& f) const {
    std::unique_lock<std::mutex> l(mu_);
    if (!WaitVisible(l)) throw ReadTimeout(read_timeout_ms_.load());
    // The trees `f` read from stored objects kept as text go again, once its result is made.
    struct TrimAfter {
      const Cluster& c;
      ~TrimAfter() { c.store().Trim(); }
    } trim{*cluster_};
    return f(static_cast<const Cluster&>(*cluster_));
  }

  // How long Read() waits for the journal to commit what was applied before it (ms; 0: no
  // limit, the default). The API server sets its --request-timeout.
  void SetReadTimeout(int64_t ms) { read_timeout_ms_ = ms; }

  // OK, or kUnavailable with the reason the daemon is read-only (a journal write failed).
  Status Health() const;
  // `log` is told once when a journal write fails (the daemon is read-only from then on), with
  // the error: on the journal's writer thread, or at once if it failed already.
  void OnJournalFailure(std::function<void(const std::string&)> log);

  WatchLog& watch_log() { return watch_; }
  const Journal& journal() const { return *journal_; }
  const StartupInfo& startup() const { return startup_; }
  // Takes a snapshot now (also done every snapshot_every records) and returns once it is stored
  // (or failed: the records stay in the journal, and still count toward the next snapshot, which
  // is captured at the first record due after a back-off: 1 s, doubled at each failure in a
  // row, at most 5 min).
  void SnapshotNow();
  // Snapshots stored since start-up, and those that failed (the last failure's reason); the
  // records and their bytes since the last capture (carried over a restart: those replayed; a
  // failed snapshot's given back), the size of the last snapshot stored (or restored).
  // `captures`: the states captured for a snapshot (each then stored or failed).
  struct SnapshotStats {
    uint64_t captures = 0, stored = 0, failed = 0;
    std::string last_error;
    int64_t records_since = 0, bytes_since = 0, last_size = 0;
  };
  SnapshotStats snapshot_stats() const;
  // Tests: `hook` runs on the snapshot thread after each capture, before its bytes are made (the
  // lock is not held).
  void SetSnapshotHook(std::function<void()> hook);

  // Stops the clock thread and the journal writer (what was acknowledged is durable already).
  void Stop();

 private:
  explicit Daemon(DaemonOptions o) : options_(std::move(o)) {}
  std::atomic<bool (*)(int64_t seq)> defer_{nullptr};
  Millis Now() const;
  std::chrono::steady_clock::time_point SteadyNow() const;
  void ClockLoop();
  // Restores the snapshot and replays the records after it into `cluster` (start-up, and the
  // rebuild after a journal failure); returns the last record's seq.
  Result<int64_t> Load(Cluster& cluster, StartupInfo* info);
  static Status ApplyRecord(Cluster& cluster, const Result<Mutation>& m, Result<CommandTape>& tape,
                            const Cluster::Prepared* prepared);
  // Journals an applied mutation (lock held) given its EncodeBody(); returns its sequence number.
  int64_t Record(const Mutation& m, const std::string& body);
  void MaybeSnapshot();
  void CaptureLocked();  // lock held: the state as of the last record, for the snapshot thread
  void SnapshotLoop();
  // Lock held: everything applied is durable (or the cluster was rebuilt after a failure).
  bool Visible() const;
  // False when the read timeout passed first.
  bool WaitVisible(std::unique_lock<std::mutex>& l) const;
  // Lock held: the reason mutations are refused, "" while the journal works.
  std::string FailureLocked() const;
  // The journal's writer failed: rebuild from what is durable, go read-only.
  void JournalFailed(const std::string& error);
  void AfterCommit();

  DaemonOptions options_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Cluster> cluster_;
  WatchLog watch_;
  StartupInfo startup_;
  mutable std::mutex mu_;
  std::condition_variable clock_cv_;
  // What the clock thread sleeps until (cluster time), the lowest value while it is awake: a
  // change wakes it only when it brings something due sooner.
  Millis clock_due_ = std::numeric_limits<Millis>::min();
  // Readers waiting for the journal to catch up; mutations and the clock wait while any do.
  mutable int readers_waiting_ = 0;
  // Mutations waiting for the lock (counted outside it): the clock lets them in between the
  // advances it runs back to back, for at most kClockYield each time.
  std::atomic<int> writers_waiting_{0};
  static constexpr std::chrono::milliseconds kClockYield{50};
  std::atomic<int64_t> read_timeout_ms_{0};
  mutable std::condition_variable visible_cv_, gate_cv_;
  std::string failure_;  // set once, after the rebuild of a failed journal
  std::function<void(const std::string&)> failure_log_;
  bool stopping_ = false;
  Millis last_time_ = 0;
  int64_t since_snapshot_ = 0;
  int64_t since_snapshot_bytes_ = 0;  // the bytes of those records (text and commands)
  size_t snapshot_objects_ = 0;       // the stored objects the last snapshot held (or restored)
  int64_t snapshot_size_ = 0;         // the bytes of the last snapshot stored (or restored)
  // The records between snapshots now: max(snapshot_every, snapshot_growth * snapshot_objects_).
  int64_t SnapshotInterval() const;
  // The bytes of records between snapshots now: max(snapshot_bytes, snapshot_growth *
  // snapshot_size_); INT64_MAX when snapshot_bytes is 0.
  int64_t SnapshotBytes() const;
  // Lock held: the records since the last snapshot stored call for the next one (either bound).
  bool SnapshotDue() const;
  // The snapshot thread's work: one capture at a time (none taken while one is being stored).
  std::shared_ptr<const SnapshotCapture> capture_;
  int64_t capture_seq_ = 0;
  // What the capture took from the counts above, given back if its snapshot fails (its records
  // stay in the journal, a restart would replay them: they still call for the next snapshot).
  int64_t capture_records_ = 0, capture_bytes_ = 0;
  size_t capture_prior_objects_ = 0;
  // After a failed snapshot the next is captured at the first record due at or after
  // snapshot_retry_at_ (steady time, SteadyNow: the wall clock stepped back an hour left it an
  // hour away): kSnapshotRetryFirstMs, doubled at each failure in a row to kSnapshotRetryMaxMs,
  // none after a success. Not at the next record: a full disk would have every record capture
  // the whole state again.
  static constexpr Millis kSnapshotRetryFirstMs = 1000, kSnapshotRetryMaxMs = 300000;
  Millis snapshot_retry_ms_ = 0;
  std::chrono::steady_clock::time_point snapshot_retry_at_;
  bool snapshot_busy_ = false;  // a capture waits or is being stored
  SnapshotStats snapshot_stats_;
  std::function<void()> snapshot_hook_;
  std::condition_variable snapshot_cv_;
  std::thread clock_, snapshotter_;
};

}  // namespace arbiter::server
