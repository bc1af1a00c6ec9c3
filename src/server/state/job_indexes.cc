// Indexed Jobs' success and failure rules (job_controller_detail.h): spec.successPolicy as kube's
// success_policy.go reads it, and spec.backoffLimitPerIndex as its indexed_job_utils.go keeps it
// (the failure count travels in the replacement pod's annotation, so it is derived from the pods).
#include <algorithm>
#include <charconv>

#include "server/state/job_controller_detail.h"

namespace arbiter::server::job_detail {

namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;  // [first, last], increasing

// Go's strconv.Atoi: an optional sign and decimal digits, nothing else.
std::optional<int64_t> Atoi(const std::string& s) {
  size_t start = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (start == s.size() || s.size() > 19) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data() + start, s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return s[0] == '-' ? -v : v;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t at; (at = s.find(sep, pos)) != std::string::npos; pos = at + 1)
    out.push_back(s.substr(pos, at - pos));
  out.push_back(s.substr(pos));
  return out;
}

// kube's parseIndexesFromString: bad intervals skipped, the list cut at `completions`.
Intervals ParseIntervals(const std::string& text, int64_t completions) {
  Intervals out;
  if (text.empty()) return out;
  for (const std::string& part : Split(text, ',')) {
    const std::vector<std::string> limits = Split(part, '-');
    const auto first = Atoi(limits[0]);
    if (!first) continue;
    if (*first >= completions) break;
    int64_t last = *first;
    if (limits.size() > 1) {
      const auto l = Atoi(limits[1]);
      if (!l) continue;
      last = std::min(*l, completions - 1);
    }
    if (!out.empty() && out.back().second == *first - 1)
      out.back().second = last;
    else
      out.emplace_back(*first, last);
  }
  return out;
}

bool Contains(const Intervals& iv, int64_t i) {
  auto it = std::lower_bound(iv.begin(), iv.end(), i,
                             [](const auto& x, int64_t v) { return x.second < v; });
  return it != iv.end() && it->first <= i;
}

// kube's matchSucceededIndexesRule: all the rule's indexes succeeded, or at least `count` of them.
bool MatchesIndexes(const Intervals& rule, const std::set<int64_t>& succeeded,
                    std::optional<int64_t> count) {
  int64_t total = 0, contained = 0;
  for (const auto& [first, last] : rule) total += last - first + 1;
  for (int64_t i : succeeded) contained += Contains(rule, i);
  return contained == total || (count && contained >= *count);
}

// kube's isIndexFailed: a FailIndex rule matched, or a counted failure that used the last retry.
bool IndexFailed(const Json& spec, const JobPodView& pods, const JobPodFacts& pod) {
  const std::string action = MatchPolicy(Member(spec, "podFailurePolicy"), pods, pod).first;
  if (action == "FailIndex") return true;
  return action != "Ignore" && pod.failures >= IntField(spec, "backoffLimitPerIndex").value_or(0);
}

int64_t Absolute(const JobPodFacts& pod) { return int64_t{pod.failures} + pod.ignored_failures; }

}  // namespace

int64_t CountAnnotation(const Json& pod, const char* key) {
  const Json& v = Member(Member(Member(pod, "metadata"), "annotations"), key);
  if (!v.is_string()) return 0;
  const auto n = Atoi(v.get<std::string>());
  return n && *n >= 0 && *n <= 2147483647 ? *n : 0;
}

std::optional<std::string> MatchSuccessPolicy(const Json& spec,
                                              const std::set<int64_t>& succeeded) {
  const Json& rules = Member(Member(spec, "successPolicy"), "rules");
  if (!rules.is_array() || succeeded.empty()) return std::nullopt;
  const int64_t completions = IntField(spec, "completions").value_or(0);
  for (size_t i = 0; i < rules.size(); ++i) {
    const Json& indexes = Member(rules[i], "succeededIndexes");
    const auto count = IntField(rules[i], "succeededCount");
    bool met = false;
    if (indexes.is_string()) {
      const Intervals rule = ParseIntervals(indexes.get<std::string>(), completions);
      met = !rule.empty() && MatchesIndexes(rule, succeeded, count);
    } else if (count) {
      met = static_cast<int64_t>(succeeded.size()) >= *count;
    }
    if (met) return "Matched rules at index " + std::to_string(i);
  }
  return std::nullopt;
}

IndexFailures TrackFailedIndexes(const Json& spec, const Json& status, const JobPodView& pods,
                                 const std::set<int64_t>& completed,
                                 const std::set<int64_t>& running) {
  IndexFailures f;
  const int64_t completions = IntField(spec, "completions").value_or(0);
  const Json& previous = Member(status, "failedIndexes");
  const std::string text = previous.is_string() ? previous.get<std::string>() : "";
  for (const auto& [first, last] : ParseIntervals(text, completions))
    for (int64_t i = first; i <= last; ++i) f.failed.insert(i);
  std::vector<const JobPodFacts*> candidates;  // tracked failed pods of a valid index
  for (const JobPodFacts& pod : pods.table.pods()) {
    const JobPodFacts* p = &pod;
    const int64_t i = p->index;
    if (i < 0 || i >= completions || !p->tracked || p->phase != JobPodFacts::Phase::kFailed ||
        p->deleting)
      continue;
    if (IndexFailed(spec, pods, *p)) f.failed.insert(i);
    candidates.push_back(p);
  }
  for (const JobPodFacts* p : candidates) {  // kube's getPodsWithDelayedDeletionPerIndex
    const int64_t i = p->index;
    if (completed.count(i) || f.failed.count(i) || running.count(i)) continue;
    auto [it, fresh] = f.last_failed.emplace(i, p);
    if (fresh) continue;
    if (Absolute(*it->second) <= Absolute(*p) && p->finished >= it->second->finished)
      it->second = p;
  }
  return f;
}

Json IndexFailureAnnotations(const Json& spec, const JobPodView& pods, const IndexFailures& f,
                             int64_t index) {
  int64_t failures = 0, ignored = 0;
  if (auto it = f.last_failed.find(index); it != f.last_failed.end()) {
    const JobPodFacts& last = *it->second;
    failures = last.failures;
    ignored = last.ignored_failures;
    (MatchPolicy(Member(spec, "podFailurePolicy"), pods, last).first == "Ignore" ? ignored
                                                                                 : failures) += 1;
  }
  Json out = {{kIndexFailureCount, std::to_string(failures)}};
  if (ignored > 0) out[kIndexIgnoredFailureCount] = std::to_string(ignored);
  return out;
}

std::optional<Millis> IndexBackoffEnd(const IndexFailures& f, int64_t index) {
  auto it = f.last_failed.find(index);
  if (it == f.last_failed.end()) return std::nullopt;
  return BackoffEnd(Absolute(*it->second) + 1, it->second->finished);
}

std::pair<int64_t, std::string> CheckIndexesFormat(const std::string& text, int64_t completions) {
  if (text.empty()) return {0, ""};
  std::optional<int64_t> previous;
  int64_t total = 0;
  for (const std::string& part : Split(text, ',')) {
    const std::vector<std::string> limits = Split(part, '-');
    if (limits.size() > 2)
      return {0, "the fragment \"" + part +
                     "\" violates the requirement that an index interval can have at most two "
                     "parts separated by '-'"};
    int64_t bounds[2] = {0, 0};
    for (size_t k = 0; k < limits.size(); ++k) {
      const auto v = Atoi(limits[k]);
      if (!v) return {0, "cannot convert string to integer for index: \"" + limits[k] + "\""};
      if (*v >= completions) return {0, "too large index: \"" + limits[k] + "\""};
      bounds[k] = *v;
    }
    if (limits.size() == 1) bounds[1] = bounds[0];
    if (limits.size() == 2 && bounds[0] >= bounds[1])
      return {0, "non-increasing order, previous: " + std::to_string(bounds[0]) +
                     ", current: " + std::to_string(bounds[1])};
    if (previous && *previous >= bounds[0])
      return {0, "non-increasing order, previous: " + std::to_string(*previous) +
                     ", current: " + std::to_string(bounds[0])};
    total += bounds[1] - bounds[0] + 1;
    previous = bounds[1];
  }
  return {total, ""};
}

}  // namespace arbiter::server::job_detail
