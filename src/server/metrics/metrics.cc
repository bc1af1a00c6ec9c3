#include "server/metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "core/engine/fair_share.h"
#include "core/resources.h"

namespace arbiter::server {

namespace {

// Appends v as printf's "%.17g" writes it (std::to_chars with that format and precision: the same
// text, at a fraction of snprintf's cost, which was most of a scrape's), or +Inf/-Inf.
void AppendNumber(std::string& out, double v) {
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 17);
  out.append(buf, r.ptr);
}

// Appends a label value escaped as the Prometheus text format wants (\\, \" and \n); a value with
// nothing to escape (all but a few) in one append.
void AppendEscaped(std::string& out, std::string_view v) {
  auto special = [](char c) { return c == '\\' || c == '"' || c == '\n'; };
  if (std::none_of(v.begin(), v.end(), special)) {
    out.append(v);
    return;
  }
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (special(c)) out += '\\';
    out += c;
  }
}

}  // namespace

std::string PrometheusLabelValue(const std::string& v) {
  std::string out;
  AppendEscaped(out, v);
  return out;
}

std::string PrometheusNumber(double v) {
  std::string out;
  AppendNumber(out, v);
  return out;
}

std::string GoNumber(double v) {
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  const int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 6) return buf;
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, digits - 1 - exp), v);
  return buf;
}

namespace {

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
  // A sample whose first labels are `head`, already written (PodLabels): a pod's labels are
  // escaped once per family, for all its samples in that family.
  void Sample(std::string_view name, std::string_view head, std::initializer_list<Label> labels,
              double v) {
    Begin(name);
    out_ += '{';
    out_.append(head);
    first_ = false;
    for (const Label& l : labels) Add(l);
    End(v);
  }
  void SampleLabels(std::string_view name,
                    const std::vector<std::pair<std::string, std::string>>& labels, double v) {
    Begin(name);
    for (const auto& [k, x] : labels) Add({k, x});
    End(v);
  }
  // Room for `more` bytes after what is written (one allocation; the text so far copied once).
  void Reserve(size_t more) { out_.reserve(out_.size() + more); }
  void Append(std::string_view text) { out_.append(text); }
  std::string str() { return std::move(out_); }

 private:
  void Begin(std::string_view name) {
    out_.append(name);
    first_ = true;
  }
  void Add(const Label& l) {
    out_ += first_ ? '{' : ',';
    first_ = false;
    out_.append(l.first).append("=\"");
    AppendEscaped(out_, l.second);
    out_ += '"';
  }
  void End(double v) {
    if (!first_) out_ += '}';
    out_ += ' ';
    AppendNumber(out_, v);
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
  if (f.pod_phases["Succeeded"] + f.pod_phases["Failed"] > 0) f.pods = c.store().Freeze("Pod");
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
    w.Sample("arbiter_pod_scheduling_wait_seconds_bucket", {{"le", GoNumber(stats.kWaitBounds[i])}},
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
    w.Sample("arbiter_journal_fsync_seconds_bucket", {{"le", GoNumber(j.bounds[i])}},
             static_cast<double>(j.buckets[i]));
  w.Sample("arbiter_journal_fsync_seconds_bucket", {{"le", "+Inf"}},
           static_cast<double>(j.commits));
  w.Sample("arbiter_journal_fsync_seconds_sum", {}, j.sum_seconds);
  w.Sample("arbiter_journal_fsync_seconds_count", {}, static_cast<double>(j.commits));
}

// A pod's first labels as Writer::Sample's `head` takes them, into `out` (cleared):
// namespace="NS",pod="NAME" and, with `container`, ,container="C".
void PodLabels(std::string& out, const std::string& ns, const std::string& name) {
  out.assign("namespace=\"");
  AppendEscaped(out, ns);
  out.append("\",pod=\"");
  AppendEscaped(out, name);
  out += '"';
}

void PodLabels(std::string& out, const LiveFact& s, bool container) {
  PodLabels(out, *s.namespace_, s.name);
  if (!container) return;
  out.append(",container=\"");
  AppendEscaped(out, s.container_name());
  out += '"';
}

// What the per-pod families will write, a little more rather than less (reserved up front, so
// that the one buffer of a scrape is neither grown nor copied: 76 MB at 100k pods, written through
// three growing pieces and then joined, was a quarter of the scrape; pages reserved and not
// written cost no memory). Only a hint: a longer text grows the buffer.
size_t PodTextSize(const MetricsFacts& f, bool pod_usage) {
  constexpr size_t kSample = 96;  // the longest name, the fixed labels' keys, the value, the marks
  size_t n = 0;
  f.ForEachWorkload([&](const LiveFact& s) {
    const size_t head = s.namespace_->size() + s.name.size() + s.container_name().size() + 40;
    size_t samples = 5;  // kube_pod_status_phase
    if (s.running()) {
      samples += 1 + s.requests().entries().size();
      if (pod_usage) samples += 2 + static_cast<size_t>(s.requests().Get(std::string(kGpu)) / 1000);
    }
    n += samples * (kSample + head + s.node->size());
  });
  const auto finished = [&](const char* phase) {
    auto it = f.pod_phases.find(phase);
    return it == f.pod_phases.end() ? 0 : static_cast<size_t>(it->second);
  };
  n += (finished("Succeeded") + finished("Failed")) * 5 * (kSample + 80);
  return n;
}

// cAdvisor's container series of the running workloads (what a kubelet serves at
// /metrics/cadvisor): CPU seconds over the current run and the working set, from the declared use
// (arbiter.dev/usage) or the requests. Each family is one pass over the workloads.
void WriteCadvisor(const MetricsFacts& f, Writer& w) {
  std::string head;
  w.Family("container_cpu_usage_seconds_total", "counter",
           "Virtual CPU use over the current run (cAdvisor shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    PodLabels(head, s, /*container=*/true);
    const double seconds = std::max<Millis>(0, f.now - s.run_start) / 1000.0;
    w.Sample("container_cpu_usage_seconds_total", head, {},
             s.usage().Get("cpu") / 1000.0 * seconds);
  });
  w.Family("container_memory_working_set_bytes", "gauge", "Virtual memory use (cAdvisor shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    PodLabels(head, s, /*container=*/true);
    w.Sample("container_memory_working_set_bytes", head, {},
             static_cast<double>(s.usage().Get("memory")));
  });
}

// dcgm-exporter's activity series, one per GPU of each running workload, its GPU use spread evenly.
void WriteDcgm(const MetricsFacts& f, Writer& w) {
  std::string head;
  w.Family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
           "Virtual GPU activity per GPU (dcgm-exporter shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    const int64_t gpus = s.requests().Get(std::string(kGpu)) / 1000;
    if (gpus > 0) PodLabels(head, s, /*container=*/true);
    for (int64_t g = 0; g < gpus; ++g) {
      const std::string index = std::to_string(g);
      w.Sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", head, {{"gpu", index}, {"GPU_I_PROFILE", ""}},
               s.usage().Get(std::string(kGpu)) / 1000.0 / static_cast<double>(gpus));
    }
  });
}

// Virtual pods as kube-state-metrics shows real ones, each family one pass over the workloads.
void WriteKubeState(const MetricsFacts& f, Writer& w) {
  w.Family("kube_node_labels", "gauge",
           "The node's GPU labels (kube-state-metrics shape, allowlisted nvidia.com/gpu.product "
           "and nvidia.com/gpu.replicas).");
  if (f.node_labels)
    for (const auto& labels : *f.node_labels) w.SampleLabels("kube_node_labels", labels, 1);
  std::string head;
  w.Family("kube_pod_status_phase", "gauge", "The pod's phase (kube-state-metrics shape).");
  constexpr std::string_view kPhases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
  f.ForEachWorkload([&](const LiveFact& s) {
    PodLabels(head, s, /*container=*/false);
    const std::string_view ph = s.pending ? "Pending" : "Running";
    for (const std::string_view p : kPhases)
      w.Sample("kube_pod_status_phase", head, {{"phase", p}}, ph == p ? 1 : 0);
  });
  for (const auto& [key, pod] : f.pods) {  // the finished ones (not workloads: not above)
    const std::string& ph = pod.stored().pod_phase();
    if (ph != "Succeeded" && ph != "Failed") continue;
    PodLabels(head, key.first, key.second);
    for (const std::string_view p : kPhases)
      w.Sample("kube_pod_status_phase", head, {{"phase", p}}, ph == p ? 1 : 0);
  }
  w.Family("kube_pod_info", "gauge", "The pod's node (kube-state-metrics shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running()) return;
    PodLabels(head, s, /*container=*/false);
    w.Sample("kube_pod_info", head, {{"node", *s.node}}, 1);
  });
  w.Family("kube_pod_container_resource_requests", "gauge",
           "The pod's requests (kube-state-metrics shape).");
  f.ForEachWorkload([&](const LiveFact& s) {
    if (!s.running() || s.requests().entries().empty()) return;
    PodLabels(head, s, /*container=*/true);
    for (const auto& [r, amount] : s.requests().entries())
      w.Sample("kube_pod_container_resource_requests", head,
               {{"node", *s.node}, {"resource", r}, {"unit", UnitOf(r)}}, Scaled(r, amount));
  });
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
  w.Reserve(PodTextSize(f, pod_usage) + tail.size());
  WriteKubeState(f, w);
  if (pod_usage) {
    WriteCadvisor(f, w);
    WriteDcgm(f, w);
  }
  w.Append(tail);
  return w.str();
}

std::string RenderNodeMetrics(const MetricsFacts& f, NodeMetrics which) {
  Writer w;
  w.Reserve(PodTextSize(f, true));
  switch (which) {
    case NodeMetrics::kCadvisor:
      WriteCadvisor(f, w);
      break;
    case NodeMetrics::kDcgm:
      WriteDcgm(f, w);
      break;
  }
  return w.str();
}

std::string RenderMetrics(const Cluster& c, const JournalStats& j, Millis now) {
  return RenderMetrics(CollectMetrics(c, now), j);
}

}  // namespace arbiter::server
