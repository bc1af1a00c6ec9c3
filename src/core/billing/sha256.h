// SHA-256 (FIPS 180-4), small and dependency-free, for invoice digests and the seals of the
// engine's snapshots and commands (serial.h). On x86-64 with the SHA extensions the blocks are
// hashed by them (about 8 times faster than the portable code; issue 27: a sealed command per
// create, a sealed engine snapshot per daemon snapshot); the digest is the same.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace arbiter::billing {

class Sha256 {
 public:
  Sha256();
  // The portable code alone, whatever the CPU offers (tests compare the two).
  static Sha256 Portable();
  // Whether this CPU's SHA extensions hash the blocks of a default Sha256.
  static bool Accelerated();
  void Update(std::string_view data);
  // Finishes and returns the 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  // Lower-case hex of Finish().
  std::string HexDigest();

 private:
  void Blocks(const uint8_t* p, size_t n);  // n whole blocks of 64 bytes
  void Block(const uint8_t* p);             // one, by the portable code
  std::array<uint32_t, 8> h_;
  bool accelerated_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// Hex SHA-256 of a string.
std::string Sha256Hex(std::string_view data);

}  // namespace arbiter::billing
