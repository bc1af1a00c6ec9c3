// A Job's spec checked as kube-apiserver's pkg/apis/batch/validation does (ValidateJobSpec), with
// its messages.
#include <algorithm>
#include <cctype>

#include "server/state/job_controller_detail.h"

namespace arbiter::server {

namespace {

constexpr int64_t kMaxFailedIndexes = 100000;           // maxFailedIndexesForIndexedJob
constexpr int64_t kCompletionsSoftLimit = 100000;       // completionsSoftLimit
constexpr int64_t kParallelismHighCompletions = 10000;  // parallelismLimitForHighCompletions
constexpr int64_t kMaxFailedHighCompletions = 10000;    // maxFailedIndexesLimitForHighCompletions
constexpr size_t kMaxSucceededIndexesLength = 64 * 1024;
constexpr size_t kMaxSuccessPolicyRules = 20;

Diagnostic JobError(const std::string& name, const std::string& field, const std::string& message) {
  return Diagnostic{Severity::kError, kApiRequest, 1, "Job", name, field, message};
}

std::string Num(int64_t v) { return std::to_string(v); }

// kube's validatePodFailurePolicyRule, the parts modelled here.
void ValidatePodFailurePolicy(const std::string& name, const Json& spec, Diagnostics& d) {
  const Json& rules = job_detail::Member(job_detail::Member(spec, "podFailurePolicy"), "rules");
  if (!rules.is_array()) return;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string path = "spec.podFailurePolicy.rules[" + std::to_string(i) + "]";
    const Json& action = job_detail::Member(rules[i], "action");
    if (action.is_null())
      d.Add(JobError(
          name, path + ".action",
          "Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"));
    else if (action == "FailIndex" && !job_detail::IntField(spec, "backoffLimitPerIndex"))
      d.Add(JobError(name, path + ".action",
                     "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"));
    else if (action != "Count" && action != "FailJob" && action != "Ignore" &&
             action != "FailIndex")
      d.Add(JobError(name, path + ".action",
                     "Unsupported value: " + action.dump() +
                         ": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""));
    const Json& codes = job_detail::Member(rules[i], "onExitCodes");
    const Json& conds = job_detail::Member(rules[i], "onPodConditions");
    if (!codes.is_null() && !conds.is_null())
      d.Add(JobError(
          name, path,
          "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"));
    if (codes.is_null() && conds.is_null())
      d.Add(
          JobError(name, path,
                   "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"));
    const Json& op = job_detail::Member(codes, "operator");
    if (!codes.is_null() && op != "In" && op != "NotIn")
      d.Add(JobError(name, path + ".onExitCodes.operator",
                     "Unsupported value: " + op.dump() + ": supported values: \"In\", \"NotIn\""));
  }
}

// spec.successPolicy as Go prints the internal type in "Invalid value: ..." (json.Marshal).
std::string GoSuccessPolicy(const Json& policy) {
  const Json& in = job_detail::Member(policy, "rules");
  if (!in.is_array() || in.empty()) return "{\"Rules\":null}";
  std::string out = "{\"Rules\":[";
  for (size_t i = 0; i < in.size(); ++i)
    out += std::string(i ? "," : "") +
           "{\"SucceededIndexes\":" + job_detail::Member(in[i], "succeededIndexes").dump() +
           ",\"SucceededCount\":" + job_detail::Member(in[i], "succeededCount").dump() + "}";
  return out + "]}";
}

// kube's validateSuccessPolicyRule.
void ValidateSuccessRule(const std::string& name, const Json& rule, int64_t completions,
                         const std::string& path, Diagnostics& d) {
  const Json& indexes = job_detail::Member(rule, "succeededIndexes");
  const auto count = job_detail::IntField(rule, "succeededCount");
  if (indexes.is_null() && !count)
    d.Add(JobError(name, path,
                   "Required value: at least one of succeededCount or succeededIndexes must be "
                   "specified"));
  int64_t total = 0;
  if (indexes.is_string()) {
    const std::string& text = indexes.get_ref<const std::string&>();
    if (text.size() > kMaxSucceededIndexesLength)
      d.Add(
          JobError(name, path + ".succeededIndexes", "Too long: may not be more than 65536 bytes"));
    auto [n, error] = job_detail::CheckIndexesFormat(text, completions);
    total = n;
    if (!error.empty())
      d.Add(JobError(
          name, path + ".succeededIndexes",
          "Invalid value: " + indexes.dump() + ": error parsing succeededIndexes: " + error));
  }
  if (!count) return;
  const std::string field = path + ".succeededCount";
  if (*count < 0)
    d.Add(JobError(name, field,
                   "Invalid value: " + Num(*count) + ": must be greater than or equal to 0"));
  if (*count > completions)
    d.Add(JobError(name, field,
                   "Invalid value: " + Num(*count) + ": must be less than or equal to " +
                       Num(completions) + " (the number of specified completions)"));
  if (indexes.is_string() && *count > total)
    d.Add(JobError(name, field,
                   "Invalid value: " + Num(*count) + ": must be less than or equal to " +
                       Num(total) +
                       " (the number of indexes in the specified succeededIndexes "
                       "field)"));
}

// kube's validateSuccessPolicy (Indexed Jobs only).
void ValidateSuccessPolicy(const std::string& name, const Json& spec, Diagnostics& d) {
  const Json& policy = job_detail::Member(spec, "successPolicy");
  if (policy.is_null()) return;
  if (!job_detail::IsIndexed(spec)) {
    d.Add(JobError(name, "spec.successPolicy",
                   "Invalid value: " + GoSuccessPolicy(policy) +
                       ": requires indexed completion "
                       "mode"));
    return;
  }
  const Json& rules = job_detail::Member(policy, "rules");
  const size_t n = rules.is_array() ? rules.size() : 0;
  if (n == 0)
    d.Add(JobError(name, "spec.successPolicy.rules",
                   "Required value: at least one rules must be specified when the successPolicy "
                   "is specified"));
  if (n > kMaxSuccessPolicyRules)
    d.Add(JobError(name, "spec.successPolicy.rules",
                   "Too many: " + Num(n) + ": must have at most 20 items"));
  const int64_t completions = job_detail::IntField(spec, "completions").value_or(0);
  for (size_t i = 0; i < n; ++i)
    ValidateSuccessRule(name, rules[i], completions,
                        "spec.successPolicy.rules[" + std::to_string(i) + "]", d);
}

// The checks of completionMode: Indexed (completions, parallelism, maxFailedIndexes), and of
// backoffLimitPerIndex / maxFailedIndexes without it.
void ValidateCompletionMode(const std::string& name, const Json& spec, Diagnostics& d) {
  const Json& mode = job_detail::Member(spec, "completionMode");
  const auto completions = job_detail::IntField(spec, "completions");
  const auto parallelism = job_detail::IntField(spec, "parallelism");
  const auto per_index = job_detail::IntField(spec, "backoffLimitPerIndex");
  const auto max_failed = job_detail::IntField(spec, "maxFailedIndexes");
  if (!mode.is_null() && mode != "NonIndexed" && mode != "Indexed")
    d.Add(JobError(
        name, "spec.completionMode",
        "Unsupported value: " + mode.dump() + ": supported values: \"NonIndexed\", \"Indexed\""));
  if (mode != "Indexed") {
    if (per_index && (mode.is_null() || mode == "NonIndexed"))
      d.Add(JobError(name, "spec.backoffLimitPerIndex",
                     "Invalid value: " + Num(*per_index) + ": requires indexed completion mode"));
    if (max_failed && (mode.is_null() || mode == "NonIndexed"))
      d.Add(JobError(name, "spec.maxFailedIndexes",
                     "Invalid value: " + Num(*max_failed) + ": requires indexed completion mode"));
    return;
  }
  if (!completions)
    d.Add(JobError(name, "spec.completions", "Required value: when completion mode is Indexed"));
  if (parallelism && *parallelism > job_detail::kMaxIndexedParallelism)
    d.Add(JobError(name, "spec.parallelism",
                   "Invalid value: " + Num(*parallelism) +
                       ": must be less than or equal to 100000 when completion mode is Indexed"));
  if (completions && max_failed && *max_failed > *completions)
    d.Add(JobError(
        name, "spec.maxFailedIndexes",
        "Invalid value: " + Num(*max_failed) + ": must be less than or equal to completions"));
  if (max_failed && *max_failed > kMaxFailedIndexes)
    d.Add(
        JobError(name, "spec.maxFailedIndexes",
                 "Invalid value: " + Num(*max_failed) + ": must be less than or equal to 100000"));
  if (!completions || *completions <= kCompletionsSoftLimit || !per_index) return;
  const std::string high =
      " when completions are above 100000 and used with backoff limit per index";
  if (!max_failed)
    d.Add(JobError(name, "spec.maxFailedIndexes",
                   "Required value: must be specified when completions is above 100000"));
  if (parallelism && *parallelism > kParallelismHighCompletions)
    d.Add(JobError(
        name, "spec.parallelism",
        "Invalid value: " + Num(*parallelism) + ": must be less than or equal to 10000" + high));
  if (max_failed && *max_failed > kMaxFailedHighCompletions)
    d.Add(JobError(
        name, "spec.maxFailedIndexes",
        "Invalid value: " + Num(*max_failed) + ": must be less than or equal to 10000" + high));
}

void ValidateCounts(const std::string& name, const Json& spec, Diagnostics& d) {
  for (const char* key : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                          "backoffLimitPerIndex", "maxFailedIndexes"}) {
    const Json& v = job_detail::Member(spec, key);
    const std::string field = std::string("spec.") + key;
    if (v.is_null()) continue;
    if (!v.is_number_integer())
      d.Add(JobError(name, field, "Invalid value: " + v.dump() + ": must be an integer"));
    else if (v.get<int64_t>() < 0)
      d.Add(JobError(name, field,
                     "Invalid value: " + v.dump() + ": must be greater than or equal to 0"));
  }
  if (!job_detail::Member(spec, "maxFailedIndexes").is_null() &&
      job_detail::Member(spec, "backoffLimitPerIndex").is_null())
    d.Add(JobError(name, "spec.backoffLimitPerIndex",
                   "Required value: when maxFailedIndexes is specified"));
}

// kube's validatePodReplacementPolicy: Failed or TerminatingOrFailed; only Failed with a
// podFailurePolicy.
void ValidatePodReplacementPolicy(const std::string& name, const Json& spec, Diagnostics& d) {
  const Json& v = job_detail::Member(spec, "podReplacementPolicy");
  if (v.is_null()) return;
  const bool policy = !job_detail::Member(spec, "podFailurePolicy").is_null();
  if (policy && v != "Failed")
    d.Add(JobError(name, "spec.podReplacementPolicy",
                   "Unsupported value: " + v.dump() + ": supported values: \"Failed\""));
  else if (!policy && v != "Failed" && v != "TerminatingOrFailed")
    d.Add(JobError(name, "spec.podReplacementPolicy",
                   "Unsupported value: " + v.dump() +
                       ": supported values: \"Failed\", \"TerminatingOrFailed\""));
}

constexpr size_t kMaxManagedByLength = 63;  // maxManagedByLength

// apimachinery's IsDNS1123Subdomain, its messages.
std::vector<std::string> Dns1123SubdomainErrors(const std::string& s) {
  std::vector<std::string> out;
  if (s.size() > 253) out.push_back("must be no more than 253 characters");
  bool ok = !s.empty();
  size_t start = 0;
  while (ok) {
    const size_t dot = s.find('.', start);
    const std::string label = s.substr(start, dot == std::string::npos ? dot : dot - start);
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    ok = !label.empty() && alnum(label.front()) && alnum(label.back()) &&
         std::all_of(label.begin(), label.end(), [&](char c) { return alnum(c) || c == '-'; });
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!ok)
    out.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  return out;
}

// kube's spec.managedBy checks: apimachinery's IsDomainPrefixedPath, then at most 63 bytes.
void ValidateManagedBy(const std::string& name, const Json& spec, Diagnostics& d) {
  const Json& v = job_detail::Member(spec, "managedBy");
  if (v.is_null()) return;
  const std::string field = "spec.managedBy";
  if (!v.is_string()) {
    d.Add(JobError(name, field, "Invalid value: " + v.dump() + ": must be a string"));
    return;
  }
  const std::string& by = v.get_ref<const std::string&>();
  const size_t slash = by.find('/');
  if (by.empty()) {
    d.Add(JobError(name, field, "Required value"));
  } else if (slash == std::string::npos || slash == 0 || slash + 1 == by.size()) {
    d.Add(JobError(name, field,
                   "Invalid value: " + v.dump() +
                       ": must be a domain-prefixed path (such as \"acme.io/foo\")"));
  } else {
    const std::string host = by.substr(0, slash), path = by.substr(slash + 1);
    for (const auto& e : Dns1123SubdomainErrors(host))
      d.Add(JobError(name, field, "Invalid value: " + Json(host).dump() + ": " + e));
    static const std::string kPathChars = "/-._~%!$&'()*+,;=:";
    const bool path_ok = std::all_of(path.begin(), path.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
             kPathChars.find(c) != std::string::npos;
    });
    if (!path_ok)
      d.Add(JobError(name, field,
                     "Invalid value: " + Json(path).dump() +
                         ": Invalid path (regex used for validation is "
                         "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"));
  }
  if (by.size() > kMaxManagedByLength)
    d.Add(JobError(name, field, "Too long: may not be more than 63 bytes"));
}

// apimachinery's IsDNS1123Label: at most 63 characters of [a-z0-9-], starting and ending with
// [a-z0-9].
bool IsDns1123Label(const std::string& s) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return !s.empty() && s.size() <= 63 && alnum(s.front()) && alnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// kube's ValidateJob for an Indexed Job: its last index's pod hostname, NAME-(completions-1),
// must be a DNS label (else no pod of that index could be made).
void ValidateIndexedHostname(const std::string& display, const Json& job, const Json& spec,
                             Diagnostics& d) {
  const auto completions = job_detail::IntField(spec, "completions");
  const Json& name = job_detail::Member(job_detail::Member(job, "metadata"), "name");
  if (!job_detail::IsIndexed(spec) || !completions || *completions <= 0 || !name.is_string())
    return;
  const std::string hostname =
      name.get_ref<const std::string&>() + "-" + std::to_string(*completions - 1);
  if (!IsDns1123Label(hostname))
    d.Add(JobError(display, "metadata.name",
                   "Invalid value: " + name.dump() +
                       ": will not able to create pod with invalid DNS label: " + hostname));
}

}  // namespace

Diagnostics ValidateJob(const Json& job, const std::string& display_name) {
  Diagnostics d;
  const Json& spec = job_detail::Member(job, "spec");
  ValidateCounts(display_name, spec, d);
  ValidateCompletionMode(display_name, spec, d);
  const Json& suspend = job_detail::Member(spec, "suspend");
  if (!suspend.is_null() && !suspend.is_boolean())
    d.Add(JobError(display_name, "spec.suspend",
                   "Invalid value: " + suspend.dump() + ": not a bool"));
  ValidatePodFailurePolicy(display_name, spec, d);
  ValidatePodReplacementPolicy(display_name, spec, d);
  ValidateSuccessPolicy(display_name, spec, d);
  ValidateManagedBy(display_name, spec, d);
  ValidateIndexedHostname(display_name, job, spec, d);
  // The name is the value of the pods' `job-name` and `batch.kubernetes.io/job-name` labels, at
  // most 63 bytes: kube refuses a longer one on the template's labels (its generated selector).
  // Accepted, such a Job never made a pod (each was refused) and stayed without a condition.
  const Json& name = job_detail::Member(job_detail::Member(job, "metadata"), "name");
  if (name.is_string() && name.get_ref<const std::string&>().size() > 63)
    for (int label = 0; label < 2; ++label)
      d.Add(JobError(display_name, "spec.template.labels",
                     "Invalid value: " + name.dump() + ": must be no more than 63 bytes"));
  const Json& tmpl = job_detail::Member(spec, "template");
  if (!tmpl.is_object()) {
    d.Add(JobError(display_name, "spec.template", "Required value"));
    return d;
  }
  const Json& policy = job_detail::Member(job_detail::Member(tmpl, "spec"), "restartPolicy");
  const std::string restart = policy.is_string() ? policy.get<std::string>() : "Always";
  if (restart != "OnFailure" && restart != "Never")
    d.Add(JobError(
        display_name, "spec.template.spec.restartPolicy",
        "Unsupported value: \"" + restart + "\": supported values: \"OnFailure\", \"Never\""));
  else if (!job_detail::Member(spec, "podFailurePolicy").is_null() && restart != "Never")
    d.Add(JobError(display_name, "spec.template.spec.restartPolicy",
                   "Invalid value: \"" + restart +
                       "\": only \"Never\" is supported when podFailurePolicy is specified"));
  return d;
}

}  // namespace arbiter::server
