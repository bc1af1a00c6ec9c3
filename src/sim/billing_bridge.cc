#include "sim/billing_bridge.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <string_view>
#include <thread>

#include "adapters/report/invoice_json.h"
#include "core/billing/rating.h"
#include "core/gpu_sharing.h"

namespace arbiter::sim {

Millis DefaultEpoch(const ManifestSet& m) {
  std::optional<Millis> e;
  for (const auto& b : m.price_books) e = e ? std::min(*e, b.effective_from) : b.effective_from;
  return e.value_or(1767225600000);  // 2026-01-01T00:00:00Z
}

namespace {

// The billing segment of one run record, or nothing when it held resources for no time.
std::optional<billing::RunSegment> SegmentOf(const driver::SimResult& r,
                                             const engine::RunRecord& run, Millis epoch) {
  if (run.end <= run.start) return std::nullopt;
  billing::RunSegment s;
  const driver::SimWorkload& w = r.workloads()[engine::Value(run.workload)];
  s.workload = w.key;
  s.namespace_ = w.namespace_;
  s.priority = w.priority;
  s.node = run.node;
  s.gpu_product = run.gpu_product;
  s.gpu_replicas = run.gpu_replicas;
  s.requests = w.requests;
  s.usage = w.Usage();
  s.start = epoch + run.start;
  s.end = epoch + run.end;
  if (run.lost_from && run.lost_to > *run.lost_from)
    s.lost = billing::LostWork{epoch + *run.lost_from, epoch + run.lost_to, run.preemptor};
  return s;
}

}  // namespace

std::vector<billing::RunSegment> SegmentsOf(const driver::SimResult& r, Millis epoch) {
  std::vector<billing::RunSegment> out;
  for (const auto& run : r.runs())
    if (auto s = SegmentOf(r, run, epoch)) out.push_back(std::move(*s));
  return out;
}

namespace {

// The pool's nodes as IdleRows takes them: their capacity while they are in the pool.
std::vector<billing::NodeCapacity> NodeCapacities(const ManifestSet& m, const driver::SimResult& r,
                                                  Millis epoch) {
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
  return nodes;
}

// One namespace's invoice from its runs (`runs[group[0..n)]`, reordered here), metered a part at
// a time into the reused row buffer: the runs in workload order, a part ending at a workload
// boundary once it holds `part_runs` runs. Memory: one part's segments and rows, not the
// namespace's (a third of a million workloads' rows are half a gigabyte).
Status BillNamespace(const driver::SimResult& r, const std::deque<engine::RunRecord>& runs,
                     size_t* group, size_t n, Millis epoch, const billing::MeterConfig& cfg,
                     size_t part_runs, std::vector<billing::HourlyRow>* rows,
                     billing::InvoiceBuilder* builder) {
  auto key_of = [&](size_t i) -> const std::string& {
    return r.workloads()[engine::Value(runs[i].workload)].key;
  };
  // Stable: a workload's runs keep their order. Sorted as (key, run) pairs side by side: a
  // comparison reads the two keys' bytes, not a run record and a workload first.
  {
    std::vector<std::pair<std::string_view, size_t>> keyed(n);
    for (size_t k = 0; k < n; ++k) keyed[k] = {key_of(group[k]), group[k]};
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < n; ++k) group[k] = keyed[k].second;
  }
  std::vector<billing::RunSegment> segments;
  for (size_t begin = 0; begin < n;) {
    size_t end = std::min(n, begin + std::max<size_t>(part_runs, 1));
    while (end < n && key_of(group[end]) == key_of(group[end - 1])) ++end;
    segments.clear();
    for (size_t k = begin; k < end; ++k)
      if (auto seg = SegmentOf(r, runs[group[k]], epoch)) segments.push_back(std::move(*seg));
    rows->clear();
    if (Status s = billing::MeterSegmentsInto(segments, cfg, rows); !s.ok()) return s;
    if (Status s = builder->AddPart(*rows); !s.ok()) return s;
    begin = end;
  }
  return builder->EndParts();
}

// The runs grouped by namespace in name order, each group in run order.
struct NamespaceGroups {
  std::vector<size_t> order;                      // run indices
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) of each namespace in `order`
};
NamespaceGroups RunsByNamespace(const driver::SimResult& r) {
  const auto& runs = r.runs();
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto ns_of = [&](size_t i) -> std::string_view {
    return r.workloads()[engine::Value(runs[i].workload)].namespace_;
  };
  // Runs grouped by namespace in name order, each group in run order: ranks of the few
  // namespaces, then a stable sort on integers (not a million string comparisons).
  std::map<std::string_view, size_t> ns_rank;
  for (size_t i : order) ns_rank.emplace(ns_of(i), 0);
  size_t next_rank = 0;
  for (auto& [ns, rank] : ns_rank) rank = next_rank++;
  std::vector<size_t> rank_of(runs.size());
  for (size_t i : order) rank_of[i] = ns_rank.find(ns_of(i))->second;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rank_of[a] < rank_of[b]; });
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && rank_of[order[j]] == rank_of[order[i]]) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  return {std::move(order), std::move(groups)};
}

// The idle capacity's rows added to `builder`: the status of computing them in `rows_status`, of
// adding them in `add_status`.
void BillIdle(const ManifestSet& m, const driver::SimResult& r, Millis epoch,
              const billing::InvoiceOptions& opts, billing::InvoiceBuilder* builder,
              Status* rows_status, Status* add_status) {
  if (r.end_time <= 0) return;
  // IdleRows reads a run's node, interval and requests only: the runs are read in place (a
  // million runs are not copied into segments for it).
  const auto& runs_held = r.runs();
  auto idle = billing::IdleRows(
      NodeCapacities(m, r, epoch), runs_held.size(),
      [&](size_t i) {
        const engine::RunRecord& run = runs_held[i];  // end <= start: no time, no use
        return billing::IdleUse{run.node, &r.workloads()[engine::Value(run.workload)].requests,
                                epoch + run.start, epoch + run.end};
      },
      *opts.from, *opts.to);
  if (!idle.ok())
    *rows_status = idle.status();
  else if (!idle->empty())
    *add_status = builder->Add(*idle);
}

// The namespace-at-a-time bill (no --ledger) on `threads` threads: the idle capacity and each
// namespace are one job; a thread takes the next job, meters it into its own reused row buffer
// and adds it to its own InvoiceBuilder (core functions on disjoint data, nothing shared but
// read-only inputs). The builders are combined and finished on the calling thread: invoices do
// not depend on which thread built them or when. Errors are those the one-thread order meets
// first: the idle rows, the namespaces in name order, then the idle invoice.
Status BillByNamespace(const ManifestSet& m, const driver::SimResult& r, Millis epoch,
                       const billing::MeterConfig& cfg, const billing::PriceCatalog& catalog,
                       const billing::InvoiceOptions& opts, int threads, size_t part_runs,
                       billing::InvoiceBuilder* out) {
  const auto& runs = r.runs();
  NamespaceGroups by_ns = RunsByNamespace(r);
  std::vector<size_t>& order = by_ns.order;  // each group reordered by its job
  const auto& groups = by_ns.groups;
  const size_t workers = static_cast<size_t>(std::max(1, threads));
  std::vector<billing::InvoiceBuilder> builders;
  builders.reserve(workers);
  for (size_t w = 0; w < workers; ++w) builders.emplace_back(catalog, opts);
  Status idle_rows_status = Status::Ok(), idle_add_status = Status::Ok();
  std::vector<Status> ns_status(groups.size(), Status::Ok());
  std::atomic<size_t> next_job{0};
  const size_t jobs = groups.size() + 1;  // 0: the idle capacity; 1..: the namespaces
  auto work = [&](size_t w) {
    billing::InvoiceBuilder& builder = builders[w];
    // The row buffer is reused from one namespace to the next: the memory of the largest
    // namespace's rows is faulted in once per thread, not once per namespace.
    std::vector<billing::HourlyRow> rows;
    for (size_t job; (job = next_job.fetch_add(1)) < jobs;) {
      if (job == 0) {
        BillIdle(m, r, epoch, opts, &builder, &idle_rows_status, &idle_add_status);
        continue;
      }
      const auto [from, to] = groups[job - 1];
      ns_status[job - 1] =
          BillNamespace(r, runs, &order[from], to - from, epoch, cfg, part_runs, &rows, &builder);
    }
  };
  {
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
  }
  if (!idle_rows_status.ok()) return idle_rows_status;
  for (const Status& s : ns_status)
    if (!s.ok()) return s;
  if (!idle_add_status.ok()) return idle_add_status;
  for (auto& b : builders)
    if (Status s = out->Absorb(std::move(b)); !s.ok()) return s;
  return Status::Ok();
}

}  // namespace

Result<SimBill> BillSimulation(const ManifestSet& m, const driver::SimResult& r, Millis epoch,
                               bool keep_rows, int threads, size_t part_runs) {
  SimBill bill;
  if (m.price_books.empty()) return bill;
  auto fail = [](const std::string& msg) { return Result<SimBill>::Error("billing: " + msg); };
  billing::MeterConfig cfg;
  cfg.scrape_interval = r.policy().scrape_interval;
  auto catalog = billing::PriceCatalog::Create(m.price_books);
  if (!catalog.ok()) return fail(catalog.message());
  // Hours are whole: the window covers every hour the pool existed in; NodeCapacity from/to
  // keep the partial first and last hours of idle capacity exact.
  constexpr Millis kHour = billing::kHourMs;
  const Millis end = epoch + r.end_time;
  bill.from = billing::HourOf(epoch);
  bill.to = std::max(bill.from, billing::HourOf(end) == end ? end : billing::HourOf(end) + kHour);
  billing::InvoiceOptions opts;
  opts.from = bill.from;
  opts.to = bill.to;
  opts.low_coverage_permille = cfg.low_coverage_permille;
  billing::InvoiceBuilder builder(*catalog, opts);
  if (keep_rows) {  // every row, for --ledger: meter all segments at once
    std::vector<billing::HourlyRow> idle_rows;
    {
      std::vector<billing::RunSegment> segments = SegmentsOf(r, epoch);
      if (r.end_time > 0) {
        auto idle = billing::IdleRows(NodeCapacities(m, r, epoch), segments, bill.from, bill.to);
        if (!idle.ok()) return fail(idle.message());
        idle_rows = std::move(idle).value();
      }
      if (Status s = billing::MeterSegmentsInto(segments, cfg, &bill.rows, idle_rows.size());
          !s.ok())
        return fail(s.message());
    }
    std::move(idle_rows.begin(), idle_rows.end(), std::back_inserter(bill.rows));
    idle_rows = {};
    billing::Rollup(&bill.rows);
    if (Status s = builder.Add(bill.rows); !s.ok()) return fail(s.message());
  } else if (Status s =
                 BillByNamespace(m, r, epoch, cfg, *catalog, opts, threads, part_runs, &builder);
             !s.ok()) {
    return fail(s.message());
  }
  auto invs = builder.Finish();
  if (!invs.ok()) return fail(invs.message());
  for (auto& inv : invs.value()) {
    if (inv.namespace_ == billing::kIdleNamespace)
      bill.idle = std::move(inv);
    else
      bill.invoices.push_back(std::move(inv));
  }
  return bill;
}

std::string BillText(const SimBill& bill, bool has_price_books) {
  std::string o;
  if (!bill.invoices.empty() || bill.idle)
    o += "  invoices cover " + FormatRfc3339(bill.from) + " .. " + FormatRfc3339(bill.to) + "\n";
  for (const auto& inv : bill.invoices)
    o += "  invoice " + inv.namespace_ + ": " + inv.total.ToFixed(6) + " " + inv.currency +
         " (request track " + inv.request_total.ToFixed(6) + ", usage track " +
         inv.usage_total.ToFixed(6) + ", credits " + inv.credit_total.ToFixed(6) + ")\n";
  if (bill.idle) {
    if (bill.idle->idle_share_total.is_zero())
      o += "  idle capacity (not billed): " + bill.idle->request_total.ToFixed(6) + " " +
           bill.idle->currency + "\n";
    else
      o += "  idle capacity: " + bill.idle->request_total.ToFixed(6) + " " + bill.idle->currency +
           ", of which " + bill.idle->idle_share_total.ToFixed(6) +
           " spread to tenants (PriceBook shareIdle)\n";
  }
  if (!has_price_books) o += "  no PriceBook: nothing billed\n";
  return o;
}

nlohmann::json BillJson(const SimBill& bill) {
  std::vector<billing::Invoice> all = bill.invoices;
  if (bill.idle) all.push_back(*bill.idle);
  return report::InvoicesToJson(all);
}

}  // namespace arbiter::sim
