// kube-apiserver's self reviews, answered from Arbiter's authorization policy (auth.h), so that
// `kubectl auth can-i` and `kubectl auth whoami` tell a user what the hook in front of every
// request would decide:
//   SelfSubjectAccessReview (authorization.k8s.io/v1, POST .../selfsubjectaccessreviews):
//     spec.resourceAttributes {namespace, verb, group, resource, subresource, name} or
//     spec.nonResourceAttributes {path, verb}; status.allowed and status.reason (the rule that
//     allowed it, or kube-apiserver's "cannot" sentence). Other fields of the attributes
//     (version, fieldSelector, labelSelector) are echoed and do not change the answer; the
//     namespace of a served cluster-scoped resource (nodes, priorityclasses, ...) is dropped, as
//     the request itself carries none.
//   SelfSubjectReview (authentication.k8s.io/v1, POST .../selfsubjectreviews): status.userInfo
//     {username, uid, groups}.
// Pure: JSON in, JSON out.
#pragma once

#include <nlohmann/json.hpp>

#include "adapters/kube/auth.h"
#include "core/status.h"

namespace arbiter::kube {

// The attributes a SelfSubjectAccessReview body asks about. An error (answer 400) when the
// body is not a SelfSubjectAccessReview of authorization.k8s.io/v1 or sets both or neither of
// resourceAttributes and nonResourceAttributes (kube-apiserver's validation).
Result<RequestAttributes> AccessReviewAttributes(const nlohmann::json& body);

// The review answered (201): the request's spec echoed, status {allowed, reason}.
nlohmann::json AccessReviewResponse(const nlohmann::json& request, const Decision& decision,
                                    const std::string& denied_reason);

// The SelfSubjectReview answer for `user` (201).
nlohmann::json SelfSubjectReviewResponse(const UserInfo& user);

}  // namespace arbiter::kube
