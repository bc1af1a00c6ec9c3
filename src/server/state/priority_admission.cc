#include "server/state/priority_admission.h"

#include "adapters/json/member.h"
#include "core/system_priority.h"

namespace arbiter::server {

namespace {

using Json = nlohmann::json;

using json_member::StringMember;

// The priority admission computes: the named class's value, or the lowest global default's, or
// 0; nullopt for a class that does not exist.
std::optional<int64_t> ComputedPriority(const std::string& cls,
                                        const std::vector<std::shared_ptr<const Json>>& classes) {
  std::optional<int64_t> computed;
  for (const auto& pc : classes) {
    const auto value = pc->find("value");
    if (value == pc->end() || !value->is_number_integer()) continue;
    const bool global = pc->contains("globalDefault") && (*pc)["globalDefault"] == true;
    const auto meta = pc->find("metadata");
    const std::string name =
        meta != pc->end() && meta->is_object() ? StringMember(*meta, "name") : "";
    if (cls.empty() ? global && (!computed || value->get<int64_t>() < *computed) : name == cls)
      computed = value->get<int64_t>();
  }
  if (!computed && cls.empty()) computed = 0;
  if (!computed) {
    if (auto system = SystemPriorityClassValue(cls)) computed = *system;
  }
  return computed;
}

}  // namespace

std::optional<std::string> PriorityAdmissionRefusal(
    const Json& pod, const std::vector<std::shared_ptr<const Json>>& classes) {
  const auto spec = pod.is_object() ? pod.find("spec") : pod.end();
  if (spec == pod.end() || !spec->is_object()) return std::nullopt;
  const auto given = spec->find("priority");
  if (given == spec->end() || !given->is_number_integer()) return std::nullopt;
  const auto computed = ComputedPriority(StringMember(*spec, "priorityClassName"), classes);
  if (!computed || given->get<int64_t>() == *computed) return std::nullopt;
  return "the integer value of priority (" + std::to_string(given->get<int64_t>()) +
         ") must not be provided in pod spec; priority admission controller computed " +
         std::to_string(*computed) + " from the given PriorityClass name";
}

}  // namespace arbiter::server
