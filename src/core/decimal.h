// Decimal: exact fixed-point number for money and ratios (never a double).
// Value = units / 10^9, held in a signed 128-bit integer. Parsing refuses more than 9 fractional
// digits instead of rounding. Rounding happens only where a caller asks (RoundHalfUp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/int128.h"
#include "core/status.h"

namespace arbiter {

class Decimal {
 public:
  static constexpr int kScale = 9;
  static constexpr int64_t kOne = 1000000000;

  constexpr Decimal() = default;
  static constexpr Decimal FromUnits(int128 units) { return Decimal(units); }
  static constexpr Decimal FromInt(int64_t v) { return Decimal(static_cast<int128>(v) * kOne); }
  // "7.00", "-0.05", "12", "1e-3" is refused (plain decimals only).
  static Result<Decimal> Parse(std::string_view text);

  int128 units() const { return units_; }
  bool is_zero() const { return units_ == 0; }
  bool negative() const { return units_ < 0; }

  // Round to `digits` fractional digits (0..9), half away from zero.
  Decimal RoundHalfUp(int digits) const;
  // Exact text with trailing zeros trimmed ("7", "0.05").
  std::string ToString() const;
  // Text with exactly `digits` fractional digits (value must already be rounded to them).
  std::string ToFixed(int digits) const;

  friend Decimal operator+(Decimal a, Decimal b) { return Decimal(a.units_ + b.units_); }
  friend Decimal operator-(Decimal a, Decimal b) { return Decimal(a.units_ - b.units_); }
  Decimal operator-() const { return Decimal(-units_); }
  Decimal& operator+=(Decimal o) {
    units_ += o.units_;
    return *this;
  }
  Decimal& operator-=(Decimal o) {
    units_ -= o.units_;
    return *this;
  }
  friend bool operator==(Decimal a, Decimal b) { return a.units_ == b.units_; }
  friend bool operator!=(Decimal a, Decimal b) { return a.units_ != b.units_; }
  friend bool operator<(Decimal a, Decimal b) { return a.units_ < b.units_; }
  friend bool operator<=(Decimal a, Decimal b) { return a.units_ <= b.units_; }
  friend bool operator>(Decimal a, Decimal b) { return a.units_ > b.units_; }
  friend bool operator>=(Decimal a, Decimal b) { return a.units_ >= b.units_; }

 private:
  constexpr explicit Decimal(int128 u) : units_(u) {}
  int128 units_ = 0;
};

// Decimal text of a 128-bit integer.
std::string Int128ToString(int128 v);

}  // namespace arbiter
