// RunSegment: one placement of a workload, as the scheduling engine reports it to billing.
// The request track of a segment is [start, end) exactly (grace period included); the usage
// track is sampled from `usage` (see metering.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/duration.h"
#include "core/resources.h"

namespace arbiter::billing {

// Work between the last saved progress and the stop of a preempted run.
struct LostWork {
  Millis from = 0;
  Millis to = 0;
  std::string preemptor;  // "namespace/name" of the workload that caused the preemption
};

// One placement of a workload: bound to a node until it exited.
struct RunSegment {
  std::string workload;  // "namespace/name"
  std::string namespace_;
  int32_t priority = 0;
  std::string node;
  std::string gpu_product;  // node label nvidia.com/gpu.product, "" if none
  // Node label nvidia.com/gpu.replicas (time-slicing / MPS): each nvidia.com/gpu is one of N
  // replicas of a card and costs 1/N of the card. 1 when the GPUs are not shared.
  int64_t gpu_replicas = 1;
  ResourceList requests;  // canonical units
  ResourceList usage;     // mean actual usage, canonical units (equal to requests when not given)
  Millis start = 0, end = 0;  // absolute Unix ms; the request track is [start, end), grace included
  std::optional<LostWork> lost;
  // Nothing measured the usage (a Slurm run without step usage): the usage track is the request
  // track exactly, not sampled, and the invoice's provenance says so (Provenance::
  // usage_from_request). `usage` is then ignored.
  bool usage_from_request = false;
};

}  // namespace arbiter::billing
