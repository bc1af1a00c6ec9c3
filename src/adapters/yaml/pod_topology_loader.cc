#include "adapters/yaml/pod_topology_loader.h"

#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "adapters/yaml/manifest_rules.h"
#include "core/text.h"

namespace arbiter::yaml {

namespace pod_topology_loader {

std::string Q(std::string_view s) { return QuotedEcho(s, 256); }

// ValidateLabelName's message for a bad qualified name.
void CheckQualifiedName(DocReader& r, const YAML::Node& at, const std::string& path,
                        const std::string& key) {
  if (IsLabelKey(key)) return;
  r.Error(at, path,
          "Invalid value: " + Q(key) +
              ": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (an optional prefix: a DNS subdomain "
              "and '/')");
}

// metav1.LabelSelector with ValidateLabelSelector's messages.
LabelSelector ReadSelector(DocReader& r, const YAML::Node& n, const std::string& p) {
  LabelSelector s;
  r.ReadStruct(
      n, p,
      {{"matchLabels",
        [&](const YAML::Node& v, const std::string& fp) {
          s.match_labels = r.StringMap(v, fp, true);
          for (const auto& [k, val] : s.match_labels) CheckQualifiedName(r, v, ChildPath(fp, k), k);
        }},
       {"matchExpressions", [&](const YAML::Node& v, const std::string& fp) {
          r.ForEachItem(v, fp, [&](const YAML::Node& e, const std::string& ep) {
            LabelRequirement req;
            std::optional<size_t> op;
            bool has_key = false;
            r.ReadStruct(e, ep,
                         {{"key",
                           [&](const YAML::Node& kv, const std::string& kp) {
                             if (auto k = r.String(kv, kp)) {
                               has_key = true;
                               req.key = *k;
                               CheckQualifiedName(r, kv, kp, req.key);
                             }
                           }},
                          {"operator",
                           [&](const YAML::Node& ov, const std::string& opath) {
                             op = r.Enum(ov, opath, {"In", "NotIn", "Exists", "DoesNotExist"});
                           }},
                          {"values", [&](const YAML::Node& vv, const std::string& vp) {
                             req.values = r.StringList(vv, vp);
                           }}});
            if (!e.IsMap()) return;
            if (!has_key) r.Error(e, ChildPath(ep, "key"), "Required value");
            if (!op) {
              r.Error(e, ChildPath(ep, "operator"), "Required value");
              return;
            }
            req.op = static_cast<SelectorOperator>(*op);
            const bool in = req.op == SelectorOperator::kIn || req.op == SelectorOperator::kNotIn;
            if (in && req.values.empty())
              r.Error(e, ChildPath(ep, "values"),
                      "Required value: must be specified when `operator` is 'In' or 'NotIn'");
            if (!in && !req.values.empty())
              r.Error(e, ChildPath(ep, "values"),
                      "Forbidden: may not be specified when `operator` is 'Exists' or "
                      "'DoesNotExist'");
            if (has_key) s.match_expressions.push_back(std::move(req));
          });
        }}});
  return s;
}

// validateTopologyKey: required, a qualified name.
void CheckTopologyKey(DocReader& r, const YAML::Node& at, const std::string& path,
                      const std::string& key) {
  if (key.empty())
    r.Error(at, path, "Required value: can not be empty");
  else
    CheckQualifiedName(r, at, path, key);
}

PodAffinityTerm ReadTerm(DocReader& r, const YAML::Node& n, const std::string& p) {
  PodAffinityTerm t;
  YAML::Node key_node;  // reset(), never assigned: assigning would overwrite the node it refers to
  key_node.reset(n);
  r.ReadStruct(n, p,
               {{"labelSelector",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (!v.IsNull()) t.label_selector = ReadSelector(r, v, fp);
                 }},
                {"namespaces", [&](const YAML::Node& v,
                                   const std::string& fp) { t.namespaces = r.StringList(v, fp); }},
                {"namespaceSelector",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (!v.IsNull()) t.namespace_selector = ReadSelector(r, v, fp);
                 }},
                {"topologyKey",
                 [&](const YAML::Node& v, const std::string& fp) {
                   key_node.reset(v);
                   if (auto s = r.String(v, fp)) t.topology_key = *s;
                 }}},
               {}, {"matchLabelKeys", "mismatchLabelKeys"});
  if (n.IsMap() || n.IsNull())
    CheckTopologyKey(r, key_node, ChildPath(p, "topologyKey"), t.topology_key);
  return t;
}

// One topologySpreadConstraints item as written, before its checks.
struct SpreadItem {
  TopologySpreadConstraint c;
  std::optional<int64_t> skew, min_domains;
  std::optional<size_t> action;              // 0 DoNotSchedule, 1 ScheduleAnyway
  YAML::Node skew_node, key_node, min_node;  // reset(), never assigned (see ReadTerm)
  bool has_action = false;
};

// Reads an item's fields into *s; matchLabelKeys go to (*match_label_keys)[index].
void ReadSpreadItem(DocReader& r, const YAML::Node& item, const std::string& p, size_t index,
                    std::map<size_t, std::vector<std::string>>* match_label_keys, SpreadItem* s) {
  s->skew_node.reset(item);
  s->key_node.reset(item);
  s->min_node.reset(item);
  r.ReadStruct(item, p,
               {{"maxSkew",
                 [&](const YAML::Node& v, const std::string& fp) {
                   s->skew_node.reset(v);
                   s->skew = r.Int(v, fp, std::numeric_limits<int32_t>::min(),
                                   std::numeric_limits<int32_t>::max());
                 }},
                {"topologyKey",
                 [&](const YAML::Node& v, const std::string& fp) {
                   s->key_node.reset(v);
                   if (auto t = r.String(v, fp)) s->c.topology_key = *t;
                 }},
                {"whenUnsatisfiable",
                 [&](const YAML::Node& v, const std::string& fp) {
                   s->has_action = true;
                   const std::string text = r.String(v, fp).value_or("");
                   if (text == "DoNotSchedule" || text == "ScheduleAnyway")
                     s->action = text == "DoNotSchedule" ? 0 : 1;
                   else  // field.NotSupported
                     r.Error(v, fp,
                             "Unsupported value: " + Q(text) +
                                 ": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"");
                 }},
                {"labelSelector",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (!v.IsNull()) s->c.label_selector = ReadSelector(r, v, fp);
                 }},
                {"minDomains",
                 [&](const YAML::Node& v, const std::string& fp) {
                   s->min_node.reset(v);
                   s->min_domains = r.Int(v, fp, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max());
                 }},
                {"nodeAffinityPolicy",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r.Enum(v, fp, {"Honor", "Ignore"}); e && *e == 1)
                     r.Warn(v, fp, "nodeAffinityPolicy: Ignore is not modelled (Honor applies)");
                 }},
                {"nodeTaintsPolicy",
                 [&](const YAML::Node& v, const std::string& fp) {
                   if (auto e = r.Enum(v, fp, {"Honor", "Ignore"}); e && *e == 0)
                     r.Warn(v, fp, "nodeTaintsPolicy: Honor is not modelled (Ignore applies)");
                 }},
                {"matchLabelKeys", [&](const YAML::Node& v, const std::string& fp) {
                   if (match_label_keys) (*match_label_keys)[index] = r.StringList(v, fp);
                 }}});
}

}  // namespace pod_topology_loader

using pod_topology_loader::CheckTopologyKey;
using pod_topology_loader::Q;
using pod_topology_loader::ReadSelector;
using pod_topology_loader::ReadSpreadItem;
using pod_topology_loader::ReadTerm;
using pod_topology_loader::SpreadItem;

void ReadPodAffinity(DocReader& r, const YAML::Node& n, const std::string& path, PodAffinity* out) {
  auto required = [&](const YAML::Node& v, const std::string& fp) {
    r.ForEachItem(v, fp, [&](const YAML::Node& t, const std::string& tp) {
      PodAffinityTerm term = ReadTerm(r, t, tp);
      if (t.IsMap() || t.IsNull()) out->required.push_back(std::move(term));
    });
  };
  auto preferred = [&](const YAML::Node& v, const std::string& fp) {
    r.ForEachItem(v, fp, [&](const YAML::Node& t, const std::string& tp) {
      WeightedPodAffinityTerm w;
      int64_t weight = 0;
      YAML::Node weight_node;
      weight_node.reset(t);
      bool has_term = false;
      r.ReadStruct(t, tp,
                   {{"weight",
                     [&](const YAML::Node& wv, const std::string& wp) {
                       weight_node.reset(wv);
                       weight = r.Int(wv, wp, std::numeric_limits<int32_t>::min(),
                                      std::numeric_limits<int32_t>::max())
                                    .value_or(1);
                     }},
                    {"podAffinityTerm", [&](const YAML::Node& pv, const std::string& pp) {
                       has_term = true;
                       w.term = ReadTerm(r, pv, pp);
                     }}});
      if (!t.IsMap()) return;
      if (weight < 1 || weight > 100)
        r.Error(weight_node, ChildPath(tp, "weight"),
                "Invalid value: " + std::to_string(weight) + ": must be in the range 1-100");
      if (!has_term)
        CheckTopologyKey(r, t, ChildPath(ChildPath(tp, "podAffinityTerm"), "topologyKey"), "");
      w.weight = static_cast<int32_t>(weight);
      out->preferred.push_back(std::move(w));
    });
  };
  r.ReadStruct(n, path,
               {{"requiredDuringSchedulingIgnoredDuringExecution", required},
                {"preferredDuringSchedulingIgnoredDuringExecution", preferred}});
}

void ReadTopologySpread(DocReader& r, const YAML::Node& n, const std::string& path,
                        std::vector<TopologySpreadConstraint>* out,
                        std::map<size_t, std::vector<std::string>>* match_label_keys) {
  std::set<std::pair<std::string, bool>> seen;
  r.ForEachItem(n, path, [&](const YAML::Node& item, const std::string& p) {
    SpreadItem s;
    ReadSpreadItem(r, item, p, out->size(), match_label_keys, &s);
    TopologySpreadConstraint& c = s.c;
    if (!item.IsMap()) return;
    if (!s.skew)
      r.Error(s.skew_node, ChildPath(p, "maxSkew"), "Required value");
    else if (*s.skew <= 0)
      r.Error(s.skew_node, ChildPath(p, "maxSkew"),
              "Invalid value: " + std::to_string(*s.skew) + ": must be greater than zero");
    CheckTopologyKey(r, s.key_node, ChildPath(p, "topologyKey"), c.topology_key);
    if (!s.action) {
      if (!s.has_action)  // absent (a bad value was reported by Enum)
        r.Error(item, ChildPath(p, "whenUnsatisfiable"),
                "Unsupported value: \"\": supported values: \"DoNotSchedule\", "
                "\"ScheduleAnyway\"");
      return;
    }
    c.do_not_schedule = *s.action == 0;
    const char* action_text = c.do_not_schedule ? "DoNotSchedule" : "ScheduleAnyway";
    if (s.min_domains) {
      if (*s.min_domains <= 0)
        r.Error(s.min_node, ChildPath(p, "minDomains"),
                "Invalid value: " + std::to_string(*s.min_domains) + ": must be greater than zero");
      else if (!c.do_not_schedule)
        r.Error(s.min_node, ChildPath(p, "minDomains"),
                "Invalid value: " + std::to_string(*s.min_domains) +
                    ": can only use minDomains if whenUnsatisfiable=DoNotSchedule, not " +
                    action_text);
      c.min_domains = static_cast<int32_t>(*s.min_domains);
    }
    if (!seen.emplace(c.topology_key, c.do_not_schedule).second)
      r.Error(item, p, "Duplicate value: \"{" + c.topology_key + ", " + action_text + "}\"");
    c.max_skew = static_cast<int32_t>(s.skew.value_or(1));
    out->push_back(std::move(c));
  });
}

void ApplyMatchLabelKeys(const std::map<size_t, std::vector<std::string>>& keys, Pod* pod) {
  for (const auto& [index, names] : keys) {
    if (index >= pod->topology_spread.size()) continue;  // the constraint had errors
    TopologySpreadConstraint& c = pod->topology_spread[index];
    if (!c.label_selector) continue;  // no selector: matches no pod, keys or not
    for (const auto& k : names)
      if (auto it = pod->meta.labels.find(k); it != pod->meta.labels.end())
        c.label_selector->match_expressions.push_back({k, SelectorOperator::kIn, {it->second}});
  }
}

}  // namespace arbiter::yaml
