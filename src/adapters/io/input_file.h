// Reading the files a command is given: one rule for every reader (manifests, trace CSVs, run
// segments, PriceBook JSON), so that no input can make a command hang or grow without bound.
//
//  - "-" is standard input, read to its end under the same limit (a pipe, a FIFO or a terminal).
//  - Anything else must be a regular file (after symbolic links). A directory, a FIFO, a socket or
//    a device (/dev/zero, /dev/urandom) is refused, saying what it is, without reading it (a FIFO
//    is never opened, so nothing blocks on it).
//  - Every kind of input has a size limit (InputKind::limit_bytes); a larger file is refused by its
//    size before a byte is read, standard input as soon as it passes the limit.
//  - Input is text: a NUL byte is refused with its line and column ("binary data"), as is UTF-16
//    (which YAML allows but no Kubernetes tool writes).
//
// Messages (Status::message()) name the input first: "FILE: why" or "FILE:LINE: why"; standard
// input is called "stdin".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter::io {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

struct InputKind {
  const char* what;      // "manifest", "trace CSV", ... for messages
  uint64_t limit_bytes;  // the largest input accepted
};

// The documented limits (docs/user-guide.md, "Command-line conventions").
// Manifests: a million Pods of bench/large_sim.sh are about 300 MB of YAML.
inline constexpr InputKind kManifestInput{"manifest", 512 * kMiB};
// openb node and pod lists: the whole cluster-trace-gpu-v2023 is a few MB.
inline constexpr InputKind kTraceCsvInput{"trace CSV", 1024 * kMiB};
// Run segments (JSON Lines) for `invoice ingest`: about 300 bytes a segment.
inline constexpr InputKind kSegmentsInput{"segments file", 1024 * kMiB};
// PriceBooks as JSON.
inline constexpr InputKind kPriceBookJsonInput{"PriceBook JSON", 16 * kMiB};

// "stdin" for "-", else the path.
std::string InputName(const std::string& path);

// "512 MiB", "1.5 GiB", "300 bytes".
std::string SizeText(uint64_t bytes);

// Why `path` cannot be read as an input file, without opening it: "no such file", "it is a
// directory", "it is a FIFO (named pipe), not a regular file; ..." or "" when it is a regular file
// (or "-"). Does not check the size.
std::string WhyNotReadable(const std::string& path);

// Reads the whole input (see the rules above). The error message starts with the input's name.
Result<std::string> ReadInputFile(const std::string& path, const InputKind& kind);

// The same, for readers that print their own "FILE:LINE: " (the manifest loader's diagnostics):
// on failure `reason` says why, without the name, and `line` is the line of a NUL byte (0 when the
// problem is the file itself).
struct ReadProblem {
  size_t line = 0;
  std::string reason;
  bool ok() const { return reason.empty(); }
};
ReadProblem ReadInput(const std::string& path, const InputKind& kind, std::string* text);

// The first NUL byte of `text` as 1-based line and column, or {0, 0} when there is none.
struct TextPosition {
  size_t line = 0, column = 0;
};
TextPosition FindNul(std::string_view text);

}  // namespace arbiter::io
