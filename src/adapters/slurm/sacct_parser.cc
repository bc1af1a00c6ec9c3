#include "adapters/slurm/sacct_parser.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <sstream>

#include "core/int128.h"
#include "core/text.h"

namespace arbiter::slurm {

namespace {

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();
// Elapsed above a century is corrupt input (and would overflow Start + Elapsed).
constexpr int64_t kMaxElapsedSeconds = int64_t{100} * 366 * 86400;

std::string Lower(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return r;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Non-negative decimal integer, no sign, no overflow.
std::optional<int64_t> Digits(std::string_view s) {
  if (!AllDigits(s) || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool LeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

struct Field {
  std::string_view text;
  size_t column;  // 1-based
};

// Splits on '|'; columns are 1-based byte offsets.
std::vector<Field> Split(std::string_view line) {
  std::vector<Field> out;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == '|') {
      out.push_back({line.substr(start, i - start), start + 1});
      start = i + 1;
    }
  }
  return out;
}

// One "key=value" item of a TRES list, with its offset inside the field.
struct TresItem {
  std::string_view key, value;
  size_t offset;
  bool has_eq;
};
std::vector<TresItem> SplitTres(std::string_view s) {
  std::vector<TresItem> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      std::string_view item = s.substr(start, i - start);
      if (!item.empty()) {
        size_t eq = item.find('=');
        if (eq == std::string_view::npos)
          out.push_back({item, {}, start, false});
        else
          out.push_back({item.substr(0, eq), item.substr(eq + 1), start, true});
      }
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

Result<Millis> ParseUtcOffset(std::string_view t) {
  if (t == "Z" || t == "UTC" || t == "z") return Millis{0};
  if (t.size() < 3 || (t[0] != '+' && t[0] != '-'))
    return Result<Millis>::Error("UTC offset " + Quoted(t) + ": expected +HH:MM, -HHMM or Z");
  std::string_view r = t.substr(1);
  std::string_view hh, mm = "00";
  if (r.size() == 5 && r[2] == ':')
    hh = r.substr(0, 2), mm = r.substr(3, 2);
  else if (r.size() == 4)
    hh = r.substr(0, 2), mm = r.substr(2, 2);
  else if (r.size() == 2)
    hh = r;
  else
    return Result<Millis>::Error("UTC offset " + Quoted(t) + ": expected +HH:MM, -HHMM or Z");
  auto h = Digits(hh), m = Digits(mm);
  if (!h || !m || *h > 23 || *m > 59)
    return Result<Millis>::Error("UTC offset " + Quoted(t) + ": out of range");
  Millis v = (*h * 60 + *m) * 60000;
  return t[0] == '-' ? -v : v;
}

Result<std::optional<Millis>> ParseSacctTime(std::string_view t, Millis utc_offset_ms) {
  using R = Result<std::optional<Millis>>;
  if (t.empty() || t == "Unknown" || t == "None") return std::optional<Millis>();
  if (AllDigits(t)) {
    auto v = Digits(t);
    if (!v || *v > 253402300799)
      return R::Error("time " + Quoted(t) + ": Unix seconds out of range");
    return std::optional<Millis>(*v * 1000);
  }
  // YYYY-MM-DDTHH:MM:SS[zone]
  if (t.size() < 19 || t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != ' ') ||
      t[13] != ':' || t[16] != ':')
    return R::Error("time " + Quoted(t) +
                    ": expected YYYY-MM-DDTHH:MM:SS, Unix seconds, Unknown or None");
  auto y = Digits(t.substr(0, 4)), mo = Digits(t.substr(5, 2)), d = Digits(t.substr(8, 2)),
       h = Digits(t.substr(11, 2)), mi = Digits(t.substr(14, 2)), s = Digits(t.substr(17, 2));
  if (!y || !mo || !d || !h || !mi || !s)
    return R::Error("time " + Quoted(t) + ": not a date and time");
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*mo < 1 || *mo > 12 || *d < 1 || *d > kDays[*mo - 1] + ((*mo == 2 && LeapYear(*y)) ? 1 : 0) ||
      *h > 23 || *mi > 59 || *s > 60)
    return R::Error("time " + Quoted(t) + ": no such date or time");
  Millis offset = utc_offset_ms;
  std::string_view zone = t.substr(19);
  if (!zone.empty()) {
    auto z = ParseUtcOffset(zone);
    if (!z.ok()) return R::Error("time " + Quoted(t) + ": " + z.message());
    offset = *z;
  }
  const int64_t secs =
      DaysFromCivil(*y, *mo, *d) * 86400 + *h * 3600 + *mi * 60 + std::min<int64_t>(*s, 59);
  return std::optional<Millis>(secs * 1000 - offset);
}

Result<Millis> ParseSacctDuration(std::string_view t) {
  const std::string msg = "duration " + Quoted(t) + ": expected [D-][HH:]MM:SS";
  if (t.empty()) return Result<Millis>::Error(msg);
  int64_t days = 0;
  if (size_t dash = t.find('-'); dash != std::string_view::npos) {
    auto d = Digits(t.substr(0, dash));
    if (!d || *d > 100000) return Result<Millis>::Error(msg);
    days = *d;
    t.remove_prefix(dash + 1);
  }
  Millis frac_ms = 0;
  if (size_t dot = t.find('.'); dot != std::string_view::npos) {
    std::string_view f = t.substr(dot + 1);
    if (!AllDigits(f) || f.size() > 6) return Result<Millis>::Error(msg);
    std::string padded(f);
    padded.resize(6, '0');
    frac_ms = *Digits(padded) / 1000;  // microseconds -> ms (sacct prints CPU time to microseconds)
    t = t.substr(0, dot);
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= t.size(); ++i)
    if (i == t.size() || t[i] == ':') {
      parts.push_back(t.substr(start, i - start));
      start = i + 1;
    }
  if (parts.size() < 2 || parts.size() > 3) return Result<Millis>::Error(msg);
  int64_t v[3] = {0, 0, 0};
  const size_t off = 3 - parts.size();
  for (size_t i = 0; i < parts.size(); ++i) {
    auto x = Digits(parts[i]);
    if (!x || parts[i].size() > 2 + (i == 0 ? 6 : 0)) return Result<Millis>::Error(msg);
    v[off + i] = *x;
  }
  if (v[1] > 59 || v[2] > 59) return Result<Millis>::Error(msg);
  return ((days * 24 + v[0]) * 3600 + v[1] * 60 + v[2]) * 1000 + frac_ms;
}

Result<int64_t> ParseSacctBytes(std::string_view t, int64_t base) {
  const std::string msg = Quoted(t) + ": expected a size such as 64000M, 62.50G or 1184K";
  if (t.empty()) return Result<int64_t>::Error(msg);
  int64_t mult = base;
  const char last = t.back();
  const std::string_view units = "KMGTP";
  if (size_t u = units.find(last); u != std::string_view::npos) {
    mult = int64_t{1} << (10 * (u + 1));
    t.remove_suffix(1);
  }
  std::string_view ip = t, fp;
  if (size_t dot = t.find('.'); dot != std::string_view::npos) {
    ip = t.substr(0, dot);
    fp = t.substr(dot + 1);
    if (fp.empty() || fp.size() > 6 || !AllDigits(fp)) return Result<int64_t>::Error(msg);
  }
  auto i = Digits(ip);
  if (!i) return Result<int64_t>::Error(msg);
  if (*i > kMaxI64 / mult) return Result<int64_t>::Error(Quoted(t) + ": too large");
  int64_t bytes = *i * mult;
  if (!fp.empty()) {
    // value = i + f / 10^n; exact when f * mult is a multiple of 10^n.
    int64_t f = *Digits(fp), scale = 1;
    for (size_t k = 0; k < fp.size(); ++k) scale *= 10;
    int128 num = static_cast<int128>(f) * mult;
    if (num % scale != 0)
      return Result<int64_t>::Error(
          Quoted(std::string(t) + std::string(1, last)) +
          ": not a whole number of bytes; run sacct with --noconvert for exact sizes");
    bytes += static_cast<int64_t>(num / scale);
  }
  return bytes;
}

Status SacctParser::Err(size_t column, std::string_view field, const std::string& msg) const {
  std::string s = file_ + ":" + std::to_string(line_);
  if (column > 0) s += ":" + std::to_string(column);
  s += ": ";
  if (!field.empty()) s += std::string(field) + ": ";
  return Status::Error(s + msg);
}

Status SacctParser::Feed(std::string_view line) {
  ++line_;
  if (line.size() > opts_.max_line_bytes)
    return Err(0, "",
               "line of " + std::to_string(line.size()) + " bytes is longer than the limit of " +
                   std::to_string(opts_.max_line_bytes));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return Status::Ok();  // blank
  if (!have_header_) return Header(line);
  return Record(line);
}

Status SacctParser::Header(std::string_view line) {
  auto fields = Split(line);
  if (fields.size() > 1 && fields.back().text.empty())
    fields.pop_back();  // --parsable's trailing '|'
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string name(fields[i].text);
    const std::string key = Lower(name);
    if (key.empty()) return Err(fields[i].column, "", "empty field name in the header");
    if (col_.count(key)) return Err(fields[i].column, name, "field named twice in the header");
    col_[key] = i;
    names_.push_back(name);
  }
  std::vector<std::string> missing;
  for (const char* req :
       {"JobID", "JobName", "Account", "QOS", "State", "Start", "End", "AllocTRES"})
    if (!col_.count(Lower(req))) missing.push_back(req);
  if (!col_.count("elapsed") && !col_.count("elapsedraw"))
    missing.push_back("Elapsed (or ElapsedRaw)");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    const bool looks_like_data = !fields.empty() && (AllDigits(fields[0].text.substr(0, 1)));
    return Err(
        0, "",
        std::string(looks_like_data
                        ? "the first line is a record, not the header (run sacct without -n); "
                        : "") +
            "the header lacks " + list +
            "; run sacct --parsable2 --format=" + std::string(kSacctFormat));
  }
  nfields_ = fields.size();
  have_header_ = true;
  return Status::Ok();
}

namespace {

// One record's fields by lowercased header name; errors carry the parser's FILE:LINE.
class SacctRecordFields {
 public:
  using ErrorAt = std::function<Status(size_t column, std::string_view field, const std::string&)>;
  SacctRecordFields(const std::vector<Field>& fields, const std::map<std::string, size_t>& col,
                    Millis utc_offset_ms, ErrorAt err)
      : fields_(fields), col_(col), utc_offset_ms_(utc_offset_ms), err_(std::move(err)) {}

  const Field* Get(const char* name) const {
    auto it = col_.find(name);
    return it == col_.end() ? nullptr : &fields_[it->second];
  }
  std::string Text(const char* name) const {
    const Field* f = Get(name);
    return f ? std::string(f->text) : std::string();
  }
  // A time field into *out; an absent field leaves it unset.
  Status Time(const char* name, const char* display, std::optional<Millis>* out) const {
    const Field* f = Get(name);
    if (!f) return Status::Ok();
    auto t = ParseSacctTime(f->text, utc_offset_ms_);
    if (!t.ok()) return Err(f->column, display, t.message());
    *out = *t;
    return Status::Ok();
  }
  Status Err(size_t column, std::string_view field, const std::string& msg) const {
    return err_(column, field, msg);
  }

 private:
  const std::vector<Field>& fields_;
  const std::map<std::string, size_t>& col_;
  Millis utc_offset_ms_;
  ErrorAt err_;
};

// State: a word in capitals, then an optional detail ("CANCELLED by 0").
Status ReadSacctState(const SacctRecordFields& r, std::string* word_out, std::string* detail) {
  const Field& st = *r.Get("state");
  std::string_view s = st.text;
  size_t sp = s.find(' ');
  std::string_view word = s.substr(0, sp);
  if (word.empty() || !std::all_of(word.begin(), word.end(),
                                   [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }))
    return r.Err(st.column, "State",
                 Quoted(s) + " is not a job state (COMPLETED, PREEMPTED, CANCELLED by 0, ...)");
  *word_out = std::string(word);
  if (sp != std::string_view::npos) *detail = std::string(s.substr(sp + 1));
  return Status::Ok();
}

// A step's usage: TRESUsageInTot, with TRESUsageInAve filling what Tot lacks.
Status ReadStepUsage(const SacctRecordFields& r, StepUsage* usage) {
  for (const char* which : {"tresusageintot", "tresusageinave"}) {
    const Field* f = r.Get(which);
    if (!f) continue;
    const char* display = which[11] == 't' ? "TRESUsageInTot" : "TRESUsageInAve";
    StepUsage u;
    for (const auto& item : SplitTres(f->text)) {
      const size_t col = f->column + item.offset;
      if (!item.has_eq) return r.Err(col, display, Quoted(item.key) + ": expected NAME=VALUE");
      if (item.key == "cpu") {
        auto d = ParseSacctDuration(item.value);
        if (!d.ok())
          return r.Err(col, display, "cpu=" + std::string(item.value) + ": " + d.message());
        u.cpu_ms = *d;
      } else if (item.key == "mem") {
        auto b = ParseSacctBytes(item.value, 1);
        if (!b.ok()) return r.Err(col, display, "mem=" + b.message());
        u.mem_bytes = *b;
      }
    }
    // Tot is the step's total; Ave (average per task) only fills what Tot lacks.
    if (!usage->cpu_ms) usage->cpu_ms = u.cpu_ms;
    if (!usage->mem_bytes) usage->mem_bytes = u.mem_bytes;
  }
  return Status::Ok();
}

// ElapsedRaw (seconds) if given, else Elapsed ([D-][HH:]MM:SS).
Status ReadElapsed(const SacctRecordFields& r, std::optional<Millis>* elapsed) {
  if (const Field* f = r.Get("elapsedraw"); f && !f->text.empty()) {
    auto v = Digits(f->text);
    if (!v || *v > kMaxElapsedSeconds)
      return r.Err(f->column, "ElapsedRaw", Quoted(f->text) + " is not a number of seconds");
    *elapsed = *v * 1000;
  } else if (const Field* e = r.Get("elapsed"); e && !e->text.empty()) {
    auto d = ParseSacctDuration(e->text);
    if (!d.ok()) return r.Err(e->column, "Elapsed", d.message());
    *elapsed = *d;
  }
  return Status::Ok();
}

Status ReadAllocTres(const SacctRecordFields& r, AllocTres* alloc) {
  const Field& tres = *r.Get("alloctres");
  for (const auto& item : SplitTres(tres.text)) {
    const size_t col = tres.column + item.offset;
    if (item.value.empty())
      return r.Err(col, "AllocTRES", Quoted(item.key) + ": expected NAME=COUNT");
    auto count = [&](int64_t* out) -> Status {
      auto v = Digits(item.value);
      if (!v)
        return r.Err(col, "AllocTRES",
                     std::string(item.key) + "=" + std::string(item.value) + ": not a count");
      *out = *v;
      return Status::Ok();
    };
    if (item.key == "cpu") {
      if (Status s = count(&alloc->cpus); !s.ok()) return s;
    } else if (item.key == "mem") {
      auto b = ParseSacctBytes(item.value, int64_t{1} << 20);
      if (!b.ok()) return r.Err(col, "AllocTRES", "mem=" + b.message());
      alloc->mem_bytes = *b;
    } else if (item.key == "node") {
      if (Status s = count(&alloc->nodes); !s.ok()) return s;
    } else if (item.key == "billing") {
      int64_t b = 0;
      if (Status s = count(&b); !s.ok()) return s;
      alloc->billing = b;
    } else if (item.key == "gres/gpu") {
      if (Status s = count(&alloc->gpus); !s.ok()) return s;
    } else if (item.key.substr(0, 9) == "gres/gpu:") {
      std::string type(item.key.substr(9));
      if (type.empty()) return r.Err(col, "AllocTRES", "gres/gpu: without a type");
      int64_t n = 0;
      if (Status s = count(&n); !s.ok()) return s;
      alloc->gpu_types[type] += n;
    }
    // Other TRES (energy, fs/disk, license/..., other gres) are not billed.
  }
  if (!alloc->gpu_types.empty()) {
    int64_t typed = 0;
    for (const auto& [t, n] : alloc->gpu_types) typed += n;
    // A typed GPU is also counted in gres/gpu; output without the generic count means all typed.
    if (alloc->gpus == 0) alloc->gpus = typed;
  }
  return Status::Ok();
}

}  // namespace

Status SacctParser::Record(std::string_view line) {
  auto fields = Split(line);
  if (fields.size() == nfields_ + 1 && fields.back().text.empty()) fields.pop_back();
  if (fields.size() != nfields_)
    return Err(0, "",
               "expected " + std::to_string(nfields_) + " fields as in the header, got " +
                   std::to_string(fields.size()));
  const SacctRecordFields r(fields, col_, opts_.utc_offset_ms,
                            [this](size_t column, std::string_view field, const std::string& msg) {
                              return Err(column, field, msg);
                            });
  const Field& id = *r.Get("jobid");
  if (id.text.empty()) return Err(id.column, "JobID", "empty job ID");
  const bool printable =
      std::all_of(id.text.begin(), id.text.end(), [](char c) { return c > ' ' && c < 127; });
  if (!printable || !(id.text[0] >= '0' && id.text[0] <= '9'))
    return Err(id.column, "JobID", Quoted(id.text) + " is not a Slurm job ID");
  const size_t dot = id.text.find('.');
  std::string state_word, state_detail;
  if (Status s = ReadSacctState(r, &state_word, &state_detail); !s.ok()) return s;
  if (dot != std::string_view::npos) {
    // A step: it belongs to the allocation record just before it.
    std::string_view parent = id.text.substr(0, dot);
    if (runs_.empty() || runs_.back().job_id != parent)
      return Err(id.column, "JobID",
                 "step " + Quoted(id.text) + " does not follow its job " + Quoted(parent) +
                     " (sacct prints each job's steps right after it)");
    SacctRun& run = runs_.back();
    if (run.steps.size() >= opts_.max_steps_per_run)
      return Err(id.column, "JobID",
                 "more than " + std::to_string(opts_.max_steps_per_run) + " steps in job " +
                     Quoted(parent));
    SacctStep step;
    step.name = std::string(id.text.substr(dot + 1));
    step.state = state_word;
    step.line = line_;
    if (Status s = r.Time("start", "Start", &step.start); !s.ok()) return s;
    if (Status s = r.Time("end", "End", &step.end); !s.ok()) return s;
    if (Status s = ReadStepUsage(r, &step.usage); !s.ok()) return s;
    run.steps.push_back(std::move(step));
    return Status::Ok();
  }
  SacctRun run;
  run.line = line_;
  run.job_id = std::string(id.text);
  run.job_id_raw = r.Text("jobidraw");
  run.job_name = r.Text("jobname");
  run.cluster = r.Text("cluster");
  run.partition = r.Text("partition");
  run.account = r.Text("account");
  run.user = r.Text("user");
  run.qos = r.Text("qos");
  run.exit_code = r.Text("exitcode");
  run.node_list = r.Text("nodelist");
  run.state = state_word;
  run.state_detail = state_detail;
  if (Status s = r.Time("submit", "Submit", &run.submit); !s.ok()) return s;
  if (Status s = r.Time("eligible", "Eligible", &run.eligible); !s.ok()) return s;
  if (Status s = r.Time("start", "Start", &run.start); !s.ok()) return s;
  if (Status s = r.Time("end", "End", &run.end); !s.ok()) return s;
  if (run.start && run.end && *run.end < *run.start)
    return Err(r.Get("end")->column, "End", "ends before its Start");
  if (Status s = ReadElapsed(r, &run.elapsed); !s.ok()) return s;
  if (Status s = ReadAllocTres(r, &run.alloc); !s.ok()) return s;
  runs_.push_back(std::move(run));
  return Status::Ok();
}

Result<std::vector<SacctRun>> SacctParser::Finish() {
  if (!have_header_)
    return Result<std::vector<SacctRun>>::Error(
        file_ + ": no header line: run sacct --parsable2 without -n");
  return std::move(runs_);
}

Result<std::vector<SacctRun>> ParseSacct(std::istream& in, const std::string& file,
                                         const SacctParseOptions& opts) {
  SacctParser p(file, opts);
  std::string line;
  // Reads one line at a time without letting a line grow past the limit.
  std::vector<char> buf(64 * 1024);
  bool overlong = false;
  for (;;) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    for (std::streamsize i = 0; i < n; ++i) {
      const char c = buf[static_cast<size_t>(i)];
      if (c == '\n') {
        if (overlong) {
          Status s =
              p.Feed(std::string(opts.max_line_bytes + 1, ' '));  // reports the line as too long
          return Result<std::vector<SacctRun>>(s);
        }
        if (Status s = p.Feed(line); !s.ok()) return Result<std::vector<SacctRun>>(s);
        line.clear();
      } else if (!overlong) {
        line += c;
        if (line.size() > opts.max_line_bytes) {
          overlong = true;
          line.clear();
          line.shrink_to_fit();
        }
      }
    }
  }
  if (overlong)
    return Result<std::vector<SacctRun>>(p.Feed(std::string(opts.max_line_bytes + 1, ' ')));
  if (!line.empty())
    if (Status s = p.Feed(line); !s.ok()) return Result<std::vector<SacctRun>>(s);
  if (in.bad()) return Result<std::vector<SacctRun>>::Error(file + ": read error");
  return p.Finish();
}

Result<std::vector<SacctRun>> ParseSacctText(std::string_view text, const std::string& file,
                                             const SacctParseOptions& opts) {
  std::istringstream in{std::string(text)};
  return ParseSacct(in, file, opts);
}

}  // namespace arbiter::slurm
