#include "server/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "core/engine/fair_share.h"
#include "core/resources.h"

namespace arbiter::server {

std::string PrometheusLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

namespace {

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// An amount in the resource's Prometheus unit: cores, bytes, GPUs, counts.
double Scaled(const std::string& resource, int64_t amount) {
  auto info = ClassifyResource(resource);
  if (info.ok() && (info->kind == ResourceKind::kCpu || info->kind == ResourceKind::kGpu))
    return amount / 1000.0;
  return static_cast<double>(amount);
}

const char* UnitOf(const std::string& resource) {
  auto info = ClassifyResource(resource);
  if (info.ok() && info->kind == ResourceKind::kCpu) return "core";
  if (info.ok() && info->kind == ResourceKind::kMemory) return "byte";
  return "integer";
}

// Appends the text to one string, with no allocation per sample: a scrape of every pod's series
// leaves no garbage of small blocks behind (glibc consolidates such garbage at the thread's next
// large allocation, which was the next scrape's, under the daemon's lock).
class Writer {
 public:
  using Label = std::pair<std::string_view, std::string_view>;
  void Family(std::string_view name, const char* type, const char* help) {
    out_.append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
    out_.append(name).append(" ").append(type).append("\n");
  }
  void Sample(std::string_view name, std::initializer_list<Label> labels, double v) {
    Begin(name);
    for (const Label& l : labels) Add(l);
    End(v);
  }
  void SampleLabels(std::string_view name,
                    const std::vector<std::pair<std::string, std::string>>& labels, double v) {
    Begin(name);
    for (const auto& [k, x] : labels) Add({k, x});
    End(v);
  }
  std::string str() { return std::move(out_); }

 private:
  void Begin(std::string_view name) {
    out_.append(name);
    first_ = true;
  }
  void Add(const Label& l) {  // PrometheusLabelValue's escaping
    out_ += first_ ? '{' : ',';
    first_ = false;
    out_.append(l.first).append("=\"");
    for (char c : l.second) {
      if (c == '\\' || c == '"') out_ += '\\';
      if (c == '\n') {
        out_ += "\\n";
        continue;
      }
      out_ += c;
    }
    out_ += '"';
  }
  void End(double v) {
    if (!first_) out_ += '}';
    out_ += ' ';
    if (std::isinf(v)) {
      out_ += v > 0 ? "+Inf" : "-Inf";
    } else {
      char buf[64];
      const int n = std::snprintf(buf, sizeof buf, "%.17g", v);
      out_.append(buf, static_cast<size_t>(n));
    }
    out_ += '\n';
  }
  std::string out_;
  bool first_ = true;
};

}  // namespace

namespace {

std::shared_ptr<const NodeLabelRows> NodeLabels(const Cluster& c) {
  NodeLabelCache& cache = c.node_label_cache();
  const int64_t version = c.store().kind_version("Node");
  if (cache.rows && cache.version == version) return cache.rows;
  auto rows = std::make_shared<NodeLabelRows>();
  for (const auto& [key, stored] : c.store().All("Node")) {
    const Json& node = *stored;
    std::vector<std::pair<std::string, std::string>> labels = {{"node", key.second}};
    const Json* meta = node.contains("metadata") ? &node["metadata"] : nullptr;
    for (const auto& [label, name] :
         {std::pair{"nvidia.com/gpu.product", "label_nvidia_com_gpu_product"},
          std::pair{"nvidia.com/gpu.replicas", "label_nvidia_com_gpu_replicas"}})
      if (meta && meta->contains("labels") && (*meta)["labels"].contains(label) &&
          (*meta)["labels"][label].is_string())
        labels.push_back({name, (*meta)["labels"][label].get<std::string>()});
    rows->push_back(std::move(labels));
  }
  cache = {version, rows};
  return rows;
}

}  // namespace

MetricsFacts CollectNodeMetrics(const Cluster& c, const std::string& node, Millis now) {
  MetricsFacts f;
  f.now = now;
  std::vector<uint64_t> ids;
  for (const auto& s : c.engine().WorkloadsOn(node)) ids.push_back(engine::Value(s.id));
  f.node_rows = c.live_facts().Rows(ids);
  f.strings = c.live_facts().strings();
  return f;
}

MetricsFacts CollectMetrics(const Cluster& c, Millis now) {
  MetricsFacts f;
  f.now = now;
  f.live = c.live_facts().Share();
  f.pod_phases = {{"Pending", 0}, {"Running", 0}, {"Succeeded", 0}, {"Failed", 0}};
  for (const auto& [phase, n] : c.store().pod_phases())
    f.pod_phases[phase.empty() ? "Pending" : phase] += n;
  f.quota_usages = c.engine().resource_quota_usages();
  f.decisions = c.decision_count();
  f.stats = c.scheduling_stats();
  f.quotas = dashboard::ElasticQuotaStates(c.engine());
  f.node_labels = NodeLabels(c);
  return f;
}

namespace {

void WritePods(const MetricsFacts& f, Writer& w) {
  std::map<std::pair<std::string, std::string>, int64_t> pending;
  f.ForEachWorkload([&](const LiveFact& s) {
    if (s.pending)
      ++pending[{*s.namespace_, s.reason->empty() ? std::string("Unschedulable") : *s.reason}];
  });
  w.Family("arbiter_pending_pods", "gauge",
           "Pods waiting to be scheduled, by namespace and the engine's reason.");
  for (const auto& [k, n] : pending)
    w.Sample("arbiter_pending_pods", {{"namespace", k.first}, {"reason", k.second}}, n);
  w.Family("arbiter_pods", "gauge", "Pods in the API, by phase.");
  for (const auto& [p, n] : f.pod_phases) w.Sample("arbiter_pods", {{"phase", p}}, n);
}

// ResourceQuota hard and used, as the engine charges them (every scope), in the order of the
// API's lists: by namespace and name, then by key.
void WriteResourceQuotas(const MetricsFacts& f, Writer& w) {
  std::vector<engine::ResourceQuotaUsage> usages = f.quota_usages;
  std::sort(usages.begin(), usages.end(), [](const auto& a, const auto& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  });
  for (auto& u : usages)
    std::sort(u.items.begin(), u.items.end(),
              [](const auto& a, const auto& b) { return a.key < b.key; });
  w.Family("arbiter_quota_hard", "gauge",
           "ResourceQuota hard limits (cores, bytes, GPUs, counts).");
  for (const bool used : {false, true}) {
    if (used)
      w.Family("arbiter_quota_used", "gauge",
               "ResourceQuota usage (running and terminating pods).");
    for (const auto& u : usages)
      for (const auto& item : u.items)
        w.Sample(used ? "arbiter_quota_used" : "arbiter_quota_hard",
                 {{"namespace", u.namespace_}, {"resourcequota", u.name}, {"resource", item.key}},
                 Scaled(item.resource, used ? item.used : item.hard));
  }
}

void WriteDecisions(const MetricsFacts& f, Writer& w) {
  w.Family("arbiter_scheduling_decisions_total", "counter",
           "Engine events (decisions) since the journal began.");
  w.Sample("arbiter_scheduling_decisions_total", {}, static_cast<double>(f.decisions));
  const SchedulingStats& stats = f.stats;
  w.Family("arbiter_engine_events_total", "counter",
           "Engine events by type since the daemon started, journal replay included (Scheduled, "
           "FailedScheduling, QuotaExceeded, Preempted, Reclaimed, Requeued, ...).");
  for (const auto& [type, n] : stats.events)
    w.Sample("arbiter_engine_events_total", {{"event", type}}, static_cast<double>(n));
  w.Family("arbiter_pod_scheduling_wait_seconds", "histogram",
           "Time from a pod's submission to its first bind, since the daemon started.");
  for (size_t i = 0; i < stats.kWaitBounds.size(); ++i)
    w.Sample("arbiter_pod_scheduling_wait_seconds_bucket", {{"le", Num(stats.kWaitBounds[i])}},
             static_cast<double>(stats.wait_buckets[i]));
  w.Sample("arbiter_pod_scheduling_wait_seconds_bucket", {{"le", "+Inf"}},
           static_cast<double>(stats.wait_count));
  w.Sample("arbiter_pod_scheduling_wait_seconds_sum", {}, stats.wait_sum_seconds);
  w.Sample("arbiter_pod_scheduling_wait_seconds_count", {}, static_cast<double>(stats.wait_count));
}

// ElasticQuota state per namespace (dashboard/quota_state.h: used, min, max, borrowed, lent of
// the resources its ElasticQuota names; the cohort's weighted dominant-resource share).
void WriteElasticQuotas(const MetricsFacts& f, Writer& w) {
  std::map<std::string, dashboard::QuotaState> quotas = f.quotas;
  f.ForEachWorkload([&](const LiveFact& s) {  // Engine::namespace_usages: what runs, by namespace
    if (!s.running()) return;
    auto q = quotas.find(*s.namespace_);
    if (q != quotas.end()) q->second.used += s.requests();
  });
  for (const char* part : {"min", "max", "used", "borrowed", "lent"}) {
    const std::string name = std::string("arbiter_elasticquota_") + part;
    w.Family(name, "gauge",
             (std::string("ElasticQuota ") + part +
              " per namespace and resource (cores, bytes, GPUs, counts); resources its min or "
              "max names.")
                 .c_str());
    for (const auto& [ns, q] : quotas) {
      if (q.quota.empty()) continue;
      const std::string p = part;
      const ResourceList* list = p == "min"        ? &q.min
                                 : p == "max"      ? (q.max ? &*q.max : nullptr)
                                 : p == "used"     ? &q.used
                                 : p == "borrowed" ? &q.borrowed
                                                   : &q.lent;
      if (!list) continue;
      for (const auto& [r, amount] : list->entries()) {
        if (p == "used" && !q.min.Has(r) && !(q.max && q.max->Has(r))) continue;
        w.Sample(
            name,
            {{"namespace", ns}, {"elasticquota", q.quota}, {"cohort", q.cohort}, {"resource", r}},
            Scaled(r, amount));
      }
    }
  }
  w.Family("arbiter_fair_share", "gauge",
           "A namespace's weighted dominant-resource share of what its cohort lends (max over "
           "resources of borrowed / lendable, divided by its weight; 0 within its min; +Inf when "
           "borrowing with weight 0).");
  for (const auto& [ns, q] : quotas)
    if (!q.cohort.empty())
      w.Sample("arbiter_fair_share", {{"namespace", ns}, {"cohort", q.cohort}},
               q.fair_share == engine::kInfiniteShare
                   ? std::numeric_limits<double>::infinity()
                   : static_cast<double>(q.fair_share) / engine::kShareOne);
}

void WriteJournal(const JournalStats& j, Writer& w) {
  w.Family("arbiter_journal_commits_total", "counter",
           "Journal transactions (one fsync each) since start-up.");
  w.Sample("arbiter_journal_commits_total", {}, static_cast<double>(j.commits));
  w.Family("arbiter_journal_records_total", "counter", "Journal records written since start-up.");
  w.Sample("arbiter_journal_records_total", {}, static_cast<double>(j.records));
  w.Family("arbiter_journal_fsync_seconds", "histogram", "Journal commit (fsync) latency.");
  for (size_t i = 0; i < j.bounds.size(); ++i)
    w.Sample("arbiter_journal_fsync_seconds_bucket", {{"le", Num(j.bounds[i])}},
             static_cast<double>(j.buckets[i]));
  w.Sample("arbiter_journal_fsync_seconds_bucket", {{"le", "+Inf"}},
           static_cast<double>(j.commits));
  w.Sample("arbiter_journal_fsync_seconds_sum", {}, j.sum_seconds);
  w.Sample("arbiter_journal_fsync_seconds_count", {}, static_cast<double>(j.commits));
}

using Pieces = std::vector<std::string>;

// The pieces' text in one buffer sized once (each piece tens of MB at 100k pods: joined with `+`
// they were copied again and the buffer grown several times a scrape).
std::string Join(Pieces pieces, std::string_view tail = {}) {
  size_t n = tail.size();
  for (const std::string& p : pieces) n += p.size();
  std::string out;
  out.reserve(n);
  for (std::string& p : pieces) {
    out += p;
    std::string().swap(p);  // freed as soon as it is copied: the peak is one piece over the text
  }
  out += tail;
  return out;
}

// The writers' texts moved into pieces (a braced list would copy them: its elements are const).
template <typename... W>
Pieces Moved(W&... writers) {
  Pieces out;
  out.reserve(sizeof...(W));
  (out.push_back(writers.str()), ...);
  return out;
}

// cAdvisor's container series of the running workloads (what a kubelet serves at
// /metrics/cadvisor): CPU seconds over the current run and the working set, from the declared use
// (arbiter.dev/usage) or the requests.
Pieces CadvisorShapes(const MetricsFacts& f) {
  Writer cpu, mem;
  cpu.Family("container_cpu_usage_seconds_total", "counter",
             "Virtual CPU use over the current run (cAdvisor shape).");
  mem.Family("container_memory_working_set_bytes", "gauge", "Virtual memory use (cAdvisor shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    const double seconds = std::max<Millis>(0, f.now - s.run_start) / 1000.0;
    cpu.Sample("container_cpu_usage_seconds_total",
               {{"namespace", *s.namespace_}, {"pod", s.name}, {"container", s.container_name()}},
               s.usage().Get("cpu") / 1000.0 * seconds);
    mem.Sample("container_memory_working_set_bytes",
               {{"namespace", *s.namespace_}, {"pod", s.name}, {"container", s.container_name()}},
               static_cast<double>(s.usage().Get("memory")));
  });
  return Moved(cpu, mem);
}

// dcgm-exporter's activity series, one per GPU of each running workload, its GPU use spread evenly.
Pieces DcgmShapes(const MetricsFacts& f) {
  Writer gpu;
  gpu.Family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
             "Virtual GPU activity per GPU (dcgm-exporter shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    const int64_t gpus = s.requests().Get(std::string(kGpu)) / 1000;
    for (int64_t g = 0; g < gpus; ++g) {
      const std::string index = std::to_string(g);
      gpu.Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                 {{"namespace", *s.namespace_},
                  {"pod", s.name},
                  {"container", s.container_name()},
                  {"gpu", index},
                  {"GPU_I_PROFILE", ""}},
                 s.usage().Get(std::string(kGpu)) / 1000.0 / static_cast<double>(gpus));
    }
  });
  return Moved(gpu);
}

// Virtual pods as kube-state-metrics shows real ones.
Pieces KubeStateShapes(const MetricsFacts& f) {
  Writer nodes, phase, info, req;
  nodes.Family(
      "kube_node_labels", "gauge",
      "The node's GPU labels (kube-state-metrics shape, allowlisted nvidia.com/gpu.product "
      "and nvidia.com/gpu.replicas).");
  if (f.node_labels)
    for (const auto& labels : *f.node_labels) nodes.SampleLabels("kube_node_labels", labels, 1);
  phase.Family("kube_pod_status_phase", "gauge", "The pod's phase (kube-state-metrics shape).");
  info.Family("kube_pod_info", "gauge", "The pod's node (kube-state-metrics shape).");
  req.Family("kube_pod_container_resource_requests", "gauge",
             "The pod's requests (kube-state-metrics shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    const std::string ph = s.pending ? "Pending" : "Running";
    for (const char* p : {"Pending", "Running", "Succeeded", "Failed", "Unknown"})
      phase.Sample("kube_pod_status_phase",
                   {{"namespace", *s.namespace_}, {"pod", s.name}, {"phase", p}}, ph == p ? 1 : 0);
    if (!s.running()) return;
    info.Sample("kube_pod_info", {{"namespace", *s.namespace_}, {"pod", s.name}, {"node", *s.node}},
                1);
    for (const auto& [r, amount] : s.requests().entries())
      req.Sample("kube_pod_container_resource_requests",
                 {{"namespace", *s.namespace_},
                  {"pod", s.name},
                  {"container", s.container_name()},
                  {"node", *s.node},
                  {"resource", r},
                  {"unit", UnitOf(r)}},
                 Scaled(r, amount));
  });
  return Moved(nodes, phase, info, req);
}

}  // namespace

std::string RenderMetrics(const MetricsFacts& f, const JournalStats& j, bool pod_usage,
                          std::string_view tail) {
  Writer w;
  WritePods(f, w);
  WriteResourceQuotas(f, w);
  WriteDecisions(f, w);
  WriteElasticQuotas(f, w);
  WriteJournal(j, w);
  Pieces pieces = KubeStateShapes(f);
  pieces.insert(pieces.begin(), w.str());
  if (pod_usage)
    for (auto* shapes : {&CadvisorShapes, &DcgmShapes}) {
      Pieces more = shapes(f);
      std::move(more.begin(), more.end(), std::back_inserter(pieces));
    }
  return Join(std::move(pieces), tail);
}

std::string RenderNodeMetrics(const MetricsFacts& f, NodeMetrics which) {
  switch (which) {
    case NodeMetrics::kCadvisor:
      return Join(CadvisorShapes(f));
    case NodeMetrics::kDcgm:
      return Join(DcgmShapes(f));
  }
  return "";
}

std::string RenderMetrics(const Cluster& c, const JournalStats& j, Millis now) {
  return RenderMetrics(CollectMetrics(c, now), j);
}

}  // namespace arbiter::server
