#include "sim/billing_bridge.h"

#include <iterator>

#include "adapters/report/invoice_json.h"
#include "core/billing/rating.h"
#include "core/gpu_sharing.h"

namespace arbiter::sim {

Millis DefaultEpoch(const ManifestSet& m) {
  std::optional<Millis> e;
  for (const auto& b : m.price_books) e = e ? std::min(*e, b.effective_from) : b.effective_from;
  return e.value_or(1767225600000);  // 2026-01-01T00:00:00Z
}

std::vector<billing::RunSegment> SegmentsOf(const SimResult& r, Millis epoch) {
  std::vector<billing::RunSegment> out;
  for (const auto& run : r.engine->runs()) {
    if (run.end <= run.start) continue;  // held nothing for any time
    billing::RunSegment s;
    const engine::Workload& w = r.engine->workloads()[run.workload];
    s.workload = w.key;
    s.namespace_ = w.namespace_;
    s.priority = w.priority;
    s.node = run.node;
    s.gpu_product = run.gpu_product;
    s.gpu_replicas = run.gpu_replicas;
    s.requests = w.requests;
    s.usage = w.usage;
    s.start = epoch + run.start;
    s.end = epoch + run.end;
    if (run.lost_from && run.lost_to > *run.lost_from)
      s.lost = billing::LostWork{epoch + *run.lost_from, epoch + run.lost_to, run.preemptor};
    out.push_back(std::move(s));
  }
  return out;
}

Result<SimBill> BillSimulation(const ManifestSet& m, const SimResult& r, Millis epoch) {
  SimBill bill;
  if (m.price_books.empty()) return bill;
  auto fail = [](const std::string& msg) { return Result<SimBill>::Error("billing: " + msg); };
  auto segments = SegmentsOf(r, epoch);
  billing::MeterConfig cfg;
  cfg.scrape_interval = r.engine->policy().scrape_interval;
  auto catalog = billing::PriceCatalog::Create(m.price_books);
  if (!catalog.ok()) return fail(catalog.message());
  // Hours are whole: the window covers every hour the pool existed in; NodeCapacity from/to
  // keep the partial first and last hours of idle capacity exact.
  constexpr Millis kHour = billing::kHourMs;
  const Millis end = epoch + r.end_time;
  bill.from = billing::HourOf(epoch);
  bill.to = std::max(bill.from, billing::HourOf(end) == end ? end : billing::HourOf(end) + kHour);
  // The idle capacity's rows first (they need the segments), then the tenants' rows into one
  // vector sized for both; the segments go as soon as both are done.
  std::vector<billing::HourlyRow> idle_rows;
  if (r.end_time > 0) {
    std::vector<billing::NodeCapacity> nodes;
    for (const auto& n : m.nodes) {
      billing::NodeCapacity c;
      c.node = n.meta.name;
      auto p = n.meta.labels.find("nvidia.com/gpu.product");
      if (p != n.meta.labels.end()) c.gpu_product = p->second;
      c.gpu_replicas = GpuReplicasOf(n.meta.labels);
      c.allocatable = n.allocatable.empty() ? n.capacity : n.allocatable;
      const NodeWindow in = NodeWindowOf(n, r.end_time);  // idle only while the node is in the pool
      if (in.to <= in.from) continue;
      c.from = epoch + in.from;
      c.to = epoch + in.to;
      nodes.push_back(std::move(c));
    }
    auto idle = billing::IdleRows(nodes, segments, bill.from, bill.to);
    if (!idle.ok()) return fail(idle.message());
    idle_rows = std::move(idle).value();
  }
  if (Status s = billing::MeterSegmentsInto(segments, cfg, &bill.rows, idle_rows.size()); !s.ok())
    return fail(s.message());
  segments = {};
  if (!idle_rows.empty()) {
    std::move(idle_rows.begin(), idle_rows.end(), std::back_inserter(bill.rows));
    idle_rows = {};
    billing::Rollup(&bill.rows);
  }
  billing::InvoiceOptions opts;
  opts.from = bill.from;
  opts.to = bill.to;
  opts.low_coverage_permille = cfg.low_coverage_permille;
  auto invs = billing::BuildInvoices(bill.rows, *catalog, opts);
  if (!invs.ok()) return fail(invs.message());
  for (auto& inv : *invs) {
    if (inv.namespace_ == billing::kIdleNamespace) bill.idle = std::move(inv);
    else bill.invoices.push_back(std::move(inv));
  }
  return bill;
}

nlohmann::json BillJson(const SimBill& bill) {
  std::vector<billing::Invoice> all = bill.invoices;
  if (bill.idle) all.push_back(*bill.idle);
  return report::InvoicesToJson(all);
}

}  // namespace arbiter::sim
