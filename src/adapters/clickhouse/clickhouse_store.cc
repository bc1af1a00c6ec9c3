#include "adapters/clickhouse/clickhouse_store.h"

#include <set>
#include <sstream>
#include <tuple>

#include "adapters/report/invoice_json.h"
#include "adapters/warehouse/row_text.h"

namespace arbiter::clickhouse {

using billing::i128;

std::string Literal(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') q += '\\';
    q += c;
  }
  return q + "'";
}

namespace {

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c == '0' ? '\0' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> f;
  size_t a = 0;
  while (true) {
    size_t t = line.find('\t', a);
    f.push_back(line.substr(a, t == std::string_view::npos ? std::string_view::npos : t - a));
    if (t == std::string_view::npos) return f;
    a = t + 1;
  }
}
Result<int64_t> Int(std::string_view s) {
  auto v = billing::ParseI128(s);
  if (!v.ok() || *v > INT64_MAX || *v < INT64_MIN)
    return Result<int64_t>::Error("bad integer \"" + std::string(s) + "\"");
  return static_cast<int64_t>(*v);
}

constexpr const char* kKey =
    "namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor";

// A month's rollup of a series from the hourly rows, in the column order of arbiter_monthly.
constexpr const char* kMonthlySelect =
    "SELECT toYYYYMM(hour) AS month, namespace, workload, resource, gpu_product, gpu_replicas, "
    "kind, preemptor, sum(request_raw), sum(usage_raw), sum(max_raw), sum(samples), "
    "sum(covered_ms), sum(run_ms), min(hour), max(hour), sum(version) FROM arbiter_hourly FINAL";
constexpr const char* kMonthlyGroup =
    " GROUP BY month, namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor";

std::string Seconds(Millis t) { return std::to_string(t / 1000); }

// YYYYMM of the UTC month holding t (t >= 0), as toYYYYMM() of a DateTime('UTC').
std::string YearMonth(Millis t) {
  const std::string s = FormatRfc3339(t);  // 2026-01-01T00:00:00Z
  return s.substr(0, 4) + s.substr(5, 2);
}

// A row's series key (the ledger key without the hour), ordered as ClickHouse orders it:
// strings bytewise (std::string compares as unsigned char), integers by value.
auto SeriesOf(const billing::HourlyRow& r) {
  return std::tie(r.namespace_, r.workload, r.resource, r.gpu_product, r.gpu_replicas, r.kind,
                  r.preemptor);
}

// The series key of `r` as SQL literals, in kKey's order.
std::vector<std::string> SeriesLiterals(const billing::HourlyRow& r) {
  return {Literal(r.namespace_),
          Literal(r.workload),
          Literal(r.resource),
          Literal(r.gpu_product),
          std::to_string(r.gpu_replicas),
          std::to_string(static_cast<int>(r.kind)),
          Literal(r.preemptor)};
}

// series key >= r's (at_least) or <= r's, lexicographically, written as comparisons of the
// columns one by one so that the primary key index narrows the scan to the range.
std::string SeriesBound(const billing::HourlyRow& r, bool at_least) {
  static const char* const cols[] = {"namespace",    "workload", "resource", "gpu_product",
                                     "gpu_replicas", "kind",     "preemptor"};
  const auto v = SeriesLiterals(r);
  std::string e = std::string(cols[6]) + (at_least ? " >= " : " <= ") + v[6];
  for (int i = 5; i >= 0; --i) {
    const std::string c = cols[i], x = v[static_cast<size_t>(i)];
    e = "(" + c + (at_least ? " > " : " < ") + x + " OR (" + c + " = " + x + " AND " + e + "))";
  }
  return e;
}

}  // namespace

Result<std::unique_ptr<ClickHouseStore>> ClickHouseStore::Open(const std::string& url,
                                                               http::Options opts) {
  using R = Result<std::unique_ptr<ClickHouseStore>>;
  auto u = http::ParseUrl(url);
  if (!u.ok()) return u.status();
  if (u->scheme != "clickhouse") return R::Error("not a clickhouse:// URL: " + url);
  std::string db = u->path.size() > 1 ? u->path.substr(1) : "default";
  for (char c : db)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return R::Error("ClickHouse database name \"" + db + "\" must be letters, digits and _");
  const int port = u->port ? u->port : 8123;
  std::string host = u->host.find(':') != std::string::npos ? "[" + u->host + "]" : u->host;
  std::string scheme =
      u->query.count("secure") && u->query.at("secure") == "true" ? "https" : "http";
  std::string describe = "clickhouse://" + host + ":" + std::to_string(port) + "/" + db;
  auto c = std::make_unique<http::Client>(scheme + "://" + host + ":" + std::to_string(port),
                                          "ClickHouse at " + describe, opts);
  http::Headers h;
  if (!u->user.empty()) h.emplace_back("X-ClickHouse-User", u->user);
  if (!u->password.empty()) h.emplace_back("X-ClickHouse-Key", u->password);
  c->SetHeaders(std::move(h));
  return std::unique_ptr<ClickHouseStore>(new ClickHouseStore(describe, db, std::move(c)));
}

Result<std::string> ClickHouseStore::Query(const std::string& sql, const std::string& body) {
  // Statements go in the URL when a body carries data (INSERT ... FORMAT), else in the body.
  // Every statement here is idempotent (CREATE IF NOT EXISTS, SELECT, inserts deduplicated by
  // key), so retrying is safe. wait_end_of_query: an error is never hidden behind a 200.
  http::Params q = {{"database", db_}, {"wait_end_of_query", "1"}};
  Result<http::Response> res =
      body.empty() ? http_->Post("/", q, sql, "text/plain", true)
                   : (q.emplace_back("query", sql), http_->Post("/", q, body, "text/plain", true));
  if (!res.ok()) return res.status();
  if (res->status != 200) {
    std::string msg = res->body.substr(0, 1500);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    std::string shown = sql.size() > 200 ? sql.substr(0, 200) + "..." : sql;
    return Result<std::string>::Error(http_->what() + " answered HTTP " +
                                      std::to_string(res->status) + ": " + msg +
                                      " (query: " + shown + ")");
  }
  return std::move(res->body);
}

Status ClickHouseStore::EnsureSchema() {
  const char* stmts[] = {
      "CREATE TABLE IF NOT EXISTS arbiter_hourly ("
      " namespace String, workload String, resource String, gpu_product String, gpu_replicas Int64,"
      " kind UInt8, preemptor String, hour DateTime('UTC'), version UInt64,"
      " request_raw Decimal(38,0), usage_raw Decimal(38,0), max_raw Decimal(38,0),"
      " samples Int64, covered_ms Int64, run_ms Int64,"
      " unit String, price_book String, currency String, mode String,"
      " unit_price String, billed_quantity String, amount String)"
      " ENGINE = ReplacingMergeTree(version) PARTITION BY toYYYYMM(hour)"
      " ORDER BY (namespace, workload, resource, gpu_product, gpu_replicas, kind, preemptor, hour)",
      "CREATE TABLE IF NOT EXISTS arbiter_price_books (id String, effective_from Int64, canonical "
      "String,"
      " json String) ENGINE = ReplacingMergeTree ORDER BY id",
      "CREATE TABLE IF NOT EXISTS arbiter_sync (id UInt8, synced_before Int64)"
      " ENGINE = ReplacingMergeTree(synced_before) ORDER BY id",
      // Per ledger id, how far it was copied: both columns only grow, so max() of each over the
      // inserted rows is the mark whether or not the parts were merged.
      "CREATE TABLE IF NOT EXISTS arbiter_sync_ledger (ledger String, synced_before Int64, seq "
      "Int64) ENGINE = ReplacingMergeTree(seq) ORDER BY ledger",
      // A sync's progress per batch (billing::SyncProgress): the row of the highest step counts.
      "CREATE TABLE IF NOT EXISTS arbiter_sync_progress (ledger String, from_hour Int64, after_seq "
      "Int64,"
      " target_before Int64, target_seq Int64, step Int64, last_key String)"
      " ENGINE = ReplacingMergeTree(step) ORDER BY ledger",
      // Monthly rollups (issue 28): see the header.
      "CREATE TABLE IF NOT EXISTS arbiter_monthly (month UInt32, namespace String, workload "
      "String,"
      " resource String, gpu_product String, gpu_replicas Int64, kind UInt8, preemptor String,"
      " request_raw Decimal(38,0), usage_raw Decimal(38,0), max_raw Decimal(38,0),"
      " samples Int64, covered_ms Int64, run_ms Int64, min_hour DateTime('UTC'),"
      " max_hour DateTime('UTC'), state UInt64) ENGINE = ReplacingMergeTree(state)"
      " PARTITION BY month ORDER BY (month, namespace, workload, resource, gpu_product,"
      " gpu_replicas, kind, preemptor)",
      "CREATE TABLE IF NOT EXISTS arbiter_schema (name String, value Int64)"
      " ENGINE = ReplacingMergeTree(value) ORDER BY name",
  };
  for (const char* s : stmts)
    if (auto r = Query(s); !r.ok()) return r.status();
  auto ready = RollupsReady();
  if (!ready.ok()) return ready.status();
  if (*ready) return Status::Ok();
  // Hourly rows written before the rollups existed (or a backfill killed half-way): every
  // month recomputed once, then marked.
  if (auto r = Query(std::string("INSERT INTO arbiter_monthly ") + kMonthlySelect + kMonthlyGroup);
      !r.ok())
    return r.status();
  if (auto r = Query("INSERT INTO arbiter_schema FORMAT TabSeparated", "monthly_rollups\t1\n");
      !r.ok())
    return r.status();
  rollups_ready_ = true;
  return Status::Ok();
}

Result<bool> ClickHouseStore::RollupsReady() {
  if (rollups_ready_) return true;
  auto body = Query("SELECT count() FROM arbiter_schema WHERE name = 'monthly_rollups'");
  if (!body.ok()) {
    // Code 60: no such table (a warehouse written by an arbiter before the rollups).
    if (body.message().find("Code: 60,") != std::string::npos) return false;
    return body.status();
  }
  rollups_ready_ = !body->empty() && (*body)[0] != '0';
  return rollups_ready_;
}

Status ClickHouseStore::RefreshMonthly(const std::vector<billing::StoredRow>& rows) {
  if (rows.empty()) return Status::Ok();
  // The series range and months of the rows (a range of the primary key: the index narrows the
  // recomputation to it), and while they are few the exact (series, month) pairs.
  constexpr size_t kMaxPairsText = 100000;
  const billing::HourlyRow *lo = &rows[0].row, *hi = lo, *prev = nullptr;
  std::set<Millis> months;
  std::set<std::string> pairs;
  size_t pairs_text = 0;
  Millis prev_month = 0;
  for (const billing::StoredRow& s : rows) {
    const billing::HourlyRow& r = s.row;
    if (SeriesOf(r) < SeriesOf(*lo)) lo = &r;
    if (SeriesOf(*hi) < SeriesOf(r)) hi = &r;
    const Millis m = MonthStartOf(r.hour);
    months.insert(m);
    if (pairs_text > kMaxPairsText || (prev && m == prev_month && SeriesOf(*prev) == SeriesOf(r)))
      continue;
    prev = &r;
    prev_month = m;
    std::string t = "(";
    for (const std::string& v : SeriesLiterals(r)) t += v + ", ";
    t += YearMonth(m) + ")";
    pairs_text += t.size() + 2;
    pairs.insert(std::move(t));
  }
  std::string hours;
  for (Millis m : months)
    hours += std::string(hours.empty() ? "" : " OR ") + "(hour >= " + Seconds(m) + " AND hour < " +
             Seconds(NextMonthStart(m)) + ")";
  std::string where =
      "(" + hours + ") AND " + SeriesBound(*lo, true) + " AND " + SeriesBound(*hi, false);
  if (pairs_text <= kMaxPairsText) {
    where += std::string(" AND (") + kKey + ", toYYYYMM(hour)) IN (";
    bool first = true;
    for (const std::string& t : pairs) {
      where += (first ? "" : ", ") + t;
      first = false;
    }
    where += ")";
  }
  auto r = Query(std::string("INSERT INTO arbiter_monthly ") + kMonthlySelect + " WHERE " + where +
                 kMonthlyGroup);
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::vector<PriceBook>> ClickHouseStore::PriceBooks() {
  auto body = Query(
      "SELECT json FROM arbiter_price_books FINAL ORDER BY effective_from, id FORMAT TabSeparated");
  if (!body.ok()) return body.status();
  std::vector<PriceBook> out;
  std::istringstream in(*body);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(Unescape(line), nullptr, false);
    auto b = report::PriceBooksFromJson(j);
    if (!b.ok())
      return Result<std::vector<PriceBook>>::Error(describe_ +
                                                   ": stored PriceBook unreadable: " + b.message());
    for (auto& x : *b) out.push_back(std::move(x));
  }
  return out;
}

Status ClickHouseStore::PutPriceBooks(const std::vector<PriceBook>& books) {
  auto body = Query("SELECT id, canonical FROM arbiter_price_books FINAL FORMAT TabSeparated");
  if (!body.ok()) return body.status();
  std::map<std::string, std::string> stored;
  std::istringstream in(*body);
  std::string line;
  while (std::getline(in, line)) {
    auto f = Fields(line);
    if (f.size() == 2) stored[Unescape(f[0])] = Unescape(f[1]);
  }
  std::string tsv;
  for (const PriceBook& b : books) {
    std::string id = billing::PriceBookId(b), canon = billing::CanonicalPriceBook(b);
    auto it = stored.find(id);
    if (it != stored.end()) {
      if (it->second != canon)
        return Status::Error(describe_ + ": PriceBook " + id + " is stored with different prices");
      continue;
    }
    warehouse::AppendEscapedField(&tsv, id);
    tsv += "\t" + std::to_string(b.effective_from) + "\t";
    warehouse::AppendEscapedField(&tsv, canon);
    tsv += "\t";
    warehouse::AppendEscapedField(&tsv, report::PriceBookToJson(b).dump());
    tsv += "\n";
  }
  if (tsv.empty()) return Status::Ok();
  auto r = Query("INSERT INTO arbiter_price_books FORMAT TabSeparated", tsv);
  return r.ok() ? Status::Ok() : r.status();
}

Status ClickHouseStore::PutRows(const std::vector<billing::StoredRow>& rows,
                                const std::optional<billing::SyncMark>& mark,
                                const std::optional<billing::SyncProgress>& progress) {
  if (!rows.empty()) {
    std::string tsv;
    tsv.reserve(rows.size() * 200);
    for (const billing::StoredRow& s : rows) {
      const billing::HourlyRow& r = s.row;
      if (r.hour < 0 || r.hour % 1000 != 0)
        return Status::Error(describe_ + ": hour " + std::to_string(r.hour) + " of " + r.workload +
                             " cannot be stored (DateTime holds whole seconds from 1970)");
      warehouse::AppendHourlyRow(&tsv, s, warehouse::HourColumn::kSeconds);
    }
    auto r = Query("INSERT INTO arbiter_hourly FORMAT TabSeparated", tsv);
    if (!r.ok()) return r.status();
    // Before the progress or the mark: a kill in between re-sends these rows, and so recomputes.
    if (Status m = RefreshMonthly(rows); !m.ok()) return m;
  }
  if (mark) {
    std::string line;
    warehouse::AppendEscapedField(&line, mark->ledger);
    line += "\t" + std::to_string(mark->synced_before) + "\t" + std::to_string(mark->seq) + "\n";
    auto m = Query("INSERT INTO arbiter_sync_ledger FORMAT TabSeparated", line);
    if (!m.ok()) return m.status();
    auto r = Query("INSERT INTO arbiter_sync FORMAT TabSeparated",
                   "1\t" + std::to_string(mark->synced_before) + "\n");
    if (!r.ok()) return r.status();
  }
  if (progress) {  // after its rows: a kill in between only copies them again
    std::string line;
    warehouse::AppendEscapedField(&line, progress->ledger);
    for (int64_t v : {progress->from, progress->after, progress->target_before,
                      progress->target_seq, progress->step})
      line += "\t" + std::to_string(v);
    line += "\t";
    warehouse::AppendEscapedField(&line, progress->last_key);
    line += "\n";
    auto r = Query("INSERT INTO arbiter_sync_progress FORMAT TabSeparated", line);
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Result<std::optional<billing::SyncProgress>> ClickHouseStore::ProgressOf(
    const std::string& ledger) {
  using R = Result<std::optional<billing::SyncProgress>>;
  auto body = Query(
      "SELECT from_hour, after_seq, target_before, target_seq, step, last_key FROM "
      "arbiter_sync_progress WHERE ledger = " +
      Literal(ledger) + " ORDER BY step DESC LIMIT 1 FORMAT TabSeparated");
  if (!body.ok()) return body.status();
  if (body->empty()) return std::optional<billing::SyncProgress>();
  auto f = Fields(std::string_view(*body).substr(0, body->find('\n')));
  if (f.size() != 6) return R::Error(describe_ + ": unreadable sync progress");
  billing::SyncProgress p;
  p.ledger = ledger;
  int64_t* ints[] = {&p.from, &p.after, &p.target_before, &p.target_seq, &p.step};
  for (size_t k = 0; k < 5; ++k) {
    auto v = Int(f[k]);
    if (!v.ok()) return R::Error(describe_ + ": unreadable sync progress");
    *ints[k] = *v;
  }
  p.last_key = Unescape(f[5]);
  return std::optional<billing::SyncProgress>(std::move(p));
}

Result<std::optional<billing::SyncMark>> ClickHouseStore::MarkOf(const std::string& ledger) {
  using R = Result<std::optional<billing::SyncMark>>;
  auto body = Query(
      "SELECT count(), max(synced_before), max(seq) FROM arbiter_sync_ledger WHERE ledger = " +
      Literal(ledger) + " FORMAT TabSeparated");
  if (!body.ok()) return body.status();
  auto f = Fields(std::string_view(*body).substr(0, body->find('\n')));
  if (f.size() != 3) return R::Error(describe_ + ": unreadable sync mark");
  auto n = Int(f[0]), before = Int(f[1]), seq = Int(f[2]);
  if (!n.ok() || !before.ok() || !seq.ok()) return R::Error(describe_ + ": unreadable sync mark");
  if (*n == 0) return std::optional<billing::SyncMark>();
  return std::optional<billing::SyncMark>(billing::SyncMark{ledger, *before, *seq});
}

Result<Millis> ClickHouseStore::SyncedBefore() {
  auto body = Query("SELECT count(), max(synced_before) FROM arbiter_sync FORMAT TabSeparated");
  if (!body.ok()) return body.status();
  auto f = Fields(std::string_view(*body).substr(0, body->find('\n')));
  if (f.size() != 2) return Result<Millis>::Error(describe_ + ": unreadable sync watermark");
  auto n = Int(f[0]);
  if (!n.ok()) return n.status();
  if (*n == 0) return INT64_MIN;
  return Int(f[1]);
}

Status ClickHouseStore::Optimize() {
  for (const char* t : {"arbiter_hourly", "arbiter_monthly"})
    if (auto r = Query(std::string("OPTIMIZE TABLE ") + t + " FINAL"); !r.ok()) return r.status();
  return Status::Ok();
}

Result<std::vector<billing::RowSpan>> ClickHouseStore::ReadSpans(const billing::SpanQuery& q) {
  std::string piece = "0";
  if (!q.cuts.empty()) {
    piece = "multiIf(";
    for (size_t i = 0; i < q.cuts.size(); ++i)
      piece += "hour < " + Seconds(q.cuts[i]) + ", " + std::to_string(i) + ", ";
    piece += std::to_string(q.cuts.size()) + ")";
  }
  std::string where = "1";
  if (q.from) where += " AND hour >= " + Seconds(std::max<Millis>(0, *q.from));
  if (q.to) where += " AND hour < " + Seconds(std::max<Millis>(0, *q.to));
  if (q.namespace_) where += " AND namespace = " + Literal(*q.namespace_);
  std::vector<billing::RowSpan> out;
  auto ready = hourly_only_ ? Result<bool>(false) : RollupsReady();
  if (!ready.ok()) return ready.status();
  billing::SpanQuery clamped = q;  // DateTime holds no hour before 1970
  if (clamped.from) clamped.from = std::max<Millis>(0, *clamped.from);
  if (clamped.to) clamped.to = std::max<Millis>(0, *clamped.to);
  const billing::MonthPlan plan = *ready ? billing::PlanWholeMonths(clamped) : billing::MonthPlan{};
  if (plan.any) {
    // The whole months: one row per series and month, from the rollups.
    std::string months = "1";
    if (plan.first) months += " AND month >= " + YearMonth(*plan.first);
    if (plan.end) months += " AND month < " + YearMonth(*plan.end);
    for (Millis m : plan.split) months += " AND month != " + YearMonth(m);
    if (q.namespace_) months += " AND namespace = " + Literal(*q.namespace_);
    auto body = Query(std::string("SELECT ") + kKey +
                      ", 0, request_raw, usage_raw, max_raw, samples, covered_ms, run_ms,"
                      " toUInt32(min_hour), toUInt32(max_hour) FROM arbiter_monthly FINAL WHERE " +
                      months + " FORMAT TabSeparated");
    if (!body.ok()) return body.status();
    if (Status s = ParseSpans(*body, &out); !s.ok()) return s;
    if (!plan.NeedsHourlyRows()) return out;
    // The rest of the window from the hourly rows: before and after the whole months, and the
    // months a version splits.
    std::string rest;
    if (plan.before) rest += " OR hour < " + Seconds(*plan.first);
    if (plan.after) rest += " OR hour >= " + Seconds(*plan.end);
    for (Millis m : plan.split)
      rest += " OR (hour >= " + Seconds(m) + " AND hour < " + Seconds(NextMonthStart(m)) + ")";
    where += " AND (0" + rest + ")";
  }
  std::string sql =
      std::string("SELECT ") + kKey + ", " + piece +
      " AS piece, sum(request_raw), sum(usage_raw), sum(max_raw), sum(samples), sum(covered_ms),"
      " sum(run_ms), toUInt32(min(hour)), toUInt32(max(hour)) FROM arbiter_hourly FINAL WHERE " +
      where + " GROUP BY " + kKey + ", piece FORMAT TabSeparated";
  auto body = Query(sql);
  if (!body.ok()) return body.status();
  if (Status s = ParseSpans(*body, &out); !s.ok()) return s;
  return out;
}

Status ClickHouseStore::ParseSpans(std::string_view text,
                                   std::vector<billing::RowSpan>* out) const {
  size_t a = 0;
  while (a < text.size()) {
    size_t e = text.find('\n', a);
    if (e == std::string_view::npos) e = text.size();
    auto f = Fields(text.substr(a, e - a));
    a = e + 1;
    if (f.size() != 16)
      return Status::Error(describe_ + ": unexpected answer to the invoice query");
    billing::RowSpan s;
    billing::HourlyRow& r = s.sum;
    r.namespace_ = Unescape(f[0]);
    r.workload = Unescape(f[1]);
    r.resource = Unescape(f[2]);
    r.gpu_product = Unescape(f[3]);
    auto rep = Int(f[4]), kind = Int(f[5]);
    r.preemptor = Unescape(f[6]);
    auto req = billing::ParseI128(f[8]), use = billing::ParseI128(f[9]),
         mx = billing::ParseI128(f[10]);
    auto smp = Int(f[11]), cov = Int(f[12]), run = Int(f[13]), h0 = Int(f[14]), h1 = Int(f[15]);
    if (!rep.ok() || !kind.ok() || !req.ok() || !use.ok() || !mx.ok() || !smp.ok() || !cov.ok() ||
        !run.ok() || !h0.ok() || !h1.ok())
      return Status::Error(describe_ + ": corrupt value in the rows of " + r.workload);
    r.gpu_replicas = *rep;
    r.kind = *kind == 1 ? billing::RowKind::kCredit : billing::RowKind::kUsage;
    r.request_raw = *req;
    r.usage_raw = *use;
    r.max_raw = *mx;
    r.samples = *smp;
    r.covered_ms = *cov;
    r.run_ms = *run;
    r.hour = *h0 * 1000;
    s.last_hour = *h1 * 1000;
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace arbiter::clickhouse
