// Bounds on what a client may send `arbiter serve`, checked before anything recurses into a body
// or stores it (docs/kube-api.md, "Limits"):
//
//   request body          3 MiB (kube-apiserver's limit; chunked bodies too): 413
//                         "Request entity too large: limit is 3145728"
//   nesting               64 levels of arrays/objects in any body or stored object: 400
//   stored object         1.5 MiB as JSON (etcd's default --max-request-bytes, which
//                         kube-apiserver stores through): 413
//   metadata.annotations  256 KiB of keys and values: 422 "metadata.annotations: Too long: must
//                         have at most 262144 bytes"; keys are qualified names (case ignored)
//   metadata.labels       keys qualified names, values ≤ 63 chars (apimachinery's messages)
//   UTF-8                 text in paths, query values and bodies must be valid UTF-8 (400)
//
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "adapters/kube/status.h"

namespace arbiter::kube {

inline constexpr size_t kMaxBodyBytes = 3 * 1024 * 1024;
inline constexpr size_t kMaxObjectBytes = 3 * 512 * 1024;
inline constexpr size_t kMaxNesting = 64;
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;

// RFC 3629 UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view s);

// True when JSON text nests arrays and objects deeper than `limit` (brackets inside strings do
// not count). Any bytes; no recursion, no allocation: for a body before it is parsed.
bool JsonTextNestsDeeperThan(std::string_view text, size_t limit);
// The same for a parsed value, without recursion.
bool NestsDeeperThan(const nlohmann::json& value, size_t limit);

// 413 RequestEntityTooLarge for a body over kMaxBodyBytes (kube-apiserver's words).
KubeStatus BodyTooLarge();
// 413 for an object that would be stored larger than kMaxObjectBytes.
KubeStatus ObjectTooLarge(size_t bytes);
// 400 for a body nesting deeper than kMaxNesting.
KubeStatus BodyTooDeep();

// Kubernetes' ObjectMeta checks on metadata.labels and metadata.annotations (apimachinery
// ValidateLabels, ValidateAnnotations), and on a pod template's (spec.template.metadata: a Job's
// pods get them), as the causes of a 422 Invalid; none when they pass. Labels and annotations
// that are not objects of strings are left to the kind's loader.
std::vector<Cause> ValidateLabelsAndAnnotations(const nlohmann::json& object);

}  // namespace arbiter::kube
