// json_sparse: parsing only the members a reader names. The property every reader relies on:
// Parse(text, keep) is Prune(json::parse(text), keep), for any JSON and any Keep.
#include "adapters/json/sparse_parse.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace arbiter::json_sparse {
namespace sparse_parse_test {

using nlohmann::json;

// Keys that random objects and random Keeps share, so that members are both kept and skipped;
// one needs escaping in JSON.
const char* const kKeys[] = {"a", "b", "spec", "status", "k\"q", "\xc3\xa9t\xc3\xa9"};

json RandomScalar(std::mt19937& rng) {
  switch (rng() % 9) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng() % 2000) - 1000;
    case 3:
      return uint64_t{18446744073709551615u} - rng() % 10;
    case 4:
      return 0.5 + static_cast<double>(rng() % 1000) / 7;
    case 5:
      return "plain text";
    case 6:
      return "quote \" backslash \\ tab \t newline \n";
    case 7:
      return "\xe2\x82\xac \xf0\x9f\x9a\x80 unicode";
    default:
      return "";
  }
}

json RandomValue(std::mt19937& rng, int depth) {
  const unsigned pick = depth >= 4 ? 0 : rng() % 4;
  if (pick == 0 || pick == 1) return RandomScalar(rng);
  const size_t n = rng() % 4;
  if (pick == 2) {
    json a = json::array();
    for (size_t i = 0; i < n; ++i) a.push_back(RandomValue(rng, depth + 1));
    return a;
  }
  json o = json::object();
  for (size_t i = 0; i < n; ++i) o[kKeys[rng() % std::size(kKeys)]] = RandomValue(rng, depth + 1);
  return o;
}

Keep RandomKeep(std::mt19937& rng, int depth) {
  const unsigned pick = depth >= 3 ? rng() % 2 : rng() % 3;
  if (pick == 0) return Whole();
  if (pick == 1) return Count();
  std::vector<KeepMember> members;
  for (const char* k : kKeys)
    if (rng() % 2 == 0) members.push_back({k, RandomKeep(rng, depth + 1)});
  return Members(std::move(members));
}

TEST(SparseParse, EqualsPruningTheWholeTreeForRandomJsonAndKeeps) {
  std::mt19937 rng(27);
  for (int i = 0; i < 3000; ++i) {
    const json value = RandomValue(rng, 0);
    const Keep keep = RandomKeep(rng, 0);
    const json want = Prune(value, keep);
    for (const std::string& text :
         {value.dump(), value.dump(2), " " + value.dump(1, '\t') + "\n"}) {
      json got;
      ASSERT_TRUE(Parse(text, keep, got)) << text;
      EXPECT_EQ(got, want) << text;
    }
  }
}

TEST(SparseParse, RefusesEveryCutShortObject) {
  std::mt19937 rng(48);
  const Keep keep = Members({{"a", Whole()}, {"spec", Members({{"b", Count()}})}});
  for (int i = 0; i < 300; ++i) {
    json value = json::object();
    value["a"] = RandomValue(rng, 1);
    value["spec"] = RandomValue(rng, 1);
    value["b"] = RandomValue(rng, 1);
    const std::string text = value.dump();
    for (size_t cut = 0; cut < text.size(); ++cut) {
      json got;
      EXPECT_FALSE(Parse(text.substr(0, cut), keep, got)) << text.substr(0, cut);
    }
  }
}

TEST(SparseParse, RefusesBadTextWhereItReadsItAndSkipsUnreadValues) {
  const Keep keep = Members({{"a", Whole()}});
  json got;
  EXPECT_FALSE(Parse(R"({"a":tru})", keep, got));
  EXPECT_FALSE(Parse(R"({"a":01})", keep, got));
  EXPECT_FALSE(Parse(R"({"a":1} x)", keep, got));
  EXPECT_FALSE(Parse(R"({"a":1,})", keep, got));
  EXPECT_FALSE(Parse(R"({"b":[1,2})", keep, got));
  EXPECT_FALSE(Parse(R"({"b":"open})", keep, got));
  EXPECT_FALSE(Parse("", keep, got));
  EXPECT_FALSE(Parse("{\"a\":\"control \x01 byte\"}", keep, got));  // refused unescaped
  EXPECT_FALSE(Parse("{\"b\x01\":1,\"a\":1}", keep, got));
  EXPECT_FALSE(Parse("\xef\xbb\xbf{\"a\":1}", keep, got));  // a byte order mark
  // A skipped value is only checked for closed strings and balanced brackets.
  ASSERT_TRUE(Parse(R"({"b":{"x":[1,"]"]},"a":[1]})", keep, got));
  EXPECT_EQ(got, json::parse(R"({"a":[1]})"));
  // The last of duplicate keys wins, as json::parse keeps it.
  ASSERT_TRUE(Parse(R"({"a":1,"a":{"z":2}})", keep, got));
  EXPECT_EQ(got, json::parse(R"({"a":{"z":2}})"));
}

TEST(SparseParse, CountsAnArrayWithoutBuildingItsElements) {
  json got;
  ASSERT_TRUE(
      Parse(R"({"c":[{"name":"a","x":[1,2]},{"name":"b"},3]})", Members({{"c", Count()}}), got));
  EXPECT_EQ(got, json::parse(R"({"c":[null,null,null]})"));
  ASSERT_TRUE(Parse(R"({"c":{"not":"an array"}})", Members({{"c", Count()}}), got));
  EXPECT_EQ(got, json::parse(R"({"c":{"not":"an array"}})"));
}

TEST(SparseParse, RefusesNestingBeyondItsLimitAlongWhatIsKept) {
  // Each array level is kept with the same Keep, so the reader recurses with the text.
  const Keep keep = Members({{"a", Whole()}});
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  json got;
  EXPECT_FALSE(Parse(deep, keep, got));
  // Skipped, the same nesting costs no recursion.
  ASSERT_TRUE(Parse(R"({"b":)" + deep + R"(,"a":1})", keep, got));
  EXPECT_EQ(got, json::parse(R"({"a":1})"));
}

TEST(SparseParse, MemberTextIsTheRawTextOfTheLastMemberWithThatKey) {
  std::string_view v;
  ASSERT_TRUE(MemberText(R"({"a":1,"metadata":{"name":"x","l":{"}":"{"}},"z":[]})", "metadata", v));
  EXPECT_EQ(v, R"({"name":"x","l":{"}":"{"}})");
  ASSERT_TRUE(MemberText(R"( { "k\"q" : "one" , "k\"q":"two" } )", "k\"q", v));
  EXPECT_EQ(v, R"("two")");
  EXPECT_FALSE(MemberText(R"({"a":1})", "metadata", v));
  EXPECT_FALSE(MemberText(R"([1,2])", "metadata", v));
  EXPECT_FALSE(MemberText(R"({"metadata":{})", "metadata", v));
  EXPECT_FALSE(MemberText(R"({})", "metadata", v));
}

}  // namespace sparse_parse_test
}  // namespace arbiter::json_sparse
