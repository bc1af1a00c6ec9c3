// The dashboard's history on disk (server/dashboard/history_store.h): samples as JSON and back,
// and DIR/history.db keeping the newest samples up to the ring's capacity across reopenings.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "server/cluster_fixtures.h"
#include "server/dashboard/history_store.h"
#include "server/serve_process.h"

namespace arbiter::server::dashboard {
namespace {

using fixtures::kT0;

// A sample with every field set (MIG capacity, an idle GPU model, a quota with and one without
// max, an infinite-looking fair share).
Sample Full(int64_t seq, Millis time) {
  Sample s;
  s.seq = seq;
  s.time = time;
  s.pool.allocated = {{"cpu", 1500}, {"nvidia.com/gpu", 0}};
  s.pool.used = {{"memory", int64_t{1} << 40}};
  s.pool.capacity = {{"nvidia.com/mig-1g.10gb", 14}};
  s.pool.idle_gpu_milli = {{"", 500}, {"NVIDIA-A100-SXM4-80GB", 3000}};
  QuotaState a;
  a.quota = "team-a-quota";
  a.cohort = "pool";
  a.used = {{"nvidia.com/gpu", 2000}};
  a.min = {{"nvidia.com/gpu", 4000}};
  a.max = ResourceList{{"nvidia.com/gpu", 8000}};
  a.lent = {{"nvidia.com/gpu", 1000}};
  a.fair_share = 375000;
  QuotaState b;
  b.used = {{"cpu", 1000}};
  b.borrowed = {{"cpu", 1000}};
  b.fair_share = INT64_MAX;
  s.tenants = {{"team-a", a}, {"team-b", b}};
  return s;
}

void ExpectSame(const Sample& a, const Sample& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.time, b.time);
  EXPECT_TRUE(a.pool == b.pool);
  EXPECT_TRUE(a.tenants == b.tenants);
}

TEST(DashboardHistoryStore, ASampleRoundTripsThroughItsJson) {
  const Sample s = Full(7, kT0);
  auto back = SampleFromJson(Json::parse(SampleToJson(s).dump()));
  ASSERT_TRUE(back.ok()) << back.message();
  ExpectSame(*back, s);
  EXPECT_TRUE(back->tenants.at("team-a").max.has_value());
  EXPECT_FALSE(back->tenants.at("team-b").max.has_value());
  Json wrong = SampleToJson(s);
  wrong["v"] = 2;
  EXPECT_FALSE(SampleFromJson(wrong).ok());
  wrong = SampleToJson(s);
  wrong["pool"]["used"]["cpu"] = "1";
  EXPECT_FALSE(SampleFromJson(wrong).ok());
}

TEST(DashboardHistoryStore, TheStoreKeepsTheNewestSamplesUpToTheCapacityAcrossReopenings) {
  const auto dir = arbiter::testing::ScratchDir("history-store").string();
  {
    auto store = HistoryStore::Open(dir, 3);
    ASSERT_TRUE(store.ok()) << store.message();
    EXPECT_TRUE((*store)->Load()->empty());
    ASSERT_TRUE((*store)->Write({Full(1, kT0), Full(2, kT0 + 1000)}).ok());
    ASSERT_TRUE((*store)->Write({Full(3, kT0 + 2000), Full(4, kT0 + 3000)}).ok());
  }
  auto again = HistoryStore::Open(dir, 3);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ((*again)->path(), dir + "/history.db");
  auto samples = (*again)->Load();
  ASSERT_TRUE(samples.ok()) << samples.message();
  ASSERT_EQ(samples->size(), 3u);  // 1 was deleted: beyond the capacity
  ExpectSame(samples->front(), Full(2, kT0 + 1000));
  ExpectSame(samples->back(), Full(4, kT0 + 3000));
  // A smaller capacity reads the newest only.
  auto small = HistoryStore::Open(dir, 1);
  ASSERT_TRUE(small.ok());
  ASSERT_EQ((*small)->Load()->size(), 1u);
  EXPECT_EQ((*small)->Load()->front().seq, 4);
}

// A write that cannot take the database (another writer holds it past the 5 s busy timeout)
// says so, naming the file, and leaves nothing of its batch behind; the next write goes through.
TEST(DashboardHistoryStore, AWriteThatFailsLeavesNothingOfItsBatch) {
  const auto dir = arbiter::testing::ScratchDir("history-store-busy").string();
  auto store = HistoryStore::Open(dir, 10);
  ASSERT_TRUE(store.ok()) << store.message();
  ASSERT_TRUE((*store)->Write({Full(1, kT0)}).ok());
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/history.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  const Status busy = (*store)->Write({Full(2, kT0 + 1000), Full(3, kT0 + 2000)});
  EXPECT_FALSE(busy.ok());
  EXPECT_NE(busy.message().find(dir + "/history.db"), std::string::npos) << busy.message();
  EXPECT_NE(busy.message().find("locked"), std::string::npos) << busy.message();
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  auto samples = (*store)->Load();
  ASSERT_TRUE(samples.ok()) << samples.message();
  ASSERT_EQ(samples->size(), 1u);
  ASSERT_TRUE((*store)->Write({Full(2, kT0 + 1000)}).ok());
  EXPECT_EQ((*store)->Load()->size(), 2u);
}

TEST(DashboardHistoryStore, ADirectoryThatCannotBeCreatedIsAnError) {
  const auto dir = arbiter::testing::ScratchDir("history-store-file");
  { std::ofstream(dir / "file") << "x"; }
  auto store = HistoryStore::Open((dir / "file" / "data").string(), 3);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.message().find("cannot create"), std::string::npos) << store.message();
}

}  // namespace
}  // namespace arbiter::server::dashboard
