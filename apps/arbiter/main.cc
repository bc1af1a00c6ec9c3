#include <functional>
#include <iostream>
#include <string>

#include "allocator.h"
#include "cli_errors.h"
#include "commands.h"
#include "version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "arbiter: scheduling, quota, orderly preemption and dual-track billing for shared GPU/CPU "
      "pools.\nRun `arbiter SUBCOMMAND --help` for the options of each subcommand.",
      "arbiter"};  // not argv[0]: "Usage: arbiter ..." whatever path it was started by
  app.require_subcommand(1);
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return std::string("arbiter ") + arbiter::app::kVersion +
                                "\nallocator: " + arbiter::app::AllocatorInUse();
                       }),
                       "Print the version and the allocator in use, and exit");
  int exit_code = 0;
  arbiter::app::RegisterValidate(app, &exit_code);
  arbiter::app::RegisterSim(app, &exit_code);
  arbiter::app::RegisterInvoice(app, &exit_code);
  arbiter::app::RegisterMeter(app, &exit_code);
  arbiter::app::RegisterLedgerSync(app, &exit_code);
  arbiter::app::RegisterLedgerTracks(app, &exit_code);
  arbiter::app::RegisterSlurm(app, &exit_code);
  arbiter::app::RegisterServe(app, &exit_code);
  arbiter::app::RegisterKubeconfig(app, &exit_code);
  arbiter::app::RegisterScheduler(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << arbiter::app::UsageErrorMessage(app, e);
    return 2;
  }
  return exit_code;
}
