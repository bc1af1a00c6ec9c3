#include <gtest/gtest.h>

#include "core/billing/exact.h"
#include "core/billing/sha256.h"

namespace arbiter::billing {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(Sha256Hex(million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 h;  // incremental == one shot
  h.Update("ab");
  h.Update("c");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
}

// The SHA extensions' blocks (used when the CPU has them) and the portable code give the same
// digests, for every length around the block and padding edges and any split of the input.
TEST(Sha256Test, ThePortableCodeAndTheCpusExtensionsGiveTheSameDigests) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>((i * 131 + 7) & 0xff);
  for (size_t n = 0; n <= data.size(); n += n < 200 ? 1 : 37) {
    const std::string_view part(data.data(), n);
    Sha256 fast;
    Sha256 portable = Sha256::Portable();
    fast.Update(part.substr(0, n / 3));  // in two pieces, the first of any length
    fast.Update(part.substr(n / 3));
    portable.Update(part);
    EXPECT_EQ(fast.HexDigest(), portable.HexDigest()) << n;
  }
  Sha256 portable = Sha256::Portable();
  portable.Update(std::string(1000000, 'a'));
  EXPECT_EQ(portable.HexDigest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(ExactTest, MulDivRoundsHalfAwayFromZero) {
  EXPECT_EQ(MulDivRoundHalfUp(5, 1, 10), 1);  // 0.5 -> 1
  EXPECT_EQ(MulDivRoundHalfUp(4, 1, 10), 0);
  EXPECT_EQ(MulDivRoundHalfUp(-5, 1, 10), -1);  // -0.5 -> -1
  EXPECT_EQ(MulDivRoundHalfUp(15, 1, 10), 2);
  EXPECT_EQ(MulDivTrunc(19, 1, 10), 1);
  EXPECT_EQ(MulDivRoundHalfUp(0, 123, 7), 0);
}

TEST(ExactTest, MulDivUses256BitIntermediates) {
  const i128 big = static_cast<i128>(1) << 100;  // a × b = 2^200, far beyond 128 bits
  EXPECT_EQ(MulDivRoundHalfUp(big, big, big), big);
  EXPECT_EQ(MulDivRoundHalfUp(big, big * 3, big * 2), big + big / 2);
  EXPECT_EQ(MulDivRoundHalfUp(-big, big, big), -big);
  // (10^28 + 1) × 10^9 / 3 = 3333333333333333333333333333666666666.67 -> ...667
  i128 e28 = 1;
  for (int i = 0; i < 28; ++i) e28 *= 10;
  auto q = MulDivRoundHalfUp(e28 + 1, 1000000000, 3);
  EXPECT_EQ(I128ToString(q), "3333333333333333333333333333666666667");
}

TEST(ExactTest, ParsesAndPrints128BitIntegers) {
  EXPECT_EQ(*ParseI128("0"), 0);
  EXPECT_EQ(*ParseI128("-42"), -42);
  const std::string max = "170141183460469231731687303715884105727";
  EXPECT_EQ(I128ToString(*ParseI128(max)), max);
  EXPECT_FALSE(ParseI128("170141183460469231731687303715884105728").ok());
  EXPECT_FALSE(ParseI128("").ok());
  EXPECT_FALSE(ParseI128("1.5").ok());
  EXPECT_FALSE(ParseI128("-").ok());
}

}  // namespace
}  // namespace arbiter::billing
