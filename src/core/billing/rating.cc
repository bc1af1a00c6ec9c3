#include "core/billing/rating.h"

#include <algorithm>
#include <numeric>

#include "core/gpu_sharing.h"

namespace arbiter::billing {

std::string PriceBookId(const PriceBook& b) {
  return b.meta.name + "@" + FormatRfc3339(b.effective_from);
}

std::string CanonicalPriceBook(const PriceBook& b) {
  std::string s = "pricebook " + PriceBookId(b) + "\ncurrency " + b.currency + "\nmode " +
                  ToString(b.mode) + "\nblendedRequestWeight " +
                  b.blended_request_weight.ToString() + "\nmigRule " + ToString(b.mig_rule) +
                  "\npreemptionCredit " + ToString(b.preemption_credit) + "\n";
  for (const auto& [k, v] : b.prices) s += "price " + k + " " + v.ToString() + "\n";
  for (const auto& [k, v] : b.gpu_models) s += "gpuModel " + k + " " + v.ToString() + "\n";
  for (const auto& [k, v] : b.namespace_modes) s += "namespaceMode " + k + " " + ToString(v) + "\n";
  // Written only when set, so that the digests of books without it are unchanged.
  if (b.share_idle != IdleSharing::kNone)
    s += "shareIdle " + std::string(ToString(b.share_idle)) + "\n";
  return s;
}

Result<PriceCatalog> PriceCatalog::Create(std::vector<PriceBook> books) {
  if (books.empty()) return Result<PriceCatalog>::Error("no PriceBook: nothing to price with");
  std::sort(books.begin(), books.end(), [](const PriceBook& a, const PriceBook& b) {
    return a.effective_from != b.effective_from ? a.effective_from < b.effective_from
                                                : a.meta.name < b.meta.name;
  });
  for (size_t i = 0; i < books.size(); ++i) {
    const PriceBook& b = books[i];
    if (i > 0 && books[i - 1].effective_from == b.effective_from)
      return Result<PriceCatalog>::Error("PriceBooks " + books[i - 1].meta.name + " and " +
                                         b.meta.name + " take effect at the same time " +
                                         FormatRfc3339(b.effective_from));
    for (const auto* m : {&b.prices, &b.gpu_models})
      for (const auto& [k, v] : *m)
        if (v.negative() || v > Decimal::FromInt(1000000000))
          return Result<PriceCatalog>::Error("PriceBook " + b.meta.name + ": price of " + k + " (" +
                                             v.ToString() +
                                             ") must be between 0 and 1000000000 per unit-hour");
    if (b.blended_request_weight.negative() || b.blended_request_weight > Decimal::FromInt(1))
      return Result<PriceCatalog>::Error("PriceBook " + b.meta.name +
                                         ": blendedRequestWeight must be between 0 and 1");
  }
  PriceCatalog c;
  c.books_ = std::move(books);
  return c;
}

int PriceCatalog::IndexAt(Millis t) const {
  auto it = std::upper_bound(books_.begin(), books_.end(), t,
                             [](Millis v, const PriceBook& b) { return v < b.effective_from; });
  return static_cast<int>(it - books_.begin()) - 1;
}

const PriceBook* PriceCatalog::At(Millis t) const {
  int i = IndexAt(t);
  return i < 0 ? nullptr : &books_[static_cast<size_t>(i)];
}

BillingMode ModeFor(const PriceBook& b, std::string_view namespace_) {
  if (namespace_ == kIdleNamespace) return BillingMode::kRequest;  // capacity nobody requested
  auto it = b.namespace_modes.find(std::string(namespace_));
  return it == b.namespace_modes.end() ? b.mode : it->second;
}

namespace {

UnitPrice DirectPrice(std::string source, Decimal d) {
  UnitPrice p;
  p.num = d.units();
  p.den = 1;
  p.unit_price = d;
  p.source = std::move(source);
  return p;
}

// p's exact price num / den, reduced, and as a Decimal rounded half-up to 9 decimals.
void SetExactPrice(UnitPrice& p, i128 num, i128 den) {
  p.num = num;
  p.den = den;
  i128 g = std::gcd(p.num < 0 ? -p.num : p.num, p.den);
  if (g > 1) {
    p.num /= g;
    p.den /= g;
  }
  p.unit_price = Decimal::FromUnits(MulDivRoundHalfUp(p.num, 1, p.den));
}

// The card's price per GPU-hour: gpuModels[product], else gpuModels of the product without the
// device plugin's "-SHARED" suffix, else prices[nvidia.com/gpu]; *source says which.
std::optional<Decimal> CardPrice(const PriceBook& b, std::string_view gpu_product,
                                 std::string* source) {
  std::string_view unshared = gpu_product;
  if (unshared.ends_with(kSharedProductSuffix)) unshared.remove_suffix(kSharedProductSuffix.size());
  if (auto m = b.gpu_models.find(std::string(gpu_product));
      !gpu_product.empty() && m != b.gpu_models.end()) {
    *source = "gpuModels[" + std::string(gpu_product) + "]";
    return m->second;
  }
  if (auto u = b.gpu_models.find(std::string(unshared));
      unshared != gpu_product && !unshared.empty() && u != b.gpu_models.end()) {
    *source = "gpuModels[" + std::string(unshared) + "]";
    return u->second;
  }
  if (auto g = b.prices.find(std::string(kGpu)); g != b.prices.end()) {
    *source = "prices[nvidia.com/gpu]";
    return g->second;
  }
  return std::nullopt;
}

// One replica of a time-sliced / MPS card: card price / N per replica-hour, exact.
UnitPrice ReplicaPrice(Decimal card, const std::string& card_source, int64_t gpu_replicas) {
  UnitPrice p;
  SetExactPrice(p, card.units(), gpu_replicas);
  p.card_price = card;
  p.gpu_replicas = gpu_replicas;
  p.source = card_source + " / " + std::to_string(gpu_replicas) +
             (gpu_replicas == 1 ? " replica" : " replicas") + " (nvidia.com/gpu.replicas)";
  return p;
}

// A MIG instance priced from its card: the card's price × the MIG rule's fraction of the card
// (in 56ths: a seventh of the compute, an eighth of the memory), the profile looked up in the
// family of `gpu_product`.
UnitPrice MigPrice(const PriceBook& b, std::string_view resource, std::string_view gpu_product,
                   Decimal card, const std::string& card_source) {
  UnitPrice p;
  std::optional<MigProfile> prof;
  if (auto fam = GpuFamilyOfProduct(gpu_product)) prof = LookupMigProfile(resource, *fam);
  if (!prof) prof = LookupMigProfile(resource);
  if (!prof) {
    p.source = "unpriced (unknown MIG profile)";
    return p;
  }
  int64_t frac_num = 0;  // of 56
  switch (b.mig_rule) {
    case MigRule::kCompute:
      frac_num = 8 * prof->compute_slices;
      break;
    case MigRule::kMemory:
      frac_num = 7 * prof->memory_slices;
      break;
    case MigRule::kMax:
      frac_num = std::max(8 * prof->compute_slices, 7 * prof->memory_slices);
      break;
  }
  int64_t g = std::gcd(frac_num, int64_t{56});
  p.mig_fraction = std::to_string(frac_num / g) + "/" + std::to_string(56 / g);
  p.mig_rule = b.mig_rule;
  p.card_price = card;
  SetExactPrice(p, card.units() * frac_num, 56);
  p.source = card_source + " x " + p.mig_fraction + " (" + ToString(b.mig_rule) + " of " +
             prof->family + " " + prof->profile + ")";
  return p;
}

}  // namespace

UnitPrice ResolvePrice(const PriceBook& b, std::string_view resource, std::string_view gpu_product,
                       int64_t gpu_replicas) {
  const bool mig = IsMigResourceName(resource);
  const bool shared = resource == kGpuSharedResource;  // replicas renamed by the device plugin
  // prices[resource] wins for every resource but nvidia.com/gpu (priced by its card).
  if (auto direct = b.prices.find(std::string(resource));
      resource != kGpu && direct != b.prices.end())
    return DirectPrice("prices[" + std::string(resource) + "]", direct->second);
  UnitPrice unpriced;
  unpriced.source = "unpriced";
  if (!mig && !shared && resource != kGpu) return unpriced;
  std::string card_source;
  const std::optional<Decimal> card = CardPrice(b, gpu_product, &card_source);
  if (!card) return unpriced;
  if (!mig && (gpu_replicas > 1 || shared)) return ReplicaPrice(*card, card_source, gpu_replicas);
  if (!mig) return DirectPrice(card_source, *card);
  return MigPrice(b, resource, gpu_product, *card, card_source);
}

Billed BilledOf(const HourlyRow& row, BillingMode mode, Decimal w) {
  return BilledOf(row, mode, w, MeterUnitOf(row.resource).gpu);
}

Billed BilledOf(const HourlyRow& row, BillingMode mode, Decimal w, bool gpu) {
  switch (mode) {
    case BillingMode::kRequest:
      return {row.request_raw, 1};
    case BillingMode::kUsage:
      return {row.usage_raw, 1};
    case BillingMode::kMax:
      return {gpu ? row.request_raw : row.max_raw, 1};
    case BillingMode::kBlended:
      return {row.request_raw * w.units() + row.usage_raw * (Decimal::kOne - w.units()),
              Decimal::kOne};
  }
  return {row.request_raw, 1};
}

Decimal AmountOf(i128 raw_num, i128 raw_den, const UnitPrice& p, i128 divisor, int digits) {
  i128 step = 1;  // 10^(9 - digits)
  for (int k = digits; k < Decimal::kScale; ++k) step *= 10;
  i128 q = MulDivRoundHalfUp(raw_num, p.num, raw_den * p.den * divisor * 3600 * step);
  return Decimal::FromUnits(q * step);
}

Decimal QuantityOf(i128 raw_num, i128 raw_den, i128 divisor) {
  return Decimal::FromUnits(MulDivRoundHalfUp(raw_num, Decimal::kOne, raw_den * divisor));
}

RatedRow RateRow(const HourlyRow& row, const PriceCatalog& catalog) {
  RatedRow r;
  const PriceBook* b = catalog.At(row.hour);
  MeterUnit unit = MeterUnitOf(row.resource, row.gpu_replicas);
  if (!b) {
    r.billed_quantity = QuantityOf(row.request_raw, 1, unit.divisor);
    return r;
  }
  r.price_book = PriceBookId(*b);
  r.currency = b->currency;
  r.mode = ModeFor(*b, row.namespace_);
  Billed billed = BilledOf(row, r.mode, b->blended_request_weight);
  if (row.kind == RowKind::kCredit) {
    billed.num = b->preemption_credit == CreditPolicy::kNone ? 0 : -billed.num;
  }
  UnitPrice p = ResolvePrice(*b, row.resource, row.gpu_product, row.gpu_replicas);
  r.unit_price = p.unit_price;
  r.billed_quantity = QuantityOf(billed.num, billed.den, unit.divisor);
  r.amount = AmountOf(billed.num, billed.den, p, unit.divisor, 9);
  return r;
}

}  // namespace arbiter::billing
