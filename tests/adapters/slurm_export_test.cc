// `arbiter slurm export`: the policy -> sacctmgr commands and slurm.conf mapping, rule by rule
// (docs/slurm.md). The live check that Slurm accepts the output is
// tests/integration/slurm_conformance_test.cc.
#include <gtest/gtest.h>

#include <sstream>

#include "adapters/slurm/policy_export.h"
#include "adapters/yaml/manifest_loader.h"

namespace arbiter::slurm {
namespace {

std::string Src(const std::string& rel) { return std::string(ARBITER_SOURCE_DIR) + "/" + rel; }

struct Exported {
  ExportResult r;
  std::vector<std::string> warnings;  // Diagnostic::ToString()
};

Exported ExportLoad(yaml::ManifestLoad load, ExportOptions opts = {}) {
  EXPECT_TRUE(load.ok());
  for (const auto& d : load.diagnostics.items)
    if (d.severity == Severity::kError) ADD_FAILURE() << d.ToString();
  if (opts.source_label.empty()) opts.source_label = "policy.yaml";
  if (opts.price_at == 0) opts.price_at = 1772323200000;  // 2026-03-01
  Exported e{ExportPolicy(load.set, &load.locator, NameMap(), opts), {}};
  for (const auto& d : e.r.diagnostics.items) e.warnings.push_back(d.ToString());
  return e;
}

Exported ExportText(const std::string& yaml, ExportOptions opts = {}) {
  yaml::ManifestLoad load;
  yaml::LoadManifestText(yaml, "policy.yaml", &load);
  ValidateManifestSet(load.set, &load.locator, &load.diagnostics);
  return ExportLoad(std::move(load), opts);
}

Exported ExportRich(ExportOptions opts = {}) {
  return ExportLoad(yaml::LoadManifestFiles({Src("tests/data/slurm/export-policy.yaml")}), opts);
}

bool HasLine(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (l == line) return true;
  return false;
}

bool HasWarning(const Exported& e, const std::string& needle) {
  for (const auto& w : e.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

TEST(SlurmExport, QosCarriesPriorityPreemptListModeGraceAndUsageFactor) {
  Exported e = ExportRich();
  ASSERT_TRUE(e.r.ok());
  const std::string& s = e.r.sacctmgr_script;
  EXPECT_TRUE(HasLine(s, "has_qos urgent || $SACCTMGR -i add qos urgent")) << s;
  EXPECT_TRUE(
      HasLine(s,
              "$SACCTMGR -i modify qos where name=urgent set Priority=10000 PreemptMode=cluster "
              "GraceTime=60 UsageFactor=1"))
      << s;
  EXPECT_TRUE(HasLine(s, "set_preempt urgent \"batch,scavenger\"")) << s;
  EXPECT_TRUE(
      HasLine(s,
              "$SACCTMGR -i modify qos where name=batch set Priority=5000 PreemptMode=requeue "
              "GraceTime=90 UsageFactor=1"))
      << s;
  // No graceTime: a Pod's default terminationGracePeriodSeconds, which Arbiter applies then.
  EXPECT_TRUE(
      HasLine(s,
              "$SACCTMGR -i modify qos where name=scavenger set Priority=1000 PreemptMode=cluster "
              "GraceTime=30 UsageFactor=1"))
      << s;
  EXPECT_EQ(e.r.qos_count, 3);
}

TEST(SlurmExport, EveryQosIsAddedBeforeAnyPreemptListNamesIt) {
  Exported e = ExportRich();
  const std::string& s = e.r.sacctmgr_script;
  const size_t last_add = s.rfind("-i add qos");
  const size_t first_preempt = s.find("set_preempt ");
  const size_t first_preempt_call = s.find("\nset_preempt ");
  ASSERT_NE(first_preempt, std::string::npos);
  EXPECT_LT(last_add, first_preempt_call);
}

// Issue 29: the GRES TRES the limits name are checked (and waited for) first, before the script
// changes anything: on a cluster that has not registered them it changes nothing.
TEST(SlurmExport, GresTresAreCheckedBeforeAnyChange) {
  Exported e = ExportRich();
  const std::string& s = e.r.sacctmgr_script;
  const size_t check = s.find("\nneed_tres gres/gpu ");
  ASSERT_NE(check, std::string::npos) << s;
  const std::string line = s.substr(check + 1, s.find('\n', check + 1) - check - 1);
  EXPECT_NE(line.find(" gres/gpu:1g.10gb"), std::string::npos) << line;  // the MIG profile
  for (const char* change : {"\nhas_qos ", "\n$SACCTMGR -i modify", "\nhas_account ",
                             "\nset_parent ", "\nset_preempt "}) {
    ASSERT_NE(s.find(change), std::string::npos) << change;
    EXPECT_LT(check, s.find(change)) << change;
  }
  EXPECT_NE(s.find("${TRES_WAIT:-60}"), std::string::npos);
}

TEST(SlurmExport, ScriptIsIdempotentByConstruction) {
  ExportOptions opts;
  opts.cluster = "prod";
  opts.users = {"alice"};
  Exported e = ExportRich(opts);
  const std::string& s = e.r.sacctmgr_script;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) {
    if (l.find("-i add ") != std::string::npos && l.rfind("  ", 0) != 0) {
      EXPECT_NE(l.find(" || $SACCTMGR -i add "), std::string::npos)
          << "an add without its existence check: " << l;
    }
    // sacctmgr 22.05 breaks its QoS cache on an empty Preempt=; an unchanged Parent= fails a
    // modify.
    if (l.rfind("#", 0) != 0) {
      EXPECT_EQ(l.find("Preempt= "), std::string::npos) << l;
    }
    if (l.find("modify account") != std::string::npos &&
        l.find("set_parent") == std::string::npos && l.rfind("  ", 0) != 0) {
      EXPECT_EQ(l.find("Parent="), std::string::npos) << l;
    }
  }
  EXPECT_TRUE(HasLine(s, "CLUSTER=prod")) << s;
  EXPECT_TRUE(HasLine(s,
                      "has_user alice vision || $SACCTMGR -i add user alice Account=vision "
                      "${CLUSTER:+Cluster=$CLUSTER}"))
      << s;
  EXPECT_TRUE(HasLine(s, "set -euo pipefail")) << s;
}

TEST(SlurmExport, SameInputSameOutputByteForByte) {
  Exported a = ExportRich(), b = ExportRich();
  EXPECT_EQ(a.r.sacctmgr_script, b.r.sacctmgr_script);
  EXPECT_EQ(a.r.slurm_conf, b.r.slurm_conf);
  EXPECT_EQ(a.warnings, b.warnings);
}

TEST(SlurmExport, CohortIsAParentAccountHoldingTheSumOfItsMembersMin) {
  Exported e = ExportRich();
  const std::string& s = e.r.sacctmgr_script;
  // vision min: 64 cpu, 512Gi, 8 GPUs; speech min: 32 cpu, 4 GPUs, 7 MIG 1g.10gb.
  EXPECT_TRUE(
      HasLine(s,
              "$SACCTMGR -i modify account where name=research ${CLUSTER:+cluster=$CLUSTER} set "
              "GrpTRES=cpu=96,mem=524288,gres/gpu=12,gres/gpu:1g.10gb=7,gres/gpu:a100-sxm4-80gb=-1,"
              "gres/gpu:h100-80gb-hbm3=-1"))
      << s;
  EXPECT_TRUE(HasLine(s, "set_parent vision research")) << s;
  EXPECT_TRUE(HasLine(s, "set_parent speech research")) << s;
  EXPECT_TRUE(HasLine(s, "set_parent sandbox root")) << s;
  EXPECT_EQ(e.r.account_count, 4);  // research, sandbox, speech, vision
}

TEST(SlurmExport, NamespaceGrpTresIsTheTighterOfResourceQuotaAndElasticQuotaMax) {
  Exported e = ExportRich();
  const std::string& s = e.r.sacctmgr_script;
  // vision: RQ requests.cpu 96500m (-> 96, rounded down) below EQ max 128; RQ 12 GPUs below max 16;
  // memory only in EQ max (1Ti = 1048576 MiB); pods 50 -> GrpJobs (whenExceeded Queue).
  EXPECT_TRUE(HasLine(
      s,
      "$SACCTMGR -i modify account where name=vision ${CLUSTER:+cluster=$CLUSTER} set "
      "GrpTRES=cpu=96,mem=1048576,gres/gpu=12,gres/gpu:1g.10gb=-1,gres/gpu:a100-sxm4-80gb=-1,"
      "gres/gpu:h100-80gb-hbm3=-1 GrpJobs=50 GrpSubmitJobs=-1 QOS=normal,batch,scavenger,urgent "
      "DefaultQOS=normal"))
      << s;
  EXPECT_TRUE(HasWarning(
      e,
      "ResourceQuota/vision/compute: spec.hard[requests.cpu]: warning: 96500m is not a whole "
      "number of CPUs"));
  // The scoped quota of sandbox is not exported; its unscoped one is.
  EXPECT_TRUE(HasLine(
      s,
      "$SACCTMGR -i modify account where name=sandbox ${CLUSTER:+cluster=$CLUSTER} set "
      "GrpTRES=cpu=8,mem=32768,gres/gpu=-1,gres/gpu:1g.10gb=-1,gres/gpu:a100-sxm4-80gb=-1,"
      "gres/gpu:h100-80gb-hbm3=-1 GrpJobs=-1 GrpSubmitJobs=-1 QOS=normal,batch,scavenger,urgent "
      "DefaultQOS=normal"))
      << s;
}

TEST(SlurmExport, PodsQuotaIsGrpJobsWhenQueuedAndGrpSubmitJobsWhenRejected) {
  const std::string quota = R"(
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: team}
spec: {hard: {pods: "7", requests.cpu: "4"}}
)";
  Exported queue = ExportText(quota);
  EXPECT_NE(queue.r.sacctmgr_script.find("GrpJobs=7 GrpSubmitJobs=-1"), std::string::npos)
      << queue.r.sacctmgr_script;
  Exported reject = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: p}
spec: {quota: {whenExceeded: Reject}}
---)" + quota);
  EXPECT_NE(reject.r.sacctmgr_script.find("GrpJobs=-1 GrpSubmitJobs=7"), std::string::npos)
      << reject.r.sacctmgr_script;
  EXPECT_TRUE(HasWarning(
      reject,
      "spec.hard[requests.cpu]: warning: quota.whenExceeded is Reject, but Slurm keeps a "
      "job over GrpTRES pending"));
}

TEST(SlurmExport, ConfFragmentSaysWhereEachLineCameFrom) {
  Exported e = ExportRich();
  const std::string& c = e.r.slurm_conf;
  for (const char* line :
       {"PriorityType=priority/multifactor", "PriorityWeightQOS=1000000", "PriorityWeightAge=0",
        "PreemptType=preempt/qos", "PreemptMode=CANCEL", "JobRequeue=1",
        "PreemptExemptTime=00:05:00", "JobAcctGatherType=jobacct_gather/linux",
        "JobAcctGatherFrequency=task=30", "AccountingStorageEnforce=associations,limits,qos",
        "AccountingStorageTRES=gres/gpu,gres/gpu:1g.10gb,gres/gpu:a100-sxm4-80gb,gres/"
        "gpu:h100-80gb-"
        "hbm3"})
    EXPECT_TRUE(HasLine(c, line)) << line << "\n" << c;
  // Every setting follows a comment.
  std::istringstream in(c);
  std::string l, prev;
  while (std::getline(in, l)) {
    if (!l.empty() && l[0] != '#' && prev.rfind("#", 0) != 0 && prev.find('=') == std::string::npos)
      ADD_FAILURE() << "no comment before " << l;
    prev = l;
  }
  EXPECT_NE(c.find("# PoolPolicy/pool preemption.minRuntime 5m (" +
                   Src("tests/data/slurm/export-policy.yaml") + ":"),
            std::string::npos)
      << c;
}

TEST(SlurmExport, BillingWeightsAreThePriceBookInThousandthsPerHour) {
  Exported e = ExportRich();
  // standard@2026-01-01 is in force on 2026-03-01: cpu 0.04, memory 0.005/GiB, GPU 2.00, H100 4.50
  // (so the typed weight adds 2.50 to the generic GPU's 2.00), MIG 1g.10gb from its A100 card at
  // Max(1/7, 1/8) of 2.00 = 0.285714286.
  EXPECT_TRUE(HasLine(e.r.slurm_conf,
                      "PartitionName=DEFAULT TRESBillingWeights=CPU=40,Mem=5G,GRES/gpu=2000,"
                      "GRES/gpu:h100-80gb-hbm3=2500,GRES/gpu:1g.10gb=-1714.285714"))
      << e.r.slurm_conf;
  // The later version is named, and is what a later export uses.
  EXPECT_TRUE(HasWarning(e,
                         "PriceBook/standard-h2: spec.effectiveFrom: warning: takes effect at "
                         "2026-07-01T00:00:00Z"));
  ExportOptions later;
  later.price_at = 1785542400000;  // 2026-08-01
  Exported h2 = ExportRich(later);
  EXPECT_TRUE(HasLine(h2.r.slurm_conf,
                      "PartitionName=DEFAULT TRESBillingWeights=CPU=50,Mem=5G,GRES/gpu=2200,"
                      "GRES/gpu:h100-80gb-hbm3=2800,GRES/gpu:1g.10gb=-1885.714286"))
      << h2.r.slurm_conf;
  EXPECT_FALSE(HasWarning(h2, "takes effect at"));
}

TEST(SlurmExport, EveryFieldSlurmCannotExpressIsAWarningNamingIt) {
  Exported e = ExportRich();
  ASSERT_TRUE(e.r.ok());
  for (const char* w : {
           "PoolPolicy/pool: spec.overcommit.cpu: warning:",
           "PoolPolicy/pool: spec.placement.policy: warning: FGD",
           "PriorityClass/training: value: warning: not exported",
           "ElasticQuota/vision/vision: spec.min: warning: guaranteed quota",
           "ElasticQuota/vision/vision: spec.lendingLimit: warning:",
           "ResourceQuota/vision/compute: spec.hard[limits.memory]: warning:",
           "ResourceQuota/sandbox/interactive-only: spec.scopeSelector: warning:",
           "LimitRange/sandbox/defaults: spec.limits: warning:",
           "PodDisruptionBudget/speech/serving: spec: warning:",
           "PriceBook/standard: spec.prices.ephemeral-storage: warning:",
           "PriceBook/standard: spec.namespaceModes.sandbox: warning:",
       })
    EXPECT_TRUE(HasWarning(e, w)) << w;
  // FILE:LINE: first, as `arbiter validate` prints.
  for (const auto& w : e.warnings)
    EXPECT_EQ(w.rfind(Src("tests/data/slurm/export-policy.yaml") + ":", 0), 0u) << w;
  EXPECT_EQ(e.r.diagnostics.ErrorCount(), 0u);
}

TEST(SlurmExport, PriorityClassesAreTheQosTiersUnderPriorityPreemption) {
  Exported e = ExportText(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: interactive}
value: 1000
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 5000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference}
value: 10000
preemptionPolicy: Never
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: ignored}
spec: {priority: 1}
---
apiVersion: v1
kind: Namespace
metadata: {name: ml}
)");
  ASSERT_TRUE(e.r.ok());
  const std::string& s = e.r.sacctmgr_script;
  // Kubernetes: a class preempts every lower class (and pods without one, the QoS "normal");
  // preemptionPolicy Never preempts nothing.
  EXPECT_TRUE(HasLine(s, "set_preempt training \"interactive,normal\"")) << s;
  EXPECT_TRUE(HasLine(s, "set_preempt interactive \"normal\"")) << s;
  EXPECT_TRUE(HasLine(s, "set_preempt inference \"\"")) << s;
  EXPECT_TRUE(
      HasLine(s,
              "$SACCTMGR -i modify qos where name=training set Priority=5000 PreemptMode=cluster "
              "GraceTime=30 UsageFactor=1"))
      << s;
  // The globalDefault class is the default QoS.
  EXPECT_NE(s.find("QOS=normal,inference,interactive,training DefaultQOS=interactive"),
            std::string::npos)
      << s;
  EXPECT_TRUE(
      HasWarning(e, "QoS/ignored: warning: not exported: PoolPolicy preemption.type is Priority"));
  EXPECT_TRUE(HasLine(e.r.slurm_conf, "PreemptType=preempt/qos"));
  EXPECT_TRUE(HasLine(e.r.slurm_conf, "PreemptMode=REQUEUE"));
}

TEST(SlurmExport, FractionalGraceAndPrioritiesAboveSlurmsVictimOrderGetWarnings) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: p}
spec: {preemption: {type: QoS}}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: hi}
spec: {priority: 100000, preempt: [lo, lower]}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: lo}
spec: {priority: 70000, graceTime: 1500ms}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: lower}
spec: {priority: 5}
)");
  ASSERT_TRUE(e.r.ok());
  EXPECT_TRUE(HasWarning(e,
                         "QoS/lo: spec.graceTime: warning: 1.5s: Slurm's GraceTime counts whole "
                         "seconds; exported as 2 s"));
  EXPECT_TRUE(HasWarning(e, "QoS/lo: spec.priority: warning: priority 70000 is above 65535"));
  EXPECT_FALSE(
      HasWarning(e, "QoS/hi: spec.priority"));  // nobody preempts hi: its order never matters
  EXPECT_FALSE(HasWarning(e, "QoS/lower: spec.priority"));
}

// The value the script's `modify account where name=ACCOUNT ... set ...` line gives `field`
// ("(none)" without that line).
std::string AccountSetting(const std::string& script, const std::string& account,
                           const std::string& field) {
  const size_t at =
      script.find("where name=" + account + " ${CLUSTER:+cluster=$CLUSTER} set GrpTRES=");
  if (at == std::string::npos) return "(none)";
  const size_t v = script.find(" " + field + "=", at) + field.size() + 2;
  return script.substr(v, script.find_first_of(" \n", v) - v);
}

// A QoS's spec.namespaces becomes the accounts' QOS lists (AccountingStorageEnforce=qos: sbatch
// refuses a QoS not in the job's association): team-b's account does not list `inference`.
TEST(SlurmExport, QoSNamespacesBecomeTheAccountsQosLists) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: p}
spec: {preemption: {type: QoS}}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: inference}
spec: {priority: 1000, preempt: [batch], namespaces: [team-a]}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: batch}
spec: {priority: 10}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
)");
  ASSERT_TRUE(e.r.ok());
  const std::string& s = e.r.sacctmgr_script;
  EXPECT_NE(s.find("where name=team-a ${CLUSTER:+cluster=$CLUSTER} set GrpTRES="),
            std::string::npos)
      << s;
  EXPECT_EQ(AccountSetting(s, "team-a", "QOS"), "normal,batch,inference") << s;
  EXPECT_EQ(AccountSetting(s, "team-b", "QOS"), "normal,batch") << s;
  EXPECT_NE(s.find("namespaces [team-a]"), std::string::npos) << s;  // the QoS's comment
  EXPECT_FALSE(HasWarning(e, "which no object of the policy is in"));
}

// A QoS's spec.namespaces entry that names no namespace of the policy (a typo) gets no account:
// the export says so rather than dropping it silently.
TEST(SlurmExport, AQoSNamespaceWithNoAccountIsWarnedOf) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: p}
spec: {preemption: {type: QoS}}
---
apiVersion: arbiter.dev/v1alpha1
kind: QoS
metadata: {name: inference}
spec: {priority: 1000, namespaces: [team-a, taem-b]}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
)");
  ASSERT_TRUE(e.r.ok());
  EXPECT_TRUE(HasWarning(e, "names namespace \"taem-b\", which no object of the policy is in"));
  EXPECT_FALSE(HasWarning(e, "names namespace \"team-a\""));
  EXPECT_EQ(AccountSetting(e.r.sacctmgr_script, "team-a", "QOS"), "normal,inference");
}

// PoolPolicy quota.maxSubmittedPerNamespace becomes each namespace account's GrpSubmitJobs (pending
// and running jobs, as Arbiter counts pods); a tighter `pods` quota under whenExceeded: Reject
// wins where it is tighter.
TEST(SlurmExport, TheSubmitLimitBecomesEachAccountsGrpSubmitJobs) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: PoolPolicy
metadata: {name: p}
spec: {quota: {whenExceeded: Reject, maxSubmittedPerNamespace: 500}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: few, namespace: team-b}
spec: {hard: {pods: "40"}}
)");
  ASSERT_TRUE(e.r.ok());
  const std::string& s = e.r.sacctmgr_script;
  EXPECT_EQ(AccountSetting(s, "team-a", "GrpSubmitJobs"), "500") << s;
  EXPECT_EQ(AccountSetting(s, "team-b", "GrpSubmitJobs"), "40") << s;
  EXPECT_NE(s.find("# GrpSubmitJobs=500: PoolPolicy/p"), std::string::npos) << s;
  EXPECT_NE(s.find("quota.maxSubmittedPerNamespace (submissions over it are refused)"),
            std::string::npos)
      << s;
}

TEST(SlurmExport, NegativePriorityClassValuesBecomeZero) {
  Exported e = ExportText(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: best-effort}
value: -10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: normal-work}
value: 10
)");
  ASSERT_TRUE(e.r.ok());
  EXPECT_TRUE(HasWarning(e, "PriorityClass/best-effort: value: warning: priority -10 is negative"));
  EXPECT_NE(e.r.sacctmgr_script.find("where name=best-effort set Priority=0 "), std::string::npos)
      << e.r.sacctmgr_script;
  EXPECT_TRUE(HasLine(e.r.sacctmgr_script, "set_preempt normal-work \"best-effort,normal\""))
      << e.r.sacctmgr_script;
}

TEST(SlurmExport, NameCollisionsAreErrorsAndNothingIsExported) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: ElasticQuota
metadata: {name: q, namespace: research}
spec: {cohort: research, min: {cpu: "1"}}
)");
  EXPECT_FALSE(e.r.ok());
  EXPECT_TRUE(HasWarning(
      e,
      "ElasticQuota/research/q: spec.cohort: cohort \"research\" and namespace \"research\" both "
      "map to the Slurm account \"research\""));
  EXPECT_TRUE(e.r.sacctmgr_script.empty());
}

TEST(SlurmExport, ManifestTextCannotBreakOutOfCommentsOrQuotes) {
  Exported e = ExportText(R"(
apiVersion: arbiter.dev/v1alpha1
kind: ElasticQuota
metadata: {name: q, namespace: team}
spec: {cohort: "evil\"; touch /tmp/pwned; \"\nrm -rf x", min: {cpu: "1"}}
)");
  ASSERT_TRUE(e.r.ok()) << e.warnings[0];
  std::istringstream in(e.r.sacctmgr_script);
  for (std::string l; std::getline(in, l);) {
    EXPECT_NE(l.rfind("rm -rf", 0), 0u) << l;
    if (l.find("Description=") != std::string::npos) {
      EXPECT_EQ(l.find("touch /tmp/pwned; \""), std::string::npos) << l;
    }
  }
  // The account itself has a safe name.
  EXPECT_NE(e.r.sacctmgr_script.find("has_account evil___touch__tmp_pwned____rm_-rf_x ||"),
            std::string::npos)
      << e.r.sacctmgr_script;
}

TEST(SlurmExport, EmptyPolicyStillGivesAWorkingFragment) {
  Exported e = ExportText("");
  ASSERT_TRUE(e.r.ok());
  EXPECT_TRUE(HasLine(e.r.slurm_conf, "PreemptType=preempt/qos"));
  EXPECT_TRUE(HasLine(e.r.slurm_conf, "AccountingStorageTRES=gres/gpu"));
  EXPECT_NE(e.r.slurm_conf.find("No PriceBook"), std::string::npos);
  EXPECT_EQ(e.r.qos_count, 0);
}

// PoolPolicy preemption.victimOrder: LeastLostWork (issue 29) has no Slurm equivalent: a
// warning, and nothing in slurm.conf (YoungestFirst is preempt_youngest_first).
TEST(SlurmExport, LeastLostWorkVictimOrderIsWarnedAndNotExported) {
  const std::string head =
      "apiVersion: arbiter.dev/v1alpha1\nkind: PoolPolicy\nmetadata: {name: default}\n"
      "spec: {preemption: {type: QoS, victimOrder: ";
  const std::string qos =
      "}}\n---\napiVersion: arbiter.dev/v1alpha1\nkind: QoS\nmetadata: {name: low}\n"
      "spec: {priority: 10}\n";
  Exported llw = ExportText(head + "LeastLostWork" + qos);
  ASSERT_TRUE(llw.r.ok());
  EXPECT_TRUE(HasWarning(llw, "LeastLostWork has no Slurm equivalent")) << llw.r.slurm_conf;
  EXPECT_EQ(llw.r.slurm_conf.find("preempt_youngest_first"), std::string::npos);
  Exported young = ExportText(head + "YoungestFirst" + qos);
  ASSERT_TRUE(young.r.ok());
  EXPECT_FALSE(HasWarning(young, "victimOrder"));
  EXPECT_NE(young.r.slurm_conf.find("SchedulerParameters=preempt_youngest_first"),
            std::string::npos);
}

}  // namespace
}  // namespace arbiter::slurm
