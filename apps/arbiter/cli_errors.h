// Usage-error messages for the `arbiter` CLI. CLI11's own texts ("A subcommand is required",
// "The following argument was not expected: --polcy", "--file is required" for a mistyped
// flag) do not say which command was being parsed or what to try instead; these do:
//
//   arbiter: unknown command "simm"; did you mean "sim"?
//   arbiter sim: unknown option "--polcy"; did you mean "--policy"?
//   Run `arbiter sim --help` for the options.
//
// An unknown option or argument is reported before a missing required one, since the mistyped
// flag is usually the required one.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace arbiter::app {

// Edit distance (insert, delete, substitute; case-sensitive).
size_t EditDistance(std::string_view a, std::string_view b);
// The candidate closest to `word` when it is close enough to be a plausible typo ("" otherwise).
std::string Closest(std::string_view word, const std::vector<std::string>& candidates);

// A numeric flag's range check, said in words: --help shows the option's type alone (FLOAT, INT;
// CLI::Range adds "FLOAT:FLOAT in [0 - 1000]", so the option's text gives the range), and a value
// outside it is "must be a number from 0 to 1000, not 2000" (CLI::Range: "0.000000 to
// 1000.000000").
CLI::Validator InRange(double lo, double hi);

// The message (several lines, ending in a newline) for a usage error thrown by `root.parse`.
// Not for help or version requests (CLI::CallForHelp, CLI::CallForAllHelp, CLI::CallForVersion).
std::string UsageErrorMessage(const CLI::App& root, const CLI::ParseError& e);

}  // namespace arbiter::app
