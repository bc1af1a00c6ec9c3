// Hourly ledger rows for the tests of the ledger and of the commands that read it
// (tests/adapters/ledger_test.cc, tests/apps/ledger_tracks_cli_test.cc).
#pragma once

#include <algorithm>
#include <string>

#include "core/billing/metering.h"

namespace arbiter::testing {

// A Usage row of workload NS/p for the whole `hour`: `request_milli` requested and `usage_milli`
// used throughout (in milli-units of `resource`), sampled every 30 s.
inline billing::HourlyRow HourRow(const std::string& ns, const char* resource, Millis hour,
                                  int64_t request_milli, int64_t usage_milli) {
  billing::HourlyRow r;
  r.namespace_ = ns;
  r.workload = ns + "/p";
  r.resource = resource;
  r.hour = hour;
  r.request_raw = static_cast<billing::i128>(request_milli) * billing::kHourMs;
  r.usage_raw = static_cast<billing::i128>(usage_milli) * billing::kHourMs;
  r.max_raw = std::max(r.request_raw, r.usage_raw);
  r.samples = 120;
  r.covered_ms = r.run_ms = billing::kHourMs;
  return r;
}

}  // namespace arbiter::testing
