#include "adapters/report/invoice_json.h"

#include <climits>
#include <fstream>

#include "adapters/io/input_file.h"
#include "core/billing/metering.h"
#include "core/int128.h"
#include "core/text.h"

namespace arbiter::report {

using billing::Invoice;
using billing::InvoiceLine;
using billing::RunSegment;
using nlohmann::json;

// Decimal::FromUnits(ms * 10^6).ToString(), without 128-bit arithmetic: whole seconds, then the
// milliseconds with trailing zeros dropped. Called for every provenance element of a report.
std::string SecondsText(Millis ms) {
  if (ms == INT64_MIN) return Decimal::FromUnits(static_cast<int128>(ms) * 1000000).ToString();
  const Millis mag = ms < 0 ? -ms : ms;
  std::string s = ms < 0 ? "-" : "";
  s += std::to_string(mag / 1000);
  if (int frac = static_cast<int>(mag % 1000); frac != 0) {
    char digits[4] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                      static_cast<char>('0' + frac % 10), '\0'};
    int n = 3;
    while (digits[n - 1] == '0') --n;
    s += '.';
    s.append(digits, static_cast<size_t>(n));
  }
  return s;
}

namespace {
constexpr int kDigits = billing::kAmountDigits;

json LineToJson(const InvoiceLine& l) {
  json j = json::object();
  j["kind"] = billing::ToString(l.kind);
  j["resource"] = l.resource;
  j["unit"] = l.unit;
  j["requestQuantity"] = l.request_quantity.ToString();
  j["usageQuantity"] = l.usage_quantity.ToString();
  j["billedQuantity"] = l.billed_quantity.ToString();
  j["unitPrice"] = l.price.unit_price.ToString();
  j["amount"] = l.amount.ToFixed(kDigits);
  j["requestAmount"] = l.request_amount.ToFixed(kDigits);
  j["usageAmount"] = l.usage_amount.ToFixed(kDigits);
  j["mode"] = ToString(l.mode);
  j["priceBook"] = l.price_book;
  j["priceSource"] = l.price.source;
  if (!l.gpu_product.empty()) j["gpuModel"] = l.gpu_product;
  if (l.price.mig_rule) {
    j["migRule"] = ToString(*l.price.mig_rule);
    j["migFraction"] = l.price.mig_fraction;
    j["cardPrice"] = l.price.card_price.ToString();
  }
  if (l.gpu_replicas != 1) {
    j["gpuReplicas"] = l.gpu_replicas;
    j["cardPrice"] = l.price.card_price.ToString();
  }
  if (!l.preemptor.empty()) j["preemptor"] = l.preemptor;
  if (l.share_rule) {
    bool weighted = *l.share_rule == IdleSharing::kWeighted;
    auto w = [&](billing::i128 v) {
      return weighted ? Decimal::FromUnits(v).ToFixed(kDigits) : billing::I128ToString(v);
    };
    j["idleShare"] = {{"rule", ToString(*l.share_rule)},
                      {"idleAmount", l.idle_amount.ToFixed(kDigits)},
                      {"weight", w(l.share_weight)},
                      {"totalWeight", w(l.share_weight_total)}};
  }
  j["provenance"] = {{"samples", l.samples},
                     {"coveredSeconds", SecondsText(l.covered_ms)},
                     {"runSeconds", SecondsText(l.run_ms)},
                     {"workloads", l.workloads}};
  return j;
}
}  // namespace

json InvoiceHeadToJson(const Invoice& inv) {
  json j = json::object();
  j["namespace"] = inv.namespace_;
  j["currency"] = inv.currency;
  j["from"] = FormatRfc3339(inv.from);
  j["to"] = FormatRfc3339(inv.to);
  j["priceBooks"] = inv.price_books;
  json lines = json::array();
  for (const auto& l : inv.lines) lines.push_back(LineToJson(l));
  j["lines"] = std::move(lines);
  j["requestTotal"] = inv.request_total.ToFixed(kDigits);
  j["usageTotal"] = inv.usage_total.ToFixed(kDigits);
  j["creditTotal"] = inv.credit_total.ToFixed(kDigits);
  j["total"] = inv.total.ToFixed(kDigits);
  if (!inv.idle_share_total.is_zero()) j["idleShareTotal"] = inv.idle_share_total.ToFixed(kDigits);
  j["digest"] = inv.digest;
  return j;
}

json ProvenanceToJson(const billing::Provenance& p) {
  json j = {{"workload", p.workload},
            {"resource", p.resource},
            {"samples", p.samples},
            {"coveredSeconds", SecondsText(p.covered_ms)},
            {"runSeconds", SecondsText(p.run_ms)},
            {"lowCoverage", p.low_coverage}};
  if (p.usage_from_request) j["usageFromRequest"] = true;
  return j;
}

json InvoiceToJson(const Invoice& inv) {
  json j = InvoiceHeadToJson(inv);
  json prov = json::array();
  for (const auto& p : inv.provenance) prov.push_back(ProvenanceToJson(p));
  j["provenance"] = std::move(prov);
  return j;
}

json InvoicesToJson(const std::vector<Invoice>& invoices) {
  json a = json::array();
  for (const auto& inv : invoices) a.push_back(InvoiceToJson(inv));
  return a;
}

// ------------------------------------------------------------------ segments

json SegmentToJson(const RunSegment& s) {
  auto list = [](const ResourceList& r) {
    json o = json::object();
    for (const auto& [k, v] : r.entries()) o[k] = FormatResourceQuantity(k, v);
    return o;
  };
  json j = {
      {"workload", s.workload}, {"namespace", s.namespace_},       {"priority", s.priority},
      {"node", s.node},         {"gpuProduct", s.gpu_product},     {"requests", list(s.requests)},
      {"usage", list(s.usage)}, {"start", FormatRfc3339(s.start)}, {"end", FormatRfc3339(s.end)}};
  if (s.gpu_replicas != 1) j["gpuReplicas"] = s.gpu_replicas;
  if (s.usage_from_request) j["usageFromRequest"] = true;
  if (s.lost)
    j["lost"] = {{"from", FormatRfc3339(s.lost->from)},
                 {"to", FormatRfc3339(s.lost->to)},
                 {"preemptor", s.lost->preemptor}};
  return j;
}

namespace {

Result<Millis> TimeOf(const json& j, const std::string& field) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return Result<Millis>::Error(field + ": Unix milliseconds too large");
  if (j.is_number_integer()) return j.get<Millis>();
  if (j.is_string()) {
    auto t = ParseRfc3339(j.get<std::string>());
    if (!t.ok()) return Result<Millis>::Error(field + ": " + t.message());
    return t;
  }
  return Result<Millis>::Error(field + ": expected an RFC 3339 time or Unix milliseconds");
}

Result<ResourceList> ListOf(const json& j, const std::string& field) {
  if (!j.is_object())
    return Result<ResourceList>::Error(field + ": expected an object of quantities");
  ResourceList r;
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string text;
    if (it.value().is_string())
      text = it.value().get<std::string>();
    else if (it.value().is_number_integer())
      text = std::to_string(it.value().get<int64_t>());
    else
      return Result<ResourceList>::Error(field + "." + it.key() + ": expected a quantity string");
    auto q = ParseResourceQuantity(it.key(), text);
    if (!q.ok()) return Result<ResourceList>::Error(field + "." + it.key() + ": " + q.message());
    r.Set(it.key(), *q);
  }
  return r;
}

Result<std::string> StringOf(const json& j, const char* field, bool required) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) return Result<std::string>::Error(std::string(field) + ": required");
    return std::string();
  }
  if (!it->is_string())
    return Result<std::string>::Error(std::string(field) + ": expected a string");
  return it->get<std::string>();
}

}  // namespace

Result<RunSegment> SegmentFromJson(const json& j) {
  if (!j.is_object()) return Result<RunSegment>::Error("a segment must be a JSON object");
  RunSegment s;
  auto w = StringOf(j, "workload", true);
  if (!w.ok()) return w.status();
  s.workload = *w;
  auto ns = StringOf(j, "namespace", false);
  if (!ns.ok()) return ns.status();
  s.namespace_ = ns->empty() ? s.workload.substr(0, s.workload.find('/')) : *ns;
  if (s.workload.find('/') == std::string::npos)
    return Result<RunSegment>::Error("workload: expected namespace/name, got " +
                                     QuotedEcho(s.workload));
  auto node = StringOf(j, "node", false);
  if (!node.ok()) return node.status();
  s.node = *node;
  auto prod = StringOf(j, "gpuProduct", false);
  if (!prod.ok()) return prod.status();
  s.gpu_product = *prod;
  if (auto r = j.find("gpuReplicas"); r != j.end() && !r->is_null()) {
    if (!r->is_number_integer() || r->get<int64_t>() < 1)
      return Result<RunSegment>::Error(
          "gpuReplicas: expected a positive integer (nvidia.com/gpu.replicas of the node)");
    s.gpu_replicas = r->get<int64_t>();
  }
  if (auto u = j.find("usageFromRequest"); u != j.end() && !u->is_null()) {
    if (!u->is_boolean())
      return Result<RunSegment>::Error(
          "usageFromRequest: expected true or false (true: nothing measured the usage)");
    s.usage_from_request = u->get<bool>();
  }
  if (auto p = j.find("priority"); p != j.end()) {
    if (!p->is_number_integer() || (p->is_number_unsigned() && p->get<uint64_t>() > INT32_MAX) ||
        p->get<int64_t>() < INT32_MIN || p->get<int64_t>() > INT32_MAX)
      return Result<RunSegment>::Error(
          "priority: expected an integer between -2147483648 and 2147483647");
    s.priority = p->get<int32_t>();
  }
  auto req = j.find("requests");
  if (req == j.end()) return Result<RunSegment>::Error("requests: required");
  auto r = ListOf(*req, "requests");
  if (!r.ok()) return r.status();
  s.requests = *r;
  if (auto u = j.find("usage"); u != j.end() && !u->is_null()) {
    auto ul = ListOf(*u, "usage");
    if (!ul.ok()) return ul.status();
    s.usage = *ul;
  } else {
    s.usage = s.requests;
  }
  for (auto [field, dst] : {std::pair<const char*, Millis*>{"start", &s.start}, {"end", &s.end}}) {
    auto it = j.find(field);
    if (it == j.end()) return Result<RunSegment>::Error(std::string(field) + ": required");
    auto t = TimeOf(*it, field);
    if (!t.ok()) return t.status();
    *dst = *t;
  }
  if (auto l = j.find("lost"); l != j.end() && !l->is_null()) {
    if (!l->is_object()) return Result<RunSegment>::Error("lost: expected an object");
    billing::LostWork lw;
    for (auto [field, dst] : {std::pair<const char*, Millis*>{"from", &lw.from}, {"to", &lw.to}}) {
      auto it = l->find(field);
      if (it == l->end())
        return Result<RunSegment>::Error(std::string("lost.") + field + ": required");
      auto t = TimeOf(*it, std::string("lost.") + field);
      if (!t.ok()) return t.status();
      *dst = *t;
    }
    auto p = StringOf(*l, "preemptor", false);
    if (!p.ok()) return Result<RunSegment>::Error("lost." + p.message());
    lw.preemptor = *p;
    s.lost = lw;
  }
  if (Status st = billing::ValidateSegment(s); !st.ok()) return st;
  return s;
}

Result<std::vector<RunSegment>> ReadSegmentsJsonl(const std::string& path) {
  auto text = io::ReadInputFile(path, io::kSegmentsInput);
  if (!text.ok()) return text.status();
  const std::string name = io::InputName(path);
  std::vector<RunSegment> out;
  std::string_view rest = *text;
  int n = 0;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded())
      return Result<std::vector<RunSegment>>::Error(name + ":" + std::to_string(n) +
                                                    ": not valid JSON");
    auto s = SegmentFromJson(j);
    if (!s.ok())
      return Result<std::vector<RunSegment>>::Error(name + ":" + std::to_string(n) + ": " +
                                                    s.message());
    // Before anything is metered: a segment from year 0 would be 10^8 hours of rows.
    if (Status w = billing::CheckSegmentWindow(*s); !w.ok())
      return Result<std::vector<RunSegment>>::Error(name + ":" + std::to_string(n) + ": " +
                                                    w.message());
    out.push_back(std::move(s).value());
  }
  return out;
}

// ------------------------------------------------------------------ price books

namespace {

Result<BillingMode> ModeOf(const std::string& s) {
  if (s == "Request") return BillingMode::kRequest;
  if (s == "Usage") return BillingMode::kUsage;
  if (s == "Max") return BillingMode::kMax;
  if (s == "Blended") return BillingMode::kBlended;
  return Result<BillingMode>::Error("mode \"" + s +
                                    "\" is not one of Request, Usage, Max, Blended");
}

Result<Decimal> DecimalOf(const json& j, const std::string& field) {
  if (!j.is_string())
    return Result<Decimal>::Error(field + ": expected a decimal string such as \"0.05\"");
  auto d = Decimal::Parse(j.get<std::string>());
  if (!d.ok()) return Result<Decimal>::Error(field + ": " + d.message());
  return d;
}

Result<PriceBook> OneBook(const json& j) {
  if (!j.is_object()) return Result<PriceBook>::Error("a PriceBook must be a JSON object");
  PriceBook b;
  if (auto m = j.find("metadata"); m != j.end() && m->is_object())
    if (auto n = m->find("name"); n != m->end() && n->is_string())
      b.meta.name = n->get<std::string>();
  if (b.meta.name.empty()) return Result<PriceBook>::Error("metadata.name: required");
  const std::string who = "PriceBook " + b.meta.name + ": spec.";
  auto sit = j.find("spec");
  if (sit == j.end() || !sit->is_object())
    return Result<PriceBook>::Error(who.substr(0, who.size() - 1) + ": spec required");
  const json& s = *sit;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    if (k == "currency" && v.is_string()) {
      b.currency = v.get<std::string>();
    } else if (k == "effectiveFrom") {
      auto t = TimeOf(v, who + k);
      if (!t.ok()) return t.status();
      b.effective_from = *t;
    } else if (k == "mode" && v.is_string()) {
      auto m = ModeOf(v.get<std::string>());
      if (!m.ok()) return Result<PriceBook>::Error(who + k + ": " + m.message());
      b.mode = *m;
    } else if (k == "blendedRequestWeight") {
      auto d = DecimalOf(v, who + k);
      if (!d.ok()) return d.status();
      b.blended_request_weight = *d;
    } else if ((k == "prices" || k == "gpuModels") && v.is_object()) {
      for (auto p = v.begin(); p != v.end(); ++p) {
        auto d = DecimalOf(p.value(), who + k + "." + p.key());
        if (!d.ok()) return d.status();
        (k == "prices" ? b.prices : b.gpu_models)[p.key()] = *d;
      }
    } else if (k == "migRule" && v.is_string()) {
      std::string r = v.get<std::string>();
      if (r == "Compute")
        b.mig_rule = MigRule::kCompute;
      else if (r == "Memory")
        b.mig_rule = MigRule::kMemory;
      else if (r == "Max")
        b.mig_rule = MigRule::kMax;
      else
        return Result<PriceBook>::Error(who + k + ": \"" + r +
                                        "\" is not one of Compute, Memory, Max");
    } else if (k == "preemptionCredit" && v.is_string()) {
      std::string r = v.get<std::string>();
      if (r == "None")
        b.preemption_credit = CreditPolicy::kNone;
      else if (r == "LostWork")
        b.preemption_credit = CreditPolicy::kLostWork;
      else
        return Result<PriceBook>::Error(who + k + ": \"" + r + "\" is not one of None, LostWork");
    } else if (k == "shareIdle" && v.is_string()) {
      std::string r = v.get<std::string>();
      if (r == "None")
        b.share_idle = IdleSharing::kNone;
      else if (r == "Weighted")
        b.share_idle = IdleSharing::kWeighted;
      else if (r == "Even")
        b.share_idle = IdleSharing::kEven;
      else
        return Result<PriceBook>::Error(who + k + ": \"" + r +
                                        "\" is not one of None, Weighted, Even");
    } else if (k == "namespaceModes" && v.is_object()) {
      for (auto p = v.begin(); p != v.end(); ++p) {
        if (!p.value().is_string())
          return Result<PriceBook>::Error(who + k + "." + p.key() + ": expected a mode");
        auto m = ModeOf(p.value().get<std::string>());
        if (!m.ok()) return Result<PriceBook>::Error(who + k + "." + p.key() + ": " + m.message());
        b.namespace_modes[p.key()] = *m;
      }
    } else {
      return Result<PriceBook>::Error(who + k + ": unknown field or wrong type");
    }
  }
  return b;
}

}  // namespace

json PriceBookToJson(const PriceBook& b) {
  json spec = json::object();
  spec["currency"] = b.currency;
  spec["effectiveFrom"] = FormatRfc3339(b.effective_from);
  spec["mode"] = ToString(b.mode);
  spec["blendedRequestWeight"] = b.blended_request_weight.ToString();
  json prices = json::object(), models = json::object(), modes = json::object();
  for (const auto& [k, v] : b.prices) prices[k] = v.ToString();
  for (const auto& [k, v] : b.gpu_models) models[k] = v.ToString();
  for (const auto& [k, v] : b.namespace_modes) modes[k] = ToString(v);
  spec["prices"] = prices;
  spec["gpuModels"] = models;
  spec["migRule"] = ToString(b.mig_rule);
  spec["preemptionCredit"] = ToString(b.preemption_credit);
  spec["namespaceModes"] = modes;
  if (b.share_idle != IdleSharing::kNone) spec["shareIdle"] = ToString(b.share_idle);
  return {{"apiVersion", "arbiter.dev/v1alpha1"},
          {"kind", "PriceBook"},
          {"metadata", {{"name", b.meta.name}}},
          {"spec", spec}};
}

Result<std::vector<PriceBook>> PriceBooksFromJson(const json& j) {
  std::vector<PriceBook> out;
  if (j.is_array()) {
    for (const auto& e : j) {
      auto b = OneBook(e);
      if (!b.ok()) return b.status();
      out.push_back(std::move(*b));
    }
  } else {
    auto b = OneBook(j);
    if (!b.ok()) return b.status();
    out.push_back(std::move(*b));
  }
  return out;
}

}  // namespace arbiter::report
