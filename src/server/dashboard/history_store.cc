#include "server/dashboard/history_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

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
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return R::Error("cannot create " + dir + ": " + ec.message());
  const std::string path = dir + "/history.db";
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<HistoryStore> st(new HistoryStore(db, path, capacity));
  if (rc != SQLITE_OK)
    return R::Error("cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
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
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT sample FROM samples ORDER BY seq DESC LIMIT ?1", -1, &st,
                         nullptr) != SQLITE_OK)
    return Result<std::vector<Sample>>::Error(path_ + ": " + sqlite3_errmsg(db_));
  sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(capacity_));
  std::vector<Sample> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(st, 0);
    const Json j = Json::parse(text ? reinterpret_cast<const char*>(text) : "", nullptr, false);
    auto s = SampleFromJson(j);
    if (s.ok()) out.push_back(std::move(s).value());
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return Result<std::vector<Sample>>::Error(path_ + ": " + sqlite3_errmsg(db_));
  std::reverse(out.begin(), out.end());
  return out;
}

Status HistoryStore::Write(const std::vector<Sample>& batch) {
  if (batch.empty()) return Status::Ok();
  if (Status s = Exec("BEGIN"); !s.ok()) return s;
  sqlite3_stmt* st = nullptr;
  Status result = Status::Ok();
  if (sqlite3_prepare_v2(db_,
                         "INSERT OR REPLACE INTO samples (seq, time, sample) VALUES (?1, ?2, ?3)",
                         -1, &st, nullptr) != SQLITE_OK)
    result = Status::Internal(path_ + ": " + sqlite3_errmsg(db_));
  for (size_t i = 0; result.ok() && i < batch.size(); ++i) {
    const std::string text = SampleToJson(batch[i]).dump();
    sqlite3_bind_int64(st, 1, batch[i].seq);
    sqlite3_bind_int64(st, 2, batch[i].time);
    sqlite3_bind_text(st, 3, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE)
      result = Status::Internal(path_ + ": " + sqlite3_errmsg(db_));
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if (result.ok()) {
    const std::string trim = "DELETE FROM samples WHERE seq <= (SELECT MAX(seq) FROM samples) - " +
                             std::to_string(capacity_);
    result = Exec(trim.c_str());
  }
  if (!result.ok()) {
    (void)Exec("ROLLBACK");
    return result;
  }
  return Exec("COMMIT");
}

}  // namespace arbiter::server::dashboard
