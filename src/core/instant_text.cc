#include "core/instant_text.h"

namespace arbiter {

std::string FormatInstant(Millis t) {
  return t >= kWallClockFrom ? FormatRfc3339(t) : FormatDuration(t);
}

}  // namespace arbiter
