#include <iostream>

#include "commands.h"

namespace arbiter::app {

void RegisterValidate(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("validate", "Load manifests and report every problem found.");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("-f,--file", *files, "Manifest file (multi-document YAML); repeatable")->required();
  cmd->callback([files, exit_code] {
    std::cerr << "validate: not implemented yet\n";
    *exit_code = 1;
  });
}

}  // namespace arbiter::app
