#include "server/daemon.h"

#include <chrono>
#include <future>
#include <utility>
#include <vector>

#include "adapters/kube/limits.h"

namespace arbiter::server {

Millis Daemon::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<Daemon>> Daemon::Open(DaemonOptions options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  auto j = Journal::Open(d->options_.data_dir);
  if (!j.ok()) return j.status();
  d->journal_ = std::move(j).value();
  d->cluster_ = std::make_unique<Cluster>(d->journal_->instance_id());
  auto snap = d->journal_->LoadSnapshot();
  if (!snap.ok()) return snap.status();
  int64_t after = 0;
  if (snap.value()) {
    if (Status s = d->cluster_->Restore(snap.value()->bytes); !s.ok())
      return Status::Internal("snapshot " + std::to_string(snap.value()->seq) + ": " + s.message());
    after = snap.value()->seq;
    d->startup_.from_snapshot = true;
    d->startup_.snapshot_seq = after;
  }
  int64_t last = after;
  // Replay, pipelined: a helper thread decodes and prepares (parses, Cluster::Prepare) the next
  // batch of records while this one applies the current batch in order.
  struct Decoded {
    int64_t seq = 0;
    Result<Mutation> m = Result<Mutation>::Error("");
    Cluster::Prepared prepared;
  };
  auto decode = [](std::vector<std::pair<int64_t, std::string>> rows) {
    std::vector<Decoded> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      out[i].seq = rows[i].first;
      out[i].m = Mutation::Decode(rows[i].second);
      if (out[i].m.ok()) out[i].prepared = Cluster::Prepare(out[i].m.value());
    }
    return out;
  };
  Status failed;
  auto apply = [&](std::vector<Decoded> batch) {
    for (auto& r : batch) {
      if (!failed.ok()) return;
      if (!r.m.ok()) {
        failed = Status::Internal("journal record " + std::to_string(r.seq) + ": " + r.m.message());
        return;
      }
      MutationResult res = d->cluster_->ApplyShared(r.m.value(), &r.prepared);
      if (!res.ok()) {
        failed = Status::Internal("journal record " + std::to_string(r.seq) +
                                  ": replay refused an accepted mutation: " + res.error->message);
        return;
      }
      (void)d->cluster_->TakeWatchEvents();  // nobody watches history from before start-up
      d->last_time_ = std::max(d->last_time_, r.m.value().time);
      last = r.seq;
      ++d->startup_.replayed;
    }
  };
  constexpr size_t kBatch = 256;
  std::vector<std::pair<int64_t, std::string>> rows;
  std::future<std::vector<Decoded>> next;
  Status replay = d->journal_->Replay(after, [&](int64_t seq, const std::string& text) -> Status {
    rows.emplace_back(seq, text);
    if (rows.size() < kBatch) return Status::Ok();
    if (next.valid()) apply(next.get());
    next = std::async(std::launch::async, decode, std::move(rows));
    rows.clear();
    return failed;
  });
  if (next.valid()) apply(next.get());
  if (replay.ok()) apply(decode(std::move(rows)));
  if (!failed.ok()) return failed;
  if (!replay.ok()) return replay;
  (void)d->cluster_->TakeWatchEvents();
  if (d->options_.check_invariants)
    if (Status s = d->cluster_->engine().CheckInvariants(); !s.ok())
      return Status::Internal("after replay: " + s.message());
  d->watch_.Reset(d->cluster_->store().resource_version());
  d->since_snapshot_ = d->startup_.replayed;
  d->journal_->Start(last, [p = d.get()] { p->watch_.Notify(); });
  // A new data directory starts with the default namespace, as a cluster does.
  if (last == 0) {
    Mutation m;
    m.op = Mutation::Op::kCreate;
    m.kind = "Namespace";
    m.object = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "default"}}}};
    MutationResult r = d->Mutate(std::move(m));
    if (!r.ok()) return Status::Internal("creating namespace default: " + r.error->message);
  }
  d->startup_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d->clock_ = std::thread([p = d.get()] { p->ClockLoop(); });
  return d;
}

Daemon::~Daemon() { Stop(); }

void Daemon::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    clock_cv_.notify_all();
  }
  if (clock_.joinable()) clock_.join();
  if (journal_) journal_->Stop();
  watch_.Close();
}

int64_t Daemon::Record(const Mutation& m, const std::string& body) {
  auto events = std::make_shared<std::vector<WatchEvent>>(cluster_->TakeWatchEvents());
  const int64_t seq = journal_->Append(Mutation::WithTime(body, m.time),
                                       [this, events] { watch_.Publish(std::move(*events)); });
  ++since_snapshot_;
  MaybeSnapshot();
  clock_cv_.notify_all();
  return seq;
}

MutationResult Daemon::Mutate(Mutation m) {
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
    std::lock_guard<std::mutex> l(mu_);
    m.time = std::max(last_time_, Now());
    r = cluster_->ApplyShared(m, &prepared);
    if (!r.ok() || m.dry_run) return r;  // a dry run changed nothing: no record
    last_time_ = m.time;
    if (options_.check_invariants)
      if (Status s = cluster_->engine().CheckInvariants(); !s.ok()) std::abort();
    seq = Record(m, body);
  }
  if (r.stored) r.object = *r.stored;  // the copy for the response, outside the lock
  if (!journal_->WaitDurable(seq)) {
    ApiError e;
    e.reason = ApiError::Reason::kUnavailable;
    e.message = "the journal is not writable: " + journal_->error();
    r.error = std::move(e);
  }
  return r;
}

void Daemon::MaybeSnapshot() {
  if (options_.snapshot_every <= 0 || since_snapshot_ < options_.snapshot_every) return;
  journal_->WriteSnapshot(journal_->last_seq(), cluster_->Snapshot());
  since_snapshot_ = 0;
}

void Daemon::SnapshotNow() {
  std::lock_guard<std::mutex> l(mu_);
  journal_->WriteSnapshot(journal_->last_seq(), cluster_->Snapshot());
  since_snapshot_ = 0;
}

void Daemon::ClockLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    const std::optional<Millis> due = cluster_->NextDue();
    const Millis now = std::max(last_time_, Now());
    if (due && *due <= now) {
      Mutation m;
      m.op = Mutation::Op::kAdvance;
      m.time = now;
      (void)cluster_->ApplyShared(m);
      last_time_ = now;
      Record(m, m.EncodeBody());
      continue;
    }
    const auto wait =
        due ? std::chrono::milliseconds(*due - now) : std::chrono::milliseconds(3600000);
    clock_cv_.wait_for(l, wait);
  }
}

}  // namespace arbiter::server
