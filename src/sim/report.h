// The simulation report: JSON (kind: SimulationReport, BRIEF §5) and the terminal summary.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/int128.h"
#include "core/objects.h"
#include "sim/billing_bridge.h"
#include "sim/simulator.h"

namespace arbiter::sim {

struct Summary {
  Millis horizon = 0;
  // Per resource: time-integrated allocation and capacity × horizon (canonical unit × ms).
  struct Util {
    std::string resource;
    int128 allocated = 0;
    int128 capacity = 0;
  };
  std::vector<Util> utilisation;
  struct Tier {
    int32_t priority = 0;
    size_t workloads = 0;
    Millis pending_total = 0;
    Millis pending_max = 0;
  };
  std::vector<Tier> tiers;  // by priority, high first
  size_t preemptions = 0, reclaims = 0, requeues = 0, cancellations = 0;
  size_t succeeded = 0, running = 0, pending = 0, rejected = 0, preempted = 0;
  int64_t gpu_milli_ms_lost = 0;
  // Pool changes (Node arbiter.dev/add-time, remove-time) and the work lost with removed nodes.
  size_t nodes_added = 0, nodes_removed = 0;
  int64_t gpu_milli_ms_lost_node_removed = 0;
  // Work lost to preemption by namespace (every namespace with a workload, by name): the victims'
  // GPU work lost and how often its workloads were preempted or reclaimed.
  struct NamespaceLoss {
    std::string namespace_;
    int64_t gpu_milli_ms_lost = 0;
    size_t preempted = 0;
  };
  std::vector<NamespaceLoss> loss_by_namespace;
  // The preemptors (workloads named `by` on a Preempted or Reclaimed event) and their time
  // pending, over every spell.
  size_t preemptors = 0;
  Millis preemptor_pending_total = 0;
  // Of it, the time held out of the queue (a victim's requeue back-off): how many preemptors were
  // ever held and for how long in all; each preemptor's pending time with and without it.
  size_t preemptors_held = 0;
  Millis preemptor_held_total = 0;
  std::vector<Millis> preemptor_pending, preemptor_pending_unheld;  // ascending
};

Summary Summarise(const ManifestSet& m, const driver::SimResult& r);

// Ratio num/den as a decimal string with `digits` decimals, half-up ("0.4123").
std::string RatioString(int128 num, int128 den, int digits = 4);
// A duration rounded to the nearest whole second (half up), as both the terminal summary and the
// HTML report print pending times: the two always agree.
inline Millis RoundToSecond(Millis ms) {
  return ms < 0 ? -RoundToSecond(-ms) : (ms + 500) / 1000 * 1000;
}
// The mean of `total` over `n` (n > 0), rounded to the nearest second (exact, no floating point).
inline Millis MeanToSecond(Millis total, int64_t n) {
  return n <= 0
             ? 0
             : (static_cast<int128>(total) * 2 + n * 1000) / (static_cast<int128>(n) * 2000) * 1000;
}

// Seconds from milliseconds, exact ("90", "1.5").
nlohmann::json Seconds(Millis ms);

// The report's `timeline`: one point per distinct event time (and at 0 and the end), in time
// order: `time` (seconds), `allocated` (share of the allocatable cpu, memory and nvidia.com/gpu
// of the nodes in the pool at that time held by runs, terminating victims included, as decimal
// strings like summary.utilisation), `running` (runs holding resources) and `pending` (workloads
// waiting to run) after every event at that time.
nlohmann::json TimelineJson(const ManifestSet& m, const driver::SimResult& r);

nlohmann::json ReportJson(const ManifestSet& m, const driver::SimResult& r, const Summary& s,
                          const nlohmann::json& invoices);
// Writes ReportJson(..., BillJson(bill)).dump(2) and a newline, streaming the workloads, events,
// timeline and invoice provenance arrays element by element (memory stays flat for runs with
// millions of workloads).
void WriteReportJson(std::ostream& os, const ManifestSet& m, const driver::SimResult& r,
                     const Summary& s, const SimBill& bill);
// The same bytes, with the bill asked for only when the writer reaches the invoices (the keys
// before them, the events above all, are written first): a caller may bill on other threads
// while this one writes. `bill` returning nullptr (billing failed) stops the writer there:
// false, and `os` holds a partial report.
bool WriteReportJson(std::ostream& os, const ManifestSet& m, const driver::SimResult& r,
                     const Summary& s, const std::function<const SimBill*()>& bill);
using JsonSink = std::function<void(const nlohmann::json&)>;
void ForEachTimelinePoint(const ManifestSet& m, const driver::SimResult& r, const JsonSink& sink);
std::string TextSummary(const ManifestSet& m, const driver::SimResult& r, const Summary& s);

// The index of each workload's last pending-reason event (QuotaExceeded, FailedScheduling,
// Preempting) in driver::SimResult::events(), kNoEvent when it never waited for one. The report's
// workloads[].lastPendingReason, and workloads[].message once it no longer waits.
inline constexpr size_t kNoEvent = static_cast<size_t>(-1);
std::vector<size_t> LastPendingEvents(const driver::SimResult& r);

// `arbiter sim --explain NS/POD`: the workload's timeline of reasons, one event a line (its own
// events and those where it preempted or reclaimed another), then what it waits for now.
std::optional<size_t> FindWorkload(const driver::SimResult& r, const std::string& key);
std::string ExplainWorkload(const driver::SimResult& r, size_t workload);

}  // namespace arbiter::sim
