// kube-scheduler's InterPodAffinity and PodTopologySpread plugins (placement/pod_topology.h has
// the matching rules): the counts an attempt takes once (PreFilter), the per-node filters, and
// the scores among the feasible nodes (PreScore / Score / NormalizeScore).
//
// What is modelled: required and preferred podAffinity / podAntiAffinity terms of the incoming
// pod over any topologyKey (kubernetes.io/hostname, a zone label, any node label), the symmetric
// rule (a placed pod's required anti-affinity rejects the incoming pod in its domain), the first
// pod of a group that selects itself, DoNotSchedule and ScheduleAnyway spread constraints with
// maxSkew, minDomains and labelSelector over any topologyKey (nodes the pod's nodeSelector and node
// affinity exclude are no domain: nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore), and the
// symmetric score (placed pods' preferred terms and required affinity that select the incoming
// pod), and the members of a pod group placed in one step see those placed before them (the dry
// run's State::placing). Not modelled: matchLabelKeys, the cluster's default spread constraints.
#include "core/placement/pod_topology.h"

#include <algorithm>
#include <set>

#include "core/engine/state.h"
#include "core/object_serial.h"
#include "core/placement/node_constraints.h"

namespace arbiter::engine {

using placement::Labels;

std::shared_ptr<const PodTopologyRules> PodTopologyRules::Of(const Pod& p) {
  if (p.pod_affinity.Empty() && p.pod_anti_affinity.Empty() && p.topology_spread.empty())
    return nullptr;
  auto r = std::make_shared<PodTopologyRules>();
  r->affinity = p.pod_affinity;
  r->anti_affinity = p.pod_anti_affinity;
  r->spread = p.topology_spread;
  return r;
}

void AppendTopologyKey(const Workload& w, bool seen, std::string& k) {
  if (!seen && !w.topology) return;
  auto text = [&](const std::string& s) { k += std::to_string(s.size()) + ":" + s; };
  k += "|topo";
  text(w.namespace_);
  for (const auto& [a, b] : w.labels) {
    text(a);
    text(b);
  }
  if (!w.topology) return;
  serial::Writer out;  // the rules, in their snapshot encoding (unambiguous)
  Pod rules;
  rules.pod_affinity = w.topology->affinity;
  rules.pod_anti_affinity = w.topology->anti_affinity;
  rules.topology_spread = w.topology->spread;
  serial::Io(out, rules.pod_affinity);
  serial::Io(out, rules.pod_anti_affinity);
  serial::Io(out, rules.topology_spread);
  k += "|rules";
  text(out.bytes());
}

bool State::HasTopologyPreferences(const Workload& w) const {
  if (!scoring_pods.empty() || PlacingHasTopology()) return true;
  if (!w.topology) return false;
  if (!w.topology->affinity.preferred.empty() || !w.topology->anti_affinity.preferred.empty())
    return true;
  for (const auto& c : w.topology->spread)
    if (!c.do_not_schedule) return true;
  return false;
}

bool State::RequeueForTopology() {
  if (!topology_bound) return false;
  topology_bound = false;
  for (uint32_t cls : active_classes) {
    const Workload& w = workloads[*pending.find(cls)->second.begin()];
    if (!w.topology) continue;
    bool helps = !w.topology->affinity.required.empty();
    for (const auto& c : w.topology->spread) helps = helps || c.do_not_schedule;
    if (helps) {
      freed = true;
      return true;
    }
  }
  return false;
}

void State::TrackPlacedTopology(const Workload& w, bool bound) {
  if (!w.topology) return;
  auto track = [&](std::vector<Slot>& list) {
    if (bound) {
      list.push_back(w.slot);
    } else if (auto it = std::find(list.begin(), list.end(), w.slot); it != list.end()) {
      list.erase(it);
    }
  };
  const PodTopologyRules& r = *w.topology;
  if (!r.anti_affinity.required.empty()) track(anti_affinity_pods);
  if (!r.affinity.required.empty() || !r.affinity.preferred.empty() ||
      !r.anti_affinity.preferred.empty())
    track(scoring_pods);
}

namespace {

const std::string* LabelOf(const Labels& labels, const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

const Labels* NamespaceLabels(const State& s, const std::string& ns) {
  auto it = s.namespaces.find(ns);
  return it == s.namespaces.end() ? nullptr : &it->second.meta.labels;
}

bool Selects(const State& s, const PodAffinityTerm& t, const Workload& owner, const Workload& p) {
  return placement::TermSelects(t, owner.namespace_, p.namespace_, p.labels,
                                NamespaceLabels(s, p.namespace_));
}

// The node passes the workload's nodeSelector, required node affinity and flavor labels (the
// nodes whose domains PodTopologySpread counts: nodeAffinityPolicy Honor).
bool AffinityAdmits(const State& s, uint32_t pos, const Workload& w) {
  const Labels& labels = s.LabelsAt(pos);
  if ((!w.node_selector.empty() || w.rare().node_affinity.required) &&
      !placement::RequiredAffinityMatches(w.node_selector, w.rare().node_affinity, labels,
                                          s.nodes[pos].name))
    return false;
  for (const auto& [k, v] : w.rare().flavor_labels) {
    const std::string* have = LabelOf(labels, k);
    if (!have || *have != v) return false;
  }
  return true;
}

// Each workload on the node at `pos`: those bound there, then the members of a pod group placed
// there in the dry run under way (State::placing).
template <class F>
void ForEachOn(const State& s, uint32_t pos, F&& f) {
  for (Slot v : s.node_live[pos].workloads) f(s.workloads[v]);
  for (const auto& [v, at] : s.placing)
    if (at == pos) f(s.workloads[v]);
}

// Each placed workload of `list` (bound), then each member placed in the dry run under way, with
// the labels of its node; only those with pod topology rules.
template <class F>
void ForEachPlacedWithRules(const State& s, const std::vector<Slot>& list, F&& f) {
  for (Slot v : list) {
    const Workload& p = s.workloads[v];
    if (p.node != kNoNode) f(p, s.node_info[p.node].labels);
  }
  for (const auto& [v, at] : s.placing)
    if (s.workloads[v].topology) f(s.workloads[v], s.LabelsAt(at));
}

void CountPodTerms(const State& s, const Workload& w, TopologyState& st) {
  const PodTopologyRules& r = *w.topology;
  const auto& aff = r.affinity.required;
  const auto& anti = r.anti_affinity.required;
  st.affinity.assign(aff.size(), {});
  st.anti.assign(anti.size(), {});
  st.self_affinity = true;
  for (const auto& t : aff) st.self_affinity = st.self_affinity && Selects(s, t, w, w);
  if (aff.empty() && anti.empty()) return;
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    const Labels& labels = s.LabelsAt(pos);
    ForEachOn(s, pos, [&](const Workload& p) {
      if (p.id == w.id) return;
      for (size_t k = 0; k < aff.size(); ++k)
        if (Selects(s, aff[k], w, p))
          if (const std::string* d = LabelOf(labels, aff[k].topology_key)) {
            ++st.affinity[k][*d];
            st.affinity_any = true;  // upstream: affinityCounts is not empty
          }
      for (size_t k = 0; k < anti.size(); ++k)
        if (Selects(s, anti[k], w, p))
          if (const std::string* d = LabelOf(labels, anti[k].topology_key)) ++st.anti[k][*d];
    });
  }
}

void CountExistingAnti(const State& s, const Workload& w, TopologyState& st) {
  ForEachPlacedWithRules(s, s.anti_affinity_pods, [&](const Workload& p, const Labels& labels) {
    if (p.id == w.id) return;
    for (const auto& t : p.topology->anti_affinity.required)
      if (Selects(s, t, p, w))
        if (const std::string* d = LabelOf(labels, t.topology_key))
          ++st.existing_anti[{t.topology_key, *d}];
  });
}

// PodTopologySpread's PreFilter: the eligible domains of each DoNotSchedule constraint (nodes
// the pod's node affinity admits that carry every such constraint's key) and the selected
// non-terminating pods in each.
void CountSpread(const State& s, const Workload& w, TopologyState& st) {
  const auto& all = w.topology->spread;
  for (size_t c = 0; c < all.size(); ++c)
    if (all[c].do_not_schedule) {
      st.spread.emplace_back();
      st.spread.back().constraint = c;
      st.spread.back().self =
          placement::SpreadSelects(all[c], w.namespace_, w.namespace_, w.labels);
    }
  if (st.spread.empty()) return;
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    const Labels& labels = s.LabelsAt(pos);
    bool has_keys = true;
    for (const auto& sp : st.spread)
      has_keys = has_keys && LabelOf(labels, all[sp.constraint].topology_key);
    if (!has_keys || !AffinityAdmits(s, pos, w)) continue;
    for (auto& sp : st.spread) {
      const TopologySpreadConstraint& c = all[sp.constraint];
      int64_t& count = sp.counts[*LabelOf(labels, c.topology_key)];
      ForEachOn(s, pos, [&](const Workload& p) {
        if (p.id != w.id && p.phase != Phase::kTerminating &&
            placement::SpreadSelects(c, w.namespace_, p.namespace_, p.labels))
          ++count;
      });
    }
  }
  for (auto& sp : st.spread) {
    const TopologySpreadConstraint& c = all[sp.constraint];
    int64_t min = 0;
    bool first = true;
    for (const auto& [d, n] : sp.counts) {
      min = first ? n : std::min(min, n);
      first = false;
    }
    if (c.min_domains && sp.counts.size() < static_cast<size_t>(*c.min_domains)) min = 0;
    sp.min = min;
  }
}

}  // namespace

const TopologyState& State::TopologyOf(const Workload& w) const {
  TopologyState& st = topology_cache;
  if (st.valid && st.id == w.id && st.version == pool_version && st.global == global_epoch &&
      st.flavor == w.flavor)
    return st;
  st = TopologyState{};
  st.valid = true;
  st.id = w.id;
  st.version = pool_version;
  st.global = global_epoch;
  st.flavor = w.flavor;
  if (w.topology) {
    CountPodTerms(*this, w, st);
    CountSpread(*this, w, st);
  }
  CountExistingAnti(*this, w, st);
  return st;
}

State::NodeFilter State::TopologyFilter(uint32_t pos, const Workload& w,
                                        const std::vector<Slot>* removed) const {
  const TopologyState& st = TopologyOf(w);
  const Labels& labels = LabelsAt(pos);
  auto gone = [&](auto&& selects) {  // removed workloads a term or constraint selects
    int64_t n = 0;
    if (removed)
      for (Slot v : *removed) n += selects(workloads[v]) ? 1 : 0;
    return n;
  };
  if (w.topology) {
    const PodTopologyRules& r = *w.topology;
    // PodTopologySpread (before InterPodAffinity in kube-scheduler's filter order).
    for (const auto& sp : st.spread)
      if (!LabelOf(labels, r.spread[sp.constraint].topology_key)) return NodeFilter::kSpreadLabel;
    for (const auto& sp : st.spread) {
      const TopologySpreadConstraint& c = r.spread[sp.constraint];
      const std::string& d = *LabelOf(labels, c.topology_key);
      auto it = sp.counts.find(d);
      int64_t count = it == sp.counts.end() ? 0 : it->second;
      count -= gone([&](const Workload& p) {
        return p.phase != Phase::kTerminating &&
               placement::SpreadSelects(c, w.namespace_, p.namespace_, p.labels);
      });
      const int64_t min = std::min(sp.min, count);
      if (count + (sp.self ? 1 : 0) - min > c.max_skew) return NodeFilter::kSpread;
    }
    // InterPodAffinity: required affinity (every term has a selected pod in the node's domain,
    // or no pod anywhere is selected and the workload selects itself: the group's first pod).
    const auto& aff = r.affinity.required;
    bool all_keys = true, satisfied = true;
    for (size_t k = 0; k < aff.size(); ++k) {
      const std::string* d = LabelOf(labels, aff[k].topology_key);
      if (!d) {
        all_keys = satisfied = false;
        break;
      }
      auto it = st.affinity[k].find(*d);
      const int64_t n = (it == st.affinity[k].end() ? 0 : it->second) -
                        gone([&](const Workload& p) { return Selects(*this, aff[k], w, p); });
      satisfied = satisfied && n > 0;
    }
    if (!satisfied && !(all_keys && !st.affinity_any && st.self_affinity))
      return NodeFilter::kPodAffinity;
    const auto& anti = r.anti_affinity.required;
    for (size_t k = 0; k < anti.size(); ++k) {
      const std::string* d = LabelOf(labels, anti[k].topology_key);
      if (!d) continue;
      auto it = st.anti[k].find(*d);
      const int64_t n = (it == st.anti[k].end() ? 0 : it->second) -
                        gone([&](const Workload& p) { return Selects(*this, anti[k], w, p); });
      if (n > 0) return NodeFilter::kPodAntiAffinity;
    }
  }
  for (const auto& [pair, count] : st.existing_anti) {
    const std::string* d = LabelOf(labels, pair.first);
    if (!d || *d != pair.second) continue;
    const int64_t n = count - gone([&](const Workload& p) {
                        if (!p.topology) return false;
                        int64_t k = 0;
                        for (const auto& t : p.topology->anti_affinity.required)
                          if (t.topology_key == pair.first && Selects(*this, t, p, w)) ++k;
                        return k > 0;
                      });
    if (n > 0) return NodeFilter::kExistingAntiAffinity;
  }
  return NodeFilter::kPass;
}

namespace {

// InterPodAffinity's PreScore and Score: each preferred term of `w` adds (affinity) or subtracts
// (anti-affinity) its weight per selected pod in the node's domain; symmetrically, each placed
// pod's terms that select `w` score its own domain: a preferred affinity term its weight, a
// preferred anti-affinity term minus its weight, a required affinity term kube-scheduler's
// hardPodAffinityWeight (1).
void AffinityScores(const State& s, const std::vector<size_t>& feasible, const Workload& w,
                    std::vector<int64_t>& out) {
  std::map<std::pair<std::string, std::string>, int64_t> by_domain;
  auto add = [&](const PodAffinityTerm& t, int64_t weight, const Workload& owner,
                 const Workload& selected, const Labels& labels) {
    if (!Selects(s, t, owner, selected)) return;
    if (const std::string* d = LabelOf(labels, t.topology_key))
      by_domain[{t.topology_key, *d}] += weight;
  };
  if (w.topology &&
      (!w.topology->affinity.preferred.empty() || !w.topology->anti_affinity.preferred.empty()))
    for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
      const Labels& labels = s.LabelsAt(pos);
      ForEachOn(s, pos, [&](const Workload& p) {
        if (p.id == w.id) return;
        for (const auto& t : w.topology->affinity.preferred) add(t.term, t.weight, w, p, labels);
        for (const auto& t : w.topology->anti_affinity.preferred)
          add(t.term, -t.weight, w, p, labels);
      });
    }
  // Symmetry (bound pods with such terms, and a group's members placed before `w`).
  ForEachPlacedWithRules(s, s.scoring_pods, [&](const Workload& p, const Labels& labels) {
    if (p.id == w.id) return;
    for (const auto& t : p.topology->affinity.required)
      add(t, placement::kHardPodAffinityWeight, p, w, labels);
    for (const auto& t : p.topology->affinity.preferred) add(t.term, t.weight, p, w, labels);
    for (const auto& t : p.topology->anti_affinity.preferred) add(t.term, -t.weight, p, w, labels);
  });
  out.assign(feasible.size(), 0);
  for (size_t j = 0; j < feasible.size(); ++j) {
    const Labels& labels = s.LabelsAt(static_cast<uint32_t>(feasible[j]));
    for (const auto& [pair, score] : by_domain) {
      const std::string* d = LabelOf(labels, pair.first);
      if (d && *d == pair.second) out[j] += score;
    }
  }
  placement::NormalizeAffinityScores(out);
}

// PodTopologySpread's PreScore and Score for the ScheduleAnyway constraints: a feasible node
// without one of their keys is ignored (0); the others score the selected pods in their domain
// (counted on every node the pod's node affinity admits), weighted by ln(domains + 2) over the
// feasible nodes; fewer is better.
void SpreadScores(const State& s, const std::vector<size_t>& feasible, const Workload& w,
                  std::vector<int64_t>& out) {
  const auto& all = w.topology->spread;
  std::vector<size_t> soft;
  for (size_t c = 0; c < all.size(); ++c)
    if (!all[c].do_not_schedule) soft.push_back(c);
  out.assign(feasible.size(), 0);
  if (soft.empty()) return;
  std::vector<char> ignored(feasible.size(), 0);
  std::vector<std::set<std::string>> domains(soft.size());
  for (size_t j = 0; j < feasible.size(); ++j) {
    const Labels& labels = s.LabelsAt(static_cast<uint32_t>(feasible[j]));
    for (size_t c : soft) ignored[j] = ignored[j] || !LabelOf(labels, all[c].topology_key);
    if (!ignored[j])
      for (size_t k = 0; k < soft.size(); ++k)
        domains[k].insert(*LabelOf(labels, all[soft[k]].topology_key));
  }
  std::vector<std::map<std::string, int64_t>> counts(soft.size());
  for (uint32_t pos = 0; pos < s.nodes.size(); ++pos) {
    const Labels& labels = s.LabelsAt(pos);
    bool has_keys = true;
    for (size_t c : soft) has_keys = has_keys && LabelOf(labels, all[c].topology_key);
    if (!has_keys || !AffinityAdmits(s, pos, w)) continue;
    for (size_t k = 0; k < soft.size(); ++k) {
      const TopologySpreadConstraint& c = all[soft[k]];
      int64_t& n = counts[k][*LabelOf(labels, c.topology_key)];
      ForEachOn(s, pos, [&](const Workload& p) {
        if (p.id != w.id && p.phase != Phase::kTerminating &&
            placement::SpreadSelects(c, w.namespace_, p.namespace_, p.labels))
          ++n;
      });
    }
  }
  for (size_t j = 0; j < feasible.size(); ++j) {
    if (ignored[j]) continue;
    const Labels& labels = s.LabelsAt(static_cast<uint32_t>(feasible[j]));
    for (size_t k = 0; k < soft.size(); ++k) {
      const TopologySpreadConstraint& c = all[soft[k]];
      auto it = counts[k].find(*LabelOf(labels, c.topology_key));
      const int64_t n = it == counts[k].end() ? 0 : it->second;
      out[j] += placement::SpreadScoreMilli(n, c.max_skew,
                                            placement::SpreadWeightMilli(domains[k].size()));
    }
  }
  placement::NormalizeSpreadScores(out, ignored);
}

}  // namespace

void State::TopologyScores(const std::vector<size_t>& feasible, const Workload& w,
                           std::vector<int64_t>& affinity, std::vector<int64_t>& spread) const {
  affinity.assign(feasible.size(), 0);
  spread.assign(feasible.size(), 0);
  if (!HasTopologyPreferences(w)) return;
  AffinityScores(*this, feasible, w, affinity);
  if (w.topology) SpreadScores(*this, feasible, w, spread);
}

}  // namespace arbiter::engine
