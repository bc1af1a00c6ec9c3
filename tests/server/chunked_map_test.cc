// ChunkedMap (src/server/state/chunked_map.h): a sorted map whose Freeze() shares its chunks; a
// frozen map never sees a later write.
#include "server/state/chunked_map.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace arbiter::server {
namespace {

using Small = ChunkedMap<uint64_t, std::string, 8>;  // small chunks: splits and merges are many

template <typename M>
std::vector<std::pair<uint64_t, std::string>> Items(const M& m) {
  return {m.begin(), m.end()};
}
std::vector<std::pair<uint64_t, std::string>> Items(const std::map<uint64_t, std::string>& m) {
  return {m.begin(), m.end()};
}

TEST(ChunkedMapTest, KeepsKeysInOrderAcrossSplitsAndMerges) {
  Small m;
  for (uint64_t k : {5, 1, 9, 3, 7, 2, 8, 4, 6, 0, 12, 11, 10}) m.insert_or_assign(k, "v");
  EXPECT_EQ(m.size(), 13u);
  EXPECT_GT(m.chunk_count(), 1u);
  uint64_t want = 0;
  for (const auto& [k, v] : m) EXPECT_EQ(k, want++);
  m.insert_or_assign(4, "four");
  EXPECT_EQ(m.find(4)->second, "four");
  EXPECT_EQ(m.size(), 13u);
  EXPECT_EQ(m.find(13), m.end());
  EXPECT_EQ(m.erase(13), 0u);
  for (uint64_t k = 0; k < 13; ++k) EXPECT_EQ(m.erase(k), 1u);
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.chunk_count(), 0u);
  EXPECT_EQ(m.begin(), m.end());
}

TEST(ChunkedMapTest, GrowingKeysFillTheirChunks) {
  Small m;
  for (uint64_t k = 0; k < 80; ++k) m.insert_or_assign(k, "v");
  EXPECT_EQ(m.chunk_count(), 10u);  // 80 / 8: appends never split a chunk in two halves
}

TEST(ChunkedMapTest, AFrozenMapNeverSeesLaterWrites) {
  Small m;
  for (uint64_t k = 0; k < 40; ++k) m.insert_or_assign(k, "a" + std::to_string(k));
  const auto before = Items(m);
  const Small::Frozen f = m.Freeze();
  m.insert_or_assign(3, "changed");
  m.insert_or_assign(100, "new");
  m.erase(20);
  for (uint64_t k = 30; k < 40; ++k) m.erase(k);
  EXPECT_EQ(Items(f), before);
  EXPECT_EQ(f.size(), 40u);
  EXPECT_EQ(m.find(3)->second, "changed");
  EXPECT_EQ(m.size(), 30u);
}

TEST(ChunkedMapTest, WritesAfterACaptureAndSeveralCapturesAlive) {
  Small m;
  std::map<uint64_t, std::string> model;
  std::vector<std::pair<Small::Frozen, std::vector<std::pair<uint64_t, std::string>>>> captures;
  for (int round = 0; round < 5; ++round) {
    for (uint64_t k = 0; k < 30; ++k) {
      const uint64_t key = (k * 7 + static_cast<uint64_t>(round)) % 50;
      m.insert_or_assign(key, std::to_string(round));
      model[key] = std::to_string(round);
    }
    m.erase(static_cast<uint64_t>(round * 3));
    model.erase(static_cast<uint64_t>(round * 3));
    captures.emplace_back(m.Freeze(), Items(model));
  }
  for (const auto& [f, want] : captures) EXPECT_EQ(Items(f), want);
  EXPECT_EQ(Items(m), Items(model));
  captures.erase(captures.begin() + 1);  // one let go of in the middle
  m.insert_or_assign(1000, "x");
  model[1000] = "x";
  EXPECT_EQ(Items(m), Items(model));
  for (const auto& [f, want] : captures) EXPECT_EQ(Items(f), want);
}

TEST(ChunkedMapTest, AMovedMapKeepsItsEntriesAndItsCaptures) {
  Small m;
  for (uint64_t k = 0; k < 20; ++k) m.insert_or_assign(k, "v");
  const Small::Frozen f = m.Freeze();
  Small n(std::move(m));
  EXPECT_TRUE(m.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  n.insert_or_assign(3, "w");
  EXPECT_EQ(f.size(), 20u);
  EXPECT_EQ(std::next(f.begin(), 3)->second, "v");
  EXPECT_EQ(n.find(3)->second, "w");
  m = std::move(n);
  EXPECT_EQ(m.size(), 20u);
  EXPECT_TRUE(n.empty());  // NOLINT(bugprone-use-after-move)
}

TEST(ChunkedMapTest, StringKeys) {
  ChunkedMap<std::pair<std::string, std::string>, uint64_t, 4> m;
  m.insert_or_assign({"b", "x"}, 1);
  m.insert_or_assign({"a", "z"}, 2);
  m.insert_or_assign({"a", "y"}, 3);
  m.insert_or_assign({"c", ""}, 4);
  m.insert_or_assign({"a", "a"}, 5);
  std::vector<uint64_t> values;
  for (const auto& [k, v] : m) values.push_back(v);
  EXPECT_EQ(values, (std::vector<uint64_t>{5, 3, 2, 1, 4}));
  auto it = m.find({"a", "y"});
  ASSERT_NE(it, m.end());
  m.erase(it);
  EXPECT_FALSE(m.contains({"a", "y"}));
  EXPECT_EQ(m.size(), 4u);
}

// Random inserts, overwrites, erases (single keys and runs of them, which empty and merge chunks),
// clears and captures against std::map: every capture keeps the model's state at its instant.
TEST(ChunkedMapTest, MatchesAStdMapUnderRandomOpsAndCaptures) {
  std::mt19937_64 rng(27);
  for (int trial = 0; trial < 20; ++trial) {
    Small m;
    std::map<uint64_t, std::string> model;
    std::vector<std::pair<Small::Frozen, std::vector<std::pair<uint64_t, std::string>>>> alive;
    const uint64_t range = 1 + rng() % 300;
    for (int op = 0; op < 3000; ++op) {
      const uint64_t k = rng() % range;
      switch (rng() % 10) {
        case 0:
        case 1:
        case 2:
        case 3: {
          const std::string v = std::to_string(op);
          m.insert_or_assign(k, v);
          model[k] = v;
          break;
        }
        case 4:
        case 5:
        case 6:
          EXPECT_EQ(m.erase(k), model.erase(k));
          break;
        case 7:
          for (uint64_t j = k; j < k + 20; ++j) EXPECT_EQ(m.erase(j), model.erase(j));
          break;
        case 8:
          alive.emplace_back(m.Freeze(), Items(model));
          if (alive.size() > 4) alive.erase(alive.begin() + static_cast<long>(rng() % 5));
          break;
        default:
          if (rng() % 50 == 0) {
            m.clear();
            model.clear();
          } else {
            const auto it = m.find(k);
            EXPECT_EQ(it != m.end(), model.count(k) == 1);
            if (it != m.end()) {
              EXPECT_EQ(it->second, model[k]);
            }
          }
      }
      ASSERT_EQ(m.size(), model.size());
    }
    EXPECT_EQ(Items(m), Items(model));
    for (const auto& [f, want] : alive) {
      EXPECT_EQ(Items(f), want);
      EXPECT_EQ(f.size(), want.size());
    }
  }
}

}  // namespace
}  // namespace arbiter::server
