// The store's chunked map (server/state/chunk_map.h) against a std::map: random inserts,
// overwrites, erases, clears and lookups give the same rows in the same order; a frozen map (or
// key range of it, or a copy) keeps the rows of its instant whatever the map does after it (many
// frozen at once, read on another thread too); a range's freeze copies only its chunks on the
// writes after it; ascending and descending keys fill whole chunks and erases merge sparse ones.
#include "server/state/chunk_map.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace arbiter::server {
namespace chunk_map_test {

using Key = std::pair<std::string, std::string>;
// A value that owns heap memory (leaks and double frees show under the sanitizers).
using Value = std::shared_ptr<const std::string>;
using Model = std::map<Key, std::string>;

Key KeyOf(uint32_t i) {
  // Namespaces of several keys and names past the short-string buffer.
  return {"ns-" + std::to_string(i % 7), "name-with-a-long-tail-" + std::to_string(i)};
}
Value ValueOf(int v) { return std::make_shared<const std::string>("value-" + std::to_string(v)); }

template <typename Rows>
void ExpectRows(const Rows& rows, const Model& want) {
  ASSERT_EQ(rows.size(), want.size());
  ASSERT_EQ(rows.empty(), want.empty());
  auto w = want.begin();
  for (const auto& [key, value] : rows) {
    ASSERT_NE(w, want.end());
    ASSERT_EQ(key, w->first);
    ASSERT_EQ(*value, w->second);
    ++w;
  }
  ASSERT_EQ(w, want.end());
}

template <size_t kMax>
void ExpectLookups(const ChunkMap<Key, Value, kMax>& m, const Model& want, const Key& k) {
  auto it = m.find(k);
  auto w = want.find(k);
  ASSERT_EQ(it == m.end(), w == want.end());
  if (w != want.end()) {
    ASSERT_EQ(it->first, k);
    ASSERT_EQ(*it->second, w->second);
    ASSERT_EQ(*m.at(k), w->second);
  } else {
    ASSERT_THROW(m.at(k), std::out_of_range);
  }
  auto lb = m.lower_bound(k);
  auto wlb = want.lower_bound(k);
  ASSERT_EQ(lb == m.end(), wlb == want.end());
  if (wlb != want.end()) {
    ASSERT_EQ(lb->first, wlb->first);
  }
}

// The rows of `m` whose keys are in [lo, hi).
Model RangeOf(const Model& m, const Key& lo, const Key& hi) {
  if (!(lo < hi)) return {};
  return Model(m.lower_bound(lo), m.lower_bound(hi));
}

template <size_t kMax>
void RandomRun(uint32_t seed, int steps, uint32_t keys) {
  std::mt19937 rng(seed);
  ChunkMap<Key, Value, kMax> m;
  Model want;
  std::vector<std::pair<typename ChunkMap<Key, Value, kMax>::Frozen, Model>> frozen;
  std::vector<std::pair<ChunkMap<Key, Value, kMax>, Model>> copies;
  int next = 0;
  for (int step = 0; step < steps; ++step) {
    const uint32_t op = rng() % 1000;
    const Key k = KeyOf(rng() % keys);
    if (op >= 960 && op < 980) {  // a key range (one namespace's keys or any): the model's rows
      const Key hi = op < 970 ? Key{k.first + std::string(1, '\0'), ""} : KeyOf(rng() % keys);
      const Key lo = op < 970 ? Key{k.first, ""} : k;
      ASSERT_EQ(m.count(lo, hi), RangeOf(want, lo, hi).size());
      frozen.emplace_back(m.FreezeRange(lo, hi), RangeOf(want, lo, hi));
      if (frozen.size() > 8) frozen.erase(frozen.begin() + static_cast<long>(rng() % 8));
    } else if (op == 980) {
      copies.emplace_back(m, want);
      if (copies.size() > 3) copies.erase(copies.begin());
    } else if (op < 500) {
      const int v = next++;
      const bool added = want.count(k) == 0;
      ASSERT_EQ(m.insert_or_assign(k, ValueOf(v)), added);
      want[k] = *ValueOf(v);
    } else if (op < 900) {
      ASSERT_EQ(m.erase(k), want.erase(k) == 1);
    } else if (op < 960) {
      ExpectLookups(m, want, k);
    } else if (op < 995) {
      frozen.emplace_back(m.Freeze(), want);
      if (frozen.size() > 8) frozen.erase(frozen.begin() + static_cast<long>(rng() % 8));
    } else {
      m.clear();
      want.clear();
    }
    if (step % 211 == 0) {
      ExpectRows(m, want);
      for (const auto& [f, w] : frozen) ExpectRows(f, w);
      for (const auto& [c, w] : copies) ExpectRows(c, w);
    }
  }
  ExpectRows(m, want);
  for (const auto& [f, w] : frozen) ExpectRows(f, w);
  for (const auto& [c, w] : copies) ExpectRows(c, w);
  for (uint32_t i = 0; i < keys; ++i) ExpectLookups(m, want, KeyOf(i));
  ExpectLookups(m, want, Key{"", ""});
  ExpectLookups(m, want, Key{"zz", ""});
}

TEST(ChunkMap, MatchesAStdMapUnderRandomOperationsAndFreezes) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    RandomRun<4>(seed, 4000, 300);  // chunks of 4: splits and merges all the time
    RandomRun<16>(seed, 4000, 600);
    RandomRun<256>(seed, 6000, 3000);
  }
}

// A frozen map is not changed by overwrites, erases and inserts after it, in a chunk it shares
// or not, nor by a later freeze and the writes after that.
TEST(ChunkMap, AFrozenMapNeverSeesLaterWrites) {
  ChunkMap<Key, Value, 8> m;
  Model want;
  for (int i = 0; i < 100; ++i) {
    m.insert_or_assign(KeyOf(i), ValueOf(i));
    want[KeyOf(i)] = *ValueOf(i);
  }
  const auto first = m.Freeze();
  const Model first_want = want;
  m.insert_or_assign(KeyOf(5), ValueOf(1005));     // overwrite
  ASSERT_TRUE(m.erase(KeyOf(6)));                  // erase
  m.insert_or_assign(KeyOf(1000), ValueOf(2000));  // insert
  want[KeyOf(5)] = *ValueOf(1005);
  want.erase(KeyOf(6));
  want[KeyOf(1000)] = *ValueOf(2000);
  const auto second = m.Freeze();
  const Model second_want = want;
  for (int i = 0; i < 100; i += 3) {
    ASSERT_EQ(m.erase(KeyOf(i)), want.erase(KeyOf(i)) == 1);
  }
  m.insert_or_assign(KeyOf(5), ValueOf(3005));
  want[KeyOf(5)] = *ValueOf(3005);
  ExpectRows(first, first_want);
  ExpectRows(second, second_want);
  ExpectRows(m, want);
  m.clear();
  ExpectRows(first, first_want);
  ExpectRows(second, second_want);
  ExpectRows(m, Model{});
}

// A frozen map and a key range of it read on another thread while the map goes on changing and
// more ranges are frozen (what a snapshot's bytes and a list's pages do): each reads the rows of
// its instant (and ThreadSanitizer sees no write to what they read).
TEST(ChunkMap, AFrozenMapIsReadOnAnotherThreadWhileTheMapChanges) {
  ChunkMap<Key, Value, 16> m;
  Model want;
  for (int i = 0; i < 2000; ++i) {
    m.insert_or_assign(KeyOf(i), ValueOf(i));
    want[KeyOf(i)] = *ValueOf(i);
  }
  const auto frozen = m.Freeze();
  const Key lo{"ns-3", ""}, hi{"ns-3" + std::string(1, '\0'), ""};
  m.insert_or_assign(lo, ValueOf(-1));  // the chunk of ns-3's first key the map's own again
  want[lo] = *ValueOf(-1);
  const auto range = m.FreezeRange(lo, hi);  // marks chunks the map alone holds, none frozen
  std::string read, read_range;
  std::thread reader([&] {
    for (const auto& [key, value] : frozen) read += key.second + "=" + *value + ";";
    for (const auto& [key, value] : range) read_range += key.second + "=" + *value + ";";
  });
  std::mt19937 rng(7);
  std::vector<typename ChunkMap<Key, Value, 16>::Frozen> more;  // more ranges as the map changes
  for (int step = 0; step < 4000; ++step) {
    const Key k = KeyOf(rng() % 3000);
    if (step % 100 == 0) more.push_back(m.FreezeRange(k, Key{k.first + "z", ""}));
    if (rng() % 2) {
      m.insert_or_assign(k, ValueOf(step));
    } else {
      m.erase(k);
    }
  }
  reader.join();
  std::string expected, expected_range;
  for (const auto& [key, value] : want) {
    if (key != lo) expected += key.second + "=" + value + ";";
    if (key.first == "ns-3") expected_range += key.second + "=" + value + ";";
  }
  EXPECT_EQ(read, expected);
  EXPECT_EQ(read_range, expected_range);
}

// Ascending or descending keys fill whole chunks (not halves); erasing most of the rows merges
// the chunks left sparse, and erasing all leaves none.
TEST(ChunkMap, KeysInOrderFillWholeChunksAndErasesMergeSparseOnes) {
  auto key = [](int i) {
    std::string n = std::to_string(i);
    return Key{"ns", std::string(6 - n.size(), '0') + n};
  };
  ChunkMap<Key, Value, 16> up, down;
  for (int i = 0; i < 1600; ++i) {
    up.insert_or_assign(key(i), ValueOf(i));
    down.insert_or_assign(key(1599 - i), ValueOf(i));
  }
  EXPECT_EQ(up.chunks(), 100u);
  EXPECT_EQ(down.chunks(), 100u);
  for (int i = 0; i < 1600; ++i) {
    if (i % 16 != 0) {
      ASSERT_TRUE(up.erase(key(i)));
    }
  }
  EXPECT_EQ(up.size(), 100u);
  EXPECT_LE(up.chunks(), 100u / 3 + 1);  // 100 rows left, chunks of 3 or more after merges
  for (int i = 0; i < 1600; i += 16) ASSERT_TRUE(up.erase(key(i)));
  EXPECT_EQ(up.chunks(), 0u);
  EXPECT_TRUE(up.empty());
  EXPECT_EQ(up.begin(), up.end());
}

// Freeze shares the chunks: it copies no row (the values' owners count no new holder).
TEST(ChunkMap, FreezeSharesChunksAndCopiesNoRow) {
  ChunkMap<Key, Value, 16> m;
  auto v = ValueOf(1);
  for (int i = 0; i < 100; ++i) m.insert_or_assign(KeyOf(i), v);
  const long held = v.use_count();
  const auto f = m.Freeze();
  EXPECT_EQ(v.use_count(), held);
  EXPECT_EQ(f.chunks(), m.chunks());
  // The first write to a chunk after it copies that chunk alone.
  m.insert_or_assign(KeyOf(0), ValueOf(2));
  EXPECT_GT(v.use_count(), held);
  EXPECT_LE(v.use_count(), held + 16);
}

// A copy shares the chunks and each side copies a chunk before writing it: neither sees the
// other's later writes (a default copy would write the shared chunks in place); a move leaves the
// source empty.
TEST(ChunkMap, CopiesAreIndependentAndAMoveEmptiesItsSource) {
  ChunkMap<uint64_t, std::string, 8> a;
  for (uint64_t i = 0; i < 40; ++i) a.insert_or_assign(i, "a" + std::to_string(i));
  ChunkMap<uint64_t, std::string, 8> b = a;
  const auto frozen = a.Freeze();
  a.insert_or_assign(3, "changed");
  (void)a.erase(4);
  b.insert_or_assign(5, "b5");
  (void)b.erase(6);
  EXPECT_EQ(a.at(3), "changed");
  EXPECT_EQ(b.at(3), "a3");
  EXPECT_EQ(a.at(5), "a5");
  EXPECT_EQ(b.at(4), "a4");
  EXPECT_EQ(a.at(6), "a6");
  EXPECT_EQ(b.find(6), b.end());
  ChunkMap<uint64_t, std::string, 8> c;
  c.insert_or_assign(100, "c");
  c = b;
  c.insert_or_assign(7, "c7");
  EXPECT_EQ(b.at(7), "a7");
  EXPECT_EQ(c.size(), 39u);
  size_t n = 0;
  for (const auto& [k, v] : frozen) EXPECT_EQ(v, "a" + std::to_string(n++)) << k;
  EXPECT_EQ(n, 40u);
  ChunkMap<uint64_t, std::string, 8> d = std::move(c);
  EXPECT_EQ(d.size(), 39u);
  EXPECT_EQ(c.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from map is empty
  EXPECT_EQ(c.begin(), c.end());
  d.insert_or_assign(8, "d8");
  EXPECT_EQ(b.at(8), "a8");
}

// A key range's freeze shares only the chunks that hold its rows: the writes after it copy those
// (once each) and no other, and its rows and those of a whole freeze before it stay as they were
// (ranges at the ends, empty ones too). (A whole Freeze there would copy every chunk: the count
// shows it.)
TEST(ChunkMap, ARangesFreezeCopiesOnlyItsChunksOnTheWritesAfter) {
  ChunkMap<Key, Value, 16> m;
  Model want;
  for (int i = 0; i < 700; ++i) {
    m.insert_or_assign(KeyOf(i), ValueOf(i));
    want[KeyOf(i)] = *ValueOf(i);
  }
  const auto write_all = [&](int gen) {  // overwrites every row: the chunks stay as they are
    for (auto& [k, v] : want) {
      m.insert_or_assign(k, ValueOf(gen));
      v = *ValueOf(gen);
    }
  };
  write_all(0);  // every chunk the map's own
  const Model before = want;
  ASSERT_EQ(m.copies(), 0u);
  const auto whole = m.Freeze();
  write_all(1);  // the whole freeze: every chunk copied, once
  EXPECT_EQ(m.copies(), m.chunks());
  write_all(2);
  EXPECT_EQ(m.copies(), m.chunks());
  const Key lo{"ns-3", ""}, hi{"ns-3" + std::string(1, '\0'), ""};
  const uint64_t copied = m.copies();
  const auto ns3 = m.FreezeRange(lo, hi);
  ASSERT_EQ(ns3.size(), 100u);
  ASSERT_GE(ns3.chunks(), 100u / 16);
  ASSERT_LT(ns3.chunks() * 3, m.chunks());  // a seventh of the keys
  const Model ns3_want = RangeOf(want, lo, hi);
  write_all(3);
  EXPECT_EQ(m.copies() - copied, ns3.chunks());
  write_all(4);  // the copies are the map's own: no more
  EXPECT_EQ(m.copies() - copied, ns3.chunks());
  ExpectRows(ns3, ns3_want);
  ExpectRows(whole, before);
  // Ranges at the ends and empty ones, after splits and merges.
  for (int i = 700; i < 1400; ++i) m.insert_or_assign(KeyOf(i), ValueOf(i));
  const auto first = m.FreezeRange({"", ""}, {"ns-0" + std::string(1, '\0'), ""});
  const auto last = m.FreezeRange({"ns-6", ""}, {"zz", ""});
  const auto none = m.FreezeRange({"ns-31", ""}, {"ns-4", ""});
  const auto after = m.FreezeRange({"zz", ""}, {"zzz", ""});
  const auto upside = m.FreezeRange({"ns-6", ""}, {"ns-0", ""});
  EXPECT_EQ(first.size(), 200u);
  EXPECT_EQ(first.first_row(), 0u);
  EXPECT_EQ(last.size(), 200u);
  EXPECT_EQ(none.chunks(), 0u);
  EXPECT_EQ(after.chunks(), 0u);
  EXPECT_EQ(upside.chunks(), 0u);
  EXPECT_EQ(none.begin(), none.end());
  for (int i = 0; i < 1400; i += 2) m.erase(KeyOf(i));
  EXPECT_EQ(std::distance(first.begin(), first.end()), 200);
  EXPECT_EQ(std::distance(last.begin(), last.end()), 200);
  for (const auto& [k, v] : first) EXPECT_EQ(k.first, "ns-0");
  for (const auto& [k, v] : last) EXPECT_EQ(k.first, "ns-6");
  ExpectRows(ns3, ns3_want);
  ExpectRows(whole, before);
}

}  // namespace chunk_map_test
}  // namespace arbiter::server
