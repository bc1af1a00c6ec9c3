#include "core/resources.h"

#include <algorithm>
#include <limits>

#include "core/quantity.h"
#include "core/text.h"

namespace arbiter {
namespace {

bool IsDnsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

bool ValidQualifiedName(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 >= name.size()) return false;
  std::string_view prefix = name.substr(0, slash);
  std::string_view local = name.substr(slash + 1);
  if (local.find('/') != std::string_view::npos) return false;
  if (!std::all_of(prefix.begin(), prefix.end(), IsDnsLabelChar)) return false;
  if (prefix.front() == '-' || prefix.front() == '.' || prefix.back() == '-' ||
      prefix.back() == '.')
    return false;
  if (local.size() > 63 || !std::all_of(local.begin(), local.end(), IsNameChar)) return false;
  return true;
}

struct Family {
  const char* name;
  std::vector<std::pair<const char*, std::pair<int, int>>> profiles;
};

const std::vector<Family>& Families() {
  static const std::vector<Family> kFamilies = {
      {"A100-40GB",
       {{"1g.5gb", {1, 1}},
        {"1g.5gb+me", {1, 1}},
        {"1g.10gb", {1, 2}},
        {"2g.10gb", {2, 2}},
        {"3g.20gb", {3, 4}},
        {"4g.20gb", {4, 4}},
        {"7g.40gb", {7, 8}}}},
      {"A100-80GB",
       {{"1g.10gb", {1, 1}},
        {"1g.10gb+me", {1, 1}},
        {"1g.20gb", {1, 2}},
        {"2g.20gb", {2, 2}},
        {"3g.40gb", {3, 4}},
        {"4g.40gb", {4, 4}},
        {"7g.80gb", {7, 8}}}},
      {"H100-80GB",
       {{"1g.10gb", {1, 1}},
        {"1g.10gb+me", {1, 1}},
        {"1g.20gb", {1, 2}},
        {"2g.20gb", {2, 2}},
        {"3g.40gb", {3, 4}},
        {"4g.40gb", {4, 4}},
        {"7g.80gb", {7, 8}}}},
  };
  return kFamilies;
}

constexpr std::string_view kMigPrefix = "nvidia.com/mig-";

}  // namespace

bool IsMigResourceName(std::string_view name) {
  return name.size() > kMigPrefix.size() && name.substr(0, kMigPrefix.size()) == kMigPrefix;
}

const std::vector<MigProfile>& KnownMigProfiles() {
  static const std::vector<MigProfile> kAll = [] {
    std::vector<MigProfile> v;
    for (const auto& f : Families())
      for (const auto& p : f.profiles)
        v.push_back({f.name, p.first, p.second.first, p.second.second});
    return v;
  }();
  return kAll;
}

std::optional<std::string> GpuFamilyOfProduct(std::string_view product) {
  std::string p(product);
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::toupper(c); });
  bool a100 = p.find("A100") != std::string::npos;
  bool h100 = p.find("H100") != std::string::npos;
  bool m80 = p.find("80GB") != std::string::npos;
  bool m40 = p.find("40GB") != std::string::npos;
  if (h100 && (m80 || !m40)) return std::string("H100-80GB");
  if (a100 && m80) return std::string("A100-80GB");
  if (a100 && m40) return std::string("A100-40GB");
  if (a100) return std::string("A100-40GB");
  return std::nullopt;
}

std::optional<MigProfile> LookupMigProfile(std::string_view resource_name,
                                           std::optional<std::string_view> family) {
  if (!IsMigResourceName(resource_name)) return std::nullopt;
  std::string_view profile = resource_name.substr(kMigPrefix.size());
  const MigProfile* first = nullptr;
  const MigProfile* eighty = nullptr;
  for (const auto& p : KnownMigProfiles()) {
    if (p.profile != profile) continue;
    if (family) {
      if (p.family == *family) return p;
      continue;
    }
    if (!first) first = &p;
    if (!eighty && p.family.find("80GB") != std::string::npos) eighty = &p;
  }
  if (family) return std::nullopt;
  if (eighty) return *eighty;
  if (first) return *first;
  return std::nullopt;
}

Result<ResourceInfo> ClassifyResource(std::string_view name) {
  if (name == kCpu) return ResourceInfo{ResourceKind::kCpu, 3, false};
  if (name == kMemory) return ResourceInfo{ResourceKind::kMemory, 0, true};
  if (name == kEphemeralStorage || name == "storage")
    return ResourceInfo{ResourceKind::kStorage, 0, true};
  if (name == kPods) return ResourceInfo{ResourceKind::kPods, 0, false};
  if (name.substr(0, 10) == "hugepages-" && name.size() > 10)
    return ResourceInfo{ResourceKind::kHugePages, 0, true};
  if (name == kGpu) return ResourceInfo{ResourceKind::kGpu, 3, false};
  if (IsMigResourceName(name) && ValidQualifiedName(name))
    return ResourceInfo{ResourceKind::kMig, 0, false};
  if (ValidQualifiedName(name)) {
    if (name.find("kubernetes.io/") != std::string_view::npos)
      return Result<ResourceInfo>::Error("resource name \"" + std::string(name) +
                                         "\" uses a reserved kubernetes.io prefix");
    return ResourceInfo{ResourceKind::kExtended, 0, false};
  }
  return Result<ResourceInfo>::Error(
      "unknown resource \"" + std::string(name) +
      "\" (standard resources are cpu, memory, ephemeral-storage, pods, hugepages-<size>; "
      "extended resources need a domain prefix such as nvidia.com/gpu)");
}

Result<int64_t> ParseResourceQuantity(std::string_view resource, std::string_view text,
                                      bool allow_negative) {
  auto info = ClassifyResource(resource);
  if (!info.ok()) return info.status();
  auto q = ParseQuantity(text);
  if (!q.ok()) return q.status();
  if (q->negative && !allow_negative)
    return Result<int64_t>::Error("quantity \"" + Echo(text) + "\" for " + std::string(resource) +
                                  " must not be negative");
  auto v = q->ToScaled(info->scale10);
  if (!v.ok()) {
    std::string unit;
    switch (info->kind) {
      case ResourceKind::kCpu:
        unit = "one millicore (1m)";
        break;
      case ResourceKind::kGpu:
        unit = "one thousandth of a GPU (1m)";
        break;
      case ResourceKind::kMemory:
      case ResourceKind::kStorage:
      case ResourceKind::kHugePages:
        unit = "one byte";
        break;
      default:
        unit = "a whole count";
        break;
    }
    if (v.message().find("precision") != std::string::npos)
      return Result<int64_t>::Error("quantity \"" + Echo(text) + "\" for " + std::string(resource) +
                                    " is finer than " + unit +
                                    "; it cannot be represented exactly");
    return Result<int64_t>::Error("quantity \"" + Echo(text) + "\" for " + std::string(resource) +
                                  ": " + v.message());
  }
  if (info->kind == ResourceKind::kGpu && *v > 1000 && *v % 1000 != 0)
    return Result<int64_t>::Error(
        "quantity \"" + Echo(text) +
        "\" for nvidia.com/gpu: a GPU request is a whole number of GPUs or a fraction below one "
        "(a share of a single device)");
  return v;
}

std::string FormatResourceQuantity(std::string_view resource, int64_t amount) {
  auto info = ClassifyResource(resource);
  if (!info.ok()) return FormatCount(amount);
  if (info->scale10 == 3) return FormatMillis(amount);
  if (info->is_bytes) return FormatBytes(amount);
  return FormatCount(amount);
}

// ---------------------------------------------------------------- ResourceList

ResourceList::ResourceList(std::initializer_list<Entry> init) {
  for (const auto& e : init) Set(e.first, Get(e.first) + e.second);
}

std::vector<ResourceList::Entry>::iterator ResourceList::Find(std::string_view name) {
  return std::lower_bound(entries_.begin(), entries_.end(), name,
                          [](const Entry& e, std::string_view n) { return e.first < n; });
}

int64_t ResourceList::Get(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, std::string_view n) { return e.first < n; });
  return (it != entries_.end() && it->first == name) ? it->second : 0;
}

bool ResourceList::Has(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const Entry& e, std::string_view n) { return e.first < n; });
  return it != entries_.end() && it->first == name;
}

void ResourceList::Set(std::string_view name, int64_t amount) {
  auto it = Find(name);
  if (it != entries_.end() && it->first == name) {
    it->second = amount;
  } else {
    entries_.insert(it, Entry(std::string(name), amount));
  }
}

void ResourceList::Erase(std::string_view name) {
  auto it = Find(name);
  if (it != entries_.end() && it->first == name) entries_.erase(it);
}

ResourceList& ResourceList::operator+=(const ResourceList& o) {
  for (const auto& [k, v] : o.entries_) {
    int64_t r;
    ARB_CHECK_MSG(!__builtin_add_overflow(Get(k), v, &r), "resource overflow on " + k);
    Set(k, r);
  }
  return *this;
}

ResourceList& ResourceList::operator-=(const ResourceList& o) {
  for (const auto& [k, v] : o.entries_) {
    int64_t r;
    ARB_CHECK_MSG(!__builtin_sub_overflow(Get(k), v, &r), "resource overflow on " + k);
    Set(k, r);
  }
  return *this;
}

bool ResourceList::operator==(const ResourceList& o) const {
  ResourceList a = *this, b = o;
  a.Compact();
  b.Compact();
  return a.entries_ == b.entries_;
}

bool ResourceList::FitsIn(const ResourceList& limit) const {
  for (const auto& [k, v] : entries_)
    if (v > limit.Get(k)) return false;
  return true;
}

std::vector<std::string> ResourceList::Exceeding(const ResourceList& limit) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries_)
    if (v > limit.Get(k)) out.push_back(k);
  return out;
}

ResourceList ResourceList::Max(const ResourceList& a, const ResourceList& b) {
  ResourceList r = a;
  for (const auto& [k, v] : b.entries_) r.Set(k, std::max(r.Get(k), v));
  return r;
}

ResourceList ResourceList::Min(const ResourceList& a, const ResourceList& b) {
  ResourceList r;
  for (const auto& [k, v] : a.entries_) r.Set(k, std::min(v, b.Get(k)));
  for (const auto& [k, v] : b.entries_)
    if (!a.Has(k)) r.Set(k, std::min<int64_t>(0, v));
  return r;
}

bool ResourceList::AnyNegative() const {
  for (const auto& e : entries_)
    if (e.second < 0) return true;
  return false;
}

void ResourceList::Compact() {
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [](const Entry& e) { return e.second == 0; }),
                 entries_.end());
}

std::string ResourceList::ToString() const {
  std::string s;
  for (const auto& [k, v] : entries_) {
    if (!s.empty()) s += ",";
    s += k + "=" + FormatResourceQuantity(k, v);
  }
  return s;
}

}  // namespace arbiter
