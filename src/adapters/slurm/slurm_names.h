// Names of Slurm objects (accounts, QoS, gres types) made from Arbiter names, and back.
//
// Slurm 22.05 itself checks almost nothing: sacctmgr lowercases every name and splits lists on
// commas, `Preempt=` lists and TRES strings are comma- and '='-separated, and the database column
// is a 255-byte tinytext, so an account called "a b" is accepted and then breaks every script
// that handles it. Arbiter keeps to a safe subset:
//
//   lowercase ASCII letters, digits, '_' and '-'; first character a letter or digit;
//   at most kMaxSlurmName (64) characters.
//
// Mapping (deterministic, documented in docs/slurm.md): lowercase; every other character
// becomes '_'; a leading '_' or '-' gets an "x" in front; the result is cut to 64 characters.
// Kubernetes namespace names (DNS labels) always map to themselves. Two Arbiter names that map
// to one Slurm name, or a name that maps to a reserved one ("root" for accounts), are errors for
// the caller to report; an explicit map (--account-map) resolves them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::slurm {

inline constexpr size_t kMaxSlurmName = 64;

// True when `name` is already a valid Slurm name under the rule above.
bool IsValidSlurmName(std::string_view name);

// The Slurm name of an Arbiter name (namespace, cohort, QoS, PriorityClass). Empty input gives
// "x".
std::string ToSlurmName(std::string_view name);

// The gres type of a GPU model: the product label (nvidia.com/gpu.product) lowercased, a leading
// "nvidia-" dropped, then ToSlurmName: "NVIDIA-H100-80GB-HBM3" -> "h100-80gb-hbm3".
// A MIG resource name "nvidia.com/mig-1g.10gb" gives its profile with '.' kept ("1g.10gb"), as
// NVIDIA's MIG device names go; Slurm type strings allow '.'.
std::string GresTypeOfProduct(std::string_view product);
std::string GresTypeOfMig(std::string_view mig_resource);
// The MIG resource whose gres type GresTypeOfMig writes as `gres_type` ("1g.10gb" ->
// "nvidia.com/mig-1g.10gb", "1g.10gb_me" -> "nvidia.com/mig-1g.10gb+me"), for the known MIG
// profiles; nullopt for any other type.
std::optional<std::string> MigResourceOfGresType(std::string_view gres_type);

// True for gres type text Slurm accepts in `gres/gpu:TYPE` (letters, digits, '_', '-', '.').
bool IsValidGresType(std::string_view type);

}  // namespace arbiter::slurm
