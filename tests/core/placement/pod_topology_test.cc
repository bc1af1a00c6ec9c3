// The pod topology matching rules and score normalisations (placement/pod_topology.h), against
// the upstream plugins' definitions.
#include "core/placement/pod_topology.h"

#include <gtest/gtest.h>

namespace arbiter::placement {
namespace pod_topology_test {

PodAffinityTerm Term(std::map<std::string, std::string> match) {
  PodAffinityTerm t;
  t.label_selector = LabelSelector{std::move(match), {}};
  t.topology_key = kHostnameLabel;
  return t;
}

TEST(PodTopologyTest, TermNamespacesDefaultToTheOwners) {
  const Labels web{{"app", "web"}};
  const PodAffinityTerm t = Term({{"app", "web"}});
  EXPECT_TRUE(TermSelects(t, "a", "a", web, nullptr));
  EXPECT_FALSE(TermSelects(t, "a", "b", web, nullptr));  // another namespace
  EXPECT_FALSE(TermSelects(t, "a", "a", {{"app", "db"}}, nullptr));
  PodAffinityTerm listed = t;
  listed.namespaces = {"b"};
  EXPECT_TRUE(TermSelects(listed, "a", "b", web, nullptr));
  EXPECT_FALSE(TermSelects(listed, "a", "a", web, nullptr));  // listed: the owner's is not implied
  PodAffinityTerm all = t;
  all.namespace_selector = LabelSelector{};  // {}: every namespace
  EXPECT_TRUE(TermSelects(all, "a", "z", web, nullptr));
  PodAffinityTerm prod = t;
  prod.namespace_selector = LabelSelector{{{"env", "prod"}}, {}};
  const Labels prod_ns{{"env", "prod"}};
  EXPECT_TRUE(TermSelects(prod, "a", "z", web, &prod_ns));
  EXPECT_FALSE(TermSelects(prod, "a", "z", web, nullptr));
}

TEST(PodTopologyTest, AbsentSelectorSelectsNothingEmptySelectsAll) {
  PodAffinityTerm none;
  none.topology_key = kHostnameLabel;
  EXPECT_FALSE(TermSelects(none, "a", "a", {{"app", "web"}}, nullptr));
  PodAffinityTerm every = none;
  every.label_selector = LabelSelector{};
  EXPECT_TRUE(TermSelects(every, "a", "a", {}, nullptr));
  TopologySpreadConstraint c;
  EXPECT_FALSE(SpreadSelects(c, "a", "a", {{"app", "web"}}));
  c.label_selector = LabelSelector{{{"app", "web"}}, {}};
  EXPECT_TRUE(SpreadSelects(c, "a", "a", {{"app", "web"}}));
  EXPECT_FALSE(SpreadSelects(c, "a", "b", {{"app", "web"}}));  // its own namespace only
}

// kube-scheduler's podtopologyspread scoring: scoreForCount = cnt * ln(size + 2) + maxSkew - 1,
// then MaxNodeScore * (max + min - s) / max, ignored nodes 0.
TEST(PodTopologyTest, SpreadScoresAsUpstream) {
  const int64_t w = SpreadWeightMilli(2);  // ln 4 = 1.386...
  EXPECT_EQ(w, 1386);
  std::vector<int64_t> s = {SpreadScoreMilli(2, 1, w), SpreadScoreMilli(0, 1, w),
                            SpreadScoreMilli(1, 1, w), 0};
  NormalizeSpreadScores(s, {0, 0, 0, 1});
  // Raw (rounded): 3, 0, 1; max 3, min 0: 100*(3+0-3)/3 = 0, 100, 100*2/3 = 66; ignored 0.
  EXPECT_EQ(s, (std::vector<int64_t>{0, 100, 66, 0}));
  std::vector<int64_t> zero = {0, 0};
  NormalizeSpreadScores(zero, {0, 0});
  EXPECT_EQ(zero, (std::vector<int64_t>{100, 100}));
}

TEST(PodTopologyTest, AffinityScoresMinToZeroMaxToHundred) {
  std::vector<int64_t> s = {-100, 0, 50};
  NormalizeAffinityScores(s);
  EXPECT_EQ(s, (std::vector<int64_t>{0, 66, 100}));
  std::vector<int64_t> same = {7, 7};
  NormalizeAffinityScores(same);
  EXPECT_EQ(same, (std::vector<int64_t>{0, 0}));
}

}  // namespace pod_topology_test
}  // namespace arbiter::placement
