// Rating: price book versions, the unit price of a resource, and the billed quantity of a mode.
//
// Money is exact: a price is Decimal (10^-9 units); an amount is
//   raw × price / (divisor × 3600)          (price per unit-hour, raw in unit × ms / divisor)
// computed with a 256-bit intermediate and rounded once, where a caller asks (invoice lines).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/billing/metering.h"
#include "core/objects.h"

namespace arbiter::billing {

// "name@2026-01-01T00:00:00Z": identifies one PriceBook version.
std::string PriceBookId(const PriceBook& b);
// Canonical text of every field that affects billing (input to invoice digests).
std::string CanonicalPriceBook(const PriceBook& b);

// PriceBook versions ordered by effectiveFrom. An hour is billed with the version in force at
// the start of the hour: the one with the latest effective_from <= hour start.
class PriceCatalog {
 public:
  // Fails on no books, two versions with the same effectiveFrom, a price outside
  // [0, 10^9] per unit-hour, or a blended weight outside [0, 1].
  static Result<PriceCatalog> Create(std::vector<PriceBook> books);
  const PriceBook* At(Millis t) const;  // nullptr when no version is in force yet
  int IndexAt(Millis t) const;          // -1 when none
  const std::vector<PriceBook>& books() const { return books_; }

 private:
  std::vector<PriceBook> books_;
};

// The namespace's mode; always Request for the idle pseudo-namespace.
BillingMode ModeFor(const PriceBook& b, std::string_view namespace_);

// The resolved price of one resource under one PriceBook version.
struct UnitPrice {
  // Exact price per unit-hour in Decimal units (10^-9): num / den. den is 1 except for MIG
  // instances priced from their card (den 56 before reduction).
  i128 num = 0;
  i128 den = 1;
  Decimal unit_price;  // num/den as a Decimal, rounded half-up to 9 decimals if inexact
  Decimal card_price;  // MIG from a card: the card's price per GPU-hour
  std::string source;  // "prices[cpu]", "gpuModels[NVIDIA-H100-80GB-HBM3]", "unpriced", ...
  std::optional<MigRule> mig_rule;  // set when priced from the card by the MIG rule
  std::string mig_fraction;         // "4/7": fraction of the card, reduced
  int64_t gpu_replicas = 1;  // nvidia.com/gpu on a time-sliced / MPS node: a replica is 1/N card
};
// cpu, memory and other resources: prices[resource]. nvidia.com/gpu: gpuModels[product], else
// prices["nvidia.com/gpu"]. MIG: prices[resource] if written, else the card price (as for
// nvidia.com/gpu) × the MIG rule's fraction (Compute g/7, Memory m/8, Max max(g/7, m/8)), the
// profile looked up in the family of `gpu_product`. A resource without a price costs 0 and says
// "unpriced" in `source`.
// Time-sliced / MPS GPUs: nvidia.com/gpu with gpu_replicas N > 1 costs the card price / N per
// replica-hour (card_price records the card). A product label with the device plugin's
// "-SHARED" suffix is priced as the product without it unless gpuModels names it.
UnitPrice ResolvePrice(const PriceBook& b, std::string_view resource, std::string_view gpu_product,
                       int64_t gpu_replicas = 1);

// Billed quantity of a row under a mode, as an exact fraction billed_num / billed_den of raw.
// Request: request. Usage: usage. Max: max track, but GPUs and MIG bill their request.
// Blended: w × request + (1 − w) × usage, with den = 10^9 (w is a Decimal).
struct Billed {
  i128 num = 0;
  i128 den = 1;
};
Billed BilledOf(const HourlyRow& row, BillingMode mode, Decimal blended_request_weight);
// The same with the resource's GPU-ness already known (MeterUnitOf(row.resource).gpu).
Billed BilledOf(const HourlyRow& row, BillingMode mode, Decimal blended_request_weight, bool gpu);

// amount = raw_num/raw_den × price / (divisor × 3600), rounded half-up to `digits` decimals.
Decimal AmountOf(i128 raw_num, i128 raw_den, const UnitPrice& p, i128 divisor, int digits);
// raw_num / (raw_den × divisor) rounded half-up to 9 decimals.
Decimal QuantityOf(i128 raw_num, i128 raw_den, i128 divisor);

// One hourly row rated under the version in force at its hour (for the ledger and exports).
struct RatedRow {
  std::string price_book;  // PriceBookId, "" when no version is in force
  std::string currency;
  BillingMode mode = BillingMode::kMax;
  Decimal billed_quantity;  // in the metering unit, 9 decimals
  Decimal unit_price;
  Decimal amount;  // 9 decimals; negative for credits. Invoices re-rate from raw, not from this.
};
RatedRow RateRow(const HourlyRow& row, const PriceCatalog& catalog);

}  // namespace arbiter::billing
