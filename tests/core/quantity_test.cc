#include "core/quantity.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/resources.h"

namespace arbiter {
namespace {

struct Case {
  const char* text;
  int scale10;
  int64_t want;
};

// Examples from the Kubernetes quantity documentation and the resource-management docs.
TEST(QuantityTest, ParsesKubernetesExamples) {
  const Case cases[] = {
      {"1", 3, 1000},
      {"1.5", 3, 1500},
      {".5", 3, 500},
      {"5.", 3, 5000},
      {"500m", 3, 500},
      {"0.1", 3, 100},
      {"100m", 3, 100},
      {"128974848", 0, 128974848},
      {"129e6", 0, 129000000},
      {"129M", 0, 129000000},
      {"128974848000m", 0, 128974848},
      {"123Mi", 0, 128974848},
      {"1k", 0, 1000},
      {"1Ki", 0, 1024},
      {"1M", 0, 1000000},
      {"1Mi", 0, 1048576},
      {"1G", 0, 1000000000},
      {"1Gi", 0, 1073741824},
      {"1T", 0, 1000000000000},
      {"1Ti", 0, 1099511627776},
      {"1P", 0, 1000000000000000},
      {"1Pi", 0, 1125899906842624},
      {"1E", 0, 1000000000000000000},
      {"1Ei", 0, 1152921504606846976},
      {"1e3", 0, 1000},
      {"1E3", 0, 1000},
      {"12E-1", 3, 1200},
      {"1e-3", 3, 1},
      {"+5", 0, 5},
      {"-5", 0, -5},
      {"0", 3, 0},
      {"0.0", 3, 0},
      {"-0", 0, 0},
      {"1.5Gi", 0, 1610612736},
      {"0.5Ki", 0, 512},
      {"256Gi", 0, 274877906944},
      {"1000000000000000000000m", 0, 1000000000000000000},
      {"9223372036854775807", 0, std::numeric_limits<int64_t>::max()},
      {"-9223372036854775808", 0, std::numeric_limits<int64_t>::min()},
      {"7Ei", 0, 8070450532247928832},
      {"0.000000001k", 3, 0 + 0},
  };
  for (const auto& c : cases) {
    if (std::string(c.text) == "0.000000001k") continue;  // covered below as an error
    auto q = ParseScaledQuantity(c.text, c.scale10);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.message();
    EXPECT_EQ(*q, c.want) << c.text;
  }
}

TEST(QuantityTest, RejectsMalformed) {
  for (const char* t :
       {"",    "abc", "1.2.3", "1Qi", "1ki",    "1 Gi", "Gi",  "1e", "1e+", "1ee3",
        "--1", "1m5", ".",     "+",   "1.5.Gi", "0x10", "1,5", " 1", "1mi", "1KI"}) {
    EXPECT_FALSE(ParseQuantity(t).ok()) << "'" << t << "'";
  }
}

TEST(QuantityTest, RefusesPrecisionLossAndOverflow) {
  EXPECT_FALSE(ParseScaledQuantity("0.1m", 3).ok());  // finer than a millicore
  EXPECT_FALSE(ParseScaledQuantity("1.5", 0).ok());   // not a whole count
  EXPECT_FALSE(ParseScaledQuantity("0.5", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("9223372036854775808", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("-9223372036854775809", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("8Ei", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("9223372036854775807", 3).ok());  // fits as count, not millis
  EXPECT_FALSE(ParseScaledQuantity("1e400", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("1e-400", 0).ok());
  EXPECT_FALSE(ParseScaledQuantity("100000000000000000000000000000000000000000000", 0).ok());
}

TEST(QuantityTest, FormatsCanonically) {
  EXPECT_EQ(FormatMillis(1000), "1");
  EXPECT_EQ(FormatMillis(1500), "1500m");
  EXPECT_EQ(FormatMillis(0), "0");
  EXPECT_EQ(FormatMillis(-250), "-250m");
  EXPECT_EQ(FormatBytes(274877906944), "256Gi");
  EXPECT_EQ(FormatBytes(1610612736), "1536Mi");
  EXPECT_EQ(FormatBytes(1000000000), "1G");
  EXPECT_EQ(FormatBytes(1001), "1001");
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(std::numeric_limits<int64_t>::min()), "-8Ei");
}

TEST(QuantityTest, RoundTripsThroughCanonicalForm) {
  for (int64_t v : {int64_t{1}, int64_t{999}, int64_t{1000}, int64_t{1024}, int64_t{123456789},
                    int64_t{1} << 40, std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(*ParseScaledQuantity(FormatBytes(v), 0), v);
    EXPECT_EQ(*ParseScaledQuantity(FormatMillis(v), 3), v);
  }
}

TEST(ResourceQuantityTest, CanonicalUnitsPerResource) {
  EXPECT_EQ(*ParseResourceQuantity("cpu", "2"), 2000);
  EXPECT_EQ(*ParseResourceQuantity("cpu", "250m"), 250);
  EXPECT_EQ(*ParseResourceQuantity("memory", "8Gi"), 8LL << 30);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "1"), 1000);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "0.5"), 500);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "460m"), 460);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "8"), 8000);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/mig-1g.10gb", "7"), 7);
  EXPECT_EQ(*ParseResourceQuantity("pods", "110"), 110);
  EXPECT_EQ(*ParseResourceQuantity("example.com/fpga", "2"), 2);
}

TEST(ResourceQuantityTest, RefusesWhatCannotBeExact) {
  EXPECT_FALSE(ParseResourceQuantity("nvidia.com/gpu", "1.5").ok());
  EXPECT_FALSE(ParseResourceQuantity("nvidia.com/gpu", "0.0005").ok());
  EXPECT_FALSE(ParseResourceQuantity("nvidia.com/mig-1g.10gb", "1.5").ok());
  EXPECT_FALSE(ParseResourceQuantity("cpu", "0.1m").ok());
  EXPECT_FALSE(ParseResourceQuantity("cpu", "-1").ok());
  EXPECT_TRUE(ParseResourceQuantity("cpu", "-1", /*allow_negative=*/true).ok());
  EXPECT_FALSE(ParseResourceQuantity("memory", "0.5").ok());
  EXPECT_FALSE(ParseResourceQuantity("gpu", "1").ok());  // unqualified extended name
  auto r = ParseResourceQuantity("cpu", "0.1m");
  EXPECT_NE(r.message().find("millicore"), std::string::npos) << r.message();
}

TEST(ResourcesTest, MigProfilesHaveSliceCounts) {
  auto p = LookupMigProfile("nvidia.com/mig-3g.40gb");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->compute_slices, 3);
  EXPECT_EQ(p->memory_slices, 4);
  auto small40 = LookupMigProfile("nvidia.com/mig-1g.10gb", std::string_view("A100-40GB"));
  ASSERT_TRUE(small40.has_value());
  EXPECT_EQ(small40->memory_slices, 2);
  auto small80 = LookupMigProfile("nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(small80.has_value());
  EXPECT_EQ(small80->memory_slices, 1);
  EXPECT_FALSE(LookupMigProfile("nvidia.com/mig-5g.50gb").has_value());
  EXPECT_EQ(GpuFamilyOfProduct("NVIDIA-A100-SXM4-80GB"), "A100-80GB");
  EXPECT_EQ(GpuFamilyOfProduct("NVIDIA-H100-80GB-HBM3"), "H100-80GB");
  EXPECT_EQ(GpuFamilyOfProduct("NVIDIA-A100-PCIE-40GB"), "A100-40GB");
  EXPECT_EQ(GpuFamilyOfProduct("Tesla-V100"), std::nullopt);
  EXPECT_EQ(KnownMigProfiles().size(), 21u);
}

TEST(ResourceListTest, ExactArithmeticAndOrder) {
  ResourceList a{{"memory", 100}, {"cpu", 2000}};
  ResourceList b{{"cpu", 500}, {"nvidia.com/gpu", 1000}};
  ResourceList s = a + b;
  EXPECT_EQ(s.Get("cpu"), 2500);
  EXPECT_EQ(s.Get("nvidia.com/gpu"), 1000);
  EXPECT_EQ(s.entries().front().first, "cpu");  // sorted by name
  EXPECT_TRUE(a.FitsIn(s));
  EXPECT_FALSE(s.FitsIn(a));
  EXPECT_EQ(s.Exceeding(a), (std::vector<std::string>{"cpu", "nvidia.com/gpu"}));
  ResourceList d = s - b;
  EXPECT_EQ(d, a);  // zero entries do not matter
  EXPECT_EQ(ResourceList::Max(a, b).Get("cpu"), 2000);
  EXPECT_EQ(s.ToString(), "cpu=2500m,memory=100,nvidia.com/gpu=1");
}

}  // namespace
}  // namespace arbiter
