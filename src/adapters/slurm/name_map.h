// How Slurm names and Arbiter names correspond: accounts <-> namespaces, gres types <-> GPU
// models. Built from the policy (every namespace maps to ToSlurmName(namespace), every GPU
// product to GresTypeOfProduct(product)) and overridden by an explicit map file
// (`--account-map FILE`), a YAML document:
//
//   accounts:            # Slurm account: Kubernetes namespace
//     vision_lab: team-a
//   gpuTypes:            # Slurm gres type: GPU product label (nvidia.com/gpu.product) or MIG
//   resource
//     h100: NVIDIA-H100-80GB-HBM3
//     1g.10gb: nvidia.com/mig-1g.10gb
//
// Keys must be valid Slurm names (slurm_names.h); a namespace or product may appear once.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace arbiter::slurm {

class NameMap {
 public:
  // Parses the map file's text (`file` names it in messages: FILE:LINE: ...).
  static Result<NameMap> Parse(const std::string& text, const std::string& file);
  static Result<NameMap> Load(const std::string& path);

  // Explicit entries.
  const std::map<std::string, std::string>& accounts() const { return accounts_; }
  const std::map<std::string, std::string>& gpu_types() const { return gpu_types_; }

  // Adds the default mapping of a policy's namespace / GPU product / MIG resource, unless an
  // explicit entry already covers it. Fails when the default name is taken by another name.
  Status AddNamespace(const std::string& ns);
  Status AddGpuProduct(const std::string& product);
  Status AddMigResource(const std::string& resource);

  // Export direction.
  std::string AccountOf(const std::string& ns) const;
  std::string GresTypeOf(const std::string& product_or_mig) const;
  // Import direction: the namespace of an account (nullopt when neither explicit nor known from
  // the policy), the product or MIG resource of a gres type.
  std::optional<std::string> NamespaceOf(const std::string& account) const;
  std::optional<std::string> ProductOf(const std::string& gres_type) const;

 private:
  std::map<std::string, std::string> accounts_;   // account -> namespace (explicit)
  std::map<std::string, std::string> gpu_types_;  // gres type -> product / MIG resource (explicit)
  std::map<std::string, std::string> account_of_, ns_of_;  // effective, both directions
  std::map<std::string, std::string> type_of_, product_of_;
};

}  // namespace arbiter::slurm
