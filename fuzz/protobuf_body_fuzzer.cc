// libFuzzer target for the protobuf request body decoder (kubectl's typed generators).
//
// Built by CMake with -DARBITER_FUZZ=ON and clang (CXX=clang++):
//   ./build/protobuf_body_fuzzer -max_len=4096
// The seeded, deterministic version runs in CI: tests/kube/protobuf_body_test.cc
// (RandomAndMutatedBytesNeverCrashOrThrow, MutatedJobBodiesNeverCrashOrThrow).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "adapters/kube/protobuf_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  arbiter::kube::ProtobufBody b = arbiter::kube::DecodeProtobufBody(bytes);
  if (!b.ok() && b.message.empty()) std::abort();  // every refusal says why
  if (b.ok() && (!b.object.is_object() || !b.object.contains("kind"))) std::abort();
  if (b.ok()) (void)b.object.dump();
  return 0;
}
