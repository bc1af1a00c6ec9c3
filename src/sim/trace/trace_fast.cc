// The fast placement loops trace replay used before it went through the engine, kept for the
// differential test (tests/sim/trace_differential_test.cc) until the engine path is proven equal.
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
  if (o.policy.value_or(PlacementPolicyName::kBestFit) == PlacementPolicyName::kFGD)
    return std::make_unique<pl::FgdPolicy>(ProfileOf(trace), o.typical_popularity_percent);
  return pl::MakePlacementPolicy(o.policy.value_or(PlacementPolicyName::kBestFit), o.seed, ProfileOf(trace));
}

}  // namespace

Result<SaturateResult> RunSaturateFast(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (trace.pods.empty()) return Result<SaturateResult>::Error("saturate: the pod list is empty");
  if (o.target_permille <= 0) return Result<SaturateResult>::Error("saturate: --target must be > 0");
  Cluster cluster(nodes, o.seed, o.shuffle_nodes);
  SaturateResult r;
  r.policy = PolicyKey(o.policy.value_or(PlacementPolicyName::kBestFit));
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
    const int64_t placed_on = cluster.Place(*policy, p.shape, masks[k], &a);
    if (o.on_decision) o.on_decision(k, placed_on >= 0 ? cluster.nodes()[static_cast<size_t>(placed_on)].name : "");
    if (placed_on >= 0) {
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

Result<TimelineResult> RunTimelineFast(const std::vector<TraceNode>& nodes, const PodTrace& trace,
                                   const TraceRunOptions& o) {
  if (!trace.has_times)
    return Result<TimelineResult>::Error(
        "timeline: the pod list has no creation_time/deletion_time/scheduled_time columns "
        "(use --mode saturate)");
  Cluster cluster(nodes, o.seed, o.shuffle_nodes);
  TimelineResult r;
  r.policy = PolicyKey(o.policy.value_or(PlacementPolicyName::kBestFit));
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
    if (o.on_decision) o.on_decision(ar.pod, node >= 0 ? cluster.nodes()[static_cast<size_t>(node)].name : "");
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

}  // namespace arbiter::sim::trace
