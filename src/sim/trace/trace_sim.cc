#include "sim/trace/trace_sim.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <queue>

#include "core/placement/policies.h"
#include "core/placement/rng.h"

namespace arbiter::sim::trace {

namespace pl = arbiter::placement;

namespace {

constexpr uint64_t kNodeStream = 0x6E6F6465ULL;  // "node"
constexpr uint64_t kPodStream = 0x706F6473ULL;   // "pods"

template <typename T>
void Shuffle(std::vector<T>& v, pl::Xoshiro256& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Below(i)]);
}

// The cluster as dense node states plus O(1) feasibility summaries.
class Cluster {
 public:
  Cluster(const std::vector<TraceNode>& trace_nodes, uint64_t seed, bool shuffle) {
    std::vector<size_t> order(trace_nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (shuffle) {
      pl::Xoshiro256 rng(seed ^ kNodeStream);
      Shuffle(order, rng);
    }
    std::vector<TraceNode> ordered;
    ordered.reserve(order.size());
    for (size_t i : order) ordered.push_back(trace_nodes[i]);
    nodes_ = ToNodeStates(ordered);
    std::map<std::string, int> models;
    for (const auto& n : nodes_)
      if (!n.gpu_model.empty()) models.emplace(n.gpu_model, 0);
    int id = 0;
    for (auto& [m, v] : models) v = id++;
    use_masks_ = models.size() <= 64;
    model_ids_ = std::move(models);
    fast_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const auto it = model_ids_.find(nodes_[i].gpu_model);
      fast_[i].model_bit = (use_masks_ && it != model_ids_.end()) ? (uint64_t{1} << it->second) : 0;
      Refresh(i);
      gpu_capacity_ += int64_t{nodes_[i].gpu_devices()} * pl::kMilliPerGpu;
      cpu_capacity_ += nodes_[i].cpu_capacity_milli;
    }
  }

  const std::vector<pl::NodeState>& nodes() const { return nodes_; }
  int64_t gpu_capacity() const { return gpu_capacity_; }
  int64_t cpu_capacity() const { return cpu_capacity_; }
  int64_t gpu_allocated() const { return gpu_allocated_; }
  int64_t cpu_allocated() const { return cpu_allocated_; }

  // Allowed-model mask of a pod (all ones = any model).
  uint64_t MaskOf(const pl::PodShape& p) const {
    if (p.gpu_count == 0 || (p.allowed_gpu_models.empty() && p.gpu_model.empty())) return ~uint64_t{0};
    uint64_t m = 0;
    for (const auto& name : p.allowed_gpu_models) {
      auto it = model_ids_.find(name);
      if (it != model_ids_.end()) m |= uint64_t{1} << it->second;
    }
    if (!p.gpu_model.empty()) {
      auto it = model_ids_.find(p.gpu_model);
      uint64_t g = it != model_ids_.end() ? uint64_t{1} << it->second : 0;
      m = p.allowed_gpu_models.empty() ? g : (m & g);
    }
    return m;
  }

  // Places the pod with the policy; returns the node index or -1.
  int64_t Place(pl::PlacementPolicy& policy, const pl::PodShape& pod, uint64_t mask,
                pl::GpuAssignment* out) {
    feasible_.clear();
    const int64_t cpu = pod.cpu_milli, mem = pod.mem_bytes;
    const int32_t cnt = pod.gpu_count, milli = pod.gpu_milli_per_device;
    const size_t n = fast_.size();
    if (!use_masks_) {
      for (size_t i = 0; i < n; ++i)
        if (nodes_[i].Fits(pod)) feasible_.push_back(i);
    } else if (cnt == 0) {
      for (size_t i = 0; i < n; ++i)
        if (fast_[i].cpu_free >= cpu && fast_[i].mem_free >= mem) feasible_.push_back(i);
    } else if (milli >= pl::kMilliPerGpu) {
      for (size_t i = 0; i < n; ++i) {
        const Fast& f = fast_[i];
        if (f.full_free >= cnt && f.cpu_free >= cpu && f.mem_free >= mem && (f.model_bit & mask))
          feasible_.push_back(i);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        const Fast& f = fast_[i];
        if (f.max_free >= milli && f.cpu_free >= cpu && f.mem_free >= mem && (f.model_bit & mask))
          feasible_.push_back(i);
      }
    }
    // ChooseNode's rule (highest score, then lowest index), scoring with ScoreOnly and asking
    // Score() (for the GPU devices) of the winner only.
    if (feasible_.empty()) return -1;
    size_t i = feasible_[0];
    int64_t best = policy.ScoreOnly(nodes_[i], pod);
    for (size_t k = 1; k < feasible_.size(); ++k) {
      const int64_t s = policy.ScoreOnly(nodes_[feasible_[k]], pod);
      if (s > best) {
        best = s;
        i = feasible_[k];
      }
    }
    pl::Candidate choice = policy.Score(nodes_[i], pod);
    nodes_[i].Allocate(pod, choice.gpus);
    gpu_allocated_ += pod.gpu_milli_total();
    cpu_allocated_ += pod.cpu_milli;
    Refresh(i);
    policy.OnNodeChanged(nodes_[i], i);
    *out = std::move(choice.gpus);
    return static_cast<int64_t>(i);
  }

  void Release(pl::PlacementPolicy& policy, size_t i, const pl::PodShape& pod,
               const pl::GpuAssignment& a) {
    nodes_[i].Release(pod, a);
    gpu_allocated_ -= pod.gpu_milli_total();
    cpu_allocated_ -= pod.cpu_milli;
    Refresh(i);
    policy.OnNodeChanged(nodes_[i], i);
  }

 private:
  struct Fast {
    int64_t cpu_free = 0;
    int64_t mem_free = 0;
    int32_t max_free = 0;   // largest free milli on one device
    int32_t full_free = 0;  // devices with nothing used
    uint64_t model_bit = 0;
  };
  void Refresh(size_t i) {
    const pl::NodeState& s = nodes_[i];
    Fast& f = fast_[i];
    f.cpu_free = s.cpu_free();
    f.mem_free = s.mem_free();
    f.max_free = 0;
    f.full_free = 0;
    for (int32_t u : s.gpu_used_milli) {
      f.max_free = std::max(f.max_free, pl::kMilliPerGpu - u);
      f.full_free += (u == 0);
    }
  }

  std::vector<pl::NodeState> nodes_;
  std::vector<Fast> fast_;
  std::map<std::string, int> model_ids_;
  bool use_masks_ = true;
  std::vector<size_t> feasible_;
  int64_t gpu_capacity_ = 0, cpu_capacity_ = 0, gpu_allocated_ = 0, cpu_allocated_ = 0;
};

pl::WorkloadProfile ProfileOf(const PodTrace& trace) {
  std::vector<pl::PodShape> shapes;
  shapes.reserve(trace.pods.size());
  for (const auto& p : trace.pods) shapes.push_back(p.shape);
  return pl::BuildWorkloadProfile(shapes);
}

std::unique_ptr<pl::PlacementPolicy> MakePolicy(const TraceRunOptions& o, const PodTrace& trace) {
  if (o.policy == PlacementPolicyName::kFGD)
    return std::make_unique<pl::FgdPolicy>(ProfileOf(trace), o.typical_popularity_percent);
  return pl::MakePlacementPolicy(o.policy, o.seed, ProfileOf(trace));
}

}  // namespace

double SaturateResult::gpu_allocation_at_100() const {
  return cluster_gpu_milli > 0 ? static_cast<double>(allocated_gpu_milli_at_100) / cluster_gpu_milli : 0;
}
double SaturateResult::unallocated_gpu_share_at_end() const {
  return cluster_gpu_milli > 0 ? 1.0 - static_cast<double>(allocated_gpu_milli) / cluster_gpu_milli : 0;
}
double TimelineResult::average_gpu_allocation() const {
  if (cluster_gpu_milli <= 0 || end_s <= start_s) return 0;
  return static_cast<double>(gpu_milli_seconds) / static_cast<double>(cluster_gpu_milli) /
         static_cast<double>(end_s - start_s);
}

Result<SaturateResult> RunSaturate(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (trace.pods.empty()) return Result<SaturateResult>::Error("saturate: the pod list is empty");
  if (o.target_permille <= 0) return Result<SaturateResult>::Error("saturate: --target must be > 0");
  Cluster cluster(nodes, o.seed, o.shuffle_nodes);
  SaturateResult r;
  r.policy = PolicyKey(o.policy);
  r.seed = o.seed;
  r.cluster_gpu_milli = cluster.gpu_capacity();
  r.cluster_cpu_milli = cluster.cpu_capacity();
  if (r.cluster_gpu_milli == 0) return Result<SaturateResult>::Error("saturate: the cluster has no GPUs");

  // The submission list (indices into trace.pods).
  pl::Xoshiro256 rng(o.seed ^ kPodStream);
  std::vector<uint32_t> order(trace.pods.size());
  int64_t demand = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = static_cast<uint32_t>(i);
    demand += trace.pods[i].gpu_milli_total();
  }
  if (demand == 0) return Result<SaturateResult>::Error("saturate: the pod list asks for no GPUs");
  Shuffle(order, rng);
  const int64_t target =
      static_cast<int64_t>(static_cast<__int128>(r.cluster_gpu_milli) * o.target_permille / 1000);
  if (demand > target) {
    while (demand > target && !order.empty()) {
      const size_t k = rng.Below(order.size());
      demand -= trace.pods[order[k]].gpu_milli_total();
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
  } else {
    while (true) {
      const uint32_t k = static_cast<uint32_t>(rng.Below(trace.pods.size()));
      const int64_t g = trace.pods[k].gpu_milli_total();
      if (demand + g > target) break;
      demand += g;
      order.push_back(k);
    }
  }

  std::vector<uint64_t> masks(trace.pods.size());
  for (size_t i = 0; i < trace.pods.size(); ++i) masks[i] = cluster.MaskOf(trace.pods[i].shape);

  auto policy = MakePolicy(o, trace);
  policy->Reset(cluster.nodes());
  int64_t arrived = 0;
  bool reached_100 = false;
  int64_t next_percent = 1;
  pl::GpuAssignment a;
  for (uint32_t k : order) {
    const TracePod& p = trace.pods[k];
    ++r.pods_submitted;
    arrived += p.gpu_milli_total();
    if (cluster.Place(*policy, p.shape, masks[k], &a) >= 0) {
      ++r.pods_placed;
    } else {
      ++r.pods_failed;
      if (p.shape.gpu_count > 0) ++r.gpu_pods_failed;
    }
    while (arrived * 100 >= next_percent * r.cluster_gpu_milli) {
      r.curve.push_back({next_percent * r.cluster_gpu_milli / 100, cluster.gpu_allocated()});
      ++next_percent;
    }
    if (!reached_100 && arrived >= r.cluster_gpu_milli) {
      reached_100 = true;
      r.allocated_gpu_milli_at_100 = cluster.gpu_allocated();
    }
  }
  r.arrived_gpu_milli = arrived;
  r.allocated_gpu_milli = cluster.gpu_allocated();
  r.allocated_cpu_milli = cluster.cpu_allocated();
  if (!reached_100) r.allocated_gpu_milli_at_100 = r.allocated_gpu_milli;
  return r;
}

Result<TimelineResult> RunTimeline(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (!trace.has_times)
    return Result<TimelineResult>::Error(
        "timeline: the pod list has no creation_time/deletion_time/scheduled_time columns "
        "(use --mode saturate)");
  Cluster cluster(nodes, o.seed, o.shuffle_nodes);
  TimelineResult r;
  r.policy = PolicyKey(o.policy);
  r.seed = o.seed;
  r.cluster_gpu_milli = cluster.gpu_capacity();
  r.cluster_cpu_milli = cluster.cpu_capacity();
  r.failed_by_priority_tier.assign(4, 0);
  int32_t tenants = 1;
  for (const auto& p : trace.pods) tenants = std::max(tenants, p.tenant + 1);
  r.tenants.assign(static_cast<size_t>(tenants), TimelineResult::Tenant{});

  struct Arrival {
    int64_t t;
    uint32_t pod;
  };
  std::vector<Arrival> arrivals;
  std::vector<int64_t> duration(trace.pods.size(), 0);
  for (size_t i = 0; i < trace.pods.size(); ++i) {
    const TracePod& p = trace.pods[i];
    if (!p.creation_s) continue;  // no arrival time: not part of the replay
    int64_t end = p.deletion_s.value_or(*p.creation_s);
    int64_t start = p.scheduled_s.value_or(*p.creation_s);
    duration[i] = std::max<int64_t>(0, end - start);
    arrivals.push_back({*p.creation_s, static_cast<uint32_t>(i)});
  }
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const Arrival& a, const Arrival& b) { return a.t < b.t; });
  if (arrivals.empty()) return Result<TimelineResult>::Error("timeline: no pod has a creation_time");

  auto policy = MakePolicy(o, trace);
  policy->Reset(cluster.nodes());
  struct Running {
    int64_t end;
    uint64_t seq;
    uint32_t pod;
    uint32_t node;
    bool operator>(const Running& b) const { return end != b.end ? end > b.end : seq > b.seq; }
  };
  std::priority_queue<Running, std::vector<Running>, std::greater<Running>> running;
  std::vector<pl::GpuAssignment> assignment(trace.pods.size());
  const std::vector<uint64_t> masks = [&] {
    std::vector<uint64_t> m(trace.pods.size());
    for (size_t i = 0; i < trace.pods.size(); ++i) m[i] = cluster.MaskOf(trace.pods[i].shape);
    return m;
  }();
  r.start_s = arrivals.front().t;
  int64_t last_t = r.start_s;
  uint64_t seq = 0;
  const size_t stride = std::max<size_t>(1, arrivals.size() / 1000);
  size_t events = 0;
  auto advance = [&](int64_t t) {
    r.gpu_milli_seconds += static_cast<__int128>(cluster.gpu_allocated()) * (t - last_t);
    last_t = t;
  };
  auto record = [&](int64_t t) {
    if (events++ % stride == 0)
      r.points.push_back({t, cluster.gpu_allocated(), cluster.cpu_allocated(),
                          static_cast<int64_t>(running.size())});
  };
  for (const Arrival& ar : arrivals) {
    while (!running.empty() && running.top().end <= ar.t) {
      Running x = running.top();
      running.pop();
      advance(x.end);
      cluster.Release(*policy, x.node, trace.pods[x.pod].shape, assignment[x.pod]);
      record(x.end);
    }
    advance(ar.t);
    const TracePod& p = trace.pods[ar.pod];
    ++r.pods_submitted;
    const int64_t node = cluster.Place(*policy, p.shape, masks[ar.pod], &assignment[ar.pod]);
    TimelineResult::Tenant& tu = r.tenants[static_cast<size_t>(std::max(0, p.tenant))];
    if (node >= 0) {
      ++r.pods_placed;
      ++tu.pods_placed;
      tu.gpu_milli_seconds += static_cast<__int128>(p.gpu_milli_total()) * duration[ar.pod];
      tu.cpu_milli_seconds += static_cast<__int128>(p.cpu_milli) * duration[ar.pod];
      running.push({ar.t + duration[ar.pod], seq++, ar.pod, static_cast<uint32_t>(node)});
    } else {
      ++r.pods_failed;
      ++tu.pods_failed;
      const int tier = p.priority == 1000 ? 0 : p.priority == 5000 ? 1 : p.priority == 10000 ? 2 : 3;
      ++r.failed_by_priority_tier[static_cast<size_t>(tier)];
    }
    r.peak_allocated_gpu_milli = std::max(r.peak_allocated_gpu_milli, cluster.gpu_allocated());
    record(ar.t);
  }
  while (!running.empty()) {
    Running x = running.top();
    running.pop();
    advance(x.end);
    cluster.Release(*policy, x.node, trace.pods[x.pod].shape, assignment[x.pod]);
    record(x.end);
  }
  r.end_s = last_t;
  const TimelinePoint last{last_t, cluster.gpu_allocated(), cluster.cpu_allocated(), 0};
  if (r.points.empty() || r.points.back().time_s != last.time_s ||
      r.points.back().allocated_gpu_milli != last.allocated_gpu_milli)
    r.points.push_back(last);
  return r;
}

Result<std::vector<PolicySummary>> ComparePolicies(const std::vector<TraceNode>& nodes,
                                                   const PodTrace& trace,
                                                   const std::vector<PlacementPolicyName>& policies,
                                                   const std::vector<uint64_t>& seeds,
                                                   const TraceRunOptions& base,
                                                   const ProgressFn& progress) {
  if (policies.empty() || seeds.empty())
    return Result<std::vector<PolicySummary>>::Error("compare: need at least one policy and one seed");
  std::vector<PolicySummary> out;
  const size_t total = policies.size() * seeds.size();
  size_t done = 0;
  for (PlacementPolicyName p : policies) {
    std::vector<SaturateResult> runs;
    for (uint64_t seed : seeds) {
      TraceRunOptions o = base;
      o.policy = p;
      o.seed = seed;
      if (progress) progress(PolicyKey(p), seed, done, total);
      auto r = RunSaturate(nodes, trace, o);
      if (!r.ok()) return r.status();
      runs.push_back(std::move(r).value());
      ++done;
    }
    out.push_back(SummariseRuns(PolicyKey(p), seeds, std::move(runs)));
  }
  if (progress) progress("", 0, done, total);
  return out;
}

PolicySummary SummariseRuns(std::string policy, std::vector<uint64_t> seeds,
                            std::vector<SaturateResult> runs) {
  PolicySummary s;
  s.policy = std::move(policy);
  s.seeds = std::move(seeds);
  s.runs = std::move(runs);
  if (s.runs.empty()) return s;
  {
    double a = 0, u = 0, f = 0;
    s.unallocated_gpu_share_min = 1;
    s.unallocated_gpu_share_max = 0;
    for (const auto& r : s.runs) {
      a += r.gpu_allocation_at_100();
      const double un = r.unallocated_gpu_share_at_end();
      u += un;
      f += static_cast<double>(r.pods_failed);
      s.unallocated_gpu_share_min = std::min(s.unallocated_gpu_share_min, un);
      s.unallocated_gpu_share_max = std::max(s.unallocated_gpu_share_max, un);
    }
    const double n = static_cast<double>(s.runs.size());
    s.gpu_allocation_at_100 = a / n;
    s.unallocated_gpu_share_at_end = u / n;
    s.pods_failed = f / n;
  }
  return s;
}

Result<PlacementPolicyName> ParsePolicyName(std::string_view text) {
  std::string k;
  for (char c : text)
    if (c != '-' && c != '_' && c != ' ') k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (k == "bestfit") return PlacementPolicyName::kBestFit;
  if (k == "leastallocated" || k == "spread") return PlacementPolicyName::kLeastAllocated;
  if (k == "fgd") return PlacementPolicyName::kFGD;
  if (k == "packing" || k == "gpupacking") return PlacementPolicyName::kPacking;
  if (k == "dotproduct" || k == "dotprod") return PlacementPolicyName::kDotProduct;
  if (k == "random" || k == "randomfit") return PlacementPolicyName::kRandom;
  return Result<PlacementPolicyName>::Error(
      "unknown placement policy '" + std::string(text) +
      "' (expected bestfit, fgd, leastallocated, packing, dotproduct or random)");
}

std::string PolicyKey(PlacementPolicyName p) {
  switch (p) {
    case PlacementPolicyName::kBestFit: return "bestfit";
    case PlacementPolicyName::kLeastAllocated: return "leastallocated";
    case PlacementPolicyName::kFGD: return "fgd";
    case PlacementPolicyName::kPacking: return "packing";
    case PlacementPolicyName::kDotProduct: return "dotproduct";
    case PlacementPolicyName::kRandom: return "random";
  }
  return "unknown";
}

Result<std::vector<uint64_t>> ParseSeeds(std::string_view text) {
  using R = Result<std::vector<uint64_t>>;
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  auto num = [](std::string_view s, uint64_t* v) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && p == s.data() + s.size();
  };
  const std::string syntax = " (expected a seed like 42, a range like 42-51, or a comma list like 1,5,10-12)";
  const std::string too_many = "more than " + std::to_string(kMaxSeeds) + " seeds in '" + std::string(text) +
                               "' (each seed is one saturate run per policy; at most " +
                               std::to_string(kMaxSeeds) + ")";
  if (trim(text).empty()) return R::Error("no seed given" + syntax);
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view part = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (part.empty()) return R::Error("empty item in seed list '" + std::string(text) + "'" + syntax);
    size_t dash = part.find('-');
    uint64_t a = 0, b = 0;
    if (dash == std::string_view::npos) {
      if (!num(part, &a)) return R::Error("'" + std::string(part) + "' is not a seed (a whole number >= 0)" + syntax);
      out.push_back(a);
    } else {
      if (dash == 0) return R::Error("'" + std::string(part) + "': seeds are not negative" + syntax);
      const std::string_view first = trim(part.substr(0, dash)), last = trim(part.substr(dash + 1));
      if (!num(first, &a) || !num(last, &b))
        return R::Error("'" + std::string(part) + "' is not a seed range FIRST-LAST" + syntax);
      if (b < a)
        return R::Error("seed range '" + std::string(part) + "' is reversed: FIRST must not be greater than LAST (did you mean " +
                        std::string(last) + "-" + std::string(first) + "?)");
      if (b - a >= kMaxSeeds || out.size() + (b - a + 1) > kMaxSeeds) return R::Error(too_many);
      for (uint64_t s = a;; ++s) {
        out.push_back(s);
        if (s == b) break;
      }
    }
    if (out.size() > kMaxSeeds) return R::Error(too_many);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<uint64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      return R::Error("seed " + std::to_string(sorted[i]) + " is given more than once in '" + std::string(text) +
                      "' (each seed once)");
  return out;
}

Result<int64_t> ParseTargetPermille(std::string_view text) {
  using R = Result<int64_t>;
  const std::string shown(text);
  const std::string syntax = " (expected a ratio of the cluster's GPUs like 1.3, or a percentage like 130%; "
                             "between 0 and 10, i.e. 1000%)";
  std::string_view t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  if (t.empty()) return R::Error("no target given" + syntax);
  __int128 whole = 0, frac = 0, denom = 1;
  size_t i = 0;
  bool digits = false;
  for (; i < t.size() && t[i] != '.'; ++i) {
    if (t[i] < '0' || t[i] > '9') return R::Error("'" + shown + "' is not a number" + syntax);
    digits = true;
    if (whole < static_cast<__int128>(1) << 64) whole = whole * 10 + (t[i] - '0');
  }
  if (i < t.size()) {
    for (++i; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return R::Error("'" + shown + "' is not a number" + syntax);
      digits = true;
      if (denom >= 1000000) {
        if (t[i] != '0') return R::Error("'" + shown + "' is more precise than " +
                                         (percent ? "0.1%" : std::string("0.001")) + syntax);
        continue;
      }
      frac = frac * 10 + (t[i] - '0');
      denom *= 10;
    }
  }
  if (!digits) return R::Error("'" + shown + "' is not a number" + syntax);
  const int64_t scale = percent ? 10 : 1000;  // per mille per unit written
  if ((frac * scale) % denom != 0)
    return R::Error("'" + shown + "' is more precise than " + (percent ? "0.1%" : std::string("0.001")) + syntax);
  const __int128 permille = whole * scale + frac * scale / denom;
  if (permille <= 0) return R::Error("the target must be above 0, got '" + shown + "'" + syntax);
  if (permille > kMaxTargetPermille) {
    if (!percent && whole * 10 <= kMaxTargetPermille)
    {
      std::string pct = std::to_string(static_cast<int64_t>(permille / 10));
      if (permille % 10 != 0) pct += "." + std::to_string(static_cast<int>(permille % 10));
      return R::Error("'" + shown + "' would mean " + shown + " x the cluster's GPUs (" + pct +
                      "%): a bare number is a ratio, at most 10; did you mean " + shown + "%?");
    }
    return R::Error("'" + shown + "' is above the limit of 10 x the cluster's GPUs (1000%)" + syntax);
  }
  return static_cast<int64_t>(permille);
}

}  // namespace arbiter::sim::trace
