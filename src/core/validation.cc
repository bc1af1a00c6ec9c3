#include "core/validation.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "core/engine/admission.h"
#include "core/gpu_sharing.h"
#include "core/int128.h"
#include "core/placement/node_constraints.h"
#include "core/quantity.h"
#include "core/system_priority.h"
#include "core/text.h"
#include "core/topology_validation.h"

namespace arbiter {

// ------------------------------------------------------------------ SourceLocator

std::string SourceLocator::Key(const SourceRef& object, std::string_view field_path) {
  std::string k = object.file;
  k += '\n';
  k += std::to_string(object.line);
  k += '\n';
  k += field_path;
  return k;
}

void SourceLocator::Record(const SourceRef& object, std::string_view field_path, int line) {
  if (line <= 0) return;
  lines_.emplace(Key(object, field_path), line);  // first record wins
}

int SourceLocator::LineOf(const SourceRef& object, std::string_view field_path) const {
  std::string_view p = field_path;
  while (!lines_.empty() && !p.empty()) {
    auto it = lines_.find(Key(object, p));
    if (it != lines_.end()) return it->second;
    // Drop the last segment: `.name` or `[key]`.
    size_t cut;
    if (p.back() == ']') {
      cut = p.rfind('[');
    } else {
      cut = p.find_last_of(".[");
      if (cut != std::string_view::npos && p[cut] == '[') cut = p.find(']', cut) + 1;
    }
    if (cut == std::string_view::npos || cut == 0) break;
    p = p.substr(0, cut);
  }
  if (resolver_) {
    int line = resolver_(object, field_path);
    if (line > 0) return line;
  }
  return object.line;
}

// ------------------------------------------------------------------ suggestions

int EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions, adjacent transpositions.
  const size_t n = a.size(), m = b.size();
  std::vector<int> d((n + 1) * (m + 1));
  auto at = [&](size_t i, size_t j) -> int& { return d[i * (m + 1) + j]; };
  for (size_t i = 0; i <= n; ++i) at(i, 0) = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) at(0, j) = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      int v = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        v = std::min(v, at(i - 2, j - 2) + 1);
      at(i, j) = v;
    }
  }
  return at(n, m);
}

namespace {
std::string Lower(std::string_view s) {
  std::string r(s);
  for (auto& c : r)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return r;
}
}  // namespace

std::optional<std::string> DidYouMean(std::string_view word,
                                      const std::vector<std::string>& candidates) {
  if (word.empty() || word.size() > 256) return std::nullopt;
  std::string w = Lower(word);
  int best = -1;
  const std::string* pick = nullptr;
  for (const auto& c : candidates) {
    if (c.size() > 256) continue;
    int d = EditDistance(w, Lower(c));
    int limit = std::max<int>(1, static_cast<int>(std::max(w.size(), c.size())) / 3);
    if (d <= limit && (best < 0 || d < best)) {
      best = d;
      pick = &c;
    }
  }
  if (!pick) return std::nullopt;
  return *pick;
}

std::string FieldPathChild(const std::string& path, std::string_view key) {
  bool simple = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  if (simple) return path.empty() ? std::string(key) : path + "." + std::string(key);
  return path + "[" + std::string(key) + "]";
}

size_t CountObjects(const ManifestSet& s) {
  return s.namespaces.size() + s.nodes.size() + s.pods.size() + s.resource_quotas.size() +
         s.limit_ranges.size() + s.priority_classes.size() + s.pdbs.size() +
         (s.pool_policy ? 1 : 0) + s.elastic_quotas.size() + s.price_books.size() + s.qos.size() +
         s.resource_flavors.size();
}

// ------------------------------------------------------------------ checks

namespace {

std::string Quote(std::string_view s) { return QuotedEcho(s, 256); }
// FILE:LINE; FILE alone for an object that has no line (read from a cluster).
std::string Where(const SourceRef& r) {
  return r.line > 0 ? r.file + ":" + std::to_string(r.line) : r.file;
}

// `before` FILE:LINE `after` for an object read from a file; nothing for one `arbiter serve` was
// sent (no place in a file to point at: "(at request:1)" said nothing).
std::string AtSource(const SourceRef& r, const std::string& before, const std::string& after) {
  return r.file == kApiRequest ? "" : before + Where(r) + after;
}

std::string DisplayName(const ObjectMeta& m) {
  return m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name;
}

bool IsExtended(std::string_view resource) {
  auto info = ClassifyResource(resource);
  return info.ok() && (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
                       info->kind == ResourceKind::kExtended);
}

class Validator {
 public:
  Validator(const ManifestSet& s, const SourceLocator* loc, Diagnostics* out)
      : s_(s), loc_(loc), out_(out) {}

  void Run() {
    Totals();
    Duplicates();
    PriorityClasses();
    Nodes();
    Pods();
    PodGroups();
    Pdbs();
    Policy();
    ElasticQuotas();
    Flavors();
    QoSes();
    ResourceQuotas();
    LimitRanges();
    PriceBooks();
  }

 private:
  // Sums the engine computes (pool capacity, quota usage, cohort guarantees) must fit in
  // int64: ResourceList arithmetic treats overflow as a broken invariant and aborts. All loaded
  // amounts are non-negative, so if the total over every object of a kind fits, every partial
  // sum does. A set whose totals overflow is an error, and the checks that add are skipped.
  void Totals() {
    auto add = [&](std::map<std::string, int128>& acc, const ResourceList& l) {
      for (const auto& [r, v] : l.entries()) acc[r] += v;
    };
    auto report = [&](const char* kind, const ObjectMeta& m,
                      const std::map<std::string, int128>& acc, const char* what) {
      for (const auto& [r, v] : acc)
        if (v > std::numeric_limits<int64_t>::max()) {
          overflow_ = true;
          Error(kind, m, "",
                std::string("amounts too large: the ") + what + " of " + r +
                    " does not fit in 64 bits");
          return;
        }
    };
    std::map<std::string, int128> pods, nodes, quotas;
    for (const auto& p : s_.pods) {
      std::map<std::string, int128> one;
      for (const auto* cs : {&p.containers, &p.init_containers})
        for (const auto& c : *cs) {
          add(one, c.requests);
          add(one, c.limits);
        }
      if (p.sim.usage) add(one, *p.sim.usage);
      for (const auto& [r, v] : one) pods[r] += v;
      report("Pod", p.meta, pods, "total over all pods");
      if (overflow_) return;
    }
    for (const auto& n : s_.nodes) {
      add(nodes, n.capacity);
      add(nodes, n.allocatable);
      report("Node", n.meta, nodes, "total capacity of the pool");
      if (overflow_) return;
    }
    for (const auto& q : s_.elastic_quotas) {
      add(quotas, q.min);
      if (q.max) add(quotas, *q.max);
      add(quotas, q.lending_limit);
      for (const auto& f : q.flavors) {
        add(quotas, f.min);
        if (f.max) add(quotas, *f.max);
        add(quotas, f.lending_limit);
      }
      report("ElasticQuota", q.meta, quotas, "total over all ElasticQuotas");
      if (overflow_) return;
    }
  }

  void Add(Severity sev, const char* kind, const ObjectMeta& m, const std::string& path,
           std::string msg) {
    int line = loc_ ? loc_->LineOf(m.source, path) : m.source.line;
    out_->Add({sev, m.source.file, line, kind, DisplayName(m), path, std::move(msg)});
  }
  void Error(const char* kind, const ObjectMeta& m, const std::string& path, std::string msg) {
    Add(Severity::kError, kind, m, path, std::move(msg));
  }
  void Warn(const char* kind, const ObjectMeta& m, const std::string& path, std::string msg) {
    Add(Severity::kWarning, kind, m, path, std::move(msg));
  }

  // (The names are indexed at the first ask: a set of N namespaced objects over N namespaces, as
  // a pool of N tenants is, is checked in O(N log N), not O(N^2).)
  bool NamespaceDeclared(const std::string& ns) {
    if (s_.namespaces.empty() || ns == "default" || ns.empty()) return true;
    if (declared_.empty())
      for (const auto& n : s_.namespaces) declared_.insert(n.meta.name);
    return declared_.count(ns) > 0;
  }
  std::set<std::string_view> declared_;  // the Namespace objects' names
  void CheckNamespace(const char* kind, const ObjectMeta& m) {
    if (!NamespaceDeclared(m.namespace_))
      Warn(kind, m, "metadata.namespace",
           "namespace " + Quote(m.namespace_) + " is not declared by any Namespace object");
  }

  template <typename T>
  void DuplicatesOf(const std::vector<T>& objs, const char* kind) {
    std::map<std::string, const ObjectMeta*> seen;
    for (const auto& o : objs) {
      if (o.meta.name.empty()) continue;
      auto [it, inserted] = seen.emplace(DisplayName(o.meta), &o.meta);
      if (!inserted)
        Error(kind, o.meta, "metadata.name",
              std::string("duplicate ") + kind + " " + Quote(DisplayName(o.meta)) +
                  " (first defined at " + Where(it->second->source) + ")");
    }
  }

  void Duplicates() {
    DuplicatesOf(s_.namespaces, "Namespace");
    DuplicatesOf(s_.nodes, "Node");
    DuplicatesOf(s_.pods, "Pod");
    DuplicatesOf(s_.resource_quotas, "ResourceQuota");
    DuplicatesOf(s_.limit_ranges, "LimitRange");
    DuplicatesOf(s_.priority_classes, "PriorityClass");
    DuplicatesOf(s_.pdbs, "PodDisruptionBudget");
    DuplicatesOf(s_.elastic_quotas, "ElasticQuota");
    DuplicatesOf(s_.price_books, "PriceBook");
    DuplicatesOf(s_.qos, "QoS");
    DuplicatesOf(s_.pod_groups, "PodGroup");
    DuplicatesOf(s_.resource_flavors, "ResourceFlavor");
  }

  // Pods name their PodGroup by label (scheduler-plugins coscheduling); a group with fewer pods
  // than minMember never starts.
  void PodGroups() {
    std::map<std::pair<std::string, std::string>, int> members;
    for (const auto& p : s_.pods) {
      auto label = p.meta.labels.find(kPodGroupLabel);
      if (label == p.meta.labels.end()) continue;
      const std::string ns = p.meta.namespace_.empty() ? "default" : p.meta.namespace_;
      if (!p.pod_group) {
        std::vector<std::string> names;
        for (const auto& g : s_.pod_groups)
          if ((g.meta.namespace_.empty() ? "default" : g.meta.namespace_) == ns)
            names.push_back(g.meta.name);
        std::string msg = "no PodGroup " + Quote(label->second) + " in namespace " + Quote(ns);
        if (auto s = DidYouMean(label->second, names)) msg += "; did you mean " + Quote(*s) + "?";
        Error("Pod", p.meta, FieldPathChild("metadata.labels", kPodGroupLabel), msg);
        continue;
      }
      ++members[{ns, label->second}];
    }
    for (const auto& g : s_.pod_groups) {
      const std::string ns = g.meta.namespace_.empty() ? "default" : g.meta.namespace_;
      const int n = members[{ns, g.meta.name}];
      if (n < g.min_member)
        Warn("PodGroup", g.meta, "spec.minMember",
             "minMember is " + std::to_string(g.min_member) + " but " + std::to_string(n) +
                 " pod(s) carry the label " + kPodGroupLabel + "=" + g.meta.name +
                 ": the group never starts");
      const int64_t cap = s_.pool_policy ? s_.pool_policy->max_submitted_per_namespace : 0;
      if (cap > 0 && g.min_member > cap)
        Warn("PodGroup", g.meta, "spec.minMember",
             "minMember is " + std::to_string(g.min_member) +
                 " but PoolPolicy quota.maxSubmittedPerNamespace lets namespace " + ns + " have " +
                 std::to_string(cap) + " pods pending or running: the group never starts");
    }
  }

  void PriorityClasses() {
    const PriorityClass* first = nullptr;
    for (const auto& pc : s_.priority_classes) {
      if (!pc.global_default) continue;
      if (!first) {
        first = &pc;
        continue;
      }
      Error("PriorityClass", pc.meta, "globalDefault",
            "more than one globalDefault PriorityClass (" + Quote(first->meta.name) +
                AtSource(first->meta.source, " at ", "") + " is one too)");
    }
  }

  const PriorityClass* FindClass(const std::string& name) const {
    for (const auto& pc : s_.priority_classes)
      if (pc.meta.name == name) return &pc;
    return nullptr;
  }

  void Nodes() {
    for (const auto& n : s_.nodes) {
      if (n.capacity.empty() && n.allocatable.empty())
        Warn("Node", n.meta, "status", "node has no capacity: nothing can run on it");
      for (const auto& [r, v] : n.allocatable.entries())
        if (n.capacity.Has(r) && v > n.capacity.Get(r))
          Error("Node", n.meta, FieldPathChild("status.allocatable", r),
                "allocatable " + FormatResourceQuantity(r, v) + " exceeds capacity " +
                    FormatResourceQuantity(r, n.capacity.Get(r)));
      for (const ResourceList* list : {&n.capacity, &n.allocatable}) {
        int64_t gpus = list->Get("nvidia.com/gpu");
        const char* field = list == &n.capacity ? "status.capacity" : "status.allocatable";
        if (gpus % 1000 != 0)
          Error("Node", n.meta, FieldPathChild(field, "nvidia.com/gpu"),
                "a node has a whole number of GPU devices");
        else if (gpus > 64000)
          Error("Node", n.meta, FieldPathChild(field, "nvidia.com/gpu"),
                "more than 64 GPU devices on one node is not supported (per-device accounting)");
      }
      if (Status st = ValidateGpuSharingLabels(n.meta.labels); !st.ok()) {
        bool replicas_bad =
            n.meta.labels.count(std::string(kGpuReplicasLabel)) &&
            !ParseGpuReplicas(n.meta.labels.at(std::string(kGpuReplicasLabel))).ok();
        Error("Node", n.meta,
              FieldPathChild("metadata.labels",
                             replicas_bad ? kGpuReplicasLabel : kGpuSharingStrategyLabel),
              st.message());
      } else if (int64_t replicas = GpuReplicasOf(n.meta.labels); replicas > 1) {
        int64_t gpus = n.capacity.Get("nvidia.com/gpu");
        int64_t renamed = n.capacity.Get(std::string(kGpuSharedResource));
        if (renamed % replicas != 0)
          Warn("Node", n.meta, FieldPathChild("status.capacity", kGpuSharedResource),
               std::string(kGpuSharedResource) + " " + std::to_string(renamed) +
                   " is not a whole number of cards of " + std::to_string(replicas) + " replicas");
        if (gpus % (1000 * replicas) != 0)
          Warn("Node", n.meta, FieldPathChild("status.capacity", "nvidia.com/gpu"),
               "nvidia.com/gpu " + FormatResourceQuantity("nvidia.com/gpu", gpus) +
                   " is not a whole number of cards of " + std::to_string(replicas) +
                   " replicas (label nvidia.com/gpu.replicas); each replica is billed 1/" +
                   std::to_string(replicas) + " of a card");
      }
      auto product = n.meta.labels.find("nvidia.com/gpu.product");
      std::optional<std::string> family;
      if (product != n.meta.labels.end()) family = GpuFamilyOfProduct(product->second);
      for (const auto& [r, v] : n.capacity.entries()) {
        if (!IsMigResourceName(r) || v == 0) continue;
        if (family && !LookupMigProfile(r, *family))
          Warn("Node", n.meta, FieldPathChild("status.capacity", r),
               r + " is not a MIG profile of " + *family +
                   " (label nvidia.com/gpu.product=" + product->second + ")");
        else if (!family && !LookupMigProfile(r))
          Warn("Node", n.meta, FieldPathChild("status.capacity", r),
               "unknown MIG profile " + r + " (not an A100-40GB, A100-80GB or H100-80GB profile)");
      }
    }
  }

  // Whether `req` fits on `n` when empty, with the pool's overcommit ratios.
  bool FitsEmptyNode(const Node& n, const ResourceList& req) const {
    int64_t cpu_ratio = s_.pool_policy ? s_.pool_policy->cpu_overcommit_milli : 1000;
    int64_t mem_ratio = s_.pool_policy ? s_.pool_policy->memory_overcommit_milli : 1000;
    for (const auto& [r, v] : req.entries()) {
      if (v <= 0) continue;
      int128 cap = n.allocatable.Get(r);
      if (r == "cpu") cap = cap * cpu_ratio / 1000;
      if (r == "memory") cap = cap * mem_ratio / 1000;
      if (v > cap) return false;
    }
    return true;
  }

  // The kubelet labels every node with kubernetes.io/hostname = its name.
  static bool SelectorMatches(const std::map<std::string, std::string>& sel, const Node& n) {
    for (const auto& [k, v] : sel) {
      auto it = n.meta.labels.find(k);
      if (it == n.meta.labels.end()) {
        if (k == "kubernetes.io/hostname" && v == n.meta.name) continue;
        return false;
      }
      if (it->second != v) return false;
    }
    return true;
  }

  // kube-scheduler's NodeUnschedulable, TaintToleration and NodeAffinity filters.
  static bool NodeAdmits(const Pod& p, const Node& n) {
    if (p.tolerations.empty() && !p.node_affinity.required)
      return !n.unschedulable && !placement::HasHardTaint(n.taints) &&
             SelectorMatches(p.node_selector, n);
    if (n.unschedulable && !placement::ToleratesUnschedulable(p.tolerations)) return false;
    if (placement::FirstUntoleratedTaint(n.taints, p.tolerations)) return false;
    std::map<std::string, std::string> labels = n.meta.labels;
    labels.emplace("kubernetes.io/hostname", n.meta.name);
    return placement::RequiredAffinityMatches(p.node_selector, p.node_affinity, labels,
                                              n.meta.name);
  }
  // The part of NodeAdmits's inputs beyond the nodeSelector, as text for the fit memo.
  static std::string ConstraintsKey(const Pod& p) {
    std::string k;
    auto text = [&](const std::string& s) { k += std::to_string(s.size()) + ":" + s; };
    for (const auto& t : p.tolerations) {
      text(t.key);
      text(t.value);
      k += std::to_string(static_cast<int>(t.op)) +
           (t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*") + ";";
    }
    if (p.node_affinity.required)
      for (const auto& term : *p.node_affinity.required) {
        k += "|term";
        for (const auto* list : {&term.match_expressions, &term.match_fields})
          for (const auto& r : *list) {
            text(r.key);
            k += std::to_string(static_cast<int>(r.op));
            for (const auto& v : r.values) text(v);
          }
      }
    return k;
  }

  void Containers(const Pod& p, const std::vector<Container>& cs, const std::string& field) {
    for (size_t i = 0; i < cs.size(); ++i) {
      const Container& c = cs[i];
      std::string base = field + "[" + std::to_string(i) + "].resources.limits";
      for (const auto& [r, lim] : c.limits.entries()) {
        if (!c.requests.Has(r)) continue;
        int64_t req = c.requests.Get(r);
        std::string path = FieldPathChild(base, r);
        if (IsExtended(r) && lim != req)
          Error("Pod", p.meta, path,
                "limit " + FormatResourceQuantity(r, lim) + " differs from the request " +
                    FormatResourceQuantity(r, req) + "; " + r +
                    " cannot be overcommitted, so its limit must equal its request");
        else if (lim < req)
          Error("Pod", p.meta, path,
                "limit " + FormatResourceQuantity(r, lim) + " is below the request " +
                    FormatResourceQuantity(r, req));
      }
    }
  }

  // Kubernetes LimitRanger admission, statically: the engine's own admission (the namespace's
  // LimitRanges in name order, all defaults then all checks, Pod-type items on max(sum of
  // containers, largest init container), min, max and maxLimitRequestRatio; then the API
  // server's request <= limit rule on the defaulted pod). A pod that breaks it is rejected when
  // submitted, which is worth knowing before a simulation.
  void LimitRangeAdmission(const Pod& p) {
    std::map<std::string, const LimitRange*> by_name;
    for (const auto& lr : s_.limit_ranges)
      if (lr.meta.namespace_ == p.meta.namespace_) by_name.emplace(lr.meta.name, &lr);
    if (by_name.empty()) return;
    std::vector<const LimitRange*> ranges;
    for (const auto& [name, lr] : by_name) ranges.push_back(lr);
    engine::AdmittedPod admitted;
    const std::string why = engine::ApplyLimitRanges(p, ranges, &admitted);
    if (why.empty()) return;
    const std::string prefix = "LimitRange " + p.meta.namespace_ + "/";
    if (why.rfind(prefix, 0) == 0) {
      const size_t colon = why.find(": ", prefix.size());
      Warn("Pod", p.meta, "spec.containers",
           "LimitRange " + Quote(why.substr(prefix.size(), colon - prefix.size())) +
               " will reject this pod at admission: " + why.substr(colon + 2));
      return;
    }
    Warn("Pod", p.meta, "spec.containers",
         "will be refused at admission after LimitRange defaults: " + why);
  }

  // "unknown KIND NAME", with a guess among `known` or, when there is none, `none_defined`.
  static std::string UnknownName(const std::string& kind, const std::string& name,
                                 const std::vector<std::string>& known, const char* none_defined) {
    std::string msg = "unknown " + kind + " " + Quote(name);
    if (auto s = DidYouMean(name, known))
      msg += "; did you mean " + Quote(*s) + "?";
    else if (known.empty())
      msg += none_defined;
    return msg;
  }

  // The pod's PriorityClass exists (or is a system one) and agrees with its spec.priority.
  void PodPriorityClass(const Pod& p, const std::vector<std::string>& class_names) {
    const std::string& name = *p.priority_class_name;
    const PriorityClass* pc = FindClass(name);
    bool system = name == "system-cluster-critical" || name == "system-node-critical";
    if (!pc && !system) {
      Error("Pod", p.meta, "spec.priorityClassName",
            UnknownName("PriorityClass", name, class_names, " (no PriorityClass is defined)"));
    } else if (pc && p.priority && *p.priority != pc->value) {
      Error("Pod", p.meta, "spec.priority",
            "priority " + std::to_string(*p.priority) + " does not match PriorityClass " +
                Quote(name) + " (value " + std::to_string(pc->value) +
                "); omit spec.priority, it comes from the class");
    }
  }

  // The simulated usage (arbiter.dev/usage) within the pod's requests and limits.
  void PodUsage(const Pod& p, const ResourceList& req, const ResourceList& lim) {
    const std::string path = "metadata.annotations[arbiter.dev/usage]";
    for (const auto& [r, u] : p.sim.usage->entries()) {
      if (!req.Has(r) && u > 0) {
        Warn("Pod", p.meta, path, "usage names " + r + ", which the pod does not request");
      } else if (IsExtended(r) && u > req.Get(r)) {
        Error("Pod", p.meta, path,
              "usage " + FormatResourceQuantity(r, u) + " of " + r + " exceeds the request " +
                  FormatResourceQuantity(r, req.Get(r)) + " (devices cannot be overused)");
      } else if (lim.Has(r) && u > lim.Get(r)) {
        Warn("Pod", p.meta, path,
             "usage " + FormatResourceQuantity(r, u) + " of " + r + " exceeds the limit " +
                 FormatResourceQuantity(r, lim.Get(r)));
      }
    }
  }

  // Whether some node admits the pod and whether it fits on one of those, empty: (selector
  // matches, fits). Pods share few (nodeSelector, requests) pairs: the nodes are scanned once per
  // pair, not once per pod (a million pods on ten thousand nodes).
  std::pair<bool, bool> NodeMatch(const Pod& p, const ResourceList& req, bool constrained) {
    std::string key = req.ToString();  // then each selector entry, length-prefixed (no collisions)
    for (const auto& [k, v] : p.node_selector)
      key += "|" + std::to_string(k.size()) + ":" + k + std::to_string(v.size()) + ":" + v;
    if (constrained) key += "|constraints" + ConstraintsKey(p);
    auto memo = fit_memo_.find(key);
    if (memo == fit_memo_.end()) {
      bool selector_match = false, fits = false;
      for (const auto& n : s_.nodes) {
        if (!NodeAdmits(p, n)) continue;
        selector_match = true;
        if (FitsEmptyNode(n, req)) {
          fits = true;
          break;
        }
      }
      memo = fit_memo_.emplace(std::move(key), std::make_pair(selector_match, fits)).first;
    }
    return memo->second;
  }

  // Some node admits the pod and it fits there, and the pod topology rules can be met; else the
  // pod will stay Pending.
  void PodPlacement(const Pod& p, const ResourceList& req) {
    if (!tainted_pool_)
      tainted_pool_ = std::any_of(s_.nodes.begin(), s_.nodes.end(),
                                  [](const Node& n) { return placement::HasHardTaint(n.taints); });
    const bool constrained = !p.tolerations.empty() || p.node_affinity.required || *tainted_pool_;
    const auto [selector_match, fits] = NodeMatch(p, req, constrained);
    if (!selector_match && constrained)
      Warn("Pod", p.meta, "spec",
           "no node admits the pod (its tolerations, nodeSelector and node affinity against "
           "the nodes' taints, labels and cordons); the pod will stay Pending");
    else if (!selector_match && !p.node_selector.empty())
      Warn("Pod", p.meta, "spec.nodeSelector",
           "no schedulable node matches the nodeSelector; the pod will stay Pending");
    else if (selector_match && !fits)
      Warn("Pod", p.meta, "spec.containers",
           "requests " + req.ToString() +
               " fit on no schedulable node even when it is empty; the pod will stay Pending");
    if (!topology_) topology_.emplace(s_, &NodeAdmits);
    for (auto& f : topology_->Check(p)) Warn("Pod", p.meta, f.path, std::move(f.message));
  }

  // A pod whose QoS leaves its namespace out of spec.namespaces: the engine rejects it
  // (QoSNotAllowed), a daemon refuses its create (403).
  void PodQoSNamespace(const Pod& p) {
    const std::string ns = p.meta.namespace_.empty() ? "default" : p.meta.namespace_;
    for (const auto& q : s_.qos)
      if (q.meta.name == *p.sim.qos && !q.AllowsNamespace(ns))
        Warn("Pod", p.meta, "metadata.annotations[arbiter.dev/qos]",
             "QoS " + Quote(q.meta.name) + " may not be used in namespace " + Quote(ns) +
                 " (not in its spec.namespaces): the pod will be rejected");
  }

  void Pods() {
    std::vector<std::string> class_names, qos_names;
    for (const auto& pc : s_.priority_classes) class_names.push_back(pc.meta.name);
    for (const auto& q : s_.qos) qos_names.push_back(q.meta.name);
    for (const auto& p : s_.pods) {
      CheckNamespace("Pod", p.meta);
      if (p.priority_class_name) PodPriorityClass(p, class_names);
      if (p.sim.qos && std::find(qos_names.begin(), qos_names.end(), *p.sim.qos) == qos_names.end())
        Error("Pod", p.meta, "metadata.annotations[arbiter.dev/qos]",
              UnknownName("QoS", *p.sim.qos, qos_names, " (no QoS object is defined)"));
      else if (p.sim.qos)
        PodQoSNamespace(p);
      Containers(p, p.containers, "spec.containers");
      Containers(p, p.init_containers, "spec.initContainers");
      if (overflow_) continue;
      ResourceList req = p.EffectiveRequests();
      ResourceList lim = p.EffectiveLimits();
      if (p.sim.usage) PodUsage(p, req, lim);
      LimitRangeAdmission(p);
      if (!s_.nodes.empty()) PodPlacement(p, req);
    }
  }

  std::unordered_map<std::string, std::pair<bool, bool>> fit_memo_;  // -> (selector matches, fits)
  std::optional<bool> tainted_pool_;         // some node has a NoSchedule / NoExecute taint
  std::optional<TopologyChecker> topology_;  // pod topology no node satisfies

  void Pdbs() {
    for (const auto& d : s_.pdbs) {
      CheckNamespace("PodDisruptionBudget", d.meta);
      if (d.min_available && d.max_unavailable)
        Error("PodDisruptionBudget", d.meta, "spec.maxUnavailable",
              "minAvailable and maxUnavailable are mutually exclusive; set one");
      auto pct = [&](const std::optional<IntOrPercent>& v, const char* field) {
        if (v && v->is_percent && (v->value < 0 || v->value > 100))
          Error("PodDisruptionBudget", d.meta, std::string("spec.") + field,
                "percentage " + std::to_string(v->value) + "% is outside 0%-100%");
      };
      pct(d.min_available, "minAvailable");
      pct(d.max_unavailable, "maxUnavailable");
      if (d.selector.Empty()) continue;
      int64_t matching = 0;
      bool any_in_ns = false;
      for (const auto& p : s_.pods) {
        if (p.meta.namespace_ != d.meta.namespace_) continue;
        any_in_ns = true;
        if (d.selector.Matches(p.meta.labels)) ++matching;
      }
      if (!any_in_ns) continue;
      if (matching == 0) {
        Warn("PodDisruptionBudget", d.meta, "spec.selector",
             "selects no Pod in namespace " + Quote(d.meta.namespace_));
      } else if (d.min_available && !d.max_unavailable &&
                 d.min_available->Resolve(matching) >= matching) {
        Warn("PodDisruptionBudget", d.meta, "spec.minAvailable",
             "requires all " + std::to_string(matching) +
                 " selected pods to stay available: no voluntary disruption is ever allowed");
      }
    }
  }

  void Policy() {
    if (!s_.pool_policy) return;
    const PoolPolicy& pp = *s_.pool_policy;
    auto ratio = [](int64_t milli) {
      std::string s =
          std::to_string(milli / 1000) + "." + std::to_string(1000 + milli % 1000).substr(1);
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s += "0";
      return s;
    };
    if (pp.cpu_overcommit_milli < 1000)
      Error("PoolPolicy", pp.meta, "spec.overcommit.cpu",
            "CPU overcommit " + ratio(pp.cpu_overcommit_milli) +
                " is below 1.0 (it would strand capacity)");
    else if (pp.cpu_overcommit_milli > 1200)
      Warn("PoolPolicy", pp.meta, "spec.overcommit.cpu",
           "CPU overcommit " + ratio(pp.cpu_overcommit_milli) +
               " is above the recommended range 1.0-1.2");
    if (pp.memory_overcommit_milli < 1000)
      Error("PoolPolicy", pp.meta, "spec.overcommit.memory",
            "memory overcommit " + ratio(pp.memory_overcommit_milli) + " is below 1.0");
    else if (pp.memory_overcommit_milli > 1000)
      Warn(
          "PoolPolicy", pp.meta, "spec.overcommit.memory",
          "memory overcommit " + ratio(pp.memory_overcommit_milli) +
              " is above 1.0: memory cannot be throttled, overcommitted nodes kill pods when full");
    if (pp.scrape_interval < 1000)
      Error("PoolPolicy", pp.meta, "spec.metering.scrapeInterval",
            "scrape interval " + FormatDuration(pp.scrape_interval) + " is below 1s");
    else if (pp.scrape_interval < 15000 || pp.scrape_interval > 60000)
      Warn("PoolPolicy", pp.meta, "spec.metering.scrapeInterval",
           "scrape interval " + FormatDuration(pp.scrape_interval) +
               " is outside the recommended range 15s-60s");
    if (pp.preemption_type == PreemptionType::kQoS && s_.qos.empty())
      Warn("PoolPolicy", pp.meta, "spec.preemption.type",
           "preemption type QoS, but no QoS object is defined: nothing can preempt");
    if (pp.victim_order == VictimOrder::kYoungestFirst &&
        pp.preemption_type != PreemptionType::kQoS)
      Warn("PoolPolicy", pp.meta, "spec.preemption.victimOrder",
           "YoungestFirst applies under preemption type QoS only (Slurm's "
           "preempt_youngest_first); under type Priority victims go in Kubernetes' order "
           "(priority, then the latest start); LeastLostWork applies under both");
    if (pp.requeue_backoff) RequeueBackoffRules(pp);
  }

  // spec.preemption.requeuingStrategy: values Kueue accepts but that do not back off as meant.
  void RequeueBackoffRules(const PoolPolicy& pp) {
    const auto& b = *pp.requeue_backoff;
    const std::string f = "spec.preemption.requeuingStrategy";
    if (b.base == 0)
      Warn("PoolPolicy", pp.meta, f + ".backoffBaseSeconds",
           "backoffBaseSeconds 0: every back-off is 0s, victims are requeued at once");
    else if (b.max == 0)
      Warn("PoolPolicy", pp.meta, f + ".backoffMaxSeconds",
           "backoffMaxSeconds 0 means no cap (as in Kueue): the back-off doubles with every "
           "preemption of the same workload, without end");
    else if (b.max < b.base)
      Warn("PoolPolicy", pp.meta, f + ".backoffMaxSeconds",
           "backoffMaxSeconds " + std::to_string(b.max / 1000) + " is below backoffBaseSeconds " +
               std::to_string(b.base / 1000) + ": the first back-off is " + FormatDuration(b.base) +
               ", every later one " + FormatDuration(b.max) + " (Kueue's backoff)");
  }

  // spec.preemption and spec.fairSharing, with Kueue's validation rules for the same fields.
  void ElasticPreemptionRules(const ElasticQuota& q) {
    const auto& p = q.preemption;
    const ReclaimMode reclaim = p.reclaim_within_cohort.value_or(
        s_.pool_policy ? s_.pool_policy->reclaim : ReclaimMode::kAny);
    const bool borrow =
        p.borrow_within_cohort && *p.borrow_within_cohort != BorrowWithinCohortPolicy::kNever;
    if (borrow && reclaim == ReclaimMode::kNever)
      Error("ElasticQuota", q.meta, "spec.preemption.borrowWithinCohort.policy",
            "borrowWithinCohort.policy LowerPriority needs reclaimWithinCohort other than Never (a "
            "preemptor "
            "that borrows could not take anything back)");
    if (p.max_priority_threshold && !borrow)
      Error("ElasticQuota", q.meta, "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
            "maxPriorityThreshold applies only with borrowWithinCohort.policy LowerPriority");
    if (q.cohort.empty() && (p.reclaim_within_cohort || p.borrow_within_cohort))
      Warn("ElasticQuota", q.meta,
           p.reclaim_within_cohort ? "spec.preemption.reclaimWithinCohort"
                                   : "spec.preemption.borrowWithinCohort",
           "the namespace is in no cohort: there is nothing to reclaim or borrow");
    if (q.fair_weight_milli && q.cohort.empty())
      Warn("ElasticQuota", q.meta, "spec.fairSharing.weight",
           "the namespace is in no cohort: its fair-sharing weight orders nothing");
  }

  void ElasticQuotas() {
    std::map<std::string, const ElasticQuota*> by_ns;
    for (const auto& q : s_.elastic_quotas) {
      CheckNamespace("ElasticQuota", q.meta);
      auto [it, inserted] = by_ns.emplace(q.meta.namespace_, &q);
      if (!inserted && it->second->meta.name != q.meta.name)
        Error("ElasticQuota", q.meta, "metadata.namespace",
              "namespace " + Quote(q.meta.namespace_) + " already has ElasticQuota " +
                  Quote(it->second->meta.name) + AtSource(it->second->meta.source, " (at ", ")") +
                  "; one per namespace");
      if (q.max) {
        for (const auto& [r, mn] : q.min.entries())
          if (q.max->Has(r) && mn > q.max->Get(r))
            Error("ElasticQuota", q.meta, FieldPathChild("spec.min", r),
                  "min " + FormatResourceQuantity(r, mn) + " exceeds max " +
                      FormatResourceQuantity(r, q.max->Get(r)));
      }
      ElasticPreemptionRules(q);
      for (const auto& [r, l] : q.lending_limit.entries()) {
        if (!q.min.Has(r))
          Error("ElasticQuota", q.meta, FieldPathChild("spec.lendingLimit", r),
                "lending limit for " + r + ", which has no min (only guaranteed quota is lent)");
        else if (l > q.min.Get(r))
          Error("ElasticQuota", q.meta, FieldPathChild("spec.lendingLimit", r),
                "lending limit " + FormatResourceQuantity(r, l) + " exceeds min " +
                    FormatResourceQuantity(r, q.min.Get(r)));
      }
    }
    // A namespace ResourceQuota (without scopes) below the ElasticQuota ceiling makes the rest of
    // the ceiling unreachable.
    std::multimap<std::string_view, const ResourceQuota*> quotas_of;  // by namespace, in order
    for (const auto& rq : s_.resource_quotas) quotas_of.emplace(rq.meta.namespace_, &rq);
    for (const auto& q : s_.elastic_quotas) {
      for (auto [at, end] = quotas_of.equal_range(q.meta.namespace_); at != end; ++at) {
        const ResourceQuota& rq = *at->second;
        if (!rq.scope_selector.empty()) continue;
        for (const auto& item : rq.hard) {
          if (item.track != QuotaTrack::kRequests) continue;
          const std::string& r = item.resource;
          bool has_ceiling = q.max ? q.max->Has(r) : q.min.Has(r);
          int64_t ceiling = q.max ? q.max->Get(r) : q.min.Get(r);
          if (has_ceiling && item.hard < ceiling)
            Warn("ElasticQuota", q.meta, FieldPathChild(q.max ? "spec.max" : "spec.min", r),
                 "ResourceQuota " + Quote(rq.meta.name) + " caps " + item.key + " at " +
                     FormatResourceQuantity(r, item.hard) + ", below this " +
                     (q.max ? "max " : "min ") + FormatResourceQuantity(r, ceiling) +
                     ": the namespace can never use all of it");
        }
      }
    }
    // Guarantees of a cohort beyond the pool's capacity cannot all be honoured.
    if (s_.nodes.empty() || overflow_) return;
    ResourceList pool;
    for (const auto& n : s_.nodes)
      if (!n.unschedulable) pool += n.allocatable;
    std::map<std::string, ResourceList> cohort_min;
    std::map<std::string, const ElasticQuota*> cohort_last;
    for (const auto& q : s_.elastic_quotas) {
      std::string c = q.cohort.empty() ? "" : q.cohort;
      if (c.empty()) continue;
      cohort_min[c] += q.min;
      cohort_last[c] = &q;
    }
    for (const auto& [c, mins] : cohort_min)
      for (const auto& [r, v] : mins.entries())
        if (v > pool.Get(r))
          Warn("ElasticQuota", cohort_last[c]->meta, FieldPathChild("spec.min", r),
               "the min of cohort " + Quote(c) + " adds up to " + FormatResourceQuantity(r, v) +
                   " of " + r + ", more than the pool's " + FormatResourceQuantity(r, pool.Get(r)) +
                   ": guarantees cannot all be honoured");
  }

  // ElasticQuota spec.flavors (Kueue's resourceGroups[].flavors): known, distinct flavors, each
  // with min <= max and lendingLimit <= min; a covered resource is quota per flavor only.
  void Flavors() {
    std::vector<std::string> names;
    for (const auto& f : s_.resource_flavors) names.push_back(f.meta.name);
    for (const auto& q : s_.elastic_quotas) {
      std::map<std::string, size_t> seen;
      for (size_t i = 0; i < q.flavors.size(); ++i) {
        const QuotaFlavor& f = q.flavors[i];
        const std::string path = "spec.flavors[" + std::to_string(i) + "]";
        if (f.name.empty()) continue;  // the loader reported it
        if (std::find(names.begin(), names.end(), f.name) == names.end()) {
          std::string msg = "unknown ResourceFlavor " + Quote(f.name);
          if (auto m = DidYouMean(f.name, names)) msg += "; did you mean " + Quote(*m) + "?";
          Error("ElasticQuota", q.meta, path + ".name", msg);
        }
        auto [it, inserted] = seen.emplace(f.name, i);
        if (!inserted)
          Error("ElasticQuota", q.meta, path + ".name",
                "flavor " + Quote(f.name) + " is listed twice (first at spec.flavors[" +
                    std::to_string(it->second) + "])");
        if (f.min.empty() && (!f.max || f.max->empty()))
          Error("ElasticQuota", q.meta, path,
                "flavor " + Quote(f.name) + " sets no min or max: it covers no resource");
        for (const auto& [r, mn] : f.min.entries())
          if (f.max && f.max->Has(r) && mn > f.max->Get(r))
            Error("ElasticQuota", q.meta, FieldPathChild(path + ".min", r),
                  "min " + FormatResourceQuantity(r, mn) + " exceeds max " +
                      FormatResourceQuantity(r, f.max->Get(r)));
        for (const auto& [r, l] : f.lending_limit.entries())
          if (l > f.min.Get(r))
            Error("ElasticQuota", q.meta, FieldPathChild(path + ".lendingLimit", r),
                  "lending limit " + FormatResourceQuantity(r, l) + " exceeds min " +
                      FormatResourceQuantity(r, f.min.Get(r)));
        auto covered_twice = [&](const ResourceList& l, const char* field) {
          for (const auto& [r, v] : l.entries())
            if (q.min.Has(r) || (q.max && q.max->Has(r)))
              Error("ElasticQuota", q.meta, FieldPathChild(path + "." + field, r),
                    r + " is quota per flavor here and also in spec.min/spec.max: name it in one "
                        "place");
        };
        covered_twice(f.min, "min");
        if (f.max) covered_twice(*f.max, "max");
      }
    }
  }

  void QoSes() {
    std::vector<std::string> names;
    for (const auto& q : s_.qos) names.push_back(q.meta.name);
    for (const auto& q : s_.qos) {
      for (size_t i = 0; i < q.preempt.size(); ++i) {
        const std::string& t = q.preempt[i];
        std::string path = "spec.preempt[" + std::to_string(i) + "]";
        if (std::find(names.begin(), names.end(), t) == names.end()) {
          std::string msg = "unknown QoS " + Quote(t);
          if (auto s = DidYouMean(t, names)) msg += "; did you mean " + Quote(*s) + "?";
          Error("QoS", q.meta, path, msg);
        } else if (t == q.meta.name) {
          Warn("QoS", q.meta, path, "a QoS that preempts itself lets its jobs preempt each other");
        }
      }
      if (q.namespaces && q.namespaces->empty())
        Warn("QoS", q.meta, "spec.namespaces",
             "an empty list: no namespace may use this QoS (leave the field out for every "
             "namespace)");
    }
  }

  void ResourceQuotas() {
    std::vector<std::string> class_names;
    for (const auto& pc : s_.priority_classes) class_names.push_back(pc.meta.name);
    for (const auto& q : s_.resource_quotas) {
      CheckNamespace("ResourceQuota", q.meta);
      std::map<std::pair<int, std::string>, std::string> seen;
      for (const auto& item : q.hard) {
        // Kubernetes accepts `cpu` with `requests.cpu` (memory, ephemeral-storage alike) and `pods`
        // with `count/pods`, and enforces each; only an extended resource named both bare and
        // with `requests.` is the same quota twice.
        if (item.track == QuotaTrack::kCount || !IsExtended(item.resource)) continue;
        auto key = std::make_pair(static_cast<int>(item.track), item.resource);
        auto [it, inserted] = seen.emplace(key, item.key);
        if (!inserted)
          Error("ResourceQuota", q.meta, FieldPathChild("spec.hard", item.key),
                Quote(item.key) + " and " + Quote(it->second) + " set the same quota; keep one");
      }
      // Kubernetes' ValidateResourceQuota: a BestEffort pod requests no compute resources, so a
      // BestEffort quota may only count pods; NotBestEffort, Terminating and NotTerminating apply
      // to pods and cpu / memory (another standard resource, ephemeral-storage, is refused;
      // extended resources and count/pods are not checked; recent Kubernetes refuses it under a
      // PriorityClass scope too, which Arbiter still accepts). BestEffort and NotBestEffort,
      // Terminating and NotTerminating exclude each other.
      // A scope the engine does not know would match no pod: refused, as by kube-apiserver
      // (the loader refuses it first; this guards objects built otherwise).
      std::set<std::string> scopes;
      for (size_t i = 0; i < q.scope_selector.size(); ++i) {
        const std::string& name = q.scope_selector[i].scope_name;
        scopes.insert(name);
        static const std::set<std::string> kKnown = {"PriorityClass",  "Terminating",
                                                     "NotTerminating", "BestEffort",
                                                     "NotBestEffort",  "CrossNamespacePodAffinity"};
        if (!kKnown.count(name))
          Error("ResourceQuota", q.meta,
                "spec.scopeSelector.matchExpressions[" + std::to_string(i) + "].scopeName",
                "invalid value " + Quote(name) + ": unsupported scope");
      }
      for (auto [a, b] : {std::pair<const char*, const char*>{"BestEffort", "NotBestEffort"},
                          {"Terminating", "NotTerminating"}})
        if (scopes.count(a) && scopes.count(b))
          Error("ResourceQuota", q.meta, "spec.scopes",
                std::string("conflicting scopes: ") + a + " and " + b);
      if (scopes.count("BestEffort"))
        for (const auto& item : q.hard)
          if (item.track != QuotaTrack::kCount)
            Error("ResourceQuota", q.meta, FieldPathChild("spec.hard", item.key),
                  "unsupported scope applied to resource: BestEffort pods request no " +
                      item.resource + " (a BestEffort quota counts pods only)");
      for (const char* scope : {"NotBestEffort", "Terminating", "NotTerminating"}) {
        if (!scopes.count(scope)) continue;
        for (const auto& item : q.hard)
          if (item.track != QuotaTrack::kCount && item.resource == "ephemeral-storage")
            Error("ResourceQuota", q.meta, FieldPathChild("spec.hard", item.key),
                  std::string("unsupported scope applied to resource: the ") + scope +
                      " scope applies to pods, cpu and memory only");
        break;  // one message per resource
      }
      for (size_t i = 0; i < q.scope_selector.size(); ++i) {
        const auto& req = q.scope_selector[i];
        if (req.scope_name != "PriorityClass") continue;
        for (size_t j = 0; j < req.values.size(); ++j)
          if (!FindClass(req.values[j]) && !SystemPriorityClassValue(req.values[j]))
            Warn("ResourceQuota", q.meta,
                 "spec.scopeSelector.matchExpressions[" + std::to_string(i) + "].values[" +
                     std::to_string(j) + "]",
                 "no PriorityClass named " + Quote(req.values[j]));
      }
    }
  }

  void LimitRanges() {
    for (const auto& lr : s_.limit_ranges) {
      CheckNamespace("LimitRange", lr.meta);
      for (size_t i = 0; i < lr.limits.size(); ++i) {
        const LimitRangeItem& li = lr.limits[i];
        std::string base = "spec.limits[" + std::to_string(i) + "]";
        auto order = [&](const ResourceList& lo, const char* lo_name, const ResourceList& hi,
                         const char* hi_name) {
          for (const auto& [r, v] : lo.entries())
            if (hi.Has(r) && v > hi.Get(r))
              Error("LimitRange", lr.meta, FieldPathChild(base + "." + lo_name, r),
                    std::string(lo_name) + " " + FormatResourceQuantity(r, v) + " of " + r +
                        " is above " + hi_name + " " + FormatResourceQuantity(r, hi.Get(r)));
        };
        order(li.min, "min", li.max, "max");
        order(li.default_request, "defaultRequest", li.default_limit, "default");
        order(li.min, "min", li.default_request, "defaultRequest");
        order(li.default_limit, "default", li.max, "max");
        order(li.min, "min", li.default_limit, "default");
        order(li.default_request, "defaultRequest", li.max, "max");
        for (const auto& [r, ratio] : li.max_limit_request_ratio_milli.entries()) {
          if (!li.default_limit.Has(r) || !li.default_request.Has(r)) continue;
          int128 lim = li.default_limit.Get(r), req = li.default_request.Get(r);
          if (req > 0 && lim * 1000 > req * ratio)
            Error("LimitRange", lr.meta, base + FieldPathChild(".maxLimitRequestRatio", r),
                  "default / defaultRequest of " + r + " exceeds maxLimitRequestRatio");
        }
        for (const auto& [r, v] : li.default_request.entries())
          if (IsExtended(r) && li.default_limit.Has(r) && li.default_limit.Get(r) != v)
            Error("LimitRange", lr.meta, base + FieldPathChild(".default", r),
                  r + " cannot be overcommitted: default must equal defaultRequest");
      }
    }
  }

  void PriceBooks() {
    std::map<Millis, const PriceBook*> by_time;
    for (const auto& pb : s_.price_books) {
      auto [it, inserted] = by_time.emplace(pb.effective_from, &pb);
      if (!inserted)
        Error("PriceBook", pb.meta, "spec.effectiveFrom",
              "PriceBook " + Quote(it->second->meta.name) +
                  AtSource(it->second->meta.source, " (at ", ")") +
                  " takes effect at the same instant; which one applies would be ambiguous");
      for (const auto& [ns, mode] : pb.namespace_modes)
        if (!NamespaceDeclared(ns))
          Warn("PriceBook", pb.meta, FieldPathChild("spec.namespaceModes", ns),
               "namespace " + Quote(ns) + " is not declared by any Namespace object");
    }
  }

  const ManifestSet& s_;
  const SourceLocator* loc_;
  Diagnostics* out_;
  bool overflow_ = false;
};

}  // namespace

void ValidateManifestSet(const ManifestSet& set, const SourceLocator* locator, Diagnostics* out) {
  Validator(set, locator, out).Run();
}

}  // namespace arbiter
