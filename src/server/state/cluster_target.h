// Cluster's internal view of a create or update on its way through Put's steps (cluster.cc,
// cluster_jobs.cc). Not part of the Cluster's interface.
#pragma once

#include <optional>
#include <string>

#include "server/state/cluster.h"

namespace arbiter::server {

// A create or update on its way through Put's steps.
struct Cluster::Target {
  Target(const KindInfo& k, Json o) : kind(k), obj(std::move(o)) {}
  const KindInfo& kind;
  Json obj;  // the object as it will be stored
  std::string name, ns;
  const Json* existing = nullptr;  // the stored object it replaces
  bool spec_changed = true;
  std::optional<uint64_t> new_workload;  // a created Pod's workload
  bool deadline_set = false;             // SetPodDeadline applied: backfill reservations may move
};

}  // namespace arbiter::server
