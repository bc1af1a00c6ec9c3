#include "server/journal.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

namespace arbiter::server {

namespace {
std::string Hex8() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}
}  // namespace

Status Journal::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "unknown error";
    sqlite3_free(err);
    return Status::Internal(std::string("journal: ") + m + " (" + sql + ")");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Result<std::unique_ptr<Journal>>::Error("cannot create --data " + dir + ": " +
                                                   ec.message());
  std::unique_ptr<Journal> j(new Journal());
  const std::string path = dir + "/journal.db";
  if (sqlite3_open_v2(path.c_str(), &j->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return Result<std::unique_ptr<Journal>>::Error("cannot open " + path + ": " +
                                                   sqlite3_errmsg(j->db_));
  sqlite3_busy_timeout(j->db_, 5000);
  for (const char* sql :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, record TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER "
        "NOT NULL, data BLOB NOT NULL)"}) {
    if (Status s = j->Exec(sql); !s.ok()) return s;
  }
  // The instance id (uids) and the format version.
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(j->db_, "SELECT value FROM meta WHERE key = 'instance'", -1, &st, nullptr);
  if (sqlite3_step(st) == SQLITE_ROW)
    j->instance_id_ = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (j->instance_id_.empty()) {
    j->instance_id_ = Hex8();
    const std::string sql = "INSERT INTO meta (key, value) VALUES ('instance', '" +
                            j->instance_id_ + "'), ('format', 'arbiter-journal 1')";
    if (Status s = j->Exec(sql.c_str()); !s.ok()) return s;
  }
  return j;
}

Journal::~Journal() {
  Stop();
  if (db_) sqlite3_close(db_);
}

Result<std::optional<Journal::Snapshot>> Journal::LoadSnapshot() {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT seq, data FROM snapshot WHERE id = 1", -1, &st, nullptr);
  std::optional<Snapshot> out;
  if (sqlite3_step(st) == SQLITE_ROW) {
    Snapshot s;
    s.seq = sqlite3_column_int64(st, 0);
    const void* p = sqlite3_column_blob(st, 1);
    s.bytes.assign(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st, 1)));
    snapshot_seq_ = s.seq;
    out = std::move(s);
  }
  sqlite3_finalize(st);
  return out;
}

Status Journal::Replay(int64_t after_seq,
                       const std::function<Status(int64_t seq, const std::string& record)>& fn) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT seq, record FROM journal WHERE seq > ? ORDER BY seq", -1, &st,
                     nullptr);
  sqlite3_bind_int64(st, 1, after_seq);
  Status result;
  int64_t last = after_seq;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const int64_t seq = sqlite3_column_int64(st, 0);
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    if (seq != last + 1) {
      result = Status::Internal("journal: record " + std::to_string(last + 1) +
                                " is missing (next is " + std::to_string(seq) + ")");
      break;
    }
    last = seq;
    if (Status s = fn(seq, text ? text : ""); !s.ok()) {
      result = Status::Internal("journal record " + std::to_string(seq) + ": " + s.message());
      break;
    }
  }
  if (result.ok() && rc != SQLITE_DONE && rc != SQLITE_ROW)
    result = Status::Internal(std::string("journal: ") + sqlite3_errmsg(db_));
  sqlite3_finalize(st);
  {
    std::lock_guard<std::mutex> l(mu_);
    durable_seq_ = std::max(durable_seq_, last);
    next_seq_ = std::max(next_seq_, last + 1);
  }
  return result;
}

void Journal::Start(int64_t last_seq, std::function<void()> after_commit) {
  after_commit_ = std::move(after_commit);
  {
    std::lock_guard<std::mutex> l(mu_);
    next_seq_ = last_seq + 1;
    durable_seq_ = last_seq;
  }
  writer_ = std::thread([this] { WriterLoop(); });
}

int64_t Journal::Append(std::string record, std::function<void()> on_durable) {
  std::lock_guard<std::mutex> l(mu_);
  const int64_t seq = next_seq_++;
  queue_.push_back(Item{seq, std::move(record), std::move(on_durable), false});
  work_cv_.notify_one();
  return seq;
}

void Journal::WriteSnapshot(int64_t seq, std::string bytes) {
  std::lock_guard<std::mutex> l(mu_);
  queue_.push_back(Item{seq, std::move(bytes), nullptr, true});
  work_cv_.notify_one();
}

bool Journal::WaitDurable(int64_t seq) {
  std::unique_lock<std::mutex> l(mu_);
  durable_cv_.wait(l, [&] { return durable_seq_ >= seq || failed_ || writer_done_; });
  return durable_seq_ >= seq;
}

void Journal::WriterLoop() {
  sqlite3_stmt* ins = nullptr;
  sqlite3_stmt* snap = nullptr;
  sqlite3_stmt* compact = nullptr;
  sqlite3_prepare_v2(db_, "INSERT INTO journal (seq, record) VALUES (?, ?)", -1, &ins, nullptr);
  sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO snapshot (id, seq, data) VALUES (1, ?, ?)", -1,
                     &snap, nullptr);
  sqlite3_prepare_v2(db_, "DELETE FROM journal WHERE seq <= ?", -1, &compact, nullptr);
  while (true) {
    std::deque<Item> batch;
    {
      std::unique_lock<std::mutex> l(mu_);
      work_cv_.wait(l, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty() && stopping_) break;
      batch.swap(queue_);
    }
    const auto t0 = std::chrono::steady_clock::now();
    Status s = Exec("BEGIN");
    int64_t last = 0;
    uint64_t n = 0;
    for (auto& it : batch) {
      if (!s.ok()) break;
      sqlite3_stmt* st = it.snapshot ? snap : ins;
      sqlite3_reset(st);
      sqlite3_bind_int64(st, 1, it.seq);
      if (it.snapshot)
        sqlite3_bind_blob(st, 2, it.record.data(), static_cast<int>(it.record.size()),
                          SQLITE_STATIC);
      else
        sqlite3_bind_text(st, 2, it.record.data(), static_cast<int>(it.record.size()),
                          SQLITE_STATIC);
      if (sqlite3_step(st) != SQLITE_DONE) {
        s = Status::Internal(std::string("journal write: ") + sqlite3_errmsg(db_));
        break;
      }
      if (it.snapshot) {
        sqlite3_reset(compact);
        sqlite3_bind_int64(compact, 1, it.seq);
        if (sqlite3_step(compact) != SQLITE_DONE)
          s = Status::Internal(std::string("journal compaction: ") + sqlite3_errmsg(db_));
      } else {
        last = it.seq;
        ++n;
      }
    }
    if (s.ok())
      s = Exec("COMMIT");
    else
      (void)Exec("ROLLBACK");
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      std::lock_guard<std::mutex> l(mu_);
      failed_ = true;
      error_ = s.message();
      durable_cv_.notify_all();
      break;
    }
    for (auto& it : batch)
      if (it.on_durable) it.on_durable();
    if (after_commit_) after_commit_();
    std::lock_guard<std::mutex> l(mu_);
    for (auto& it : batch)
      if (it.snapshot) snapshot_seq_ = it.seq;
    if (last) durable_seq_ = last;
    stats_.commits++;
    stats_.records += n;
    stats_.sum_seconds += secs;
    for (size_t i = 0; i < stats_.bounds.size(); ++i)
      if (secs <= stats_.bounds[i]) stats_.buckets[i]++;
    durable_cv_.notify_all();
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(snap);
  sqlite3_finalize(compact);
  std::lock_guard<std::mutex> l(mu_);
  writer_done_ = true;
  durable_cv_.notify_all();
}

void Journal::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    work_cv_.notify_all();
  }
  if (writer_.joinable()) writer_.join();
  std::lock_guard<std::mutex> l(mu_);
  durable_cv_.notify_all();
}

int64_t Journal::last_seq() const {
  std::lock_guard<std::mutex> l(mu_);
  return next_seq_ - 1;
}
bool Journal::failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return failed_;
}
std::string Journal::error() const {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}
JournalStats Journal::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}
int64_t Journal::records_since_snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return durable_seq_ - snapshot_seq_;
}

}  // namespace arbiter::server
