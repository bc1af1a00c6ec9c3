#include "core/placement/node_constraints.h"

#include <algorithm>
#include <optional>
#include <string_view>

namespace arbiter::placement {

namespace {

// strconv.ParseInt(s, 10, 64): an optional sign and decimal digits, within int64.
std::optional<int64_t> ParseInt64(std::string_view s) {
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  const uint64_t limit = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  if (!neg) return static_cast<int64_t>(v);
  return v == (uint64_t{1} << 63) ? INT64_MIN : -static_cast<int64_t>(v);
}

bool Contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

}  // namespace

const char* ToString(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "";
}

const char* ToString(TolerationOperator o) {
  return o == TolerationOperator::kExists ? "Exists" : "Equal";
}

const char* ToString(NodeSelectorOperator o) {
  switch (o) {
    case NodeSelectorOperator::kIn:
      return "In";
    case NodeSelectorOperator::kNotIn:
      return "NotIn";
    case NodeSelectorOperator::kExists:
      return "Exists";
    case NodeSelectorOperator::kDoesNotExist:
      return "DoesNotExist";
    case NodeSelectorOperator::kGt:
      return "Gt";
    case NodeSelectorOperator::kLt:
      return "Lt";
  }
  return "";
}

bool ToleratesTaint(const Toleration& t, const Taint& taint) {
  if (t.effect && *t.effect != taint.effect) return false;
  if (!t.key.empty() && t.key != taint.key) return false;
  return t.op == TolerationOperator::kExists || t.value == taint.value;
}

bool TolerationsTolerate(const std::vector<Toleration>& tolerations, const Taint& taint) {
  for (const Toleration& t : tolerations)
    if (ToleratesTaint(t, taint)) return true;
  return false;
}

const Taint* FirstUntoleratedTaint(const std::vector<Taint>& taints,
                                   const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (!TolerationsTolerate(tolerations, taint)) return &taint;
  }
  return nullptr;
}

bool ToleratesUnschedulable(const std::vector<Toleration>& tolerations) {
  return TolerationsTolerate(tolerations,
                             Taint{kUnschedulableTaintKey, "", TaintEffect::kNoSchedule});
}

int64_t CountIntolerablePreferNoSchedule(const std::vector<Taint>& taints,
                                         const std::vector<Toleration>& tolerations) {
  int64_t n = 0;
  for (const Taint& taint : taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = false;
    for (const Toleration& t : tolerations)
      if ((!t.effect || *t.effect == TaintEffect::kPreferNoSchedule) && ToleratesTaint(t, taint))
        tolerated = true;
    if (!tolerated) ++n;
  }
  return n;
}

bool HasHardTaint(const std::vector<Taint>& taints) {
  return std::any_of(taints.begin(), taints.end(),
                     [](const Taint& t) { return t.effect != TaintEffect::kPreferNoSchedule; });
}

bool HasPreferTaint(const std::vector<Taint>& taints) {
  return std::any_of(taints.begin(), taints.end(),
                     [](const Taint& t) { return t.effect == TaintEffect::kPreferNoSchedule; });
}

std::string TaintText(const Taint& taint) { return "{" + taint.key + ": " + taint.value + "}"; }

bool RequirementMatches(const NodeSelectorRequirement& r,
                        const std::map<std::string, std::string>& labels) {
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  switch (r.op) {
    case NodeSelectorOperator::kIn:
      return has && Contains(r.values, it->second);
    case NodeSelectorOperator::kNotIn:
      return !has || !Contains(r.values, it->second);
    case NodeSelectorOperator::kExists:
      return has;
    case NodeSelectorOperator::kDoesNotExist:
      return !has;
    case NodeSelectorOperator::kGt:
    case NodeSelectorOperator::kLt: {
      if (!has || r.values.size() != 1) return false;
      const auto node_value = ParseInt64(it->second);
      const auto want = ParseInt64(r.values[0]);
      if (!node_value || !want) return false;
      return r.op == NodeSelectorOperator::kGt ? *node_value > *want : *node_value < *want;
    }
  }
  return false;
}

bool TermMatches(const NodeSelectorTerm& t, const std::map<std::string, std::string>& labels,
                 const std::string& node_name) {
  if (t.match_expressions.empty() && t.match_fields.empty()) return false;
  for (const auto& r : t.match_expressions)
    if (!RequirementMatches(r, labels)) return false;
  for (const auto& r : t.match_fields) {
    // metadata.name with one value (validation refuses the rest; a term it would refuse never
    // matches, as kube-scheduler's parse errors make it).
    if (r.key != kNodeNameField || r.values.size() != 1) return false;
    if (r.op == NodeSelectorOperator::kIn && node_name != r.values[0]) return false;
    if (r.op == NodeSelectorOperator::kNotIn && node_name == r.values[0]) return false;
    if (r.op != NodeSelectorOperator::kIn && r.op != NodeSelectorOperator::kNotIn) return false;
  }
  return true;
}

bool RequiredAffinityMatches(const std::map<std::string, std::string>& node_selector,
                             const NodeAffinity& affinity,
                             const std::map<std::string, std::string>& labels,
                             const std::string& node_name) {
  for (const auto& [k, v] : node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  if (!affinity.required) return true;
  for (const NodeSelectorTerm& t : *affinity.required)
    if (TermMatches(t, labels, node_name)) return true;
  return false;
}

int64_t PreferredAffinityScore(const NodeAffinity& affinity,
                               const std::map<std::string, std::string>& labels,
                               const std::string& node_name) {
  int64_t score = 0;
  for (const PreferredSchedulingTerm& t : affinity.preferred)
    if (t.weight != 0 && TermMatches(t.preference, labels, node_name)) score += t.weight;
  return score;
}

void NormalizeScores(std::vector<int64_t>& scores, bool reverse) {
  int64_t max = 0;
  for (int64_t s : scores) max = std::max(max, s);
  if (max == 0) {
    if (reverse) std::fill(scores.begin(), scores.end(), kMaxNodeScore);
    return;
  }
  for (int64_t& s : scores) {
    s = kMaxNodeScore * s / max;
    if (reverse) s = kMaxNodeScore - s;
  }
}

}  // namespace arbiter::placement
