// Each subcommand registers itself on the CLI11 app and sets *exit_code when it runs.
// Exit codes: 0 success, 1 invalid input (messages on stderr), 2 usage error.
#pragma once

#include <CLI/CLI.hpp>

namespace arbiter::app {

void RegisterValidate(CLI::App& app, int* exit_code);
void RegisterSim(CLI::App& app, int* exit_code);
void RegisterInvoice(CLI::App& app, int* exit_code);  // invoice, invoice ingest, ledger export|seal
void RegisterMeter(CLI::App& app, int* exit_code);    // meter (live metering from Prometheus)
void RegisterLedgerSync(CLI::App& app, int* exit_code);    // ledger sync (after RegisterInvoice)
void RegisterLedgerTracks(CLI::App& app, int* exit_code);  // ledger tracks (after RegisterInvoice)
void RegisterSlurm(CLI::App& app, int* exit_code);         // slurm export|import|compare
void RegisterServe(CLI::App& app, int* exit_code);         // serve (the daemon: src/server)
void RegisterKubeconfig(CLI::App& app, int* exit_code);    // kubeconfig (for `arbiter serve` users)
void RegisterScheduler(CLI::App& app, int* exit_code);  // scheduler (a real cluster: src/kubesched)

}  // namespace arbiter::app
