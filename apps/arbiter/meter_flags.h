// The ledger and meter flags shared by `arbiter serve` and `arbiter scheduler` (--ledger,
// --meter-prometheus, --meter-delay, --meter-every, --meter-batch, --meter-config, --price-book):
// one set of names and meanings, parsed here, and the start of server::MeterJob from them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/billing/meter_job.h"

namespace arbiter::app {

struct MeterFlags {
  std::string ledger, prometheus, delay = "5m", every = "0s", batch = "168h", config;
  std::vector<std::string> price_books;
};

// `ledger_help`: what --ledger is for in this command; `books_default`: where the PriceBooks
// come from without --price-book.
void AddMeterFlags(CLI::App* cmd, MeterFlags* f, const std::string& ledger_help,
                   const std::string& books_default);

// The durations of the flags, checked.
struct MeterTimes {
  Millis delay = 0;
  Millis every = 0;  // 0: closed hours only
  int64_t max_hours = 168;
};
// nullopt with *exit_code set (2) and the message on stderr when a flag is wrong.
std::optional<MeterTimes> MeterTimesFromFlags(const MeterFlags& f, const char* cmd, int* exit_code);
// The --price-book files (none: empty); false with *exit_code set (1) when one cannot be read.
bool PriceBooksFromFlags(const MeterFlags& f, const char* cmd, std::vector<PriceBook>* out,
                         int* exit_code);

// Nothing (and exit code 0) without --meter-prometheus; else the running job, or nullptr with
// *exit_code set (2: a flag is wrong, 1: a file or the ledger cannot be read) and the message on
// stderr. `default_books`: the PriceBooks to rate with when --price-book is not given (called on
// the job's thread at every run). `request_track`: MeterJobOptions::request_track (`arbiter
// scheduler`: the informers' request track, merged with Prometheus's usage).
std::unique_ptr<server::MeterJob> StartMeterJob(
    const MeterFlags& f, const char* cmd, std::function<std::vector<PriceBook>()> default_books,
    std::function<void(const std::string&, const std::string&, nlohmann::json)> log, int* exit_code,
    decltype(server::MeterJobOptions::request_track) request_track = {});

}  // namespace arbiter::app
