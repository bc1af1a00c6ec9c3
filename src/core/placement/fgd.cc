// FGD: Fragmentation Gradient Descent (see policies.h for the definition).
//
// Fragmentation is evaluated in a grouped form. With G = the node's free milli-GPU,
// S_ge(m) = free milli on devices with at least m free, C_ge(m) = how many such devices, and
// W_ok(g, cpu_free) = weight of the typical pods of group g that need at most cpu_free:
//   F = W_all * G - sum over groups g the node's model accepts with C_ge(m_g) >= n_g of
//                   W_ok(g, cpu_free) * S_ge(m_g)
// which equals the per-typical-pod definition: a pod that fits cannot use only the devices with
// less than m free; every other typical pod counts all of G.
#include <algorithm>
#include <map>
#include <tuple>

#include "core/int128.h"
#include "core/placement/policies.h"
#include "core/status.h"

namespace arbiter::placement {

namespace {

using ShapeKey = std::tuple<int64_t, int32_t, int32_t, std::vector<std::string>>;

std::vector<std::string> ModelsOf(const PodShape& p) {
  std::vector<std::string> m = p.allowed_gpu_models;
  if (!p.gpu_model.empty()) m.push_back(p.gpu_model);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  return m;
}

ShapeKey KeyOf(const PodShape& p) {
  if (p.gpu_count == 0) return ShapeKey{p.cpu_milli, 0, 0, {}};
  return ShapeKey{p.cpu_milli, p.gpu_milli_per_device, p.gpu_count, ModelsOf(p)};
}

// logit(k / 100) x 1e9 for k = 1..99 (ln(k / (100 - k)), rounded): sigmoid(x) >= k / 100 exactly
// when x >= logit(k / 100).
constexpr int64_t kLogitNano[99] = {
    -4595119850, -3891820298, -3476098690, -3178053830, -2944438979, -2751535313, -2586689344,
    -2442347035, -2313634929, -2197224577, -2090741097, -1992430165, -1900958761, -1815289967,
    -1734601055, -1658228077, -1585627264, -1516347489, -1450010176, -1386294361, -1324925415,
    -1265666373, -1208311206, -1152679510, -1098612289, -1045968555, -994622575,  -944461609,
    -895384047,  -847297860,  -800119300,  -753771802,  -708185058,  -663294217,  -619039208,
    -575364145,  -532216814,  -489548225,  -447312218,  -405465108,  -363965377,  -322773392,
    -281851152,  -241162057,  -200670695,  -160342650,  -120144312,  -80042708,   -40005335,
    0,           40005335,    80042708,    120144312,   160342650,   200670695,   241162057,
    281851152,   322773392,   363965377,   405465108,   447312218,   489548225,   532216814,
    575364145,   619039208,   663294217,   708185058,   753771802,   800119300,   847297860,
    895384047,   944461609,   994622575,   1045968555,  1098612289,  1152679510,  1208311206,
    1265666373,  1324925415,  1386294361,  1450010176,  1516347489,  1585627264,  1658228077,
    1734601055,  1815289967,  1900958761,  1992430165,  2090741097,  2197224577,  2313634929,
    2442347035,  2586689344,  2751535313,  2944438979,  3178053830,  3476098690,  3891820298,
    4595119850,
};

}  // namespace

WorkloadProfile BuildWorkloadProfile(const std::vector<PodShape>& pods) {
  std::map<ShapeKey, int64_t> counts;
  for (const PodShape& p : pods) ++counts[KeyOf(p)];
  WorkloadProfile out;
  out.shapes.reserve(counts.size());
  for (const auto& [k, n] : counts) {
    PodShape s;
    s.cpu_milli = std::get<0>(k);
    s.gpu_milli_per_device = std::get<1>(k);
    s.gpu_count = std::get<2>(k);
    s.allowed_gpu_models = std::get<3>(k);
    out.shapes.push_back({std::move(s), n});
  }
  return out;
}

std::vector<WorkloadProfile::Entry> SelectTypicalShapes(const WorkloadProfile& profile,
                                                        int popularity_percent) {
  // Entries that differ only outside the shape key (memory, extended resources) are one shape.
  std::map<ShapeKey, WorkloadProfile::Entry> merged;
  int64_t total = 0;
  for (const auto& e : profile.shapes) {
    if (e.weight <= 0) continue;
    auto [it, fresh] = merged.try_emplace(KeyOf(e.shape), e);
    if (!fresh) it->second.weight += e.weight;
    total += e.weight;
  }
  std::vector<WorkloadProfile::Entry> all;
  all.reserve(merged.size());
  for (auto& [k, e] : merged) all.push_back(std::move(e));
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    if (a.weight != b.weight) return a.weight > b.weight;
    return KeyOf(a.shape) > KeyOf(b.shape);
  });
  std::vector<WorkloadProfile::Entry> out;
  int64_t cum = 0;
  for (auto& e : all) {
    if (cum * 100 >= total * popularity_percent) break;
    cum += e.weight;
    out.push_back(std::move(e));
  }
  return out;
}

FgdPolicy::FgdPolicy(const WorkloadProfile& profile, int popularity_percent, FgdScoring scoring)
    : scoring_(scoring) {
  const auto typical = SelectTypicalShapes(profile, popularity_percent);
  typical_count_ = typical.size();
  // Group GPU shapes by (milli, count, models); CPU-only shapes only add to W_all.
  std::map<std::tuple<int32_t, int32_t, std::vector<std::string>>,
           std::vector<std::pair<int64_t, int64_t>>>
      by_group;  // -> (cpu, weight)
  for (const auto& e : typical) {
    w_all_ += e.weight;
    if (e.shape.gpu_count == 0) continue;
    by_group[{e.shape.gpu_milli_per_device, e.shape.gpu_count, ModelsOf(e.shape)}].push_back(
        {e.shape.cpu_milli, e.weight});
  }
  for (auto& [k, entries] : by_group) {
    Group g;
    g.milli = std::get<0>(k);
    g.count = std::get<1>(k);
    g.models = std::get<2>(k);
    std::sort(entries.begin(), entries.end());
    g.w_prefix.push_back(0);
    for (const auto& [cpu, w] : entries) {
      g.cpu.push_back(cpu);
      g.w_prefix.push_back(g.w_prefix.back() + w);
    }
    distinct_milli_.push_back(g.milli);
    groups_.push_back(std::move(g));
  }
  std::sort(distinct_milli_.begin(), distinct_milli_.end());
  distinct_milli_.erase(std::unique(distinct_milli_.begin(), distinct_milli_.end()),
                        distinct_milli_.end());
  for (Group& g : groups_)
    g.m_index =
        static_cast<int>(std::lower_bound(distinct_milli_.begin(), distinct_milli_.end(), g.milli) -
                         distinct_milli_.begin());
  scratch_cnt_.resize(distinct_milli_.size());
  scratch_sum_.resize(distinct_milli_.size());
}

void FgdPolicy::ComputeAccess(const std::string& model, std::vector<uint8_t>* access) const {
  access->resize(groups_.size());
  for (size_t i = 0; i < groups_.size(); ++i) {
    const auto& ms = groups_[i].models;
    (*access)[i] = ms.empty() || std::binary_search(ms.begin(), ms.end(), model);
  }
}

int64_t FgdPolicy::Frag(int64_t cpu_free, const int32_t* free, int devices,
                        const std::vector<uint8_t>& access) {
  int64_t total = 0;
  for (int d = 0; d < devices; ++d) total += free[d];
  if (total == 0) return 0;
  const size_t nm = distinct_milli_.size();
  for (size_t j = 0; j < nm; ++j) {
    const int32_t m = distinct_milli_[j];
    int32_t c = 0;
    int64_t s = 0;
    for (int d = 0; d < devices; ++d) {
      const bool ge = free[d] >= m;
      c += ge;
      s += ge ? free[d] : 0;
    }
    scratch_cnt_[j] = c;
    scratch_sum_[j] = s;
  }
  int64_t usable = 0;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Group& g = groups_[i];
    if (!access[i] || scratch_cnt_[g.m_index] < g.count || scratch_sum_[g.m_index] == 0) continue;
    // weight of the group's typical pods with cpu <= cpu_free
    const size_t k =
        static_cast<size_t>(std::upper_bound(g.cpu.begin(), g.cpu.end(), cpu_free) - g.cpu.begin());
    usable += g.w_prefix[k] * scratch_sum_[g.m_index];
  }
  return w_all_ * total - usable;
}

void FgdPolicy::Reset(const std::vector<NodeState>& nodes) {
  base_ = nodes.empty() ? nullptr : nodes.data();
  base_count_ = nodes.size();
  cache_.assign(nodes.size(), NodeCache{});
  for (size_t i = 0; i < nodes.size(); ++i) OnNodeChanged(nodes[i], i);
}

void FgdPolicy::OnNodeChanged(const NodeState& node, size_t index) {
  if (index >= cache_.size()) return;
  NodeCache& c = cache_[index];
  if (!c.valid || c.model != node.gpu_model || c.access.size() != groups_.size()) {
    c.model = node.gpu_model;
    ComputeAccess(c.model, &c.access);
  }
  c.version = next_version_++;
  c.cpu_capacity = node.cpu_capacity_milli;
  c.cpu_used = node.cpu_used_milli;
  c.gpu_used = node.gpu_used_milli;
  scratch_free_.resize(node.gpu_used_milli.size());
  for (size_t d = 0; d < node.gpu_used_milli.size(); ++d)
    scratch_free_[d] = kMilliPerGpu - node.gpu_used_milli[d];
  c.frag = Frag(node.cpu_free(), scratch_free_.data(), node.gpu_devices(), c.access);
  c.valid = true;
}

FgdPolicy::NodeCache* FgdPolicy::CacheFor(const NodeState& node) {
  if (base_ == nullptr || &node < base_ || &node >= base_ + base_count_) return nullptr;
  const size_t index = static_cast<size_t>(&node - base_);
  NodeCache& c = cache_[index];
  if (!c.valid || c.cpu_used != node.cpu_used_milli || c.cpu_capacity != node.cpu_capacity_milli ||
      c.gpu_used != node.gpu_used_milli || c.model != node.gpu_model)
    OnNodeChanged(node, index);
  return &c;
}

int64_t FgdPolicy::Level(int64_t decrease) const {
  if (scoring_ == FgdScoring::kExact) return decrease;
  // x = decrease / (w_all * 1000) GPUs; level = #{k : x >= logit(k/100)} = floor(100 sigmoid(x)).
  if (w_all_ == 0) return 50;
  const int128 lhs = static_cast<int128>(decrease) * 1000000;
  int64_t lo = 0, hi = 99;  // count of table entries <= lhs / w_all
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (lhs >= static_cast<int128>(w_all_) * kLogitNano[mid])
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int64_t FgdPolicy::Fragmentation(const NodeState& node) {
  if (NodeCache* c = CacheFor(node)) return c->frag;
  ComputeAccess(node.gpu_model, &scratch_access_);
  scratch_free_.resize(node.gpu_used_milli.size());
  for (size_t d = 0; d < node.gpu_used_milli.size(); ++d)
    scratch_free_[d] = kMilliPerGpu - node.gpu_used_milli[d];
  return Frag(node.cpu_free(), scratch_free_.data(), node.gpu_devices(), scratch_access_);
}

int FgdPolicy::ShapeId(const PodShape& pod) {
  if (last_shape_id_ != -2 && pod.cpu_milli == last_pod_.cpu_milli &&
      pod.gpu_count == last_pod_.gpu_count &&
      pod.gpu_milli_per_device == last_pod_.gpu_milli_per_device &&
      pod.gpu_model == last_pod_.gpu_model &&
      pod.allowed_gpu_models == last_pod_.allowed_gpu_models)
    return last_shape_id_;
  auto key = std::make_tuple(pod.cpu_milli, pod.gpu_count, pod.gpu_milli_per_device,
                             pod.allowed_gpu_models, pod.gpu_model);
  auto it = shape_ids_.find(key);
  int id = -1;
  if (it != shape_ids_.end()) {
    id = it->second;
  } else if (shape_ids_.size() < 4096) {
    id = static_cast<int>(shape_ids_.size());
    shape_ids_.emplace(std::move(key), id);
  }
  last_pod_.cpu_milli = pod.cpu_milli;
  last_pod_.gpu_count = pod.gpu_count;
  last_pod_.gpu_milli_per_device = pod.gpu_milli_per_device;
  last_pod_.gpu_model = pod.gpu_model;
  last_pod_.allowed_gpu_models = pod.allowed_gpu_models;
  last_shape_id_ = id;
  return id;
}

Candidate FgdPolicy::Score(const NodeState& node, const PodShape& pod) {
  NodeCache* c = CacheFor(node);
  if (c == nullptr) {
    const int64_t before = Fragmentation(node);  // fills scratch_access_
    return Compute(node, pod, before, scratch_access_);
  }
  const int id = ShapeId(pod);
  if (id < 0) return Compute(node, pod, c->frag, c->access);
  if (c->memo.size() <= static_cast<size_t>(id)) c->memo.resize(static_cast<size_t>(id) + 1);
  Memo& m = c->memo[static_cast<size_t>(id)];
  if (m.version != c->version) {
    Candidate cand = Compute(node, pod, c->frag, c->access);
    m.version = c->version;
    m.score = cand.score;
    m.gpus = cand.gpus;
    return cand;
  }
  return Candidate{m.score, m.gpus};
}

int64_t FgdPolicy::ScoreOnly(const NodeState& node, const PodShape& pod) {
  NodeCache* c = CacheFor(node);
  const int id = c ? ShapeId(pod) : -1;
  if (c == nullptr || id < 0) return Score(node, pod).score;
  if (c->memo.size() > static_cast<size_t>(id) &&
      c->memo[static_cast<size_t>(id)].version == c->version)
    return c->memo[static_cast<size_t>(id)].score;
  return Score(node, pod).score;
}

Candidate FgdPolicy::Compute(const NodeState& node, const PodShape& pod, int64_t before,
                             const std::vector<uint8_t>& access_ref) {
  const std::vector<uint8_t>* access = &access_ref;
  const int devices = node.gpu_devices();
  std::vector<int32_t>& free = scratch_free_;
  free.resize(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d) free[d] = kMilliPerGpu - node.gpu_used_milli[d];
  const int64_t cpu_after = node.cpu_free() - pod.cpu_milli;

  if (pod.gpu_count == 1 && pod.gpu_milli_per_device < kMilliPerGpu) {
    // Shared GPU: try each device that fits; equal free milli means an equal outcome.
    const int32_t m = pod.gpu_milli_per_device;
    int best_device = -1;
    int64_t best_score = 0;
    for (int d = 0; d < devices; ++d) {
      const int32_t f = free[d];
      if (f < m) continue;
      bool seen = false;
      for (int e = 0; e < d && !seen; ++e) seen = free[e] == f;
      if (seen) continue;
      free[d] = f - m;
      const int64_t score = Level(before - Frag(cpu_after, free.data(), devices, *access));
      free[d] = f;
      if (best_device < 0 || score > best_score) {
        best_device = d;
        best_score = score;
      }
    }
    GpuAssignment a;
    a.milli_per_device = m;
    if (best_device >= 0) a.devices.push_back(static_cast<int16_t>(best_device));
    return Candidate{best_score, std::move(a)};
  }
  GpuAssignment a = node.DefaultGpuChoice(pod);
  for (int16_t d : a.devices) free[d] -= pod.gpu_milli_per_device;
  const int64_t after = Frag(cpu_after, free.data(), devices, *access);
  return Candidate{Level(before - after), std::move(a)};
}

}  // namespace arbiter::placement
