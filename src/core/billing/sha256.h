// SHA-256 (FIPS 180-4), small and dependency-free, for invoice digests.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace arbiter::billing {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Finishes and returns the 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Finish();
  // Lower-case hex of Finish().
  std::string HexDigest();

 private:
  void Block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// Hex SHA-256 of a string.
std::string Sha256Hex(std::string_view data);

}  // namespace arbiter::billing
