#include "server/dashboard/history_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "adapters/sqlite/statement.h"
#include "server/durability/owner_only.h"

namespace arbiter::server::dashboard {

namespace {

constexpr int kFormat = 1;

Json ListToJson(const ResourceList& l) {
  Json out = Json::object();
  for (const auto& [r, v] : l.entries()) out[r] = v;
  return out;
}

bool ListFromJson(const Json& j, ResourceList* out) {
  if (!j.is_object()) return false;
  for (const auto& [r, v] : j.items()) {
    if (!v.is_number_integer()) return false;
    out->Set(r, v.get<int64_t>());
  }
  return true;
}

Json QuotaToJson(const QuotaState& q) {
  Json j = {{"quota", q.quota},
            {"cohort", q.cohort},
            {"used", ListToJson(q.used)},
            {"min", ListToJson(q.min)},
            {"borrowed", ListToJson(q.borrowed)},
            {"lent", ListToJson(q.lent)},
            {"fairShare", q.fair_share}};
  if (q.max) j["max"] = ListToJson(*q.max);
  return j;
}

bool QuotaFromJson(const Json& j, QuotaState* q) {
  if (!j.is_object() || !j.value("quota", Json()).is_string() ||
      !j.value("cohort", Json()).is_string() || !j.value("fairShare", Json()).is_number_integer())
    return false;
  q->quota = j["quota"].get<std::string>();
  q->cohort = j["cohort"].get<std::string>();
  q->fair_share = j["fairShare"].get<int64_t>();
  if (j.contains("max") && !ListFromJson(j["max"], &q->max.emplace())) return false;
  return ListFromJson(j.value("used", Json()), &q->used) &&
         ListFromJson(j.value("min", Json()), &q->min) &&
         ListFromJson(j.value("borrowed", Json()), &q->borrowed) &&
         ListFromJson(j.value("lent", Json()), &q->lent);
}

}  // namespace

Json SampleToJson(const Sample& s) {
  Json idle = Json::object();
  for (const auto& [model, milli] : s.pool.idle_gpu_milli) idle[model] = milli;
  Json tenants = Json::object();
  for (const auto& [ns, q] : s.tenants) tenants[ns] = QuotaToJson(q);
  return {{"v", kFormat},
          {"seq", s.seq},
          {"time", s.time},
          {"pool",
           {{"allocated", ListToJson(s.pool.allocated)},
            {"used", ListToJson(s.pool.used)},
            {"capacity", ListToJson(s.pool.capacity)},
            {"idleGpuMilli", std::move(idle)}}},
          {"tenants", std::move(tenants)}};
}

Result<Sample> SampleFromJson(const Json& j) {
  auto bad = [] { return Result<Sample>(Status::InvalidArgument("not a history sample")); };
  if (!j.is_object() || j.value("v", 0) != kFormat || !j.value("seq", Json()).is_number_integer() ||
      !j.value("time", Json()).is_number_integer() || !j.value("pool", Json()).is_object() ||
      !j.value("tenants", Json()).is_object())
    return bad();
  Sample s;
  s.seq = j["seq"].get<int64_t>();
  s.time = j["time"].get<Millis>();
  const Json& p = j["pool"];
  if (!ListFromJson(p.value("allocated", Json()), &s.pool.allocated) ||
      !ListFromJson(p.value("used", Json()), &s.pool.used) ||
      !ListFromJson(p.value("capacity", Json()), &s.pool.capacity) ||
      !p.value("idleGpuMilli", Json()).is_object())
    return bad();
  for (const auto& [model, milli] : p["idleGpuMilli"].items()) {
    if (!milli.is_number_integer()) return bad();
    s.pool.idle_gpu_milli[model] = milli.get<int64_t>();
  }
  for (const auto& [ns, q] : j["tenants"].items())
    if (!QuotaFromJson(q, &s.tenants[ns])) return bad();
  return s;
}

Result<std::unique_ptr<HistoryStore>> HistoryStore::Open(const std::string& dir, size_t capacity) {
  using R = Result<std::unique_ptr<HistoryStore>>;
  if (Status s = MakeOwnerOnlyDir(dir, "the history's directory"); !s.ok()) return s;
  const std::string path = dir + "/history.db";
  // The owner's alone, as the journal's files (Journal::Open): tenants' quotas and usage. Made
  // here when it is not there (never through a symbolic link), so that SQLite opens it rather
  // than creating it 0644 (its -wal and -shm take its mode). Those an older release made 0644
  // are made 0600, as far as the daemon may: another user's file keeps its mode, and is warned
  // of (warnings()); a symbolic link or a hard link keeps its mode, and fails the open.
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kOwnerOnlyFileMode);
  if (fd < 0 && errno != EEXIST)
    return R::Error("cannot open " + path + ": " + std::strerror(errno));
  if (fd >= 0) ::close(fd);
  std::vector<std::string> warnings = MakeOwnerOnly({path, path + "-wal", path + "-shm"});
  sqlite3* db = nullptr;
  // Not through a symbolic link or a hard link planted there (the history stays in memory).
  const Status opened = OpenOwnerOnlyDb(path, &db);
  std::unique_ptr<HistoryStore> st(new HistoryStore(db, path, capacity));
  st->warnings_ = std::move(warnings);
  if (!opened.ok()) return opened;
  sqlite3_busy_timeout(db, 5000);
  for (const char* sql :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
        "CREATE TABLE IF NOT EXISTS samples (seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, "
        "sample TEXT NOT NULL)"})
    if (Status s = st->Exec(sql); !s.ok()) return s;
  return st;
}

HistoryStore::~HistoryStore() {
  if (db_) sqlite3_close(db_);
}

Status HistoryStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Status::Internal(path_ + ": " + m);
  }
  return Status::Ok();
}

Result<std::vector<Sample>> HistoryStore::Load() {
  sqlite::Stmt st(db_, "SELECT sample FROM samples ORDER BY seq DESC LIMIT ?1");
  if (!st.ok()) return Status::Internal(path_ + ": " + st.error());
  st.Int(1, static_cast<int64_t>(capacity_));
  std::vector<Sample> out;
  int rc;
  while ((rc = st.Step()) == SQLITE_ROW) {
    const Json j = Json::parse(st.ColText(0), nullptr, false);
    auto s = SampleFromJson(j);
    if (s.ok()) out.push_back(std::move(s).value());
  }
  if (rc != SQLITE_DONE) return Status::Internal(path_ + ": " + sqlite3_errmsg(db_));
  std::reverse(out.begin(), out.end());
  return out;
}

Status HistoryStore::Write(const std::vector<Sample>& batch) {
  if (batch.empty()) return Status::Ok();
  sqlite::Txn txn(db_, path_);
  if (!txn.ok()) return txn.status();
  sqlite::Stmt st(db_, "INSERT OR REPLACE INTO samples (seq, time, sample) VALUES (?1, ?2, ?3)");
  for (const Sample& sample : batch) {
    st.Reset();
    st.Int(1, sample.seq);
    st.Int(2, sample.time);
    st.Text(3, SampleToJson(sample).dump());
    if (Status s = st.Run(path_); !s.ok()) return s;  // rolled back
  }
  sqlite::Stmt trim(db_, "DELETE FROM samples WHERE seq <= (SELECT MAX(seq) FROM samples) - ?1");
  trim.Int(1, static_cast<int64_t>(capacity_));
  if (Status s = trim.Run(path_); !s.ok()) return s;
  return txn.Commit();
}

}  // namespace arbiter::server::dashboard
