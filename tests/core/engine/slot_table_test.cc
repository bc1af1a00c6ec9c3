// The engine's chunked workload table (core/engine/slot_table.h) against a plain std::vector:
// random pushes, pops, writes and clears give the same elements in the same order, elements keep
// their address as the table grows, and the compact GPU devices (WorkloadGpus) round-trip.
#include "core/engine/slot_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
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
  EXPECT_LE(t.capacity_bytes(), 63 * 16 * sizeof(Item) + 64 * sizeof(Item*));
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
