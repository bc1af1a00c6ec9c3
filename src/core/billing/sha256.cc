#include "core/billing/sha256.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define ARBITER_SHA_NI 1
#endif

namespace arbiter::billing {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

#ifdef ARBITER_SHA_NI
// The SHA extensions (and the SSSE3/SSE4.1 shuffles they need), from CPUID.
bool CpuHasSha() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool sse = (c & bit_SSSE3) && (c & bit_SSE4_1);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return sse && (b & bit_SHA);
}

// Intel's SHA-256 with the SHA extensions: the state as ABEF / CDGH, four rounds per message
// vector, W[16..63] made four at a time (sha256msg1/msg2).
__attribute__((target("sha,sse4.1,ssse3"))) void BlocksSha(uint32_t* state, const uint8_t* p,
                                                           size_t n) {
  const __m128i kSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0xB1);
  __m128i s1 =
      _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)), 0x1B);
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);  // ABEF
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);       // CDGH
  for (; n > 0; --n, p += 64) {
    const __m128i abef = s0, cdgh = s1;
    __m128i w[16];
    for (int g = 0; g < 16; ++g) {
      if (g < 4) {
        w[g] =
            _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), kSwap);
      } else {
        const __m128i m = _mm_add_epi32(_mm_sha256msg1_epu32(w[g - 4], w[g - 3]),
                                        _mm_alignr_epi8(w[g - 1], w[g - 2], 4));
        w[g] = _mm_sha256msg2_epu32(m, w[g - 1]);
      }
      __m128i msg =
          _mm_add_epi32(w[g], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kK[4 * g])));
      s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
      msg = _mm_shuffle_epi32(msg, 0x0E);
      s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);    // FEBA
  s1 = _mm_shuffle_epi32(s1, 0xB1);     // DCHG
  s0 = _mm_blend_epi16(tmp, s1, 0xF0);  // DCBA
  s1 = _mm_alignr_epi8(s1, tmp, 8);     // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), s0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), s1);
}
#endif

}  // namespace

bool Sha256::Accelerated() {
#ifdef ARBITER_SHA_NI
  static const bool has = CpuHasSha();
  return has;
#else
  return false;
#endif
}

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      accelerated_(Accelerated()) {}

Sha256 Sha256::Portable() {
  Sha256 h;
  h.accelerated_ = false;
  return h;
}

void Sha256::Blocks(const uint8_t* p, size_t n) {
#ifdef ARBITER_SHA_NI
  if (accelerated_) return BlocksSha(h_.data(), p, n);
#endif
  for (; n > 0; --n, p += 64) Block(p);
}

void Sha256::Block(const uint8_t* p) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
           (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t S1 = Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = h + S1 + ch + kK[i] + w[i];
    uint32_t S0 = Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
  h_[5] += f;
  h_[6] += g;
  h_[7] += h;
}

void Sha256::Update(std::string_view data) {
  total_bytes_ += data.size();
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t left = data.size();
  if (buf_len_ > 0) {  // the block begun by an earlier call
    const size_t take = std::min(left, 64 - buf_len_);
    if (take > 0) std::memcpy(buf_.data() + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    left -= take;
    if (buf_len_ < 64) return;
    Blocks(buf_.data(), 1);
    buf_len_ = 0;
  }
  Blocks(p, left / 64);  // whole blocks from the input, not copied
  p += left / 64 * 64;
  left %= 64;
  if (left > 0) std::memcpy(buf_.data(), p, left);  // (p may be a null view's)
  buf_len_ = left;
}

std::array<uint8_t, 32> Sha256::Finish() {
  uint64_t bits = total_bytes_ * 8;
  buf_[buf_len_++] = 0x80;
  if (buf_len_ > 56) {
    while (buf_len_ < 64) buf_[buf_len_++] = 0;
    Blocks(buf_.data(), 1);
    buf_len_ = 0;
  }
  while (buf_len_ < 56) buf_[buf_len_++] = 0;
  for (int i = 7; i >= 0; --i) buf_[buf_len_++] = static_cast<uint8_t>(bits >> (8 * i));
  Blocks(buf_.data(), 1);
  std::array<uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h_[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::HexDigest() {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : Finish()) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

}  // namespace arbiter::billing
