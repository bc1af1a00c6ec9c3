// libFuzzer target for the sacct --parsable2 parser and the sacct -> run segment import.
//
// Built by CMake with -DARBITER_FUZZ=ON and clang (CXX=clang++):
//   ./build/sacct_fuzzer -max_len=8192 -rss_limit_mb=1024 tests/data/slurm/recorded/
// The seeded, deterministic version runs in CI: tests/adapters/sacct_parser_test.cc
// (SacctParserProperty).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "adapters/slurm/sacct_import.h"
#include "adapters/slurm/sacct_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  arbiter::slurm::SacctParseOptions opts;
  opts.max_line_bytes = 4096;
  opts.max_steps_per_run = 64;
  auto runs = arbiter::slurm::ParseSacctText(text, "fuzz.txt", opts);
  if (!runs.ok()) {
    // Every error names the input.
    if (runs.message().rfind("fuzz.txt", 0) != 0) std::abort();
    return 0;
  }
  for (const auto& r : *runs) {
    if (r.start && r.end && *r.end < *r.start) std::abort();
    if (r.line < 2) std::abort();
  }
  auto segs = arbiter::slurm::SegmentsFromSacct(*runs, arbiter::slurm::NameMap(), {}, "fuzz.txt");
  if (segs.ok())
    for (const auto& s : segs->segments)
      if (s.end < s.start) std::abort();
  return 0;
}
