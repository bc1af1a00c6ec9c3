#include "sim/report.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "adapters/report/invoice_json.h"
#include "core/decimal.h"
#include "core/engine/fair_share.h"
#include "core/int128.h"
#include "core/plural.h"
#include "core/policy_names.h"
#include "core/quantity.h"
#include "sim/fair_share_report.h"

namespace arbiter::sim {

using engine::EventType;
using engine::Phase;

std::string RatioString(int128 num, int128 den, int digits) {
  if (den == 0) return "0";
  int128 scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  int128 q = (num * scale * 2 + den) / (den * 2);
  std::string whole = Int128ToString(q / scale);
  std::string frac = Int128ToString(q % scale);
  frac.insert(frac.begin(), static_cast<size_t>(digits) - frac.size(), '0');
  return whole + "." + frac;
}

nlohmann::json Seconds(Millis ms) {
  if (ms % 1000 == 0) return ms / 1000;
  return nlohmann::json(static_cast<double>(ms) / 1000.0);
}

namespace {

// Each resource's node capacity (while each node is in the pool) and allocation over the run.
void SummariseUtilisation(const ManifestSet& m, const driver::SimResult& e, Summary& s) {
  for (const char* res : {"cpu", "memory", "nvidia.com/gpu"}) {
    Summary::Util u;
    u.resource = res;
    for (const auto& n : m.nodes) {
      const ResourceList& a = n.allocatable.empty() ? n.capacity : n.allocatable;
      const NodeWindow in = NodeWindowOf(n, s.horizon);  // only while the node is in the pool
      u.capacity += static_cast<int128>(a.Get(res)) * (in.to - in.from);
    }
    for (const auto& run : e.runs())
      u.allocated +=
          static_cast<int128>(e.workloads()[engine::Value(run.workload)].requests.Get(res)) *
          (run.end - run.start);
    s.utilisation.push_back(u);
  }
}

// The final phases, the pending time per priority tier (high first) and the GPU work lost.
void SummariseWorkloads(const driver::SimResult& e, Summary& s) {
  std::map<int32_t, Summary::Tier, std::greater<int32_t>> tiers;
  for (const auto& w : e.workloads()) {
    if (w.phase == Phase::kRejected) {
      ++s.rejected;
      continue;
    }
    auto& t = tiers[w.priority];
    t.priority = w.priority;
    t.workloads++;
    t.pending_total += w.pending_total;
    t.pending_max = std::max(t.pending_max, w.pending_total);
    s.gpu_milli_ms_lost += w.lost_gpu_milli_ms;
    s.gpu_milli_ms_lost_node_removed += w.lost_gpu_milli_ms_node_removed;
    switch (w.phase) {
      case Phase::kSucceeded:
        ++s.succeeded;
        break;
      case Phase::kRunning:
      case Phase::kTerminating:
        ++s.running;
        break;
      case Phase::kPending:
        ++s.pending;
        break;
      case Phase::kPreempted:
        ++s.preempted;
        break;
      default:
        break;
    }
  }
  for (auto& [p, t] : tiers) s.tiers.push_back(t);
}

// The event counts, the loss per namespace; returns the keys of the workloads that preempted.
std::set<std::string_view> SummariseEvents(const driver::SimResult& e, Summary& s) {
  std::map<std::string_view, Summary::NamespaceLoss> loss;
  for (const auto& w : e.workloads()) {
    auto& l = loss[w.namespace_];
    l.gpu_milli_ms_lost += w.lost_gpu_milli_ms;
  }
  std::set<std::string_view> preemptors;
  for (const auto& ev : e.events()) {
    if (ev.type == EventType::kPreempted || ev.type == EventType::kReclaimed) {
      if (ev.workload != engine::kNoWorkload)
        ++loss[e.workloads()[engine::Value(ev.workload)].namespace_].preempted;
      if (!ev.by.empty()) preemptors.insert(ev.by);
    }
    if (ev.type == EventType::kPreempted) ++s.preemptions;
    if (ev.type == EventType::kReclaimed) ++s.reclaims;
    if (ev.type == EventType::kRequeued) ++s.requeues;
    if (ev.type == EventType::kCancelled) ++s.cancellations;
    if (ev.type == EventType::kNodeAdded) ++s.nodes_added;
    if (ev.type == EventType::kNodeRemoved) ++s.nodes_removed;
  }
  for (auto& [ns, l] : loss) {
    l.namespace_ = std::string(ns);
    s.loss_by_namespace.push_back(std::move(l));
  }
  return preemptors;
}

// The preemptors' pending time (with and without the time held out of the queue), sorted.
void SummarisePreemptors(const driver::SimResult& e, const std::set<std::string_view>& preemptors,
                         Summary& s) {
  for (const auto& w : e.workloads())
    if (preemptors.count(w.key)) {
      ++s.preemptors;
      s.preemptor_pending_total += w.pending_total;
      s.preemptors_held += w.held_total > 0;
      s.preemptor_held_total += w.held_total;
      s.preemptor_pending.push_back(w.pending_total);
      s.preemptor_pending_unheld.push_back(w.pending_total - w.held_total);
    }
  std::sort(s.preemptor_pending.begin(), s.preemptor_pending.end());
  std::sort(s.preemptor_pending_unheld.begin(), s.preemptor_pending_unheld.end());
}

}  // namespace

Summary Summarise(const ManifestSet& m, const driver::SimResult& r) {
  Summary s;
  s.horizon = r.end_time;
  SummariseUtilisation(m, r, s);
  SummariseWorkloads(r, s);
  SummarisePreemptors(r, SummariseEvents(r, s), s);
  return s;
}

namespace {

// The median of ascending durations in seconds (the mean of the middle two for an even count;
// "0.000" for none).
std::string MedianSeconds(const std::vector<Millis>& v) {
  if (v.empty()) return RatioString(0, 1, 3);
  const size_t m = v.size() / 2;
  const int128 twice = v.size() % 2 ? int128{v[m]} * 2 : int128{v[m - 1]} + v[m];
  return RatioString(twice, 2000, 3);
}

int64_t PoolCapacity(const ManifestSet& m, const std::string& res) {
  int64_t c = 0;
  for (const auto& n : m.nodes) c += (n.allocatable.empty() ? n.capacity : n.allocatable).Get(res);
  return c;
}

// Capacity of the nodes in the pool at instant t.
int64_t PoolCapacityAt(const ManifestSet& m, const std::string& res, Millis t) {
  int64_t c = 0;
  for (const auto& n : m.nodes)
    if (NodePresentAt(n, t)) c += (n.allocatable.empty() ? n.capacity : n.allocatable).Get(res);
  return c;
}

}  // namespace

namespace {

// One point of the timeline.
struct TimelineRow {
  Millis time = 0;
  std::string allocated[3];  // cpu, memory, nvidia.com/gpu
  int64_t running = 0, pending = 0;
};
constexpr const char* kTimelineRes[] = {"cpu", "memory", "nvidia.com/gpu"};

// An allocation change: + at a run's start, - at its end (runs hold their requests until exit).
struct TimelineDelta {
  Millis time;
  int64_t amount[3];
  int running;
};

// The runs' allocation changes in time order (equal times keep run order).
std::vector<TimelineDelta> TimelineDeltas(const driver::SimResult& e) {
  // Engine::Finish closes the runs still holding resources at the end, after every other run: they
  // hold their requests at the last point too.
  size_t open = 0;
  for (const auto& w : e.workloads()) open += w.on_node;
  const size_t closed = e.runs().size() - std::min(open, e.runs().size());
  std::vector<TimelineDelta> deltas;
  deltas.reserve(e.runs().size() * 2);
  for (size_t k = 0; k < e.runs().size(); ++k) {
    const auto& run = e.runs()[k];
    if (run.end <= run.start && k < closed) continue;
    TimelineDelta up{run.start, {}, 1}, down{run.end, {}, -1};
    for (int i = 0; i < 3; ++i) {
      up.amount[i] = e.workloads()[engine::Value(run.workload)].requests.Get(kTimelineRes[i]);
      down.amount[i] = -up.amount[i];
    }
    deltas.push_back(up);
    if (k < closed) deltas.push_back(down);
  }
  std::stable_sort(deltas.begin(), deltas.end(),
                   [](const TimelineDelta& a, const TimelineDelta& b) { return a.time < b.time; });
  return deltas;
}

// The timeline's instants: 0, the events' (in time order as recorded; sorted if not) and the end,
// merged with the deltas', each once.
std::vector<Millis> TimelineInstants(const driver::SimResult& r,
                                     const std::vector<TimelineDelta>& deltas) {
  std::vector<Millis> event_times;
  event_times.reserve(r.events().size() + 2);
  event_times.push_back(0);
  for (const auto& ev : r.events()) event_times.push_back(ev.time);
  event_times.push_back(r.end_time);
  if (!std::is_sorted(event_times.begin(), event_times.end()))
    std::sort(event_times.begin(), event_times.end());
  std::vector<Millis> times;
  times.reserve(event_times.size() + deltas.size());
  for (size_t a = 0, b = 0; a < event_times.size() || b < deltas.size();)
    times.push_back(b == deltas.size() ||
                            (a < event_times.size() && event_times[a] <= deltas[b].time)
                        ? event_times[a++]
                        : deltas[b++].time);
  std::vector<Millis>().swap(event_times);
  times.erase(std::unique(times.begin(), times.end()), times.end());
  return times;
}

// Pending: submitted or requeued, and not yet scheduled, rejected, cancelled or completed. Counts
// the workloads pending as the events come in (in time order).
class PendingCount {
 public:
  explicit PendingCount(size_t workloads) : pending_of_(workloads, 0) {}
  void Apply(const driver::SimEvent& ev) {
    if (ev.workload == engine::kNoWorkload) return;  // pool events
    char& p = pending_of_[engine::Value(ev.workload)];
    bool now = p != 0;
    switch (ev.type) {
      case EventType::kSubmitted:
      case EventType::kRequeued:
        now = true;
        break;
      case EventType::kScheduled:
      case EventType::kRejected:
      case EventType::kCancelled:
      case EventType::kCompleted:
        now = false;
        break;
      default:
        break;
    }
    pending_ += static_cast<int64_t>(now) - static_cast<int64_t>(p);
    p = now;
  }
  int64_t pending() const { return pending_; }

 private:
  std::vector<char> pending_of_;  // by workload id
  int64_t pending_ = 0;
};

void ForEachTimelineRow(const ManifestSet& m, const driver::SimResult& r,
                        const std::function<void(const TimelineRow&)>& sink) {
  int64_t cap[3];
  for (int i = 0; i < 3; ++i) cap[i] = PoolCapacity(m, kTimelineRes[i]);
  bool pool_changes = false;
  for (const auto& n : m.nodes) pool_changes |= n.sim.add_time > 0 || n.sim.remove_time.has_value();
  const std::vector<TimelineDelta> deltas = TimelineDeltas(r);
  const std::vector<Millis> times = TimelineInstants(r, deltas);
  PendingCount pending(r.workloads().size());
  int64_t alloc[3] = {0, 0, 0};
  int64_t running = 0;
  size_t di = 0, ei = 0;
  const auto& events = r.events();
  TimelineRow row;
  for (Millis t : times) {
    if (t > r.end_time) break;
    for (; di < deltas.size() && deltas[di].time <= t; ++di) {
      for (int i = 0; i < 3; ++i) alloc[i] += deltas[di].amount[i];
      running += deltas[di].running;
    }
    for (; ei < events.size() && events[ei].time <= t; ++ei) pending.Apply(events[ei]);
    row.time = t;
    if (pool_changes)
      for (int i = 0; i < 3; ++i) cap[i] = PoolCapacityAt(m, kTimelineRes[i], t);
    for (int i = 0; i < 3; ++i) row.allocated[i] = RatioString(alloc[i], cap[i]);
    row.running = running;
    row.pending = pending.pending();
    sink(row);
  }
}

}  // namespace

void ForEachTimelinePoint(const ManifestSet& m, const driver::SimResult& r, const JsonSink& sink) {
  ForEachTimelineRow(m, r, [&](const TimelineRow& row) {
    nlohmann::json j;
    j["time"] = Seconds(row.time);
    nlohmann::json a;
    for (int i = 0; i < 3; ++i) a[kTimelineRes[i]] = row.allocated[i];
    j["allocated"] = a;
    j["running"] = row.running;
    j["pending"] = row.pending;
    sink(j);
  });
}

nlohmann::json TimelineJson(const ManifestSet& m, const driver::SimResult& r) {
  nlohmann::json out = nlohmann::json::array();
  ForEachTimelinePoint(m, r, [&](const nlohmann::json& j) { out.push_back(j); });
  return out;
}

namespace {

// The report's "pool": the policy in use and the capacity of each resource summarised.
nlohmann::json PoolJson(const ManifestSet& m, const driver::SimResult& r, const Summary& s) {
  using nlohmann::json;
  json pool;
  pool["nodes"] = m.nodes.size();
  pool["placement"] = ToString(r.policy().placement);
  pool["preemption"] = ToString(r.policy().preemption_type);
  pool["victimOrder"] = VictimOrderInUse(r.policy());
  if (const auto& b = r.policy().requeue_backoff)  // present only when the policy sets it
  {
    pool["requeuingStrategy"] = {{"backoffBaseSeconds", b->base / 1000},
                                 {"backoffMaxSeconds", b->max / 1000}};
    if (b->immediate > 0) pool["requeuingStrategy"]["immediateRequeues"] = b->immediate;
  }
  json capacity = json::object();
  for (const auto& u : s.utilisation)
    capacity[u.resource] = FormatResourceQuantity(u.resource, PoolCapacity(m, u.resource));
  pool["capacity"] = capacity;
  return pool;
}

// Fair sharing (only for pools with cohorts): each cohort namespace's weighted share; null when
// there is none.
nlohmann::json FairSharesJson(const ManifestSet& m, const driver::SimResult& r) {
  using nlohmann::json;
  auto shares = SummariseFairShares(m, r);
  if (shares.empty()) return nullptr;
  json fs = json::array();
  for (const auto& f : shares)
    fs.push_back({{"namespace", f.namespace_},
                  {"cohort", f.cohort},
                  {"weight", FormatMillis(f.weight_milli)},
                  {"maxShare", engine::FormatShare(f.max_share)},
                  {"maxShareTime", Seconds(f.max_share_at)},
                  {"meanShare", engine::FormatShare(f.mean_share)},
                  {"finalShare", engine::FormatShare(f.final_share)}});
  return fs;
}

// Quota per flavor (only for ElasticQuotas with spec.flavors): each namespace's flavors, in their
// fallback order, with the usage at the end and the workloads last admitted on each.
nlohmann::json FlavorQuotasJson(const driver::SimResult& r) {
  using nlohmann::json;
  json fq = json::array();
  for (const auto& f : r.flavor_usage) {
    int64_t n = 0;
    for (const auto& w : r.workloads())
      if (w.namespace_ == f.namespace_ && w.flavor == f.flavor) ++n;
    json j = {{"namespace", f.namespace_}, {"flavor", f.flavor}, {"min", f.min.ToString()}};
    if (f.max) j["max"] = f.max->ToString();
    j["usedAtEnd"] = f.used.ToString();
    j["workloads"] = n;
    fq.push_back(j);
  }
  return fq;
}

// The report's "summary".
nlohmann::json SummaryJson(const ManifestSet& m, const driver::SimResult& r, const Summary& s) {
  using nlohmann::json;
  json sum;
  json util = json::object();
  for (const auto& u : s.utilisation) util[u.resource] = RatioString(u.allocated, u.capacity);
  sum["utilisation"] = util;
  json tiers = json::array();
  for (const auto& t : s.tiers) {
    json j;
    j["priority"] = t.priority;
    j["workloads"] = t.workloads;
    j["pendingSecondsTotal"] = Seconds(t.pending_total);
    j["pendingSecondsMean"] =
        RatioString(t.pending_total, static_cast<int128>(t.workloads) * 1000, 3);
    j["pendingSecondsMax"] = Seconds(t.pending_max);
    tiers.push_back(j);
  }
  sum["pendingByTier"] = tiers;
  sum["preemptions"] = s.preemptions;
  sum["reclaims"] = s.reclaims;
  sum["requeued"] = s.requeues;
  sum["cancelled"] = s.cancellations;
  sum["gpuSecondsLostToPreemption"] = RatioString(s.gpu_milli_ms_lost, 1000000, 3);
  // By namespace (issue 29): lost GPU-seconds and victims; the victim order is pool.victimOrder.
  json by_ns = json::array();
  for (const auto& l : s.loss_by_namespace)
    by_ns.push_back({{"namespace", l.namespace_},
                     {"gpuSecondsLost", RatioString(l.gpu_milli_ms_lost, 1000000, 3)},
                     {"preempted", l.preempted}});
  sum["gpuSecondsLostToPreemptionByNamespace"] = by_ns;
  const int128 n = static_cast<int128>(s.preemptors) * 1000;
  sum["preemptors"] = {
      {"workloads", s.preemptors},
      {"pendingSecondsTotal", Seconds(s.preemptor_pending_total)},
      {"pendingSecondsMean", RatioString(s.preemptor_pending_total, n, 3)},
      {"pendingSecondsMedian", MedianSeconds(s.preemptor_pending)},
      // The requeue back-off a preemptor waited out as a victim, and its pending time without it.
      {"heldWorkloads", s.preemptors_held},
      {"heldSecondsTotal", Seconds(s.preemptor_held_total)},
      {"pendingSecondsMeanWithoutHeld",
       RatioString(s.preemptor_pending_total - s.preemptor_held_total, n, 3)},
      {"pendingSecondsMedianWithoutHeld", MedianSeconds(s.preemptor_pending_unheld)}};
  sum["nodesAdded"] = s.nodes_added;
  sum["nodesRemoved"] = s.nodes_removed;
  sum["gpuSecondsLostToNodeRemoval"] = RatioString(s.gpu_milli_ms_lost_node_removed, 1000000, 3);
  json phases;
  phases["Succeeded"] = s.succeeded;
  phases["Running"] = s.running;
  phases["Pending"] = s.pending;
  phases["Preempted"] = s.preempted;
  phases["Rejected"] = s.rejected;
  sum["phases"] = phases;
  if (json fs = FairSharesJson(m, r); !fs.is_null()) sum["fairShares"] = std::move(fs);
  if (!r.flavor_usage.empty()) sum["flavorQuotas"] = FlavorQuotasJson(r);
  return sum;
}

// The report without its three long arrays (workloads, events, timeline).
nlohmann::json ReportHead(const ManifestSet& m, const driver::SimResult& r, const Summary& s,
                          const nlohmann::json& invoices) {
  using nlohmann::json;
  json out;
  out["apiVersion"] = "arbiter.dev/v1alpha1";
  out["kind"] = "SimulationReport";
  out["endTime"] = Seconds(r.end_time);
  out["pool"] = PoolJson(m, r, s);
  out["invoices"] = invoices.is_null() ? json::array() : invoices;
  out["summary"] = SummaryJson(m, r, s);
  return out;
}

void ForEachWorkloadJson(const driver::SimResult& r, const JsonSink& sink) {
  using nlohmann::json;
  const std::vector<size_t> last_pending = LastPendingEvents(r);
  const auto& evs = r.events();
  for (const auto& w : r.workloads()) {
    json j;
    j["name"] = w.key;
    j["namespace"] = w.namespace_;
    j["priority"] = w.priority;
    if (!w.priority_class.empty()) j["priorityClass"] = w.priority_class;
    if (!w.qos.empty()) j["qos"] = w.qos;
    j["phase"] = engine::ToString(w.phase);
    j["node"] = w.last_node.empty() ? json(nullptr) : json(w.last_node);
    j["startTime"] = w.first_start >= 0 ? Seconds(w.first_start) : json(nullptr);
    j["finishTime"] = w.finish_time >= 0 ? Seconds(w.finish_time) : json(nullptr);
    j["preemptions"] = w.preemptions;
    // The current reason (pending, rejected, cancelled...); once it runs or ran, the last reason
    // it waited for, so that a finished run still says why it waited.
    const size_t lp = last_pending[static_cast<size_t>(&w - r.workloads().data())];
    j["message"] = !w.message.empty() || lp == kNoEvent ? w.message : evs[lp].Message();
    if (lp == kNoEvent) {
      j["lastPendingReason"] = nullptr;
    } else {
      const driver::SimEvent& e = evs[lp];
      j["lastPendingReason"] = {{"time", Seconds(e.time)},
                                {"type", engine::ToString(e.type)},
                                {"reason", std::string(e.reason)},
                                {"message", e.Message()}};
    }
    j["requests"] = w.requests.ToString();
    j["pendingSeconds"] = Seconds(w.pending_total);
    // Of it, held out of the queue by a requeue back-off (present only when it was).
    if (w.held_total > 0) j["heldSeconds"] = Seconds(w.held_total);
    j["borrowed"] = w.borrowed;
    if (!w.flavor.empty()) j["flavor"] = w.flavor;
    j["progressSeconds"] = Seconds(w.progress);
    sink(j);
  }
}

void ForEachEventJson(const driver::SimResult& r, const JsonSink& sink) {
  using nlohmann::json;
  for (const auto& ev : r.events()) {
    json j;
    j["time"] = Seconds(ev.time);
    j["type"] = engine::ToString(ev.type);
    j["workload"] =
        ev.workload == engine::kNoWorkload
            ? json(nullptr)
            : json(r.workloads()[engine::Value(ev.workload)].key);  // null on pool events
    j["node"] = ev.node.empty() ? json(nullptr) : json(ev.node);
    j["by"] = ev.by.empty() ? json(nullptr) : json(ev.by);
    j["reason"] = ev.reason;
    j["message"] = ev.Message();
    sink(j);
  }
}

using ArrayWriter = std::function<void(const JsonSink&)>;

std::map<std::string, ArrayWriter> LongArrays(const ManifestSet& m, const driver::SimResult& r) {
  return {{"workloads", [&](const JsonSink& k) { ForEachWorkloadJson(r, k); }},
          {"events", [&](const JsonSink& k) { ForEachEventJson(r, k); }},
          {"timeline", [&](const JsonSink& k) { ForEachTimelinePoint(m, r, k); }}};
}

// A streaming writer with nlohmann's pretty-printer layout (dump(2)): objects' keys in order, two
// spaces per level. A value is either a small JSON DOM or an array written element by element.
std::string Pad(size_t depth) { return std::string(2 * depth, ' '); }

// `text` (a value dumped with indent 2) placed at nesting depth `depth`.
void Indented(std::ostream& os, const std::string& text, size_t depth) {
  const std::string pad = Pad(depth);
  size_t from = 0;
  for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1)
    os.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from)) << pad;
  os.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

// Writes one array element at `depth` (the cursor is already indented).
using ElementWriter = std::function<void(std::ostream& os, size_t depth)>;
using LazyArray = std::function<void(const std::function<void(const ElementWriter&)>&)>;

void WriteArray(std::ostream& os, const LazyArray& each, size_t depth) {
  bool first = true;
  static constexpr std::string_view kSpaces = "                                ";
  const size_t pad = 2 * (depth + 1);
  each([&](const ElementWriter& write) {
    os.write(first ? "[\n" : ",\n", 2);
    for (size_t left = pad; left > 0;) {  // Pad(depth + 1) without a string
      const size_t n = std::min(left, kSpaces.size());
      os.write(kSpaces.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
    first = false;
    write(os, depth + 1);
  });
  if (first)
    os << "[]";
  else
    os << "\n" << Pad(depth) << "]";
}

void WriteObject(std::ostream& os, const nlohmann::json& head,
                 const std::map<std::string, LazyArray>& arrays, size_t depth) {
  std::set<std::string> keys;
  for (const auto& [k, v] : head.items()) keys.insert(k);
  for (const auto& [k, v] : arrays) keys.insert(k);
  if (keys.empty()) {
    os << "{}";
    return;
  }
  os << "{\n";
  size_t i = 0;
  for (const auto& key : keys) {
    os << Pad(depth + 1) << nlohmann::json(key).dump() << ": ";
    if (auto a = arrays.find(key); a != arrays.end())
      WriteArray(os, a->second, depth + 1);
    else
      Indented(os, head.at(key).dump(2), depth + 1);
    os << (++i < keys.size() ? ",\n" : "\n");
  }
  os << Pad(depth) << "}";
}

// The workloads and events arrays hold millions of elements: they are written directly, with the
// bytes nlohmann's dump(2) gives the same objects (keys sorted, as in its std::map objects; values
// nlohmann would escape are left to nlohmann). scenario_test compares the two on every scenario.
// One DumpedObject serves every element of an array (Reset between them): its buffers keep their
// room, so an element costs no allocation.
class DumpedObject {
 public:
  explicit DumpedObject(size_t depth) { Reset(depth); }
  void Reset(size_t depth) {
    depth_ = depth;
    kv_.clear();
    values_.clear();
  }
  void Raw(std::string_view key, std::string_view value) {
    kv_.push_back({key, values_.size(), value.size()});
    values_ += value;
  }
  void String(std::string_view key, std::string_view v) { String(key, {}, v); }
  // The string `head` + `tail` (no copy of the two joined).
  void String(std::string_view key, std::string_view head, std::string_view tail) {
    if (NeedsEscaping(head) || NeedsEscaping(tail)) {
      std::string whole(head);
      whole += tail;
      return Raw(key, nlohmann::json(whole).dump());
    }
    kv_.push_back({key, values_.size(), head.size() + tail.size() + 2});
    values_ += '"';
    values_ += head;
    values_ += tail;
    values_ += '"';
  }
  // An event's message (SimEvent::Message, without building it).
  void Message(std::string_view key, const driver::SimEvent& e) {
    if (e.type == engine::EventType::kScheduled && e.message.empty())
      String(key, "bound to ", e.node);
    else
      String(key, e.message);
  }
  void StringOrNull(std::string_view key, std::string_view v, bool null) {
    if (null) return Raw(key, "null");
    String(key, v);
  }
  void Int(std::string_view key, int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    Raw(key, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
  }
  void Bool(std::string_view key, bool v) { Raw(key, v ? "true" : "false"); }
  void Seconds(std::string_view key, Millis ms) {
    if (ms % 1000 == 0) return Int(key, ms / 1000);
    Raw(key, sim::Seconds(ms).dump());
  }
  // Appends the object to `out`. Callers add the keys in order where they can: then there is
  // nothing to sort.
  void AppendTo(std::string& out) {
    auto less = [](const Field& a, const Field& b) { return a.key < b.key; };
    if (std::adjacent_find(kv_.begin(), kv_.end(), [&](const Field& a, const Field& b) {
          return !less(a, b);
        }) != kv_.end())
      std::sort(kv_.begin(), kv_.end(), less);
    out += "{\n";
    for (size_t i = 0; i < kv_.size(); ++i) {
      out.append(2 * (depth_ + 1), ' ');
      out += '"';
      out += kv_[i].key;
      out += "\": ";
      out.append(values_, kv_[i].offset, kv_[i].size);
      out += i + 1 < kv_.size() ? ",\n" : "\n";
    }
    out.append(2 * depth_, ' ');
    out += '}';
  }
  // Writes the object to `os` through `scratch` (cleared first).
  void WriteTo(std::ostream& os, std::string& scratch) {
    scratch.clear();
    AppendTo(scratch);
    os.write(scratch.data(), static_cast<std::streamsize>(scratch.size()));
  }

 private:
  // What nlohmann escapes (or may: non-ASCII bytes are left to it).
  static bool NeedsEscaping(std::string_view v) {
    for (char c : v) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') return true;
    }
    return false;
  }
  struct Field {
    std::string_view key;  // a literal
    size_t offset, size;   // the value's bytes in values_
  };
  size_t depth_ = 0;
  std::vector<Field> kv_;
  std::string values_;
};

// ForEachWorkloadJson's objects, dumped at `depth`.
void EachWorkloadDumped(const driver::SimResult& r,
                        const std::function<void(const ElementWriter&)>& emit) {
  const std::vector<size_t> last_pending = LastPendingEvents(r);
  const auto& evs = r.events();
  DumpedObject j(0), reason(0);
  std::string scratch, nested;
  for (const auto& w : r.workloads()) {
    emit([&](std::ostream& os, size_t depth) {
      j.Reset(depth);  // the keys in order
      const size_t lp = last_pending[static_cast<size_t>(&w - r.workloads().data())];
      j.Bool("borrowed", w.borrowed);
      if (w.finish_time >= 0)
        j.Seconds("finishTime", w.finish_time);
      else
        j.Raw("finishTime", "null");
      if (!w.flavor.empty()) j.String("flavor", w.flavor);
      if (w.held_total > 0) j.Seconds("heldSeconds", w.held_total);
      if (lp == kNoEvent) {
        j.Raw("lastPendingReason", "null");
      } else {
        const driver::SimEvent& e = evs[lp];
        reason.Reset(depth + 1);
        reason.Message("message", e);
        reason.String("reason", e.reason);
        reason.Seconds("time", e.time);
        reason.String("type", engine::ToString(e.type));
        nested.clear();
        reason.AppendTo(nested);
        j.Raw("lastPendingReason", nested);
      }
      if (!w.message.empty() || lp == kNoEvent)
        j.String("message", w.message);
      else
        j.Message("message", evs[lp]);
      j.String("name", w.key);
      j.String("namespace", w.namespace_);
      j.StringOrNull("node", w.last_node, w.last_node.empty());
      j.Seconds("pendingSeconds", w.pending_total);
      j.String("phase", engine::ToString(w.phase));
      j.Int("preemptions", w.preemptions);
      j.Int("priority", w.priority);
      if (!w.priority_class.empty()) j.String("priorityClass", w.priority_class);
      j.Seconds("progressSeconds", w.progress);
      if (!w.qos.empty()) j.String("qos", w.qos);
      j.String("requests", w.requests.ToString());
      if (w.first_start >= 0)
        j.Seconds("startTime", w.first_start);
      else
        j.Raw("startTime", "null");
      j.WriteTo(os, scratch);
    });
  }
}

// ForEachEventJson's objects, dumped at `depth`.
void EachEventDumped(const driver::SimResult& r,
                     const std::function<void(const ElementWriter&)>& emit) {
  DumpedObject j(0);
  std::string scratch;
  for (const auto& ev : r.events()) {
    emit([&](std::ostream& os, size_t depth) {
      j.Reset(depth);  // the keys in order
      j.StringOrNull("by", ev.by, ev.by.empty());
      j.Message("message", ev);
      j.StringOrNull("node", ev.node, ev.node.empty());
      j.String("reason", ev.reason);
      j.Seconds("time", ev.time);
      j.String("type", engine::ToString(ev.type));
      const bool pool = ev.workload == engine::kNoWorkload;
      j.StringOrNull("workload", pool ? "" : r.workloads()[engine::Value(ev.workload)].key, pool);
      j.WriteTo(os, scratch);
    });
  }
}

// ForEachTimelinePoint's objects, dumped at `depth`.
void EachTimelinePointDumped(const ManifestSet& m, const driver::SimResult& r,
                             const std::function<void(const ElementWriter&)>& emit) {
  DumpedObject j(0), a(0);
  std::string scratch, nested;
  ForEachTimelineRow(m, r, [&](const TimelineRow& row) {
    emit([&](std::ostream& os, size_t depth) {
      j.Reset(depth);
      a.Reset(depth + 1);
      for (int i = 0; i < 3; ++i) a.String(kTimelineRes[i], row.allocated[i]);
      nested.clear();
      a.AppendTo(nested);
      j.Raw("allocated", nested);
      j.Int("pending", row.pending);
      j.Int("running", row.running);
      j.Seconds("time", row.time);
      j.WriteTo(os, scratch);
    });
  });
}

LazyArray OfJson(const ArrayWriter& w) {
  return [w](const std::function<void(const ElementWriter&)>& emit) {
    w([&](const nlohmann::json& j) {
      emit([&](std::ostream& os, size_t depth) { Indented(os, j.dump(2), depth); });
    });
  };
}

}  // namespace

nlohmann::json ReportJson(const ManifestSet& m, const driver::SimResult& r, const Summary& s,
                          const nlohmann::json& invoices) {
  nlohmann::json out = ReportHead(m, r, s, invoices);
  for (const auto& [key, write] : LongArrays(m, r)) {
    nlohmann::json a = nlohmann::json::array();
    write([&](const nlohmann::json& j) { a.push_back(j); });
    out[key] = std::move(a);
  }
  return out;
}

// Same bytes as ReportJson(..., BillJson(bill)).dump(2) + "\n", but the long arrays (workloads,
// events, timeline, each invoice's provenance) are written element by element, so a run with
// millions of workloads never holds their JSON in memory.
void WriteReportJson(std::ostream& os, const ManifestSet& m, const driver::SimResult& r,
                     const Summary& s, const SimBill& bill) {
  WriteReportJson(os, m, r, s, [&bill] { return &bill; });
}

namespace {
struct NoBill {};  // thrown through the writer when the bill never comes
}  // namespace

bool WriteReportJson(std::ostream& os, const ManifestSet& m, const driver::SimResult& r,
                     const Summary& s, const std::function<const SimBill*()>& get_bill) {
  nlohmann::json head = ReportHead(m, r, s, nlohmann::json::array());
  head.erase("invoices");
  std::map<std::string, LazyArray> arrays;
  for (const auto& [key, write] : LongArrays(m, r)) arrays[key] = OfJson(write);
  arrays["workloads"] = [&r](const std::function<void(const ElementWriter&)>& emit) {
    EachWorkloadDumped(r, emit);
  };
  arrays["events"] = [&r](const std::function<void(const ElementWriter&)>& emit) {
    EachEventDumped(r, emit);
  };
  arrays["timeline"] = [&m, &r](const std::function<void(const ElementWriter&)>& emit) {
    EachTimelinePointDumped(m, r, emit);
  };
  arrays["invoices"] = [&get_bill](const std::function<void(const ElementWriter&)>& emit) {
    const SimBill* billed = get_bill();
    if (billed == nullptr) throw NoBill{};
    const SimBill& bill = *billed;
    auto one = [&](const billing::Invoice& inv) {
      emit([&](std::ostream& out, size_t depth) {
        LazyArray provenance = [&inv](const std::function<void(const ElementWriter&)>& each) {
          // report::ProvenanceToJson's bytes, written directly (one element per workload and
          // resource: the longest array of a large run's report).
          DumpedObject j(0);
          std::string scratch;
          for (const auto& p : inv.provenance) {
            each([&](std::ostream& o, size_t d) {
              j.Reset(d);  // the keys in order
              j.String("coveredSeconds", report::SecondsText(p.covered_ms));
              j.Bool("lowCoverage", p.low_coverage);
              j.String("resource", p.resource);
              j.String("runSeconds", report::SecondsText(p.run_ms));
              j.Int("samples", p.samples);
              if (p.usage_from_request) j.Bool("usageFromRequest", true);
              j.String("workload", p.workload);
              j.WriteTo(o, scratch);
            });
          }
        };
        WriteObject(out, report::InvoiceHeadToJson(inv), {{"provenance", provenance}}, depth);
      });
    };
    for (const auto& inv : bill.invoices) one(inv);  // BillJson's order: tenants, then idle
    if (bill.idle) one(*bill.idle);
  };
  try {
    WriteObject(os, head, arrays, 0);
  } catch (const NoBill&) {
    return false;
  }
  os << "\n";
  return true;
}

namespace {
// Why a workload waits: the events that set its pending reason.
bool IsPendingReason(engine::EventType t) {
  return t == engine::EventType::kQuotaExceeded || t == engine::EventType::kFailedScheduling ||
         t == engine::EventType::kPreempting;
}
}  // namespace

std::vector<size_t> LastPendingEvents(const driver::SimResult& r) {
  std::vector<size_t> last(r.workloads().size(), kNoEvent);
  const auto& evs = r.events();
  for (size_t i = 0; i < evs.size(); ++i) {
    if (evs[i].workload == engine::kNoWorkload || !IsPendingReason(evs[i].type)) continue;
    const uint64_t id = engine::Value(evs[i].workload);
    if (id < last.size()) last[id] = i;
  }
  return last;
}

std::optional<size_t> FindWorkload(const driver::SimResult& r, const std::string& key) {
  const auto& ws = r.workloads();
  for (size_t i = 0; i < ws.size(); ++i)
    if (ws[i].key == key) return i;
  return std::nullopt;
}

std::string ExplainWorkload(const driver::SimResult& r, size_t id) {
  const auto& w = r.workloads()[id];
  std::ostringstream o;
  o << "Workload " << w.key << " (priority " << w.priority << "): " << engine::ToString(w.phase);
  if (!w.last_node.empty())
    o << (w.phase == Phase::kRunning ? " on " : ", last on ") << w.last_node;
  o << "; submitted at " << FormatDuration(w.submit_time) << ", pending "
    << FormatDuration(w.pending_total) << " in all, " << Plural(w.preemptions, "preemption")
    << "\n";
  // Its own events, and those where it preempted or reclaimed another workload.
  size_t n = 0;
  for (const auto& e : r.events()) {
    const bool own = e.workload != engine::kNoWorkload && engine::Value(e.workload) == id;
    const bool as_preemptor = !own && e.by == w.key;
    if (!own && !as_preemptor) continue;
    ++n;
    std::string what = engine::ToString(e.type);
    if (as_preemptor && e.workload != engine::kNoWorkload)
      what += " " + r.workloads()[engine::Value(e.workload)].key;
    std::ostringstream line;
    line << "  " << std::left << std::setw(10) << FormatDuration(e.time) << " " << std::setw(18)
         << what;
    if (!e.reason.empty() && e.reason != engine::ToString(e.type)) line << " " << e.reason << ":";
    const std::string msg = e.Message();
    if (!msg.empty()) line << " " << msg;
    if (own && !e.by.empty()) line << " (by " << e.by << ")";
    std::string text = line.str();
    while (!text.empty() && text.back() == ' ') text.pop_back();
    o << text << "\n";
  }
  if (n == 0) o << "  (no events)\n";
  if (!w.message.empty()) o << "  now: " << w.message << "\n";
  o << "  A pending reason is reported once per kind per pending spell, with the numbers it had "
       "then.\n";
  return o.str();
}

std::string TextSummary(const ManifestSet& m, const driver::SimResult& r, const Summary& s) {
  std::ostringstream o;
  const auto& e = r;
  o << "Simulated " << Plural(e.workloads().size(), "workload") << " on "
    << Plural(m.nodes.size(), "node") << " for " << FormatDuration(r.end_time) << " (placement "
    << ToString(e.policy().placement) << ", preemption " << ToString(e.policy().preemption_type)
    << ")\n";
  o << "  phases: " << s.succeeded << " succeeded, " << s.running << " running, " << s.pending
    << " pending, " << s.preempted << " cancelled after preemption, " << s.rejected
    << " rejected\n";
  o << "  utilisation:";
  for (const auto& u : s.utilisation)
    o << " " << u.resource << " " << RatioString(u.allocated * 100, u.capacity, 1) << "%";
  o << "\n  preemptions: " << s.preemptions << " (+" << Plural(s.reclaims, "quota reclaim")
    << "), requeued " << s.requeues << ", cancelled " << s.cancellations << ", GPU-seconds lost "
    << RatioString(s.gpu_milli_ms_lost, 1000000, 1);
  if (e.policy().victim_order == VictimOrder::kLeastLostWork) o << " (victim order LeastLostWork)";
  if (const auto& b = e.policy().requeue_backoff)
    o << " (requeue back-off " << FormatDuration(b->base) << ", at most "
      << (b->max > 0 ? FormatDuration(b->max) : "no cap")
      << (b->immediate > 0 ? ", from preemption " + std::to_string(b->immediate + 1) : "") << ")";
  o << "\n";
  if (s.nodes_added || s.nodes_removed)
    o << "  pool: " << s.nodes_added << (s.nodes_added == 1 ? " node" : " nodes") << " joined, "
      << s.nodes_removed << " left, GPU-seconds lost with removed nodes "
      << RatioString(s.gpu_milli_ms_lost_node_removed, 1000000, 1) << "\n";
  o << "  pending time by priority:";
  if (s.tiers.empty()) o << " none (no workloads)";
  for (const auto& t : s.tiers)
    o << " [" << t.priority << ": " << Plural(t.workloads, "workload") << ", mean "
      << FormatDuration(MeanToSecond(t.pending_total, static_cast<int64_t>(t.workloads)))
      << ", max " << FormatDuration(RoundToSecond(t.pending_max)) << "]";
  o << "\n";
  if (e.workloads().empty()) o << "  no Pods in the manifests: nothing was scheduled\n";
  if (m.nodes.empty()) o << "  no Nodes in the manifests: the pool is empty, nothing can run\n";
  size_t shown = 0;
  for (const auto& w : e.workloads()) {
    if (w.phase != Phase::kPending && w.phase != Phase::kRejected) continue;
    if (shown++ == 10) {
      o << "  ...\n";
      break;
    }
    o << "  " << engine::ToString(w.phase) << " " << w.key << ": " << w.message << "\n";
  }
  return o.str();
}

}  // namespace arbiter::sim
