// The command-line conventions every subcommand follows (docs/user-guide.md, "Command-line
// conventions"), and the flag parsers that apply them.
//
//   exit 0  success (warnings allowed)
//   exit 2  usage error: the command line is wrong in itself, nothing was read or done. An unknown
//           command or option (cli_errors.h), a missing option, or a flag value that is malformed
//           or out of range: "arbiter CMD: --flag: what is wrong".
//   exit 1  invalid input: the command line is fine, what it names is not (a file missing,
//           unreadable or malformed, a damaged ledger, a namespace or workload the input does not
//           have): "FILE:LINE: ..." for a place in an input file, "arbiter CMD: ..." otherwise.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/duration.h"

namespace arbiter::app {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 1;
inline constexpr int kExitUsage = 2;

// Prints "CMD: FLAG: MESSAGE" to stderr and returns kExitUsage.
int FlagError(std::string_view cmd, std::string_view flag, std::string_view message);
// Prints "CMD: MESSAGE" to stderr and returns kExitInvalidInput.
int InputError(std::string_view cmd, std::string_view message);

// An RFC 3339 time flag (empty text: nullopt). Returns kExitOk or kExitUsage (with the message).
int TimeFlag(std::string_view cmd, std::string_view flag, const std::string& text,
             std::optional<Millis>* out);
// The same, and the time must be on the hour (sealing works on whole hours).
int HourFlag(std::string_view cmd, std::string_view flag, const std::string& text,
             std::optional<Millis>* out);

// A billing window from --month YYYY-MM or --from/--to (RFC 3339). --month is [first day of the
// month, first day of the next) and excludes --from and --to; --from after --to is refused.
int WindowFlags(std::string_view cmd, const std::string& month, const std::string& from,
                const std::string& to, std::optional<Millis>* out_from,
                std::optional<Millis>* out_to);

// Standard input ("-") can be read once: refuses a second "-" among (flag, path) pairs.
int StdinOnce(std::string_view cmd,
              const std::vector<std::pair<std::string, std::string>>& flag_paths);

// "; did you mean "x"?" when `word` is close to one of `known` (else "").
std::string DidYouMeanText(std::string_view word, const std::vector<std::string>& known);

// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole).
std::string WrapText(std::string_view text, size_t width);

}  // namespace arbiter::app
