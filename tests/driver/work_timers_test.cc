// WorkTimers (src/driver/work_model.h): timers fire in (time, order of arming), arming again or
// disarming cancels; Freeze() keeps the state of its instant while the timers go on.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "driver/work_model.h"

namespace arbiter::driver {
namespace {

using Kind = WorkTimers::Kind;

// The live timers as a model keeps them: per workload its one live timer.
struct Model {
  struct Live {
    Millis time;
    uint64_t seq;
    Kind kind;
  };
  std::map<uint64_t, Live> live;  // by workload
  uint64_t seq = 0;
  // In firing order: (time, seq, workload, kind).
  std::vector<std::tuple<Millis, uint64_t, uint64_t, Kind>> Order() const {
    std::vector<std::tuple<Millis, uint64_t, uint64_t, Kind>> out;
    for (const auto& [w, t] : live) out.emplace_back(t.time, t.seq, w, t.kind);
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::vector<std::tuple<Millis, uint64_t, uint64_t, Kind>> Order(
    const std::vector<WorkTimers::Timer>& timers) {
  std::vector<std::tuple<Millis, uint64_t, uint64_t, Kind>> out;
  for (const auto& t : timers) out.emplace_back(t.time, t.seq, engine::Value(t.workload), t.kind);
  return out;
}

TEST(WorkTimersTest, AFrozenStateKeepsItsInstant) {
  WorkTimers timers;
  for (uint64_t w = 0; w < 3000; ++w)
    timers.Arm(engine::WorkloadId{w}, static_cast<Millis>(w * 7 % 1000), Kind::kComplete);
  const auto before = timers.Live();
  const WorkTimers::Frozen f = timers.Freeze();
  timers.Disarm(engine::WorkloadId{5});
  timers.Arm(engine::WorkloadId{6}, 1, Kind::kExit);
  timers.Arm(engine::WorkloadId{5000}, 2, Kind::kExit);
  while (timers.PopDue(500)) {
  }
  EXPECT_EQ(Order(f.Live()), Order(before));
  EXPECT_EQ(f.seq, 3000u);
  EXPECT_EQ(f.generations.size(), 3000u);
  EXPECT_EQ(timers.seq(), 3002u);
  EXPECT_EQ(timers.generations().size(), 5001u);
}

// Random arms, disarms, pops and freezes against the model: every pop is the model's first live
// timer, and every frozen state stays the model's at its instant, several alive at once.
TEST(WorkTimersTest, MatchesAModelUnderRandomOpsAndFreezes) {
  std::mt19937_64 rng(27);
  for (int trial = 0; trial < 10; ++trial) {
    WorkTimers timers;
    Model model;
    std::vector<
        std::pair<WorkTimers::Frozen, std::vector<std::tuple<Millis, uint64_t, uint64_t, Kind>>>>
        frozen;
    Millis now = 0;
    const uint64_t workloads = 1 + rng() % 3000;
    for (int op = 0; op < 20000; ++op) {
      const uint64_t w = rng() % workloads;
      switch (rng() % 8) {
        case 0:
        case 1:
        case 2: {
          const Millis at = now + static_cast<Millis>(rng() % 1000);
          const Kind kind = rng() % 2 ? Kind::kExit : Kind::kComplete;
          timers.Arm(engine::WorkloadId{w}, at, kind);
          model.live[w] = {at, model.seq++, kind};
          break;
        }
        case 3:
          timers.Disarm(engine::WorkloadId{w});
          model.live.erase(w);
          break;
        case 4:
        case 5: {
          now += static_cast<Millis>(rng() % 50);
          const auto order = model.Order();
          const auto due = timers.PopDue(now);
          if (order.empty() || std::get<0>(order[0]) > now) {
            EXPECT_FALSE(due);
            break;
          }
          ASSERT_TRUE(due);
          EXPECT_EQ(Order({*due})[0], order[0]);
          model.live.erase(std::get<2>(order[0]));
          break;
        }
        case 6: {
          const auto order = model.Order();
          const auto next = timers.Next();
          EXPECT_EQ(next.has_value(), !order.empty());
          if (next && !order.empty()) {
            EXPECT_EQ(*next, std::get<0>(order[0]));
          }
          break;
        }
        default:
          frozen.emplace_back(timers.Freeze(), model.Order());
          if (frozen.size() > 3) frozen.erase(frozen.begin() + static_cast<long>(rng() % 4));
      }
    }
    EXPECT_EQ(Order(timers.Live()), model.Order());
    for (const auto& [f, want] : frozen) EXPECT_EQ(Order(f.Live()), want);
  }
}

TEST(WorkTimersTest, RestoredTimersFireAsTheSavedOnesWould) {
  WorkTimers a;
  for (uint64_t w = 0; w < 500; ++w)
    a.Arm(engine::WorkloadId{w}, static_cast<Millis>(w % 17), Kind::kComplete);
  for (uint64_t w = 0; w < 500; w += 3) a.Disarm(engine::WorkloadId{w});
  WorkTimers b;
  b.Restore(a.Live(), a.seq(), a.generations());
  for (;;) {
    const auto x = a.PopDue(100), y = b.PopDue(100);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (!x) break;
    EXPECT_EQ(Order({*x}), Order({*y}));
  }
}

}  // namespace
}  // namespace arbiter::driver
