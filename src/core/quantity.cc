#include "core/quantity.h"

#include <limits>

#include "core/int128.h"
#include "core/text.h"

namespace arbiter {
namespace {

using u128 = uint128;
constexpr u128 kU128Max = ~static_cast<u128>(0);

bool MulOverflow(u128 a, u128 b, u128* out) {
  if (a != 0 && b > kU128Max / a) return true;
  *out = a * b;
  return false;
}

std::string Quote(std::string_view t) { return QuotedEcho(t); }

// Reads the number at text[*i...] (digits with at most one decimal point) into *mant and
// *exp10 (the fractional digits, and integer zeros beyond 38 digits folded into the exponent);
// *i ends where the suffix begins. `bad` is the grammar's message.
Status ReadNumber(std::string_view text, size_t* i, const std::string& bad, u128* mant,
                  int* exp10) {
  bool any_digit = false;
  bool seen_point = false;
  int frac_digits = 0;
  int dropped_int_zeros = 0;  // integer digits beyond capacity that were zero (kept as exponent)
  for (; *i < text.size(); ++*i) {
    char c = text[*i];
    if (c == '.') {
      if (seen_point) return Status::Error(bad);
      seen_point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any_digit = true;
    u128 next;
    if (MulOverflow(*mant, 10, &next) || next > kU128Max - static_cast<u128>(c - '0')) {
      // More significant digits than 38: only acceptable if they are zeros we can fold.
      if (c != '0') return Status::Error("quantity " + Quote(text) + " has too many digits");
      if (seen_point) continue;  // trailing fractional zero: no value change
      ++dropped_int_zeros;
      continue;
    }
    *mant = next + static_cast<u128>(c - '0');
    if (seen_point) ++frac_digits;
  }
  if (!any_digit) return Status::Error(bad);
  *exp10 = dropped_int_zeros - frac_digits;
  return Status::Ok();
}

// The power of two of a binary SI suffix's letter (`K` of `Ki`: 10), 0 for no such suffix.
int BinarySuffixExp2(char c) {
  switch (c) {
    case 'K':
      return 10;
    case 'M':
      return 20;
    case 'G':
      return 30;
    case 'T':
      return 40;
    case 'P':
      return 50;
    case 'E':
      return 60;
    default:
      return 0;
  }
}

// The exponent of a decimal exponent suffix (`e3`, `E-1`, `e+6`), at most 1000 either way.
Status ReadExponent(std::string_view suffix, std::string_view text, const std::string& bad,
                    int* exp10) {
  size_t j = 1;
  bool neg = false;
  if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) {
    neg = suffix[j] == '-';
    ++j;
  }
  if (j >= suffix.size()) return Status::Error(bad);
  int e = 0;
  for (; j < suffix.size(); ++j) {
    char c = suffix[j];
    if (c < '0' || c > '9') return Status::Error(bad);
    e = e * 10 + (c - '0');
    if (e > 1000) return Status::Error("quantity " + Quote(text) + " exponent is out of range");
  }
  *exp10 = neg ? -e : e;
  return Status::Ok();
}

// Applies the suffix (none, `m`, decimal SI, binary SI or a decimal exponent) to q's exponents
// and format.
Status ApplySuffix(std::string_view suffix, std::string_view text, const std::string& bad,
                   ParsedQuantity* q) {
  if (suffix.empty()) {
  } else if (suffix == "m") {
    q->exp10 -= 3;
  } else if (suffix == "k") {
    q->exp10 += 3;
  } else if (suffix == "M") {
    q->exp10 += 6;
  } else if (suffix == "G") {
    q->exp10 += 9;
  } else if (suffix == "T") {
    q->exp10 += 12;
  } else if (suffix == "P") {
    q->exp10 += 15;
  } else if (suffix == "E") {
    q->exp10 += 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    q->format = QuantityFormat::kBinarySI;
    q->exp2 = BinarySuffixExp2(suffix[0]);
    if (q->exp2 == 0) return Status::Error(bad);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    q->format = QuantityFormat::kDecimalExponent;
    int e = 0;
    if (Status st = ReadExponent(suffix, text, bad, &e); !st.ok()) return st;
    q->exp10 += e;
  } else {
    return Status::Error(bad);
  }
  return Status::Ok();
}

}  // namespace

Result<ParsedQuantity> ParseQuantity(std::string_view text) {
  ParsedQuantity q;
  const std::string bad =
      "quantity " + Quote(text) +
      " is not a valid Kubernetes quantity (expected e.g. 500m, 1.5, 256Gi, 1e3)";
  size_t i = 0;
  if (text.empty()) return Result<ParsedQuantity>::Error("empty quantity");
  if (text[i] == '+' || text[i] == '-') {
    q.negative = text[i] == '-';
    ++i;
  }
  u128 mant = 0;
  if (Status st = ReadNumber(text, &i, bad, &mant, &q.exp10); !st.ok()) return st;
  if (Status st = ApplySuffix(text.substr(i), text, bad, &q); !st.ok()) return st;
  // Normalise: fold trailing zeros of the mantissa into the exponent.
  if (mant == 0) {
    q.exp10 = 0;
    q.exp2 = 0;
    q.negative = false;
  } else {
    while (mant % 10 == 0) {
      mant /= 10;
      ++q.exp10;
    }
  }
  q.mantissa = mant;
  return q;
}

Result<int64_t> ParsedQuantity::ToScaled(int scale10) const {
  if (mantissa == 0) return int64_t{0};
  const std::string too_big = "quantity is too large to represent";
  u128 v = mantissa;
  if (exp2 > 0) {
    if (exp2 >= 127 || v > (kU128Max >> exp2)) return Result<int64_t>::Error(too_big);
    v <<= exp2;
  }
  int e = exp10 + scale10;
  if (e > 0) {
    for (int k = 0; k < e; ++k) {
      if (MulOverflow(v, 10, &v)) return Result<int64_t>::Error(too_big);
    }
  } else if (e < 0) {
    for (int k = 0; k < -e; ++k) {
      if (v % 10 != 0) {
        return Result<int64_t>::Error("quantity has more precision than the unit allows");
      }
      v /= 10;
    }
  }
  const u128 limit = negative ? static_cast<u128>(std::numeric_limits<int64_t>::max()) + 1
                              : static_cast<u128>(std::numeric_limits<int64_t>::max());
  if (v > limit) return Result<int64_t>::Error(too_big);
  if (negative) {
    if (v == limit) return std::numeric_limits<int64_t>::min();
    return -static_cast<int64_t>(v);
  }
  return static_cast<int64_t>(v);
}

Result<int64_t> ParseScaledQuantity(std::string_view text, int scale10) {
  auto q = ParseQuantity(text);
  if (!q.ok()) return q.status();
  auto v = q->ToScaled(scale10);
  if (!v.ok()) return Result<int64_t>::Error(v.message() + ": \"" + Echo(text) + "\"");
  return v;
}

namespace {
std::string Signed(bool neg, uint64_t mag) {
  std::string s = neg ? "-" : "";  // appended: see Quoted() in core/text.h
  s += std::to_string(mag);
  return s;
}
uint64_t Magnitude(int64_t v) {
  return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
}
}  // namespace

std::string FormatMillis(int64_t millis) {
  bool neg = millis < 0;
  uint64_t m = Magnitude(millis);
  if (m % 1000 == 0) return Signed(neg, m / 1000);
  return Signed(neg, m) + "m";
}

std::string FormatBytes(int64_t bytes) {
  bool neg = bytes < 0;
  uint64_t m = Magnitude(bytes);
  if (m == 0) return "0";
  static const char* kBin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  static const char* kDec[] = {"", "k", "M", "G", "T", "P", "E"};
  int b = 0;
  uint64_t vb = m;
  while (b < 6 && vb % 1024 == 0) {
    vb /= 1024;
    ++b;
  }
  if (b > 0) return Signed(neg, vb) + kBin[b];
  int d = 0;
  uint64_t vd = m;
  while (d < 6 && vd % 1000 == 0) {
    vd /= 1000;
    ++d;
  }
  return Signed(neg, vd) + kDec[d];
}

std::string FormatCount(int64_t count) { return std::to_string(count); }

}  // namespace arbiter
