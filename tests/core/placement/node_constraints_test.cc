// Taints and tolerations, node affinity and score normalisation (placement/node_constraints.h),
// with cases from kube-scheduler's tainttoleration and nodeaffinity plugin tests and
// k8s.io/api's Toleration.ToleratesTaint tests.
#include "core/placement/node_constraints.h"

#include <gtest/gtest.h>

namespace arbiter::placement {
namespace {

using Labels = std::map<std::string, std::string>;

Taint T(std::string key, std::string value, TaintEffect e) { return {key, value, e}; }

Toleration Tol(std::string key, TolerationOperator op, std::string value,
               std::optional<TaintEffect> e) {
  Toleration t;
  t.key = std::move(key);
  t.op = op;
  t.value = std::move(value);
  t.effect = e;
  return t;
}

constexpr auto kEq = TolerationOperator::kEqual;
constexpr auto kEx = TolerationOperator::kExists;
constexpr auto kNS = TaintEffect::kNoSchedule;
constexpr auto kPNS = TaintEffect::kPreferNoSchedule;
constexpr auto kNE = TaintEffect::kNoExecute;

TEST(TolerationTest, ToleratesTaintAsKubernetesDoes) {
  const Taint taint = T("foo", "bar", kNS);
  EXPECT_TRUE(ToleratesTaint(Tol("foo", kEq, "bar", kNS), taint));
  EXPECT_TRUE(ToleratesTaint(Tol("foo", kEq, "bar", std::nullopt), taint));  // empty: all effects
  EXPECT_FALSE(ToleratesTaint(Tol("foo", kEq, "bar", kPNS), taint));         // effect differs
  EXPECT_FALSE(ToleratesTaint(Tol("foo", kEq, "baz", kNS), taint));          // value differs
  EXPECT_TRUE(ToleratesTaint(Tol("foo", kEx, "", kNS), taint));              // Exists: any value
  EXPECT_FALSE(ToleratesTaint(Tol("other", kEx, "", kNS), taint));           // key differs
  EXPECT_TRUE(ToleratesTaint(Tol("", kEx, "", std::nullopt), taint));        // everything
  EXPECT_TRUE(ToleratesTaint(Tol("", kEx, "", kNS), taint));
  EXPECT_FALSE(ToleratesTaint(Tol("", kEx, "", kNE), taint));
}

TEST(TolerationTest, FilterLooksAtNoScheduleAndNoExecuteOnly) {
  const std::vector<Taint> taints = {T("a", "1", kPNS), T("b", "2", kNS), T("c", "3", kNE)};
  const Taint* first = FirstUntoleratedTaint(taints, {});
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->key, "b");
  EXPECT_EQ(TaintText(*first), "{b: 2}");
  const Taint* second = FirstUntoleratedTaint(taints, {Tol("b", kEx, "", std::nullopt)});
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->key, "c");
  EXPECT_EQ(FirstUntoleratedTaint(taints, {Tol("b", kEx, "", kNS), Tol("c", kEq, "3", kNE)}),
            nullptr);
  // A PreferNoSchedule taint alone never filters.
  EXPECT_EQ(FirstUntoleratedTaint({T("a", "1", kPNS)}, {}), nullptr);
  EXPECT_TRUE(HasHardTaint(taints));
  EXPECT_FALSE(HasHardTaint({T("a", "1", kPNS)}));
  EXPECT_TRUE(HasPreferTaint(taints));
}

TEST(TolerationTest, CordonedNodesAdmitPodsToleratingTheUnschedulableTaint) {
  EXPECT_FALSE(ToleratesUnschedulable({}));
  EXPECT_TRUE(ToleratesUnschedulable({Tol(kUnschedulableTaintKey, kEx, "", kNS)}));
  EXPECT_TRUE(ToleratesUnschedulable({Tol("", kEx, "", std::nullopt)}));
  EXPECT_FALSE(ToleratesUnschedulable({Tol(kUnschedulableTaintKey, kEx, "", kNE)}));
}

// tainttoleration TestTaintTolerationScore: the more intolerable PreferNoSchedule taints, the
// lower the normalised score; only tolerations with effect PreferNoSchedule or none count.
TEST(TolerationTest, PreferNoScheduleScoreNormalisedReversed) {
  const std::vector<Toleration> tol = {Tol("foo", kEq, "bar", kPNS)};
  std::vector<int64_t> s = {CountIntolerablePreferNoSchedule({}, tol),
                            CountIntolerablePreferNoSchedule({T("cpu-type", "arm64", kPNS)}, tol),
                            CountIntolerablePreferNoSchedule(
                                {T("cpu-type", "arm64", kPNS), T("disk-type", "ssd", kPNS)}, tol)};
  NormalizeScores(s, /*reverse=*/true);
  EXPECT_EQ(s, (std::vector<int64_t>{100, 50, 0}));
  // NoSchedule tolerations do not count for the score.
  const std::vector<Toleration> ns = {Tol("cpu-type", kEq, "arm64", kNS)};
  EXPECT_EQ(CountIntolerablePreferNoSchedule({T("cpu-type", "arm64", kPNS)}, ns), 1);
  // All tolerated: every node gets 100.
  std::vector<int64_t> zero = {0, 0};
  NormalizeScores(zero, true);
  EXPECT_EQ(zero, (std::vector<int64_t>{100, 100}));
  std::vector<int64_t> plain = {0, 3, 6};
  NormalizeScores(plain, false);
  EXPECT_EQ(plain, (std::vector<int64_t>{0, 50, 100}));
}

NodeSelectorRequirement R(std::string key, NodeSelectorOperator op,
                          std::vector<std::string> values = {}) {
  return {std::move(key), op, std::move(values)};
}

TEST(NodeAffinityTest, Operators) {
  const Labels l = {{"foo", "bar"}, {"kernel-version", "0206"}, {"neg", "-5"}};
  using O = NodeSelectorOperator;
  EXPECT_TRUE(RequirementMatches(R("foo", O::kIn, {"bar", "value2"}), l));
  EXPECT_FALSE(RequirementMatches(R("foo", O::kIn, {"value1", "value2"}), l));
  EXPECT_FALSE(RequirementMatches(R("missing", O::kIn, {"bar"}), l));
  EXPECT_TRUE(RequirementMatches(R("foo", O::kNotIn, {"value1"}), l));
  EXPECT_FALSE(RequirementMatches(R("foo", O::kNotIn, {"bar"}), l));
  EXPECT_TRUE(RequirementMatches(R("missing", O::kNotIn, {"bar"}), l));  // absent label
  EXPECT_TRUE(RequirementMatches(R("foo", O::kExists), l));
  EXPECT_FALSE(RequirementMatches(R("missing", O::kExists), l));
  EXPECT_TRUE(RequirementMatches(R("missing", O::kDoesNotExist), l));
  EXPECT_FALSE(RequirementMatches(R("foo", O::kDoesNotExist), l));
  EXPECT_TRUE(RequirementMatches(R("kernel-version", O::kGt, {"0204"}), l));
  EXPECT_FALSE(RequirementMatches(R("kernel-version", O::kGt, {"206"}), l));
  EXPECT_TRUE(RequirementMatches(R("kernel-version", O::kLt, {"207"}), l));
  EXPECT_TRUE(RequirementMatches(R("neg", O::kLt, {"-4"}), l));
  EXPECT_FALSE(RequirementMatches(R("foo", O::kGt, {"1"}), l));             // not an integer
  EXPECT_FALSE(RequirementMatches(R("missing", O::kLt, {"1"}), l));         // absent label
  EXPECT_FALSE(RequirementMatches(R("kernel-version", O::kGt, {"x"}), l));  // bad value
  EXPECT_FALSE(RequirementMatches(R("kernel-version", O::kGt, {"1", "2"}), l));
}

TEST(NodeAffinityTest, TermsOredRequirementsAndedFieldsByName) {
  using O = NodeSelectorOperator;
  const Labels l = {{"foo", "bar"}, {"zone", "a"}};
  NodeSelectorTerm both;
  both.match_expressions = {R("foo", O::kIn, {"bar"}), R("zone", O::kIn, {"b"})};
  EXPECT_FALSE(TermMatches(both, l, "n1"));
  NodeSelectorTerm by_name;
  by_name.match_fields = {R(kNodeNameField, O::kIn, {"n1"})};
  EXPECT_TRUE(TermMatches(by_name, l, "n1"));
  EXPECT_FALSE(TermMatches(by_name, l, "n2"));
  NodeSelectorTerm not_name;
  not_name.match_fields = {R(kNodeNameField, O::kNotIn, {"n1"})};
  EXPECT_FALSE(TermMatches(not_name, l, "n1"));
  EXPECT_TRUE(TermMatches(not_name, l, "n2"));
  // One term: fields and expressions ANDed.
  NodeSelectorTerm mixed = by_name;
  mixed.match_expressions = {R("zone", O::kIn, {"b"})};
  EXPECT_FALSE(TermMatches(mixed, l, "n1"));
  EXPECT_FALSE(TermMatches(NodeSelectorTerm{}, l, "n1"));  // an empty term matches nothing

  NodeAffinity a;
  a.required = std::vector<NodeSelectorTerm>{both, by_name};  // ORed: the second matches
  EXPECT_TRUE(RequiredAffinityMatches({}, a, l, "n1"));
  EXPECT_FALSE(RequiredAffinityMatches({}, a, l, "n2"));
  // nodeSelector and affinity must both hold.
  EXPECT_TRUE(RequiredAffinityMatches({{"foo", "bar"}}, a, l, "n1"));
  EXPECT_FALSE(RequiredAffinityMatches({{"foo", "baz"}}, a, l, "n1"));
  EXPECT_TRUE(RequiredAffinityMatches({{"foo", "bar"}}, NodeAffinity{}, l, "any"));
  NodeAffinity none;
  none.required = std::vector<NodeSelectorTerm>{};
  EXPECT_FALSE(RequiredAffinityMatches({}, none, l, "n1"));  // no term: no node
}

// nodeaffinity TestNodeAffinityPriority: the sum of the matching terms' weights, normalised.
TEST(NodeAffinityTest, PreferredWeightsSumAndNormalise) {
  using O = NodeSelectorOperator;
  NodeAffinity a;
  a.preferred = {
      {2, {{R("foo", O::kIn, {"bar"})}, {}}},
      {4, {{R("key", O::kIn, {"value"})}, {}}},
      {5,
       {{R("foo", O::kIn, {"bar"}), R("key", O::kIn, {"value"}), R("az", O::kIn, {"az1"})}, {}}}};
  std::vector<int64_t> s = {
      PreferredAffinityScore(a, {{"foo", "bar"}}, "n1"),
      PreferredAffinityScore(a, {{"key", "value"}}, "n2"),
      PreferredAffinityScore(a, {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}}, "n3"),
      PreferredAffinityScore(a, {{"other", "x"}}, "n4")};
  EXPECT_EQ(s, (std::vector<int64_t>{2, 4, 11, 0}));
  NormalizeScores(s, false);
  EXPECT_EQ(s, (std::vector<int64_t>{18, 36, 100, 0}));
}

}  // namespace
}  // namespace arbiter::placement
