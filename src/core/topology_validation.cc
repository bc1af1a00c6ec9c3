// Static checks of pod topology for `arbiter validate` (topology_validation.h).
#include "core/topology_validation.h"

#include "core/object_serial.h"
#include "core/placement/pod_topology.h"

namespace arbiter {

namespace {

using Labels = std::map<std::string, std::string>;

Labels NodeLabels(const Node& n) {
  Labels l = n.meta.labels;
  l.emplace(placement::kHostnameLabel, n.meta.name);
  return l;
}

// The distinct values of `key` among `nodes`.
std::set<std::string> Domains(const std::vector<const Node*>& nodes, const std::string& key) {
  std::set<std::string> out;
  for (const Node* n : nodes) {
    const Labels l = NodeLabels(*n);
    if (auto it = l.find(key); it != l.end()) out.insert(it->second);
  }
  return out;
}

void Text(std::string& k, const std::string& s) { k += std::to_string(s.size()) + ":" + s; }

std::string LabelsKey(const std::string& ns, const Labels& labels) {
  std::string k;
  Text(k, ns);
  for (const auto& [a, b] : labels) {
    Text(k, a);
    Text(k, b);
  }
  return k;
}

// Everything CheckRules reads of a pod: its namespace, labels, rules and node constraints.
std::string PodKey(const Pod& p) {
  serial::Writer out;
  Pod rules;
  rules.node_selector = p.node_selector;
  rules.node_affinity = p.node_affinity;
  rules.tolerations = p.tolerations;
  rules.pod_affinity = p.pod_affinity;
  rules.pod_anti_affinity = p.pod_anti_affinity;
  rules.topology_spread = p.topology_spread;
  serial::Io(out, rules.node_selector);
  serial::Io(out, rules.node_affinity);
  serial::Io(out, rules.tolerations);
  serial::Io(out, rules.pod_affinity);
  serial::Io(out, rules.pod_anti_affinity);
  serial::Io(out, rules.topology_spread);
  std::string k = LabelsKey(p.meta.namespace_, p.meta.labels);
  Text(k, out.bytes());
  return k;
}

std::string MissingLabel(const std::string& key, const char* plugin_reason) {
  return "no node that admits the pod has the label \"" + key +
         "\" (its topologyKey), so kube-scheduler's filter fails on every node (\"node(s) "
         "didn't match " +
         plugin_reason + "\"); the pod will stay Pending";
}

}  // namespace

TopologyChecker::TopologyChecker(const ManifestSet& s, Admits admits)
    : s_(s), admits_(std::move(admits)) {}

const Labels* TopologyChecker::NamespaceLabels(const std::string& ns) const {
  for (const auto& n : s_.namespaces)
    if (n.meta.name == ns) return &n.meta.labels;
  return nullptr;
}

std::vector<TopologyChecker::Finding> TopologyChecker::Check(const Pod& p) {
  if (s_.nodes.empty() || (p.pod_affinity.required.empty() &&
                           p.pod_anti_affinity.required.empty() && p.topology_spread.empty()))
    return {};
  std::string key = PodKey(p);
  auto it = memo_.find(key);
  if (it == memo_.end()) {  // once per distinct pod key: the nodes are scanned here only
    std::vector<const Node*> admitting;
    for (const Node& n : s_.nodes)
      if (admits_(p, n)) admitting.push_back(&n);
    Memo m;
    m.findings = CheckRules(p, admitting);
    for (const auto& t : p.pod_anti_affinity.required)
      m.anti_domains.push_back(admitting.empty() ? 0 : Domains(admitting, t.topology_key).size());
    it = memo_.emplace(std::move(key), std::move(m)).first;
  }
  std::vector<Finding> out = it->second.findings;
  if (!p.pod_anti_affinity.required.empty()) CheckAntiGroups(p, it->second.anti_domains, out);
  return out;
}

bool TopologyChecker::SelectsSome(const PodAffinityTerm& t, const std::string& owner_ns) {
  serial::Writer w;
  PodAffinity one;
  one.required.push_back(t);
  serial::Io(w, one);
  std::string key;
  Text(key, owner_ns);
  Text(key, w.bytes());
  if (auto it = selects_memo_.find(key); it != selects_memo_.end()) return it->second;
  bool some = false;
  for (const Pod& q : s_.pods)
    if (placement::TermSelects(t, owner_ns, q.meta.namespace_, q.meta.labels,
                               NamespaceLabels(q.meta.namespace_))) {
      some = true;
      break;
    }
  selects_memo_.emplace(std::move(key), some);
  return some;
}

std::vector<TopologyChecker::Finding> TopologyChecker::CheckRules(
    const Pod& p, const std::vector<const Node*>& admitting) {
  std::vector<Finding> out;
  if (admitting.empty()) return out;  // "no node admits the pod" is said already
  const std::string& ns = p.meta.namespace_;
  const auto& aff = p.pod_affinity.required;
  bool self = true;  // the pod selects itself under every term (the first pod of a group)
  for (const auto& t : aff)
    self = self && placement::TermSelects(t, ns, ns, p.meta.labels, NamespaceLabels(ns));
  const std::string aff_path =
      "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution";
  for (size_t i = 0; i < aff.size(); ++i) {
    const std::string path = aff_path + "[" + std::to_string(i) + "]";
    if (Domains(admitting, aff[i].topology_key).empty())
      out.push_back(
          {path + ".topologyKey", MissingLabel(aff[i].topology_key, "pod affinity rules")});
    else if (!self && !SelectsSome(aff[i], ns))
      out.push_back({path + ".labelSelector",
                     "no pod of these manifests matches this term, nor does the pod itself (the "
                     "first pod of a group may), so kube-scheduler's filter fails on every node "
                     "(\"node(s) didn't match pod affinity rules\"); the pod will stay Pending"});
  }
  for (size_t i = 0; i < p.topology_spread.size(); ++i) {
    const TopologySpreadConstraint& c = p.topology_spread[i];
    if (c.do_not_schedule && Domains(admitting, c.topology_key).empty())
      out.push_back({"spec.topologySpreadConstraints[" + std::to_string(i) + "].topologyKey",
                     MissingLabel(c.topology_key,
                                  "pod topology spread constraints (missing required label)")});
  }
  return out;
}

void TopologyChecker::CheckAntiGroups(const Pod& p, const std::vector<size_t>& domains,
                                      std::vector<Finding>& out) {
  auto self_terms = [&](const Pod& q, auto&& each) {
    const std::string& qns = q.meta.namespace_;
    const auto& anti = q.pod_anti_affinity.required;
    for (size_t i = 0; i < anti.size(); ++i)
      if (placement::TermSelects(anti[i], qns, qns, q.meta.labels, NamespaceLabels(qns)))
        each(i, anti[i].topology_key);
  };
  if (!alike_counted_) {
    alike_counted_ = true;
    for (const Pod& q : s_.pods) {
      std::set<std::string> keys;
      self_terms(q, [&](size_t, const std::string& key) { keys.insert(key); });
      for (const std::string& key : keys) {
        std::string k = LabelsKey(q.meta.namespace_, q.meta.labels);
        Text(k, key);
        ++alike_[k];
      }
    }
  }
  self_terms(p, [&](size_t i, const std::string& key) {
    std::string k = LabelsKey(p.meta.namespace_, p.meta.labels);
    Text(k, key);
    const size_t n = alike_[k];
    const size_t m = domains[i];
    if (m == 0 || n <= m || !anti_warned_.insert(k).second) return;
    out.push_back({"spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[" +
                       std::to_string(i) + "]",
                   std::to_string(n) +
                       " pods with these labels exclude each other by this term, "
                       "but the nodes that admit them have only " +
                       std::to_string(m) + " value(s) of \"" + key + "\": at most " +
                       std::to_string(m) +
                       " run at once, the others wait "
                       "(node(s) didn't match pod anti-affinity rules)"});
  });
}

}  // namespace arbiter
