#include "server/daemon.h"

#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <utility>
#include <vector>

#include "adapters/kube/limits.h"
#include "server/durability/cluster_snapshot.h"

namespace arbiter::server {

Millis Daemon::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::chrono::steady_clock::time_point Daemon::SteadyNow() const {
  return options_.steady_clock ? options_.steady_clock() : std::chrono::steady_clock::now();
}

namespace {
// --check-invariants (after start-up and every mutation): the engine's, the Job pod facts the
// Cluster keeps, and the PodDisruptionBudgets' statuses (kept up by the budgets that moved only).
Status CheckInvariants(const Cluster& cluster) {
  for (Status s :
       {cluster.engine().CheckInvariants(), cluster.CheckJobPodFacts(), cluster.CheckPdbStatuses()})
    if (!s.ok()) return s;
  return Status::Ok();
}
}  // namespace

// One record of the journal into `cluster`: format 2 (no `prepared`) plays its commands,
// format 1 applies the mutation as a request.
Status Daemon::ApplyRecord(Cluster& cluster, const Result<Mutation>& m, Result<CommandTape>& tape,
                           const Cluster::Prepared* prepared) {
  if (!m.ok()) return m.status();
  if (!prepared) {
    if (!tape.ok()) return tape.status();
    if (Status s = cluster.Replay(m.value(), tape.value()); !s.ok())
      return Status::Internal("replay refused an accepted mutation: " + s.message());
    return Status::Ok();
  }
  MutationResult res = cluster.ApplyShared(m.value(), prepared);
  if (!res.ok())
    return Status::Internal("replay refused an accepted mutation: " + res.error->message);
  return Status::Ok();
}

Result<int64_t> Daemon::Load(Cluster& cluster, StartupInfo* info) {
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  auto snap = journal_->LoadSnapshot();
  if (!snap.ok()) return snap.status();
  int64_t after = 0;
  if (snap.value()) {
    // (the Jobs' next instants by the rules of the records that follow it)
    cluster.SetFormat4Jobs(snap.value()->seq < journal_->format4_jobs_through());
    if (Status s = cluster.Restore(snap.value()->bytes); !s.ok())
      return Status::Internal("snapshot " + std::to_string(snap.value()->seq) + ": " + s.message());
    after = snap.value()->seq;
    info->from_snapshot = true;
    info->snapshot_seq = after;
    info->snapshot_size = static_cast<int64_t>(snap.value()->bytes.size());
  }
  info->restore_seconds = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  int64_t last = after;
  // Replay, pipelined: a helper thread decodes the next batch of records (format 2: the mutation
  // and its commands; format 1: the mutation, parsed and loaded by Cluster::Prepare) while this
  // one applies the current batch in order.
  const bool commands = journal_->format_version() >= 2;
  cluster.SetReplayingRequests(!commands);
  struct Row {
    int64_t seq = 0;
    std::string record, commands;
  };
  struct Decoded {
    int64_t seq = 0;
    Result<Mutation> m = Result<Mutation>::Error("");
    Result<CommandTape> tape = Result<CommandTape>::Error("");  // format 2
    Cluster::Prepared prepared;                                 // format 1
  };
  auto decode = [commands](std::vector<Row> rows) {
    std::vector<Decoded> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      out[i].seq = rows[i].seq;
      out[i].m = Mutation::Decode(rows[i].record);
      if (!out[i].m.ok()) continue;
      if (commands)
        out[i].tape = CommandTape::Decode(rows[i].commands);
      else
        out[i].prepared = Cluster::Prepare(out[i].m.value());
    }
    return out;
  };
  Status failed;
  // Each record replays by the rules of the format that wrote it (Journal::kMarks): formats 1-3
  // with the pending walk their releases did, 1-4 with their Job controller's rules, ...
  auto apply = [&](std::vector<Decoded> batch) {
    for (auto& r : batch) {
      if (!failed.ok()) return;
      cluster.SetRecordFormat(journal_->RecordFormat(r.seq));
      if (Status s = ApplyRecord(cluster, r.m, r.tape, commands ? nullptr : &r.prepared); !s.ok()) {
        failed = Status::Internal("journal record " + std::to_string(r.seq) + ": " + s.message());
        return;
      }
      (void)cluster.TakeWatchEvents();  // nobody watches history from before start-up
      last_time_ = std::max(last_time_, r.m.value().time);
      last = r.seq;
      ++info->replayed;
    }
  };
  constexpr size_t kBatch = 256;
  std::vector<Row> rows;
  std::future<std::vector<Decoded>> next;
  Status replay = journal_->Replay(
      after, [&](int64_t seq, const std::string& text, const std::string& tape) -> Status {
        // (the bytes of the records since the snapshot: the next one comes sooner, SnapshotBytes)
        info->replayed_bytes += static_cast<int64_t>(text.size() + tape.size());
        rows.push_back(Row{seq, text, tape});
        if (rows.size() < kBatch) return Status::Ok();
        if (next.valid()) apply(next.get());
        next = std::async(std::launch::async, decode, std::move(rows));
        rows.clear();
        return failed;
      });
  if (next.valid()) apply(next.get());
  if (replay.ok()) apply(decode(std::move(rows)));
  cluster.SetReplayingRequests(false);
  cluster.SetRecordFormat(Journal::kFormatVersion);  // what is appended from here on
  if (!failed.ok()) return failed;
  if (!replay.ok()) return replay;
  if (commands && info->replayed > 0) cluster.FinishReplay();
  (void)cluster.TakeWatchEvents();
  info->replay_seconds = seconds_since(t1);
  if (options_.check_invariants)
    if (Status s = CheckInvariants(cluster); !s.ok())
      return Status::Internal("after replay: " + s.message());
  return last;
}

Result<std::unique_ptr<Daemon>> Daemon::Open(DaemonOptions options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  auto j = Journal::Open(d->options_.data_dir);
  if (!j.ok()) return j.status();
  d->journal_ = std::move(j).value();
  d->startup_.warnings = d->journal_->warnings();
  d->cluster_ = std::make_unique<Cluster>(d->journal_->instance_id());
  auto last = d->Load(*d->cluster_, &d->startup_);
  if (!last.ok()) return last.status();
  d->watch_.Reset(d->cluster_->store().resource_version());
  d->since_snapshot_ = d->startup_.replayed;
  d->since_snapshot_bytes_ = d->startup_.replayed_bytes;
  if (d->startup_.from_snapshot) {
    d->snapshot_objects_ = d->cluster_->store().size();
    d->snapshot_size_ = d->startup_.snapshot_size;
  }
  // An older journal is made current: format 1 (records without commands, replayed as requests
  // just now) has a snapshot of that state replace its records; format 2 (its snapshot in the
  // journal's table) changes only its format.
  if (const int was = d->journal_->format_version(); was < Journal::kFormatVersion) {
    if (Status s = d->journal_->Migrate(last.value(), [&] { return d->cluster_->Snapshot(); });
        !s.ok())
      return Status::Internal("migrating journal format " + std::to_string(was) + ": " +
                              s.message());
    d->startup_.migrated_from = was;
    d->since_snapshot_ = 0;
    d->since_snapshot_bytes_ = 0;
  }
  Daemon* p = d.get();
  d->journal_->Start(
      last.value(), [p] { p->AfterCommit(); },
      [p](const std::string& error) { p->JournalFailed(error); });
  // A new data directory starts with the default namespace, as a cluster does.
  if (last.value() == 0) {
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Namespace";
    m.object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}};
    MutationResult r = d->Mutate(std::move(m));
    if (!r.ok()) return Status::Internal("creating namespace default: " + r.error->message);
  }
  d->startup_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d->clock_ = std::thread([p] { p->ClockLoop(); });
  d->snapshotter_ = std::thread([p] { p->SnapshotLoop(); });
  return d;
}

Daemon::~Daemon() { Stop(); }

void Daemon::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    clock_cv_.notify_all();
    gate_cv_.notify_all();
    snapshot_cv_.notify_all();
  }
  if (clock_.joinable()) clock_.join();
  snapshot_cv_.notify_all();
  if (snapshotter_.joinable()) snapshotter_.join();  // a snapshot being stored is finished
  if (journal_) journal_->Stop();
  {
    // Readers still waiting for a commit that will not come (the writer stopped) read the
    // cluster as it is: everything acknowledged is in it, and the process is going away.
    std::lock_guard<std::mutex> l(mu_);
    visible_cv_.notify_all();
  }
  watch_.Close();
}

bool Daemon::Visible() const {
  if (!failure_.empty()) return true;  // rebuilt from what is durable
  return journal_->durable_seq() >= journal_->last_seq();
}

bool Daemon::WaitVisible(std::unique_lock<std::mutex>& l) const {
  if (Visible()) return true;
  ++readers_waiting_;
  const auto done = [&] { return Visible() || stopping_; };
  bool ok = true;
  if (const int64_t ms = read_timeout_ms_.load(); ms > 0)
    ok = visible_cv_.wait_for(l, std::chrono::milliseconds(ms), done);
  else
    visible_cv_.wait(l, done);
  if (--readers_waiting_ == 0) gate_cv_.notify_all();  // changes held back for readers go on
  return ok;
}

void Daemon::AfterCommit() {
  watch_.Notify();
  std::lock_guard<std::mutex> l(mu_);  // a reader between its check and its wait is not missed
  visible_cv_.notify_all();
}

std::string Daemon::FailureLocked() const {
  if (!failure_.empty()) return failure_;
  if (journal_->failed()) return journal_->error();
  return "";
}

Status Daemon::Health() const {
  std::lock_guard<std::mutex> l(mu_);
  const std::string why = FailureLocked();
  if (why.empty()) return Status::Ok();
  return Status::Unavailable("the journal is not writable, the daemon is read-only: " + why);
}

void Daemon::OnJournalFailure(std::function<void(const std::string&)> log) {
  std::lock_guard<std::mutex> l(mu_);
  if (!failure_.empty()) return log(failure_);
  failure_log_ = std::move(log);
}

void Daemon::JournalFailed(const std::string& error) {
  std::lock_guard<std::mutex> l(mu_);
  // The cluster may hold changes that were applied and never written: it is built again from
  // what is durable, so nothing that was not written is ever shown.
  if (journal_->durable_seq() < journal_->last_seq()) {
    auto fresh = std::make_unique<Cluster>(journal_->instance_id());
    StartupInfo info;
    auto last = Load(*fresh, &info);
    if (!last.ok()) {
      // Neither what is durable nor what is in memory can be shown: stop, a restart reads the
      // journal.
      std::fprintf(stderr,
                   "arbiter serve: journal write failed (%s), and reading it back failed: %s\n",
                   error.c_str(), last.message().c_str());
      std::_Exit(70);
    }
    cluster_ = std::move(fresh);
  }
  failure_ = error;
  if (failure_log_) failure_log_(error);
  watch_.Notify();  // the HTTP server's held answers learn it now
  visible_cv_.notify_all();
  gate_cv_.notify_all();
  clock_cv_.notify_all();
}

int64_t Daemon::Record(const Mutation& m, const std::string& body) {
  auto events = std::make_shared<std::vector<WatchEvent>>(cluster_->TakeWatchEvents());
  std::string record = Mutation::WithTime(body, m.time);
  std::string tape = cluster_->TakeTape();
  since_snapshot_bytes_ += static_cast<int64_t>(record.size() + tape.size());
  const int64_t seq = journal_->Append(std::move(record), std::move(tape),
                                       [this, events] { watch_.Publish(std::move(*events)); });
  ++since_snapshot_;
  MaybeSnapshot();
  if (const auto due = cluster_->NextDue(); due && *due < clock_due_) clock_cv_.notify_all();
  return seq;
}

namespace {
ApiError Unavailable(const std::string& why) {
  ApiError e;
  e.reason = ApiError::Reason::kUnavailable;
  e.message = "the journal is not writable, the daemon is read-only: " + why;
  return e;
}
}  // namespace

MutationResult Daemon::Mutate(Mutation m, bool copy_object) {
  int64_t seq = 0;
  MutationResult r;
  // Parsing and serializing outside the lock: under it only the engine command, the object
  // store and the journal's queue.
  const std::string body = m.EncodeBody();
  // etcd's request limit, which kube-apiserver stores through: the journal record is the object.
  if ((m.op == Mutation::Op::kCreate || m.op == Mutation::Op::kUpdate) &&
      body.size() > kube::kMaxObjectBytes) {
    ApiError e;
    e.reason = ApiError::Reason::kTooLarge;
    e.kind = m.kind;
    e.name = m.name;
    e.message = std::to_string(body.size());
    r.error = std::move(e);
    return r;
  }
  const Cluster::Prepared prepared = Cluster::Prepare(m);
  {
    ++writers_waiting_;  // (the clock lets it in between its advances: ClockLoop)
    std::unique_lock<std::mutex> l(mu_);
    --writers_waiting_;
    gate_cv_.wait(l, [&] { return readers_waiting_ == 0; });
    if (const std::string why = FailureLocked(); !why.empty()) {
      r.error = Unavailable(why);
      return r;
    }
    m.time = std::max(last_time_, Now());
    r = cluster_->ApplyShared(m, &prepared);
    if (!r.ok() || m.dry_run) {
      // Answered from the state as it is, which may hold changes not durable yet: the answer
      // waits for them (an AlreadyExists must not reveal a create that a crash would undo).
      seq = journal_->last_seq();
    } else {
      last_time_ = m.time;
      if (options_.check_invariants)
        if (Status s = CheckInvariants(*cluster_); !s.ok()) {
          std::fprintf(stderr, "invariant broken after a mutation: %s\n", s.message().c_str());
          std::abort();
        }
      seq = Record(m, body);
    }
  }
  if (r.stored && (copy_object || !r.stored_object))
    r.object = *r.stored;  // the copy for the response, outside the lock
  else if (r.stored_object)
    r.text = r.stored_object->WireText();  // the response's bytes, made outside the lock
  if (auto defer = defer_.load(); defer && defer(seq)) return r;  // answered once durable
  if (!journal_->WaitDurable(seq)) {
    r = MutationResult{};
    r.error = Unavailable(journal_->error());
  }
  return r;
}

int64_t Daemon::SnapshotInterval() const {
  const double grown = options_.snapshot_growth * static_cast<double>(snapshot_objects_);
  return std::max(options_.snapshot_every, static_cast<int64_t>(std::min(grown, 1e18)));
}

int64_t Daemon::SnapshotBytes() const {
  if (options_.snapshot_bytes <= 0) return std::numeric_limits<int64_t>::max();
  const double grown = options_.snapshot_growth * static_cast<double>(snapshot_size_);
  return std::max(options_.snapshot_bytes, static_cast<int64_t>(std::min(grown, 1e18)));
}

bool Daemon::SnapshotDue() const {
  if (options_.snapshot_every <= 0) return false;  // never
  return since_snapshot_ >= SnapshotInterval() || since_snapshot_bytes_ >= SnapshotBytes();
}

void Daemon::MaybeSnapshot() {
  if (!SnapshotDue()) return;
  if (snapshot_busy_) return;  // taken once the one being stored is done
  if (snapshot_retry_ms_ > 0 && SteadyNow() < snapshot_retry_at_) return;  // the last one failed
  CaptureLocked();
}

void Daemon::CaptureLocked() {
  capture_ = cluster_->CaptureSnapshot();
  capture_seq_ = journal_->last_seq();  // the state is the one after this record
  ++snapshot_stats_.captures;
  capture_records_ = since_snapshot_;
  capture_bytes_ = since_snapshot_bytes_;
  capture_prior_objects_ = snapshot_objects_;
  snapshot_objects_ = cluster_->store().size();
  snapshot_busy_ = true;
  since_snapshot_ = 0;
  since_snapshot_bytes_ = 0;
  snapshot_cv_.notify_all();
}

void Daemon::SnapshotNow() {
  std::unique_lock<std::mutex> l(mu_);
  snapshot_cv_.wait(l, [&] { return !snapshot_busy_ || stopping_; });
  if (stopping_ || !FailureLocked().empty()) return;
  CaptureLocked();
  snapshot_cv_.wait(l, [&] { return !snapshot_busy_; });
}

void Daemon::SnapshotLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    snapshot_cv_.wait(l, [&] { return capture_ || stopping_; });
    if (!capture_) break;  // stopping (a capture taken before is stored first)
    std::shared_ptr<const SnapshotCapture> capture = std::move(capture_);
    const int64_t seq = capture_seq_;
    const std::function<void()> hook = snapshot_hook_;
    l.unlock();
    if (hook) hook();
    int64_t size = 0;  // the next snapshot waits for growth x this many bytes of records
    Status s = journal_->StoreSnapshot(seq, [&](const std::function<bool(std::string_view)>& out) {
      return capture->Write([&](std::string_view piece) {
        size += static_cast<int64_t>(piece.size());
        return out(piece);
      });
    });
    capture.reset();  // the stored objects it shared go (here, not under the lock)
    // The capture's copies and the bytes made from them (about 3 KB a live pod) were freed in the
    // middle of the heaps, where malloc keeps them: give their pages back (at 1M live pods the
    // daemon otherwise stays about at its peak, issue 27).
    malloc_trim(0);
    l.lock();
    if (s.ok()) {
      ++snapshot_stats_.stored;
      snapshot_size_ = size;
      snapshot_retry_ms_ = 0;
    } else {
      ++snapshot_stats_.failed;
      snapshot_stats_.last_error = s.message();
      // Nothing was compacted: the records it would have covered are still the journal's, and
      // still call for a snapshot (as a restart, replaying them, would count them), after a
      // back-off. Not sticky: a failed snapshot is not a failed journal write, the daemon
      // writes on and snapshots once the disk lets it.
      since_snapshot_ += capture_records_;
      since_snapshot_bytes_ += capture_bytes_;
      snapshot_objects_ = capture_prior_objects_;
      snapshot_retry_ms_ = snapshot_retry_ms_ == 0
                               ? kSnapshotRetryFirstMs
                               : std::min(2 * snapshot_retry_ms_, kSnapshotRetryMaxMs);
      snapshot_retry_at_ = SteadyNow() + std::chrono::milliseconds(snapshot_retry_ms_);
    }
    snapshot_busy_ = false;
    // The records applied while it was stored (a slow disk) may be a whole interval already: the
    // next snapshot now rather than at the next change, which may never come (shutting down
    // included: Stop() stores it before the journal stops). Not after a failure: no retry loop.
    if (s.ok() && SnapshotDue() && FailureLocked().empty()) CaptureLocked();
    snapshot_cv_.notify_all();
  }
}

void Daemon::SetSnapshotHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> l(mu_);
  snapshot_hook_ = std::move(hook);
}

Daemon::SnapshotStats Daemon::snapshot_stats() const {
  std::lock_guard<std::mutex> l(mu_);
  SnapshotStats stats = snapshot_stats_;
  stats.records_since = since_snapshot_;
  stats.bytes_since = since_snapshot_bytes_;
  stats.last_size = snapshot_size_;
  return stats;
}

void Daemon::ClockLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    if (!FailureLocked().empty()) {  // read-only: time no longer moves the cluster
      clock_cv_.wait(l);
      continue;
    }
    if (readers_waiting_ > 0) {
      gate_cv_.wait(l, [&] { return readers_waiting_ == 0 || stopping_; });
      continue;
    }
    const std::optional<Millis> due = cluster_->NextDue();
    const Millis now = std::max(last_time_, Now());
    if (due && *due <= now) {
      Mutation m;
      m.op = Mutation::Op::kAdvance;
      m.time = now;
      (void)cluster_->ApplyShared(m);
      last_time_ = now;
      Record(m, m.EncodeBody());
      // Still due (a Job with more pods to make than one sync makes, a deleted Job's pods): the
      // lock is let go first, until the requests waiting for it are applied (for at most
      // kClockYield: a flood of them slows the clock's work, it does not stop it), so that each
      // waits for one advance at most, not for the next one too.
      if (const auto next = cluster_->NextDue(); next && *next <= now) {
        const auto until = SteadyNow() + kClockYield;
        do {
          clock_cv_.wait_for(l, std::chrono::milliseconds(1));
        } while (writers_waiting_ > 0 && !stopping_ && SteadyNow() < until);
      }
      continue;
    }
    const auto wait =
        due ? std::chrono::milliseconds(*due - now) : std::chrono::milliseconds(3600000);
    clock_due_ = due ? *due : std::numeric_limits<Millis>::max();
    clock_cv_.wait_for(l, wait);
    clock_due_ = std::numeric_limits<Millis>::min();
  }
}

}  // namespace arbiter::server
