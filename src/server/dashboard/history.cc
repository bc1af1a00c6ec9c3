#include "server/dashboard/history.h"

#include <set>
#include <string_view>
#include <unordered_map>

#include "core/engine/fair_share.h"
#include "core/int128.h"

namespace arbiter::server::dashboard {

namespace {

constexpr int64_t kMilliPerGpu = 1000;
constexpr Millis kMsPerHour = 3600000;

bool PoolResource(std::string_view r) {
  return r == kCpu || r == kMemory || r == kGpu || IsMigResourceName(r);
}

// a / b rounded half away from zero (b > 0, a >= 0).
int128 DivRound(int128 a, int128 b) { return (a * 2 + b) / (b * 2); }

// Milli-GPU-milliseconds as GPU-hours, and priced per GPU-hour.
Decimal GpuHours(int128 milli_ms) {
  return Decimal::FromUnits(DivRound(milli_ms * Decimal::kOne, int128{kMilliPerGpu} * kMsPerHour));
}
Decimal Cost(int128 milli_ms, Decimal price) {
  return Decimal::FromUnits(DivRound(milli_ms * price.units(), int128{kMilliPerGpu} * kMsPerHour));
}
std::string Money(Decimal d) { return d.RoundHalfUp(2).ToFixed(2); }

const PriceBook* InEffect(const std::vector<PriceBook>& books, Millis now) {
  const PriceBook* best = nullptr;
  for (const PriceBook& b : books)
    if (b.effective_from <= now &&
        (!best || b.effective_from > best->effective_from ||
         (b.effective_from == best->effective_from && b.meta.name < best->meta.name)))
      best = &b;
  return best;
}

std::optional<Decimal> GpuPrice(const PriceBook& b, const std::string& model) {
  if (auto it = b.gpu_models.find(model); it != b.gpu_models.end()) return it->second;
  if (auto it = b.prices.find(std::string(kGpu)); it != b.prices.end()) return it->second;
  return std::nullopt;
}

Json IdleView(const std::deque<Sample>& samples, const std::vector<PriceBook>& books, Millis now) {
  const PriceBook* book = InEffect(books, now);
  if (!book)
    return {{"priceBook", nullptr},
            {"why", books.empty() ? "no PriceBook is applied"
                                  : "no applied PriceBook is in effect yet (spec.effectiveFrom)"}};
  std::map<std::string, int128> milli_ms;  // by model
  for (size_t i = 0; i < samples.size(); ++i) {
    const Millis until = i + 1 < samples.size() ? samples[i + 1].time : now;
    if (until <= samples[i].time) continue;
    for (const auto& [model, idle] : samples[i].pool.idle_gpu_milli)
      milli_ms[model] += static_cast<int128>(idle) * (until - samples[i].time);
  }
  const std::map<std::string, int64_t> idle_now =
      samples.empty() ? std::map<std::string, int64_t>{} : samples.back().pool.idle_gpu_milli;
  std::set<std::string> models;
  for (const auto& [m, x] : milli_ms) models.insert(m);
  for (const auto& [m, x] : idle_now) models.insert(m);
  Json by_model = Json::array();
  int128 total_ms = 0;
  int64_t total_now = 0;
  Decimal cost, per_hour;
  for (const std::string& m : models) {
    const int128 ms = milli_ms.count(m) ? milli_ms[m] : 0;
    const int64_t now_milli = idle_now.count(m) ? idle_now.at(m) : 0;
    const std::optional<Decimal> price = GpuPrice(*book, m);
    Json row = {{"model", m},
                {"gpuHours", GpuHours(ms).RoundHalfUp(3).ToString()},
                {"nowGpus", static_cast<double>(now_milli) / kMilliPerGpu},
                {"pricePerGpuHour", nullptr},
                {"cost", nullptr}};
    total_ms += ms;
    total_now += now_milli;
    if (price) {
      const Decimal c = Cost(ms, *price);
      cost += c;
      per_hour += Cost(int128{now_milli} * kMsPerHour, *price);
      row["pricePerGpuHour"] = price->ToString();
      row["cost"] = Money(c);
    }
    by_model.push_back(std::move(row));
  }
  return {{"priceBook", book->meta.name},
          {"currency", book->currency},
          {"since", samples.empty() ? now : samples.front().time},
          {"gpuHours", GpuHours(total_ms).RoundHalfUp(3).ToString()},
          {"cost", Money(cost)},
          {"nowGpus", static_cast<double>(total_now) / kMilliPerGpu},
          {"nowCostPerHour", Money(per_hour)},
          {"byModel", std::move(by_model)}};
}

// Columns of one ResourceList field of these samples: {resource: [amount per sample]}.
template <typename Get>
Json Columns(const std::vector<const Sample*>& samples, Get get) {
  std::set<std::string> names;
  for (const Sample* s : samples)
    if (const ResourceList* l = get(*s))
      for (const auto& [r, v] : l->entries()) names.insert(r);
  Json out = Json::object();
  for (const std::string& r : names) {
    Json col = Json::array();
    for (const Sample* s : samples) {
      const ResourceList* l = get(*s);
      col.push_back(l ? Json(l->Get(r)) : Json(nullptr));
    }
    out[r] = std::move(col);
  }
  return out;
}

}  // namespace

SampleFacts CollectSample(const Cluster& c, Millis time) {
  SampleFacts f;
  f.time = time;
  f.live = c.live_facts().Share();
  f.nodes = c.engine().NodeTotals();
  f.quotas = ElasticQuotaStates(c.engine());
  return f;
}

Sample MakeSample(const SampleFacts& f) {
  Sample s;
  s.time = f.time;
  s.tenants = f.quotas;
  // The workloads holding a node (running and terminating): what they request by namespace
  // (Engine::namespace_usages), their use, and the MIG slices they hold by node.
  std::unordered_map<std::string_view, ResourceList> mig;
  std::unordered_map<const std::string*, ResourceList*> used_of;  // by interned namespace
  f.live.ForEach([&](const LiveFact& w) {
    if (!w.running()) return;
    ResourceList*& used = used_of[w.namespace_];
    if (!used) used = &s.tenants[*w.namespace_].used;
    *used += w.requests();
    // The declared use as the cluster keeps it (arbiter.dev/usage, parsed when the pod was
    // applied), else its requests.
    for (const auto& [r, v] : w.usage().entries())
      if (PoolResource(r)) s.pool.used.Set(r, s.pool.used.Get(r) + v);
    for (const auto& [r, v] : w.requests().entries())
      if (IsMigResourceName(r)) {
        ResourceList& m = mig[*w.node];
        m.Set(r, m.Get(r) + v);
      }
  });
  for (const engine::NodeStatus& n : f.nodes) {
    ResourceList alloc = {{std::string(kCpu), n.cpu_used_milli},
                          {std::string(kMemory), n.mem_used_bytes}};
    ResourceList cap = {{std::string(kCpu), n.cpu_capacity_milli},
                        {std::string(kMemory), n.mem_capacity_bytes}};
    int64_t gpu_used = 0;
    for (int32_t u : n.gpu_used_milli) gpu_used += u;
    const int64_t gpu_cap = static_cast<int64_t>(n.gpu_used_milli.size()) * kMilliPerGpu;
    if (gpu_cap > 0) {
      alloc.Set(kGpu, gpu_used);
      cap.Set(kGpu, gpu_cap);
      s.pool.idle_gpu_milli[n.gpu_model] += gpu_cap - gpu_used;
    }
    for (const auto& [r, v] : n.spec.allocatable.entries())
      if (IsMigResourceName(r)) cap.Set(r, v);
    if (auto m = mig.find(n.name); m != mig.end())
      for (const auto& [r, v] : m->second.entries()) alloc.Set(r, alloc.Get(r) + v);
    s.pool.allocated += alloc;
    s.pool.capacity += cap;
  }
  return s;
}

Sample TakeSample(const Cluster& c, Millis time) { return MakeSample(CollectSample(c, time)); }

bool History::Add(Sample s) {
  if (!samples_.empty()) {
    const Sample& last = samples_.back();
    if (s.time < last.time) s.time = last.time;  // the wall clock stepped back: keep the order
    if (s.pool == last.pool && s.tenants == last.tenants && s.time - last.time < heartbeat_)
      return false;
  }
  s.seq = next_seq_++;
  samples_.push_back(std::move(s));
  while (samples_.size() > capacity_) samples_.pop_front();
  return true;
}

void History::Restore(Sample s) {
  if (s.seq < next_seq_ || (!samples_.empty() && s.time < samples_.back().time)) return;
  next_seq_ = s.seq + 1;
  samples_.push_back(std::move(s));
  while (samples_.size() > capacity_) samples_.pop_front();
}

Json HistoryView(const History& h, const std::vector<PriceBook>& price_books, const Viewer& v,
                 Millis now, int64_t since) {
  const auto& all = h.samples();
  // Appending is right when the ring still holds every sample after `since`.
  const bool full =
      since <= 0 || all.empty() || since < all.front().seq - 1 || since > h.last_seq();
  std::vector<const Sample*> samples;
  for (const Sample& s : all)
    if (full || s.seq > since) samples.push_back(&s);
  Json times = Json::array();
  for (const Sample* s : samples) times.push_back(s->time);
  Json pool = {{"allocated", Columns(samples, [](const Sample& s) { return &s.pool.allocated; })},
               {"used", Columns(samples, [](const Sample& s) { return &s.pool.used; })},
               {"capacity", Columns(samples, [](const Sample& s) { return &s.pool.capacity; })}};
  std::set<std::string> namespaces;
  for (const Sample* s : samples)
    for (const auto& [ns, q] : s->tenants)
      if (v.Sees(ns)) namespaces.insert(ns);
  Json tenants = Json::object();
  for (const std::string& ns : namespaces) {
    auto field = [&](auto member) {
      return Columns(samples, [&](const Sample& s) -> const ResourceList* {
        auto it = s.tenants.find(ns);
        return it == s.tenants.end() ? nullptr : member(it->second);
      });
    };
    Json shares = Json::array();
    std::string quota, cohort;
    for (const Sample* s : samples) {
      auto it = s->tenants.find(ns);
      if (it == s->tenants.end()) {
        shares.push_back(nullptr);
        continue;
      }
      shares.push_back(engine::FormatShare(it->second.fair_share));
      quota = it->second.quota;
      cohort = it->second.cohort;
    }
    tenants[ns] = {{"quota", quota},
                   {"cohort", cohort},
                   {"used", field([](const QuotaState& q) { return &q.used; })},
                   {"min", field([](const QuotaState& q) { return &q.min; })},
                   {"max", field([](const QuotaState& q) -> const ResourceList* {
                      return q.max ? &*q.max : nullptr;
                    })},
                   {"borrowed", field([](const QuotaState& q) { return &q.borrowed; })},
                   {"lent", field([](const QuotaState& q) { return &q.lent; })},
                   {"fairShare", std::move(shares)}};
  }
  return {{"capacity", h.capacity()},
          {"heartbeatSeconds", h.heartbeat() / 1000},
          {"seq", h.last_seq()},
          {"full", full},
          {"times", std::move(times)},
          {"pool", std::move(pool)},
          {"idle", IdleView(all, price_books, now)},
          {"tenants", std::move(tenants)}};
}

}  // namespace arbiter::server::dashboard
