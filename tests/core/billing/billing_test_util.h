// Helpers shared by the billing tests.
#pragma once

#include <string>

#include "core/billing/invoice.h"
#include "core/objects.h"

namespace arbiter::billing::testing {

inline constexpr Millis kEpoch = 1767225600000;  // 2026-01-01T00:00:00Z
inline constexpr Millis kSec = 1000;
inline constexpr Millis kMin = 60000;
inline constexpr Millis kHour = 3600000;

inline Decimal D(const char* s) { return *Decimal::Parse(s); }

inline PriceBook Book(std::string name = "standard", Millis from = kEpoch,
                      BillingMode mode = BillingMode::kMax) {
  PriceBook b;
  b.meta.name = std::move(name);
  b.currency = "CNY";
  b.effective_from = from;
  b.mode = mode;
  b.prices = {{"cpu", D("0.05")}, {"memory", D("0.01")}, {"nvidia.com/gpu", D("7.00")}};
  b.gpu_models = {{"NVIDIA-H100-80GB-HBM3", D("14.00")}};
  return b;
}

inline ResourceList Res(const std::string& text) {
  ResourceList r;
  size_t i = 0;
  while (i < text.size()) {
    size_t comma = text.find(',', i);
    std::string item = text.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    r.Set(name, *ParseResourceQuantity(name, item.substr(eq + 1)));
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return r;
}

inline RunSegment Seg(const std::string& workload, const std::string& req, const std::string& use,
                      Millis start, Millis end, const std::string& product = "") {
  RunSegment s;
  s.workload = workload;
  s.namespace_ = workload.substr(0, workload.find('/'));
  s.node = "node-1";
  s.gpu_product = product;
  s.requests = Res(req);
  s.usage = use.empty() ? s.requests : Res(use);
  s.start = start;
  s.end = end;
  return s;
}

inline Invoice InvoiceOf(const std::vector<RunSegment>& segs, std::vector<PriceBook> books,
                         Millis scrape = 30000) {
  MeterConfig cfg;
  cfg.scrape_interval = scrape;
  auto rows = MeterSegments(segs, cfg);
  if (!rows.ok()) ADD_FAILURE() << rows.message();
  auto cat = PriceCatalog::Create(std::move(books));
  if (!cat.ok()) ADD_FAILURE() << cat.message();
  auto inv = BuildInvoices(*rows, *cat);
  if (!inv.ok()) ADD_FAILURE() << inv.message();
  if (inv->size() != 1) ADD_FAILURE() << "expected one invoice, got " << inv->size();
  return inv->front();
}

inline const InvoiceLine* FindLine(const Invoice& inv, const std::string& resource,
                                   RowKind kind = RowKind::kUsage) {
  for (const auto& l : inv.lines)
    if (l.resource == resource && l.kind == kind) return &l;
  return nullptr;
}

}  // namespace arbiter::billing::testing
