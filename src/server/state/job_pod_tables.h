// The Cluster's kept facts of each Job's pods (cluster.h: JobPodsOf; cluster_jobs.cc). Not a
// public header: only cluster.cc and cluster_jobs.cc include it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "server/state/cluster.h"
#include "server/state/job_controller.h"

namespace arbiter::server {

// Facts by the pod's name (looked up by a name alone too).
struct JobPodFactsByName {
  using is_transparent = void;
  bool operator()(const JobPodFacts& a, const JobPodFacts& b) const { return a.name < b.name; }
  bool operator()(const JobPodFacts& a, std::string_view b) const { return a.name < b; }
  bool operator()(std::string_view a, const JobPodFacts& b) const { return a < b.name; }
};

// One Job's pods of its namespace, in name order, and two counts of them kept as they change.
struct JobPodTable {
  std::set<JobPodFacts, JobPodFactsByName> pods;
  int64_t ready = 0;        // neither finished nor being deleted, and Ready: status.ready
  int64_t crash_loops = 0;  // restarted in place (JobPodFacts::crash_loop)

  void Add(JobPodFacts f) {
    auto [it, added] = pods.insert(std::move(f));
    if (added) Count(*it, 1);
  }
  void Erase(std::string_view name) {
    auto it = pods.find(name);
    if (it == pods.end()) return;
    Count(*it, -1);
    pods.erase(it);
  }

 private:
  void Count(const JobPodFacts& f, int64_t d) {
    ready += d * (!f.terminal() && !f.deleting && f.ready);
    crash_loops += d * f.crash_loop;
  }
};

struct Cluster::JobPodTables {
  // By the Job's namespace and uid.
  std::map<ObjectStore::Key, JobPodTable> by_job;
};

}  // namespace arbiter::server
