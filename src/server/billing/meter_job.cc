#include "server/billing/meter_job.h"

#include <chrono>

#include "adapters/yaml/manifest_loader.h"

namespace arbiter::server {

Result<std::unique_ptr<MeterJob>> MeterJob::Start(MeterJobOptions o) {
  std::unique_ptr<MeterJob> j(new MeterJob(std::move(o)));
  auto ledger = sqlite::Ledger::Open(j->o_.ledger);
  if (!ledger.ok()) return Status::InvalidArgument("--ledger: " + ledger.message());
  j->ledger_ = std::move(ledger).value();
  http::Options ho;
  ho.read_timeout = j->o_.config.timeout;
  ho.retries = j->o_.config.retries;
  auto client = prometheus::Client::Create(j->o_.prometheus, ho);
  if (!client.ok()) return Status::InvalidArgument("--meter-prometheus: " + client.message());
  j->client_ = std::move(client).value();
  if (!j->o_.clock)
    j->o_.clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  j->thread_ = std::thread([p = j.get()] { p->Loop(); });
  return j;
}

MeterJob::~MeterJob() { Stop(); }

void MeterJob::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MeterJob::Log(const std::string& level, const std::string& msg, Json fields) const {
  if (o_.log) o_.log(level, msg, std::move(fields));
}

std::string MeterJob::MetricsText() const {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, std::string value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + value + "\n";
  };
  // Milliseconds as seconds, exactly ("86400", "1.5").
  auto seconds = [](int64_t ms) {
    std::string s = std::to_string(ms / 1000);
    if (ms % 1000) s += "." + std::to_string(1000 + ms % 1000).substr(1);
    return s;
  };
  const int64_t lag = lag_ms_.load(), wm = watermark_ms_.load();
  if (lag >= 0)
    metric("arbiter_meter_lag_seconds", "gauge",
           "Closed hours the meter job has not metered and sealed yet (0: caught up).",
           seconds(lag));
  if (wm >= 0)
    metric("arbiter_meter_watermark_seconds", "gauge",
           "Every hour before this time (Unix seconds) is metered and sealed.", seconds(wm));
  metric("arbiter_meter_windows_total", "counter",
         "Windows of hours the meter job metered or sealed since start-up.",
         std::to_string(windows_.load()));
  metric("arbiter_meter_failures_total", "counter",
         "Meter job runs that failed and wait for the next wake-up.",
         std::to_string(failures_.load()));
  return out;
}

void MeterJob::Problem(const std::string& level, Json fields) {
  ++failures_;
  const std::string key = level + fields.dump();
  if (key == last_problem_) return;
  last_problem_ = key;
  Log(level, "meter", std::move(fields));
}

void MeterJob::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    l.unlock();
    const bool more = RunOnce();
    l.lock();
    if (more) continue;
    cv_.wait_for(l, std::chrono::milliseconds(o_.every), [this] { return stopping_; });
  }
}

double MeterJob::SealedTo(Millis to, Millis now) {
  watermark_ms_ = to;
  lag_ms_ = billing::MeterLagMs(now, to, o_.schedule);
  ++windows_;
  return static_cast<double>(lag_ms_.load()) / 1000;
}

std::optional<billing::PriceCatalog> MeterJob::RatingCatalog(const billing::HourWindow& w) {
  std::vector<PriceBook> books;
  try {
    if (o_.price_books) books = o_.price_books();
  } catch (const std::exception& e) {  // the daemon's ReadTimeout (a stuck journal): next round
    Problem("warning", {{"error", std::string("reading the PriceBooks: ") + e.what()}});
    return std::nullopt;
  }
  if (books.empty()) {
    Problem("warning",
            {{"error", "no PriceBook to rate with: apply one, or start with --price-book FILE"}});
    return std::nullopt;
  }
  auto catalog = billing::PriceCatalog::Create(std::move(books));
  if (!catalog.ok()) {
    Problem("error", {{"error", catalog.message()}});
    return std::nullopt;
  }
  if (!catalog->At(w.from)) {
    Problem("warning", {{"error", "no PriceBook version is in force at " + FormatRfc3339(w.from)}});
    return std::nullopt;
  }
  return std::move(catalog).value();
}

std::optional<bool> MeterJob::SealIfNoPodRan(const billing::HourWindow& w, Millis now) {
  auto any = prometheus::AnyPodRunning(*client_, o_.config, w.from, w.to);
  if (!any.ok() || *any) return std::nullopt;
  Status s = ledger_->Seal(w.to);
  if (s.ok()) s = prometheus::WriteMeterWatermark(ledger_->handle(), w.to);
  if (!s.ok()) {
    Problem("error", {{"from", FormatRfc3339(w.from)}, {"error", s.message()}});
    return false;
  }
  last_problem_.clear();
  const double lag = SealedTo(w.to, now);
  Log("info", "meter",
      {{"from", FormatRfc3339(w.from)},
       {"to", FormatRfc3339(w.to)},
       {"sealed", true},
       {"pods", 0},
       {"skipped", "no pod ran"},
       {"lagSeconds", lag}});
  return true;
}

bool MeterJob::MeterWindow(const billing::HourWindow& w, const billing::PriceCatalog& catalog,
                           bool sealing, Millis now, std::chrono::steady_clock::time_point t0,
                           std::optional<billing::RequestTrack> track) {
  std::optional<billing::TrackMerger> merge;
  if (track) merge.emplace(std::move(*track));
  auto r = prometheus::MeterIntoLedger(*client_, o_.config, catalog, *ledger_, w.from, w.to,
                                       sealing ? std::optional<Millis>(w.to) : std::nullopt, {},
                                       merge ? &*merge : nullptr);
  Json fields = {{"from", FormatRfc3339(w.from)}, {"to", FormatRfc3339(w.to)}, {"sealed", sealing}};
  if (!r.ok()) {
    fields["error"] = r.message();
    Problem("warning", fields);  // retried at the next wake-up; the watermark stays
    return false;
  }
  if (sealing)
    if (Status s = prometheus::WriteMeterWatermark(ledger_->handle(), w.to); !s.ok()) {
      fields["error"] = s.message();
      Problem("error", fields);
      return false;
    }
  last_problem_.clear();
  fields["pods"] = r->meter.pods;
  fields["rows"] = r->meter.rows;
  fields["inserted"] = r->written.inserted;
  fields["unchanged"] = r->written.unchanged;
  fields["replaced"] = r->written.replaced;
  fields["corrected"] = r->written.corrected;
  fields["usageGaps"] = r->meter.usage_gaps;
  fields["duplicatePoints"] = r->meter.duplicate_points;
  if (merge)  // the rows of the informers' pods: request side theirs, usage Prometheus's
    fields["requestFromInformers"] = {{"merged", r->merged.merged},
                                      {"usageNone", r->merged.usage_none},
                                      {"otherPods", r->merged.from_other},
                                      {"droppedOutsideRuns", r->merged.dropped}};
  fields["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (sealing)
    fields["lagSeconds"] = SealedTo(w.to, now);
  else
    ++windows_;
  Log("info", "meter", fields);
  return true;
}

bool MeterJob::RunOnce() {
  const Millis now = o_.clock();
  auto wm = prometheus::ReadMeterWatermark(ledger_->handle());
  if (!wm.ok()) {
    Problem("error", {{"error", wm.message()}});
    return false;
  }
  lag_ms_ = billing::MeterLagMs(now, *wm, o_.schedule);
  if (*wm) watermark_ms_ = **wm;
  const billing::MeterJobStep step = billing::PlanMeterJob(now, *wm, o_.schedule);
  if (!step.closed && !step.open) return false;
  const bool sealing = step.closed.has_value();
  const billing::HourWindow w = sealing ? *step.closed : *step.open;
  const std::optional<billing::PriceCatalog> catalog = RatingCatalog(w);
  if (!catalog) return false;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<billing::RequestTrack> track;
  if (o_.request_track) {
    track = o_.request_track(w.from, w.to, sealing);
    if (!track) {
      Problem("warning", {{"from", FormatRfc3339(w.from)},
                          {"to", FormatRfc3339(w.to)},
                          {"error", "waiting for the informers' request track of the window"}});
      return false;
    }
  }
  // Catching up: a window in which no pod ran (nor, merging, any run the informers saw) is only
  // sealed.
  if (sealing && (!track || track->rows.empty()))
    if (const std::optional<bool> sealed = SealIfNoPodRan(w, now)) return *sealed;
  // After closed hours, come back at once: more closed hours, or the open ones.
  return MeterWindow(w, *catalog, sealing, now, t0, std::move(track)) && sealing;
}

std::vector<PriceBook> DaemonPriceBooks(const Daemon& d) {
  const std::vector<Json> objects = d.Read([](const Cluster& c) {
    std::vector<Json> v;
    for (const auto& [key, obj] : c.store().All("PriceBook")) v.push_back(*obj);
    return v;
  });
  std::vector<PriceBook> out;
  for (const auto& obj : objects) {
    Json in = obj;
    in.erase("status");
    yaml::ManifestLoad load;
    yaml::LoadManifestJson(in, "PriceBook", &load);
    for (auto& b : load.set.price_books) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace arbiter::server
