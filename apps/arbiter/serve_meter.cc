#include "serve_meter.h"

#include <iostream>
#include <optional>

#include "cli_flags.h"
#include "price_books.h"

namespace arbiter::app {

namespace {
constexpr const char* kServe = "arbiter serve";

// The value of a duration flag that must not be negative, or nullopt after the usage error.
std::optional<Millis> NonNegativeDuration(const char* flag, const std::string& text,
                                          int* exit_code) {
  auto d = ParseDuration(text);
  if (d.ok() && *d >= 0) return *d;
  *exit_code = FlagError(kServe, flag, d.ok() ? "must not be negative" : d.message());
  return std::nullopt;
}
}  // namespace

void AddServeMeterFlags(CLI::App* cmd, ServeMeterFlags* f) {
  cmd->add_option("--ledger", f->ledger,
                  "The billing ledger (SQLite, created if missing) that the meter job writes and\n"
                  "the dashboard's bills page reads");
  cmd->add_option("--meter-prometheus", f->prometheus,
                  "Meter the pods hourly from this Prometheus into --ledger, as `arbiter meter`\n"
                  "does (docs/serve.md, Meter job)");
  cmd->add_option("--meter-delay", f->delay,
                  "How long after an hour ends it is metered for the last time and sealed "
                  "(default 5m)")
      ->type_name("DUR");
  cmd->add_option("--meter-every", f->every,
                  "Also meter the hours not sealed yet, every DUR (partial hours, replaced as "
                  "they fill up;\ndefault 0s: only closed hours, checked every minute)")
      ->type_name("DUR");
  cmd->add_option(
         "--meter-batch", f->batch,
         "A job that fell behind catches up in windows of at most this many whole hours,\n"
         "each metered, sealed and logged with the lag left (default 168h; lag on /metrics:\n"
         "arbiter_meter_lag_seconds)")
      ->type_name("DUR");
  cmd->add_option("--meter-config", f->config,
                  "PrometheusMetering YAML (scrape interval, series and label names), as "
                  "`arbiter meter --config`");
  cmd->add_option("--price-book", f->price_books,
                  "PriceBook manifest (YAML) or JSON to rate with; repeatable (default: the "
                  "PriceBook objects applied to the daemon)");
}

std::unique_ptr<server::MeterJob> StartServeMeter(
    const ServeMeterFlags& f, server::Daemon& d,
    std::function<void(const std::string&, const std::string&, nlohmann::json)> log,
    int* exit_code) {
  *exit_code = kExitOk;
  if (f.prometheus.empty()) return nullptr;
  if (f.ledger.empty()) {
    *exit_code = FlagError(kServe, "--meter-prometheus", "needs --ledger DB to meter into");
    return nullptr;
  }
  server::MeterJobOptions o;
  o.prometheus = f.prometheus;
  o.ledger = f.ledger;
  const std::optional<Millis> delay = NonNegativeDuration("--meter-delay", f.delay, exit_code);
  if (!delay) return nullptr;
  const std::optional<Millis> every = NonNegativeDuration("--meter-every", f.every, exit_code);
  if (!every) return nullptr;
  const std::optional<Millis> batch = NonNegativeDuration("--meter-batch", f.batch, exit_code);
  if (!batch) return nullptr;
  if (*batch < billing::kHourMs || *batch % billing::kHourMs != 0) {
    *exit_code = FlagError(kServe, "--meter-batch", "must be whole hours, at least 1h (e.g. 24h)");
    return nullptr;
  }
  o.schedule.max_hours = *batch / billing::kHourMs;
  o.schedule.delay = *delay;
  o.schedule.open_hours = *every > 0;
  o.every = *every > 0 ? *every : 60000;
  if (!f.config.empty()) {
    auto c = prometheus::LoadMeteringConfig(f.config);
    if (!c.ok()) {
      *exit_code = InputError(kServe, "--meter-config: " + c.message());
      return nullptr;
    }
    o.config = std::move(c).value();
  }
  if (!f.price_books.empty()) {
    std::vector<PriceBook> books;
    if (!LoadPriceBookFiles(f.price_books, kServe, &books, std::cerr)) {
      *exit_code = kExitInvalidInput;
      return nullptr;
    }
    o.price_books = [books] { return books; };
  } else {
    o.price_books = [&d] { return server::DaemonPriceBooks(d); };
  }
  o.log = std::move(log);
  auto job = server::MeterJob::Start(std::move(o));
  if (!job.ok()) {
    *exit_code = InputError(kServe, job.message());
    return nullptr;
  }
  return std::move(job).value();
}

}  // namespace arbiter::app
