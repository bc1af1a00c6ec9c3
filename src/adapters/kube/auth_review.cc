#include "adapters/kube/auth_review.h"

#include <string>

#include "adapters/kube/resources.h"

namespace arbiter::kube {

namespace {
using Json = nlohmann::json;

// A string field of `o` ("" when absent); false when present and not a string.
bool StringField(const Json& o, const char* key, std::string* out) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}
}  // namespace

Result<RequestAttributes> AccessReviewAttributes(const Json& body) {
  if (!body.is_object() || body.value("kind", "") != "SelfSubjectAccessReview" ||
      body.value("apiVersion", "") != "authorization.k8s.io/v1")
    return Status::InvalidArgument("expected a SelfSubjectAccessReview of authorization.k8s.io/v1");
  auto spec = body.find("spec");
  if (spec == body.end() || !spec->is_object())
    return Status::InvalidArgument("spec: Required value");
  auto res = spec->find("resourceAttributes");
  auto non = spec->find("nonResourceAttributes");
  const bool has_res = res != spec->end() && !res->is_null();
  const bool has_non = non != spec->end() && !non->is_null();
  // kube-apiserver's ValidateSelfSubjectAccessReviewSpec.
  if (has_res == has_non)
    return Status::InvalidArgument(
        has_res ? "spec.nonResourceAttributes: Invalid value: cannot be specified in combination "
                  "with resourceAttributes"
                : "spec.resourceAttributes: Invalid value: exactly one of nonResourceAttributes "
                  "or resourceAttributes must be specified");
  const Json& a = has_res ? *res : *non;
  if (!a.is_object()) return Status::InvalidArgument("spec: attributes must be an object");
  RequestAttributes out;
  out.resource_request = has_res;
  bool ok = StringField(a, "verb", &out.verb);
  if (has_res) {
    ok = ok && StringField(a, "namespace", &out.namespace_) &&
         StringField(a, "group", &out.api_group) && StringField(a, "resource", &out.resource) &&
         StringField(a, "subresource", &out.subresource) && StringField(a, "name", &out.name);
  } else {
    ok = ok && StringField(a, "path", &out.path);
  }
  if (!ok) return Status::InvalidArgument("spec: attribute values must be strings");
  // A cluster-scoped resource has no namespace (kubectl asks in its context's namespace and
  // warns "resource 'nodes' is not namespace scoped"): asked as the request itself is made.
  if (!out.namespace_.empty())
    for (const ResourceInfo& r : ServedResources())
      if (r.group == out.api_group && r.plural == out.resource && !r.namespaced)
        out.namespace_.clear();
  return out;
}

Json AccessReviewResponse(const Json& request, const Decision& decision,
                          const std::string& denied_reason) {
  Json status = {{"allowed", decision.allowed}};
  const std::string reason = decision.allowed ? decision.why : denied_reason;
  if (!reason.empty()) status["reason"] = reason;
  return Json{{"kind", "SelfSubjectAccessReview"},
              {"apiVersion", "authorization.k8s.io/v1"},
              {"metadata", {{"creationTimestamp", nullptr}}},
              {"spec", request.value("spec", Json::object())},
              {"status", status}};
}

Json SelfSubjectReviewResponse(const UserInfo& user) {
  Json info = {{"username", user.name}, {"groups", user.groups}};
  if (!user.uid.empty()) info["uid"] = user.uid;
  return Json{{"kind", "SelfSubjectReview"},
              {"apiVersion", "authentication.k8s.io/v1"},
              {"metadata", {{"creationTimestamp", nullptr}}},
              {"status", {{"userInfo", info}}}};
}

}  // namespace arbiter::kube
