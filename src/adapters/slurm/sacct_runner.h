// Runs the real `sacct` (`arbiter slurm import --since`): every run of every job (-D), all users
// (-a), parsable (-P), raw units (--noconvert), kSacctFormat, Unix-second times
// (SLURM_TIME_FORMAT=%s) and TZ=UTC so that -S/-E are read as UTC. SLURM_CONF and the rest of the
// environment are inherited. The output goes to a file (kept with --save-sacct, else a temporary
// one) and is parsed from there: memory stays bounded whatever the window.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/slurm/sacct_parser.h"
#include "core/duration.h"
#include "core/status.h"

namespace arbiter::slurm {

struct SacctQuery {
  std::string sacct = "sacct";  // program (searched in PATH) or path
  Millis since = 0;             // -S, Unix ms
  std::optional<Millis> until;  // -E (default: now)
  std::string output_path;      // where sacct's output is written
};

// The argument vector (program first) the query runs, for messages and tests.
std::vector<std::string> SacctArgv(const SacctQuery& q);

// Runs sacct, waiting for it; on success its output is in q.output_path. Errors carry sacct's
// exit status and the first lines of its standard error.
Status RunSacct(const SacctQuery& q);

}  // namespace arbiter::slurm
