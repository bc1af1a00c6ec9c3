#include "adapters/clickhouse/clickhouse_store.h"

#include <sstream>

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
  };
  for (const char* s : stmts)
    if (auto r = Query(s); !r.ok()) return r.status();
  return Status::Ok();
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
  auto r = Query("OPTIMIZE TABLE arbiter_hourly FINAL");
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::vector<billing::RowSpan>> ClickHouseStore::ReadSpans(const billing::SpanQuery& q) {
  using R = Result<std::vector<billing::RowSpan>>;
  auto sec = [](Millis t) { return std::to_string(t / 1000); };
  std::string piece = "0";
  if (!q.cuts.empty()) {
    piece = "multiIf(";
    for (size_t i = 0; i < q.cuts.size(); ++i)
      piece += "hour < " + sec(q.cuts[i]) + ", " + std::to_string(i) + ", ";
    piece += std::to_string(q.cuts.size()) + ")";
  }
  std::string where = "1";
  if (q.from) where += " AND hour >= " + sec(std::max<Millis>(0, *q.from));
  if (q.to) where += " AND hour < " + sec(std::max<Millis>(0, *q.to));
  if (q.namespace_) where += " AND namespace = " + Literal(*q.namespace_);
  std::string sql =
      std::string("SELECT ") + kKey + ", " + piece +
      " AS piece, sum(request_raw), sum(usage_raw), sum(max_raw), sum(samples), sum(covered_ms),"
      " sum(run_ms), toUInt32(min(hour)), toUInt32(max(hour)) FROM arbiter_hourly FINAL WHERE " +
      where + " GROUP BY " + kKey + ", piece FORMAT TabSeparated";
  auto body = Query(sql);
  if (!body.ok()) return body.status();
  std::vector<billing::RowSpan> out;
  std::string_view text = *body;
  size_t a = 0;
  while (a < text.size()) {
    size_t e = text.find('\n', a);
    if (e == std::string_view::npos) e = text.size();
    auto f = Fields(text.substr(a, e - a));
    a = e + 1;
    if (f.size() != 16) return R::Error(describe_ + ": unexpected answer to the invoice query");
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
      return R::Error(describe_ + ": corrupt value in the rows of " + r.workload);
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
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace arbiter::clickhouse
