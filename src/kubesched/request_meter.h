// `arbiter scheduler --ledger DB`: the request track of Arbiter's pods (pod_runs.h) metered into
// the billing ledger (adapters/sqlite/ledger.h) on a thread of its own, so that SQLite never
// delays a scheduling cycle. The scheduling loop hands it the runs as it sees them (Submit, while
// this replica leads); the thread meters the latest it was given (billing::MeterSegments; the
// usage track is the request track, provenance "usage=request", as for a Slurm job without step
// usage), prices the rows with the PriceBooks handed with them and writes them as the meter job
// of `arbiter serve` does: an hour [h, h + 1h) is closed once h + 1h + delay <= now, written one
// last time and sealed; with open hours (--meter-every), the hours after it up to now too,
// unsealed, replaced in place as they fill up. Idempotent: the runs come from the pods'
// timestamps, so a restarted scheduler writes the same rows again ("unchanged").
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/billing/metering.h"
#include "core/billing/run_segment.h"
#include "core/billing/track_merge.h"
#include "core/objects.h"
#include "core/status.h"

namespace arbiter::sqlite {
class Ledger;
}

namespace arbiter::kubesched {

struct RequestMeterOptions {
  std::string ledger;       // SQLite ledger path (created if missing)
  Millis delay = 300000;    // --meter-delay
  bool open_hours = false;  // --meter-every > 0
  std::function<void(const std::string&)> log;
};

// What the loop hands over: the runs cut at `now`, and the PriceBooks to rate them with.
struct RequestSnapshot {
  Millis now = 0;
  std::vector<billing::RunSegment> runs;
  std::vector<PriceBook> books;
};

class RequestMeter {
 public:
  // Opens (creating) the ledger, then starts the thread.
  static Result<std::unique_ptr<RequestMeter>> Start(RequestMeterOptions o);
  ~RequestMeter();  // ends the thread after the write in progress; a snapshot not taken is dropped
  RequestMeter(const RequestMeter&) = delete;
  RequestMeter& operator=(const RequestMeter&) = delete;

  void Submit(RequestSnapshot s);  // replaces a snapshot the thread has not taken yet
  // Every hour before this is written and sealed (INT64_MIN: nothing yet): runs that ended by
  // then may be forgotten (PodRuns::Retire).
  Millis sealed_before() const { return sealed_before_.load(); }
  int64_t writes() const { return writes_.load(); }

  // The rows of one snapshot and the hour before which they are closed: pure, for tests.
  struct Plan {
    std::vector<billing::HourlyRow> rows;
    Millis closed_before = 0;
  };
  static Result<Plan> PlanWrite(const RequestSnapshot& s, Millis delay, bool open_hours);

 private:
  explicit RequestMeter(RequestMeterOptions o);  // in the .cc: sqlite::Ledger is incomplete here
  void Loop();
  void Write(const RequestSnapshot& s);
  void Log(const std::string& m);

  RequestMeterOptions o_;
  std::unique_ptr<sqlite::Ledger> ledger_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<RequestSnapshot> pending_;
  bool stopping_ = false;
  std::string last_problem_;  // the thread's only
  std::atomic<Millis> sealed_before_{INT64_MIN};
  std::atomic<int64_t> writes_{0};
  std::thread thread_;
};

// `arbiter scheduler --ledger DB --meter-prometheus URL`: the request track for the meter job
// (server::MeterJob), which writes one row per key with the request side from here and the usage
// side from Prometheus (billing::TrackMerger). The loop hands it the runs as with RequestMeter;
// the job's thread asks for the track of each window it meters. Thread-safe.
class RequestTrackSource {
 public:
  void Submit(RequestSnapshot s);  // its books are not used (the job rates)
  // The request track of hours [from, to): nullopt before the first snapshot, and for a closed
  // window (`closed`, to be sealed) until a snapshot was taken at or after `to`. A closed window
  // asked for means every hour before `from` is sealed (the job meters from its watermark).
  std::optional<billing::RequestTrack> Track(Millis from, Millis to, bool closed);
  // Every hour before this is sealed (INT64_MIN: not known yet): runs that ended by then may be
  // forgotten (PodRuns::Retire).
  Millis sealed_before() const { return sealed_before_.load(); }

  // The rows of `runs` in hours [from, to) and every workload they name: pure, for tests.
  static Result<billing::RequestTrack> TrackOf(const std::vector<billing::RunSegment>& runs,
                                               Millis from, Millis to);

 private:
  std::mutex mu_;
  std::optional<RequestSnapshot> latest_;
  std::atomic<Millis> sealed_before_{INT64_MIN};
};

}  // namespace arbiter::kubesched
