// Filter and score (kube-scheduler's Filter and Score extension points): which nodes a workload
// may use, whether it fits there once room held for nominated workloads is kept, why no node
// fits, and the choice among the feasible nodes by the placement policy.
//
// Node order: nodes are scanned from a rotating start and ties broken in (UpsertNode::order,
// name) order. The fit test reads a dense copy of each node's fit numbers (FitEntry), refreshed
// whenever the node changes; it is the fit rule of placement/node_state.h.
#include <algorithm>
#include <map>

#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/int128.h"
#include "core/placement/node_constraints.h"
#include "core/placement/pod_topology.h"
#include "core/placement/policies.h"

namespace arbiter::engine {

using placement::NodeState;

namespace {
constexpr uint32_t kOverflowModel = 31;  // models beyond the first 31 share the last bit
constexpr uint32_t kOverflowBit = uint32_t{1} << kOverflowModel;
}  // namespace

uint32_t State::ModelBit(const std::string& model) {
  auto it = model_ids.find(model);
  if (it == model_ids.end())
    it = model_ids
             .emplace(model,
                      std::min<uint32_t>(static_cast<uint32_t>(model_ids.size()), kOverflowModel))
             .first;
  return uint32_t{1} << it->second;
}

uint32_t State::ModelMask(const placement::PodShape& p) {
  if (p.gpu_count == 0 || (p.gpu_model.empty() && p.allowed_gpu_models.empty()))
    return ~uint32_t{0};
  // The models the pod accepts (placement::ModelAccepts): gpu_model if set (and allowed), else the
  // allowed list. Models beyond the first 31 share a bit, checked by name.
  std::vector<std::string> accepted;
  if (!p.gpu_model.empty()) {
    if (p.allowed_gpu_models.empty() ||
        std::find(p.allowed_gpu_models.begin(), p.allowed_gpu_models.end(), p.gpu_model) !=
            p.allowed_gpu_models.end())
      accepted.push_back(p.gpu_model);
  } else {
    accepted = p.allowed_gpu_models;
  }
  uint32_t mask = 0;
  for (const auto& m : accepted) mask |= ModelBit(m);
  return mask;
}

void State::RefreshFit(uint32_t pos) {
  const NodeState& n = nodes[pos];
  FitEntry& f = fit[pos];
  f.cpu_free = n.cpu_free();
  f.mem_free = n.mem_free();
  f.gpu_free = static_cast<int32_t>(n.gpu_free_milli());
  f.full_free = static_cast<int16_t>(n.full_free_gpus());
  f.max_free = static_cast<int16_t>(n.max_device_free());
  f.schedulable = n.schedulable;
  f.has_ext = !n.ext_capacity.empty();
  f.tainted = placement::HasHardTaint(SpecAt(pos).taints);
  RefreshFitBlock(pos / kFitBlock);
}

void State::RefreshFitBlock(size_t block) {
  const size_t blocks = (fit.size() + kFitBlock - 1) / kFitBlock;
  if (fit_block.size() != blocks) fit_block.resize(blocks);
  if (block >= blocks) return;
  const size_t from = block * kFitBlock, to = std::min(fit.size(), from + kFitBlock);
  FitEntry m = fit[from];
  for (size_t i = from + 1; i < to; ++i) {
    const FitEntry& f = fit[i];
    m.cpu_free = std::max(m.cpu_free, f.cpu_free);
    m.mem_free = std::max(m.mem_free, f.mem_free);
    m.gpu_free = std::max(m.gpu_free, f.gpu_free);
    m.full_free = std::max(m.full_free, f.full_free);
    m.max_free = std::max(m.max_free, f.max_free);
  }
  fit_block[block] = m;
}

void State::CountTaints(const Node& node, int sign) {
  if (placement::HasHardTaint(node.taints)) tainted_nodes += static_cast<size_t>(sign);
  if (placement::HasPreferTaint(node.taints)) prefer_tainted_nodes += static_cast<size_t>(sign);
}

void State::RebuildFitIndex() {
  tainted_nodes = prefer_tainted_nodes = 0;
  for (uint32_t pos = 0; pos < nodes.size(); ++pos) CountTaints(SpecAt(pos), +1);
  fit.assign(nodes.size(), FitEntry{});
  for (uint32_t pos = 0; pos < nodes.size(); ++pos) {
    fit[pos].model_bit = ModelBit(nodes[pos].gpu_model);
    RefreshFit(pos);
  }
}

void State::NodeChanged(uint32_t pos) {
  RefreshFit(pos);
  placer->OnNodeChanged(nodes[pos], pos);
}

void State::RecountMinPriority(uint32_t pos) {
  NodeLive& live = node_live[pos];
  live.min_priority = INT32_MAX;
  live.at_min_priority = 0;
  for (Slot s : live.workloads) CountMinPriority(pos, workloads[s].priority);
}

void State::CountMinPriority(uint32_t pos, int32_t priority) {
  NodeLive& live = node_live[pos];
  if (priority < live.min_priority) {
    live.min_priority = priority;
    live.at_min_priority = 0;
  }
  if (priority == live.min_priority) ++live.at_min_priority;
}

// In kube-scheduler's filter order: NodeUnschedulable, TaintToleration, NodeAffinity.
// Then (with `topology`) PodTopologySpread and InterPodAffinity (pod_topology.cc).
// A workload bound already (SubmitPod::node) passes its node only, whatever those say (they are
// IgnoredDuringExecution; NoExecute taints evict it once bound); its flavor's labels still hold
// (its quota is counted on a flavor of the node it runs on).
State::NodeFilter State::FilterNode(uint32_t pos, const Workload& w, const Taint** taint,
                                    bool topology) const {
  const NodeState& n = nodes[pos];
  if (!w.bound_node().empty()) {
    if (n.name != w.bound_node()) return NodeFilter::kAffinity;
    for (const auto& [k, v] : w.rare().flavor_labels)
      if (auto it = n.labels->find(k); it == n.labels->end() || it->second != v)
        return NodeFilter::kAffinity;
    return NodeFilter::kPass;
  }
  if (!n.schedulable && !w.tolerates_unschedulable) return NodeFilter::kUnschedulable;
  if (fit[pos].tainted)
    if (const Taint* t =
            placement::FirstUntoleratedTaint(SpecAt(pos).taints, w.rare().tolerations)) {
      if (taint) *taint = t;
      return NodeFilter::kTaint;
    }
  if ((!w.node_selector.empty() || w.rare().node_affinity.required) &&
      !placement::RequiredAffinityMatches(w.node_selector, w.rare().node_affinity, *n.labels,
                                          n.name))
    return NodeFilter::kAffinity;
  // Kueue adds its flavor's labels to the selector.
  for (const auto& [k, v] : w.rare().flavor_labels) {
    auto it = n.labels->find(k);
    if (it == n.labels->end() || it->second != v) return NodeFilter::kAffinity;
  }
  if (topology && NeedsTopology(w)) return TopologyFilter(pos, w);
  return NodeFilter::kPass;
}

bool State::NodeSelectable(uint32_t pos, const Workload& w) const {
  return FilterNode(pos, w) == NodeFilter::kPass;
}

// kube-scheduler's scoring, for the feasible nodes of a workload with node preferences: each
// score plugin's scores normalised to 0..100 over the feasible nodes, weighted and summed. The
// placement policy's score (any integer range) is scaled linearly, min to 0 and max to 100, and
// kept exact: the sums are compared multiplied through by the policy scores' span.
std::optional<placement::Choice> State::ChooseWithPreferences(const std::vector<size_t>& feasible,
                                                              const Workload& w) {
  if (feasible.empty()) return std::nullopt;
  const size_t k = feasible.size();
  std::vector<int64_t> own(k), taints(k), affinity(k), pod_affinity, spread;
  for (size_t j = 0; j < k; ++j) {
    const NodeState& n = nodes[feasible[j]];
    own[j] = placer->ScoreOnly(n, w.shape);
    taints[j] = placement::CountIntolerablePreferNoSchedule(
        SpecAt(static_cast<uint32_t>(feasible[j])).taints, w.rare().tolerations);
    affinity[j] = placement::PreferredAffinityScore(w.rare().node_affinity, *n.labels, n.name);
  }
  placement::NormalizeScores(taints, /*reverse=*/true);
  placement::NormalizeScores(affinity, /*reverse=*/false);
  TopologyScores(feasible, w, pod_affinity, spread);  // normalised there
  const auto [lo, hi] = std::minmax_element(own.begin(), own.end());
  const int128 min = *lo, span = static_cast<int128>(*hi) - *lo;
  size_t best = k;
  int128 best_total = 0;
  for (size_t j = 0; j < k; ++j) {
    const int128 constraints = placement::kTaintTolerationWeight * taints[j] +
                               placement::kNodeAffinityWeight * affinity[j] +
                               placement::kInterPodAffinityWeight * pod_affinity[j] +
                               placement::kPodTopologySpreadWeight * spread[j];
    const int128 total =
        span == 0 ? constraints
                  : placement::kPlacementPolicyWeight * placement::kMaxNodeScore * (own[j] - min) +
                        span * constraints;
    if (best == k || total > best_total || (total == best_total && feasible[j] < feasible[best])) {
      best = j;
      best_total = total;
    }
  }
  const size_t i = feasible[best];
  return placement::Choice{i, placer->Score(nodes[i], w.shape)};
}

bool State::FitsRespectingNominated(uint32_t pos, const Workload& w, bool fit_known) const {
  const NodeState& n = nodes[pos];
  const auto& nominated = node_live[pos].nominated;
  if (fit_known && nominated.empty()) return true;
  if (!fit_known && !n.Fits(w.shape)) return false;
  if (nominated.empty()) return true;
  bool others = false;
  for (Slot s : nominated)
    if (workloads[s].id != w.id && workloads[s].priority >= w.priority &&
        !SameGang(workloads[s], w))
      others = true;
  if (!others) return true;
  // Room held for nominated workloads of equal or higher priority stays held (not against the
  // workload's own pod group, which is placed in one step).
  placement::FitView view;
  view.Reset(n);
  for (Slot s : nominated) {
    const Workload& p = workloads[s];
    if (p.id == w.id || p.priority < w.priority || SameGang(p, w)) continue;
    if (!view.Fits(p.shape)) return false;  // resources it waits for are taken already
    view.Hold(p.shape);
  }
  return view.Fits(w.shape);
}

// Whom a node's room is held for, against `w`: the nominated workload of highest priority (then
// earliest) that `w` must leave room for. Slurm shows a job that waits behind a higher-priority
// one with Reason=Priority.
std::string State::HeldFor(uint32_t pos, const Workload& w) const {
  const Workload* top = nullptr;
  for (Slot s : node_live[pos].nominated) {
    const Workload& p = workloads[s];
    if (p.id == w.id || p.priority < w.priority || SameGang(p, w)) continue;
    if (!top || p.priority > top->priority || (p.priority == top->priority && p.id < top->id))
      top = &p;
  }
  if (!top) return "";
  return " Node " + nodes[pos].name + " is held for " + top->key + " (priority " +
         std::to_string(top->priority) +
         "), which waits for its preemption victims to exit (Slurm: Reason=Priority).";
}

std::string State::NoFitMessage(const Workload& w) const {
  // Counted with plain integers (this runs for every failed shape in every cycle, over every
  // node); extended resources, rare, by name. Nothing changed in the pool since the same shape
  // class last failed: the same reason (room held for nominated workloads depends on who asks).
  const bool cacheable = nominations == 0 && reservations.empty() &&
                         w.rare().flavor_labels.empty() && !NeedsTopology(w);
  if (cacheable)
    if (auto c = no_fit_cache.find(w.shape_class);
        c != no_fit_cache.end() && c->second.first == pool_version)
      return c->second.second;
  // The dense fit numbers answer cpu, memory and GPUs; the node itself only extended resources.
  NoFit f;
  f.nodes = nodes.size();
  uint32_t held_at = 0;  // the first node (in node order) whose room is held for another
  std::map<std::string, int> ext;
  std::map<std::string, size_t> taints;  // untolerated taint "{key: value}" -> nodes
  const placement::PodShape& p = w.shape;
  const bool selector = NeedsNodeFilter(w);
  const bool bound = !w.bound_node().empty();  // in its node's room, held for others or not
  const bool topology = NeedsTopology(w) && !bound;
  const bool plain_ext = p.ext.size() == 1 && p.ext.entries()[0].first == kPods;
  const bool cordoned_ok = w.tolerates_unschedulable || bound;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const FitEntry& e = fit[i];
    if (!e.schedulable && !cordoned_ok) {
      ++f.unschedulable;
      continue;
    }
    if (selector) {
      const Taint* taint = nullptr;
      const NodeFilter why = FilterNode(i, w, &taint, /*topology=*/false);
      if (why == NodeFilter::kTaint) ++taints[placement::TaintText(*taint)];
      if (why == NodeFilter::kAffinity) ++f.selector;
      if (why == NodeFilter::kUnschedulable) ++f.unschedulable;
      if (why != NodeFilter::kPass) continue;
    }
    if (!placement::ModelAccepts(nodes[i].gpu_model, p)) {
      ++f.model;
      continue;
    }
    unsigned m = 0;
    if (p.cpu_milli > e.cpu_free) m |= NodeState::kShortCpu;
    if (p.mem_bytes > e.mem_free) m |= NodeState::kShortMemory;
    if (!placement::GpuNumbersFit(e.full_free, e.max_free, p)) m |= NodeState::kShortGpu;
    if (e.has_ext || !plain_ext) m |= nodes[i].ShortOf(p) & NodeState::kShortExtended;
    const NodeState& n = nodes[i];
    if (m == 0 && topology) {  // after NodeResourcesFit, as in kube-scheduler
      const NodeFilter why = TopologyFilter(i, w);
      f.spread_label += why == NodeFilter::kSpreadLabel;
      f.spread += why == NodeFilter::kSpread;
      f.pod_affinity += why == NodeFilter::kPodAffinity;
      f.pod_anti_affinity += why == NodeFilter::kPodAntiAffinity;
      f.existing_anti_affinity += why == NodeFilter::kExistingAntiAffinity;
      if (why != NodeFilter::kPass) continue;
    }
    if (m == 0 && !bound && nominations > 0 && !FitsRespectingNominated(i, w)) {
      if (f.held++ == 0) held_at = i;
    } else if (m == 0 && !bound && Reserved(i) && DelaysReservation(i, w))
      ++f.reserved;
    f.cpu += (m & NodeState::kShortCpu) != 0;
    f.memory += (m & NodeState::kShortMemory) != 0;
    f.gpu += (m & NodeState::kShortGpu) != 0;
    if (m & NodeState::kShortExtended)
      for (const auto& r : n.Insufficient(w.shape))
        if (r != arbiter::kCpu && r != arbiter::kMemory && r != arbiter::kGpu) ++ext[r];
  }
  for (const auto& [r, c] : ext) f.extended.emplace_back(r, static_cast<size_t>(c));
  for (const auto& [t, c] : taints) f.taints.emplace_back(t, c);
  std::string msg = Render(f);
  if (f.held) msg += HeldFor(held_at, w);
  if (cacheable) no_fit_cache[w.shape_class] = {pool_version, msg};
  return msg;
}

// kube-scheduler's numFeasibleNodesToFind: small pools are scored in full; large ones stop after
// an adaptive share of the nodes (50% minus 1% per 125 nodes, at least 5%), never below 100.
size_t State::NumFeasibleNodesToFind() const {
  const size_t n = nodes.size();
  if (n < 100 || policy.percentage_of_nodes_to_score >= 100) return n;
  int64_t pct = policy.percentage_of_nodes_to_score;
  if (pct <= 0) pct = std::max<int64_t>(5, 50 - static_cast<int64_t>(n) / 125);
  size_t k = n * static_cast<size_t>(pct) / 100;
  return std::max<size_t>(k, 100);
}

// The fit rule on the dense copy first (cheap), then what needs the node itself. Loop
// invariants in locals: this runs for every node on every placement. A block of positions whose
// largest fit numbers do not fit has no node that fits: skipped whole (it counts as scanned).
template <class NumbersFit, class Take>
size_t State::ScanFitWith(const Workload& w, size_t start, size_t want, bool skip_blocks,
                          NumbersFit numbers_fit, Take&& take) const {
  const size_t n = nodes.size();
  const placement::PodShape& shape = w.shape;
  const bool selector = NeedsNodeFilter(w);
  // Bound already (SubmitPod::node): in its node's room, cordoned, held for others or not.
  const bool bound = !w.bound_node().empty();
  const bool cordoned_ok = w.tolerates_unschedulable || bound;
  const bool constrained = shape.gpu_count > 0 && w.model_mask != ~uint32_t{0};
  const bool plain_ext = shape.ext.size() == 1 && shape.ext.entries()[0].first == kPods;
  const bool nominated_anywhere = nominations > 0 && !bound;
  const bool reserving = !reservations.empty() && !bound;
  const FitEntry* const fit_at = fit.data();
  const FitEntry* const block_at = fit_block.data();
  size_t processed = 0, found = 0;
  while (processed < n && found < want) {
    size_t i = start + processed;
    if (i >= n) i -= n;
    // A run of positions up to the end of i's block (or of the nodes not yet scanned): no wrap
    // and no block test inside it.
    const size_t len = std::min(kFitBlock - i % kFitBlock, std::min(n - i, n - processed));
    if (skip_blocks && i % kFitBlock == 0 && len == std::min(kFitBlock, n - i) &&
        !numbers_fit(block_at[i / kFitBlock])) {
      processed += len;
      continue;
    }
    const size_t end = i + len;
    for (; i < end; ++i) {
      const FitEntry& f = fit_at[i];
      if (!(numbers_fit(f) & (f.schedulable | cordoned_ok))) continue;  // no short-circuit jumps
      if (constrained) {
        if ((f.model_bit & w.model_mask) == 0) continue;
        if (f.model_bit == kOverflowBit && !placement::ModelAccepts(nodes[i].gpu_model, shape))
          continue;
      }
      if ((f.has_ext || !plain_ext) && !nodes[i].Fits(shape)) continue;
      if (selector && !NodeSelectable(static_cast<uint32_t>(i), w)) continue;
      if (nominated_anywhere && !node_live[i].nominated.empty() &&
          !FitsRespectingNominated(static_cast<uint32_t>(i), w, /*fit_known=*/true))
        continue;
      if (reserving && reserved_at[i] && DelaysReservation(static_cast<uint32_t>(i), w)) continue;
      take(i);
      if (++found == want) {
        ++i;
        break;
      }
    }
    processed += len - (end - i);
  }
  return processed;
}

// The fit test on the dense numbers, one instance per kind of GPU request.
template <class Take>
size_t State::ScanFit(const Workload& w, size_t start, size_t want, bool skip_blocks,
                      Take&& take) const {
  const placement::PodShape& shape = w.shape;
  const int64_t cpu = shape.cpu_milli, mem = shape.mem_bytes;
  const int32_t count = shape.gpu_count, milli = shape.gpu_milli_per_device;
  if (count == 0)
    return ScanFitWith(
        w, start, want, skip_blocks,
        [&](const FitEntry& f) { return (f.cpu_free >= cpu) & (f.mem_free >= mem); }, take);
  if (milli >= placement::kMilliPerGpu)
    return ScanFitWith(
        w, start, want, skip_blocks,
        [&](const FitEntry& f) {
          return (f.full_free >= count) & (f.cpu_free >= cpu) & (f.mem_free >= mem);
        },
        take);
  return ScanFitWith(
      w, start, want, skip_blocks,
      [&](const FitEntry& f) {
        return (f.max_free >= milli) & (f.cpu_free >= cpu) & (f.mem_free >= mem);
      },
      take);
}

// BestFit scores from the dense copy, as the nodes are found (the same score and tie-break as
// placement::ChooseNode), keeping its running best in registers (the take is inlined into the
// scan): no list of feasible nodes, no NodeState read but the winner's. With node preferences,
// another policy, or invariants on, the feasible nodes are listed and the choice made over the
// list (with invariants on: the fused choice against ChooseNode's, the block skips against a
// plain scan).
std::optional<placement::Choice> State::ChooseFeasible(const Workload& w, size_t start, size_t want,
                                                       size_t* scanned) {
  const size_t n = nodes.size();
  const placement::PodShape& shape = w.shape;
  const bool preferences = HasNodePreferences(w);
  auto* best_fit = preferences ? nullptr : dynamic_cast<placement::BestFitPolicy*>(placer.get());
  const bool verify = options.check_invariants;
  const int64_t spec_cpu = best_fit ? best_fit->spec().cpu_milli : 0;
  const int64_t spec_gpu = best_fit ? best_fit->spec().gpu_milli : 0;
  const int64_t pod_cpu = shape.cpu_milli, pod_gpu = shape.gpu_milli_total();
  const FitEntry* const fit_at = fit.data();
  size_t best = n;
  int64_t best_score = 0;
  auto score_best_fit = [&](size_t i) __attribute__((always_inline)) {
    const FitEntry& f = fit_at[i];
    const int64_t s = placement::BestFitPolicy::ScoreOf(f.cpu_free - pod_cpu, f.gpu_free - pod_gpu,
                                                        spec_cpu, spec_gpu);
    if (best == n || s > best_score || (s == best_score && i < best)) {
      best = i;
      best_score = s;
    }
  };
  if (best_fit && !verify) {
    *scanned = ScanFit(w, start, want, /*skip_blocks=*/true, score_best_fit);
    if (best == n) return std::nullopt;
    return placement::Choice{best, placer->Score(nodes[best], shape)};
  }
  std::vector<size_t>& feasible = scratch_feasible;  // reused: no allocation per attempt
  feasible.clear();
  *scanned = ScanFit(w, start, want, /*skip_blocks=*/true, [&](size_t i) {
    feasible.push_back(i);
    if (best_fit) score_best_fit(i);
  });
  if (verify) {
    std::vector<size_t> plain;
    const size_t plain_scanned =
        ScanFit(w, start, want, /*skip_blocks=*/false, [&](size_t i) { plain.push_back(i); });
    ARB_CHECK_MSG(plain_scanned == *scanned && plain == feasible,
                  "the fit index's block skips changed the nodes found for " + w.key);
  }
  if (preferences) return ChooseWithPreferences(feasible, w);
  auto general = placement::ChooseNode(*placer, nodes, feasible, shape);
  if (!best_fit) return general;
  ARB_CHECK_MSG(general.has_value() == (best < n) && (!general || general->node_index == best),
                "BestFit on the fit index chose another node than ChooseNode for " + w.key);
  if (best == n) return std::nullopt;
  return placement::Choice{best, placer->Score(nodes[best], shape)};
}

// `dry`: choose only (a gang's members are placed together), do not bind.
bool State::TryPlace(Workload& w, PlaceChoice* dry) {
  if (!w.bound_node().empty()) {  // bound already (SubmitPod::node): there or nowhere
    auto id = node_ids.find(w.bound_node());
    if (id == node_ids.end() || !node_info[id->second].present) return false;
    const uint32_t pos = node_info[id->second].pos;
    if (!NodeSelectable(pos, w) || !nodes[pos].Fits(w.shape) ||
        !placement::ModelAccepts(nodes[pos].gpu_model, w.shape))
      return false;
    const placement::GpuAssignment gpus = placer->Score(nodes[pos], w.shape).gpus;
    if (dry)
      *dry = PlaceChoice{pos, gpus};
    else
      Bind(w, pos, gpus);
    return true;
  }
  if (w.nominated_node != kNoNode) {
    const uint32_t pos = node_info[w.nominated_node].pos;
    if (NodeSelectable(pos, w) && FitsRespectingNominated(pos, w)) {
      if (dry) {
        *dry = PlaceChoice{pos, placer->Score(nodes[pos], w.shape).gpus};
        return true;
      }
      Bind(w, pos, placer->Score(nodes[pos], w.shape).gpus);
      return true;
    }
  }
  const size_t n = nodes.size();
  if (n == 0) return false;
  const size_t start = next_start_node % n;
  size_t scanned = 0;
  const std::optional<placement::Choice> choice =
      ChooseFeasible(w, start, NumFeasibleNodesToFind(), &scanned);
  next_start_node = (start + scanned) % n;
  if (!choice) return false;
  if (dry) {
    *dry = PlaceChoice{static_cast<uint32_t>(choice->node_index), choice->candidate.gpus};
    return true;
  }
  Bind(w, static_cast<uint32_t>(choice->node_index), choice->candidate.gpus);
  return true;
}

}  // namespace arbiter::engine
