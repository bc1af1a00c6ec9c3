// Durations (Go / Kubernetes style: `90s`, `1h30m`, `500ms`, `1.5h`) as exact integer
// milliseconds, and RFC 3339 timestamps as Unix milliseconds. Text finer than a millisecond is
// an error, never rounded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter {

using Millis = int64_t;  // a duration or an instant, in milliseconds

Result<Millis> ParseDuration(std::string_view text);
// Shortest exact text: `1h30m`, `90ms`, `0s`.
std::string FormatDuration(Millis ms);
// `2026-01-01T00:00:00Z` or with an offset `+08:00`; fractional seconds to milliseconds.
Result<Millis> ParseRfc3339(std::string_view text);
std::string FormatRfc3339(Millis unix_ms);
// The start of the UTC calendar month holding `unix_ms`, and of the month after it.
Millis MonthStartOf(Millis unix_ms);
Millis NextMonthStart(Millis unix_ms);

}  // namespace arbiter
