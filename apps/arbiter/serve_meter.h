// `arbiter serve`'s ledger and meter job flags (--ledger, --meter-prometheus, --meter-delay,
// --meter-every, --meter-batch, --meter-config, --price-book) and the start of server::MeterJob
// from them.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "server/billing/meter_job.h"

namespace arbiter::app {

struct ServeMeterFlags {
  std::string ledger, prometheus, delay = "5m", every = "0s", batch = "168h", config;
  std::vector<std::string> price_books;
};

void AddServeMeterFlags(CLI::App* cmd, ServeMeterFlags* f);

// Nothing (and exit code 0) without --meter-prometheus; else the running job, or nullptr with
// *exit_code set (2: a flag is wrong, 1: a file or the ledger cannot be read) and the message on
// stderr.
std::unique_ptr<server::MeterJob> StartServeMeter(
    const ServeMeterFlags& f, server::Daemon& d,
    std::function<void(const std::string&, const std::string&, nlohmann::json)> log,
    int* exit_code);

}  // namespace arbiter::app
