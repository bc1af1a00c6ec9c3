// Exact Kubernetes quantities.
//
// ParseQuantity accepts the Kubernetes grammar: an optional sign, a decimal number (`1`, `1.5`,
// `.5`, `5.`), and one suffix: none, `m`, a decimal SI suffix (`k M G T P E`), a binary SI suffix
// (`Ki Mi Gi Ti Pi Ei`) or a decimal exponent (`e3`, `E-1`). The result is an exact value
// (mantissa × 10^exp10 × 2^exp2); it is converted to an integer in a chosen unit by ToScaled,
// which fails instead of rounding when the value is not a whole number of that unit or does not
// fit in int64.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/int128.h"
#include "core/status.h"

namespace arbiter {

enum class QuantityFormat { kDecimalSI, kBinarySI, kDecimalExponent };

struct ParsedQuantity {
  bool negative = false;
  uint128 mantissa = 0;  // trailing decimal zeros folded into exp10
  int exp10 = 0;
  int exp2 = 0;  // 0, 10, 20, ... 60 for binary suffixes
  QuantityFormat format = QuantityFormat::kDecimalSI;

  // The value × 10^scale10 as an exact int64 (scale10 = 3 gives milli-units).
  Result<int64_t> ToScaled(int scale10) const;
};

Result<ParsedQuantity> ParseQuantity(std::string_view text);

// Convenience: parse and scale in one step. Messages name the text.
Result<int64_t> ParseScaledQuantity(std::string_view text, int scale10);

// Canonical Kubernetes text for an integer amount in a unit of 10^-scale10.
// scale10 = 3 (millis): `2`, `500m`. scale10 = 0 with binary=true (bytes): `256Gi`, `1536Mi`,
// falling back to decimal suffixes (`1G`, `500k`) and then plain digits.
std::string FormatMillis(int64_t millis);
std::string FormatBytes(int64_t bytes);
std::string FormatCount(int64_t count);

}  // namespace arbiter
