// PoolPolicy preemption.requeuingStrategy (issue 29): the back-off's length as Kueue computes it
// (pkg/util/wait/backoff.go WaitTime, without its 0.01 % jitter; the cases of its
// backoff_test.go), and the field through commands (command 9; version-8 commands still read, as
// no back-off). The engine's hold is in commands_test.cc, scenario 171 shows it end to end.
#include <gtest/gtest.h>

#include "core/engine/engine.h"
#include "core/serial.h"

namespace arbiter::engine {
namespace requeue_backoff_test {

constexpr Millis kS = 1000;

TEST(RequeueBackoffTest, DoublesFromTheBaseUpToTheCap) {
  const PoolPolicy::RequeueBackoff kueue_default{60 * kS, 3600 * kS};
  const Millis want[] = {60, 120, 240, 480, 960, 1920, 3600, 3600};
  for (int n = 1; n <= 8; ++n)
    EXPECT_EQ(RequeueBackoffDelay(kueue_default, n), want[n - 1] * kS) << n;
  EXPECT_EQ(RequeueBackoffDelay(kueue_default, 1000), 3600 * kS);
  EXPECT_EQ(RequeueBackoffDelay(kueue_default, 0), 0);          // Kueue: iteration 0 waits 0
  EXPECT_EQ(RequeueBackoffDelay({1 * kS, 5 * kS}, 4), 5 * kS);  // Kueue's "caps at limit"
}

TEST(RequeueBackoffTest, AFirstWaitAboveTheCapIsTheBaseAsInKueue) {
  // wait.Backoff returns its duration before clamping the next one to the cap.
  EXPECT_EQ(RequeueBackoffDelay({100 * kS, 30 * kS}, 1), 100 * kS);
  EXPECT_EQ(RequeueBackoffDelay({100 * kS, 30 * kS}, 2), 30 * kS);
  EXPECT_EQ(RequeueBackoffDelay({0, 30 * kS}, 5), 0);
}

// immediateRequeues k: the first k preemptions wait 0, then Kueue's steps from the base.
TEST(RequeueBackoffTest, ImmediateRequeuesShiftTheStepsPastTheFirstPreemptions) {
  PoolPolicy::RequeueBackoff b{600 * kS, 14400 * kS};
  b.immediate = 1;
  const Millis want[] = {0, 600, 1200, 2400, 4800, 9600, 14400, 14400};
  for (int n = 1; n <= 8; ++n) EXPECT_EQ(RequeueBackoffDelay(b, n), want[n - 1] * kS) << n;
  b.immediate = 3;
  EXPECT_EQ(RequeueBackoffDelay(b, 3), 0);
  EXPECT_EQ(RequeueBackoffDelay(b, 4), 600 * kS);
  b.immediate = INT32_MAX;
  EXPECT_EQ(RequeueBackoffDelay(b, 1000), 0);
}

TEST(RequeueBackoffTest, NoCapDoublesUpToKueuesLimitWithoutOverflow) {
  constexpr Millis kNoCap = (INT64_MAX / 2) / 1000000;  // MaxInt64 / 2 ns, in ms
  EXPECT_EQ(RequeueBackoffDelay({60 * kS, 0}, 3), 240 * kS);
  EXPECT_EQ(RequeueBackoffDelay({60 * kS, 0}, 1000), kNoCap);
  EXPECT_EQ(RequeueBackoffDelay({kNoCap, 0}, 2), kNoCap);
}

TEST(RequeueBackoffTest, RoundTripsInCommandsAndVersion8StillReads) {
  PoolPolicy p;
  p.meta.name = "default";
  p.requeue_backoff = PoolPolicy::RequeueBackoff{0x0123456789ab, 0x0fedcba98765};
  auto c = DecodeCommand(EncodeCommand(Command{1, UpsertPoolPolicy{p}}));
  ASSERT_TRUE(c.ok()) << c.message();
  const auto& back = std::get<UpsertPoolPolicy>(c->op).policy.requeue_backoff;
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->base, 0x0123456789ab);
  EXPECT_EQ(back->max, 0x0fedcba98765);
  // Without the field, the policy ends with its absent optional (one 0 byte), then the version-14
  // submit limit (an int64 0): cut them and read the command as version 8.
  p.requeue_backoff.reset();
  auto body =
      serial::Unseal(EncodeCommand(Command{1, UpsertPoolPolicy{p}}), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string b = *body;
  ASSERT_EQ(b.substr(b.size() - 9), std::string(9, '\0'));
  b.resize(b.size() - 9);
  auto v8 = DecodeCommand(serial::Seal("command", 8, b));
  ASSERT_TRUE(v8.ok()) << v8.message();
  EXPECT_FALSE(std::get<UpsertPoolPolicy>(v8->op).policy.requeue_backoff.has_value());
  EXPECT_FALSE(DecodeCommand(serial::Seal("command", 9, b)).ok());  // read as 9: cut short
}

// immediateRequeues (command 10) round-trips; a version-9 command (base and max only, the last
// field of the policy) reads with none.
TEST(RequeueBackoffTest, ImmediateRequeuesRoundTripAndVersion9ReadsNone) {
  PoolPolicy p;
  p.meta.name = "default";
  p.requeue_backoff = PoolPolicy::RequeueBackoff{600000, 14400000};
  p.requeue_backoff->immediate = 0x01020304;
  auto c = DecodeCommand(EncodeCommand(Command{1, UpsertPoolPolicy{p}}));
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(std::get<UpsertPoolPolicy>(c->op).policy.requeue_backoff->immediate, 0x01020304);
  auto body =
      serial::Unseal(EncodeCommand(Command{1, UpsertPoolPolicy{p}}), "command", kCommandVersion);
  ASSERT_TRUE(body.ok()) << body.message();
  std::string b = *body;
  ASSERT_EQ(b.substr(b.size() - 8), std::string(8, '\0'));  // the version-14 submit limit, 0
  b.resize(b.size() - 8);
  ASSERT_EQ(b.substr(b.size() - 4), std::string("\x04\x03\x02\x01", 4));
  b.resize(b.size() - 4);
  auto v9 = DecodeCommand(serial::Seal("command", 9, b));
  ASSERT_TRUE(v9.ok()) << v9.message();
  const auto& back = std::get<UpsertPoolPolicy>(v9->op).policy.requeue_backoff;
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->base, 600000);
  EXPECT_EQ(back->max, 14400000);
  EXPECT_EQ(back->immediate, 0);
}

}  // namespace requeue_backoff_test
}  // namespace arbiter::engine
