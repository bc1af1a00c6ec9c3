#include "cli_flags.h"

#include <cstdio>

#include "cli_errors.h"
#include "core/text.h"

namespace arbiter::app {

namespace {
constexpr Millis kHour = 3600000;
}  // namespace

int FlagError(std::string_view cmd, std::string_view flag, std::string_view message) {
  std::cerr << cmd << ": " << flag << ": " << message << "\n";
  return kExitUsage;
}

int InputError(std::string_view cmd, std::string_view message) {
  std::cerr << cmd << ": " << message << "\n";
  return kExitInvalidInput;
}

int TimeFlag(std::string_view cmd, std::string_view flag, const std::string& text,
             std::optional<Millis>* out) {
  if (text.empty()) return kExitOk;
  auto t = ParseRfc3339(text);
  if (!t.ok()) {
    std::string msg = t.message();
    if (text.size() == 10 && text[4] == '-' && text[7] == '-')  // a date alone: 2026-01-01
      msg += "; did you mean " + text + "T00:00:00Z?";
    else if (text.size() == 7 && text[4] == '-')  // a month: 2026-01
      msg += "; for a whole month use --month " + text;
    return FlagError(cmd, flag, msg);
  }
  *out = *t;
  return kExitOk;
}

int HourFlag(std::string_view cmd, std::string_view flag, const std::string& text,
             std::optional<Millis>* out) {
  if (int rc = TimeFlag(cmd, flag, text, out); rc != kExitOk) return rc;
  if (*out && **out % kHour != 0) {
    Millis down = **out / kHour * kHour;
    if (**out < 0 && **out % kHour != 0) down -= kHour;
    return FlagError(cmd, flag,
                     FormatRfc3339(**out) + " is not on the hour: hours are sealed whole; use " +
                         FormatRfc3339(down) + " or " + FormatRfc3339(down + kHour));
  }
  return kExitOk;
}

int WindowFlags(std::string_view cmd, const std::string& month, const std::string& from,
                const std::string& to, std::optional<Millis>* out_from,
                std::optional<Millis>* out_to) {
  if (!month.empty()) {
    if (!from.empty() || !to.empty())
      return FlagError(cmd, "--month", "give either --month or --from/--to, not both");
    // YYYY-MM, 0001-01 .. 9999-12.
    const bool shape = month.size() == 7 && month[4] == '-' &&
                       month.find_first_not_of("0123456789", 0) == 4 &&
                       month.find_first_not_of("0123456789", 5) == std::string::npos;
    const int year = shape ? std::stoi(month.substr(0, 4)) : 0;
    const int mon = shape ? std::stoi(month.substr(5, 2)) : 0;
    if (!shape || mon < 1 || mon > 12 || year < 1)
      return FlagError(cmd, "--month",
                       QuotedEcho(month) + " is not a month: expected YYYY-MM (e.g. 2026-01)");
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%04d-%02d-01T00:00:00Z", year, mon);
    std::snprintf(b, sizeof b, "%04d-%02d-01T00:00:00Z", mon == 12 ? year + 1 : year,
                  mon == 12 ? 1 : mon + 1);
    auto f = ParseRfc3339(a);
    if (!f.ok()) return FlagError(cmd, "--month", f.message());
    *out_from = *f;
    if (year == 9999 && mon == 12) return kExitOk;  // to the end of time
    auto t = ParseRfc3339(b);
    if (!t.ok()) return FlagError(cmd, "--month", t.message());
    *out_to = *t;
    return kExitOk;
  }
  if (int rc = TimeFlag(cmd, "--from", from, out_from); rc != kExitOk) return rc;
  if (int rc = TimeFlag(cmd, "--to", to, out_to); rc != kExitOk) return rc;
  if (*out_from && *out_to && **out_from > **out_to)
    return FlagError(cmd, "--from",
                     FormatRfc3339(**out_from) + " is after --to " + FormatRfc3339(**out_to) +
                         ": the window [from, to) must not be reversed");
  return kExitOk;
}

int StdinOnce(std::string_view cmd,
              const std::vector<std::pair<std::string, std::string>>& flag_paths) {
  std::string first;
  for (const auto& [flag, path] : flag_paths) {
    if (path != "-") continue;
    if (!first.empty())
      return FlagError(
          cmd, flag + " -",
          "standard input is already read for " + first + " -; it can be read only once");
    first = flag;
  }
  return kExitOk;
}

std::string DidYouMeanText(std::string_view word, const std::vector<std::string>& known) {
  const std::string guess = Closest(word, known);
  return guess.empty() ? "" : "; did you mean " + Quoted(guess) + "?";
}

std::string WrapText(std::string_view text, size_t width) {
  std::string out;
  size_t line = 0;
  while (!text.empty()) {
    const size_t sp = text.find(' ');
    const std::string_view word = text.substr(0, sp);
    text = sp == std::string_view::npos ? std::string_view() : text.substr(sp + 1);
    if (line > 0 && line + 1 + word.size() > width) {
      out += "\n";
      line = 0;
    } else if (line > 0) {
      out += " ";
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

}  // namespace arbiter::app
