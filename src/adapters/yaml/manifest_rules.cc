#include "adapters/yaml/manifest_rules.h"

namespace arbiter::yaml {

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return s.front() != '-' && s.back() != '-';
}

// k8s.io/apimachinery IsDNS1123Subdomain: [a-z0-9]([-a-z0-9]*[a-z0-9])? parts joined by '.',
// at most 253 in all; a part has no length limit of its own (unlike a DNS-1123 label).
bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' || c == '-') {
      // A part starts and ends alphanumeric: no '.' or '-' at either end or next to a '.'.
      if (i == 0 || i + 1 == s.size()) return false;
      if (c == '.' && (!alnum(s[i - 1]) || !alnum(s[i + 1]))) return false;
    } else if (!alnum(c)) {
      return false;
    }
  }
  return true;
}

bool IsLabelValue(std::string_view s) {
  if (s.empty()) return true;
  if (s.size() > 63) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  for (char c : s)
    if (!(alnum(c) || c == '-' || c == '_' || c == '.')) return false;
  return alnum(s.front()) && alnum(s.back());
}

bool IsLabelKey(std::string_view s) {
  size_t slash = s.find('/');
  std::string_view name = s;
  if (slash != std::string_view::npos) {
    if (!IsDns1123Subdomain(s.substr(0, slash))) return false;
    name = s.substr(slash + 1);
  }
  return !name.empty() && IsLabelValue(name);
}

// (from e.g. `kubectl get -o yaml`)
const std::vector<std::string_view> kIgnoredMetaFields = {"uid",
                                                          "resourceVersion",
                                                          "generation",
                                                          "creationTimestamp",
                                                          "deletionTimestamp",
                                                          "deletionGracePeriodSeconds",
                                                          "ownerReferences",
                                                          "finalizers",
                                                          "managedFields",
                                                          "selfLink",
                                                          "generateName"};

const std::vector<std::string_view> kIgnoredContainerFields = {"image",
                                                               "imagePullPolicy",
                                                               "command",
                                                               "args",
                                                               "env",
                                                               "envFrom",
                                                               "ports",
                                                               "volumeMounts",
                                                               "volumeDevices",
                                                               "workingDir",
                                                               "livenessProbe",
                                                               "readinessProbe",
                                                               "startupProbe",
                                                               "lifecycle",
                                                               "securityContext",
                                                               "stdin",
                                                               "stdinOnce",
                                                               "tty",
                                                               "terminationMessagePath",
                                                               "terminationMessagePolicy",
                                                               "resizePolicy"};

const std::vector<std::string_view> kIgnoredPodSpecFields = {"volumes",
                                                             "restartPolicy",
                                                             "schedulerName",
                                                             "serviceAccountName",
                                                             "serviceAccount",
                                                             "securityContext",
                                                             "hostNetwork",
                                                             "hostPID",
                                                             "hostIPC",
                                                             "dnsPolicy",
                                                             "dnsConfig",
                                                             "imagePullSecrets",
                                                             "runtimeClassName",
                                                             "hostname",
                                                             "subdomain",
                                                             "shareProcessNamespace",
                                                             "enableServiceLinks",
                                                             "automountServiceAccountToken",
                                                             "readinessGates",
                                                             "hostAliases",
                                                             "os",
                                                             "setHostnameAsFQDN",
                                                             "ephemeralContainers",
                                                             "hostUsers",
                                                             "resourceClaims"};

const std::vector<std::string_view> kWarnedPodSpecFields = {"nodeName", "schedulingGates"};

const std::vector<std::string_view> kIgnoredNodeSpecFields = {"podCIDR", "podCIDRs", "providerID",
                                                              "configSource", "externalID"};

const std::vector<std::string_view> kIgnoredNodeStatusFields = {
    "conditions",      "addresses", "daemonEndpoints", "nodeInfo",        "images",  "volumesInUse",
    "volumesAttached", "phase",     "config",          "runtimeHandlers", "features"};

}  // namespace arbiter::yaml
