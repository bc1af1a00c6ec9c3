#include "server/state/pod_update.h"

#include <algorithm>

#include "adapters/json/member.h"

namespace arbiter::server {

using Json = nlohmann::json;

namespace {

constexpr const char* kForbidden =
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

using json_member::Member;

// The images of `list` (containers / initContainers) replaced by those of `old` entry by entry
// (when both are lists of the same length): an image change is then no difference.
void TakeImages(Json& spec, const Json& old, const char* list) {
  const Json& o = Member(old, list);
  if (!spec.is_object() || !spec.contains(list) || !spec[list].is_array() || !o.is_array() ||
      o.size() != spec[list].size())
    return;
  for (size_t i = 0; i < o.size(); ++i) {
    if (!spec[list][i].is_object() || !o[i].is_object()) continue;
    if (o[i].contains("image"))
      spec[list][i]["image"] = o[i]["image"];
    else
      spec[list][i].erase("image");
  }
}

void SetOrErase(Json& spec, const char* key, const Json& value) {
  if (value.is_null())
    spec.erase(key);
  else
    spec[key] = value;
}

// Every old toleration is among the new ones (tolerationSeconds aside).
bool OnlyAddedTolerations(const Json& old_list, const Json& new_list) {
  if (old_list.is_null()) return true;
  if (!old_list.is_array()) return old_list == new_list;
  for (const auto& old : old_list) {
    bool found = false;
    if (new_list.is_array())
      for (const auto& n : new_list) {
        Json a = old, b = n;
        if (a.is_object()) a.erase("tolerationSeconds");
        if (b.is_object()) b.erase("tolerationSeconds");
        if (a == b) {
          found = true;
          break;
        }
      }
    if (!found) return false;
  }
  return true;
}

// The top-level spec fields (and container fields) that differ, for the message's tail.
std::string Differences(const Json& a, const Json& b) {
  std::vector<std::string> keys;
  if (a.is_object())
    for (const auto& [k, v] : a.items()) keys.push_back(k);
  if (b.is_object())
    for (const auto& [k, v] : b.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::string out;
  for (const auto& k : keys)
    if (Member(a, k.c_str()) != Member(b, k.c_str())) out += "\n  spec." + k + ": changed";
  return out;
}

}  // namespace

std::vector<PodUpdateError> ValidatePodSpecUpdate(const Json& old_spec, const Json& new_spec) {
  std::vector<PodUpdateError> errors;
  const Json& old_deadline = Member(old_spec, "activeDeadlineSeconds");
  const Json& new_deadline = Member(new_spec, "activeDeadlineSeconds");
  if (!new_deadline.is_null()) {
    if (old_deadline.is_number_integer() && new_deadline.is_number_integer() &&
        old_deadline.get<int64_t>() < new_deadline.get<int64_t>()) {
      errors.push_back({"spec.activeDeadlineSeconds", "Invalid value: " + new_deadline.dump() +
                                                          ": must be less than or equal to "
                                                          "previous value"});
      return errors;
    }
  } else if (!old_deadline.is_null()) {
    errors.push_back({"spec.activeDeadlineSeconds",
                      "Invalid value: \"null\": must not update from a positive integer to nil "
                      "value"});
    return errors;
  }
  const Json& new_tolerations = Member(new_spec, "tolerations");
  if (!OnlyAddedTolerations(Member(old_spec, "tolerations"), new_tolerations))
    errors.push_back({"spec.tolerations",
                      "Forbidden: existing toleration can not be modified except its "
                      "tolerationSeconds"});

  // The allowed changes undone; what is left must equal the old spec.
  Json munged = new_spec.is_object() ? new_spec : Json::object();
  TakeImages(munged, old_spec, "containers");
  TakeImages(munged, old_spec, "initContainers");
  SetOrErase(munged, "activeDeadlineSeconds", old_deadline);
  SetOrErase(munged, "tolerations", Member(old_spec, "tolerations"));
  const Json& old_grace = Member(old_spec, "terminationGracePeriodSeconds");
  if (old_grace.is_number_integer() && old_grace.get<int64_t>() < 0 &&
      Member(new_spec, "terminationGracePeriodSeconds") == Json(1))
    munged["terminationGracePeriodSeconds"] = old_grace;
  const Json& old_gates = Member(old_spec, "schedulingGates");
  const Json& new_gates = Member(new_spec, "schedulingGates");
  bool only_removed = old_gates.is_array() && (new_gates.is_null() || new_gates.is_array());
  if (only_removed && new_gates.is_array())
    for (const auto& g : new_gates)
      if (std::find(old_gates.begin(), old_gates.end(), g) == old_gates.end()) only_removed = false;
  if (only_removed) SetOrErase(munged, "schedulingGates", old_gates);
  const Json old_obj = old_spec.is_object() ? old_spec : Json::object();
  if (munged != old_obj) errors.push_back({"spec", kForbidden + Differences(old_obj, munged)});
  return errors;
}

}  // namespace arbiter::server
