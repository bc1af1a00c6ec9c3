#include <iostream>

#include "commands.h"

namespace arbiter::app {

void RegisterSim(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("sim", "Simulate the workloads of the manifests on the pool under a virtual clock.");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("-f,--file", *files, "Manifest file (multi-document YAML); repeatable");
  cmd->callback([files, exit_code] {
    std::cerr << "sim: not implemented yet\n";
    *exit_code = 1;
  });
}

}  // namespace arbiter::app
