#include "adapters/slurm/slurm_names.h"

#include "core/resources.h"

namespace arbiter::slurm {

namespace {

bool SafeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool IsValidSlurmName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSlurmName) return false;
  if (name[0] == '_' || name[0] == '-') return false;
  for (char c : name)
    if (!SafeChar(c)) return false;
  return true;
}

std::string ToSlurmName(std::string_view name) {
  std::string s;
  s.reserve(name.size() + 1);
  // A name must start with a letter or digit: "x" goes in front otherwise (appending only; GCC 12
  // reports a false -Wrestrict overlap for an insert at the front).
  const char first = name.empty() ? '_' : Lower(name[0]);
  if (!SafeChar(first) || first == '_' || first == '-') s += 'x';
  for (char c : name) {
    char l = Lower(c);
    s += SafeChar(l) ? l : '_';
  }
  if (s.size() > kMaxSlurmName) s.resize(kMaxSlurmName);
  return s;
}

bool IsValidGresType(std::string_view type) {
  if (type.empty() || type.size() > kMaxSlurmName) return false;
  for (char c : type)
    if (!SafeChar(c) && c != '.') return false;
  return true;
}

std::string GresTypeOfProduct(std::string_view product) {
  std::string lower;
  for (char c : product) lower += Lower(c);
  std::string_view v = lower;
  if (v.substr(0, 7) == "nvidia-") v.remove_prefix(7);
  return ToSlurmName(v);
}

std::string GresTypeOfMig(std::string_view mig_resource) {
  std::string_view v = mig_resource;
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  if (v.substr(0, kPrefix.size()) == kPrefix) v.remove_prefix(kPrefix.size());
  std::string s;
  for (char c : v) {
    char l = Lower(c);
    s += (SafeChar(l) || l == '.') ? l : '_';
  }
  if (s.empty()) s.push_back('x');
  if (s.size() > kMaxSlurmName) s.resize(kMaxSlurmName);
  return s;
}

std::optional<std::string> MigResourceOfGresType(std::string_view gres_type) {
  for (const MigProfile& p : KnownMigProfiles()) {
    std::string resource = "nvidia.com/mig-" + p.profile;
    if (GresTypeOfMig(resource) == gres_type) return resource;
  }
  return std::nullopt;
}

}  // namespace arbiter::slurm
