#include "server/state/api_status.h"

#include <cstdlib>

#include "adapters/kube/limits.h"

namespace arbiter::server {

kube::KubeStatus ToKube(const ApiError& e, const kube::ResourceInfo& r, const std::string& ns,
                        const std::string& name) {
  const auto rn = kube::ResourceName::Of(r);
  switch (e.reason) {
    case ApiError::Reason::kNotFound:
      return kube::NotFound(rn, name);
    case ApiError::Reason::kNamespaceNotFound:
      return kube::NotFound({"", "namespaces"}, e.name);
    case ApiError::Reason::kAlreadyExists:
      return kube::AlreadyExists(rn, name);
    case ApiError::Reason::kConflict: {
      // A delete's failed precondition names the kind, not the resource (registry/rest's
      // BeforeDelete: GroupResource{gvk.Group, gvk.Kind}): `on Pod "x"`.
      const bool precondition = e.message.rfind("the UID in the precondition", 0) == 0 ||
                                e.message.rfind("the ResourceVersion in the precondition", 0) == 0;
      const kube::ResourceName named = precondition ? kube::ResourceName{r.group, r.kind} : rn;
      return e.message.empty() ? kube::Conflict(named, name)
                               : kube::Conflict(named, name, e.message);
    }
    case ApiError::Reason::kInvalid: {
      std::vector<kube::Cause> causes;
      if (!e.diagnostics.items.empty()) {
        causes = kube::CausesFromDiagnostics(e.diagnostics, r.kind,
                                             r.namespaced ? ns + "/" + name : name);
      } else {
        kube::Cause c;
        c.message = e.message;
        causes.push_back(c);
      }
      return kube::Invalid(r, name, causes);
    }
    case ApiError::Reason::kBadRequest:
      return kube::BadRequest(e.message);
    case ApiError::Reason::kMethodNotAllowed:
      return kube::MethodNotAllowed(e.message);
    case ApiError::Reason::kUnavailable:
      return kube::ServiceUnavailable(e.message);
    case ApiError::Reason::kForbidden: {
      kube::KubeStatus st = kube::Forbidden(rn, name, e.message);
      if (!e.cause.empty())  // NamespaceLifecycle's cause
        st.body["details"]["causes"] = {{{"reason", "NamespaceTerminating"},
                                         {"message", e.cause},
                                         {"field", "metadata.namespace"}}};
      return st;
    }
    case ApiError::Reason::kTooManyRequests:
      return kube::TooManyRequests(e.message, {kube::Cause{"DisruptionBudget", e.cause, ""}});
    case ApiError::Reason::kInternal:
      return kube::Failure(500, e.message);
    case ApiError::Reason::kTooLarge:
      return kube::ObjectTooLarge(std::strtoull(e.message.c_str(), nullptr, 10));
  }
  return kube::InternalError(e.message);
}

std::string RefusalText(const Mutation& m, const ApiError& e) {
  const std::string api_version =
      m.object.is_object() ? m.object.value("apiVersion", std::string("v1")) : std::string("v1");
  const kube::ResourceInfo* r = kube::FindResourceByKind(api_version, m.kind);
  if (!r) return e.message.empty() ? e.name : e.message;
  const std::string name = !m.name.empty() || !m.object.is_object()
                               ? m.name
                               : m.object.value("/metadata/name"_json_pointer, std::string());
  return ToKube(e, *r, m.namespace_, name).Message();
}

}  // namespace arbiter::server
