#include "meter_flags.h"

#include <iostream>
#include <optional>

#include "cli_flags.h"
#include "price_books.h"

namespace arbiter::app {

namespace {
// The value of a duration flag that must not be negative, or nullopt after the usage error.
std::optional<Millis> NonNegativeDuration(const char* cmd, const char* flag,
                                          const std::string& text, int* exit_code) {
  auto d = ParseDuration(text);
  if (d.ok() && *d >= 0) return *d;
  *exit_code = FlagError(cmd, flag, d.ok() ? "must not be negative" : d.message());
  return std::nullopt;
}
}  // namespace

void AddMeterFlags(CLI::App* cmd, MeterFlags* f, const std::string& ledger_help,
                   const std::string& books_default) {
  cmd->add_option("--ledger", f->ledger, ledger_help);
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
                  "PriceBook manifest (YAML) or JSON to rate with; repeatable (default: " +
                      books_default + ")");
}

std::optional<MeterTimes> MeterTimesFromFlags(const MeterFlags& f, const char* cmd,
                                              int* exit_code) {
  *exit_code = kExitOk;
  MeterTimes t;
  const auto delay = NonNegativeDuration(cmd, "--meter-delay", f.delay, exit_code);
  if (!delay) return std::nullopt;
  const auto every = NonNegativeDuration(cmd, "--meter-every", f.every, exit_code);
  if (!every) return std::nullopt;
  const auto batch = NonNegativeDuration(cmd, "--meter-batch", f.batch, exit_code);
  if (!batch) return std::nullopt;
  if (*batch < billing::kHourMs || *batch % billing::kHourMs != 0) {
    *exit_code = FlagError(cmd, "--meter-batch", "must be whole hours, at least 1h (e.g. 24h)");
    return std::nullopt;
  }
  t.delay = *delay;
  t.every = *every;
  t.max_hours = *batch / billing::kHourMs;
  return t;
}

bool PriceBooksFromFlags(const MeterFlags& f, const char* cmd, std::vector<PriceBook>* out,
                         int* exit_code) {
  out->clear();
  if (f.price_books.empty()) return true;
  if (!LoadPriceBookFiles(f.price_books, cmd, out, std::cerr)) {
    *exit_code = kExitInvalidInput;
    return false;
  }
  return true;
}

std::unique_ptr<server::MeterJob> StartMeterJob(
    const MeterFlags& f, const char* cmd, std::function<std::vector<PriceBook>()> default_books,
    std::function<void(const std::string&, const std::string&, nlohmann::json)> log, int* exit_code,
    decltype(server::MeterJobOptions::request_track) request_track) {
  *exit_code = kExitOk;
  if (f.prometheus.empty()) return nullptr;
  if (f.ledger.empty()) {
    *exit_code = FlagError(cmd, "--meter-prometheus", "needs --ledger DB to meter into");
    return nullptr;
  }
  const std::optional<MeterTimes> t = MeterTimesFromFlags(f, cmd, exit_code);
  if (!t) return nullptr;
  server::MeterJobOptions o;
  o.prometheus = f.prometheus;
  o.ledger = f.ledger;
  o.schedule.max_hours = t->max_hours;
  o.schedule.delay = t->delay;
  o.schedule.open_hours = t->every > 0;
  o.every = t->every > 0 ? t->every : 60000;
  if (!f.config.empty()) {
    auto c = prometheus::LoadMeteringConfig(f.config);
    if (!c.ok()) {
      *exit_code = InputError(cmd, "--meter-config: " + c.message());
      return nullptr;
    }
    o.config = std::move(c).value();
  }
  std::vector<PriceBook> books;
  if (!PriceBooksFromFlags(f, cmd, &books, exit_code)) return nullptr;
  if (!books.empty())
    o.price_books = [books] { return books; };
  else
    o.price_books = std::move(default_books);
  o.log = std::move(log);
  o.request_track = std::move(request_track);
  auto job = server::MeterJob::Start(std::move(o));
  if (!job.ok()) {
    *exit_code = InputError(cmd, job.message());
    return nullptr;
  }
  return std::move(job).value();
}

}  // namespace arbiter::app
