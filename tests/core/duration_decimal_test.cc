#include <gtest/gtest.h>

#include "core/decimal.h"
#include "core/duration.h"
#include "core/instant_text.h"

namespace arbiter {
namespace {

TEST(DurationTest, ParsesGoDurations) {
  EXPECT_EQ(*ParseDuration("90s"), 90000);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400000);
  EXPECT_EQ(*ParseDuration("500ms"), 500);
  EXPECT_EQ(*ParseDuration("1.5h"), 5400000);
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_EQ(*ParseDuration("0s"), 0);
  EXPECT_EQ(*ParseDuration("2m0.5s"), 120500);
  EXPECT_EQ(*ParseDuration("1000us"), 1);
}

TEST(DurationTest, RejectsBadDurations) {
  for (const char* t : {"", "30", "1x", "h", "1.2.3s", "1s2", "0.0001s", "1us", "s30"})
    EXPECT_FALSE(ParseDuration(t).ok()) << t;
}

// Regression (new-user trial): `5` was refused without saying what to write instead.
TEST(DurationTest, MissingUnitSuggestsOne) {
  auto msg = [](const char* t) {
    auto r = ParseDuration(t);
    EXPECT_FALSE(r.ok()) << t;
    return r.ok() ? std::string() : r.message();
  };
  EXPECT_NE(msg("5").find("duration \"5\" has no unit: did you mean 5s?"), std::string::npos)
      << msg("5");
  EXPECT_NE(msg("1.5").find("did you mean 1.5s?"), std::string::npos) << msg("1.5");
  EXPECT_NE(msg("-5").find("did you mean -5s?"), std::string::npos) << msg("-5");
  EXPECT_NE(msg("1h30").find("did you mean 1h30m?"), std::string::npos) << msg("1h30");
  EXPECT_NE(msg("2m30").find("did you mean 2m30s?"), std::string::npos) << msg("2m30");
  EXPECT_NE(msg("1s500").find("did you mean 1s500ms?"), std::string::npos) << msg("1s500");
  EXPECT_NE(msg("5 s").find("did you mean 5s?"), std::string::npos) << msg("5 s");
  // Every suggestion parses.
  for (const char* t : {"5", "1.5", "1h30", "2m30", "1s500", "5 s"}) {
    const std::string m = msg(t);
    const size_t at = m.find("did you mean ");
    ASSERT_NE(at, std::string::npos) << m;
    const std::string guess = m.substr(at + 13, m.find('?', at) - at - 13);
    EXPECT_TRUE(ParseDuration(guess).ok()) << t << " -> " << guess;
  }
  EXPECT_EQ(msg("5 x").find("did you mean"), std::string::npos) << msg("5 x");
}

TEST(DurationTest, FormatsShortest) {
  EXPECT_EQ(FormatDuration(5400000), "1h30m");
  EXPECT_EQ(FormatDuration(90000), "1m30s");
  EXPECT_EQ(FormatDuration(500), "500ms");
  EXPECT_EQ(FormatDuration(1500), "1.5s");
  EXPECT_EQ(FormatDuration(0), "0s");
}

TEST(TimestampTest, Rfc3339) {
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339("2026-01-01T00:00:00Z"), 1767225600000);
  EXPECT_EQ(*ParseRfc3339("2026-01-01T08:00:00+08:00"), 1767225600000);
  EXPECT_EQ(*ParseRfc3339("2026-01-01T00:00:00.250Z"), 1767225600250);
  EXPECT_FALSE(ParseRfc3339("2026-02-30T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-01-01").ok());
  EXPECT_EQ(FormatRfc3339(1767225600000), "2026-01-01T00:00:00Z");
}

TEST(TimestampTest, CalendarMonths) {
  auto t = [](const char* text) { return *ParseRfc3339(text); };
  EXPECT_EQ(MonthStartOf(t("2026-02-28T23:59:59.999Z")), t("2026-02-01T00:00:00Z"));
  EXPECT_EQ(MonthStartOf(t("2026-03-01T00:00:00Z")), t("2026-03-01T00:00:00Z"));
  EXPECT_EQ(NextMonthStart(t("2026-02-01T00:00:00Z")), t("2026-03-01T00:00:00Z"));
  EXPECT_EQ(NextMonthStart(t("2026-12-31T23:00:00Z")), t("2027-01-01T00:00:00Z"));
  EXPECT_EQ(NextMonthStart(t("2028-02-10T00:00:00Z")), t("2028-03-01T00:00:00Z"));
  EXPECT_EQ(MonthStartOf(t("1969-12-31T12:00:00Z")), t("1969-12-01T00:00:00Z"));
}

// Regression: the daemon's pending messages printed a wall-clock instant as a duration
// ("cannot be preempted before 498926h...").
TEST(InstantTextTest, VirtualClockAsOffsetWallClockAsDate) {
  EXPECT_EQ(FormatInstant(900000), "15m");
  EXPECT_EQ(FormatInstant(0), "0s");
  EXPECT_EQ(FormatInstant(1767225600000), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatInstant(kWallClockFrom), "2000-01-01T00:00:00Z");
}

TEST(DecimalTest, ExactParseAndFormat) {
  EXPECT_EQ(Decimal::Parse("7.00")->ToString(), "7");
  EXPECT_EQ(Decimal::Parse("0.05")->ToString(), "0.05");
  EXPECT_EQ(Decimal::Parse("-1.5")->ToFixed(6), "-1.500000");
  EXPECT_FALSE(Decimal::Parse("0.0000000001").ok());
  EXPECT_FALSE(Decimal::Parse("1e3").ok());
  EXPECT_FALSE(Decimal::Parse("abc").ok());
  EXPECT_EQ(Decimal::Parse("0.1234565")->RoundHalfUp(6).ToFixed(6), "0.123457");
  EXPECT_EQ(Decimal::Parse("-0.1234565")->RoundHalfUp(6).ToFixed(6), "-0.123457");
  EXPECT_EQ(Decimal::Parse("0.1234564")->RoundHalfUp(6).ToFixed(6), "0.123456");
  EXPECT_EQ((*Decimal::Parse("0.1") + *Decimal::Parse("0.2")), *Decimal::Parse("0.3"));
}

}  // namespace
}  // namespace arbiter
