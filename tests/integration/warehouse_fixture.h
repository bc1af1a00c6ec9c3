// A generated ledger for the warehouse tests and benchmarks: `workloads` workloads over `hours`
// hours from 2026-03-01, cpu + memory (+ GPUs on every 4th, MIG on every 7th, lost-work credits on
// every 5th), idle capacity rows, and two PriceBook versions (the second takes effect mid-day,
// 2026-03-02T06:00Z, and spreads idle cost by weight).
#pragma once

#include <string>
#include <vector>

#include "adapters/sqlite/ledger.h"
#include "core/billing/invoice.h"

namespace arbiter::testing {

inline constexpr Millis kWarehouseStart = 1772323200000;  // 2026-03-01T00:00:00Z

inline std::vector<PriceBook> WarehouseBooks() {
  PriceBook a;
  a.meta.name = "std";
  a.currency = "CNY";
  a.effective_from = kWarehouseStart - 86400000;
  a.prices = {{"cpu", Decimal::FromUnits(50000000)},
              {"memory", Decimal::FromUnits(10000000)},
              {"nvidia.com/gpu", Decimal::FromInt(7)}};
  a.gpu_models = {{"NVIDIA-H100-80GB-HBM3", Decimal::FromInt(14)}};
  a.namespace_modes = {{"ns-1", BillingMode::kUsage}};
  PriceBook b = a;
  b.effective_from = kWarehouseStart + 30 * 3600000LL;
  b.prices["cpu"] = Decimal::FromUnits(60000000);
  b.share_idle = IdleSharing::kWeighted;
  b.mode = BillingMode::kBlended;
  return {a, b};
}

inline std::vector<billing::RunSegment> WarehouseSegments(int workloads, int hours) {
  std::vector<billing::RunSegment> segs;
  const Millis end = kWarehouseStart + static_cast<Millis>(hours) * 3600000;
  for (int i = 0; i < workloads; ++i) {
    billing::RunSegment s;
    s.namespace_ = "ns-" + std::to_string(i % 3);
    s.workload = s.namespace_ + "/w" + std::to_string(i);
    s.node = "node-" + std::to_string(i % 5);
    s.start = kWarehouseStart + (i % 11) * 137000;
    s.end = end - (i % 7) * 61000;
    s.requests.Set("cpu", 1000 + 250 * (i % 8));
    s.requests.Set("memory", (int64_t{1} << 30) * (1 + i % 4));
    s.usage.Set("cpu", 300 + 100 * (i % 9));
    s.usage.Set("memory", (int64_t{1} << 29) * (1 + i % 5));
    if (i % 4 == 0) {
      s.gpu_product = "NVIDIA-H100-80GB-HBM3";
      s.requests.Set("nvidia.com/gpu", 1000);
      s.usage.Set("nvidia.com/gpu", 600);
    } else if (i % 7 == 0) {
      s.gpu_product = "NVIDIA-A100-SXM4-80GB";
      s.requests.Set("nvidia.com/mig-1g.10gb", 2);
    }
    if (i % 5 == 0 && s.end - s.start > 7200000)
      s.lost = billing::LostWork{s.end - 5400000, s.end - 600000, "ns-2/urgent"};
    segs.push_back(std::move(s));
  }
  return segs;
}

// Meters the segments (30 s scrapes), adds idle rows of five 64-core nodes, writes everything to
// `ledger` and seals every hour before `seal`.
inline Status WriteWarehouseLedger(sqlite::Ledger& ledger, int workloads, int hours, Millis seal) {
  auto segs = WarehouseSegments(workloads, hours);
  auto metered = billing::MeterSegments(segs, {});
  if (!metered.ok()) return metered.status();
  std::vector<billing::HourlyRow> rows = std::move(metered).value();
  std::vector<billing::NodeCapacity> nodes;
  for (int n = 0; n < 5; ++n) {
    billing::NodeCapacity c;
    c.node = "node-" + std::to_string(n);
    c.allocatable.Set("cpu", 64000);
    c.allocatable.Set("memory", int64_t{512} << 30);
    c.from = kWarehouseStart;
    c.to = kWarehouseStart + static_cast<Millis>(hours) * 3600000;
    nodes.push_back(c);
  }
  auto idle = billing::IdleRows(nodes, segs, kWarehouseStart,
                                kWarehouseStart + static_cast<Millis>(hours) * 3600000);
  if (!idle.ok()) return idle.status();
  rows.insert(rows.end(), idle->begin(), idle->end());
  billing::Rollup(&rows);
  auto cat = billing::PriceCatalog::Create(WarehouseBooks());
  if (!cat.ok()) return cat.status();
  auto st = ledger.Write(rows, *cat, seal);
  return st.ok() ? Status::Ok() : st.status();
}

}  // namespace arbiter::testing
