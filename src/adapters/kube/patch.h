// PATCH bodies as kube-apiserver applies them, on objects held as Kubernetes JSON.
//
//   application/json-patch+json            RFC 6902 JSON Patch (add, remove, replace, move, copy,
//                                          test), every resource
//   application/merge-patch+json           RFC 7386 JSON merge patch (null deletes; lists are
//                                          replaced whole), every resource
//   application/strategic-merge-patch+json strategic merge patch, built-in kinds only (as for
//                                          CRDs, arbiter.dev kinds answer 415; kubectl falls back
//                                          to a merge patch for them)
//   application/apply-patch+yaml           server-side apply (YAML or JSON body), every resource
//
// Strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch), the subset kubectl 1.32's
// `apply` and `edit`/`patch` send for our kinds:
//   - maps merge recursively; a null value deletes the key;
//   - lists with a merge key merge element by element (the table below); a patch element
//     {"<key>": v, "$patch": "delete"} deletes the element; {"$patch": "replace"} in a list
//     replaces the list by the other patch elements; other lists are atomic (replaced whole);
//   - primitive lists with the merge strategy (metadata.finalizers, node spec.podCIDRs) are a set
//     union; "$deleteFromPrimitiveList/<key>": [values] removes values;
//   - "$setElementOrder/<key>": [...] orders the merged list: the listed elements in that order,
//     then the elements only the live object has, in their live order (kube interleaves those
//     by their live positions; the set of elements is the same);
//   - "$retainKeys": [keys] in a map drops the merged map's other keys;
//   - "$patch": "replace" in a map replaces the map, "$patch": "delete" deletes it.
// Merge keys (from the Go types' patchMergeKey tags): metadata.ownerReferences by uid; in Pods
// spec.{containers,initContainers,ephemeralContainers} by name and within them env by name,
// ports by containerPort, volumeMounts by mountPath, volumeDevices by devicePath; spec.volumes by
// name (retainKeys), imagePullSecrets by name, hostAliases by ip, topologySpreadConstraints by
// topologyKey, schedulingGates and resourceClaims by name, status.conditions by type,
// status.podIPs/hostIPs by ip; Node status.conditions and status.addresses by type; Namespace and
// PodDisruptionBudget status.conditions by type. Everything else is atomic — tolerations,
// taints, LimitRange limits included, as in Kubernetes.
//
// Server-side apply, simplified: the applied configuration is merged into the live object by
// the same merge keys (maps recursively, keyed lists element by element, atomic lists
// replaced; for arbiter.dev kinds every list is atomic, as for a CRD without list markers).
// Ownership is tracked for apply managers only: metadata.managedFields gets one entry per
// manager ({manager, operation: Apply, apiVersion, time, fieldsType: FieldsV1, fieldsV1} with
// kube's f:/k:/v: field set; apiVersion, kind, metadata.name/namespace and status are never
// owned), and a field (or keyed list element, or set member) the manager applied before and no
// longer applies is removed unless another apply manager owns it. Not modelled: ownership by
// updates (PUT/PATCH/client-side apply leave no managedFields here, and their fields can be
// removed by an apply manager that once set them), conflicts between managers (`force` is
// accepted and ignored).
//
// Hostile bodies: a body nesting deeper than 64 levels, or YAML whose aliases expand to more than
// a million nodes, is refused (kInvalidArgument) before any recursion. A JSON Patch of more than
// 10,000 operations, or whose "copy" operations add more than 3 MiB in all, is refused
// (kResourceExhausted: 413 with kube-apiserver's message) as kube-apiserver bounds it.
// Errors are Status values (never exceptions): kInvalidArgument for a body that does not parse
// or cannot be applied (answer 400 BadRequest with the message, or 422 for a JSON Patch `test`
// that fails — kConflict here). apiVersion, kind, metadata.name and metadata.namespace of the
// result are for the caller to check (kube refuses a patch that changes them).
// Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/resources.h"
#include "core/status.h"

namespace arbiter::kube {

enum class PatchType { kJsonPatch, kMergePatch, kStrategicMergePatch, kApply };

// From a Content-Type header (parameters such as "; charset=utf-8" ignored); nullopt when it is
// none of the four.
std::optional<PatchType> PatchTypeFromContentType(std::string_view content_type);
std::string ContentTypeOf(PatchType t);
// The patch types resource `r` takes: strategic merge for the built-in groups only.
std::vector<PatchType> AcceptedPatchTypes(const ResourceInfo& r);
bool Accepts(const ResourceInfo& r, PatchType t);

// RFC 7386.
Result<nlohmann::json> ApplyMergePatch(const nlohmann::json& live, const nlohmann::json& patch);
// RFC 6902. A failed `test` is kConflict; everything else kInvalidArgument.
Result<nlohmann::json> ApplyJsonPatch(const nlohmann::json& live, const nlohmann::json& patch);
// Strategic merge patch with the merge keys of `r`'s kind (see above).
Result<nlohmann::json> ApplyStrategicMergePatch(const nlohmann::json& live,
                                                const nlohmann::json& patch, const ResourceInfo& r);
// Server-side apply: `live` is nullptr when the object does not exist yet (the result is the
// applied object, for the caller to create). The applied object must name the same apiVersion
// and kind as `r` (kInvalidArgument otherwise).
struct ApplyOptions {
  std::string field_manager = "kubectl";  // ?fieldManager= (kubectl --server-side sends "kubectl")
  std::string now_rfc3339;                // managedFields[].time; "" leaves it out
};
Result<nlohmann::json> ApplyServerSide(const nlohmann::json* live, const nlohmann::json& applied,
                                       const ResourceInfo& r, const ApplyOptions& o);
// The same with ApplyOptions{} (manager "kubectl", no time).
Result<nlohmann::json> ApplyServerSide(const nlohmann::json* live, const nlohmann::json& applied,
                                       const ResourceInfo& r);

// A request body as JSON: JSON text, or (for apply-patch+yaml) one YAML document with YAML 1.2
// core-schema scalars (null, true/false, integers, floats; quoted scalars stay strings).
Result<nlohmann::json> ParseBody(std::string_view text, PatchType t);
// A create's or update's `application/yaml` body as JSON: its first YAML document, as
// kube-apiserver takes it (the others are not read into the object), with the same bounds as
// above (nesting, aliases expanding to at most 1,000,000 nodes) and YAML 1.2 core-schema scalars
// (kube-apiserver's YAML 1.1 reads `yes` as a boolean; here it stays a string).
Result<nlohmann::json> ParseYamlBody(std::string_view text);

// Parses `body` as `t` and applies it to `live` (nullptr: only kApply can create); `apply` is
// for kApply (the request's fieldManager and the time).
Result<nlohmann::json> ApplyPatch(PatchType t, const nlohmann::json* live, std::string_view body,
                                  const ResourceInfo& r, const ApplyOptions& apply);
// The same with ApplyOptions{}.
Result<nlohmann::json> ApplyPatch(PatchType t, const nlohmann::json* live, std::string_view body,
                                  const ResourceInfo& r);

}  // namespace arbiter::kube
