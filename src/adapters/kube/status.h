// Kubernetes `Status` error bodies (kind Status, apiVersion v1), worded as kube-apiserver words
// them (k8s.io/apimachinery/pkg/api/errors), so kubectl prints the messages users know:
//
//   NotFound(pods, "x")        404 NotFound       pods "x" not found
//   AlreadyExists(pods, "x")   409 AlreadyExists  pods "x" already exists
//   Conflict(pods, "x")        409 Conflict       Operation cannot be fulfilled on pods "x": the
//   object
//                                                 has been modified; please apply your changes to
//                                                 the latest version and try again
//   Invalid(Pod, "x", causes)  422 Invalid        Pod "x" is invalid: spec.containers[0]...: msg
//                                                 (several causes: "...is invalid: [f1: m1, f2:
//                                                 m2]")
//   Forbidden(...)             403 Forbidden      pods "x" is forbidden: User "alice" cannot get
//   ... Unauthorized()             401 Unauthorized   Unauthorized BadRequest(msg)            400
//   BadRequest     msg MethodNotAllowed(...)      405 MethodNotAllowed Expired(msg) 410 Expired
//   e.g. too old resource version: 5 (20) Gone(msg)                  410 Gone InternalError(msg)
//   500 InternalError  Internal error occurred: msg ServiceUnavailable(msg)    503
//   ServiceUnavailable
// Resources are named by their qualified resource ("pods", "poddisruptionbudgets.policy") in
// messages and by plural + group in details; Invalid names the qualified kind ("Pod",
// "PodDisruptionBudget.policy") and details.kind is the kind — as kube-apiserver does.
// Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/resources.h"
#include "core/diagnostics.h"
#include "core/status.h"

namespace arbiter::kube {

// One field error of an Invalid status (details.causes[]). `reason` is the field error type
// ("FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported", "FieldValueForbidden",
// "FieldValueDuplicate"); `field` the JSON path ("spec.containers[0].image"), "" for none.
struct Cause {
  std::string reason = "FieldValueInvalid";
  std::string message;
  std::string field;
};

// A Status body and the HTTP code to answer it with (body["code"] == code).
struct KubeStatus {
  int code = 500;
  nlohmann::json body;
  std::string Message() const { return body.value("message", ""); }
  std::string Reason() const { return body.value("reason", ""); }
};

// The name of the resource a status is about. The table entry gives plural + group; resources
// not in the table (an unknown plural in a URL) can be named by hand.
struct ResourceName {
  std::string group;   // "" core
  std::string plural;  // "pods"
  static ResourceName Of(const ResourceInfo& r) { return {r.group, r.plural}; }
  std::string Qualified() const { return group.empty() ? plural : plural + "." + group; }
};

KubeStatus NotFound(const ResourceName& r, std::string_view name);
// 404 for a path the server does not serve: "the server could not find the requested resource".
KubeStatus PathNotFound();
KubeStatus AlreadyExists(const ResourceName& r, std::string_view name);
// The resourceVersion precondition failed (optimistic concurrency).
KubeStatus Conflict(const ResourceName& r, std::string_view name);
// A conflict with a custom reason: `Operation cannot be fulfilled on pods "x": <why>`.
KubeStatus Conflict(const ResourceName& r, std::string_view name, std::string_view why);
// `qualified_kind`: "Pod", "PodDisruptionBudget.policy" (ResourceInfo::QualifiedKind()).
KubeStatus Invalid(const ResourceInfo& r, std::string_view name, const std::vector<Cause>& causes);
// `why` is the authorizer's sentence: `User "alice" cannot list resource "pods" in API group ""
// in the namespace "team-b"` (auth.h builds it). name "" for collection requests.
KubeStatus Forbidden(const ResourceName& r, std::string_view name, std::string_view why);
KubeStatus Unauthorized(std::string_view message = "Unauthorized");
KubeStatus BadRequest(std::string_view message);
// 405 "<verb> is not supported on resources of kind \"pods\"" style; `message` as given, or the
// kube default "the server does not allow this method on the requested resource" when empty.
KubeStatus MethodNotAllowed(std::string_view message = "");
// 415 for a PATCH content type the resource does not take (kube-apiserver's wording:
// `the body of the request was in an unknown format - accepted media types include: ...`).
KubeStatus UnsupportedMediaType(std::string_view content_type,
                                const std::vector<std::string>& accepted);
KubeStatus Expired(std::string_view message);
// The watch error for a resourceVersion older than the history: reason Expired, 410,
// `too old resource version: <requested> (<oldest kept>)`.
KubeStatus TooOldResourceVersion(uint64_t requested, uint64_t oldest);
KubeStatus Gone(std::string_view message);
KubeStatus InternalError(std::string_view message);
// The watch error of a watch whose time is up before it starts (a negative timeoutSeconds):
// `context deadline exceeded`, reason InternalError, 500, as kube-apiserver 1.36 sends it.
KubeStatus WatchDeadlineExceeded();
KubeStatus ServiceUnavailable(std::string_view message);
// 504 Timeout: "Timeout: <message>" (apimachinery's NewTimeoutError without a retry-after:
// kube-apiserver's answer to a request that its --request-timeout cut).
KubeStatus Timeout(std::string_view message);
// 504 for a read at a resourceVersion the store has not reached (storage's
// NewTooLargeResourceVersionError): "Timeout: Too large resource version: <rv>, current: <now>",
// one cause of reason ResourceVersionTooLarge, retryAfterSeconds 1.
KubeStatus TooLargeResourceVersion(uint64_t requested, uint64_t current);
// 429 for admission refusals kube answers as Forbidden (quota): kept as Forbidden in kube; this is
// for rate limits only.
KubeStatus TooManyRequests(std::string_view message);
// 429 with causes: an eviction a PodDisruptionBudget refuses ("Cannot evict pod as it would
// violate the pod's disruption budget.", one cause of reason "DisruptionBudget").
KubeStatus TooManyRequests(std::string_view message, const std::vector<Cause>& causes);
// A Failure with `code`, the message and no reason (kube-apiserver answers an eviction of a pod
// several PDBs select so: 500 "This pod has more than one PodDisruptionBudget, ...").
KubeStatus Failure(int code, std::string_view message);
// 413 RequestEntityTooLarge: "Request entity too large: <message>" (NewRequestEntityTooLargeError).
KubeStatus RequestEntityTooLarge(std::string_view message);

// JSON text for the wire and the logs: invalid UTF-8 in strings (a client's path or query value
// in a message) becomes U+FFFD, as Go's encoder writes it, instead of throwing.
std::string WireJson(const nlohmann::json& j);
// The same appended to `out` (a list's items written one by one into its answer).
void AppendWireJson(std::string& out, const nlohmann::json& j);
// A string as AppendWireJson writes it (quoted and escaped), without making a tree of it.
void AppendWireString(std::string& out, const std::string& s);

// The success body some deletes answer with: status Success, details {name, group, kind, uid}.
nlohmann::json SuccessStatus(const ResourceName& r, std::string_view name, std::string_view uid);

// The loader's diagnostics (errors only; warnings are dropped — they belong in a Warning header)
// as causes: field = the diagnostic's field path, message = its message. A diagnostic about a
// different object than `kind`/`name` (a cross-object check) keeps that object in its message:
// "ResourceQuota/team-a/q: spec.hard: ...".
std::vector<Cause> CausesFromDiagnostics(const Diagnostics& d, std::string_view kind,
                                         std::string_view name);
// A diagnostic line "FILE:LINE: Kind/name: field.path: message" as a cause (the field path is the
// text before the first ": " that looks like a path); lines that do not parse become a cause
// with no field and the whole line as message.
Cause CauseFromDiagnosticLine(std::string_view line);

// A `Warning:` response header value as kube-apiserver writes it (RFC 7234: code 299, agent "-",
// the text quoted with `\` and `"` escaped; text capped at 4 KiB): kubectl prints each as
// "Warning: <text>" on standard error. Add one header per warning.
std::string WarningHeaderValue(std::string_view text);
// The loader's warnings (not errors) as warning texts "field.path: message" (the object's own) or
// "Kind/name: field.path: message" (another object's, from a cross-object check).
std::vector<std::string> WarningsFromDiagnostics(const Diagnostics& d, std::string_view kind,
                                                 std::string_view name);

// An engine/core Status as a Kubernetes Status about object `name` of resource `r`:
// NotFound -> 404, AlreadyExists -> 409, Conflict -> 409 Conflict (with the message),
// InvalidArgument -> 422 Invalid (one cause, no field), FailedPrecondition -> 400 BadRequest,
// ResourceExhausted -> 403 Forbidden (kube refuses quota with 403), Unavailable -> 503,
// Internal -> 500. ok() statuses must not be passed.
KubeStatus FromStatus(const Status& s, const ResourceInfo& r, std::string_view name);

}  // namespace arbiter::kube
