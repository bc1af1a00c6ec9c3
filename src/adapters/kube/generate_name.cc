#include "adapters/kube/generate_name.h"

namespace arbiter::kube {

std::string GenerateName(std::string_view prefix, uint64_t random) {
  constexpr size_t kMaxPrefix = 63 - kGeneratedNameSuffix;
  std::string name(prefix.substr(0, kMaxPrefix));
  for (int i = 0; i < kGeneratedNameSuffix; ++i) {
    name += kGeneratedNameAlphabet[random % kGeneratedNameAlphabet.size()];
    random /= kGeneratedNameAlphabet.size();
  }
  return name;
}

}  // namespace arbiter::kube
