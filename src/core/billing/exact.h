// Exact integer helpers for billing: (a × b) / d with a 256-bit intermediate, rounded half away
// from zero, and 128-bit integer text. No floating point anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/int128.h"
#include "core/status.h"

namespace arbiter::billing {

using i128 = int128;
using u128 = uint128;

// round_half_up(a × b / d) for any signs of a and b, d > 0 and d < 2^127. The quotient must fit
// in 127 bits (a broken invariant otherwise).
i128 MulDivRoundHalfUp(i128 a, i128 b, i128 d);
// floor-toward-zero variant: trunc(a × b / d).
i128 MulDivTrunc(i128 a, i128 b, i128 d);
// Quotient and remainder of a × b / d for a, b >= 0 and 0 < d < 2^127 (256-bit intermediate).
void MulDivRem(i128 a, i128 b, i128 d, i128* q, i128* r);

// Text of a Decimal's units as an exact decimal with trailing zeros trimmed ("7", "0.05"),
// the same text as Decimal::ToString(), faster.
std::string DecimalUnitsToString(i128 units);

// Decimal text of a 128-bit integer, and back. Parse refuses anything but [-]digits.
std::string I128ToString(i128 v);
Result<i128> ParseI128(std::string_view text);

}  // namespace arbiter::billing
