#include "core/billing/exact.h"

#include "core/text.h"

namespace arbiter::billing {
namespace {

struct U256 {
  u128 hi = 0, lo = 0;
};

U256 Mul128(u128 a, u128 b) {
  const u128 mask = ~static_cast<uint64_t>(0);
  u128 a0 = a & mask, a1 = a >> 64, b0 = b & mask, b1 = b >> 64;
  u128 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  u128 mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);  // < 3 * 2^64, no overflow
  U256 r;
  r.lo = (p00 & mask) | (mid << 64);
  r.hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
  return r;
}

// q = n / d, r = n % d; d < 2^127, quotient must fit in 128 bits.
void DivMod(U256 n, u128 d, u128* q, u128* r) {
  if (n.hi == 0) {
    *q = n.lo / d;
    *r = n.lo % d;
    return;
  }
  ARB_CHECK_MSG(n.hi < d, "billing arithmetic overflow: quotient exceeds 128 bits");
  u128 rem = n.hi;  // < d
  u128 quo = 0;
  for (int i = 127; i >= 0; --i) {
    rem = (rem << 1) | ((n.lo >> i) & 1);  // rem < 2d < 2^128
    quo <<= 1;
    if (rem >= d) {
      rem -= d;
      quo |= 1;
    }
  }
  *q = quo;
  *r = rem;
}

u128 Abs(i128 v) { return v < 0 ? static_cast<u128>(-(v + 1)) + 1 : static_cast<u128>(v); }

i128 MulDiv(i128 a, i128 b, i128 d, bool round) {
  ARB_CHECK(d > 0);
  ARB_CHECK((static_cast<u128>(d) >> 127) == 0);
  bool neg = (a < 0) != (b < 0);
  u128 q, r;
  DivMod(Mul128(Abs(a), Abs(b)), static_cast<u128>(d), &q, &r);
  if (round && r >= static_cast<u128>(d) - r) ++q;  // 2r >= d without overflow
  ARB_CHECK_MSG((q >> 127) == 0, "billing arithmetic overflow");
  i128 v = static_cast<i128>(q);
  return (neg && v != 0) ? -v : v;
}

}  // namespace

i128 MulDivRoundHalfUp(i128 a, i128 b, i128 d) { return MulDiv(a, b, d, true); }
i128 MulDivTrunc(i128 a, i128 b, i128 d) { return MulDiv(a, b, d, false); }

void MulDivRem(i128 a, i128 b, i128 d, i128* q, i128* r) {
  ARB_CHECK(a >= 0 && b >= 0 && d > 0);
  u128 uq, ur;
  DivMod(Mul128(static_cast<u128>(a), static_cast<u128>(b)), static_cast<u128>(d), &uq, &ur);
  ARB_CHECK_MSG((uq >> 127) == 0, "billing arithmetic overflow");
  *q = static_cast<i128>(uq);
  *r = static_cast<i128>(ur);
}

std::string I128ToString(i128 v) {
  char buf[48];
  char* end = buf + sizeof buf;
  char* p = end;
  u128 m = Abs(v);
  do {
    *--p = static_cast<char>('0' + static_cast<int>(m % 10));
    m /= 10;
  } while (m != 0);
  if (v < 0) *--p = '-';
  return std::string(p, end);
}

std::string DecimalUnitsToString(i128 units) {
  constexpr i128 kOne = 1000000000;
  u128 m = Abs(units);
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict overlap for
  // `const char* + std::string&&` (an insert at position 0; GCC bug 105651).
  std::string s;
  if (units < 0) s += '-';
  s += I128ToString(static_cast<i128>(m / static_cast<u128>(kOne)));
  uint64_t frac = static_cast<uint64_t>(m % static_cast<u128>(kOne));
  if (frac != 0) {
    char buf[10];
    for (int i = 8; i >= 0; --i) {
      buf[i] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    int n = 9;
    while (buf[n - 1] == '0') --n;
    s += '.';
    s.append(buf, static_cast<size_t>(n));
  }
  return s;
}

namespace {
Result<i128> NotAnInteger(std::string_view text, const char* why) {
  return Result<i128>::Error(QuotedEcho(text) + " " + why);
}
}  // namespace

Result<i128> ParseI128(std::string_view text) {
  size_t i = 0;
  bool neg = false;
  if (!text.empty() && text[0] == '-') {
    neg = true;
    i = 1;
  }
  if (i >= text.size()) return NotAnInteger(text, "is not an integer");
  u128 v = 0;
  const u128 limit = (static_cast<u128>(1) << 127) - 1;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return NotAnInteger(text, "is not an integer");
    if (v > (limit - static_cast<u128>(c - '0')) / 10)
      return NotAnInteger(text, "does not fit in 128 bits");
    v = v * 10 + static_cast<u128>(c - '0');
  }
  i128 s = static_cast<i128>(v);
  return neg ? -s : s;
}

}  // namespace arbiter::billing
