// Small deterministic pseudo-random generators (no std::random_device, no global state):
// SplitMix64 to expand a seed, xoshiro256** for streams. Same seed, same sequence, on every
// platform and build type.
#pragma once

#include <array>
#include <cstdint>

#include "core/int128.h"

namespace arbiter::placement {

inline uint64_t SplitMix64Next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A stateless 64-bit mix of one value (splitmix64 finaliser).
inline uint64_t Mix64(uint64_t x) {
  uint64_t s = x;
  return SplitMix64Next(s);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t sm = seed;
    for (auto& w : s_) w = SplitMix64Next(sm);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, bound), bound > 0, without modulo bias (Lemire's method).
  uint64_t Below(uint64_t bound) {
    uint128 m = static_cast<uint128>(Next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<uint128>(Next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // The generator's state (for engine snapshots): set_state(state()) continues the same stream.
  std::array<uint64_t, 4> state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const std::array<uint64_t, 4>& s) {
    for (int i = 0; i < 4; ++i) s_[i] = s[static_cast<size_t>(i)];
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace arbiter::placement
