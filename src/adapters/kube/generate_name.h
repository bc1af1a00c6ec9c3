// metadata.generateName as kube-apiserver fills it (k8s.io/apiserver/pkg/storage/names): the
// prefix cut to 58 characters (63 - 5), then 5 random characters from Kubernetes' alphabet
// "bcdfghjklmnpqrstvwxz2456789" (lowercase consonants and digits, no vowels nor 0/1/3). The
// caller gives the randomness and retries on a name collision, as kube-apiserver does. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace arbiter::kube {

constexpr int kGeneratedNameSuffix = 5;
constexpr std::string_view kGeneratedNameAlphabet = "bcdfghjklmnpqrstvwxz2456789";

// `random`: any 64-bit random value (its base-27 digits pick the characters).
std::string GenerateName(std::string_view prefix, uint64_t random);

}  // namespace arbiter::kube
