#include "core/engine/quota_book.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

#include "core/engine/fair_share.h"
#include "core/engine/pod_topology.h"

namespace arbiter::engine {

namespace {
// The resources an ElasticQuota constrains: those named in min or max.
std::vector<std::string> Tracked(const ElasticQuota& q) {
  std::vector<std::string> out;
  for (const auto& [r, v] : q.min.entries()) out.push_back(r);
  if (q.max)
    for (const auto& [r, v] : q.max->entries())
      if (!q.min.Has(r)) out.push_back(r);
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

void QuotaBook::Reindex() {
  rq_by_ns_.clear();
  eq_index_.clear();
  for (size_t i = 0; i < rqs_.size(); ++i) rq_by_ns_[rqs_[i].q.meta.namespace_].push_back(i);
  for (size_t i = 0; i < eqs_.size(); ++i) {
    eqs_[i].x = ExpandFlavors(eqs_[i].q);
    eq_index_[eqs_[i].q.meta.namespace_] = i;
    eqs_[i].tracked = Tracked(eqs_[i].x);
  }
  // Each cohort's members in eqs_ order, grouped once (not each quota against every other).
  std::map<std::string, std::vector<size_t>> cohorts;
  for (size_t i = 0; i < eqs_.size(); ++i) cohorts[eqs_[i].x.cohort].push_back(i);
  lendable_.clear();
  std::map<std::string, std::shared_ptr<const std::vector<size_t>>> shared;
  for (auto& [cohort, members] : cohorts) {
    std::vector<const ElasticQuota*> xs;
    for (size_t i : members) xs.push_back(&eqs_[i].x);
    lendable_[cohort] = CohortLendable(xs);
    shared[cohort] = std::make_shared<const std::vector<size_t>>(std::move(members));
  }
  for (size_t i = 0; i < eqs_.size(); ++i) {
    EQ& e = eqs_[i];
    if (e.x.cohort.empty()) {  // only itself
      e.members = std::make_shared<const std::vector<size_t>>(1, i);
      e.member_pos = 0;
      continue;
    }
    e.members = shared[e.x.cohort];
    e.member_pos = static_cast<size_t>(std::lower_bound(e.members->begin(), e.members->end(), i) -
                                       e.members->begin());
  }
  RebuildSums();
}

// A new ResourceQuota goes last, so its namespace's list (in rqs_ order) takes it last; nothing
// else Reindex derives reads ResourceQuotas (a create beside 1,000 tenants used to regroup
// every cohort).
void QuotaBook::SetResourceQuota(const ResourceQuota& q) {
  std::vector<size_t>& in_ns = rq_by_ns_[q.meta.namespace_];
  for (size_t i : in_ns)
    if (rqs_[i].q.meta.name == q.meta.name) {
      rqs_[i].q = q;
      return;
    }
  rqs_.push_back(RQ{q, {}, {}, {}});
  in_ns.push_back(rqs_.size() - 1);
}

Status QuotaBook::DeleteResourceQuota(const std::string& ns, const std::string& name) {
  for (size_t i = 0; i < rqs_.size(); ++i)
    if (rqs_[i].q.meta.namespace_ == ns && rqs_[i].q.meta.name == name) {
      rqs_.erase(rqs_.begin() + static_cast<long>(i));
      Reindex();
      return Status::Ok();
    }
  return Status::NotFound("no ResourceQuota " + ns + "/" + name);
}

Status QuotaBook::SetElasticQuota(const ElasticQuota& q) {
  auto it = eq_index_.find(q.meta.namespace_);
  if (it != eq_index_.end()) {
    EQ& e = eqs_[it->second];
    if (e.x.meta.name != q.meta.name)
      return Status::AlreadyExists("namespace " + q.meta.namespace_ + " already has ElasticQuota " +
                                   e.x.meta.name + " (one per namespace)");
    e.q = q;
    Reindex();  // its flavors, tracked resources and cohort may have changed
    return Status::Ok();
  }
  eqs_.emplace_back().q = q;
  Reindex();
  return Status::Ok();
}

Status QuotaBook::DeleteElasticQuota(const std::string& ns, const std::string& name) {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end() || eqs_[it->second].x.meta.name != name)
    return Status::NotFound("no ElasticQuota " + ns + "/" + name);
  eqs_.erase(eqs_.begin() + static_cast<long>(it->second));
  Reindex();
  return Status::Ok();
}

void QuotaBook::Recount(const std::vector<const Workload*>& charged) {
  sums_.clear();  // (rebuilt below; the charges' moves then start from nothing)
  for (auto& rq : rqs_) rq.used.clear();
  for (auto& e : eqs_) e.used = ResourceList{};
  for (const Workload* w : charged) Charge(*w);
  for (const auto& [id, c] : counted_) ChargeCounted(c, 1);
  Allow();
  RebuildSums();
}

void QuotaBook::Allow() {
  for (auto& rq : rqs_) {
    rq.allowance.clear();
    for (const auto& item : rq.q.hard) {
      auto u = rq.used.find(item.key);
      if (u != rq.used.end() && u->second > item.hard) rq.allowance[item.key] = u->second;
    }
  }
  std::map<std::string, std::pair<ResourceList, ResourceList>> cohorts;  // used, min
  for (auto& e : eqs_) {
    e.allowance = ResourceList{};
    if (e.x.max)
      for (const auto& [r, v] : e.x.max->entries())
        if (e.used.Get(r) > v) e.allowance.Set(r, e.used.Get(r));
    if (e.x.cohort.empty()) continue;
    cohorts[e.x.cohort].first += e.used;
    cohorts[e.x.cohort].second += e.x.min;
  }
  cohort_allowance_.clear();
  for (const auto& [c, um] : cohorts)
    for (const auto& [r, v] : um.second.entries())
      if (um.first.Get(r) > v) cohort_allowance_[c].Set(r, um.first.Get(r));
}

std::vector<ElasticQuota> QuotaBook::elastic_quotas() const {
  std::vector<ElasticQuota> out;
  for (const auto& e : eqs_) out.push_back(e.q);
  return out;
}

std::vector<ResourceQuota> QuotaBook::resource_quotas() const {
  std::vector<ResourceQuota> out;
  for (const auto& r : rqs_) out.push_back(r.q);
  return out;
}

namespace {
// Kubernetes' QoS class BestEffort: no container or init container requests or limits a positive
// amount of cpu or memory (after LimitRange defaults).
bool IsBestEffort(const Workload& w) {
  for (std::string_view r : {kCpu, kMemory})
    if (w.requests.Get(r) > 0 || w.limits.Get(r) > 0) return false;
  return true;
}

// Kubernetes' usesCrossNamespacePodAffinity (quota/v1/evaluator/core/pods.go): some pod affinity
// or anti-affinity term, required or preferred, names namespaces or has a namespaceSelector (an
// empty one selects every namespace).
bool CrossNamespaceTerms(const PodAffinity& a) {
  auto cross = [](const PodAffinityTerm& t) {
    return !t.namespaces.empty() || t.namespace_selector.has_value();
  };
  return std::any_of(a.required.begin(), a.required.end(), cross) ||
         std::any_of(a.preferred.begin(), a.preferred.end(),
                     [&](const WeightedPodAffinityTerm& t) { return cross(t.term); });
}
bool UsesCrossNamespacePodAffinity(const Workload& w) {
  return w.topology && (CrossNamespaceTerms(w.topology->affinity) ||
                        CrossNamespaceTerms(w.topology->anti_affinity));
}
}  // namespace

bool QuotaBook::ScopeMatches(const ResourceQuota& q, const Workload& w) const {
  // Kubernetes' podMatchesScopeFunc: every scope of the quota must match. BestEffort /
  // NotBestEffort follow the pod's QoS class, Terminating / NotTerminating whether it has
  // spec.activeDeadlineSeconds, CrossNamespacePodAffinity its pod (anti-)affinity terms
  // (validation allows only the Exists operator for these five). A scope not known here matches
  // no pod (the loader refuses one; it used to be skipped, and the quota held every pod).
  for (const auto& s : q.scope_selector) {
    if (s.scope_name == "CrossNamespacePodAffinity") {
      if (!UsesCrossNamespacePodAffinity(w)) return false;
      continue;
    }
    if (s.scope_name == "BestEffort" || s.scope_name == "NotBestEffort") {
      if (IsBestEffort(w) != (s.scope_name == "BestEffort")) return false;
      continue;
    }
    if (s.scope_name == "Terminating" || s.scope_name == "NotTerminating") {
      if ((w.time_limit > 0) != (s.scope_name == "Terminating")) return false;
      continue;
    }
    if (s.scope_name != "PriorityClass") return false;
    bool has = !w.priority_class.empty();
    bool in =
        has && std::find(s.values.begin(), s.values.end(), w.priority_class) != s.values.end();
    if (!SelectorOperatorHolds(s.op, has, in)) return false;
  }
  return true;
}

int64_t QuotaBook::ChargeOf(const QuotaItem& item, const Workload& w) const {
  switch (item.track) {
    case QuotaTrack::kCount:
      return 1;
    case QuotaTrack::kRequests:
      return w.requests.Get(item.resource);
    case QuotaTrack::kLimits: {
      // Extended resources (GPUs, MIG) cannot be overcommitted: their limit is their request.
      auto info = ClassifyResource(item.resource);
      bool extended =
          info.ok() && (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
                        info->kind == ResourceKind::kExtended);
      return extended ? w.requests.Get(item.resource) : w.limits.Get(item.resource);
    }
  }
  return 0;
}

std::optional<QuotaBook::NeverAdmitted> QuotaBook::NeverAdmissible(const Workload& w,
                                                                   const AdmittedPod& pod) const {
  auto it = rq_by_ns_.find(w.namespace_);
  if (it == rq_by_ns_.end()) return std::nullopt;
  // As the Kubernetes quota admission: the container constraints of every matching quota first,
  // then usage.
  for (size_t idx : it->second) {
    const ResourceQuota& q = rqs_[idx].q;
    if (!ScopeMatches(q, w)) continue;
    if (auto missing = QuotaContainerConstraints(q, pod))
      return NeverAdmitted{std::move(*missing), false};
  }
  for (size_t idx : it->second) {
    const ResourceQuota& q = rqs_[idx].q;
    if (!ScopeMatches(q, w)) continue;
    std::map<std::string, const QuotaItem*> over;  // sorted by key, as Kubernetes prints them
    for (const auto& item : q.hard)
      if (ChargeOf(item, w) > item.hard) over[item.key] = &item;
    std::string requested, used, limited;
    for (const auto& [key, item] : over) {
      const char* sep = requested.empty() ? "" : ",";
      auto u = rqs_[idx].used.find(key);
      requested += sep + key + "=" + FormatResourceQuantity(item->resource, ChargeOf(*item, w));
      used += sep + key + "=" +
              FormatResourceQuantity(item->resource, u == rqs_[idx].used.end() ? 0 : u->second);
      limited += sep + key + "=" + FormatResourceQuantity(item->resource, item->hard);
    }
    if (!requested.empty())  // Kubernetes' words, with the usage of now
      return NeverAdmitted{"exceeded quota: " + q.meta.name + ", requested: " + requested +
                               ", used: " + used + ", limited: " + limited,
                           true};
  }
  return std::nullopt;
}

std::optional<std::string> QuotaBook::ResourceQuotaBlocked(const Workload& w) const {
  auto it = rq_by_ns_.find(w.namespace_);
  if (it == rq_by_ns_.end()) return std::nullopt;
  // Kubernetes' quota admission: the first quota that the pod would exceed refuses it, naming the
  // quota (bare name) and every resource it exceeds, sorted, as key=quantity lists.
  for (size_t idx : it->second) {
    const RQ& rq = rqs_[idx];
    if (!ScopeMatches(rq.q, w)) continue;
    std::map<std::string, std::pair<const QuotaItem*, std::array<int64_t, 3>>>
        exceeded;  // requested, used, held
    int64_t held_any = 0;
    for (const auto& item : rq.q.hard) {
      int64_t c = ChargeOf(item, w);
      if (c == 0) continue;
      auto u = rq.used.find(item.key);
      int64_t used = u == rq.used.end() ? 0 : u->second;
      // Holds of other waiting preemptors count as used; this workload's own hold does not.
      auto h = rq.reserved.find(item.key);
      int64_t held = h == rq.reserved.end() ? 0 : h->second;
      if (auto own = rq_reservations_.find(Value(w.id)); own != rq_reservations_.end())
        for (const auto& hold : own->second)
          if (&rqs_[hold.rq] == &rq && hold.key == item.key) held -= hold.amount;
      if (used + held + c > item.hard) {
        exceeded[item.key] = {&item, {c, used, held}};
        held_any += held > 0;
      }
    }
    if (exceeded.empty()) continue;
    std::string requested, used, limited, held;
    for (const auto& [key, e] : exceeded) {
      const std::string& r = e.first->resource;
      const char* sep = requested.empty() ? "" : ",";
      requested += sep + key + "=" + FormatResourceQuantity(r, e.second[0]);
      used += sep + key + "=" + FormatResourceQuantity(r, e.second[1]);
      limited += sep + key + "=" + FormatResourceQuantity(r, e.first->hard);
      if (e.second[2] > 0)
        held += (held.empty() ? "" : ",") + key + "=" + FormatResourceQuantity(r, e.second[2]);
    }
    return "exceeded quota: " + rq.q.meta.name + ", requested: " + requested + ", used: " + used +
           ", limited: " + limited +
           (held_any ? " (" + held +
                           " more held for workloads waiting for their preemption victims to exit)"
                     : "");
  }
  return std::nullopt;
}

const std::string* QuotaBook::CohortOf(const std::string& ns) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return nullptr;
  return &eqs_[it->second].x.cohort;
}

std::vector<const QuotaBook::EQ*> QuotaBook::CohortMembers(const std::string& cohort) const {
  std::vector<const EQ*> out;
  for (const auto& e : eqs_)
    if (e.x.cohort == cohort) out.push_back(&e);
  return out;
}

bool QuotaBook::IsBorrowing(const std::string& ns) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return false;
  const EQ& e = eqs_[it->second];
  for (const auto& [r, v] : e.used.entries())
    if (v > e.x.min.Get(r) && (e.x.min.Has(r) || (e.x.max && e.x.max->Has(r)))) return true;
  return false;
}

namespace {
// An ElasticQuota constrains, lends and borrows only the resources named in its min or max; the
// rest of a workload's request is not counted in the cohort (so a namespace that does not track
// cpu can neither borrow nor block anyone's cpu).
ResourceList TrackedPart(const ResourceList& r, const ElasticQuota& q) {
  ResourceList out;
  for (const auto& [name, v] : r.entries())
    if (q.min.Has(name) || (q.max && q.max->Has(name))) out.Set(name, v);
  return out;
}

int64_t LendCap(const ElasticQuota& q, const std::string& r, int64_t used) {
  int64_t unused = std::max<int64_t>(0, q.min.Get(r) - used);
  bool limited = std::find(q.lending_limit_set.begin(), q.lending_limit_set.end(), r) !=
                 q.lending_limit_set.end();
  return limited ? std::min(unused, q.lending_limit.Get(r)) : unused;
}
}  // namespace

namespace {
// What member `e` counts in its cohort's sums of resource `r` (QuotaBook::CohortSums).
void AddCounts(const QuotaBook::EQ& e, const std::string& r, int64_t sign,
               QuotaBook::CohortSums& sums) {
  const int64_t u = e.used.Get(r) + e.reserved.Get(r);
  sums.borrowed.Set(r, sums.borrowed.Get(r) + sign * std::max<int64_t>(0, u - e.x.min.Get(r)));
  sums.lendable.Set(r, sums.lendable.Get(r) + sign * LendCap(e.x, r, u));
}
// Every resource `e` counts something of: its min's, what it uses and what it holds.
std::vector<std::string> ResourcesOf(const QuotaBook::EQ& e) {
  std::vector<std::string> out;
  for (const ResourceList* l : {&e.x.min, &e.used, &e.reserved})
    for (const auto& [r, v] : l->entries()) out.push_back(r);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}
}  // namespace

std::map<std::string, QuotaBook::CohortSums> QuotaBook::FreshSums() const {
  std::map<std::string, CohortSums> out;
  for (const EQ& e : eqs_)
    if (!e.x.cohort.empty())
      for (const std::string& r : ResourcesOf(e)) AddCounts(e, r, 1, out[e.x.cohort]);
  return out;
}

void QuotaBook::RebuildSums() { sums_ = FreshSums(); }

void QuotaBook::Move(EQ& e, ResourceList EQ::*field, const ResourceList& part, int sign) {
  CohortSums* sums = e.x.cohort.empty() ? nullptr : &sums_[e.x.cohort];
  if (sums)
    for (const auto& [r, v] : part.entries()) AddCounts(e, r, -1, *sums);
  if (sign > 0)
    e.*field += part;
  else
    e.*field -= part;
  if (sums)
    for (const auto& [r, v] : part.entries()) AddCounts(e, r, 1, *sums);
}

std::string FlavorKey(const std::string& resource, const std::string& flavor) {
  return resource + "@" + flavor;
}
std::string FlavorBase(const std::string& key) { return key.substr(0, key.find('@')); }
std::string FlavorSuffix(const std::string& key) {
  const size_t at = key.find('@');
  return at == std::string::npos ? "" : " of flavor " + key.substr(at + 1);
}

bool FlavorCovers(const ElasticQuota& q, const std::string& resource) {
  for (const auto& f : q.flavors)
    if (f.min.Has(resource) || (f.max && f.max->Has(resource))) return true;
  return false;
}

ElasticQuota ExpandFlavors(const ElasticQuota& q) {
  if (q.flavors.empty()) return q;
  ElasticQuota x = q;
  std::vector<std::string> covered;
  for (const auto& f : q.flavors) {
    for (const auto& [r, v] : f.min.entries()) covered.push_back(r);
    if (f.max)
      for (const auto& [r, v] : f.max->entries()) covered.push_back(r);
  }
  for (const auto& f : q.flavors) {
    for (const std::string& r : covered)
      x.min.Set(FlavorKey(r, f.name), f.min.Get(r));  // absent: 0
    if (f.max) {
      if (!x.max) x.max = ResourceList{};
      for (const auto& [r, v] : f.max->entries()) x.max->Set(FlavorKey(r, f.name), v);
    }
    for (const auto& [r, v] : f.lending_limit.entries()) {
      x.lending_limit.Set(FlavorKey(r, f.name), v);
      x.lending_limit_set.push_back(FlavorKey(r, f.name));
    }
  }
  return x;
}

ResourceList ElasticRequests(const Workload& w, const ElasticQuota& x) {
  if (x.flavors.empty() || w.flavor.empty()) return w.requests;
  ResourceList out;
  for (const auto& [r, v] : w.requests.entries())
    out.Set(FlavorCovers(x, r) ? FlavorKey(r, w.flavor) : r, v);
  return out;
}

ResourceList QuotaBook::ElasticRequestsOf(const Workload& w) const {
  auto it = eq_index_.find(w.namespace_);
  return it == eq_index_.end() ? w.requests : ElasticRequests(w, eqs_[it->second].x);
}

const std::vector<QuotaFlavor>* QuotaBook::FlavorsOf(const std::string& ns) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end() || eqs_[it->second].q.flavors.empty()) return nullptr;
  return &eqs_[it->second].q.flavors;
}

std::vector<QuotaBook::FlavorUsage> QuotaBook::FlavorUsages() const {
  std::vector<FlavorUsage> out;
  for (const auto& e : eqs_)
    for (const auto& f : e.q.flavors) {
      FlavorUsage u{e.q.meta.namespace_, f.name, {}, f.min, f.max};
      const ResourceList held = e.used + e.reserved;
      for (const auto& [r, v] : held.entries())
        if (v != 0 && r.size() > f.name.size() + 1 &&
            r.compare(r.size() - f.name.size() - 1, std::string::npos, "@" + f.name) == 0)
          u.used.Set(FlavorBase(r), v);
      out.push_back(std::move(u));
    }
  return out;
}

const ElasticQuota* QuotaBook::ElasticOf(const std::string& ns) const {
  auto it = eq_index_.find(ns);
  return it == eq_index_.end() ? nullptr : &eqs_[it->second].x;
}

ResourceList QuotaBook::UsageOf(const std::string& ns) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return {};
  return eqs_[it->second].used + eqs_[it->second].reserved;
}

bool QuotaBook::AnyCohort() const {
  for (const auto& e : eqs_)
    if (!e.x.cohort.empty()) return true;
  return false;
}

bool QuotaBook::FairSharing(const std::string& cohort) const {
  if (cohort.empty()) return false;
  for (const auto& e : eqs_)
    if (e.x.cohort == cohort && e.x.fair_weight_milli) return true;
  return false;
}

int64_t QuotaBook::ShareAfter(const Workload& w) const {
  auto it = eq_index_.find(w.namespace_);
  if (it == eq_index_.end()) return 0;
  const EQ& self = eqs_[it->second];
  ResourceList used = self.used + self.reserved;
  if (auto own = reservations_.find(Value(w.id)); own != reservations_.end()) used -= own->second;
  used += TrackedPart(ElasticRequests(w, self.x), self.x);
  return WeightedShare(self.x, used, LendableOf(self.x.cohort));
}

ResourceList QuotaBook::UsedWith(const std::string& ns, const Workload* added,
                                 const std::vector<const Workload*>& released) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return {};
  const EQ& e = eqs_[it->second];
  ResourceList used = e.used + e.reserved;
  if (added) {
    if (auto own = reservations_.find(Value(added->id)); own != reservations_.end())
      used -= own->second;
    used += TrackedPart(ElasticRequests(*added, e.x), e.x);
  }
  for (const Workload* r : released)
    if (r->namespace_ == ns) used -= TrackedPart(ElasticRequests(*r, e.x), e.x);
  return used;
}
ResourceList QuotaBook::LendableOf(const std::string& cohort) const {
  auto it = lendable_.find(cohort);
  return it == lendable_.end() ? ResourceList{} : it->second;
}
std::vector<ResourceList> QuotaBook::Gone(const EQ& self, const Workload& w,
                                          const std::vector<const Workload*>& released) const {
  std::vector<ResourceList> gone;
  const auto own = reservations_.find(Value(w.id));
  if (own == reservations_.end() && released.empty()) return gone;
  gone.resize(self.members->size());
  if (own != reservations_.end()) gone[self.member_pos] += own->second;
  for (const Workload* r : released) {
    const auto e = eq_index_.find(r->namespace_);
    if (e == eq_index_.end()) continue;
    const EQ& m = eqs_[e->second];
    if (&m != &self && (self.x.cohort.empty() || m.x.cohort != self.x.cohort)) continue;
    gone[m.member_pos] += TrackedPart(ElasticRequests(*r, m.x), m.x);
  }
  return gone;
}

// Usage per namespace of the cohort after releasing `released` and adding `w`: member i's charged
// and held `r`, less what Gone takes off, plus `add` for w's own namespace.
namespace {
struct CohortUse {
  const std::vector<QuotaBook::EQ>& eqs;
  const QuotaBook::EQ& self;
  const std::vector<ResourceList>& gone;
  const QuotaBook::CohortSums* sums;  // self's cohort's (null: none kept)
  int64_t At(size_t i, const std::string& r, int64_t add) const {
    const QuotaBook::EQ& m = eqs[(*self.members)[i]];
    int64_t u = m.used.Get(r) + m.reserved.Get(r);
    if (!gone.empty()) u -= gone[i].Get(r);
    return i == self.member_pos ? u + add : u;
  }
  // Whether the cohort's borrowing of `r` exceeds what its members can lend.
  bool Short(const std::string& r, int64_t add, int64_t* borrowed, int64_t* lendable) const {
    if (sums && gone.empty()) {  // the cohort's sums with self's part as it would be
      const int64_t u = At(self.member_pos, r, 0), min = self.x.min.Get(r);
      *borrowed = sums->borrowed.Get(r) - std::max<int64_t>(0, u - min) +
                  std::max<int64_t>(0, u + add - min);
      *lendable = sums->lendable.Get(r) - LendCap(self.x, r, u) + LendCap(self.x, r, u + add);
      return *borrowed > *lendable;
    }
    *borrowed = *lendable = 0;
    for (size_t i = 0; i < self.members->size(); ++i) {
      const int64_t u = At(i, r, add);
      const ElasticQuota& x = eqs[(*self.members)[i]].x;
      *borrowed += std::max<int64_t>(0, u - x.min.Get(r));
      *lendable += LendCap(x, r, u);
    }
    return *borrowed > *lendable;
  }
};
}  // namespace

const QuotaBook::CohortSums* QuotaBook::SumsOf(const EQ& e) const {
  if (e.x.cohort.empty()) return nullptr;
  auto it = sums_.find(e.x.cohort);
  return it == sums_.end() ? nullptr : &it->second;
}

std::vector<std::string> QuotaBook::ShortOf(const Workload& w) const {
  std::vector<std::string> out;
  auto it = eq_index_.find(w.namespace_);
  if (it == eq_index_.end()) return out;
  const EQ& self = eqs_[it->second];
  const ElasticQuota& q = self.x;
  const std::vector<ResourceList> gone = Gone(self, w, {});
  const CohortUse use{eqs_, self, gone, SumsOf(self)};
  const ResourceList mine = ElasticRequests(w, q);
  for (const std::string& r : self.tracked) {
    const int64_t req = mine.Get(r);
    if (req == 0) continue;
    const int64_t after = use.At(self.member_pos, r, req);
    bool short_of = q.max && q.max->Has(r) && after > q.max->Get(r);
    if (!short_of && q.cohort.empty()) short_of = after > q.min.Get(r);
    int64_t borrowed = 0, lendable = 0;
    if (!short_of && !q.cohort.empty()) short_of = use.Short(r, req, &borrowed, &lendable);
    if (short_of) out.push_back(r);
  }
  return out;
}

bool QuotaBook::AboveMin(const std::string& ns, const std::vector<std::string>& resources,
                         const std::vector<const Workload*>& released) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return false;
  const EQ& e = eqs_[it->second];
  ResourceList used = e.used + e.reserved;
  for (const Workload* r : released)
    if (r->namespace_ == ns) used -= TrackedPart(ElasticRequests(*r, e.x), e.x);
  for (const std::string& r : resources)
    if ((e.x.min.Has(r) || (e.x.max && e.x.max->Has(r))) && used.Get(r) > e.x.min.Get(r))
      return true;
  return false;
}

QuotaBook::ElasticResult QuotaBook::CheckElastic(
    const Workload& w, const std::vector<const Workload*>& released) const {
  ElasticResult res;
  auto it = eq_index_.find(w.namespace_);
  if (it == eq_index_.end()) return res;
  const EQ& self = eqs_[it->second];
  const ElasticQuota& q = self.x;
  const std::vector<ResourceList> gone = Gone(self, w, released);
  const CohortUse use{eqs_, self, gone, SumsOf(self)};
  const ResourceList mine = ElasticRequests(w, q);
  res.within_min = true;
  for (const std::string& r : self.tracked) {
    const int64_t req = mine.Get(r);
    if (req == 0) continue;
    const int64_t after = use.At(self.member_pos, r, req);
    const std::string base = FlavorBase(r), in_flavor = FlavorSuffix(r);
    if (q.max && q.max->Has(r) && after > q.max->Get(r)) {
      res.ok = false;
      res.over_max = true;
      res.within_min = false;
      res.message = "exceeded ElasticQuota " + q.meta.namespace_ + "/" + q.meta.name + " max" +
                    in_flavor + ": requested " + base + "=" + FormatResourceQuantity(base, req) +
                    ", used " + FormatResourceQuantity(base, after - req) + ", max " +
                    FormatResourceQuantity(base, q.max->Get(r));
      return res;
    }
    if (after > q.min.Get(r)) {
      res.within_min = false;
      res.borrowing = true;
    }
    if (q.cohort.empty()) {
      if (after > q.min.Get(r)) {
        res.ok = false;
        res.message = "exceeded ElasticQuota " + q.meta.namespace_ + "/" + q.meta.name + " min" +
                      in_flavor + " " + base + "=" + FormatResourceQuantity(base, q.min.Get(r)) +
                      " and the namespace is in no cohort to borrow from";
        return res;
      }
      continue;
    }
    int64_t borrowed = 0, lendable = 0;
    if (use.Short(r, req, &borrowed, &lendable)) {
      res.ok = false;
      res.message = "cohort " + q.cohort + " has no unused " + base + in_flavor +
                    " to lend: namespace " + w.namespace_ + " would use " +
                    FormatResourceQuantity(base, after) + " (min " +
                    FormatResourceQuantity(base, q.min.Get(r)) + "), cohort borrowing " +
                    FormatResourceQuantity(base, borrowed) + " exceeds what lenders can lend (" +
                    FormatResourceQuantity(base, lendable) + ")";
    }
  }
  return res;
}

bool QuotaBook::Holds(const Workload& w) const {
  return rq_reservations_.count(Value(w.id)) > 0 || reservations_.count(Value(w.id)) > 0;
}

void QuotaBook::Reserve(const Workload& w) {
  const uint64_t id = Value(w.id);
  if (!rq_reservations_.count(id)) {
    auto it = rq_by_ns_.find(w.namespace_);
    if (it != rq_by_ns_.end()) {
      std::vector<RqHold> holds;
      for (size_t idx : it->second) {
        if (!ScopeMatches(rqs_[idx].q, w)) continue;
        for (const auto& item : rqs_[idx].q.hard) {
          int64_t c = ChargeOf(item, w);
          if (c == 0) continue;
          rqs_[idx].reserved[item.key] += c;
          holds.push_back({idx, item.key, c});
        }
      }
      if (!holds.empty()) rq_reservations_[id] = std::move(holds);
    }
  }
  auto e = eq_index_.find(w.namespace_);
  if (e == eq_index_.end() || reservations_.count(id)) return;
  EQ& eq = eqs_[e->second];
  const ResourceList& held = reservations_[id] = TrackedPart(ElasticRequests(w, eq.x), eq.x);
  Move(eq, &EQ::reserved, held, 1);
}

void QuotaBook::Unreserve(const Workload& w) {
  if (auto h = rq_reservations_.find(Value(w.id)); h != rq_reservations_.end()) {
    for (const auto& hold : h->second) rqs_[hold.rq].reserved[hold.key] -= hold.amount;
    rq_reservations_.erase(h);
  }
  auto r = reservations_.find(Value(w.id));
  if (r == reservations_.end()) return;
  if (auto e = eq_index_.find(w.namespace_); e != eq_index_.end()) {
    Move(eqs_[e->second], &EQ::reserved, r->second, -1);
  }
  reservations_.erase(r);
}

void QuotaBook::Charge(const Workload& w) {
  auto it = rq_by_ns_.find(w.namespace_);
  if (it != rq_by_ns_.end())
    for (size_t idx : it->second) {
      RQ& rq = rqs_[idx];
      if (!ScopeMatches(rq.q, w)) continue;
      for (const auto& item : rq.q.hard) rq.used[item.key] += ChargeOf(item, w);
    }
  auto e = eq_index_.find(w.namespace_);
  if (e == eq_index_.end()) return;
  EQ& eq = eqs_[e->second];
  Move(eq, &EQ::used, TrackedPart(ElasticRequests(w, eq.x), eq.x), 1);
}

void QuotaBook::Release(const Workload& w) {
  auto it = rq_by_ns_.find(w.namespace_);
  if (it != rq_by_ns_.end())
    for (size_t idx : it->second) {
      RQ& rq = rqs_[idx];
      if (!ScopeMatches(rq.q, w)) continue;
      for (const auto& item : rq.q.hard) {
        int64_t& u = rq.used[item.key];
        u -= ChargeOf(item, w);
        if (auto a = rq.allowance.find(item.key); a != rq.allowance.end()) {  // shrinks with usage
          a->second = std::min(a->second, u);
          if (a->second <= item.hard) rq.allowance.erase(a);
        }
      }
    }
  auto e = eq_index_.find(w.namespace_);
  if (e == eq_index_.end()) return;
  EQ& eq = eqs_[e->second];
  Move(eq, &EQ::used, TrackedPart(ElasticRequests(w, eq.x), eq.x), -1);
  if (!eq.allowance.empty() && eq.x.max) {
    ResourceList a;
    for (const auto& [r, v] : eq.allowance.entries()) {
      const int64_t shrunk = std::min(v, eq.used.Get(r));
      if (shrunk > eq.x.max->Get(r)) a.Set(r, shrunk);
    }
    eq.allowance = a;
  }
  if (auto c = cohort_allowance_.find(eq.x.cohort); c != cohort_allowance_.end()) {
    ResourceList used, min;
    for (const EQ* m : CohortMembers(eq.x.cohort)) {
      used += m->used;
      min += m->x.min;
    }
    ResourceList a;
    for (const auto& [r, v] : c->second.entries()) {
      const int64_t shrunk = std::min(v, used.Get(r));
      if (shrunk > min.Get(r)) a.Set(r, shrunk);
    }
    if (a.empty())
      cohort_allowance_.erase(c);
    else
      c->second = a;
  }
}

// `c` holds what the scopes read but pod affinity (Counted keeps none: its snapshot encoding is
// fixed), so a CrossNamespacePodAffinity quota does not count terminal pods in count/pods.
void QuotaBook::ChargeCounted(const Counted& c, int64_t sign) {
  auto it = rq_by_ns_.find(c.namespace_);
  if (it == rq_by_ns_.end()) return;
  Workload w;
  w.namespace_ = c.namespace_;
  w.priority_class = c.priority_class;
  w.requests = c.requests;
  w.limits = c.limits;
  w.time_limit = c.terminating ? 1 : 0;
  for (size_t idx : it->second) {
    RQ& rq = rqs_[idx];
    if (!ScopeMatches(rq.q, w)) continue;
    for (const auto& item : rq.q.hard)
      if (item.key == "count/pods") rq.used[item.key] += sign;
  }
}

void QuotaBook::KeepCounted(const Workload& w) {
  auto it = rq_by_ns_.find(w.namespace_);
  if (it == rq_by_ns_.end()) return;
  bool counts = false;
  for (size_t idx : it->second)
    if (ScopeMatches(rqs_[idx].q, w))
      for (const auto& item : rqs_[idx].q.hard) counts = counts || item.key == "count/pods";
  if (!counts) return;
  Counted c{w.namespace_, w.priority_class, w.requests, w.limits, w.time_limit > 0};
  ChargeCounted(c, 1);
  counted_.emplace(Value(w.id), std::move(c));
}

bool QuotaBook::ForgetCounted(uint64_t id) {
  auto it = counted_.find(id);
  if (it == counted_.end()) return false;
  ChargeCounted(it->second, -1);
  counted_.erase(it);
  return true;
}

// What Reindex derives, as the quotas give it the slow way: each namespace's ResourceQuotas in
// rqs_ order, each ElasticQuota's cohort (itself alone outside one) in eqs_ order, its position
// there, what each cohort lends.
std::optional<std::string> QuotaBook::CheckIndex() const {
  std::map<std::string, std::vector<size_t>> rq_by_ns;
  for (size_t i = 0; i < rqs_.size(); ++i) rq_by_ns[rqs_[i].q.meta.namespace_].push_back(i);
  if (rq_by_ns != rq_by_ns_) return "the ResourceQuotas' index by namespace is stale";
  for (size_t i = 0; i < eqs_.size(); ++i) {
    const EQ& e = eqs_[i];
    std::vector<size_t> members;
    std::vector<const ElasticQuota*> xs;
    for (size_t j = 0; j < eqs_.size(); ++j)
      if (j == i || (!e.x.cohort.empty() && eqs_[j].x.cohort == e.x.cohort)) {
        members.push_back(j);
        xs.push_back(&eqs_[j].x);
      }
    if (!e.members || *e.members != members || e.member_pos >= members.size() ||
        members[e.member_pos] != i)
      return "ElasticQuota " + e.x.meta.namespace_ + ": its cohort's index is stale";
    if (!e.x.cohort.empty() && LendableOf(e.x.cohort) != CohortLendable(xs))
      return "cohort " + e.x.cohort + ": what it lends is stale";
  }
  return CheckSums();
}

// The sums kept as usage moved, against a fresh count (a resource absent from one is 0 there).
std::optional<std::string> QuotaBook::CheckSums() const {
  const std::map<std::string, CohortSums> fresh = FreshSums();
  auto differ = [&](const std::string& cohort, const std::string& r) {
    const auto f = fresh.find(cohort);
    const auto k = sums_.find(cohort);
    auto get = [&](auto it, auto end, bool borrowed) {
      return it == end ? 0 : (borrowed ? it->second.borrowed : it->second.lendable).Get(r);
    };
    return get(f, fresh.end(), true) != get(k, sums_.end(), true) ||
           get(f, fresh.end(), false) != get(k, sums_.end(), false);
  };
  for (const auto* sums : {&fresh, &sums_})
    for (const auto& [cohort, s] : *sums)
      for (const ResourceList* l : {&s.borrowed, &s.lendable})
        for (const auto& [r, v] : l->entries())
          if (differ(cohort, r)) return "cohort " + cohort + ": its sums of " + r + " are stale";
  return std::nullopt;
}

std::optional<std::string> QuotaBook::CheckInvariants() const {
  for (const auto& rq : rqs_)
    for (const auto& item : rq.q.hard) {
      auto u = rq.used.find(item.key);
      int64_t used = u == rq.used.end() ? 0 : u->second;
      auto a = rq.allowance.find(item.key);
      const int64_t limit = std::max(item.hard, a == rq.allowance.end() ? int64_t{0} : a->second);
      if (used > limit || used < 0)
        return "ResourceQuota " + rq.q.meta.namespace_ + "/" + rq.q.meta.name + " " + item.key +
               " used " + std::to_string(used) + " outside [0, hard " + std::to_string(item.hard) +
               "]";
    }
  if (auto why = CheckIndex()) return why;
  std::map<std::string, std::pair<ResourceList, ResourceList>> cohorts;  // used, min
  for (const auto& e : eqs_) {
    if (e.used.AnyNegative()) return "ElasticQuota " + e.x.meta.namespace_ + " usage negative";
    if (e.x.max)
      for (const auto& [r, v] : e.x.max->entries())
        if (e.used.Get(r) > std::max(v, e.allowance.Get(r)))
          return "ElasticQuota " + e.x.meta.namespace_ + " above max " + r;
    if (e.x.cohort.empty()) continue;
    cohorts[e.x.cohort].first += e.used;
    cohorts[e.x.cohort].second += e.x.min;
  }
  for (const auto& [c, um] : cohorts) {
    auto a = cohort_allowance_.find(c);
    for (const auto& [r, v] : um.second.entries())
      if (um.first.Get(r) >
          std::max(v, a == cohort_allowance_.end() ? int64_t{0} : a->second.Get(r)))
        return "cohort " + c + " above its total min in " + r;
  }
  return std::nullopt;
}

}  // namespace arbiter::engine
