// How the engine's messages print an instant. The engine runs on two clocks: a simulation's
// virtual clock starts at 0 (an instant is an offset: `15m`), the daemon's is Unix milliseconds
// (an instant is a date: `2026-12-01T14:20:00Z`). Instants before 2000-01-01 are offsets.
#pragma once

#include <string>

#include "core/duration.h"

namespace arbiter {

inline constexpr Millis kWallClockFrom = 946684800000;  // 2000-01-01T00:00:00Z

std::string FormatInstant(Millis t);

}  // namespace arbiter
