// metav1.MicroTime, the time format of Kubernetes' Leases and events.k8s.io Events: RFC 3339 in
// UTC with six fractional digits ("2026-12-02T15:04:05.123000Z"). Our clocks count milliseconds,
// so the last three digits are always zero.
#pragma once

#include <string>

#include "core/duration.h"

namespace arbiter::kubesched {

// `unix_ms` milliseconds since the Unix epoch; before it too (-1 is 1969-12-31T23:59:59.999000Z).
std::string FormatMicroTime(Millis unix_ms);

}  // namespace arbiter::kubesched
