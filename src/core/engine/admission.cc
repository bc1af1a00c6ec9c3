#include "core/engine/admission.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "core/int128.h"
#include "core/quantity.h"
#include "core/resources.h"

namespace arbiter::engine {

namespace {

std::string Fmt(const std::string& r, int64_t v) { return FormatResourceQuantity(r, v); }

// The three LimitRange constraints, worded as Kubernetes' limitranger words them (no trailing
// period). `type` is "Container" or "Pod". Each returns "" when satisfied.
std::string MinConstraint(const char* type, const std::string& r, int64_t min,
                          const ResourceList& req, const ResourceList& lim) {
  const std::string head = "minimum " + r + " usage per " + type + " is " + Fmt(r, min);
  if (!req.Has(r)) return head + ".  No request is specified";
  if (req.Get(r) < min) return head + ", but request is " + Fmt(r, req.Get(r));
  if (lim.Has(r) && lim.Get(r) < min) return head + ", but limit is " + Fmt(r, lim.Get(r));
  return "";
}

std::string MaxConstraint(const char* type, const std::string& r, int64_t max,
                          const ResourceList& req, const ResourceList& lim) {
  const std::string head = "maximum " + r + " usage per " + type + " is " + Fmt(r, max);
  if (!lim.Has(r)) return head + ".  No limit is specified";
  if (lim.Get(r) > max) return head + ", but limit is " + Fmt(r, lim.Get(r));
  if (req.Has(r) && req.Get(r) > max) return head + ", but request is " + Fmt(r, req.Get(r));
  return "";
}

// Kubernetes' observed limit/request ratio (limitranger's limitRequestRatioConstraint with
// requestLimitEnforcedValues): both in milli-units when request, limit and the enforced ratio are
// at most MaxMilliValue (MaxInt64 / 1000) in whole units, else in whole units rounded up; then
// float64(limit) / float64(request), printed with %f (`8.000000`).
std::string ObservedRatio(const std::string& r, int64_t lim, int64_t req, int64_t ratio_milli) {
  auto info = ClassifyResource(r);
  const int scale10 = info.ok() ? info->scale10 : 0;
  int128 unit = 1;  // canonical units per whole unit
  for (int k = 0; k < scale10; ++k) unit *= 10;
  auto whole = [&](int128 v) { return (v + unit - 1) / unit; };  // Quantity.Value(): rounds up
  auto milli = [&](int128 v) { return v * 1000 / unit; };        // exact: scale10 <= 3
  constexpr int128 kMaxMilliValue = INT64_MAX / 1000;
  const bool precise = whole(req) <= kMaxMilliValue && whole(lim) <= kMaxMilliValue &&
                       (ratio_milli + 999) / 1000 <= kMaxMilliValue;
  const int128 l = precise ? milli(lim) : whole(lim), q = precise ? milli(req) : whole(req);
  char buf[64];
  std::snprintf(
      buf, sizeof buf, "%f",
      static_cast<double>(static_cast<int64_t>(l)) / static_cast<double>(static_cast<int64_t>(q)));
  return buf;
}

// `ratio_milli` is the allowed limit/request in thousandths (compared exactly).
std::string RatioConstraint(const char* type, const std::string& r, int64_t ratio_milli,
                            const ResourceList& req, const ResourceList& lim) {
  const std::string head =
      r + " max limit to request ratio per " + type + " is " + FormatMillis(ratio_milli);
  if (req.Get(r) == 0) return head + ", but no request is specified or request is 0";
  if (lim.Get(r) == 0) return head + ", but no limit is specified or limit is 0";
  if (static_cast<int128>(lim.Get(r)) * 1000 > static_cast<int128>(req.Get(r)) * ratio_milli)
    return head + ", but provided ratio is " +
           ObservedRatio(r, lim.Get(r), req.Get(r), ratio_milli);
  return "";
}

void CheckAll(const char* type, const LimitRangeItem& item, const ResourceList& req,
              const ResourceList& lim, std::vector<std::string>* errs) {
  for (const auto& [r, v] : item.min.entries())
    if (auto e = MinConstraint(type, r, v, req, lim); !e.empty()) errs->push_back(std::move(e));
  for (const auto& [r, v] : item.max.entries())
    if (auto e = MaxConstraint(type, r, v, req, lim); !e.empty()) errs->push_back(std::move(e));
  for (const auto& [r, v] : item.max_limit_request_ratio_milli.entries())
    if (auto e = RatioConstraint(type, r, v, req, lim); !e.empty()) errs->push_back(std::move(e));
}

// utilerrors.NewAggregate(...).Error(): one message as is, several de-duplicated in brackets.
std::string Aggregate(const std::vector<std::string>& errs) {
  std::vector<std::string> seen;
  for (const auto& e : errs)
    if (std::find(seen.begin(), seen.end(), e) == seen.end()) seen.push_back(e);
  if (seen.size() == 1) return seen[0];
  std::string out = "[";
  for (size_t i = 0; i < seen.size(); ++i) out += (i ? ", " : "") + seen[i];
  return out + "]";
}

// SetDefaults_LimitRangeItem plus defaultContainerResourceRequirements: the defaults one
// LimitRange gives a container. Later Container items override earlier ones.
void ContainerDefaults(const LimitRange& lr, ResourceList* limits, ResourceList* requests) {
  for (const auto& item : lr.limits) {
    if (item.type != LimitType::kContainer) continue;
    ResourceList def = item.default_limit, defreq = item.default_request;
    for (const auto& [r, v] : item.max.entries())
      if (!def.Has(r)) def.Set(r, v);
    for (const auto& [r, v] : def.entries())
      if (!defreq.Has(r)) defreq.Set(r, v);
    for (const auto& [r, v] : item.min.entries())
      if (!defreq.Has(r)) defreq.Set(r, v);
    for (const auto& [r, v] : defreq.entries()) requests->Set(r, v);
    for (const auto& [r, v] : def.entries()) limits->Set(r, v);
  }
}

}  // namespace

std::string ApplyLimitRanges(const Pod& pod, const std::vector<const LimitRange*>& ranges,
                             AdmittedPod* out) {
  out->containers = pod.containers;
  out->init_containers = pod.init_containers;
  // API defaulting: a container with a limit but no request requests its limit.
  for (auto* list : {&out->containers, &out->init_containers})
    for (auto& c : *list)
      for (const auto& [r, v] : c.limits.entries())
        if (!c.requests.Has(r)) c.requests.Set(r, v);
  // Mutating phase: every LimitRange's defaults, in order; a field already set stays.
  for (const LimitRange* lr : ranges) {
    ResourceList def_limits, def_requests;
    ContainerDefaults(*lr, &def_limits, &def_requests);
    for (auto* list : {&out->containers, &out->init_containers})
      for (auto& c : *list) {
        for (const auto& [r, v] : def_limits.entries())
          if (!c.limits.Has(r)) c.limits.Set(r, v);
        for (const auto& [r, v] : def_requests.entries())
          if (!c.requests.Has(r)) c.requests.Set(r, v);
      }
  }
  // The API server validates the pod after the mutating admission plugins: a request above its
  // limit (a LimitRange default limit below an explicit request, say) is refused, in its words.
  out->invalid.clear();
  for (const char* field : {"containers", "initContainers"}) {
    const auto& list =
        std::string_view(field) == "containers" ? out->containers : out->init_containers;
    for (size_t i = 0; i < list.size(); ++i)
      for (const auto& [r, req] : list[i].requests.entries())
        if (list[i].limits.Has(r) && req > list[i].limits.Get(r))
          out->invalid.push_back({"spec." + std::string(field) + "[" + std::to_string(i) +
                                      "].resources.requests[" + r + "]",
                                  "Invalid value: \"" + Fmt(r, req) +
                                      "\": must be less than or equal to " + r + " limit of " +
                                      Fmt(r, list[i].limits.Get(r))});
  }
  if (!out->invalid.empty()) {
    std::vector<std::string> invalid;
    for (const FieldError& e : out->invalid) invalid.push_back(e.field + ": " + e.message);
    return "Pod \"" + pod.meta.name + "\" is invalid: " + Aggregate(invalid);
  }
  Pod effective;
  effective.containers = out->containers;
  effective.init_containers = out->init_containers;
  out->requests = effective.EffectiveRequests();
  out->limits = effective.EffectiveLimits();
  // Validating phase: each LimitRange checks the defaulted pod; the first that fails rejects.
  for (const LimitRange* lr : ranges) {
    std::vector<std::string> errs;
    for (const auto& item : lr->limits) {
      if (item.type == LimitType::kContainer) {
        for (const auto* list : {&out->containers, &out->init_containers})
          for (const auto& c : *list) CheckAll("Container", item, c.requests, c.limits, &errs);
      } else if (item.type == LimitType::kPod) {
        CheckAll("Pod", item, out->requests, out->limits, &errs);
      }
    }
    if (!errs.empty())
      return "LimitRange " + lr->meta.namespace_ + "/" + lr->meta.name + ": " + Aggregate(errs);
  }
  return "";
}

std::optional<std::string> QuotaContainerConstraints(const ResourceQuota& quota,
                                                     const AdmittedPod& pod) {
  // The hard names Kubernetes validates per container (its validationSet: cpu, memory,
  // requests.cpu, requests.memory, limits.cpu, limits.memory), as the quota spells them.
  std::map<std::string, const QuotaItem*> required;
  for (const auto& item : quota.hard)
    if ((item.resource == kCpu || item.resource == kMemory) && item.track != QuotaTrack::kCount)
      required.emplace(item.key, &item);
  if (required.empty()) return std::nullopt;
  std::map<std::string, std::set<std::string>> missing;  // hard name -> container names
  for (const auto* list : {&pod.containers, &pod.init_containers})
    for (const auto& c : *list)
      for (const auto& [name, item] : required) {
        const ResourceList& set = item->track == QuotaTrack::kLimits ? c.limits : c.requests;
        if (!set.Has(item->resource)) missing[name].insert(c.name);
      }
  if (missing.empty()) return std::nullopt;
  std::string msg = "failed quota: " + quota.meta.name + ": must specify ";
  bool first = true;
  for (const auto& [name, containers] : missing) {
    msg += first ? "" : "; ";
    first = false;
    msg += name + " for: ";
    bool f2 = true;
    for (const auto& c : containers) {
      msg += (f2 ? "" : ",") + c;
      f2 = false;
    }
  }
  return msg;
}

}  // namespace arbiter::engine
