#include "adapters/prometheus/live_meter.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/gpu_sharing.h"
#include "core/resources.h"

namespace arbiter::prometheus {

using billing::HourlyRow;
using billing::HourOf;
using billing::i128;
using billing::kHourMs;
using billing::RunSegment;
using billing::SeriesFolder;

namespace {

// name{matchers..., selector}
std::string Sel(const MeteringConfig& c, const std::string& name,
                std::vector<std::string> matchers) {
  if (!c.selector.empty()) matchers.push_back(c.selector);
  std::string s = name + "{";
  for (size_t i = 0; i < matchers.size(); ++i) s += (i ? "," : "") + matchers[i];
  return s + "}";
}

// A grid point sees a series only when its newest sample is younger than one interval.
std::string Fresh(const MeteringConfig& c, const std::string& sel) {
  return "(" + sel + " and timestamp(" + sel + ") > time() - " +
         std::to_string(c.scrape_interval / 1000) + ")";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> MeterQueries(const MeteringConfig& c) {
  const std::string ns = c.label_namespace, pod = c.label_pod, ctr = c.label_container;
  const std::string real_ctr = ctr + "!=\"\"," + ctr + "!=\"POD\"";
  // The labels that identify one series; any other label (instance, job, the exporter's own pod,
  // a Prometheus replica label) tells copies of it apart: two kube-state-metrics replicas, or
  // cAdvisor scraped by two jobs. Copies are one series (max over them) before anything is
  // summed by pod; the "dups" query finds where there were copies, for the provenance.
  const std::string req_id = ns + ", " + pod + ", " + ctr + ", " + c.label_resource;
  const std::string ctr_id = ns + ", " + pod + ", " + ctr;
  const std::string gpu_id =
      ctr_id + ", " + c.label_mig_profile + ", " + c.label_gpu_device + ", " + c.label_mig_instance;
  const std::string req_sel = Fresh(c, Sel(c, c.requests, {}));
  const std::string cpu_sel = Fresh(c, Sel(c, c.cpu_usage, {real_ctr}));
  const std::string mem_sel = Fresh(c, Sel(c, c.memory_usage, {real_ctr}));
  const std::string gpu_sel = Fresh(c, Sel(c, c.gpu_usage, {pod + "!=\"\""}));
  auto copies = [&](const std::string& track, const std::string& by, const std::string& id,
                    const std::string& sel) {
    return "label_replace(max by (" + by + ") (count by (" + id + ") (" + sel +
           ") > 1), \"arbiter_track\", \"" + track + "\", \"\", \"\")";
  };
  return {
      {"phase", "max by (" + ns + ", " + pod + ") (" +
                    Fresh(c, Sel(c, c.pod_phase, {"phase=\"Running\""})) + " == 1)"},
      {"info", "max by (" + ns + ", " + pod + ", " + c.label_node + ") (" +
                   Fresh(c, Sel(c, c.pod_info, {})) + ")"},
      {"requests", "sum by (" + ns + ", " + pod + ", " + c.label_resource + ") (max by (" + req_id +
                       ") (" + req_sel + "))"},
      {"nodes", "max by (" + c.label_node + ", " + c.label_gpu_product + ", " +
                    c.label_gpu_replicas + ") (" + Fresh(c, Sel(c, c.node_labels, {})) + ")"},
      {"cpu", "max by (" + ctr_id + ") (" + cpu_sel + ")"},
      {"memory", "sum by (" + ns + ", " + pod + ") (max by (" + ctr_id + ") (" + mem_sel + "))"},
      {"gpu", "sum by (" + ns + ", " + pod + ", " + c.label_mig_profile + ") (max by (" + gpu_id +
                  ") (" + gpu_sel + "))"},
      {"dups", copies("request", ns + ", " + pod + ", " + c.label_resource, req_id, req_sel) +
                   " or " + copies("cpu", ns + ", " + pod, ctr_id, cpu_sel) + " or " +
                   copies("memory", ns + ", " + pod, ctr_id, mem_sel) + " or " +
                   copies("gpu", ns + ", " + pod + ", " + c.label_mig_profile, gpu_id, gpu_sel)},
  };
}

Result<bool> AnyPodRunning(Client& client, const MeteringConfig& c, Millis from, Millis to) {
  const Millis S = c.scrape_interval;
  const Millis margin = ((c.request_gap_bridge + S + S - 1) / S) * S;  // as MeterPrometheus
  const Millis hi = to + margin, range = hi - (from - margin) + S;
  auto r = client.Query("count(max_over_time(" + Sel(c, c.pod_phase, {"phase=\"Running\""}) + "[" +
                            std::to_string(range) + "ms]) == 1)",
                        hi);
  if (!r.ok()) return r.status();
  return !r->empty();
}

namespace {

struct PodKey {
  std::string ns, pod;
  bool operator<(const PodKey& o) const { return std::tie(ns, pod) < std::tie(o.ns, o.pod); }
};

// One page of one pod: per grid point what Prometheus showed.
struct PagePod {
  std::vector<uint8_t> running;
  std::vector<std::string> node;
  std::map<std::string, std::vector<std::optional<int64_t>>> requests;  // resource -> canonical
  std::map<std::string, std::vector<std::optional<i128>>> cpu;          // container -> µcore-s
  std::vector<std::optional<i128>> memory;                              // bytes
  std::map<std::string, std::vector<std::optional<i128>>> gpu;          // resource -> thousandths
};

struct NodeInfo {
  std::string product;
  int64_t replicas = 1;
};

using NodeGrid = std::map<std::string, std::vector<std::optional<NodeInfo>>>;  // per grid point

// What one page [p, q) of n grid points S apart showed, per pod and per node.
struct MeterPage {
  Millis p, q, S;
  size_t n;
  std::map<PodKey, PagePod> pods;
  NodeGrid nodes;

  // The grid point of a sample's time; nullopt off the page's grid.
  std::optional<size_t> Index(Millis t) const {
    if (t < p || t >= q || (t - p) % S != 0) return std::nullopt;
    return static_cast<size_t>((t - p) / S);
  }
  // The pod's page, empty (nothing running, no node, no memory) when first seen.
  PagePod& Pod(const PodKey& key) {
    PagePod& pp = pods[key];
    if (pp.running.empty()) {
      pp.running.assign(n, 0);
      pp.node.assign(n, "");
      pp.memory.assign(n, std::nullopt);
    }
    return pp;
  }
};

std::string SeriesLabel(const std::map<std::string, std::string>& l, const std::string& k) {
  auto it = l.find(k);
  return it == l.end() ? std::string() : it->second;
}

struct Folder {
  std::unique_ptr<SeriesFolder> f;
  Millis last_add = INT64_MIN;
};

struct Usage {  // usage samples of one pod at one grid point
  Millis t = 0;
  std::optional<i128> cpu;  // pod cumulative, µcore-s
  std::optional<i128> memory;
  std::map<std::string, i128> gpu;
  bool any() const { return cpu || memory || !gpu.empty(); }
};

struct Segment {
  std::unique_ptr<RunSegment> seg;
  std::string key;
  Millis last_point = 0;
  std::map<std::string, Folder> folders;
  std::vector<Usage> pending;  // usage seen in a kube-state-metrics hole, fed if it is bridged
};

struct PodState {
  std::string workload, ns;
  std::optional<Segment> open;
  std::map<std::string, i128> container_last;  // cpu counter per container
  i128 cpu_cum = 0;
  std::string node;
};

struct ProvKey {
  std::string workload, resource;
  Millis hour;
  bool operator<(const ProvKey& o) const {
    return std::tie(workload, resource, hour) < std::tie(o.workload, o.resource, o.hour);
  }
};

bool HasUsageMetric(std::string_view resource) {
  return resource == kCpu || resource == kMemory || resource == kGpu || IsMigResourceName(resource);
}

class Meter {
 public:
  Meter(Client& client, const MeteringConfig& cfg, Millis from, Millis to, const BatchSink& sink,
        const Progress& progress)
      : client_(client),
        cfg_(cfg),
        from_(from),
        to_(to),
        sink_(sink),
        progress_(progress),
        S_(cfg.scrape_interval) {}

  Result<MeterStats> Run() {
    const Millis margin = ((cfg_.request_gap_bridge + S_ + S_ - 1) / S_) * S_;
    const Millis begin = from_ - margin, end = to_ + margin;
    const int64_t pages = (end - begin + cfg_.page - 1) / cfg_.page;
    int64_t page_no = 0;
    for (Millis p = begin; p < end; p += cfg_.page) {
      const Millis q = std::min(end, p + cfg_.page);
      if (Status s = Page(p, q); !s.ok()) return s;
      ++page_no;
      ++stats_.pages;
      if (Status s = Emit(q, false); !s.ok()) return s;
      if (progress_)
        progress_("page " + std::to_string(page_no) + "/" + std::to_string(pages) + " " +
                  FormatRfc3339(p) + " .. " + FormatRfc3339(q) + ": " +
                  std::to_string(running_now_) + " pods running, " + std::to_string(stats_.rows) +
                  " hourly rows written");
    }
    for (auto& [k, st] : pods_)
      if (st.open) Close(st, st.open->last_point + S_);
    if (Status s = Emit(end, true); !s.ok()) return s;
    stats_.requests = client_.requests();
    stats_.pods = static_cast<int64_t>(pods_.size());
    return stats_;
  }

 private:
  // Converts a value; invalid ones (NaN, Inf, garbage) are skipped and counted.
  std::optional<i128> Value(const std::string& text, i128 mul, i128 div) {
    auto v = ScaleValue(text, mul, div);
    if (!v.ok() || *v < 0) {
      ++stats_.invalid_values;
      return std::nullopt;
    }
    return *v;
  }

  Status Page(Millis p, Millis q) {
    MeterPage g{p, q, S_, static_cast<size_t>((q - p) / S_), {}, {}};
    for (const auto& [name, query] : MeterQueries(cfg_)) {
      auto res = client_.QueryRange(query, p, q - S_, S_);
      if (!res.ok())
        return Status::Error("reading " + name + " for " + FormatRfc3339(p) + " .. " +
                             FormatRfc3339(q) + ": " + res.message());
      for (const Series& s : *res) {
        if (name == "nodes")
          NodeSeries(s, g);
        else if (name == "dups")
          Duplicates(s, p, q);
        else
          PodSeries(name, s, g);
      }
    }
    AdvancePods(g);
    return Status::Ok();
  }

  // A series of the "nodes" query: a node's GPU product and replicas at the grid points it covers.
  void NodeSeries(const Series& s, MeterPage& g) {
    std::string node = SeriesLabel(s.labels, cfg_.label_node);
    if (node.empty()) return;
    auto& v = g.nodes[node];
    v.resize(g.n);
    NodeInfo info;
    info.product = SeriesLabel(s.labels, cfg_.label_gpu_product);
    std::string rep = SeriesLabel(s.labels, cfg_.label_gpu_replicas);
    if (!rep.empty()) {
      auto r = ScaleValue(rep, 1, 1);
      if (r.ok() && *r >= 1 && *r <= kMaxGpuReplicas) info.replicas = static_cast<int64_t>(*r);
    }
    for (const Sample& x : s.samples)
      if (auto k = g.Index(x.t)) v[*k] = info;
  }

  // A series of a per-pod query (phase, info, requests, cpu, memory, gpu) into its pod's page.
  void PodSeries(const std::string& name, const Series& s, MeterPage& g) {
    auto ns = s.labels.find(cfg_.label_namespace), pod = s.labels.find(cfg_.label_pod);
    if (ns == s.labels.end() || pod == s.labels.end() || ns->second.empty() || pod->second.empty())
      return;
    PagePod* pp = &g.Pod({ns->second, pod->second});
    const size_t n = g.n;
    if (name == "phase") {
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t)) pp->running[*k] = 1;
    } else if (name == "info") {
      std::string node = SeriesLabel(s.labels, cfg_.label_node);
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t)) pp->node[*k] = node;
    } else if (name == "requests") {
      std::string res_name = ResourceFromKsmLabel(SeriesLabel(s.labels, cfg_.label_resource), cfg_);
      auto info = ClassifyResource(res_name);
      if (!info.ok() || !billing::IsMeteredResource(res_name)) return;
      i128 mul = 1;
      for (int i = 0; i < info->scale10; ++i) mul *= 10;
      auto& v = pp->requests[res_name];
      v.resize(n);
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t))
          if (auto val = Value(x.value, mul, 1); val && *val <= INT64_MAX)
            v[*k] = static_cast<int64_t>(*val);
    } else if (name == "cpu") {
      auto& v = pp->cpu[SeriesLabel(s.labels, cfg_.label_container)];
      v.resize(n);
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t)) v[*k] = Value(x.value, 1000000, 1);  // seconds -> µcore-s
    } else if (name == "memory") {
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t)) pp->memory[*k] = Value(x.value, 1, 1);
    } else if (name == "gpu") {
      std::string profile = SeriesLabel(s.labels, cfg_.label_mig_profile);
      std::string res_name = profile.empty() ? std::string(kGpu) : "nvidia.com/mig-" + profile;
      auto& v = pp->gpu[res_name];
      v.resize(n);
      for (const Sample& x : s.samples)
        if (auto k = g.Index(x.t))
          v[*k] = cfg_.gpu_percent ? Value(x.value, 10, 1) : Value(x.value, 1000, 1);
    }
  }

  // Every pod of the page (and every pod with an open segment) through the page's grid points;
  // counts the pods running at its end.
  void AdvancePods(MeterPage& g) {
    // Known node facts persist across pages (kube_node_labels may be scraped less often).
    running_now_ = 0;
    // Pods with an open segment but no data this page still advance (their runs end).
    for (auto& [k, st] : pods_)
      if (st.open && !g.pods.count(PodKey{st.ns, k.substr(st.ns.size() + 1)}))
        g.Pod({st.ns, k.substr(st.ns.size() + 1)});
    for (auto& [key, pp] : g.pods) {
      std::string workload = key.ns + "/" + key.pod;
      PodState& st = pods_[workload];
      if (st.workload.empty()) {
        st.workload = workload;
        st.ns = key.ns;
      }
      for (size_t k = 0; k < g.n; ++k) Point(st, pp, g.nodes, k, g.p + static_cast<Millis>(k) * S_);
      if (st.open) {
        // A run whose last point is more than the bridge ago has ended.
        if (g.q - st.open->last_point - S_ > cfg_.request_gap_bridge)
          Close(st, st.open->last_point + S_);
        else if (st.open->last_point >= g.q - S_)
          ++running_now_;
      }
    }
  }

  // A series of the "dups" query: grid points at which a series of a pod's resource came in more
  // than one copy (deduplicated by the queries), counted in the provenance.
  void Duplicates(const Series& s, Millis p, Millis q) {
    auto label = [&](const std::string& k) {
      auto it = s.labels.find(k);
      return it == s.labels.end() ? std::string() : it->second;
    };
    const std::string ns = label(cfg_.label_namespace), pod = label(cfg_.label_pod),
                      track = label("arbiter_track");
    if (ns.empty() || pod.empty()) return;
    std::string res;
    if (track == "request") {
      res = ResourceFromKsmLabel(label(cfg_.label_resource), cfg_);
    } else if (track == "cpu") {
      res = kCpu;
    } else if (track == "memory") {
      res = kMemory;
    } else if (track == "gpu") {
      const std::string profile = label(cfg_.label_mig_profile);
      res = profile.empty() ? std::string(kGpu) : "nvidia.com/mig-" + profile;
    }
    if (res.empty()) return;
    const std::string workload = ns + "/" + pod;
    for (const Sample& x : s.samples) {
      if (x.t < p || x.t >= q || (x.t - p) % S_ != 0) continue;
      prov_[{workload, res, HourOf(x.t)}].duplicate_points++;
      ++stats_.duplicate_points;
    }
  }

  std::string Key(const std::string& node, const NodeInfo& ni, const ResourceList& req) {
    return node + "\n" + ni.product + "\n" + std::to_string(ni.replicas) + "\n" + req.ToString();
  }

  void Point(PodState& st, const PagePod& pp,
             const std::map<std::string, std::vector<std::optional<NodeInfo>>>& nodes, size_t k,
             Millis t) {
    // Usage at t.
    Usage u;
    u.t = t;
    bool any_cpu = false;
    i128 cum = st.cpu_cum;
    for (const auto& [ctr, v] : pp.cpu) {
      if (k >= v.size() || !v[k]) continue;
      any_cpu = true;
      i128 val = *v[k];
      auto it = st.container_last.find(ctr);
      if (it == st.container_last.end()) {
        cum += val;
        st.container_last.emplace(ctr, val);
      } else {
        if (val >= it->second)
          cum += val - it->second;
        else {
          cum += val;  // a reset: the new value is the increase since it
          prov_[{st.workload, std::string(kCpu), HourOf(t)}].counter_resets++;
          ++stats_.counter_resets;
        }
        it->second = val;
      }
    }
    if (any_cpu) {
      st.cpu_cum = cum;
      u.cpu = cum;
    }
    if (k < pp.memory.size() && pp.memory[k]) u.memory = pp.memory[k];
    for (const auto& [res, v] : pp.gpu)
      if (k < v.size() && v[k]) u.gpu[res] = *v[k];

    const bool running = pp.running[k] != 0;
    if (!running) {
      if (st.open && t - st.open->last_point - S_ > cfg_.request_gap_bridge)
        Close(st, st.open->last_point + S_);
      if (st.open) {
        if (u.any())
          st.open->pending.push_back(std::move(u));
        else
          st.open->pending.push_back(Usage{t, {}, {}, {}});
      } else if (u.any()) {
        Outside(st, u);
      }
      return;
    }
    if (!pp.node[k].empty()) st.node = pp.node[k];
    NodeInfo ni;
    if (!st.node.empty()) {
      auto it = nodes.find(st.node);
      if (it != nodes.end() && k < it->second.size() && it->second[k])
        node_facts_[st.node] = *it->second[k];
      if (auto f = node_facts_.find(st.node); f != node_facts_.end()) ni = f->second;
    }
    ResourceList req;
    for (const auto& [res, v] : pp.requests)
      if (k < v.size() && v[k] && *v[k] > 0) req.Set(res, *v[k]);
    std::string key = Key(st.node, ni, req);
    if (st.open) {
      if (t - st.open->last_point > S_) {
        // A bridged hole: the run went on; feed what was seen meanwhile.
        for (Usage& pu : st.open->pending) {
          for (const auto& [res, f] : st.open->folders)
            prov_[{st.workload, res, HourOf(pu.t)}].request_gaps++;
          ++stats_.request_gaps;
          Feed(st, pu);
        }
      }
      st.open->pending.clear();
      // Requests, node or GPU facts changed: the run goes on in a new segment from t, and the
      // CPU counter's piece up to t still belongs to this one.
      if (key != st.open->key) Close(st, t, u.cpu);
    }
    if (!st.open) Open(st, t, key, ni, req);
    st.open->last_point = t;
    Feed(st, u);
  }

  void Outside(PodState& st, const Usage& u) {
    auto count = [&](const std::string& res) {
      prov_[{st.workload, res, HourOf(u.t)}].outside_samples++;
      ++stats_.outside_samples;
    };
    if (u.cpu) count(std::string(kCpu));
    if (u.memory) count(std::string(kMemory));
    for (const auto& [res, v] : u.gpu) count(res);
  }

  void Open(PodState& st, Millis t, std::string key, const NodeInfo& ni, const ResourceList& req) {
    Segment sg;
    sg.seg = std::make_unique<RunSegment>();
    RunSegment& s = *sg.seg;
    s.workload = st.workload;
    s.namespace_ = st.ns;
    s.node = st.node;
    s.gpu_product = ni.product;
    s.gpu_replicas = ni.replicas;
    s.requests = req;
    s.start = t;
    s.end = INT64_MAX;  // set when the run ends, before the folders finish
    sg.key = std::move(key);
    sg.last_point = t;
    st.open = std::move(sg);
    for (const auto& [res, amount] : req.entries()) FolderOf(st, res);
    ++stats_.segments;
  }

  Folder& FolderOf(PodState& st, const std::string& res) {
    auto it = st.open->folders.find(res);
    if (it != st.open->folders.end()) return it->second;
    Folder f;
    f.f = std::make_unique<SeriesFolder>(*st.open->seg, res, &rows_, S_,
                                         IsMigResourceName(res) ? 1000 : 1);
    return st.open->folders.emplace(res, std::move(f)).first->second;
  }

  void Add(PodState& st, const std::string& res, Millis t, i128 v) {
    Folder& f = FolderOf(st, res);
    f.f->Add(t, v);
    f.last_add = t;
    ++stats_.samples;
  }

  void Feed(PodState& st, const Usage& u) {
    const bool shared = st.open->seg->gpu_replicas > 1;  // DCGM cannot attribute a replica's usage
    if (u.cpu) Add(st, std::string(kCpu), u.t, *u.cpu);
    if (u.memory) Add(st, std::string(kMemory), u.t, *u.memory);
    for (const auto& [res, v] : u.gpu)
      if (!(shared && res == kGpu)) Add(st, res, u.t, v);
    // Gaps: a metered resource with a usage metric and no sample at this point.
    for (const auto& [res, f] : st.open->folders) {
      if (!HasUsageMetric(res) || f.last_add == u.t || (shared && res == kGpu)) continue;
      prov_[{st.workload, res, HourOf(u.t)}].usage_gaps++;
      ++stats_.usage_gaps;
    }
  }

  void Close(PodState& st, Millis end, std::optional<i128> cpu_at_end = std::nullopt) {
    Segment& sg = *st.open;
    for (const Usage& pu : sg.pending)
      if (pu.any()) Outside(st, pu);
    sg.seg->end = end;
    for (auto& [res, f] : sg.folders) {
      if (cpu_at_end && res == kCpu)
        f.f->FinishContinued(*cpu_at_end);
      else if (f.last_add == INT64_MIN &&
               billing::UsageFallsBackToRequest(res, sg.seg->gpu_replicas))
        f.f->FinishUsageFromRequest();  // flagged in the invoice provenance
      else
        f.f->Finish();
    }
    st.open.reset();
  }

  // Hands the sink every row and provenance entry that nothing after `done` can change: a row of
  // (workload, resource, hour) is final once the pod's open run (if any) can no longer touch that
  // hour for that resource -- its folder has moved past it, or a folder yet to be made would start
  // at the run's start -- and provenance once no pending point of the run lies in that hour.
  Status Emit(Millis done, bool final) {
    auto row_bound = [&](const std::string& w, const std::string& res) -> Millis {
      const Millis d = HourOf(done);
      auto it = pods_.find(w);
      if (it == pods_.end() || !it->second.open) return d;
      const Segment& sg = *it->second.open;
      auto f = sg.folders.find(res);
      Millis b = HourOf(sg.seg->start);
      if (f != sg.folders.end() && f->second.last_add != INT64_MIN) b = HourOf(f->second.last_add);
      return std::min(d, b);
    };
    auto prov_bound = [&](const std::string& w) -> Millis {
      auto it = pods_.find(w);
      if (it == pods_.end() || !it->second.open || it->second.open->pending.empty())
        return HourOf(done);
      return std::min(HourOf(done), HourOf(it->second.open->pending.front().t));
    };
    MeterBatch batch;
    std::vector<HourlyRow> keep;
    for (HourlyRow& r : rows_) {
      if (!final && r.hour >= row_bound(r.workload, r.resource))
        keep.push_back(std::move(r));
      else if (r.hour >= from_ && r.hour < to_)
        batch.rows.push_back(std::move(r));
    }
    rows_ = std::move(keep);
    for (auto it = prov_.begin(); it != prov_.end();) {
      if (!final && it->first.hour >= prov_bound(it->first.workload)) {
        ++it;
        continue;
      }
      if (it->first.hour >= from_ && it->first.hour < to_) {
        MeterProvenance m = it->second;
        m.workload = it->first.workload;
        m.namespace_ = m.workload.substr(0, m.workload.find('/'));
        m.resource = it->first.resource;
        m.hour = it->first.hour;
        batch.provenance.push_back(std::move(m));
      }
      it = prov_.erase(it);
    }
    if (batch.rows.empty() && batch.provenance.empty()) return Status::Ok();
    billing::Rollup(&batch.rows);
    stats_.rows += static_cast<int64_t>(batch.rows.size());
    return sink_(std::move(batch));
  }

  Client& client_;
  const MeteringConfig& cfg_;
  Millis from_, to_;
  const BatchSink& sink_;
  const Progress& progress_;
  const Millis S_;
  std::map<std::string, PodState> pods_;  // by workload
  std::map<std::string, NodeInfo> node_facts_;
  std::vector<HourlyRow> rows_;
  std::map<ProvKey, MeterProvenance> prov_;
  MeterStats stats_;
  int64_t running_now_ = 0;
};

}  // namespace

Result<MeterStats> MeterPrometheus(Client& client, const MeteringConfig& cfg, Millis from,
                                   Millis to, const BatchSink& sink, const Progress& progress) {
  if (Status s = ValidateMeteringConfig(cfg); !s.ok()) return s;
  if (from % kHourMs != 0 || to % kHourMs != 0)
    return Result<MeterStats>::Error("the window must start and end on whole hours (got " +
                                     FormatRfc3339(from) + " .. " + FormatRfc3339(to) + ")");
  if (to <= from)
    return Result<MeterStats>::Error("the window is empty: --to must be after --from");
  Meter m(client, cfg, from, to, sink, progress);
  return m.Run();
}

}  // namespace arbiter::prometheus
