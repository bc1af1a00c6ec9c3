// Discovery bodies as kube-apiserver shapes them, built from the resource table (resources.h).
//
//   GET /version            VersionBody
//   GET /api                CoreApiVersions        (kind APIVersions)
//   GET /apis               ApiGroupList           (kind APIGroupList, apiVersion v1)
//   GET /api/v1, /apis/G/V  ApiResourceList        (kind APIResourceList; core has no apiVersion)
//
// Aggregated discovery: kubectl 1.32 asks /api and /apis first with
//   Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,
//           application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,
//           application/json
// The caller passes the Accept header to NegotiateDiscovery: for kAggregatedV2/V2Beta1 it answers
// AggregatedDiscovery(...) with Content-Type AggregatedContentType(...) (and `Vary: Accept`); for
// kLegacy the plain bodies above with Content-Type application/json. Both shapes describe the
// same table, so a client gets the same resources either way (client-go falls back to the plain
// per-group-version lists when the response's Content-Type is plain JSON).
// Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::kube {

// /version. kubectl warns when the server's minor version is more than one away from its own.
struct VersionInfo {
  std::string major = "1";
  std::string minor = "32";
  std::string git_version = "v1.32.0";  // semantic version, "v" prefix
  std::string git_commit;               // "" allowed
  std::string build_date = "1970-01-01T00:00:00Z";
  std::string platform = "linux/amd64";
};
// The default for Arbiter: Kubernetes API level 1.32, gitVersion "v1.32.0+arbiter-<version>".
VersionInfo ArbiterVersionInfo(std::string_view arbiter_version);
nlohmann::json VersionBody(const VersionInfo& v);

// /api. server_address ("127.0.0.1:6443") fills serverAddressByClientCIDRs when not empty.
nlohmann::json CoreApiVersions(std::string_view server_address = "");
// /apis: every served group but core, each with its one version as preferredVersion.
nlohmann::json ApiGroupList();
// /apis/G (kind APIGroup); nullopt when the group is not served (404).
std::optional<nlohmann::json> ApiGroup(std::string_view group);
// /api/v1 (group "") or /apis/G/V; nullopt when not served (404). Subresources are listed as
// "pods/status" entries after their parent, as kube-apiserver lists them.
std::optional<nlohmann::json> ApiResourceList(std::string_view group, std::string_view version);

enum class DiscoveryShape { kLegacy, kAggregatedV2, kAggregatedV2Beta1 };
// The first aggregated media type in `accept` that is served, else kLegacy ("" -> kLegacy).
DiscoveryShape NegotiateDiscovery(std::string_view accept);
// "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" (v2beta1 alike);
// "application/json" for kLegacy.
std::string DiscoveryContentType(DiscoveryShape shape);
// APIGroupDiscoveryList for /api (core = true: the core group only) or /apis (every other group).
nlohmann::json AggregatedDiscovery(bool core, DiscoveryShape shape = DiscoveryShape::kAggregatedV2);

}  // namespace arbiter::kube
