// The engine's chunked workload table (core/engine/slot_table.h) against a plain std::vector:
// random pushes, pops, writes and clears give the same elements in the same order, elements keep
// their address as the table grows, a frozen table is not changed by what the table does after
// (its chunks are copied before they are touched), and the compact GPU devices (WorkloadGpus)
// round-trip.
#include "core/engine/slot_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/workload.h"

namespace arbiter::engine {
namespace slot_table_test {

// An element that owns heap memory (leaks and double frees show under the sanitizers).
struct Item {
  std::string text;
  std::unique_ptr<int> n;
  Item() = default;
  explicit Item(int v)
      : text("item-" + std::to_string(v) + std::string(20, 'x')), n(std::make_unique<int>(v)) {}
  Item(Item&&) = default;
  Item& operator=(Item&&) = default;
  Item(const Item& o) : text(o.text), n(o.n ? std::make_unique<int>(*o.n) : nullptr) {}
  Item& operator=(const Item& o) {
    text = o.text;
    n = o.n ? std::make_unique<int>(*o.n) : nullptr;
    return *this;
  }
  int value() const { return n ? *n : -1; }
};

template <typename Table>
void ExpectSame(const Table& t, const std::vector<int>& want) {
  ASSERT_EQ(t.size(), want.size());
  ASSERT_EQ(t.empty(), want.empty());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(t[i].value(), want[i]) << i;
  size_t k = 0;
  for (const Item& x : t) {
    ASSERT_LT(k, want.size());
    ASSERT_EQ(x.value(), want[k++]);
  }
  ASSERT_EQ(k, want.size());
  if (!want.empty()) {
    ASSERT_EQ(t.back().value(), want.back());
  }
}

TEST(SlotTable, MatchesAVectorUnderRandomOperations) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    SlotTable<Item, 3> t;  // chunks of 8: many chunk boundaries
    std::vector<int> want;
    int next = 0;
    for (int step = 0; step < 2000; ++step) {
      const uint32_t op = rng() % 100;
      if (op < 55) {
        const int v = next++;
        if (rng() % 2) {
          t.emplace_back(v);
        } else {
          t.push_back(Item(v));
        }
        want.push_back(v);
      } else if (op < 75 && !want.empty()) {
        t.pop_back();
        want.pop_back();
      } else if (op < 98 && !want.empty()) {
        const size_t i = rng() % want.size();
        const int v = next++;
        t[i] = Item(v);
        want[i] = v;
      } else {
        t.clear();
        want.clear();
      }
      if (step % 97 == 0) ExpectSame(t, want);
    }
    ExpectSame(t, want);
    SlotTable<Item, 3> moved(std::move(t));
    ExpectSame(moved, want);
    ExpectSame(t, {});
    t = std::move(moved);
    ExpectSame(t, want);
  }
}

TEST(SlotTable, ElementsKeepTheirAddressAsItGrows) {
  SlotTable<Item, 4> t;
  std::vector<const Item*> at;
  for (int i = 0; i < 1000; ++i) {
    at.push_back(&t.emplace_back(i));
    if (i % 50 != 0) continue;
    for (size_t k = 0; k < at.size(); ++k) ASSERT_EQ(&t[k], at[k]);
  }
  // A chunk at most ahead of use: 1,000 elements in chunks of 16 are 63 chunks.
  constexpr size_t kChunkBytes = SlotTable<Item, 4>::kChunkBytes;
  EXPECT_LE(t.capacity_bytes(), 63 * kChunkBytes + 64 * sizeof(void*) * 2);
}

// The chunk freeze: every frozen table keeps the elements of its instant whatever the table does
// after it (writes, pushes, pops, clears, other freezes; through the const accessors too), and
// the table keeps behaving as a vector. Fails if an access writes a chunk a Frozen holds.
TEST(SlotTable, AFrozenTableIsNotChangedByWhatFollows) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    SlotTable<Item, 3> t;
    std::vector<int> want;
    std::vector<std::pair<SlotTable<Item, 3>::Frozen, std::vector<int>>> frozen;
    int next = 0;
    for (int step = 0; step < 3000; ++step) {
      const uint32_t op = rng() % 100;
      if (op < 45) {
        want.push_back(next);
        t.emplace_back(next++);
      } else if (op < 55 && !want.empty()) {
        t.pop_back();
        want.pop_back();
      } else if (op < 90 && !want.empty()) {
        const size_t i = rng() % want.size();
        want[i] = next;
        if (rng() % 2 && t[i].n) {
          *t[i].n = next++;  // in place, through the reference
        } else {
          t[i] = Item(next++);
        }
      } else if (op < 99) {
        frozen.emplace_back(rng() % 2 ? t.Freeze() : t.Copy(), want);
      } else {
        t.clear();
        want.clear();
      }
    }
    ExpectSame(t, want);
    ASSERT_GT(frozen.size(), 200u);
    for (const auto& [f, was] : frozen) {
      ASSERT_EQ(f.size(), was.size());
      for (size_t i = 0; i < was.size(); ++i) ASSERT_EQ(f[i].value(), was[i]) << i;
    }
  }
}

// After a freeze, the table's elements are its own: the first access to a chunk, even a read,
// copies it, and a reference taken then is not into the frozen chunk.
TEST(SlotTable, AccessAfterAFreezeCopiesTheChunkOnce) {
  SlotTable<Item, 4> t;
  for (int i = 0; i < 40; ++i) t.emplace_back(i);
  const Item* before = &t[20];
  const auto frozen = t.Freeze();
  const SlotTable<Item, 4>& read_only = t;
  const Item* after = &read_only[20];
  EXPECT_NE(after, before);
  EXPECT_EQ(&frozen[20], before);
  EXPECT_EQ(&t[21], after + 1);  // the same chunk, copied once
  EXPECT_EQ(&t[20], after);
}

TEST(WorkloadGpus, RoundTripsAscendingDevices) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    placement::GpuAssignment a;
    a.milli_per_device = static_cast<int32_t>(rng() % 1001);
    for (int d = 0; d < placement::kMaxGpusPerNode; ++d)
      if (rng() % 4 == 0) a.devices.push_back(static_cast<int16_t>(d));
    const WorkloadGpus g = a;
    const placement::GpuAssignment back = g;
    EXPECT_EQ(back, a);
    EXPECT_EQ(g.empty(), a.devices.empty());
    EXPECT_EQ(g.milli_per_device(), a.milli_per_device);
  }
  EXPECT_EQ(static_cast<placement::GpuAssignment>(WorkloadGpus{}), placement::GpuAssignment{});
}

}  // namespace slot_table_test
}  // namespace arbiter::engine
