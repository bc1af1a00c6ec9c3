#include "adapters/postgres/postgres_store.h"

#include <libpq-fe.h>

#include <map>
#include <tuple>

#include "adapters/http/http_client.h"
#include "adapters/report/invoice_json.h"
#include "adapters/warehouse/row_text.h"

namespace arbiter::postgres {

namespace {

struct ResultGuard {
  PGresult* r;
  ~ResultGuard() { PQclear(r); }
};

constexpr const char* kKey =
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor";

// The first instant (Unix ms) of the UTC calendar month of an hour column (Unix ms).
std::string MonthOf(const std::string& hour) {
  return "(extract(epoch from date_trunc('month', to_timestamp(" + hour +
         " / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint";
}

// Adds the sums of arbiter_stage_monthly (changes per month and series) to arbiter_monthly.
constexpr const char* kAddMonthly =
    "INSERT INTO arbiter_monthly SELECT * FROM arbiter_stage_monthly ON CONFLICT (month, "
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor) DO UPDATE SET"
    " request_raw = arbiter_monthly.request_raw + EXCLUDED.request_raw,"
    " usage_raw = arbiter_monthly.usage_raw + EXCLUDED.usage_raw,"
    " max_raw = arbiter_monthly.max_raw + EXCLUDED.max_raw,"
    " samples = arbiter_monthly.samples + EXCLUDED.samples,"
    " covered_ms = arbiter_monthly.covered_ms + EXCLUDED.covered_ms,"
    " run_ms = arbiter_monthly.run_ms + EXCLUDED.run_ms,"
    " min_hour = LEAST(arbiter_monthly.min_hour, EXCLUDED.min_hour),"
    " max_hour = GREATEST(arbiter_monthly.max_hour, EXCLUDED.max_hour)";

// The monthly sums of rows whose keys are all new (COPY text for arbiter_stage_monthly).
std::string MonthlySumsOfNewRows(const std::vector<billing::StoredRow>& rows) {
  using Key = std::tuple<Millis, std::string_view, std::string_view, std::string_view,
                         std::string_view, int64_t, int, std::string_view>;
  std::map<Key, std::pair<billing::HourlyRow, Millis>> sums;  // the sum, its last hour
  for (const billing::StoredRow& s : rows) {
    const billing::HourlyRow& r = s.row;
    Key k{MonthStartOf(r.hour),
          r.namespace_,
          r.workload,
          r.resource,
          r.gpu_product,
          r.gpu_replicas,
          static_cast<int>(r.kind),
          r.preemptor};
    auto [it, fresh] = sums.try_emplace(k, r, r.hour);
    if (fresh) continue;
    it->second.first.AddQuantities(r);
    it->second.first.hour = std::min(it->second.first.hour, r.hour);
    it->second.second = std::max(it->second.second, r.hour);
  }
  std::string text;
  for (const auto& [k, v] : sums) {
    const billing::HourlyRow& r = v.first;
    text += std::to_string(std::get<0>(k)) + "\t";
    for (const std::string* f : {&r.namespace_, &r.workload, &r.resource, &r.gpu_product}) {
      warehouse::AppendEscapedField(&text, *f);
      text += "\t";
    }
    text += std::to_string(r.gpu_replicas) + "\t" + std::to_string(static_cast<int>(r.kind)) + "\t";
    warehouse::AppendEscapedField(&text, r.preemptor);
    for (const billing::i128 x : {r.request_raw, r.usage_raw, r.max_raw})
      text += "\t" + billing::I128ToString(x);
    for (const int64_t x : {r.samples, r.covered_ms, r.run_ms, r.hour, v.second})
      text += "\t" + std::to_string(x);
    text += "\n";
  }
  return text;
}

}  // namespace

Result<std::unique_ptr<PostgresStore>> PostgresStore::Open(const std::string& url) {
  using R = Result<std::unique_ptr<PostgresStore>>;
  auto u = http::ParseUrl(url);
  if (!u.ok()) return u.status();
  if (u->scheme != "postgresql" && u->scheme != "postgres")
    return R::Error("not a postgresql:// URL: " + url);
  std::string describe =
      "postgresql://" + u->host + (u->port ? ":" + std::to_string(u->port) : "") + u->path;
  // connect_timeout unless the URL sets one.
  std::string conninfo = url;
  if (!u->query.count("connect_timeout"))
    conninfo +=
        (url.find('?') == std::string::npos ? "?" : "&") + std::string("connect_timeout=10");
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (!c || PQstatus(c) != CONNECTION_OK) {
    std::string msg = c ? PQerrorMessage(c) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    PQfinish(c);
    return R::Error("PostgreSQL at " + describe + " unreachable: " + msg);
  }
  PGresult* r = PQexec(c, "SET client_min_messages = warning; SET statement_timeout = '600s'");
  PQclear(r);
  return std::unique_ptr<PostgresStore>(new PostgresStore(c, describe));
}

PostgresStore::~PostgresStore() { PQfinish(conn_); }

Status PostgresStore::Error(const std::string& what) {
  std::string msg = PQerrorMessage(conn_);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return Status::Error("PostgreSQL at " + describe_ + ": " + what + ": " + msg);
}

Status PostgresStore::Exec(const std::string& sql) {
  ResultGuard g{PQexec(conn_, sql.c_str())};
  auto st = PQresultStatus(g.r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error(sql.substr(0, 80));
  return Status::Ok();
}

Status PostgresStore::EnsureSchema() {
  if (Status s = CreateTables(); !s.ok()) return s;
  return BackfillRollups();
}

Status PostgresStore::CreateTables() {
  return Exec(
      "CREATE TABLE IF NOT EXISTS arbiter_hourly ("
      " namespace text NOT NULL, workload text NOT NULL, resource text NOT NULL, gpu_product text "
      "NOT NULL,"
      " gpu_replicas bigint NOT NULL, kind smallint NOT NULL, preemptor text NOT NULL, hour bigint "
      "NOT NULL,"
      " version bigint NOT NULL, request_raw numeric(40,0) NOT NULL, usage_raw numeric(40,0) NOT "
      "NULL,"
      " max_raw numeric(40,0) NOT NULL, samples bigint NOT NULL, covered_ms bigint NOT NULL, "
      "run_ms bigint NOT NULL,"
      " unit text NOT NULL, price_book text NOT NULL, currency text NOT NULL, mode text NOT NULL,"
      " unit_price text NOT NULL, billed_quantity text NOT NULL, amount text NOT NULL,"
      " PRIMARY KEY (namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, "
      "hour));"
      "CREATE TABLE IF NOT EXISTS arbiter_price_books (id text PRIMARY KEY, effective_from bigint "
      "NOT NULL,"
      " canonical text NOT NULL, json text NOT NULL);"
      "CREATE TABLE IF NOT EXISTS arbiter_sync (id int PRIMARY KEY, synced_before bigint NOT "
      "NULL);"
      "CREATE TABLE IF NOT EXISTS arbiter_sync_ledger (ledger text PRIMARY KEY, synced_before "
      "bigint NOT NULL, seq bigint NOT NULL);"
      // A sync's progress (billing::SyncProgress), written with each batch's rows.
      "CREATE TABLE IF NOT EXISTS arbiter_sync_progress (ledger text PRIMARY KEY, from_hour bigint"
      " NOT NULL, after_seq bigint NOT NULL, target_before bigint NOT NULL, target_seq bigint NOT "
      "NULL,"
      " step bigint NOT NULL, last_key text NOT NULL);"
      // Monthly rollups (issue 28): per UTC calendar month (its first instant, Unix ms) and
      // series key, the sums of the current hourly rows, moved in the transaction of the rows.
      "CREATE TABLE IF NOT EXISTS arbiter_monthly (month bigint NOT NULL, namespace text NOT "
      "NULL,"
      " workload text NOT NULL, resource text NOT NULL, gpu_product text NOT NULL,"
      " gpu_replicas bigint NOT NULL, kind smallint NOT NULL, preemptor text NOT NULL,"
      " request_raw numeric(40,0) NOT NULL, usage_raw numeric(40,0) NOT NULL,"
      " max_raw numeric(40,0) NOT NULL, samples bigint NOT NULL, covered_ms bigint NOT NULL,"
      " run_ms bigint NOT NULL, min_hour bigint NOT NULL, max_hour bigint NOT NULL,"
      " PRIMARY KEY (month, namespace, workload, resource, gpu_product, gpu_replicas, kind,"
      " preemptor));"
      "CREATE TABLE IF NOT EXISTS arbiter_schema (name text PRIMARY KEY, value bigint NOT NULL);");
}

Result<bool> PostgresStore::RollupsReady() {
  if (rollups_ready_) return true;
  ResultGuard g{PQexec(conn_,
                       "SELECT to_regclass('arbiter_schema') IS NOT NULL AND EXISTS (SELECT 1 "
                       "FROM arbiter_schema WHERE name = 'monthly_rollups')")};
  if (PQresultStatus(g.r) != PGRES_TUPLES_OK) {
    // No arbiter_schema table: a warehouse written by an arbiter before the rollups.
    const char* code = PQresultErrorField(g.r, PG_DIAG_SQLSTATE);
    if (code && std::string(code) == "42P01") return false;
    return Error("read the schema marks");
  }
  rollups_ready_ = std::string(PQgetvalue(g.r, 0, 0)) == "t";
  return rollups_ready_;
}

Status PostgresStore::BackfillRollups() {
  auto ready = RollupsReady();
  if (!ready.ok()) return ready.status();
  if (*ready) return Status::Ok();
  // Hourly rows written before the rollups existed: every month summed once, and marked, in one
  // transaction.
  if (Status s = Exec("BEGIN"); !s.ok()) return s;
  Status s = Exec(std::string("DELETE FROM arbiter_monthly; INSERT INTO arbiter_monthly SELECT ") +
                  MonthOf("hour") + " AS month, " + kKey +
                  ", sum(request_raw), sum(usage_raw), sum(max_raw), sum(samples),"
                  " sum(covered_ms), sum(run_ms), min(hour), max(hour) FROM arbiter_hourly"
                  " GROUP BY month, " +
                  kKey +
                  "; INSERT INTO arbiter_schema VALUES ('monthly_rollups', 1) ON CONFLICT DO "
                  "NOTHING; COMMIT");
  if (!s.ok()) {
    ResultGuard g{PQexec(conn_, "ROLLBACK")};
    return s;
  }
  rollups_ready_ = true;
  return Status::Ok();
}

Result<std::vector<PriceBook>> PostgresStore::PriceBooks() {
  ResultGuard g{PQexec(conn_, "SELECT json FROM arbiter_price_books ORDER BY effective_from, id")};
  if (PQresultStatus(g.r) != PGRES_TUPLES_OK) return Error("read price books");
  std::vector<PriceBook> out;
  for (int i = 0; i < PQntuples(g.r); ++i) {
    auto j = nlohmann::json::parse(PQgetvalue(g.r, i, 0), nullptr, false);
    auto b = report::PriceBooksFromJson(j);
    if (!b.ok())
      return Result<std::vector<PriceBook>>::Error(describe_ +
                                                   ": stored PriceBook unreadable: " + b.message());
    for (auto& x : *b) out.push_back(std::move(x));
  }
  return out;
}

Status PostgresStore::PutPriceBooks(const std::vector<PriceBook>& books) {
  for (const PriceBook& b : books) {
    std::string id = billing::PriceBookId(b), canon = billing::CanonicalPriceBook(b),
                json = report::PriceBookToJson(b).dump();
    std::string from = std::to_string(b.effective_from);
    const char* params[4] = {id.c_str(), from.c_str(), canon.c_str(), json.c_str()};
    ResultGuard g{PQexecParams(
        conn_,
        "INSERT INTO arbiter_price_books VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING;", 4,
        nullptr, params, nullptr, nullptr, 0)};
    if (PQresultStatus(g.r) != PGRES_COMMAND_OK) return Error("store PriceBook " + id);
    const char* p1[1] = {id.c_str()};
    ResultGuard c{PQexecParams(conn_, "SELECT canonical FROM arbiter_price_books WHERE id = $1", 1,
                               nullptr, p1, nullptr, nullptr, 0)};
    if (PQresultStatus(c.r) != PGRES_TUPLES_OK || PQntuples(c.r) != 1)
      return Error("read PriceBook " + id);
    if (canon != PQgetvalue(c.r, 0, 0))
      return Status::Error(describe_ + ": PriceBook " + id + " is stored with different prices");
  }
  return Status::Ok();
}

Status PostgresStore::CopyIn(const std::string& table, const std::string& text,
                             std::string* sqlstate) {
  sqlstate->clear();
  {
    ResultGuard g{PQexec(conn_, ("COPY " + table + " FROM STDIN").c_str())};
    if (PQresultStatus(g.r) != PGRES_COPY_IN) return Error("start COPY into " + table);
  }
  bool sent = true;
  for (size_t at = 0; at < text.size() && sent; at += 1 << 20) {
    size_t n = std::min<size_t>(1 << 20, text.size() - at);
    sent = PQputCopyData(conn_, text.data() + at, static_cast<int>(n)) == 1;
  }
  if (PQputCopyEnd(conn_, sent ? nullptr : "send failed") != 1) return Error("COPY into " + table);
  Status st = Status::Ok();
  while (PGresult* r = PQgetResult(conn_)) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK && st.ok()) {
      const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      *sqlstate = code ? code : "";
      st = Error("COPY into " + table);
    }
    PQclear(r);
  }
  return st;
}

Status PostgresStore::WriteRows(const std::vector<billing::StoredRow>& rows) {
  std::string text;
  text.reserve(rows.size() * 160);
  for (const billing::StoredRow& s : rows) {
    warehouse::AppendHourlyRow(&text, s, warehouse::HourColumn::kMillis);
  }
  if (Status s = Exec("CREATE TEMP TABLE IF NOT EXISTS arbiter_stage_monthly (LIKE "
                      "arbiter_monthly) ON COMMIT DELETE ROWS");
      !s.ok())
    return s;
  // Fast path: rows whose keys are all new go straight into the table with COPY. If any key is
  // already there (a re-run after a kill, a correction), the COPY fails on the primary key and
  // the batch is upserted instead, through a staging table: the higher version wins.
  if (Status s = Exec("SAVEPOINT direct"); !s.ok()) return s;
  std::string state;
  Status direct = CopyIn("arbiter_hourly", text, &state);
  if (direct.ok()) {
    if (Status s = Exec("RELEASE SAVEPOINT direct"); !s.ok()) return s;
    // Every key new: the rows' monthly sums are the change of the rollups.
    if (Status s = CopyIn("arbiter_stage_monthly", MonthlySumsOfNewRows(rows), &state); !s.ok())
      return s;
  } else {
    if (state != "23505") return direct;  // not a duplicate key: a real error
    if (Status s = Exec("ROLLBACK TO SAVEPOINT direct"); !s.ok()) return s;
    if (Status s = UpsertStaged(text); !s.ok()) return s;
  }
  if (Status s = Exec(kAddMonthly); !s.ok()) return s;
  return Exec("TRUNCATE arbiter_stage_monthly");
}

Status PostgresStore::UpsertStaged(const std::string& text) {
  std::string state;
  if (Status s = Exec("CREATE TEMP TABLE IF NOT EXISTS arbiter_stage (LIKE arbiter_hourly) ON "
                      "COMMIT DELETE ROWS");
      !s.ok())
    return s;
  if (Status s = CopyIn("arbiter_stage", text, &state); !s.ok()) return s;
  // The change of the rollups: each staged row's sums minus those of the row it replaces
  // (none for a new key), for the rows the upsert below writes (a version not older).
  std::string minus;
  for (const char* c : {"request_raw", "usage_raw", "max_raw", "samples", "covered_ms", "run_ms"})
    minus += std::string(", sum(s.") + c + " - coalesce(h." + c + ", 0))";
  if (Status s = Exec(std::string("INSERT INTO arbiter_stage_monthly SELECT ") + MonthOf("s.hour") +
                      " AS month, s.namespace, s.workload, s.resource, s.gpu_product,"
                      " s.gpu_replicas, s.kind, s.preemptor" +
                      minus +
                      ", min(s.hour), max(s.hour) FROM arbiter_stage s LEFT JOIN"
                      " arbiter_hourly h USING (" +
                      kKey +
                      ", hour) WHERE h.version IS NULL OR h.version <= s.version"
                      " GROUP BY month, s.namespace, s.workload, s.resource,"
                      " s.gpu_product, s.gpu_replicas, s.kind, s.preemptor");
      !s.ok())
    return s;
  std::string cols =
      "version = EXCLUDED.version, request_raw = EXCLUDED.request_raw, usage_raw = "
      "EXCLUDED.usage_raw,"
      " max_raw = EXCLUDED.max_raw, samples = EXCLUDED.samples, covered_ms = "
      "EXCLUDED.covered_ms,"
      " run_ms = EXCLUDED.run_ms, unit = EXCLUDED.unit, price_book = EXCLUDED.price_book,"
      " currency = EXCLUDED.currency, mode = EXCLUDED.mode, unit_price = EXCLUDED.unit_price,"
      " billed_quantity = EXCLUDED.billed_quantity, amount = EXCLUDED.amount";
  if (Status s =
          Exec(std::string("INSERT INTO arbiter_hourly SELECT * FROM arbiter_stage ON CONFLICT (") +
               kKey + ", hour) DO UPDATE SET " + cols +
               " WHERE arbiter_hourly.version <= EXCLUDED.version");
      !s.ok())
    return s;
  if (Status s = Exec("TRUNCATE arbiter_stage"); !s.ok()) return s;
  return Status::Ok();
}

Status PostgresStore::PutRows(const std::vector<billing::StoredRow>& rows,
                              const std::optional<billing::SyncMark>& mark,
                              const std::optional<billing::SyncProgress>& progress) {
  if (Status s = Exec("BEGIN"); !s.ok()) return s;
  auto fail = [&](Status s) {
    ResultGuard g{PQexec(conn_, "ROLLBACK")};
    return s;
  };
  if (!rows.empty())
    if (Status s = WriteRows(rows); !s.ok()) return fail(s);
  if (mark) {
    if (Status s = Exec(
            "INSERT INTO arbiter_sync VALUES (1, " + std::to_string(mark->synced_before) +
            ") ON CONFLICT (id) DO UPDATE SET synced_before = GREATEST(arbiter_sync.synced_before,"
            " EXCLUDED.synced_before)");
        !s.ok())
      return fail(s);
    const std::string before = std::to_string(mark->synced_before), seq = std::to_string(mark->seq);
    const char* params[3] = {mark->ledger.c_str(), before.c_str(), seq.c_str()};
    ResultGuard g{PQexecParams(
        conn_,
        "INSERT INTO arbiter_sync_ledger VALUES ($1, $2, $3) ON CONFLICT (ledger) DO UPDATE SET"
        " synced_before = GREATEST(arbiter_sync_ledger.synced_before, EXCLUDED.synced_before),"
        " seq = GREATEST(arbiter_sync_ledger.seq, EXCLUDED.seq)",
        3, nullptr, params, nullptr, nullptr, 0)};
    if (PQresultStatus(g.r) != PGRES_COMMAND_OK) return fail(Error("store the sync mark"));
  }
  if (progress) {
    std::vector<std::string> v = {progress->ledger,
                                  std::to_string(progress->from),
                                  std::to_string(progress->after),
                                  std::to_string(progress->target_before),
                                  std::to_string(progress->target_seq),
                                  std::to_string(progress->step),
                                  progress->last_key};
    const char* params[7];
    for (size_t k = 0; k < 7; ++k) params[k] = v[k].c_str();
    ResultGuard g{PQexecParams(
        conn_,
        "INSERT INTO arbiter_sync_progress VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT "
        "(ledger) DO UPDATE SET from_hour = EXCLUDED.from_hour, after_seq = EXCLUDED.after_seq,"
        " target_before = EXCLUDED.target_before, target_seq = EXCLUDED.target_seq,"
        " step = EXCLUDED.step, last_key = EXCLUDED.last_key",
        7, nullptr, params, nullptr, nullptr, 0)};
    if (PQresultStatus(g.r) != PGRES_COMMAND_OK) return fail(Error("store the sync progress"));
  }
  if (Status s = Exec("COMMIT"); !s.ok()) return fail(s);
  return Status::Ok();
}

Result<Millis> PostgresStore::SyncedBefore() {
  ResultGuard g{PQexec(conn_, "SELECT synced_before FROM arbiter_sync WHERE id = 1")};
  if (PQresultStatus(g.r) != PGRES_TUPLES_OK) return Error("read sync watermark");
  if (PQntuples(g.r) == 0) return INT64_MIN;
  return static_cast<Millis>(std::stoll(PQgetvalue(g.r, 0, 0)));
}

Result<std::optional<billing::SyncMark>> PostgresStore::MarkOf(const std::string& ledger) {
  const char* params[1] = {ledger.c_str()};
  ResultGuard g{PQexecParams(conn_,
                             "SELECT synced_before, seq FROM arbiter_sync_ledger WHERE ledger = $1",
                             1, nullptr, params, nullptr, nullptr, 0)};
  if (PQresultStatus(g.r) != PGRES_TUPLES_OK) return Error("read the sync mark");
  if (PQntuples(g.r) == 0) return std::optional<billing::SyncMark>();
  return std::optional<billing::SyncMark>(
      billing::SyncMark{ledger, static_cast<Millis>(std::stoll(PQgetvalue(g.r, 0, 0))),
                        static_cast<int64_t>(std::stoll(PQgetvalue(g.r, 0, 1)))});
}

Result<std::optional<billing::SyncProgress>> PostgresStore::ProgressOf(const std::string& ledger) {
  const char* params[1] = {ledger.c_str()};
  ResultGuard g{
      PQexecParams(conn_,
                   "SELECT from_hour, after_seq, target_before, target_seq, step, last_key"
                   " FROM arbiter_sync_progress WHERE ledger = $1",
                   1, nullptr, params, nullptr, nullptr, 0)};
  if (PQresultStatus(g.r) != PGRES_TUPLES_OK) return Error("read the sync progress");
  if (PQntuples(g.r) == 0) return std::optional<billing::SyncProgress>();
  billing::SyncProgress p;
  p.ledger = ledger;
  int64_t* ints[] = {&p.from, &p.after, &p.target_before, &p.target_seq, &p.step};
  for (int k = 0; k < 5; ++k) *ints[k] = std::stoll(PQgetvalue(g.r, 0, k));
  p.last_key = PQgetvalue(g.r, 0, 5);
  return std::optional<billing::SyncProgress>(std::move(p));
}

Result<std::vector<billing::RowSpan>> PostgresStore::ReadSpans(const billing::SpanQuery& q) {
  std::string piece = "0";
  if (!q.cuts.empty()) {
    piece = "CASE";
    for (size_t i = 0; i < q.cuts.size(); ++i)
      piece += " WHEN hour < " + std::to_string(q.cuts[i]) + " THEN " + std::to_string(i);
    piece += " ELSE " + std::to_string(q.cuts.size()) + " END";
  }
  std::vector<std::string> values;
  std::string where = "TRUE", ns;
  if (q.from) where += " AND hour >= " + std::to_string(*q.from);
  if (q.to) where += " AND hour < " + std::to_string(*q.to);
  if (q.namespace_) {
    values.push_back(*q.namespace_);
    ns = " AND namespace = $1";
  }
  std::vector<const char*> params;
  for (const auto& v : values) params.push_back(v.c_str());
  auto run = [&](const std::string& sql, std::vector<billing::RowSpan>* out) {
    ResultGuard g{PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                               params.data(), nullptr, nullptr, 0)};
    if (PQresultStatus(g.r) != PGRES_TUPLES_OK) return Error("read rows for invoices");
    return AppendSpans(g.r, out);
  };
  std::vector<billing::RowSpan> out;
  auto ready = hourly_only_ ? Result<bool>(false) : RollupsReady();
  if (!ready.ok()) return ready.status();
  const billing::MonthPlan plan = *ready ? billing::PlanWholeMonths(q) : billing::MonthPlan{};
  if (plan.any) {
    // The whole months: one row per series and month, from the rollups.
    std::string months = "TRUE";
    if (plan.first) months += " AND month >= " + std::to_string(*plan.first);
    if (plan.end) months += " AND month < " + std::to_string(*plan.end);
    for (Millis m : plan.split) months += " AND month <> " + std::to_string(m);
    if (Status s = run(std::string("SELECT ") + kKey +
                           ", 0, request_raw::text, usage_raw::text, max_raw::text,"
                           " samples::text, covered_ms::text, run_ms::text, min_hour, max_hour"
                           " FROM arbiter_monthly WHERE " +
                           months + ns,
                       &out);
        !s.ok())
      return s;
    if (!plan.NeedsHourlyRows()) return out;
    // The rest of the window from the hourly rows: before and after the whole months, and the
    // months a version splits.
    std::string rest;
    if (plan.before) rest += " OR hour < " + std::to_string(*plan.first);
    if (plan.after) rest += " OR hour >= " + std::to_string(*plan.end);
    for (Millis m : plan.split)
      rest += " OR (hour >= " + std::to_string(m) + " AND hour < " +
              std::to_string(NextMonthStart(m)) + ")";
    where += " AND (FALSE" + rest + ")";
  }
  if (Status s = run(std::string("SELECT ") + kKey + ", " + piece +
                         " AS piece, sum(request_raw)::text, sum(usage_raw)::text,"
                         " sum(max_raw)::text, sum(samples)::text, sum(covered_ms)::text,"
                         " sum(run_ms)::text, min(hour), max(hour) FROM arbiter_hourly WHERE " +
                         where + ns + " GROUP BY " + kKey + ", piece",
                     &out);
      !s.ok())
    return s;
  return out;
}

Status PostgresStore::AppendSpans(PGresult* r, std::vector<billing::RowSpan>* out) {
  out->reserve(out->size() + static_cast<size_t>(PQntuples(r)));
  for (int i = 0; i < PQntuples(r); ++i) {
    auto v = [&](int c) {
      return std::string_view(PQgetvalue(r, i, c), static_cast<size_t>(PQgetlength(r, i, c)));
    };
    billing::RowSpan s;
    billing::HourlyRow& h = s.sum;
    h.namespace_ = std::string(v(0));
    h.workload = std::string(v(1));
    h.resource = std::string(v(2));
    h.gpu_product = std::string(v(3));
    h.preemptor = std::string(v(6));
    billing::i128 n[11];
    const int cols[11] = {4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 7};
    for (int k = 0; k < 11; ++k) {
      auto x = billing::ParseI128(v(cols[k]));
      if (!x.ok()) return Status::Error(describe_ + ": corrupt value in the rows of " + h.workload);
      n[k] = *x;
    }
    h.gpu_replicas = static_cast<int64_t>(n[0]);
    h.kind = n[1] == 1 ? billing::RowKind::kCredit : billing::RowKind::kUsage;
    h.request_raw = n[2];
    h.usage_raw = n[3];
    h.max_raw = n[4];
    h.samples = static_cast<int64_t>(n[5]);
    h.covered_ms = static_cast<int64_t>(n[6]);
    h.run_ms = static_cast<int64_t>(n[7]);
    h.hour = static_cast<Millis>(n[8]);
    s.last_hour = static_cast<Millis>(n[9]);
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace arbiter::postgres
