// The daemon's hourly meter job (`arbiter serve --meter-prometheus URL --ledger DB`): on its own
// thread, it runs what `arbiter meter` runs (prometheus::MeterIntoLedger) for the hours the pure
// schedule (billing::PlanMeterJob) names: each hour once it ended `delay` ago, then seals it and
// moves the watermark (table meter_watermark in the ledger), so that a job that was down catches
// up from the watermark; with open hours, also the hours not closed yet, unsealed. Idempotent:
// re-metering writes nothing new. A failed run (Prometheus down, no PriceBook in force) is
// logged and retried at the next wake-up; nothing moves. It never takes the daemon's lock except
// to copy the PriceBook objects (price books from the API when none are given).
// A job that fell behind (Prometheus down for a day) catches up window after window, each at most
// schedule.max_hours long, sealed and logged as it goes with the lag left ("lagSeconds"); the lag
// is also on /metrics (MetricsText: arbiter_meter_lag_seconds, ...).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "adapters/prometheus/meter_ledger.h"
#include "core/billing/meter_schedule.h"
#include "core/billing/track_merge.h"
#include "server/daemon.h"

namespace arbiter::server {

struct MeterJobOptions {
  std::string prometheus;  // base URL
  std::string ledger;      // SQLite ledger path (created if missing)
  prometheus::MeteringConfig config;
  billing::MeterJobSettings schedule;
  Millis every = 60000;  // how often the job wakes up
  // The PriceBooks to rate with, read at every run (e.g. the daemon's PriceBook objects).
  std::function<std::vector<PriceBook>()> price_books;
  // `arbiter scheduler --ledger --meter-prometheus`: the request track of the hours [from, to)
  // from the informers (kubesched::RequestTrackSource), nullopt while they cannot give it yet
  // (`closed`: a window to seal, which they must have seen to its end). When set, every row of a
  // workload it knows takes its request side from it and its usage side from Prometheus
  // (billing::TrackMerger; the ledger's table meter_tracks says so); a window that waits for it
  // is retried at the next wake-up. Unset: both tracks from Prometheus.
  std::function<std::optional<billing::RequestTrack>(Millis from, Millis to, bool closed)>
      request_track;
  std::function<Millis()> clock;  // Unix ms; default: the system clock
  // One structured log line: level ("info", "warning", "error"), message, fields.
  std::function<void(const std::string&, const std::string&, Json)> log;
};

class MeterJob {
 public:
  // Opens the ledger and the Prometheus client, then starts the thread.
  static Result<std::unique_ptr<MeterJob>> Start(MeterJobOptions o);
  ~MeterJob();
  // Waits for the run in progress (bounded by the HTTP timeouts), then ends the thread.
  void Stop();
  // The job's gauges and counters in the Prometheus text format, for /metrics:
  //   arbiter_meter_lag_seconds        closed hours not metered and sealed yet (0: caught up)
  //   arbiter_meter_watermark_seconds  every hour before it is metered and sealed (Unix s)
  //   arbiter_meter_windows_total      windows metered or sealed since start-up
  //   arbiter_meter_failures_total     runs that failed (retried at the next wake-up)
  std::string MetricsText() const;

 private:
  explicit MeterJob(MeterJobOptions o) : o_(std::move(o)) {}
  void Loop();
  // One step of the schedule; true when more closed hours wait (catching up).
  bool RunOnce();
  // RunOnce's steps. The PriceBook versions to rate with, one in force at w.from; nullopt after a
  // Problem.
  std::optional<billing::PriceCatalog> RatingCatalog(const billing::HourWindow& w);
  // A closed window in which no pod ran is only sealed: RunOnce's answer then, nullopt when the
  // window is to be metered.
  std::optional<bool> SealIfNoPodRan(const billing::HourWindow& w, Millis now);
  // Meters the window into the ledger (sealed when `sealing`) and logs it; false after a Problem.
  // With `track`, merged with that request track.
  bool MeterWindow(const billing::HourWindow& w, const billing::PriceCatalog& catalog, bool sealing,
                   Millis now, std::chrono::steady_clock::time_point t0,
                   std::optional<billing::RequestTrack> track);
  // After a sealed window: the watermark and the lag left (seconds), for /metrics and the log.
  double SealedTo(Millis to, Millis now);
  void Log(const std::string& level, const std::string& msg, Json fields) const;
  // A warning or error, logged once while it repeats (a job retrying every few seconds).
  void Problem(const std::string& level, Json fields);

  MeterJobOptions o_;
  std::unique_ptr<sqlite::Ledger> ledger_;
  std::unique_ptr<prometheus::Client> client_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string last_problem_;  // the thread's only
  // For MetricsText (written by the thread, read by /metrics). Lag -1: not known yet.
  std::atomic<int64_t> lag_ms_{-1}, watermark_ms_{-1}, windows_{0}, failures_{0};
  std::thread thread_;
};

// The PriceBooks among the daemon's API objects (arbiter.dev/v1alpha1 PriceBook).
std::vector<PriceBook> DaemonPriceBooks(const Daemon& d);

}  // namespace arbiter::server
