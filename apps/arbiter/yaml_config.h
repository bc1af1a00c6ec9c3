// `--config FILE` for a subcommand, in YAML: one top-level mapping whose keys are the
// subcommand's long option names without the dashes, e.g. for `arbiter serve`:
//
//   data: /var/lib/arbiter
//   listen: 127.0.0.1:6443
//   snapshot-every: 100000
//   check-invariants: true
//
// A list gives an option several values. Options given on the command line win over the file.
// (CLI11 2.1's own config files are read for the top-level app only, so this is an option of the
// subcommand whose callback fills the options the command line left empty.) Keys that name no
// option of the subcommand, duplicated keys and values that are mappings are refused with the
// file's line number. Generic over the subcommand's CLI11 options: an option added to the
// subcommand is a config key at once.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>

namespace arbiter::app {

// Adds `--config FILE` to `cmd`, read as above.
void AddYamlConfig(CLI::App* cmd, const std::string& help);

}  // namespace arbiter::app
