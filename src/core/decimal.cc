#include "core/decimal.h"

#include "core/int128.h"
#include "core/text.h"

namespace arbiter {

std::string Int128ToString(int128 v) {
  // Digits written backwards into a buffer, then copied once: GCC 12 reports a false
  // -Werror=restrict for `"-" + s` and for inserting at the front under -fsanitize (bug 105651).
  const bool neg = v < 0;
  uint128 m = neg ? static_cast<uint128>(-(v + 1)) + 1 : static_cast<uint128>(v);
  char buf[48];
  char* end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + static_cast<int>(m % 10));
    m /= 10;
  } while (m);
  if (neg) *--p = '-';
  return std::string(p, end);
}

Result<Decimal> Decimal::Parse(std::string_view text) {
  const std::string bad = QuotedEcho(text) + " is not a decimal number (expected e.g. 7.00, 0.05)";
  size_t i = 0;
  bool neg = false;
  if (text.empty()) return Result<Decimal>::Error("empty decimal");
  if (text[0] == '-' || text[0] == '+') {
    neg = text[0] == '-';
    ++i;
  }
  int128 whole = 0;
  int128 frac = 0;
  int frac_digits = 0;
  bool digits = false, point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      if (point) return Result<Decimal>::Error(bad);
      point = true;
      continue;
    }
    if (c < '0' || c > '9') return Result<Decimal>::Error(bad);
    digits = true;
    if (point) {
      if (frac_digits == kScale) {
        if (c != '0')
          return Result<Decimal>::Error(QuotedEcho(text) + " has more than 9 decimal places");
        continue;
      }
      frac = frac * 10 + (c - '0');
      ++frac_digits;
    } else {
      whole = whole * 10 + (c - '0');
      if (whole > static_cast<int128>(1) << 90)
        return Result<Decimal>::Error(QuotedEcho(text) + " is too large");
    }
  }
  if (!digits) return Result<Decimal>::Error(bad);
  for (int k = frac_digits; k < kScale; ++k) frac *= 10;
  int128 u = whole * kOne + frac;
  return Decimal(neg ? -u : u);
}

Decimal Decimal::RoundHalfUp(int digits) const {
  if (digits >= kScale) return *this;
  int128 step = 1;
  for (int k = digits; k < kScale; ++k) step *= 10;
  int128 mag = units_ < 0 ? -units_ : units_;
  int128 q = mag / step, r = mag % step;
  if (r * 2 >= step) ++q;
  int128 out = q * step;
  return Decimal(units_ < 0 ? -out : out);
}

std::string Decimal::ToFixed(int digits) const {
  int128 mag = units_ < 0 ? -units_ : units_;
  std::string whole = Int128ToString(mag / kOne);
  std::string frac = Int128ToString(mag % kOne);
  frac.insert(frac.begin(), kScale - frac.size(), '0');
  frac.resize(digits);
  std::string s;
  s.reserve(whole.size() + static_cast<size_t>(digits) + 2);
  if (units_ < 0) s += '-';
  s += whole;
  if (digits > 0) {
    s += '.';
    s += frac;
  }
  return s;
}

std::string Decimal::ToString() const {
  std::string s = ToFixed(kScale);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s.erase(0, 1);  // not `s = "0"`: GCC 12 -Wrestrict false positive under -fsanitize
  return s;
}

}  // namespace arbiter
