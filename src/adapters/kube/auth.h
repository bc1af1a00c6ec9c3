// Authentication by bearer tokens from kube-apiserver's --token-auth-file CSV, and Arbiter's
// authorization policy, with kube-apiserver's 401/403 answers.
//
// Token file: one record per line, `token,user,uid[,"group1,group2"]` (CSV: quotes as in RFC 4180,
// so the group list is quoted when it has several groups). A record with fewer than 3 columns is
// an error naming the file and the line; an empty token is skipped; a repeated token: the later
// record wins (kube-apiserver warns the same way). Every authenticated user is also in the group
// `system:authenticated`.
//
// Authorization policy (a request is allowed when a rule allows it; otherwise 403):
//   1. cluster admins: members of `system:masters` or `arbiter:admins` may do everything.
//   2. non-resource paths: every authenticated user may get /api, /apis (and below: discovery),
//      /openapi/..., /version, /healthz, /livez, /readyz; every other path (/metrics,
//      /debug/...) is admins only.
//   3. namespace editors: members of `arbiter:editors:<ns>` may get, list, watch, create, update,
//      patch and delete every namespaced resource in namespace <ns>, and create pods/eviction
//      there (and pods/exec, pods/attach, pods/portforward, as Kubernetes' edit role); viewers
//      (`arbiter:viewers:<ns>`) get, list and watch there. Status subresources
//      (pods/status, resourcequotas/status, ...) are written by the daemon: admins only.
//   4. cluster-scoped objects: every authenticated user may get, list and watch nodes,
//      priorityclasses, qoses, poolpolicies, pricebooks and resourceflavors (the pool's shape
//      and its prices are public to its tenants); a user may get (not list) the namespaces it edits
//      or views; everything else cluster-scoped (writes, listing namespaces) is admins only.
//   5. requests across all namespaces (kubectl get pods -A): admins only.
//   6. every authenticated user may create selfsubjectaccessreviews (authorization.k8s.io) and
//      selfsubjectreviews (authentication.k8s.io): `kubectl auth can-i` / `whoami`
//      (auth_review.h), Kubernetes' system:basic-user role.
// Pure: no I/O (the token file's text is passed in).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/kube/status.h"
#include "core/api_kinds.h"
#include "core/status.h"

namespace arbiter::kube {

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;  // as in the file, then "system:authenticated"
  bool InGroup(std::string_view g) const;
};

struct TokenTable {
  std::map<std::string, UserInfo, std::less<>> by_token;
  // The first token (in file order) of `user`, for `arbiter kubeconfig --user`.
  std::map<std::string, std::string, std::less<>> first_token_of_user;
};

// `path` names the file in messages: "token file 'F' must have at least 3 columns (token, user
// name, user uid), found 2 (line 4)".
Result<TokenTable> ParseTokenFile(std::string_view text, std::string_view path);

// The user of an `Authorization: Bearer <token>` header value, split as kube-apiserver splits it
// (bearertoken.go: TrimSpace, SplitN(" ", 3), the token the 2nd part); nullopt when the header is
// missing, not a bearer token, or the token is unknown (answer Unauthorized(): 401).
std::optional<UserInfo> Authenticate(const TokenTable& tokens, std::string_view authorization);

// What a request does, in kube-apiserver's terms (authorizer.Attributes).
struct RequestAttributes {
  bool resource_request = true;
  std::string verb;         // get list watch create update patch delete deletecollection
  std::string api_group;    // "" core
  std::string resource;     // "pods"
  std::string subresource;  // "status", "eviction", ""
  std::string namespace_;   // "" for cluster-scoped or all-namespaces requests
  std::string name;         // "" for collections
  std::string path;         // for non-resource requests: "/metrics"
};

// The verb of an HTTP request: GET/HEAD -> get (with a name), list, or watch (?watch=true or
// .../watch/...); POST -> create; PUT -> update; PATCH -> patch; DELETE -> delete (with a
// name) or deletecollection.
std::string VerbOf(std::string_view method, bool has_name, bool watch);

// What a kind's objects are to the authorization policy (Authorize):
//   kTenant         namespaced, the tenant's own: the namespace's editors read and write, its
//                   viewers read
//   kOperatorOwned  namespaced, the operator's limits on the namespace (ResourceQuota,
//                   LimitRange, ElasticQuota, as Kubernetes' edit and admin roles only read
//                   them) and the daemon's Events (read-only to every user): editors and
//                   viewers read
//   kPublic         cluster-scoped, the pool's shared facts: every user reads
//   kAdmin          cluster-scoped, admins only (a tenant may get its own Namespace)
// Cluster admins (system:masters, arbiter:admins) may do anything.
enum class AuthClass : uint8_t { kTenant, kOperatorOwned, kPublic, kAdmin };
AuthClass AuthClassOf(KindId id);

struct Decision {
  bool allowed = false;
  std::string why;  // which rule allowed it (for logs)
};
Decision Authorize(const UserInfo& user, const RequestAttributes& a);

// kube-apiserver's sentence: `User "alice" cannot list resource "pods" in API group "" in the
// namespace "team-b"` (or `... at the cluster scope`, or `cannot get path "/metrics"`).
std::string ForbiddenReason(const UserInfo& user, const RequestAttributes& a);
// The 403 body: `pods "x" is forbidden: User "alice" cannot get resource "pods" in API group ""
// in the namespace "team-b"`.
KubeStatus ForbiddenStatus(const UserInfo& user, const RequestAttributes& a);

}  // namespace arbiter::kube
