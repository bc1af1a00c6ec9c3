// Resource names, their canonical integer units, MIG profiles, and ResourceList.
//
// Canonical units: cpu in millicores, memory / ephemeral-storage / hugepages in bytes,
// nvidia.com/gpu in milli-GPU (whole GPUs, or a fraction below one: a share of one device),
// MIG profiles, pods and every other extended resource as whole counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace arbiter {

inline constexpr std::string_view kCpu = "cpu";
inline constexpr std::string_view kMemory = "memory";
inline constexpr std::string_view kEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kPods = "pods";
inline constexpr std::string_view kGpu = "nvidia.com/gpu";

enum class ResourceKind { kCpu, kMemory, kStorage, kPods, kGpu, kMig, kHugePages, kExtended };

struct ResourceInfo {
  ResourceKind kind;
  int scale10;  // canonical unit is 10^-scale10 of the Kubernetes unit (3 = milli)
  bool is_bytes;
};

// Classifies a resource name. Fails on names that are not valid Kubernetes resource names.
Result<ResourceInfo> ClassifyResource(std::string_view name);

// A MIG profile of one GPU family. Compute slices out of 7, memory slices out of 8.
struct MigProfile {
  std::string family;   // "A100-40GB", "A100-80GB", "H100-80GB"
  std::string profile;  // "1g.10gb", "3g.40gb+me"
  int compute_slices;
  int memory_slices;
};

// All profiles known for the three families.
const std::vector<MigProfile>& KnownMigProfiles();

// The GPU family of a `nvidia.com/gpu.product` label value, if it is one of the three
// (e.g. "NVIDIA-A100-SXM4-80GB" -> "A100-80GB", "NVIDIA-H100-80GB-HBM3" -> "H100-80GB").
std::optional<std::string> GpuFamilyOfProduct(std::string_view product);

// Looks up `nvidia.com/mig-<profile>`. With a family, only that family's table is used. Without,
// a profile that exists in one family resolves to it; `1g.10gb` (present with different memory
// slices on 40GB and 80GB cards) resolves to the 80GB reading.
std::optional<MigProfile> LookupMigProfile(std::string_view resource_name,
                                           std::optional<std::string_view> family = std::nullopt);

bool IsMigResourceName(std::string_view name);

// Parses Kubernetes text into the canonical integer unit of `resource`. The message says why a
// value is refused (malformed, negative when not allowed, finer than the unit, fractional GPU
// above one, overflow).
Result<int64_t> ParseResourceQuantity(std::string_view resource, std::string_view text,
                                      bool allow_negative = false);

// Canonical Kubernetes text of an amount in the resource's canonical unit.
std::string FormatResourceQuantity(std::string_view resource, int64_t amount);

// A small map resource name -> amount, kept sorted by name (deterministic iteration).
// Absent means zero. Arithmetic is exact; overflow is a broken invariant (CHECK).
class ResourceList {
 public:
  using Entry = std::pair<std::string, int64_t>;
  ResourceList() = default;
  ResourceList(std::initializer_list<Entry> init);

  int64_t Get(std::string_view name) const;
  bool Has(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);
  void Erase(std::string_view name);
  const std::vector<Entry>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  ResourceList& operator+=(const ResourceList& o);
  ResourceList& operator-=(const ResourceList& o);
  friend ResourceList operator+(ResourceList a, const ResourceList& b) { return a += b; }
  friend ResourceList operator-(ResourceList a, const ResourceList& b) { return a -= b; }
  bool operator==(const ResourceList& o) const;

  // Every resource in *this is <= the same resource in `limit` (absent = 0).
  bool FitsIn(const ResourceList& limit) const;
  // Names of resources where *this exceeds `limit`, sorted.
  std::vector<std::string> Exceeding(const ResourceList& limit) const;
  // Component-wise max / min.
  static ResourceList Max(const ResourceList& a, const ResourceList& b);
  static ResourceList Min(const ResourceList& a, const ResourceList& b);
  bool AnyNegative() const;
  // Drops zero entries.
  void Compact();
  // `cpu=4,memory=8Gi` in canonical text.
  std::string ToString() const;

 private:
  std::vector<Entry>::iterator Find(std::string_view name);
  std::vector<Entry> entries_;
};

}  // namespace arbiter
