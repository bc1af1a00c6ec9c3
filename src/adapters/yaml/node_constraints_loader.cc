#include "adapters/yaml/node_constraints_loader.h"

#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "adapters/yaml/manifest_rules.h"
#include "adapters/yaml/pod_topology_loader.h"
#include "core/placement/node_constraints.h"
#include "core/text.h"

namespace arbiter::yaml {

namespace {

std::string Q(std::string_view s) { return QuotedEcho(s, 256); }

// field.NotSupported's text.
std::string Unsupported(std::string_view v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + Q(a);
  return "Unsupported value: " + Q(v) + ": supported values: " + list;
}

// ValidateLabelName (a qualified name: [prefix/]name).
std::optional<std::string> BadLabelKey(const std::string& key) {
  if (key.empty()) return "Invalid value: \"\": name part must be non-empty";
  if (IsLabelKey(key)) return std::nullopt;
  return "Invalid value: " + Q(key) +
         ": name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
         "and end with an alphanumeric character (an optional prefix: a DNS subdomain and '/')";
}

std::string BadLabelValue(const std::string& v) {
  return "Invalid value: " + Q(v) +
         ": a valid label must be an empty string or consist of alphanumeric characters, '-', "
         "'_' or '.', and must start and end with an alphanumeric character";
}

// A string field: its value and node (for the line of a later message).
// (yaml-cpp: assigning to a Node that refers to a node overwrites that node; these start empty
// and are assigned once.)
struct StrField {
  std::optional<std::string> value;
  YAML::Node node;
  bool present = false;
  const YAML::Node& Or(const YAML::Node& fallback) const { return present ? node : fallback; }
};
DocReader::Field StringField(DocReader& r, std::string_view name, StrField* into) {
  return {name, [&r, into](const YAML::Node& v, const std::string& p) {
            into->node = v;
            into->present = true;
            into->value = r.String(v, p);
            if (!into->value && v.IsNull()) into->value = "";
          }};
}

std::optional<TaintEffect> EffectOf(const std::string& s) {
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  return std::nullopt;
}

std::optional<NodeSelectorOperator> SelectorOperatorOf(const std::string& s) {
  for (auto op :
       {NodeSelectorOperator::kIn, NodeSelectorOperator::kNotIn, NodeSelectorOperator::kExists,
        NodeSelectorOperator::kDoesNotExist, NodeSelectorOperator::kGt, NodeSelectorOperator::kLt})
    if (s == placement::ToString(op)) return op;
  return std::nullopt;
}

bool IsInteger(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false;  // within int64 (19 digits may overflow)
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// One matchExpressions (fields = false) or matchFields (fields = true) entry.
void ReadRequirement(DocReader& r, const YAML::Node& n, const std::string& p, bool fields,
                     std::vector<NodeSelectorRequirement>* out) {
  StrField key, op;
  std::vector<std::string> values;
  YAML::Node values_node;
  bool has_values = false;
  r.ReadStruct(n, p,
               {StringField(r, "key", &key),
                StringField(r, "operator", &op),
                {"values", [&](const YAML::Node& v, const std::string& vp) {
                   values_node = v;
                   has_values = true;
                   values = r.StringList(v, vp);
                 }}});
  if (!n.IsMap()) return;
  NodeSelectorRequirement req;
  req.key = key.value.value_or("");
  req.values = values;
  const std::string op_text = op.value.value_or("");
  const auto parsed = SelectorOperatorOf(op_text);
  const YAML::Node& at_values = has_values ? values_node : n;
  const YAML::Node& at_op = op.Or(n);
  const std::string vp = ChildPath(p, "values");
  const bool in_or_not =
      parsed == NodeSelectorOperator::kIn || parsed == NodeSelectorOperator::kNotIn;
  if (fields) {  // validateNodeFieldSelectorRequirement
    if (!in_or_not)
      r.Error(at_op, ChildPath(p, "operator"),
              "Invalid value: " + Q(op_text) + ": not a valid selector operator");
    else if (values.size() != 1)
      r.Error(at_values, vp,
              "Required value: must be only one value when `operator` is 'In' or 'NotIn' for "
              "node field selector");
    if (req.key != placement::kNodeNameField)
      r.Error(key.Or(n), ChildPath(p, "key"),
              "Invalid value: " + Q(req.key) + ": not a valid field selector key");
  } else {  // ValidateNodeSelectorRequirement
    if (!parsed) {
      r.Error(at_op, ChildPath(p, "operator"),
              "Invalid value: " + Q(op_text) + ": not a valid selector operator");
    } else if (in_or_not && values.empty()) {
      r.Error(at_values, vp,
              "Required value: must be specified when `operator` is 'In' or 'NotIn'");
    } else if ((*parsed == NodeSelectorOperator::kExists ||
                *parsed == NodeSelectorOperator::kDoesNotExist) &&
               !values.empty()) {
      r.Error(at_values, vp,
              "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    } else if (*parsed == NodeSelectorOperator::kGt || *parsed == NodeSelectorOperator::kLt) {
      if (values.size() != 1)
        r.Error(at_values, vp,
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
      else if (!IsInteger(values[0]))  // kube-scheduler's parse error: the term never matches
        r.Error(at_values, IndexPath(vp, 0),
                "Invalid value: " + Q(values[0]) +
                    ": for 'Gt', 'Lt' operators, the value must be an integer");
    }
    if (auto bad = BadLabelKey(req.key)) r.Error(key.Or(n), ChildPath(p, "key"), *bad);
  }
  if (parsed) req.op = *parsed;
  out->push_back(std::move(req));
}

void ReadTerm(DocReader& r, const YAML::Node& n, const std::string& p, NodeSelectorTerm* t) {
  r.ReadStruct(n, p,
               {{"matchExpressions",
                 [&](const YAML::Node& v, const std::string& fp) {
                   r.ForEachItem(v, fp, [&](const YAML::Node& e, const std::string& ep) {
                     ReadRequirement(r, e, ep, false, &t->match_expressions);
                   });
                 }},
                {"matchFields", [&](const YAML::Node& v, const std::string& fp) {
                   r.ForEachItem(v, fp, [&](const YAML::Node& e, const std::string& ep) {
                     ReadRequirement(r, e, ep, true, &t->match_fields);
                   });
                 }}});
}

void ReadNodeAffinity(DocReader& r, const YAML::Node& n, const std::string& p, NodeAffinity* out) {
  auto required = [&](const YAML::Node& v, const std::string& fp) {
    bool has_terms = false;
    std::vector<NodeSelectorTerm> terms;
    r.ReadStruct(v, fp, {{"nodeSelectorTerms", [&](const YAML::Node& tv, const std::string& tp) {
                            has_terms = true;
                            r.ForEachItem(tv, tp, [&](const YAML::Node& t, const std::string& ip) {
                              terms.emplace_back();
                              ReadTerm(r, t, ip, &terms.back());
                            });
                            if (terms.empty())
                              r.Error(tv, tp,
                                      "Required value: must have at least one node selector term");
                          }}});
    if (!has_terms && (v.IsMap() || v.IsNull()))
      r.Error(v, ChildPath(fp, "nodeSelectorTerms"),
              "Required value: must have at least one node selector term");
    out->required = std::move(terms);
  };
  auto preferred = [&](const YAML::Node& v, const std::string& fp) {
    r.ForEachItem(v, fp, [&](const YAML::Node& t, const std::string& ip) {
      PreferredSchedulingTerm term;
      int64_t weight = 0;
      YAML::Node weight_node;
      bool has_weight = false;
      r.ReadStruct(t, ip,
                   {{"weight",
                     [&](const YAML::Node& wv, const std::string& wp) {
                       weight_node = wv;
                       has_weight = true;
                       if (auto w = r.Int(wv, wp, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max()))
                         weight = *w;
                       else
                         weight = 1;  // reported already
                     }},
                    {"preference", [&](const YAML::Node& pv, const std::string& pp) {
                       ReadTerm(r, pv, pp, &term.preference);
                     }}});
      if (!t.IsMap()) return;
      if (weight < 1 || weight > 100)
        r.Error(has_weight ? weight_node : t, ChildPath(ip, "weight"),
                "Invalid value: " + std::to_string(weight) + ": must be in the range 1-100");
      term.weight = static_cast<int32_t>(weight);
      out->preferred.push_back(std::move(term));
    });
  };
  r.ReadStruct(n, p,
               {{"requiredDuringSchedulingIgnoredDuringExecution", required},
                {"preferredDuringSchedulingIgnoredDuringExecution", preferred}});
}

}  // namespace

void ReadTaints(DocReader& r, const YAML::Node& n, const std::string& path,
                std::vector<Taint>* out) {
  std::set<std::pair<std::string, TaintEffect>> seen;
  r.ForEachItem(n, path, [&](const YAML::Node& item, const std::string& p) {
    StrField key, value, effect;
    r.ReadStruct(item, p,
                 {StringField(r, "key", &key), StringField(r, "value", &value),
                  StringField(r, "effect", &effect)},
                 {"timeAdded"});
    if (!item.IsMap()) return;
    Taint t;
    t.key = key.value.value_or("");
    t.value = value.value.value_or("");
    if (auto bad = BadLabelKey(t.key)) r.Error(key.Or(item), ChildPath(p, "key"), *bad);
    if (!IsLabelValue(t.value)) r.Error(value.node, ChildPath(p, "value"), BadLabelValue(t.value));
    const std::string e = effect.value.value_or("");
    const auto parsed = EffectOf(e);
    if (e.empty())
      r.Error(effect.Or(item), ChildPath(p, "effect"), "Required value");
    else if (!parsed)
      r.Error(effect.node, ChildPath(p, "effect"),
              Unsupported(e, {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    if (!parsed) return;
    t.effect = *parsed;
    if (!seen.emplace(t.key, t.effect).second) {
      r.Error(item, p,
              "Duplicate value: {\"key\": " + Q(t.key) + ", \"effect\": " + Q(e) +
                  "}: taints must be unique by key and effect pair");
      return;
    }
    out->push_back(std::move(t));
  });
}

void ReadTolerations(DocReader& r, const YAML::Node& n, const std::string& path,
                     std::vector<Toleration>* out) {
  r.ForEachItem(n, path, [&](const YAML::Node& item, const std::string& p) {
    StrField key, op, value, effect;
    std::optional<int64_t> seconds;
    r.ReadStruct(item, p,
                 {StringField(r, "key", &key),
                  StringField(r, "operator", &op),
                  StringField(r, "value", &value),
                  StringField(r, "effect", &effect),
                  {"tolerationSeconds", [&](const YAML::Node& v, const std::string& fp) {
                     seconds = r.Int(v, fp, std::numeric_limits<int64_t>::min() / 1000,
                                     std::numeric_limits<int64_t>::max() / 1000);
                   }}});
    if (!item.IsMap()) return;
    Toleration t;
    t.key = key.value.value_or("");
    t.value = value.value.value_or("");
    const std::string o = op.value.value_or("");
    const std::string e = effect.value.value_or("");
    const YAML::Node& at_op = op.Or(item);
    if (!t.key.empty())
      if (auto bad = BadLabelKey(t.key)) r.Error(key.node, ChildPath(p, "key"), *bad);
    if (o == "Exists") t.op = TolerationOperator::kExists;
    if (t.key.empty() && t.op != TolerationOperator::kExists)
      r.Error(at_op, ChildPath(p, "operator"),
              "Invalid value: " + Q(o) +
                  ": operator must be Exists when `key` is empty, which means \"match all values "
                  "and all keys\"");
    if (seconds && e != "NoExecute")
      r.Error(effect.Or(item), ChildPath(p, "effect"),
              "Invalid value: " + Q(e) +
                  ": effect must be 'NoExecute' when `tolerationSeconds` is set");
    if (o.empty() || o == "Equal") {
      if (!IsLabelValue(t.value))
        r.Error(value.node, ChildPath(p, "value"), BadLabelValue(t.value));
    } else if (o == "Exists") {
      if (!t.value.empty())
        r.Error(
            value.node, ChildPath(p, "value"),
            "Invalid value: " + Q(t.value) + ": value must be empty when `operator` is 'Exists'");
    } else {
      r.Error(at_op, ChildPath(p, "operator"), Unsupported(o, {"Equal", "Exists"}));
    }
    if (!e.empty()) {
      if (auto parsed = EffectOf(e))
        t.effect = *parsed;
      else
        r.Error(effect.node, ChildPath(p, "effect"),
                Unsupported(e, {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
    if (seconds) t.toleration_seconds = *seconds * 1000;
    out->push_back(std::move(t));
  });
}

void ReadAffinity(DocReader& r, const YAML::Node& n, const std::string& path, Pod* pod) {
  r.ReadStruct(
      n, path,
      {{"nodeAffinity",
        [&](const YAML::Node& v, const std::string& p) {
          ReadNodeAffinity(r, v, p, &pod->node_affinity);
        }},
       {"podAffinity", [&](const YAML::Node& v,
                           const std::string& p) { ReadPodAffinity(r, v, p, &pod->pod_affinity); }},
       {"podAntiAffinity", [&](const YAML::Node& v, const std::string& p) {
          ReadPodAffinity(r, v, p, &pod->pod_anti_affinity);
        }}});
}

}  // namespace arbiter::yaml
