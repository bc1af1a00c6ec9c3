#include "kubesched/micro_time.h"

#include <cstdio>

namespace arbiter::kubesched {

std::string FormatMicroTime(Millis unix_ms) {
  const Millis ms = ((unix_ms % 1000) + 1000) % 1000;  // floor, also before the epoch
  std::string s = FormatRfc3339(unix_ms - ms);         // whole seconds, "...:05Z"
  s.pop_back();
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%03lld000Z", static_cast<long long>(ms));
  return s + frac;
}

}  // namespace arbiter::kubesched
