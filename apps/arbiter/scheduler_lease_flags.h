// `arbiter scheduler`'s leader election flags, named and defaulted as kube-scheduler's
// (--leader-elect, --leader-elect-lease-duration 15s, --leader-elect-renew-deadline 10s,
// --leader-elect-retry-period 2s, --leader-elect-resource-name/-namespace). Kept apart from
// cmd_scheduler.cc: two lines there.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "kubesched/leader_election.h"

namespace arbiter::app {

struct LeaseFlags {
  bool enabled = false;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  std::string name;  // "" : the scheduler name
  std::string namespace_ = "kube-system";
};

std::shared_ptr<LeaseFlags> AddLeaseFlags(CLI::App* cmd);

// The Lease to elect on (nullopt without --leader-elect), or kExitUsage with the message printed.
int LeaseFromFlags(const char* cmd, const LeaseFlags& f, const std::string& scheduler_name,
                   std::optional<kubesched::LeaseConfig>* out);

}  // namespace arbiter::app
