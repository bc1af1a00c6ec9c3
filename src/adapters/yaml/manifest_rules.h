// What the manifest loader accepts in names and which Kubernetes fields it ignores: shared by
// the yaml-cpp path (manifest_loader.cc) and the direct path (fast_objects.cc), so that both
// take the same documents the same way.
#pragma once

#include <string_view>
#include <vector>

namespace arbiter::yaml {

bool IsDns1123Label(std::string_view s);      // at most 63 of [a-z0-9-], alphanumeric ends
bool IsDns1123Subdomain(std::string_view s);  // [a-z0-9.-], at most 253, no part limit
bool IsLabelValue(std::string_view s);        // empty, or at most 63 of [A-Za-z0-9-_.]
bool IsLabelKey(std::string_view s);          // [prefix/]name

// Fields valid in Kubernetes that Arbiter accepts and does not use (no message).
extern const std::vector<std::string_view> kIgnoredMetaFields;       // metadata
extern const std::vector<std::string_view> kIgnoredContainerFields;  // containers[] (not
                                                                     // restartPolicy)
extern const std::vector<std::string_view> kIgnoredPodSpecFields;
// Pod spec fields that change scheduling in Kubernetes: ignored with a warning.
extern const std::vector<std::string_view> kWarnedPodSpecFields;
extern const std::vector<std::string_view> kIgnoredNodeSpecFields;
extern const std::vector<std::string_view> kIgnoredNodeStatusFields;

}  // namespace arbiter::yaml
