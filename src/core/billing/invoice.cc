#include "core/billing/invoice.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/billing/sha256.h"
#include "core/gpu_sharing.h"

namespace arbiter::billing {
namespace {

struct LineKey {
  RowKind kind;
  std::string resource;
  std::string product;
  int64_t replicas;
  int book;
  std::string preemptor;
  bool operator<(const LineKey& o) const {
    return std::tie(kind, resource, product, replicas, book, preemptor) <
           std::tie(o.kind, o.resource, o.product, o.replicas, o.book, o.preemptor);
  }
};

struct LineAcc {
  InvoiceLine line;
  bool gpu = false;
  std::string last_workload;
  bool any = false;
};

struct NsAcc {
  std::map<LineKey, LineAcc> lines;
  // Per (workload, resource), in that order: the rows come sorted (SortedView), so entries are
  // appended, a million workloads' provenance without a map.
  std::deque<Provenance> prov;
  std::shared_ptr<std::deque<std::string>> names = std::make_shared<std::deque<std::string>>();
  Millis min_hour = INT64_MAX, max_hour = INT64_MIN;
};

bool Matches(const LineKey& k, const HourlyRow& r, int book) {
  return k.book == book && k.kind == r.kind && k.resource == r.resource &&
         k.product == r.gpu_product && k.replicas == r.gpu_replicas && k.preemptor == r.preemptor;
}

std::string Line(const InvoiceLine& l) {
  std::string s = "line ";
  s += ToString(l.kind);
  for (const std::string* f : {&l.resource, &l.unit, &l.gpu_product, &l.price_book, &l.preemptor}) {
    s += "|";
    s += *f;
  }
  if (l.gpu_replicas != 1) s += "|replicas=" + std::to_string(l.gpu_replicas);
  s += "|" + std::string(ToString(l.mode)) + "|" + I128ToString(l.request_raw) + "|" +
       I128ToString(l.usage_raw) + "|" + I128ToString(l.billed_num) + "/" +
       I128ToString(l.billed_den) + "|" + I128ToString(l.price.num) + "/" +
       I128ToString(l.price.den) + "|" + l.price.source + "|" + l.amount.ToFixed(kAmountDigits) +
       "|" + l.request_amount.ToFixed(kAmountDigits) + "|" + l.usage_amount.ToFixed(kAmountDigits) +
       "|" + std::to_string(l.samples) + "|" + std::to_string(l.covered_ms) + "|" +
       std::to_string(l.run_ms) + "|" + std::to_string(l.workloads);
  if (l.share_rule)
    s += "|share " + std::string(ToString(*l.share_rule)) + " " + I128ToString(l.share_weight) +
         "/" + I128ToString(l.share_weight_total) + " of " + l.idle_amount.ToFixed(kAmountDigits);
  return s + "\n";
}

Status Finalize(const std::string& ns, NsAcc& acc, const PriceCatalog& catalog,
                const InvoiceOptions& opts, Invoice* inv) {
  inv->namespace_ = ns;
  inv->from = opts.from ? *opts.from : acc.min_hour;
  inv->to = opts.to ? *opts.to : acc.max_hour + kHourMs;
  for (auto& [key, la] : acc.lines) {
    const PriceBook& b = catalog.books()[static_cast<size_t>(key.book)];
    if (inv->currency.empty()) inv->currency = b.currency;
    if (b.currency != inv->currency)
      return Status::Error("namespace " + ns +
                           ": PriceBooks in the window use different currencies (" + inv->currency +
                           ", " + b.currency + ")");
    InvoiceLine& l = la.line;
    MeterUnit unit = MeterUnitOf(l.resource, l.gpu_replicas);
    l.unit = unit.unit;
    l.request_quantity = QuantityOf(l.request_raw, 1, unit.divisor);
    l.usage_quantity = QuantityOf(l.usage_raw, 1, unit.divisor);
    l.billed_quantity = QuantityOf(l.billed_num, l.billed_den, unit.divisor);
    l.amount = AmountOf(l.billed_num, l.billed_den, l.price, unit.divisor, kAmountDigits);
    l.request_amount = AmountOf(l.request_raw, 1, l.price, unit.divisor, kAmountDigits);
    l.usage_amount = AmountOf(l.usage_raw, 1, l.price, unit.divisor, kAmountDigits);
    inv->total += l.amount;
    inv->request_total += l.request_amount;
    inv->usage_total += l.usage_amount;
    if (l.kind == RowKind::kCredit) inv->credit_total += l.amount;
    inv->lines.push_back(std::move(l));
  }
  if (inv->currency.empty() && acc.min_hour != INT64_MAX)  // no lines (only disabled credits)
    if (const PriceBook* b = catalog.At(acc.min_hour)) inv->currency = b->currency;
  std::vector<int> books;
  for (const auto& [key, la] : acc.lines) books.push_back(key.book);
  std::sort(books.begin(), books.end());
  books.erase(std::unique(books.begin(), books.end()), books.end());
  for (int b : books)
    inv->price_books.push_back(PriceBookId(catalog.books()[static_cast<size_t>(b)]));
  for (Provenance& p : acc.prov) {
    p.low_coverage = p.covered_ms * 1000 < p.run_ms * opts.low_coverage_permille;
    p.usage_from_request = p.samples == 0 && p.covered_ms > 0;
  }
  inv->provenance = std::move(acc.prov);
  inv->names = std::move(acc.names);
  return Status::Ok();
}

// The digest covers the canonical invoice and the full text of every PriceBook version used,
// not only its id.
void Digest(const PriceCatalog& catalog, Invoice* inv) {
  Sha256 hash;  // over the text as it is written, never held whole
  inv->WriteCanonical([&](std::string_view piece) { hash.Update(piece); });
  for (const std::string& id : inv->price_books)
    for (const PriceBook& b : catalog.books())
      if (PriceBookId(b) == id) hash.Update(CanonicalPriceBook(b));
  inv->digest = "sha256:" + hash.HexDigest();
}

// Accumulates the rows (sorted by HourlyRow::KeyLess) into per-namespace accumulators.
// Rows in key order; for spans of summed rows (RowSpan) `lasts` holds each one's last hour (its
// `hour` is the first), for plain rows it is empty. Kept apart so that the common case moves
// one pointer per row.
struct RowView {
  std::vector<const HourlyRow*> rows;
  std::vector<Millis> lasts;
};

// The provenance entry of r's workload and resource in ns (`prov`: the previous row's); a new
// one after the last when r starts another.
Provenance* ProvenanceFor(NsAcc* ns, const HourlyRow& r, Provenance* prov) {
  if (prov && prov->workload == r.workload && prov->resource == r.resource) return prov;
  auto& v = ns->prov;
  if (!v.empty() && v.back().workload == r.workload && v.back().resource == r.resource)
    return &v.back();
  ARB_CHECK_MSG(v.empty() || std::tie(v.back().workload, v.back().resource) <
                                 std::tie(r.workload, r.resource),
                "invoice rows must come sorted by workload and resource");
  // The workload's name once: its other resources' entries view the same string.
  const std::string_view name = !v.empty() && v.back().workload == r.workload
                                    ? v.back().workload
                                    : std::string_view(ns->names->emplace_back(r.workload));
  v.emplace_back();
  v.back().workload = name;
  v.back().resource = r.resource;
  return &v.back();
}

// The line of ns that r adds to under PriceBook `b` (at index `book`), made and priced when it is
// first met.
LineAcc* LineFor(NsAcc* ns, const HourlyRow& r, const PriceBook& b, int book,
                 std::optional<BillingMode> force_mode, const LineKey** line_key) {
  LineKey k{r.kind, r.resource, r.gpu_product, r.gpu_replicas, book, r.preemptor};
  auto [it, inserted] = ns->lines.try_emplace(std::move(k));
  LineAcc* line = &it->second;
  *line_key = &it->first;
  if (inserted) {
    InvoiceLine& l = line->line;
    l.kind = r.kind;
    l.resource = r.resource;
    l.gpu_product = r.gpu_product;
    l.gpu_replicas = r.gpu_replicas;
    l.price_book = PriceBookId(b);
    l.preemptor = r.preemptor;
    l.mode = force_mode ? *force_mode : ModeFor(b, r.namespace_);
    l.price = ResolvePrice(b, r.resource, r.gpu_product, r.gpu_replicas);
    l.billed_den = l.mode == BillingMode::kBlended ? Decimal::kOne : 1;
    line->gpu = MeterUnitOf(r.resource).gpu;
  }
  return line;
}

// Adds r to its line: its raw request and usage and its billed amount (taken off for a credit),
// its samples and times, and its workload when it is another.
void AddToLine(LineAcc* line, const HourlyRow& r, const PriceBook& b) {
  InvoiceLine& l = line->line;
  Billed billed = BilledOf(r, l.mode, b.blended_request_weight, line->gpu);
  const int sign = r.kind == RowKind::kCredit ? -1 : 1;
  l.request_raw += sign * r.request_raw;
  l.usage_raw += sign * r.usage_raw;
  l.billed_num += sign * billed.num;
  l.samples += r.samples;
  l.covered_ms += r.covered_ms;
  l.run_ms += r.run_ms;
  if (!line->any || line->last_workload != r.workload) {
    ++l.workloads;
    line->last_workload = r.workload;
    line->any = true;
  }
}

Status Accumulate(const RowView& view, const PriceCatalog& catalog, const InvoiceOptions& opts,
                  std::optional<BillingMode> force_mode, std::map<std::string, NsAcc>* out) {
  NsAcc* ns = nullptr;
  const std::string* ns_name = nullptr;
  Millis cached_hour = INT64_MIN;
  int book = -1;
  LineAcc* line = nullptr;
  const LineKey* line_key = nullptr;
  Provenance* prov = nullptr;
  bool idle_ns = false;
  const bool spans = !view.lasts.empty();
  for (size_t i = 0; i < view.rows.size(); ++i) {
    const HourlyRow& r = *view.rows[i];
    const Millis last = spans ? view.lasts[i] : r.hour;
    if (opts.from && r.hour < *opts.from) continue;
    if (opts.to && r.hour >= *opts.to) continue;
    if (!ns_name || *ns_name != r.namespace_) {
      ns = &(*out)[r.namespace_];
      ns_name = &r.namespace_;
      idle_ns = r.namespace_ == kIdleNamespace;
      line = nullptr;
      prov = nullptr;
    }
    if (r.hour != cached_hour) {
      cached_hour = r.hour;
      book = catalog.IndexAt(r.hour);
      if (book < 0)
        return Status::Error("no PriceBook is in force at " + FormatRfc3339(r.hour) + " (hour of " +
                             r.workload + " " + r.resource + "); the earliest takes effect at " +
                             FormatRfc3339(catalog.books().front().effective_from));
    }
    if (spans && last != r.hour)
      ARB_CHECK_MSG(last > r.hour && catalog.IndexAt(last) == book && (!opts.to || last < *opts.to),
                    "a row span crosses a PriceBook version or the invoice window");
    const PriceBook& b = catalog.books()[static_cast<size_t>(book)];
    ns->min_hour = std::min(ns->min_hour, r.hour);
    ns->max_hour = std::max(ns->max_hour, last);
    if (r.kind == RowKind::kUsage && !idle_ns) {
      prov = ProvenanceFor(ns, r, prov);
      prov->samples += r.samples;
      prov->covered_ms += r.covered_ms;
      prov->run_ms += r.run_ms;
    }
    if (r.kind == RowKind::kCredit && b.preemption_credit == CreditPolicy::kNone) continue;
    if (!line || !Matches(*line_key, r, book))
      line = LineFor(ns, r, b, book, force_mode, &line_key);
    AddToLine(line, r, b);
  }
  return Status::Ok();
}

RowView SortedView(const std::vector<HourlyRow>& rows) {
  RowView v;
  v.rows.reserve(rows.size());
  bool sorted = true;
  for (size_t i = 0; i < rows.size(); ++i) {
    v.rows.push_back(&rows[i]);
    if (i > 0 && sorted && HourlyRow::KeyLess(rows[i], rows[i - 1])) sorted = false;
  }
  if (!sorted)
    std::stable_sort(v.rows.begin(), v.rows.end(), [](const HourlyRow* a, const HourlyRow* b) {
      return HourlyRow::KeyLess(*a, *b);
    });
  return v;
}

RowView SortedView(const std::vector<RowSpan>& spans) {
  std::vector<const RowSpan*> order;
  order.reserve(spans.size());
  for (const RowSpan& s : spans) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const RowSpan* a, const RowSpan* b) {
    return HourlyRow::KeyLess(a->sum, b->sum);
  });
  RowView v;
  v.rows.reserve(order.size());
  v.lasts.reserve(order.size());
  for (const RowSpan* s : order) {
    v.rows.push_back(&s->sum);
    v.lasts.push_back(s->last_hour);
  }
  return v;
}

Result<std::vector<Invoice>> BuildFrom(const RowView& view, const PriceCatalog& catalog,
                                       const InvoiceOptions& opts) {
  std::map<std::string, NsAcc> acc;
  if (Status s = Accumulate(view, catalog, opts, std::nullopt, &acc); !s.ok()) return s;
  std::vector<Invoice> out;
  for (auto& [ns, a] : acc) {
    Invoice inv;
    if (Status s = Finalize(ns, a, catalog, opts, &inv); !s.ok()) return s;
    out.push_back(std::move(inv));
  }
  SpreadIdle(&out, catalog);
  for (Invoice& inv : out) Digest(catalog, &inv);
  return out;
}

}  // namespace

std::string Invoice::Canonical() const {
  std::string s;
  WriteCanonical([&](std::string_view piece) { s += piece; });
  return s;
}

void Invoice::WriteCanonical(const std::function<void(std::string_view)>& out) const {
  constexpr size_t kPiece = 64 << 10;
  std::string s = "arbiter-invoice v1\nnamespace " + namespace_ + "\ncurrency " + currency +
                  "\nwindow " + std::to_string(from) + " " + std::to_string(to) + "\n";
  for (const std::string& id : price_books) s += "uses " + id + "\n";
  for (const InvoiceLine& l : lines) s += Line(l);
  // Appended in place: a provenance line per workload and resource, a million for a large run.
  for (const Provenance& p : provenance) {
    if (s.size() >= kPiece) {
      out(s);
      s.clear();
    }
    s += "provenance ";
    s += p.workload;
    s += '|';
    s += p.resource;
    s += '|';
    s += std::to_string(p.samples);
    s += '|';
    s += std::to_string(p.covered_ms);
    s += '|';
    s += std::to_string(p.run_ms);
    s += p.low_coverage ? "|low" : "|ok";
    s += p.usage_from_request ? "|usage=request\n" : "\n";
  }
  s += "total " + total.ToFixed(kAmountDigits) + " request " +
       request_total.ToFixed(kAmountDigits) + " usage " + usage_total.ToFixed(kAmountDigits) + "\n";
  if (!idle_share_total.is_zero())
    s += "idle share " + idle_share_total.ToFixed(kAmountDigits) + "\n";
  out(s);
}

struct InvoiceBuilder::Open {
  std::map<std::string, NsAcc> acc;
};

InvoiceBuilder::InvoiceBuilder(const PriceCatalog& catalog, InvoiceOptions opts)
    : catalog_(catalog), opts_(std::move(opts)) {}
InvoiceBuilder::InvoiceBuilder(InvoiceBuilder&&) noexcept = default;
InvoiceBuilder::~InvoiceBuilder() = default;

Status InvoiceBuilder::Add(const std::vector<HourlyRow>& rows) {
  Open acc;
  if (Status s = Accumulate(SortedView(rows), catalog_, opts_, std::nullopt, &acc.acc); !s.ok())
    return s;
  return Close(acc);
}

// Accumulate carries a namespace's lines and provenance over from one call to the next (it
// appends to what `acc` holds), so the parts add up to the union; its sort check holds across the
// parts.
Status InvoiceBuilder::AddPart(const std::vector<HourlyRow>& rows) {
  if (!open_) open_ = std::make_unique<Open>();
  return Accumulate(SortedView(rows), catalog_, opts_, std::nullopt, &open_->acc);
}

Status InvoiceBuilder::EndParts() {
  if (!open_) return Status::Ok();
  std::unique_ptr<Open> acc = std::move(open_);
  return Close(*acc);
}

Status InvoiceBuilder::Close(Open& open) {
  for (auto& [ns, a] : open.acc) {
    for (const Invoice& done : invoices_)
      if (done.namespace_ == ns)
        return Status::Error("invoice builder: the rows of namespace " + ns + " came in two parts");
    Invoice inv;
    if (Status s = Finalize(ns, a, catalog_, opts_, &inv); !s.ok()) return s;
    invoices_.push_back(std::move(inv));
  }
  return Status::Ok();
}

Status InvoiceBuilder::Absorb(InvoiceBuilder&& other) {
  if (Status s = other.EndParts(); !s.ok()) return s;
  for (const Invoice& inv : other.invoices_)
    for (const Invoice& done : invoices_)
      if (done.namespace_ == inv.namespace_)
        return Status::Error("invoice builder: the rows of namespace " + inv.namespace_ +
                             " came in two parts");
  for (Invoice& inv : other.invoices_) invoices_.push_back(std::move(inv));
  other.invoices_.clear();
  return Status::Ok();
}

Result<std::vector<Invoice>> InvoiceBuilder::Finish() {
  if (Status s = EndParts(); !s.ok()) return s;
  std::vector<Invoice> out = std::move(invoices_);
  invoices_.clear();
  std::sort(out.begin(), out.end(),
            [](const Invoice& a, const Invoice& b) { return a.namespace_ < b.namespace_; });
  SpreadIdle(&out, catalog_);
  for (Invoice& inv : out) Digest(catalog_, &inv);
  return out;
}

Result<std::vector<Invoice>> BuildInvoices(const std::vector<HourlyRow>& rows,
                                           const PriceCatalog& catalog,
                                           const InvoiceOptions& opts) {
  return BuildFrom(SortedView(rows), catalog, opts);
}

Result<std::vector<Invoice>> BuildInvoicesFromSpans(const std::vector<RowSpan>& spans,
                                                    const PriceCatalog& catalog,
                                                    const InvoiceOptions& opts) {
  return BuildFrom(SortedView(spans), catalog, opts);
}

Result<std::vector<Invoice>> InvoiceSegments(const std::vector<RunSegment>& segments,
                                             const std::vector<PriceBook>& books,
                                             const MeterConfig& cfg, const InvoiceOptions& opts) {
  if (books.empty()) return std::vector<Invoice>{};
  auto rows = MeterSegments(segments, cfg);
  if (!rows.ok()) return rows.status();
  auto cat = PriceCatalog::Create(books);
  if (!cat.ok()) return cat.status();
  InvoiceOptions o = opts;
  o.low_coverage_permille = cfg.low_coverage_permille;
  return BuildInvoices(*rows, *cat, o);
}

namespace {
// (node, resource, hour) of IdleRows' requested amounts.
struct UsedKey {
  std::string_view node, resource;
  Millis hour;
  bool operator==(const UsedKey&) const = default;
};
struct UsedKeyHash {
  size_t operator()(const UsedKey& k) const {
    size_t h = std::hash<std::string_view>{}(k.node);
    h = h * 1000003 ^ std::hash<std::string_view>{}(k.resource);
    return h * 1000003 ^ std::hash<Millis>{}(k.hour);
  }
};
}  // namespace

Result<std::vector<HourlyRow>> IdleRows(const std::vector<NodeCapacity>& nodes,
                                        const std::vector<RunSegment>& segments, Millis from,
                                        Millis to) {
  return IdleRows(
      nodes, segments.size(),
      [&segments](size_t i) {
        const RunSegment& s = segments[i];
        return IdleUse{s.node, &s.requests, s.start, s.end};
      },
      from, to);
}

Result<std::vector<HourlyRow>> IdleRows(const std::vector<NodeCapacity>& nodes, size_t uses,
                                        const std::function<IdleUse(size_t)>& use, Millis from,
                                        Millis to) {
  if (to < from) return Result<std::vector<HourlyRow>>::Error("idle window ends before it starts");
  // Requested raw per (node, resource, hour), from the uses (a hash map of views into them:
  // a million runs' keys are not copied).
  std::unordered_map<UsedKey, i128, UsedKeyHash> used;
  for (size_t i = 0; i < uses; ++i) {
    const IdleUse s = use(i);
    Millis a0 = std::max(s.start, from), b0 = std::min(s.end, to);
    for (const auto& [res, amount] : s.requests->entries()) {
      if (!IsMeteredResource(res)) continue;
      for (Millis a = a0; a < b0;) {
        Millis h = HourOf(a), e = std::min(b0, h + kHourMs);
        used[UsedKey{s.node, res, h}] += static_cast<i128>(amount) * (e - a);
        a = e;
      }
    }
  }
  std::vector<HourlyRow> rows;
  size_t bound = 0;  // one row per node, metered resource and hour: reserved, never regrown
  for (const NodeCapacity& n : nodes) {
    Millis a0 = std::max(n.from, from), b0 = std::min(n.to, to);
    if (b0 <= a0) continue;
    size_t res = 0;
    for (const auto& [k, v] : n.allocatable.entries()) res += IsMeteredResource(k);
    bound += res * static_cast<size_t>((HourOf(b0 - 1) - HourOf(a0)) / kHourMs + 1);
  }
  rows.reserve(bound);
  for (const NodeCapacity& n : nodes) {
    Millis a0 = std::max(n.from, from), b0 = std::min(n.to, to);
    for (const auto& [res, amount] : n.allocatable.entries()) {
      if (!IsMeteredResource(res)) continue;
      for (Millis a = a0; a < b0;) {
        Millis h = HourOf(a), e = std::min(b0, h + kHourMs);
        HourlyRow& r = rows.emplace_back();
        r.namespace_ = kIdleNamespace;
        r.workload = n.node;
        r.resource = res;
        r.gpu_product = MeterUnitOf(res).gpu ? n.gpu_product : std::string();
        r.gpu_replicas = IsGpuReplicaResource(res) ? n.gpu_replicas : 1;
        r.hour = h;
        i128 cap = static_cast<i128>(amount) * (e - a);
        auto it = used.find(UsedKey{n.node, res, h});
        i128 idle = cap - (it == used.end() ? 0 : it->second);
        r.request_raw = r.max_raw = idle > 0 ? idle : 0;
        r.run_ms = e - a;
        a = e;
      }
    }
  }
  Rollup(&rows);
  return rows;
}

Result<Invoice> BuildIdleInvoice(const std::vector<NodeCapacity>& nodes,
                                 const std::vector<RunSegment>& segments,
                                 const PriceCatalog& catalog, Millis from, Millis to) {
  auto rows = IdleRows(nodes, segments, from, to);
  if (!rows.ok()) return rows.status();
  std::map<std::string, NsAcc> acc;
  InvoiceOptions opts;
  opts.from = from;
  opts.to = to;
  if (Status s = Accumulate(SortedView(*rows), catalog, opts, BillingMode::kRequest, &acc); !s.ok())
    return s;
  Invoice inv;
  inv.namespace_ = std::string(kIdleNamespace);
  inv.from = from;
  inv.to = to;
  if (acc.empty()) return inv;
  if (Status s = Finalize(inv.namespace_, acc.begin()->second, catalog, opts, &inv); !s.ok())
    return s;
  Digest(catalog, &inv);
  return inv;
}

void SpreadIdle(std::vector<Invoice>* invoices, const PriceCatalog& catalog) {
  Invoice* idle = nullptr;
  std::vector<Invoice*> tenants;
  for (Invoice& inv : *invoices) {
    if (inv.namespace_ == kIdleNamespace)
      idle = &inv;
    else
      tenants.push_back(&inv);
  }
  if (!idle || tenants.empty()) return;
  for (const InvoiceLine& il : idle->lines) {
    if (il.kind != RowKind::kUsage || il.amount.units() <= 0) continue;
    const PriceBook* book = nullptr;
    for (const PriceBook& b : catalog.books())
      if (PriceBookId(b) == il.price_book) book = &b;
    if (!book || book->share_idle == IdleSharing::kNone) continue;
    // Weights per tenant (Decimal units of billed cost, or 1 each), in namespace order.
    std::vector<i128> weight(tenants.size(), 0);
    i128 total = 0;
    for (size_t t = 0; t < tenants.size(); ++t) {
      for (const InvoiceLine& l : tenants[t]->lines) {
        if (l.kind != RowKind::kUsage || l.price_book != il.price_book) continue;
        if (book->share_idle == IdleSharing::kEven)
          weight[t] = 1;
        else if (l.resource == il.resource)
          weight[t] += l.amount.units();
      }
      if (weight[t] < 0) weight[t] = 0;
      total += weight[t];
    }
    if (total == 0) continue;  // nobody to carry it: stays on the idle invoice
    // Largest-remainder apportionment of the amount in millionths.
    constexpr i128 kMicro = Decimal::kOne / 1000000;
    const i128 amount = il.amount.units() / kMicro;
    std::vector<i128> share(tenants.size()), rem(tenants.size());
    i128 given = 0;
    for (size_t t = 0; t < tenants.size(); ++t) {
      MulDivRem(amount, weight[t], total, &share[t], &rem[t]);
      given += share[t];
    }
    std::vector<size_t> order;
    for (size_t t = 0; t < tenants.size(); ++t)
      if (weight[t] > 0) order.push_back(t);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rem[a] > rem[b]; });
    for (size_t k = 0; given < amount; ++k, ++given) ++share[order[k % order.size()]];
    for (size_t t = 0; t < tenants.size(); ++t) {
      if (weight[t] == 0) continue;
      InvoiceLine l;
      l.kind = RowKind::kIdleShare;
      l.resource = il.resource;
      l.unit = il.unit;
      l.gpu_product = il.gpu_product;
      l.gpu_replicas = il.gpu_replicas;
      l.price_book = il.price_book;
      l.mode = BillingMode::kRequest;
      l.price = il.price;
      l.share_rule = book->share_idle;
      l.idle_amount = il.amount;
      l.share_weight = weight[t];
      l.share_weight_total = total;
      l.amount = l.request_amount = l.usage_amount = Decimal::FromUnits(share[t] * kMicro);
      Invoice& inv = *tenants[t];
      inv.total += l.amount;
      inv.request_total += l.amount;
      inv.usage_total += l.amount;
      inv.idle_share_total += l.amount;
      idle->idle_share_total += l.amount;
      inv.lines.push_back(std::move(l));
    }
  }
}

}  // namespace arbiter::billing
