// libFuzzer target for the YAML manifest loader and the quantity parser.
//
// Built by CMake with -DARBITER_FUZZ=ON and clang (CXX=clang++); or by hand from a build dir
// configured with -DCMAKE_CXX_COMPILER=clang++), e.g. by hand:
//   clang++ -std=gnu++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
//     fuzz/manifest_fuzzer.cc src/adapters/yaml/*.cc src/core/*.cc -lyaml-cpp -o manifest_fuzzer
//   ./manifest_fuzzer -max_len=4096 -rss_limit_mb=1024 examples/
// The seeded, deterministic version of this runs in CI: tests/adapters/fuzz_test.cc.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "adapters/yaml/manifest_loader.h"
#include "core/quantity.h"
#include "core/resources.h"
#include "core/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);

  // Quantities: parse, and if the value is representable, the canonical text must round-trip.
  if (size < 64) {
    for (const char* res : {"cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"}) {
      auto v = arbiter::ParseResourceQuantity(res, text);
      if (v.ok()) {
        auto back = arbiter::ParseResourceQuantity(res, arbiter::FormatResourceQuantity(res, *v));
        if (!back.ok() || *back != *v) std::abort();
      }
    }
  }

  // The loader must not throw, and must be deterministic.
  arbiter::yaml::ManifestLoad a, b;
  arbiter::yaml::LoadManifestText(text, "fuzz.yaml", &a);
  arbiter::ValidateManifestSet(a.set, &a.locator, &a.diagnostics);
  arbiter::yaml::LoadManifestText(text, "fuzz.yaml", &b);
  arbiter::ValidateManifestSet(b.set, &b.locator, &b.diagnostics);
  if (a.diagnostics.items.size() != b.diagnostics.items.size()) std::abort();
  for (size_t i = 0; i < a.diagnostics.items.size(); ++i)
    if (a.diagnostics.items[i].ToString() != b.diagnostics.items[i].ToString()) std::abort();
  return 0;
}
