// The Cluster's kept facts of each Job's pods (cluster.h: JobPodsOf; cluster_jobs.cc). Not a
// public header: only cluster.cc and cluster_jobs.cc include it.
#pragma once

#include <map>

#include "server/state/cluster.h"
#include "server/state/job_controller.h"

namespace arbiter::server {

struct Cluster::JobPodTables {
  // By the Job's namespace and uid.
  std::map<ObjectStore::Key, JobPodTable> by_job;
};

}  // namespace arbiter::server
