#include "adapters/slurm/policy_export.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "adapters/slurm/slurm_names.h"
#include "core/billing/rating.h"
#include "core/text.h"

namespace arbiter::slurm {

std::string QosNameOf(const std::string& arbiter_name) { return ToSlurmName(arbiter_name); }

namespace {

constexpr int64_t kMiB = 1024 * 1024;
// preempt/qos orders victims by min(QoS priority, 0xffff) << 16 (preempt_qos.c _gen_job_prio).
constexpr int64_t kPreemptPrioCap = 0xffff;
// Job priority = PriorityWeightQOS x (QoS priority / highest QoS priority): the QoS alone orders
// the queue, as Arbiter orders it by priority (then submission).
constexpr int64_t kPriorityWeightQos = 1000000;

std::string HhMmSs(int64_t seconds) {
  const int64_t d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60,
                s = seconds % 60;
  char buf[48];
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                  static_cast<long long>(h), static_cast<long long>(m), static_cast<long long>(s));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  return buf;
}

// Text from the manifests (file names, cohort names, GPU models) as it goes into a comment or a
// description of the generated files: a control character (a newline above all) could end the
// comment and inject a command or a slurm.conf line, so each becomes '?'; '"', '`', '$' and '\\'
// too, for the double-quoted Description.
std::string Safe(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"' || c == '`' || c == '$' ||
        c == '\\')
      c = '?';
  return s;
}

// Seconds of a duration in ms, rounded up (Slurm counts whole seconds).
int64_t CeilSeconds(Millis ms) { return (ms + 999) / 1000; }

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// A value in a Slurm TRES count, with where it came from.
struct Limit {
  int64_t value = 0;
  std::string source;  // "ResourceQuota team-a/gpus (policy.yaml:40) spec.hard[requests.cpu]"
};

class Exporter {
 public:
  Exporter(const ManifestSet& set, const SourceLocator* locator, NameMap names,
           const ExportOptions& opts, ExportResult* out)
      : m_(set), loc_(locator), names_(std::move(names)), opts_(opts), out_(out) {}

  void Run() {
    policy_ = m_.pool_policy ? *m_.pool_policy : PoolPolicy{};
    CollectNames();
    if (out_->diagnostics.HasErrors()) return;
    BuildQos();
    BuildAccounts();
    BuildConf();
    WarnUnexpressible();
    WriteScript();
  }

 private:
  // ------------------------------------------------------------------ diagnostics
  int LineOf(const ObjectMeta& meta, const std::string& field) const {
    if (loc_ && !field.empty()) return loc_->LineOf(meta.source, field);
    return meta.source.line;
  }
  std::string Where(const ObjectMeta& meta, const std::string& field = "") const {
    return Safe(meta.source.file) + ":" + std::to_string(LineOf(meta, field));
  }
  static std::string Display(const ObjectMeta& meta) {
    return meta.namespace_.empty() ? meta.name : meta.namespace_ + "/" + meta.name;
  }
  void Report(Severity sev, const char* kind, const ObjectMeta& meta, const std::string& field,
              std::string msg) {
    Diagnostic d;
    d.severity = sev;
    d.file = meta.source.file;
    d.line = LineOf(meta, field);
    d.kind = kind;
    d.name = Display(meta);
    d.field_path = field;
    d.message = std::move(msg);
    out_->diagnostics.Add(std::move(d));
  }
  void Warn(const char* kind, const ObjectMeta& meta, const std::string& field, std::string msg) {
    Report(Severity::kWarning, kind, meta, field, std::move(msg));
  }
  void Error(const char* kind, const ObjectMeta& meta, const std::string& field, std::string msg) {
    Report(Severity::kError, kind, meta, field, std::move(msg));
  }
  void ErrorNoObject(std::string msg) {
    Diagnostic d;
    d.file = opts_.source_label;
    d.message = std::move(msg);
    out_->diagnostics.Add(std::move(d));
  }

  // ------------------------------------------------------------------ names
  void CollectNames() {
    auto add = [&](const std::string& ns) {
      if (!ns.empty()) namespaces_.insert(ns);
    };
    for (const auto& n : m_.namespaces) add(n.meta.name);
    for (const auto& q : m_.resource_quotas) add(q.meta.namespace_);
    for (const auto& q : m_.elastic_quotas) add(q.meta.namespace_);
    for (const auto& l : m_.limit_ranges) add(l.meta.namespace_);
    for (const auto& p : m_.pods) add(p.meta.namespace_);
    for (const auto& ns : namespaces_)
      if (Status s = names_.AddNamespace(ns); !s.ok()) ErrorNoObject(s.message());
    // Cohorts become parent accounts; they share the account namespace with the namespaces.
    for (const auto& q : m_.elastic_quotas) {
      if (q.cohort.empty()) continue;
      cohort_members_[q.cohort].push_back(&q);
    }
    std::map<std::string, std::string> account_owner;  // Slurm account -> what it stands for
    for (const auto& ns : namespaces_)
      account_owner[names_.AccountOf(ns)] = "namespace " + Quoted(ns);
    for (const auto& [cohort, members] : cohort_members_) {
      const std::string acct = ToSlurmName(cohort);
      const ElasticQuota& first = *members.front();
      if (acct == "root") {
        Error("ElasticQuota", first.meta, "spec.cohort",
              "cohort " + Quoted(cohort) +
                  " would be the Slurm account \"root\" (Slurm's root association)");
      } else if (auto it = account_owner.find(acct); it != account_owner.end()) {
        Error("ElasticQuota", first.meta, "spec.cohort",
              "cohort " + Quoted(cohort) + " and " + it->second +
                  " both map to the Slurm account " + Quoted(acct) +
                  "; rename the cohort or map the namespace with --account-map");
      }
      account_owner[acct] = "cohort " + Quoted(cohort);
      cohort_account_[cohort] = acct;
    }
    // GPU models and MIG resources: gres types.
    for (const auto& n : m_.nodes) {
      auto it = n.meta.labels.find("nvidia.com/gpu.product");
      if (it != n.meta.labels.end() && n.capacity.Get(kGpu) > 0) products_.insert(it->second);
      for (const auto& [r, v] : n.capacity.entries())
        if (IsMigResourceName(r)) migs_.insert(r);
    }
    for (const auto& b : m_.price_books) {
      for (const auto& [p, price] : b.gpu_models) products_.insert(p);
      for (const auto& [r, price] : b.prices)
        if (IsMigResourceName(r)) migs_.insert(r);
    }
    for (const auto& q : m_.resource_quotas)
      for (const auto& item : q.hard)
        if (IsMigResourceName(item.resource)) migs_.insert(item.resource);
    for (const auto& q : m_.elastic_quotas) {
      for (const auto& [r, v] : q.min.entries())
        if (IsMigResourceName(r)) migs_.insert(r);
      if (q.max)
        for (const auto& [r, v] : q.max->entries())
          if (IsMigResourceName(r)) migs_.insert(r);
    }
    for (const auto& p : products_)
      if (Status s = names_.AddGpuProduct(p); !s.ok()) ErrorNoObject(s.message());
    for (const auto& r : migs_)
      if (Status s = names_.AddMigResource(r); !s.ok()) ErrorNoObject(s.message());
    for (const auto& p : products_) gpu_tres_.insert("gres/gpu:" + names_.GresTypeOf(p));
    for (const auto& r : migs_) gpu_tres_.insert("gres/gpu:" + names_.GresTypeOf(r));
  }

  // A canonical resource amount as a Slurm TRES count; nullopt (with a warning) when Slurm has no
  // such TRES. Amounts finer than Slurm counts are rounded down, with a warning.
  std::optional<std::pair<std::string, int64_t>> ToTres(const char* kind, const ObjectMeta& meta,
                                                        const std::string& field,
                                                        const std::string& resource,
                                                        int64_t amount) {
    auto whole = [&](int64_t unit, const char* what,
                     const std::string& tres) -> std::pair<std::string, int64_t> {
      if (amount % unit != 0)
        Warn(kind, meta, field,
             FormatResourceQuantity(resource, amount) + " is not a whole number of " + what +
                 ": Slurm counts " + what + ", so " + tres + "=" + std::to_string(amount / unit) +
                 " (rounded down)");
      return {tres, amount / unit};
    };
    if (resource == kCpu) return whole(1000, "CPUs", "cpu");
    if (resource == kMemory) return whole(kMiB, "MiB", "mem");
    if (resource == kGpu) return whole(1000, "GPUs", "gres/gpu");
    if (IsMigResourceName(resource))
      return std::make_pair("gres/gpu:" + names_.GresTypeOf(resource), amount);
    Warn(kind, meta, field, "Slurm has no TRES for " + Quoted(resource) + ": not exported");
    return std::nullopt;
  }

  // ------------------------------------------------------------------ QoS
  struct QosOut {
    std::string name;  // Slurm name
    int64_t priority = 0;
    std::vector<std::string> preempt;  // Slurm names, sorted
    std::string preempt_mode;          // requeue | cancel | cluster
    int64_t grace_s = 0;
    std::string comment;
    bool preemptible = false;
    // The Arbiter namespaces whose accounts may use it (QoS spec.namespaces); none: every one.
    std::optional<std::vector<std::string>> namespaces;
  };

  void BuildQos() {
    const bool qos_mode = policy_.preemption_type == PreemptionType::kQoS;
    std::map<std::string, std::string> owner;  // Slurm QoS name -> Arbiter object it came from
    if (qos_mode)
      QosFromQosObjects(owner);
    else
      QosFromPriorityClasses(owner);
    std::sort(qos_.begin(), qos_.end(),
              [](const QosOut& a, const QosOut& b) { return a.name < b.name; });
    for (auto& q : qos_)
      for (const auto& p : q.preempt)
        for (auto& v : qos_)
          if (v.name == p) v.preemptible = true;
    // Victim order: preempt/qos compares min(priority, 65535).
    for (const auto& q : qos_)
      if (q.preemptible && q.priority > kPreemptPrioCap) {
        for (const auto& src : m_.qos)
          if (QosNameOf(src.meta.name) == q.name)
            Warn("QoS", src.meta, "spec.priority", PrioCapMessage(q.priority));
        for (const auto& src : m_.priority_classes)
          if (QosNameOf(src.meta.name) == q.name && !qos_mode)
            Warn("PriorityClass", src.meta, "value", PrioCapMessage(q.priority));
      }
    out_->qos_count = static_cast<int>(qos_.size());
  }

  // Claims a Slurm QoS name for an object; false (with an error) when another object has it.
  bool ClaimQosName(std::map<std::string, std::string>& owner, const std::string& slurm,
                    const char* kind, const ObjectMeta& meta) {
    if (auto it = owner.find(slurm); it != owner.end()) {
      Error(kind, meta, "metadata.name",
            "maps to the Slurm QoS " + Quoted(slurm) + ", as " + it->second +
                " does; rename one of them");
      return false;
    }
    owner[slurm] = std::string(kind) + " " + Quoted(meta.name);
    return true;
  }

  // preemption.type QoS: a Slurm QoS per Arbiter QoS, with its preempt list, mode and grace time.
  void QosFromQosObjects(std::map<std::string, std::string>& owner) {
    for (const auto& q : m_.qos) {
      QosOut o;
      o.name = QosNameOf(q.meta.name);
      if (!ClaimQosName(owner, o.name, "QoS", q.meta)) continue;
      o.priority = ClampPriority("QoS", q.meta, "spec.priority", q.priority);
      for (const auto& p : q.preempt) o.preempt.push_back(QosNameOf(p));
      std::sort(o.preempt.begin(), o.preempt.end());
      o.preempt_mode = q.preempt_mode
                           ? (*q.preempt_mode == PreemptMode::kRequeue ? "requeue" : "cancel")
                           : "cluster";
      if (q.grace_time) {
        o.grace_s = CeilSeconds(*q.grace_time);
        if (*q.grace_time % 1000 != 0)
          Warn("QoS", q.meta, "spec.graceTime",
               FormatDuration(*q.grace_time) +
                   ": Slurm's GraceTime counts whole seconds; exported as " +
                   std::to_string(o.grace_s) + " s");
      } else {
        o.grace_s = 30;  // a Pod's default terminationGracePeriodSeconds, what Arbiter applies then
      }
      o.comment = "QoS/" + q.meta.name + " (" + Where(q.meta) + "): priority " +
                  std::to_string(q.priority) +
                  (q.preempt.empty() ? "" : ", preempt [" + Join(q.preempt, ", ") + "]") +
                  ", preemptMode " +
                  (q.preempt_mode ? ToString(*q.preempt_mode) : "from PoolPolicy") +
                  ", graceTime " +
                  (q.grace_time ? FormatDuration(*q.grace_time) : "unset: the Pod default 30s");
      o.namespaces = q.namespaces;
      if (o.namespaces) {
        o.comment += ", namespaces [" + Join(*o.namespaces, ", ") + "]";
        if (o.name == "normal")
          Warn("QoS", q.meta, "spec.namespaces",
               "maps to Slurm's default QoS \"normal\", which every account keeps (its "
               "DefaultQOS): the namespaces are not enforced by Slurm");
        for (const auto& ns : *o.namespaces)  // (a typo, or a namespace made later)
          if (!namespaces_.count(ns))
            Warn("QoS", q.meta, "spec.namespaces",
                 "names namespace \"" + ns +
                     "\", which no object of the policy is in: no Slurm account is exported "
                     "for it, so this entry lets no account use the QoS (add its Namespace to "
                     "the policy)");
      }
      qos_.push_back(std::move(o));
    }
    for (const auto& pc : m_.priority_classes)
      Warn("PriorityClass", pc.meta, "value",
           "not exported: under preemption.type QoS a Slurm job's priority and preemption come "
           "from its QoS "
           "(Slurm has no per-job priority class)");
  }

  // Kubernetes semantics as QoS tiers: a class preempts every class of strictly lower value
  // (unless preemptionPolicy: Never), and the QoS "normal" that jobs without one get.
  void QosFromPriorityClasses(std::map<std::string, std::string>& owner) {
    for (const auto& pc : m_.priority_classes) {
      QosOut o;
      o.name = QosNameOf(pc.meta.name);
      if (!ClaimQosName(owner, o.name, "PriorityClass", pc.meta)) continue;
      o.priority = ClampPriority("PriorityClass", pc.meta, "value", pc.value);
      if (pc.preemption_policy != PreemptionPolicy::kNever) {
        for (const auto& other : m_.priority_classes)
          if (other.value < pc.value) o.preempt.push_back(QosNameOf(other.meta.name));
        if (pc.value > 0 && !HasClassNamed("normal")) o.preempt.push_back("normal");
        std::sort(o.preempt.begin(), o.preempt.end());
      }
      o.preempt_mode = "cluster";
      o.grace_s = 30;
      o.comment = "PriorityClass/" + pc.meta.name + " (" + Where(pc.meta) + "): value " +
                  std::to_string(pc.value) + ", preemptionPolicy " +
                  ToString(pc.preemption_policy) +
                  "; GraceTime 30 s, a Pod's default terminationGracePeriodSeconds";
      qos_.push_back(std::move(o));
    }
    for (const auto& q : m_.qos)
      Warn("QoS", q.meta, "",
           "not exported: PoolPolicy preemption.type is Priority, so the PriorityClasses are the "
           "Slurm QoS tiers "
           "(set preemption.type: QoS to export the QoS objects)");
  }

  static std::string PrioCapMessage(int64_t prio) {
    return "priority " + std::to_string(prio) +
           " is above 65535: Slurm's preempt/qos orders victims by min(priority, 65535), so "
           "victims above it "
           "tie (broken by job age)";
  }

  bool HasClassNamed(const std::string& name) const {
    for (const auto& pc : m_.priority_classes)
      if (QosNameOf(pc.meta.name) == name) return true;
    return false;
  }

  int64_t ClampPriority(const char* kind, const ObjectMeta& meta, const std::string& field,
                        int64_t prio) {
    if (prio < 0) {
      Warn(kind, meta, field,
           "priority " + std::to_string(prio) +
               " is negative; Slurm QoS priorities are unsigned: exported as 0");
      return 0;
    }
    return prio;
  }

  // ------------------------------------------------------------------ accounts
  struct AccountOut {
    std::string name, parent, description;
    std::vector<std::string> comments;
    std::map<std::string, Limit> grp_tres;  // TRES -> limit
    std::optional<Limit> grp_jobs, grp_submit;
    bool is_namespace = false;
    std::string ns;  // the Arbiter namespace of a namespace's account
  };

  void Tighten(std::map<std::string, Limit>* tres, const std::string& name, int64_t value,
               const std::string& src) {
    auto it = tres->find(name);
    if (it == tres->end() || value < it->second.value) (*tres)[name] = Limit{value, src};
  }

  void BuildAccounts() {
    const bool reject = policy_.when_quota_exceeded == QuotaExceededAction::kReject;
    for (const auto& [cohort, members] : cohort_members_)
      accounts_.push_back(CohortAccount(cohort, members));
    for (const auto& ns : namespaces_) {
      AccountOut a;
      a.name = names_.AccountOf(ns);
      a.is_namespace = true;
      a.ns = ns;
      a.parent = "root";
      a.description = "arbiter namespace " + Safe(ns);
      a.comments.push_back("namespace " + ns);
      ElasticQuotaLimits(ns, &a);
      ResourceQuotaLimits(ns, reject, &a);
      if (const int64_t cap = policy_.max_submitted_per_namespace;  // pending + running, as Slurm
          cap > 0 && (!a.grp_submit || cap < a.grp_submit->value))
        a.grp_submit =
            Limit{cap, PolicyLabel() + PolicyWhere("spec.quota.maxSubmittedPerNamespace") +
                           " quota.maxSubmittedPerNamespace"};
      for (const auto& [t, l] : a.grp_tres)
        a.comments.push_back("GrpTRES " + t + "=" + std::to_string(l.value) + ": " + l.source);
      if (a.grp_jobs)
        a.comments.push_back("GrpJobs=" + std::to_string(a.grp_jobs->value) + ": " +
                             a.grp_jobs->source + " (quota.whenExceeded Queue: jobs over it wait)");
      if (a.grp_submit)
        a.comments.push_back("GrpSubmitJobs=" + std::to_string(a.grp_submit->value) + ": " +
                             a.grp_submit->source + " (submissions over it are refused)");
      accounts_.push_back(std::move(a));
    }
    out_->account_count = static_cast<int>(accounts_.size());
  }

  // A cohort's parent account: GrpTRES = the cohort's guaranteed total, Σ min (what Arbiter lets
  // the cohort use at once: borrowing is lending from another member's unused min).
  AccountOut CohortAccount(const std::string& cohort,
                           const std::vector<const ElasticQuota*>& members) {
    AccountOut a;
    a.name = cohort_account_[cohort];
    a.parent = "root";
    a.description = "arbiter cohort " + Safe(cohort);
    std::map<std::string, int64_t> sum;
    std::vector<std::string> srcs;
    for (const ElasticQuota* q : members) {
      srcs.push_back(Display(q->meta) + " (" + Where(q->meta, "spec.min") + ")");
      for (const auto& [r, v] : q->min.entries()) {
        auto t = ToTres("ElasticQuota", q->meta, FieldPathChild("spec.min", r), r, v);
        if (t) sum[t->first] += t->second;
      }
      if (q->max)
        for (const auto& [r, v] : q->max->entries()) {
          if (q->min.Has(r)) continue;
          // Tracked through max only: contributes 0 to the cohort's guaranteed total.
          if (r == kCpu)
            sum.emplace("cpu", 0);
          else if (r == kMemory)
            sum.emplace("mem", 0);
          else if (r == kGpu)
            sum.emplace("gres/gpu", 0);
          else if (IsMigResourceName(r))
            sum.emplace("gres/gpu:" + names_.GresTypeOf(r), 0);
        }
    }
    a.comments.push_back("cohort " + Safe(cohort) +
                         ": parent account of its namespaces; GrpTRES = the sum of their "
                         "ElasticQuota spec.min (" +
                         Join(srcs, ", ") + ")");
    for (const auto& [t, v] : sum) a.grp_tres[t] = Limit{v, "sum of spec.min"};
    return a;
  }

  // A namespace's ElasticQuotas: its parent (the cohort's account) and GrpTRES from max (and min
  // without a cohort).
  void ElasticQuotaLimits(const std::string& ns, AccountOut* a) {
    for (const auto& q : m_.elastic_quotas) {
      if (q.meta.namespace_ != ns) continue;
      const std::string src = "ElasticQuota " + Display(q.meta) + " (" + Where(q.meta) + ")";
      if (!q.cohort.empty()) a->parent = cohort_account_[q.cohort];
      // No cohort: nothing to borrow, the namespace is held to min (and max).
      if (q.cohort.empty())
        for (const auto& [r, v] : q.min.entries())
          if (auto t = ToTres("ElasticQuota", q.meta, FieldPathChild("spec.min", r), r, v))
            Tighten(&a->grp_tres, t->first, t->second, src + " spec.min (no cohort)");
      if (q.max)
        for (const auto& [r, v] : q.max->entries())
          if (auto t = ToTres("ElasticQuota", q.meta, FieldPathChild("spec.max", r), r, v))
            Tighten(&a->grp_tres, t->first, t->second, src + " spec.max");
    }
  }

  // A namespace's unscoped ResourceQuotas: GrpTRES from requests, GrpJobs (Queue) or
  // GrpSubmitJobs (Reject) from the pod count.
  void ResourceQuotaLimits(const std::string& ns, bool reject, AccountOut* a) {
    for (const auto& rq : m_.resource_quotas) {
      if (rq.meta.namespace_ != ns) continue;
      if (!rq.scope_selector.empty()) {
        Warn("ResourceQuota", rq.meta, "spec.scopeSelector",
             "a scoped quota is not exported: Slurm association limits apply to every job of the "
             "account");
        continue;
      }
      for (const auto& item : rq.hard) {
        const std::string field = FieldPathChild("spec.hard", item.key);
        const std::string src =
            "ResourceQuota " + Display(rq.meta) + " (" + Where(rq.meta, field) + ") " + item.key;
        if (item.track == QuotaTrack::kLimits) {
          Warn("ResourceQuota", rq.meta, field,
               "Slurm limits what jobs are allocated (their requests); a quota on limits is not "
               "exported");
        } else if (item.track == QuotaTrack::kCount) {
          if (item.resource != kPods) {
            Warn("ResourceQuota", rq.meta, field,
                 "Slurm has no object count for " + Quoted(item.key) + ": not exported");
            continue;
          }
          auto& slot = reject ? a->grp_submit : a->grp_jobs;
          if (!slot || item.hard < slot->value) slot = Limit{item.hard, src};
        } else if (auto t = ToTres("ResourceQuota", rq.meta, field, item.resource, item.hard)) {
          Tighten(&a->grp_tres, t->first, t->second, src);
          if (reject)
            Warn("ResourceQuota", rq.meta, field,
                 "quota.whenExceeded is Reject, but Slurm keeps a job over GrpTRES pending "
                 "(AssocGrp*Limit) instead of refusing it");
        }
      }
    }
  }

  // ------------------------------------------------------------------ slurm.conf
  void Conf(const std::string& comment, const std::string& line) {
    conf_ << "# " << comment << "\n" << line << "\n";
  }

  // "PoolPolicy/NAME" (or that there is none) and " (FILE:LINE)" of one of its fields, for the
  // comments of slurm.conf.
  std::string PolicyLabel() const {
    return m_.pool_policy ? "PoolPolicy/" + policy_.meta.name : "PoolPolicy (none: defaults)";
  }
  std::string PolicyWhere(const std::string& field) const {
    return m_.pool_policy ? " (" + Where(policy_.meta, field) + ")" : "";
  }

  void BuildConf() {
    conf_ << "# slurm.conf fragment generated by " << opts_.generator << " from "
          << Safe(opts_.source_label) << " (docs/slurm.md).\n"
          << "# Include it from slurm.conf before the PartitionName lines (Include "
             "/etc/slurm/arbiter.conf);\n"
          << "# remove these keys from slurm.conf itself (Slurm keeps the last value and logs an "
             "error).\n";
    ConfPriorityAndPreemption();
    if (policy_.latency) ConfLatency(*policy_.latency);
    ConfAccounting();
    BillingWeights();
  }

  // Job priority, PreemptType/Mode, victim order, requeue and PreemptExemptTime.
  void ConfPriorityAndPreemption() {
    const std::string pp = PolicyLabel();
    Conf(
        "Job priority from the QoS alone, as Arbiter orders its queue by priority (then "
        "submission);\n"
        "# the other multifactor weights are 0 (" +
            pp + " preemption.type " + ToString(policy_.preemption_type) +
            (policy_.preemption_type == PreemptionType::kQoS ? ": the QoS priority)"
                                                             : ": the PriorityClass value)"),
        "PriorityType=priority/multifactor\nPriorityWeightQOS=" +
            std::to_string(kPriorityWeightQos) +
            "\nPriorityWeightAge=0\nPriorityWeightFairshare=0\nPriorityWeightJobSize="
            "0\nPriorityWeightPartition=0"
            "\nPriorityWeightAssoc=0");
    Conf(pp + " preemption.type " + ToString(policy_.preemption_type) +
             PolicyWhere("spec.preemption.type") +
             (policy_.preemption_type == PreemptionType::kQoS
                  ? ": QoS preempt lists"
                  : ": PriorityClass tiers exported as QoS"),
         "PreemptType=preempt/qos");
    Conf(pp + " preemption.mode " + ToString(policy_.preempt_mode) +
             PolicyWhere("spec.preemption.mode") +
             ": the default fate of a victim (a QoS's own PreemptMode wins)",
         std::string("PreemptMode=") +
             (policy_.preempt_mode == PreemptMode::kRequeue ? "REQUEUE" : "CANCEL"));
    if (policy_.victim_order == VictimOrder::kLeastLostWork)
      Warn("PoolPolicy", policy_.meta, "spec.preemption.victimOrder",
           "LeastLostWork has no Slurm equivalent (Slurm orders equal-QoS victims by age): not "
           "exported");
    if (policy_.requeue_backoff)
      Warn("PoolPolicy", policy_.meta, "spec.preemption.requeuingStrategy",
           "the requeue back-off has no Slurm equivalent (a requeued job waits cred_expire + 1s, "
           "whatever its preemptions): not exported");
    if (policy_.victim_order == VictimOrder::kYoungestFirst)
      Conf(pp + " preemption.victimOrder YoungestFirst" +
               PolicyWhere("spec.preemption.victimOrder") +
               ": among victims of equal QoS priority the youngest goes first",
           "SchedulerParameters=preempt_youngest_first");
    Conf("Arbiter may requeue any workload; a job opts out with sbatch --no-requeue",
         "JobRequeue=1");
    Conf(pp + " preemption.minRuntime " + FormatDuration(policy_.min_runtime) +
             PolicyWhere("spec.preemption.minRuntime") + ": younger jobs are never victims",
         "PreemptExemptTime=" + HhMmSs(CeilSeconds(policy_.min_runtime)));
    if (policy_.min_runtime % 1000 != 0)
      Warn("PoolPolicy", policy_.meta, "spec.preemption.minRuntime",
           FormatDuration(policy_.min_runtime) +
               ": Slurm's PreemptExemptTime counts whole seconds (rounded up)");
  }

  // spec.latency: the timers the model assumes are the cluster's.
  void ConfLatency(const PoolPolicy::SlurmLatency& l) {
    Conf(PolicyLabel() + " latency.killWait " + FormatDuration(l.kill_wait) +
             PolicyWhere("spec.latency.killWait") + " and latency.messageTimeout " +
             FormatDuration(l.message_timeout) +
             ": slurmd's SIGTERM -> SIGKILL wait and its message round trip",
         "KillWait=" + std::to_string(CeilSeconds(l.kill_wait)) +
             "\nMessageTimeout=" + std::to_string(CeilSeconds(l.message_timeout)));
    for (auto [field, d] : {std::pair<const char*, Millis>{"killWait", l.kill_wait},
                            {"messageTimeout", l.message_timeout}})
      if (d % 1000 != 0)
        Warn("PoolPolicy", policy_.meta, std::string("spec.latency.") + field,
             FormatDuration(d) + ": Slurm counts whole seconds (rounded up)");
    Warn("PoolPolicy", policy_.meta, "spec.latency.credExpire",
         FormatDuration(l.cred_expire) + ": not exported; it is AuthInfo's cred_expire=" +
             std::to_string(CeilSeconds(l.cred_expire)) +
             " (add it to the cluster's AuthInfo line, with its socket)");
    if (l.epilog > 0)
      Warn("PoolPolicy", policy_.meta, "spec.latency.epilog",
           FormatDuration(l.epilog) +
               ": not exported; it is how long the cluster's Epilog script runs");
    if (l.sched_interval > 0)
      Warn("PoolPolicy", policy_.meta, "spec.latency.schedInterval",
           FormatDuration(l.sched_interval) +
               ": not exported; it is the cluster's SchedulerParameters=sched_interval=" +
               std::to_string(CeilSeconds(l.sched_interval)));
    else
      Warn("PoolPolicy", policy_.meta, "spec.latency.graceEndDelay",
           FormatDuration(l.grace_end_delay) +
               ": not exported; it follows from SchedulerParameters=sched_interval (and "
               "slurmctld's 30 s "
               "time-limit sweep)");
  }

  // Job accounting: gather frequency, enforced limits, the GPU TRES.
  void ConfAccounting() {
    const int64_t freq = std::max<int64_t>(1, CeilSeconds(policy_.scrape_interval));
    Conf(PolicyLabel() + " metering.scrapeInterval " + FormatDuration(policy_.scrape_interval) +
             PolicyWhere("spec.metering.scrapeInterval") +
             ": job usage (the usage track) sampled as often",
         "JobAcctGatherType=jobacct_gather/linux\nJobAcctGatherFrequency=task=" +
             std::to_string(freq));
    Conf(
        "association limits (GrpTRES, GrpJobs from ResourceQuota / ElasticQuota) and QoS are "
        "enforced",
        "AccountingStorageEnforce=associations,limits,qos");
    std::vector<std::string> tres = {"gres/gpu"};
    tres.insert(tres.end(), gpu_tres_.begin(), gpu_tres_.end());
    std::string gpu_src = gpu_tres_.empty()
                              ? "no GPU models in the policy"
                              : "GPU models and MIG profiles of the Nodes, PriceBooks and quotas";
    Conf("GPU TRES accounted per job (" + gpu_src + "); cpu, mem, node, billing are always on",
         "AccountingStorageTRES=" + Join(tres, ","));
  }

  // TRESBillingWeights from the PriceBook version in force at opts_.price_at: billing =
  // Σ allocated TRES x price per hour, in thousandths of the currency.
  void BillingWeights() {
    if (m_.price_books.empty()) {
      conf_ << "# No PriceBook: Slurm's billing TRES stays its default (allocated CPUs).\n";
      return;
    }
    auto cat = billing::PriceCatalog::Create(m_.price_books);
    if (!cat.ok()) {
      ErrorNoObject("PriceBooks: " + cat.message());
      return;
    }
    const PriceBook* b = BookToExport(*cat);
    std::vector<std::string> w;
    std::vector<std::string> notes;
    const billing::UnitPrice cpu = billing::ResolvePrice(*b, kCpu, "");
    const billing::UnitPrice mem = billing::ResolvePrice(*b, kMemory, "");
    const billing::UnitPrice gpu = billing::ResolvePrice(*b, kGpu, "");
    w.push_back("CPU=" + BillingUnits(cpu).ToString());
    w.push_back("Mem=" + BillingUnits(mem).ToString() + "G");
    w.push_back("GRES/gpu=" + BillingUnits(gpu).ToString());
    notes.push_back("CPU " + cpu.unit_price.ToString() + "/core-hour, Mem " +
                    mem.unit_price.ToString() + "/GiB-hour, GRES/gpu " + gpu.unit_price.ToString() +
                    "/GPU-hour");
    // A typed GPU is allocated as gres/gpu and gres/gpu:TYPE at once: its weight is the
    // difference to the generic GPU's.
    for (const auto& p : products_)
      AddGresWeight(p, billing::ResolvePrice(*b, kGpu, p), gpu, "/GPU-hour, ", &w, &notes);
    for (const auto& r : migs_)
      AddGresWeight(r, billing::ResolvePrice(*b, r, MigCardProduct(r)), gpu, "/instance-hour, ", &w,
                    &notes);
    for (const auto& [r, price] : b->prices) {
      if (r == kCpu || r == kMemory || r == kGpu || IsMigResourceName(r)) continue;
      Warn("PriceBook", b->meta, FieldPathChild("spec.prices", r),
           "Slurm has no billing TRES for " + Quoted(r) +
               ": its price is not in TRESBillingWeights");
    }
    Conf("PriceBook/" + b->meta.name + " (" + Where(b->meta) + "), version " +
             billing::PriceBookId(*b) + ", currency " + b->currency + ":\n# " +
             Safe(Join(notes, "; ")) + ".\n" +
             "# Slurm's billing TRES = the job's price per hour in thousandths of " + b->currency +
             " (truncated to an integer by Slurm).",
         "PartitionName=DEFAULT TRESBillingWeights=" + Join(w, ","));
    book_ = *b;
  }

  // The version in force at opts_.price_at (else the earliest, with a warning); a later version
  // is warned about, as Slurm holds one set of weights.
  const PriceBook* BookToExport(const billing::PriceCatalog& cat) {
    const PriceBook* b = cat.At(opts_.price_at);
    if (!b) {
      b = &cat.books().front();
      Warn("PriceBook", b->meta, "spec.effectiveFrom",
           "no PriceBook is in force at " + FormatRfc3339(opts_.price_at) +
               "; exported the earliest, " + billing::PriceBookId(*b) +
               " (re-export when it takes effect)");
    }
    for (const auto& other : cat.books())
      if (&other != b && other.effective_from > b->effective_from)
        Warn("PriceBook", other.meta, "spec.effectiveFrom",
             "takes effect at " + FormatRfc3339(other.effective_from) +
                 ": Slurm holds one set of billing weights; re-export then (exported " +
                 billing::PriceBookId(*b) + ")");
    return b;
  }

  // Price per hour x 1000, exact to the price's 9 decimals (a MIG price from its card may be
  // rounded to 9 decimals already).
  static Decimal BillingUnits(const billing::UnitPrice& p) {
    return Decimal::FromUnits(p.unit_price.units() * kBillingUnitsPerCurrency);
  }

  // The weight of gres/gpu:TYPE of a GPU model or MIG resource (its price less the generic GPU's,
  // none when equal) and its note ("per" the unit of its price).
  void AddGresWeight(const std::string& name, const billing::UnitPrice& price,
                     const billing::UnitPrice& gpu, const char* per, std::vector<std::string>* w,
                     std::vector<std::string>* notes) {
    const Decimal delta = BillingUnits(price) - BillingUnits(gpu);
    if (!delta.is_zero())
      w->push_back("GRES/gpu:" + names_.GresTypeOf(name) + "=" + delta.ToString());
    notes->push_back(name + " (" + names_.GresTypeOf(name) + ") " + price.unit_price.ToString() +
                     per + price.source);
  }

  // The GPU model of the first Node with this MIG resource ("" when none says).
  std::string MigCardProduct(const std::string& mig) const {
    for (const auto& n : m_.nodes)
      if (n.capacity.Get(mig) > 0) {
        auto it = n.meta.labels.find("nvidia.com/gpu.product");
        if (it != n.meta.labels.end()) return it->second;
      }
    return "";
  }

  // ------------------------------------------------------------------ the rest
  void WarnUnexpressible() {
    const PoolPolicy& p = policy_;
    if (m_.pool_policy) {
      if (p.cpu_overcommit_milli != 1000)
        Warn("PoolPolicy", p.meta, "spec.overcommit.cpu",
             "Slurm allocates whole cores (SelectTypeParameters=CR_Core); CPU overcommit is not "
             "exported");
      if (p.memory_overcommit_milli != 1000)
        Warn("PoolPolicy", p.meta, "spec.overcommit.memory",
             "memory overcommit has no Slurm equivalent: not exported");
      if (p.placement == PlacementPolicyName::kLeastAllocated)
        Warn("PoolPolicy", p.meta, "spec.placement.policy",
             "LeastAllocated: not exported; the nearest Slurm setting is "
             "SelectTypeParameters=...,CR_LLN (least loaded "
             "nodes), a cluster-wide choice for the admin");
      else if (p.placement != PlacementPolicyName::kBestFit)
        Warn("PoolPolicy", p.meta, "spec.placement.policy",
             std::string(ToString(p.placement)) +
                 ": Slurm's select/cons_tres has no such placement policy (it packs "
                 "like BestFit); not exported");
    }
    if (!m_.pdbs.empty())
      for (const auto& pdb : m_.pdbs)
        Warn("PodDisruptionBudget", pdb.meta, "spec",
             "Slurm has no disruption budgets: preempt/qos may stop every job it selects");
    for (const auto& lr : m_.limit_ranges)
      Warn("LimitRange", lr.meta, "spec.limits",
           "not exported: Slurm's per-partition defaults (DefMemPerCPU, MaxMemPerNode, ...) are "
           "cluster settings");
    for (const auto& q : m_.elastic_quotas) {
      if (!q.cohort.empty() && !q.min.empty())
        Warn("ElasticQuota", q.meta, "spec.min",
             "guaranteed quota: Slurm neither reclaims lent quota by preemption nor protects an "
             "account's jobs within "
             "min from other accounts' preemptors; exported only as the cohort's total (parent "
             "GrpTRES)");
      if (!q.lending_limit_set.empty())
        Warn("ElasticQuota", q.meta, "spec.lendingLimit",
             "Slurm has no lending limit: not exported");
    }
    if (book_) {
      const PriceBook& b = *book_;
      if (b.mode != BillingMode::kRequest)
        Warn("PriceBook", b.meta, "spec.mode",
             std::string(ToString(b.mode)) +
                 ": Slurm's billing TRES weighs allocations only (the Request track); "
                 "`arbiter slurm import` bills " +
                 ToString(b.mode) + " from sacct's usage");
      for (const auto& [ns, mode] : b.namespace_modes)
        Warn("PriceBook", b.meta, FieldPathChild("spec.namespaceModes", ns),
             "Slurm's billing weights are per partition, not per account: not exported");
      if (b.share_idle != IdleSharing::kNone)
        Warn("PriceBook", b.meta, "spec.shareIdle",
             "Slurm does not bill idle capacity: not exported");
      if (b.preemption_credit == CreditPolicy::kLostWork)
        Warn("PriceBook", b.meta, "spec.preemptionCredit",
             "Slurm bills preempted runs in full; `arbiter slurm import` has no checkpoint "
             "information either, so "
             "imported Slurm jobs get no lost-work credit");
    }
  }

  // The limits name GRES TRES (gres/gpu, typed GPUs) that exist in slurmdbd only once slurmctld,
  // started with slurm-policy.conf's AccountingStorageTRES, has registered them: until then
  // sacctmgr refuses the GrpTRES. So the script checks them first, before it changes anything,
  // and waits for them (TRES_WAIT seconds, default 60: a slurmctld restarting meanwhile).
  void WriteTresCheck(std::ostringstream& s) const {
    std::vector<std::string> gres = {"gres/gpu"};
    gres.insert(gres.end(), gpu_tres_.begin(), gpu_tres_.end());
    s << "# ---- First, before any change: the GRES TRES the limits name must be registered. "
         "slurmctld\n"
      << "# registers them when it starts with slurm-policy.conf's AccountingStorageTRES (on a "
         "fresh\n"
      << "# cluster, a moment after it starts): install the fragment, restart slurmctld, then run "
         "this.\n"
      << "has_tres() { $SACCTMGR -n -P show tres format=type,name | tr '|' / | grep -x \"$1\" "
         "> /dev/null; }\n"
      << "need_tres() {\n"
      << "  local t waited=0\n"
      << "  for t in \"$@\"; do\n"
      << "    until has_tres \"$t\"; do\n"
      << "      if [ \"$waited\" -ge \"${TRES_WAIT:-60}\" ]; then\n"
      << "        echo \"sacctmgr.sh: TRES $t is not registered after ${waited}s: add it to \"\\\n"
      << "          \"AccountingStorageTRES (slurm-policy.conf), restart slurmctld, run this \"\\\n"
      << "          \"again (nothing was changed)\" >&2\n"
      << "        return 1\n"
      << "      fi\n"
      << "      [ \"$waited\" -gt 0 ] || echo \"sacctmgr.sh: waiting for slurmctld to register "
         "TRES $t\" >&2\n"
      << "      sleep 1\n"
      << "      waited=$((waited + 1))\n"
      << "    done\n"
      << "  done\n"
      << "}\n"
      << "need_tres " << Join(gres, " ") << "\n\n";
  }

  void WriteScript() {
    std::ostringstream s;
    WriteScriptHelpers(s);
    WriteTresCheck(s);
    WriteQosCommands(s);
    WriteAccountCommands(s);
    if (!opts_.users.empty()) {
      s << "\n# ---- Users (--user): an association under every namespace account\n";
      for (const auto& u : opts_.users)
        for (const auto& a : accounts_)
          if (a.is_namespace)
            s << "has_user " << u << " " << a.name << " || $SACCTMGR -i add user " << u
              << " Account=" << a.name << " ${CLUSTER:+Cluster=$CLUSTER}\n";
      out_->user_count = static_cast<int>(opts_.users.size());
    }
    out_->sacctmgr_script = s.str();
    out_->slurm_conf = conf_.str();
  }

  // The script's header and its shell functions (has_qos, has_account, has_user, set_parent,
  // set_preempt).
  void WriteScriptHelpers(std::ostringstream& s) const {
    s << "#!/usr/bin/env bash\n"
      << "# Slurm accounting objects generated by " << opts_.generator << " from "
      << Safe(opts_.source_label) << " (docs/slurm.md).\n"
      << "# Idempotent: each object is added when missing, then set to the policy's values; run it "
         "again\n"
      << "# after any change. Needs sacctmgr (SLURM_CONF in the environment) as a Slurm admin.\n"
      << "set -euo pipefail\n"
      << "SACCTMGR=${SACCTMGR:-sacctmgr}\n"
      << "CLUSTER=" << opts_.cluster << "\n"
      << "has_qos() { [ -n \"$($SACCTMGR -n -P show qos where name=\"$1\" format=name)\" ]; }\n"
      << "has_account() { $SACCTMGR -n -P show assoc where account=\"$1\" "
         "${CLUSTER:+cluster=$CLUSTER} "
         "format=account,user | grep -x \"$1|\" > /dev/null; }\n"
      << "has_user() { $SACCTMGR -n -P show assoc where account=\"$2\" user=\"$1\" "
         "${CLUSTER:+cluster=$CLUSTER} "
         "format=user | grep -x \"$1\" > /dev/null; }\n"
      << "# (grep without -q and sed read all their input: no SIGPIPE for sacctmgr under "
         "pipefail.)\n"
      << "# sacctmgr refuses (\"Nothing modified\", exit 1) to set the parent an account already "
         "has.\n"
      << "set_parent() {\n"
      << "  local cur\n"
      << "  cur=$($SACCTMGR -n -P show assoc where account=\"$1\" ${CLUSTER:+cluster=$CLUSTER} "
         "format=user,parentname "
         "| sed -n 's/^|//p' | sed -n 1p)\n"
      << "  [ \"$cur\" = \"$2\" ] || $SACCTMGR -i modify account where name=\"$1\" "
         "${CLUSTER:+cluster=$CLUSTER} set "
         "Parent=\"$2\"\n"
      << "}\n"
      << "# Preempt lists are written only when they change, and never as an empty \"Preempt=\": "
         "sacctmgr 22.05\n"
      << "# then sets the bit of QoS id 0 in slurmdbd's cache, and every later Preempt= change "
         "fails with\n"
      << "# \"QOS Preemption loop detected\" until slurmdbd restarts.\n"
      << "sorted() { tr , '\\n' | sed '/^$/d' | sort | paste -sd, -; }\n"
      << "set_preempt() {\n"
      << "  local cur\n"
      << "  cur=$($SACCTMGR -n -P show qos where name=\"$1\" format=preempt | sorted)\n"
      << "  [ \"$cur\" = \"$(echo \"$2\" | sorted)\" ] && return 0\n"
      << "  if [ -n \"$2\" ]; then $SACCTMGR -i modify qos where name=\"$1\" set Preempt=\"$2\"\n"
      << "  else $SACCTMGR -i modify qos where name=\"$1\" set Preempt-=\"$cur\"; fi\n"
      << "}\n\n";
  }

  void WriteQosCommands(std::ostringstream& s) const {
    s << "# ---- QoS ("
      << (policy_.preemption_type == PreemptionType::kQoS ? "one per Arbiter QoS"
                                                          : "one per PriorityClass")
      << "); every QoS first, so that Preempt lists can name them\n";
    for (const auto& q : qos_)
      s << "has_qos " << q.name << " || $SACCTMGR -i add qos " << q.name << "\n";
    for (const auto& q : qos_) {
      s << "# " << q.comment << "\n";
      s << "$SACCTMGR -i modify qos where name=" << q.name << " set Priority=" << q.priority
        << " PreemptMode=" << q.preempt_mode << " GraceTime=" << q.grace_s << " UsageFactor=1\n";
      s << "set_preempt " << q.name << " \"" << Join(q.preempt, ",") << "\"\n";
    }
    if (!qos_.empty())
      s << "# UsageFactor=1: Arbiter prices every tier alike (the PriceBook), so usage counts in "
           "full for fairshare "
           "and limits.\n";
  }

  // The QoS a namespace's account may use (its association's QOS list; enforced with
  // AccountingStorageEnforce=qos): "normal", the default, and every QoS whose spec.namespaces is
  // unset or names the namespace.
  std::vector<std::string> AllowedQos(const std::string& ns) const {
    std::vector<std::string> allowed = {"normal"};
    for (const auto& q : qos_)
      if (q.name != "normal" &&
          (!q.namespaces ||
           std::find(q.namespaces->begin(), q.namespaces->end(), ns) != q.namespaces->end()))
        allowed.push_back(q.name);
    return allowed;
  }

  // Each account: added when missing, then its parent and limits set (a namespace's also its
  // job counts and allowed QoS).
  void WriteAccountCommands(std::ostringstream& s) const {
    std::string default_qos = "normal";
    if (policy_.preemption_type == PreemptionType::kPriority)
      for (const auto& pc : m_.priority_classes)
        if (pc.global_default) default_qos = QosNameOf(pc.meta.name);
    s << "\n# ---- Accounts: a parent account per ElasticQuota cohort, then one account per "
         "namespace\n";
    std::vector<std::string> tracked = {"cpu", "mem", "gres/gpu"};
    tracked.insert(tracked.end(), gpu_tres_.begin(), gpu_tres_.end());
    for (const auto& a : accounts_) {
      for (const auto& c : a.comments) s << "# " << c << "\n";
      s << "has_account " << a.name << " || $SACCTMGR -i add account " << a.name
        << " Parent=" << a.parent << " Description=\"" << a.description
        << "\" Organization=arbiter ${CLUSTER:+Cluster=$CLUSTER}\n";
      // Every tracked TRES is set (-1: no limit), so a limit removed from the policy is removed
      // here.
      std::vector<std::string> grp;
      for (const auto& t : tracked) {
        auto it = a.grp_tres.find(t);
        grp.push_back(
            t + "=" +
            (it == a.grp_tres.end() ? std::string("-1") : std::to_string(it->second.value)));
      }
      s << "set_parent " << a.name << " " << a.parent << "\n";
      s << "$SACCTMGR -i modify account where name=" << a.name
        << " ${CLUSTER:+cluster=$CLUSTER} set GrpTRES=" << Join(grp, ",");
      if (a.is_namespace) {
        s << " GrpJobs=" << (a.grp_jobs ? std::to_string(a.grp_jobs->value) : "-1")
          << " GrpSubmitJobs=" << (a.grp_submit ? std::to_string(a.grp_submit->value) : "-1")
          << " QOS=" << Join(AllowedQos(a.ns), ",") << " DefaultQOS=" << default_qos;
      }
      s << "\n";
    }
  }

  const ManifestSet& m_;
  const SourceLocator* loc_;
  NameMap names_;
  ExportOptions opts_;
  ExportResult* out_;
  PoolPolicy policy_;
  std::set<std::string> namespaces_, products_, migs_, gpu_tres_;
  std::map<std::string, std::vector<const ElasticQuota*>> cohort_members_;
  std::map<std::string, std::string> cohort_account_;
  std::vector<QosOut> qos_;
  std::vector<AccountOut> accounts_;
  std::ostringstream conf_;
  std::optional<PriceBook> book_;  // the version exported
};

}  // namespace

ExportResult ExportPolicy(const ManifestSet& set, const SourceLocator* locator, NameMap names,
                          const ExportOptions& opts) {
  ExportResult r;
  Exporter(set, locator, std::move(names), opts, &r).Run();
  r.diagnostics.Sort();
  return r;
}

}  // namespace arbiter::slurm
