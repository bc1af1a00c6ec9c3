#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "arbiter: scheduling, quota, orderly preemption and dual-track billing for shared GPU/CPU "
      "pools.\nRun `arbiter SUBCOMMAND --help` for the options of each subcommand."};
  app.require_subcommand(1);
  int exit_code = 0;
  arbiter::app::RegisterValidate(app, &exit_code);
  arbiter::app::RegisterSim(app, &exit_code);
  arbiter::app::RegisterInvoice(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help (rc 0) or the usage error
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
