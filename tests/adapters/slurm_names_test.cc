// Slurm names made from Arbiter names, and the account / gres-type map.
#include "adapters/slurm/slurm_names.h"

#include <gtest/gtest.h>

#include "adapters/slurm/name_map.h"

namespace arbiter::slurm {
namespace {

TEST(SlurmNames, KubernetesNamespacesMapToThemselves) {
  for (const char* ns : {"team-a", "default", "ml-training-2026", "a"}) {
    EXPECT_TRUE(IsValidSlurmName(ns)) << ns;
    EXPECT_EQ(ToSlurmName(ns), ns);
  }
}

TEST(SlurmNames, OtherCharactersBecomeUnderscoresAndCaseIsLowered) {
  EXPECT_EQ(ToSlurmName("Team.B"), "team_b");
  EXPECT_EQ(ToSlurmName("a b,c=d"), "a_b_c_d");  // space, comma and '=' would break sacctmgr
  EXPECT_EQ(ToSlurmName("system-node-critical"), "system-node-critical");
  EXPECT_EQ(ToSlurmName("gpu.pool/x"), "gpu_pool_x");
}

TEST(SlurmNames, NamesStartWithALetterOrDigitAndAreAtMost64Long) {
  EXPECT_EQ(ToSlurmName("-x"), "x-x");
  EXPECT_EQ(ToSlurmName("_y"), "x_y");
  EXPECT_EQ(ToSlurmName(""), "x");
  EXPECT_EQ(ToSlurmName(std::string(100, 'a')).size(), kMaxSlurmName);
  EXPECT_FALSE(IsValidSlurmName(std::string(65, 'a')));
  EXPECT_FALSE(IsValidSlurmName("Upper"));
  EXPECT_FALSE(IsValidSlurmName("-lead"));
  for (const char* n : {"Team.B", "-x", "", "a b", "ÄÖ"})
    EXPECT_TRUE(IsValidSlurmName(ToSlurmName(n))) << n;
}

TEST(SlurmNames, GresTypesOfGpuModelsAndMigProfiles) {
  EXPECT_EQ(GresTypeOfProduct("NVIDIA-H100-80GB-HBM3"), "h100-80gb-hbm3");
  EXPECT_EQ(GresTypeOfProduct("Tesla-T4"), "tesla-t4");
  EXPECT_EQ(GresTypeOfMig("nvidia.com/mig-1g.10gb"), "1g.10gb");
  EXPECT_EQ(GresTypeOfMig("nvidia.com/mig-3g.40gb+me"), "3g.40gb_me");
  EXPECT_TRUE(IsValidGresType("1g.10gb"));
  EXPECT_FALSE(IsValidGresType("a,b"));
}

TEST(SlurmNameMap, ExplicitEntriesWinAndDefaultsFillTheRest) {
  auto m = NameMap::Parse(
      "accounts:\n  vision_lab: team-a\ngpuTypes:\n  h100: NVIDIA-H100-80GB-HBM3\n", "map.yaml");
  ASSERT_TRUE(m.ok()) << m.message();
  NameMap names = *m;
  ASSERT_TRUE(names.AddNamespace("team-a").ok());
  ASSERT_TRUE(names.AddNamespace("team-b").ok());
  ASSERT_TRUE(names.AddGpuProduct("NVIDIA-H100-80GB-HBM3").ok());
  ASSERT_TRUE(names.AddGpuProduct("NVIDIA-A100-SXM4-80GB").ok());
  ASSERT_TRUE(names.AddMigResource("nvidia.com/mig-1g.10gb").ok());
  EXPECT_EQ(names.AccountOf("team-a"), "vision_lab");
  EXPECT_EQ(names.AccountOf("team-b"), "team-b");
  EXPECT_EQ(*names.NamespaceOf("vision_lab"), "team-a");
  EXPECT_EQ(*names.NamespaceOf("team-b"), "team-b");
  EXPECT_FALSE(names.NamespaceOf("stranger").has_value());
  EXPECT_EQ(names.GresTypeOf("NVIDIA-H100-80GB-HBM3"), "h100");
  EXPECT_EQ(names.GresTypeOf("NVIDIA-A100-SXM4-80GB"), "a100-sxm4-80gb");
  EXPECT_EQ(*names.ProductOf("a100-sxm4-80gb"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(*names.ProductOf("1g.10gb"), "nvidia.com/mig-1g.10gb");
}

TEST(SlurmNameMap, CollisionsAndTheRootAccountAreErrors) {
  NameMap names;
  ASSERT_TRUE(names.AddNamespace("team-b").ok());
  Status s = names.AddNamespace("Team-B");  // not a Kubernetes name, but a map could name it
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("both map to the Slurm account \"team-b\""), std::string::npos)
      << s.message();
  Status root = names.AddNamespace("root");
  EXPECT_FALSE(root.ok());
  EXPECT_NE(root.message().find("--account-map"), std::string::npos) << root.message();
}

TEST(SlurmNameMap, BadMapFilesSayWhereAndWhy) {
  auto bad_key = NameMap::Parse("accounts:\n  \"a b\": team-a\n", "m.yaml");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_NE(bad_key.message().find("m.yaml:2: accounts.a b:"), std::string::npos)
      << bad_key.message();
  auto twice = NameMap::Parse("accounts:\n  x: team-a\n  y: team-a\n", "m.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("one to one"), std::string::npos) << twice.message();
  auto unknown = NameMap::Parse("acounts: {}\n", "m.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("unknown field \"acounts\""), std::string::npos)
      << unknown.message();
  auto yaml = NameMap::Parse("accounts: [\n", "m.yaml");
  ASSERT_FALSE(yaml.ok());
  EXPECT_NE(yaml.message().find("not valid YAML"), std::string::npos) << yaml.message();
  EXPECT_TRUE(NameMap::Parse("", "m.yaml").ok());
}

}  // namespace
}  // namespace arbiter::slurm
