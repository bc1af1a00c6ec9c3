// Data-driven invoices: every tests/data/billing/scenarios/*.json holds a PriceBook, run
// segments and the expected invoices (a subset of their JSON fields, lines in order). The files
// read as documentation: each explains its arithmetic in `description`.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "core/billing/invoice.h"

namespace arbiter::billing {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ARBITER_SOURCE_DIR) +
                                                           "/tests/data/billing/scenarios"))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Every field of `want` equals the same field of `got` (objects recursively, arrays by index and
// length).
void ExpectSubset(const nlohmann::json& want, const nlohmann::json& got, const std::string& where) {
  if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << where;
    for (auto it = want.begin(); it != want.end(); ++it) {
      ASSERT_TRUE(got.contains(it.key()))
          << where << "." << it.key() << " missing in " << got.dump();
      ExpectSubset(it.value(), got[it.key()], where + "." + it.key());
    }
  } else if (want.is_array()) {
    ASSERT_TRUE(got.is_array()) << where;
    ASSERT_EQ(want.size(), got.size()) << where << ": " << got.dump(1);
    for (size_t i = 0; i < want.size(); ++i)
      ExpectSubset(want[i], got[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(want, got) << where;
  }
}

TEST(BillingScenarioFiles, InvoicesMatchTheHandComputedExpectations) {
  auto files = ScenarioFiles();
  ASSERT_GE(files.size(), 3u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str());
    auto books = report::PriceBooksFromJson(j["priceBooks"]);
    ASSERT_TRUE(books.ok()) << books.message();
    std::vector<RunSegment> segs;
    for (const auto& s : j["segments"]) {
      auto seg = report::SegmentFromJson(s);
      ASSERT_TRUE(seg.ok()) << seg.message();
      segs.push_back(*seg);
    }
    MeterConfig cfg;
    cfg.scrape_interval = *ParseDuration(j["scrapeInterval"].get<std::string>());
    auto invs = InvoiceSegments(segs, *books, cfg);
    ASSERT_TRUE(invs.ok()) << invs.message();
    nlohmann::json got = report::InvoicesToJson(*invs);
    ExpectSubset(j["expect"], got, "invoices");
    // Total = sum of the rounded lines, always.
    for (const auto& inv : *invs) {
      Decimal sum;
      for (const auto& l : inv.lines) sum += l.amount;
      EXPECT_EQ(sum, inv.total);
    }
  }
}

}  // namespace
}  // namespace arbiter::billing

namespace arbiter::billing {
namespace {
TEST(InvoiceJson, SecondsTextIsTheDecimalTextOfTheMilliseconds) {
  for (Millis ms :
       {Millis{0}, Millis{1}, Millis{10}, Millis{100}, Millis{999}, Millis{1000}, Millis{1001},
        Millis{1010}, Millis{1500}, Millis{60000}, Millis{3599999}, Millis{-1}, Millis{-500},
        Millis{-1500}, Millis{-3000}, INT64_MAX, INT64_MIN, INT64_MIN + 1})
    EXPECT_EQ(report::SecondsText(ms),
              Decimal::FromUnits(static_cast<int128>(ms) * 1000000).ToString())
        << ms;
  EXPECT_EQ(report::SecondsText(1500), "1.5");
  EXPECT_EQ(report::SecondsText(-20), "-0.02");
  EXPECT_EQ(report::SecondsText(7000), "7");
}
}  // namespace
}  // namespace arbiter::billing
