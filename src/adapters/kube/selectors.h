// Label and field selectors of list and watch requests (?labelSelector=, ?fieldSelector=), parsed
// and matched as kube-apiserver does (k8s.io/apimachinery/pkg/labels, pkg/fields).
//
// Label selectors: comma-separated requirements, whitespace allowed around tokens:
//   key=value  key==value  key!=value  key in (v1,v2)  key notin (v1,v2)  key  !key
//   key>N  key<N (N an integer; the label must hold an integer)
// `!=` and `notin` also match objects without the label. Keys are qualified names
// ([prefix/]name: name ≤ 63 chars of [A-Za-z0-9_.-], alphanumeric at both ends; prefix a DNS
// subdomain ≤ 253), values ≤ 63 chars of the same set or empty. Errors carry kube's wording
// ("found ',', expected: identifier after '!'", "unable to parse requirement: ..."), answered
// as 400 BadRequest.
//
// Field selectors: comma-separated `field=value`, `field==value`, `field!=value` (`\,` `\=`
// `\\` escape in a value, nothing in a field; a term with neither is dropped), over the fields
// each resource supports (SupportedFields): metadata.name everywhere, metadata.namespace for
// namespaced resources, and
//   pods        spec.nodeName (or spec.host), spec.restartPolicy, spec.schedulerName,
//               spec.serviceAccountName, spec.hostNetwork, status.phase, status.podIP,
//               status.podIPs (always ""), status.nominatedNodeName
//   events      involvedObject.{kind,namespace,name,uid,apiVersion,resourceVersion,fieldPath},
//               reason, reportingComponent, source, type
//   nodes       spec.unschedulable
//   namespaces  status.phase
// Another field is refused: "field label not supported: <field>" (400 BadRequest). A field the
// object does not have is "" (so `spec.nodeName=` selects unscheduled pods). Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/resources.h"
#include "core/status.h"

namespace arbiter::kube {

struct LabelRequirement {
  enum class Op {
    kEquals,
    kNotEquals,
    kIn,
    kNotIn,
    kExists,
    kDoesNotExist,
    kGreaterThan,
    kLessThan
  };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // one for =, !=, >, <; the set for in/notin; none otherwise
  bool Matches(const nlohmann::json& labels) const;
};

struct LabelSelector {
  std::vector<LabelRequirement> requirements;  // all must match; none: everything matches
  bool Empty() const { return requirements.empty(); }
  // `labels` is metadata.labels (a JSON object of strings) or null/absent.
  bool Matches(const nlohmann::json& labels) const;
  // Of an object: its metadata.labels.
  bool MatchesObject(const nlohmann::json& object) const;
};

// kInvalidArgument with kube's message on a malformed selector.
Result<LabelSelector> ParseLabelSelector(std::string_view text);
// A metav1.LabelSelector object ({matchLabels, matchExpressions: [{key, operator: In|NotIn|
// Exists|DoesNotExist, values}]}) as PodDisruptionBudgets hold it. null selects nothing, {}
// everything (PDB semantics in policy/v1).
Result<LabelSelector> LabelSelectorFromJson(const nlohmann::json& selector);

struct FieldRequirement {
  std::string field;
  bool equals = true;  // false: !=
  std::string value;
};

struct FieldSelector {
  std::vector<FieldRequirement> requirements;
  bool Empty() const { return requirements.empty(); }
  bool Matches(const nlohmann::json& object) const;
};

// The fields `r` can be selected by (as above).
std::vector<std::string> SupportedFields(const ResourceInfo& r);
// Parses and checks every field against SupportedFields(r).
Result<FieldSelector> ParseFieldSelector(std::string_view text, const ResourceInfo& r);
// An object's value of a selectable field: strings as they are, booleans "true"/"false",
// numbers in decimal, absent "" (events' `source` is source.component).
std::string FieldValue(const nlohmann::json& object, std::string_view field);

// apimachinery's IsQualifiedName and IsValidLabelValue: their messages ("name part must be no
// more than 63 characters", ...), none when `key` / `value` is valid.
std::vector<std::string> QualifiedNameErrors(std::string_view key);
std::vector<std::string> LabelValueErrors(std::string_view value);

}  // namespace arbiter::kube
