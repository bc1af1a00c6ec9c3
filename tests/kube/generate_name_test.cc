// metadata.generateName: prefix + 5 characters of Kubernetes' alphabet, the prefix cut to 58.
#include "adapters/kube/generate_name.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace arbiter::kube {
namespace {

TEST(GenerateNameTest, NameIsThePrefixAndFiveCharactersOfKubernetesAlphabet) {
  std::mt19937_64 rng(7);
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string name = GenerateName("train-", rng());
    ASSERT_EQ(name.size(), 6u + 5u) << name;
    EXPECT_EQ(name.substr(0, 6), "train-");
    for (char ch : name.substr(6))
      EXPECT_NE(kGeneratedNameAlphabet.find(ch), std::string_view::npos) << name;
    seen.insert(name);
  }
  EXPECT_GT(seen.size(), 990u);  // 27^5 names: collisions are rare, and retried by the server
}

TEST(GenerateNameTest, LongPrefixIsCutSoTheNameFitsSixtyThreeCharacters) {
  const std::string prefix(80, 'p');
  const std::string name = GenerateName(prefix, 12345);
  EXPECT_EQ(name.size(), 63u);
  EXPECT_EQ(name.substr(0, 58), std::string(58, 'p'));
}

TEST(GenerateNameTest, DifferentRandomValuesGiveDifferentSuffixes) {
  EXPECT_NE(GenerateName("x-", 0), GenerateName("x-", 1));
  EXPECT_EQ(GenerateName("x-", 0), "x-bbbbb");
}

}  // namespace
}  // namespace arbiter::kube
