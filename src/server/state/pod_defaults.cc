#include "server/state/pod_defaults.h"

#include <string>

namespace arbiter::server {

using Json = nlohmann::json;

namespace {

// `spec.containers` and `spec.initContainers` with kube's words for them ("container",
// "init container"), each an array (or absent).
struct ContainerList {
  const char* field;
  const char* word;
};
constexpr ContainerList kLists[] = {{"containers", "container"},
                                    {"initContainers", "init container"}};

Json* ListOf(Json& pod, const char* field) {
  if (!pod.is_object()) return nullptr;
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return nullptr;
  auto list = spec->find(field);
  if (list == spec->end() || !list->is_array()) return nullptr;
  return &*list;
}

// The container's resources.<which> object, made when absent or null; null when the container or
// its resources are not objects (validation refuses those).
Json* ResourcesOf(Json& container, const char* which) {
  if (!container.is_object()) return nullptr;
  Json& resources = container["resources"];
  if (resources.is_null()) resources = Json::object();
  if (!resources.is_object()) return nullptr;
  Json& set = resources[which];
  if (set.is_null()) set = Json::object();
  return set.is_object() ? &set : nullptr;
}

// A quantity as written in the LimitRange (a number as its JSON text).
Json QuantityText(const Json& v) { return v.is_string() ? v : Json(v.dump()); }

// The defaults one LimitRange gives a container, as its stored text: kube's
// SetDefaults_LimitRangeItem (default <- max; defaultRequest <- default <- min) and
// defaultContainerResourceRequirements (a later Container item overrides an earlier one).
void ContainerDefaults(const Json& lr, Json& limits, Json& requests) {
  const Json* items = nullptr;
  if (auto spec = lr.find("spec"); spec != lr.end() && spec->is_object())
    if (auto l = spec->find("limits"); l != spec->end() && l->is_array()) items = &*l;
  if (!items) return;
  auto member = [](const Json& item, const char* key) {
    auto it = item.find(key);
    return it != item.end() && it->is_object() ? *it : Json::object();
  };
  for (const Json& item : *items) {
    if (!item.is_object() || item.value("type", Json()) != "Container") continue;
    Json def = member(item, "default"), defreq = member(item, "defaultRequest");
    const Json max = member(item, "max"), min = member(item, "min");
    for (const auto& [r, v] : max.items())
      if (!def.contains(r)) def[r] = v;
    for (const auto& [r, v] : def.items())
      if (!defreq.contains(r)) defreq[r] = v;
    for (const auto& [r, v] : min.items())
      if (!defreq.contains(r)) defreq[r] = v;
    for (const auto& [r, v] : defreq.items()) requests[r] = QuantityText(v);
    for (const auto& [r, v] : def.items()) limits[r] = QuantityText(v);
  }
}

// Sets each of `defaults` that `set` lacks; the names set, in order ("cpu, memory").
std::string Merge(Json& set, const Json& defaults) {
  std::string names;
  for (const auto& [r, v] : defaults.items()) {
    if (set.contains(r)) continue;
    set[r] = v;
    names += (names.empty() ? "" : ", ") + r;
  }
  return names;
}

// One LimitRange's mutation (kube's mergePodResourceRequirements): its annotation's parts.
std::string MergeOne(Json& pod, const Json& lr) {
  Json limits = Json::object(), requests = Json::object();
  ContainerDefaults(lr, limits, requests);
  if (limits.empty() && requests.empty()) return "";
  std::string parts;
  auto note = [&](const std::string& names, const char* what, const char* word, const Json& c) {
    if (names.empty()) return;
    const Json& name = c.contains("name") ? c["name"] : Json();
    parts += (parts.empty() ? "" : "; ") + names + " " + what + " for " + word + " " +
             (name.is_string() ? name.get<std::string>() : std::string());
  };
  for (const ContainerList& l : kLists) {
    Json* list = ListOf(pod, l.field);
    if (!list) continue;
    for (Json& c : *list) {
      Json* lim = ResourcesOf(c, "limits");
      Json* req = lim ? ResourcesOf(c, "requests") : nullptr;
      if (!lim || !req) continue;
      // (kube sets limits first, then requests, and lists requests first)
      const std::string set_limits = Merge(*lim, limits);
      const std::string set_requests = Merge(*req, requests);
      note(set_requests, "request", l.word, c);
      note(set_limits, "limit", l.word, c);
      Json& resources = c["resources"];  // no empty members left behind
      for (const char* which : {"limits", "requests"})
        if (resources[which].empty()) resources.erase(which);
    }
  }
  return parts;
}

}  // namespace

bool DefaultRequestsFromLimits(Json& pod) {
  bool changed = false;
  for (const ContainerList& l : kLists) {
    Json* list = ListOf(pod, l.field);
    if (!list) continue;
    for (Json& c : *list) {
      if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
      Json& resources = c["resources"];
      if (!resources.contains("limits") || !resources["limits"].is_object() ||
          resources["limits"].empty())
        continue;
      if (resources.contains("requests") && !resources["requests"].is_object() &&
          !resources["requests"].is_null())
        continue;
      Json& requests = resources["requests"];
      if (requests.is_null()) requests = Json::object();
      for (const auto& [r, v] : resources["limits"].items())
        if (!requests.contains(r)) {
          requests[r] = v;
          changed = true;
        }
    }
  }
  return changed;
}

bool ApplyLimitRangeDefaults(Json& pod, const std::vector<const Json*>& ranges) {
  std::string annotation;
  for (const Json* lr : ranges)
    if (std::string parts = MergeOne(pod, *lr); !parts.empty()) annotation = std::move(parts);
  if (annotation.empty()) return false;
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return true;  // (refused before this)
  Json& annotations = (*meta)["annotations"];
  if (annotations.is_null()) annotations = Json::object();
  if (annotations.is_object())
    annotations["kubernetes.io/limit-ranger"] = "LimitRanger plugin set: " + annotation;
  return true;
}

}  // namespace arbiter::server
