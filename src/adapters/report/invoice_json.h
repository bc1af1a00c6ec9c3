// JSON for billing: invoices in the SimulationReport `invoices[]` shape (BRIEF §5), and run
// segments as JSON objects / JSON Lines (the input of `arbiter invoice ingest`).
//
// Invoice JSON: namespace, currency, lines[] (resource, unit, requestQuantity, usageQuantity,
// billedQuantity, unitPrice, amount, plus kind, mode, priceBook, priceSource, gpuModel, migRule,
// migFraction, cardPrice, gpuReplicas, preemptor, requestAmount, usageAmount, provenance),
// requestTotal, usageTotal, total, plus creditTotal, from, to, priceBooks, digest, provenance[].
// IdleShare lines (PriceBook shareIdle) carry idleShare {rule, idleAmount, weight, totalWeight}; an
// invoice with any has idleShareTotal (on "__idle__": the part spread to tenants). Money and
// quantities are exact decimal strings; amounts and totals have exactly 6 decimals.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/billing/invoice.h"
#include "core/billing/run_segment.h"

namespace arbiter::report {

nlohmann::json InvoiceToJson(const billing::Invoice& inv);
// The same object without `provenance` (one entry per workload and resource: writers of very
// large reports stream those with ProvenanceToJson).
nlohmann::json InvoiceHeadToJson(const billing::Invoice& inv);
nlohmann::json ProvenanceToJson(const billing::Provenance& p);
nlohmann::json InvoicesToJson(const std::vector<billing::Invoice>& invoices);

// {"workload":"ns/name","namespace":"ns","priority":5000,"node":"n1","gpuProduct":"...",
//  "gpuReplicas":4 (node label nvidia.com/gpu.replicas; optional, default 1),
//  "requests":{"cpu":"16","memory":"64Gi"},"usage":{"cpu":"4"},
//  "start":"2026-01-01T00:00:00Z" (or Unix ms),"end":...,
//  "lost":{"from":...,"to":...,"preemptor":"ns/name"}}
// `namespace` defaults to the part of `workload` before '/', `usage` to `requests`.
nlohmann::json SegmentToJson(const billing::RunSegment& s);
Result<billing::RunSegment> SegmentFromJson(const nlohmann::json& j);
// One segment per non-empty line. Errors say FILE:LINE.
Result<std::vector<billing::RunSegment>> ReadSegmentsJsonl(const std::string& path);

// A PriceBook written as JSON with the manifest's shape ({"metadata":{"name":..},"spec":{..}}),
// for tools that have no YAML at hand. One object or an array of them.
Result<std::vector<PriceBook>> PriceBooksFromJson(const nlohmann::json& j);
// The inverse: PriceBooksFromJson(PriceBookToJson(b)) gives back b (billing fields).
nlohmann::json PriceBookToJson(const PriceBook& b);

// Seconds with up to 3 decimals from milliseconds ("20", "0.5").
std::string SecondsText(Millis ms);

}  // namespace arbiter::report
