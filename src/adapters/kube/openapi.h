// The OpenAPI v3 documents kubectl 1.32 reads before `apply`, `create`, `replace`, `edit` and
// `explain`.
//
// What kubectl 1.32 fetches (seen with a recording server, tests/kube/openapi_test.cc): GET
// /version, GET /openapi/v3 (the index: {"paths": {"api/v1": {"serverRelativeURL":
// "/openapi/v3/api/v1?hash=..."}, "apis/policy/v1": ...}}), then the group-version document of the
// object's kind. There it looks for the PATCH operation whose x-kubernetes-group-version-kind is
// the kind and for a `fieldValidation` query parameter: found, kubectl validates on the server
// (it sends ?fieldValidation=Strict with --validate=strict, the default; Warn with
// --validate=warn) and skips client-side validation, so /openapi/v2 (which kubectl asks for as
// protobuf only) is never needed. Without /openapi/v3 kubectl falls back to /openapi/v2 and,
// with no v2 either, refuses: "failed to download openapi".
//
// The documents list, for every served resource, its collection and item paths with their
// operations (get, list, create, update, patch, delete), each tagged with
// x-kubernetes-group-version-kind and x-kubernetes-action, and a component schema per kind
// (an object with apiVersion, kind, metadata, spec, status, x-kubernetes-group-version-kind).
// The PATCH request bodies name JSON Patch, merge patch and apply patch — not strategic merge
// patch, so kubectl's client-side apply computes its strategic patch from its compiled-in types
// for built-in kinds (and a merge patch for arbiter.dev kinds) instead of from these schemas.
// The daemon must therefore do the strict validation itself (`fieldValidation`): the manifest
// loader's unknown-field errors are that.
// Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace arbiter::kube {

// GET /openapi/v3: the index, each entry's serverRelativeURL carrying ?hash=<content hash>.
nlohmann::json OpenApiV3Index();
// GET /openapi/v3/api/v1 or /openapi/v3/apis/<group>/<version> (query ignored): the document;
// nullopt (404) for a group version that is not served. `path` is "api/v1" or "apis/G/V", with or
// without the "/openapi/v3/" prefix.
std::optional<nlohmann::json> OpenApiV3Document(std::string_view path);

}  // namespace arbiter::kube
