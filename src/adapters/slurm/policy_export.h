// `arbiter slurm export`: one Arbiter policy (the manifests' PoolPolicy, QoS or PriorityClass
// tiers, Namespaces, ResourceQuotas, ElasticQuotas, PriceBook, Nodes) as what a Slurm 22.05 admin
// applies:
//
//  - a bash script of idempotent `sacctmgr -i` commands: QoS (Priority, Preempt, PreemptMode,
//    GraceTime, UsageFactor), accounts (one per namespace, a parent account per ElasticQuota
//    cohort) with their association limits (GrpTRES, GrpJobs / GrpSubmitJobs) and allowed QoS,
//    and optionally user associations. Every object is added only when missing, then set, so
//    running the script again changes nothing;
//  - a slurm.conf fragment (PriorityType/weights, PreemptType=preempt/qos, PreemptMode,
//    PreemptExemptTime, JobRequeue, JobAcctGatherType/Frequency, AccountingStorageEnforce,
//    AccountingStorageTRES with the GPU gres types, PartitionName=DEFAULT TRESBillingWeights from
//    the PriceBook).
// Every line says where it came from (FILE:LINE Kind/name field). Whatever the policy says that
// Slurm cannot express is a warning Diagnostic naming the field, in `arbiter validate`'s format.
// The mapping is in docs/slurm.md. Pure: no I/O, no clock (the PriceBook instant is an input).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/slurm/name_map.h"
#include "core/diagnostics.h"
#include "core/objects.h"
#include "core/validation.h"

namespace arbiter::slurm {

struct ExportOptions {
  std::string cluster;             // sacctmgr Cluster= (empty: every cluster in the database)
  std::vector<std::string> users;  // user associations to add under every namespace account
  Millis price_at = 0;             // the PriceBook version in force at this instant is exported
  std::string source_label;        // "policy.yaml" for the generated headers
  std::string generator = "arbiter slurm export";
};

// Billing TRES unit: Slurm's billing counts thousandths of the PriceBook currency per hour.
inline constexpr int64_t kBillingUnitsPerCurrency = 1000;

struct ExportResult {
  std::string sacctmgr_script;  // bash, idempotent
  std::string slurm_conf;   // fragment for slurm.conf (Include it before the PartitionName lines)
  Diagnostics diagnostics;  // warnings (cannot be expressed) and errors (cannot export)
  // Summary for the CLI.
  int qos_count = 0, account_count = 0, user_count = 0;
  bool ok() const { return !diagnostics.HasErrors(); }
};

// `locator` (from the manifest load) gives field lines; may be null (object lines are used).
ExportResult ExportPolicy(const ManifestSet& set, const SourceLocator* locator, NameMap names,
                          const ExportOptions& opts);

// The Slurm QoS name of an Arbiter QoS or PriorityClass (ToSlurmName); exposed for the importer.
std::string QosNameOf(const std::string& arbiter_name);

}  // namespace arbiter::slurm
