#include "core/billing/ledger_store.h"

#include <algorithm>

#include "core/duration.h"

namespace arbiter::billing {

Result<std::vector<Invoice>> StoreInvoices(LedgerStore& store,
                                           const std::optional<std::string>& namespace_,
                                           std::optional<Millis> from, std::optional<Millis> to) {
  auto books = store.PriceBooks();
  if (!books.ok()) return books.status();
  if (books->empty())
    return Result<std::vector<Invoice>>::Error(store.Describe() + " has no PriceBook");
  bool spread = false;
  SpanQuery q;
  for (const PriceBook& b : *books) {
    spread |= b.share_idle != IdleSharing::kNone;
    if ((!from || b.effective_from > *from) && (!to || b.effective_from < *to))
      q.cuts.push_back(b.effective_from);
  }
  std::sort(q.cuts.begin(), q.cuts.end());
  q.cuts.erase(std::unique(q.cuts.begin(), q.cuts.end()), q.cuts.end());
  auto cat = PriceCatalog::Create(std::move(*books));
  if (!cat.ok()) return cat.status();
  if (!spread) q.namespace_ = namespace_;
  q.from = from;
  q.to = to;
  auto spans = store.ReadSpans(q);
  if (!spans.ok()) return spans.status();
  InvoiceOptions opts;
  opts.from = from;
  opts.to = to;
  auto invs = BuildInvoicesFromSpans(*spans, *cat, opts);
  if (!invs.ok() || !spread || !namespace_) return invs;
  std::vector<Invoice> one;
  for (auto& inv : *invs)
    if (inv.namespace_ == *namespace_) one.push_back(std::move(inv));
  return one;
}

MonthPlan PlanWholeMonths(const SpanQuery& q) {
  MonthPlan p;
  if (q.from) p.first = MonthStartOf(*q.from) == *q.from ? *q.from : NextMonthStart(*q.from);
  if (q.to) p.end = MonthStartOf(*q.to);
  p.any = !(p.first && p.end && *p.first >= *p.end);
  if (!p.any) return p;
  p.before = q.from && *q.from < *p.first;
  p.after = q.to && *q.to > *p.end;
  for (Millis c : q.cuts) {
    const Millis m = MonthStartOf(c);
    if (c != m && (!p.first || m >= *p.first) && (!p.end || m < *p.end) &&
        std::find(p.split.begin(), p.split.end(), m) == p.split.end())
      p.split.push_back(m);
  }
  return p;
}

std::vector<RowSpan> SpansOfRows(std::vector<HourlyRow> rows, const std::vector<Millis>& cuts) {
  auto piece = [&](Millis h) {
    return std::upper_bound(cuts.begin(), cuts.end(), h) - cuts.begin();
  };
  std::vector<RowSpan> out;
  for (HourlyRow& r : rows) {
    if (!out.empty()) {
      RowSpan& s = out.back();
      HourlyRow& a = s.sum;
      if (a.namespace_ == r.namespace_ && a.workload == r.workload && a.resource == r.resource &&
          a.gpu_product == r.gpu_product && a.gpu_replicas == r.gpu_replicas && a.kind == r.kind &&
          a.preemptor == r.preemptor && piece(a.hour) == piece(r.hour)) {
        a.AddQuantities(r);
        s.last_hour = std::max(s.last_hour, r.hour);
        continue;
      }
    }
    Millis h = r.hour;
    out.push_back({std::move(r), h});
  }
  return out;
}

}  // namespace arbiter::billing
