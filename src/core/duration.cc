#include "core/duration.h"

#include <cstdio>

#include "core/int128.h"
#include "core/text.h"

namespace arbiter {

namespace {

// The message for a number without a unit at text[at] ("5", "1h30", "5 s"), with a guess: seconds
// for a lone number, the next smaller unit after another component (1h30 -> 1h30m), and the
// text without blanks when that is all that is wrong.
std::string NoUnitMessage(std::string_view text, size_t at, std::string_view previous_unit) {
  std::string msg = "duration \"" + Echo(text) + "\" has no unit";
  std::string guess;
  if (at == text.size()) {
    const char* unit = "s";
    if (previous_unit == "h")
      unit = "m";
    else if (previous_unit == "m")
      unit = "s";
    else if (previous_unit == "s")
      unit = "ms";
    else if (!previous_unit.empty())
      unit = "";
    if (*unit) guess = Echo(text) + unit;
  } else if (text.find_first_of(" \t") != std::string_view::npos) {
    for (char c : text)
      if (c != ' ' && c != '\t') guess += c;
    if (!ParseDuration(guess).ok()) guess.clear();
  }
  if (!guess.empty())
    return msg + ": did you mean " + guess + "? (units: h, m, s, ms; e.g. 30s, 1h30m)";
  return msg + " (units: h, m, s, ms; e.g. 30s, 1h30m)";
}

Status FinerThanMillisecond(std::string_view text) {
  return Status::Error("duration \"" + Echo(text) + "\" is finer than a millisecond");
}

Status TooLarge(std::string_view text) {
  return Status::Error("duration \"" + Echo(text) + "\" is too large");
}

// A component's number: whole + frac / frac_scale.
struct DurationNumber {
  int128 whole = 0;
  int128 frac = 0, frac_scale = 1;
};

// Reads the number of the component at text[*i...]; *i ends where its unit begins. `bad` is the
// grammar's message.
Status ReadComponentNumber(std::string_view text, size_t* i, const std::string& bad,
                           DurationNumber* n) {
  bool digits = false, point = false;
  for (; *i < text.size(); ++*i) {
    char c = text[*i];
    if (c == '.') {
      if (point) return Status::Error(bad);
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    digits = true;
    if (point) {
      if (n->frac_scale < static_cast<int128>(1000000000000000000LL)) {
        n->frac = n->frac * 10 + (c - '0');
        n->frac_scale *= 10;
      } else if (c != '0') {
        return FinerThanMillisecond(text);
      }
    } else {
      n->whole = n->whole * 10 + (c - '0');
      if (n->whole > static_cast<int128>(1) << 80) return TooLarge(text);
    }
  }
  if (!digits) return Status::Error(bad);
  return Status::Ok();
}

// Reads the unit at text[*i...] (letters, and the bytes of µ).
std::string_view ReadUnit(std::string_view text, size_t* i) {
  size_t u = *i;
  while (u < text.size() &&
         ((text[u] >= 'a' && text[u] <= 'z') || (text[u] >= 'A' && text[u] <= 'Z') ||
          text[u] == '\xc2' || text[u] == '\xb5'))
    ++u;
  std::string_view unit = text.substr(*i, u - *i);
  *i = u;
  return unit;
}

// Microseconds per unit (h, m, s, ms, us, µs); 0 for any other text.
int128 UnitMicros(std::string_view unit) {
  if (unit == "h") return 3600LL * 1000000;
  if (unit == "m") return 60LL * 1000000;
  if (unit == "s") return 1000000;
  if (unit == "ms") return 1000;
  if (unit == "us" || unit == "\xc2\xb5s") return 1;
  return 0;
}

// Adds the component `n` `unit` (ending at text[at]) to *total_us; *last_unit is the previous
// component's unit, for the "did you mean" hint.
Status AddComponent(std::string_view text, size_t at, const DurationNumber& n,
                    std::string_view unit, std::string_view* last_unit, int128* total_us) {
  if (unit == "ns") {
    if (n.whole % 1000000 != 0 || n.frac != 0) return FinerThanMillisecond(text);
    *total_us += n.whole / 1000;
    return Status::Ok();
  }
  const int128 unit_us = UnitMicros(unit);
  if (unit_us == 0) {
    if (unit.empty()) return Status::Error(NoUnitMessage(text, at, *last_unit));
    return Status::Error("duration \"" + Echo(text) + "\" has unknown unit \"" + std::string(unit) +
                         "\" (use h, m, s, ms)");
  }
  *last_unit = unit;
  int128 part = n.whole * unit_us;
  int128 fnum = n.frac * unit_us;
  if (fnum % n.frac_scale != 0) return FinerThanMillisecond(text);
  part += fnum / n.frac_scale;
  *total_us += part;
  if (*total_us > static_cast<int128>(INT64_MAX)) return TooLarge(text);
  return Status::Ok();
}

}  // namespace

Result<Millis> ParseDuration(std::string_view text) {
  const std::string bad =
      "duration \"" + Echo(text) + "\" is malformed (expected e.g. 30s, 1h30m, 500ms, 1.5h)";
  if (text.empty()) return Result<Millis>::Error("empty duration");
  size_t i = 0;
  bool neg = false;
  if (text[0] == '-' || text[0] == '+') {
    neg = text[0] == '-';
    ++i;
  }
  if (text.substr(i) == "0") return Millis{0};
  // Accumulate in microseconds to detect sub-millisecond remainders exactly.
  int128 total_us = 0;
  bool any = false;
  std::string_view last_unit;  // of the previous component, for the "did you mean" hint
  while (i < text.size()) {
    DurationNumber n;
    if (Status st = ReadComponentNumber(text, &i, bad, &n); !st.ok()) return st;
    const std::string_view unit = ReadUnit(text, &i);
    if (Status st = AddComponent(text, i, n, unit, &last_unit, &total_us); !st.ok()) return st;
    any = true;
  }
  if (!any) return Result<Millis>::Error(bad);
  if (total_us % 1000 != 0) return FinerThanMillisecond(text);
  Millis ms = static_cast<Millis>(total_us / 1000);
  return neg ? -ms : ms;
}

std::string FormatDuration(Millis ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  int64_t h = ms / 3600000, m = (ms / 60000) % 60, s = (ms / 1000) % 60, r = ms % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s && !r) out += std::to_string(s) + "s";
  if (r) {
    if (s || h || m) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%lld.%03llds", static_cast<long long>(s),
                    static_cast<long long>(r));
      std::string t = buf;
      while (t.size() > 2 && t[t.size() - 2] == '0') t.erase(t.size() - 2, 1);
      out += t;
    } else {
      out += std::to_string(r) + "ms";
    }
  }
  return out;
}

namespace {
// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}
}  // namespace

Result<Millis> ParseRfc3339(std::string_view t) {
  const std::string bad =
      "timestamp \"" + Echo(t) + "\" is not RFC 3339 (expected e.g. 2026-01-01T00:00:00Z)";
  auto num = [&](size_t pos, size_t len, int* out) {
    if (pos + len > t.size()) return false;
    int v = 0;
    for (size_t k = pos; k < pos + len; ++k) {
      if (t[k] < '0' || t[k] > '9') return false;
      v = v * 10 + (t[k] - '0');
    }
    *out = v;
    return true;
  };
  int Y, M, D, h, mi, s;
  if (t.size() < 20 || !num(0, 4, &Y) || t[4] != '-' || !num(5, 2, &M) || t[7] != '-' ||
      !num(8, 2, &D) || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !num(11, 2, &h) ||
      t[13] != ':' || !num(14, 2, &mi) || t[16] != ':' || !num(17, 2, &s))
    return Result<Millis>::Error(bad);
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (M < 1 || M > 12 || D < 1 || D > kDays[M - 1] || h > 23 || mi > 59 || s > 60)
    return Result<Millis>::Error(bad);
  bool leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
  if (M == 2 && D == 29 && !leap) return Result<Millis>::Error(bad);
  size_t p = 19;
  int frac_ms = 0;
  if (p < t.size() && t[p] == '.') {
    ++p;
    int digits = 0;
    while (p < t.size() && t[p] >= '0' && t[p] <= '9') {
      if (digits < 3)
        frac_ms = frac_ms * 10 + (t[p] - '0');
      else if (t[p] != '0')
        return Result<Millis>::Error("timestamp \"" + Echo(t) + "\" is finer than a millisecond");
      ++digits;
      ++p;
    }
    if (digits == 0) return Result<Millis>::Error(bad);
    for (int k = digits; k < 3; ++k) frac_ms *= 10;
  }
  int offset_min = 0;
  if (p < t.size() && (t[p] == 'Z' || t[p] == 'z')) {
    ++p;
  } else if (p < t.size() && (t[p] == '+' || t[p] == '-')) {
    int oh, om;
    if (!num(p + 1, 2, &oh) || p + 3 >= t.size() || t[p + 3] != ':' || !num(p + 4, 2, &om))
      return Result<Millis>::Error(bad);
    offset_min = (oh * 60 + om) * (t[p] == '-' ? -1 : 1);
    p += 6;
  } else {
    return Result<Millis>::Error(bad);
  }
  if (p != t.size()) return Result<Millis>::Error(bad);
  int64_t days = DaysFromCivil(Y, M, D);
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + s - offset_min * 60;
  return secs * 1000 + frac_ms;
}

namespace {
constexpr int64_t kDayMillis = 86400000;
int64_t FloorDays(Millis unix_ms) {
  return unix_ms / kDayMillis - (unix_ms % kDayMillis < 0 ? 1 : 0);
}
}  // namespace

Millis MonthStartOf(Millis unix_ms) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(FloorDays(unix_ms), &y, &m, &d);
  return DaysFromCivil(y, m, 1) * kDayMillis;
}

Millis NextMonthStart(Millis unix_ms) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(FloorDays(unix_ms), &y, &m, &d);
  return m == 12 ? DaysFromCivil(y + 1, 1, 1) * kDayMillis
                 : DaysFromCivil(y, m + 1, 1) * kDayMillis;
}

std::string FormatRfc3339(Millis unix_ms) {
  int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : -((-unix_ms + 999) / 1000);
  int64_t ms = unix_ms - secs * 1000;
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[128];
  if (ms)
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                  static_cast<long long>((rem / 60) % 60), static_cast<long long>(rem % 60),
                  static_cast<long long>(ms));
  else
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                  static_cast<long long>((rem / 60) % 60), static_cast<long long>(rem % 60));
  return buf;
}

}  // namespace arbiter
