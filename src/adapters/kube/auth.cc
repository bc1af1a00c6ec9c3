#include "adapters/kube/auth.h"

#include <algorithm>

namespace arbiter::kube {
namespace {

constexpr std::string_view kAuthenticated = "system:authenticated";

bool IsAdmin(const UserInfo& u) {
  return u.InGroup("system:masters") || u.InGroup("arbiter:admins");
}

bool IsReadVerb(std::string_view v) { return v == "get" || v == "list" || v == "watch"; }

bool IsWriteVerb(std::string_view v) {
  return v == "create" || v == "update" || v == "patch" || v == "delete" || v == "deletecollection";
}

// One CSV record per line; quotes per RFC 4180. Returns false at end of text.
bool ReadRecord(std::string_view text, size_t* pos, std::vector<std::string>* fields, int* line,
                std::string* error) {
  fields->clear();
  // Skip blank lines (encoding/csv does).
  while (*pos < text.size() && (text[*pos] == '\n' || text[*pos] == '\r')) {
    if (text[*pos] == '\n') ++*line;
    ++*pos;
  }
  if (*pos >= text.size()) return false;
  ++*line;
  std::string cur;
  bool quoted = false, was_quoted = false;
  while (*pos < text.size()) {
    char c = text[*pos];
    if (quoted) {
      if (c == '"') {
        if (*pos + 1 < text.size() && text[*pos + 1] == '"') {
          cur += '"';
          *pos += 2;
          continue;
        }
        quoted = false;
        ++*pos;
        continue;
      }
      if (c == '\n') ++*line;
      cur += c;
      ++*pos;
      continue;
    }
    if (c == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
      ++*pos;
      continue;
    }
    if (c == ',') {
      fields->push_back(cur);
      cur.clear();
      was_quoted = false;
      ++*pos;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (c == '\r' && *pos + 1 < text.size() && text[*pos + 1] == '\n') ++*pos;
      ++*pos;
      break;
    }
    if (was_quoted) {
      *error = "extraneous or missing \" in quoted-field";
      return true;
    }
    cur += c;
    ++*pos;
  }
  if (quoted) *error = "extraneous or missing \" in quoted-field";
  fields->push_back(cur);
  return true;
}

// Discovery, OpenAPI, version and health: what every authenticated user may read.
bool IsPublicPath(std::string_view path) {
  for (std::string_view p :
       {"/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz"})
    if (path == p ||
        (path.size() > p.size() && path.substr(0, p.size()) == p && path[p.size()] == '/'))
      return true;
  return false;
}

std::string Q(std::string_view s) { return "\"" + std::string(s) + "\""; }

}  // namespace

bool UserInfo::InGroup(std::string_view g) const {
  return std::find(groups.begin(), groups.end(), g) != groups.end();
}

Result<TokenTable> ParseTokenFile(std::string_view text, std::string_view path) {
  TokenTable t;
  size_t pos = 0;
  int line = 0;
  std::vector<std::string> f;
  std::string error;
  while (ReadRecord(text, &pos, &f, &line, &error)) {
    if (!error.empty())
      return Status::InvalidArgument("token file '" + std::string(path) + "': line " +
                                     std::to_string(line) + ": " + error);
    if (f.size() < 3)
      return Status::InvalidArgument(
          "token file '" + std::string(path) +
          "' must have at least 3 columns (token, user name, user uid), found " +
          std::to_string(f.size()) + " (line " + std::to_string(line) + ")");
    if (f[0].empty()) continue;
    UserInfo u{f[1], f[2], {}};
    if (f.size() >= 4 && !f[3].empty()) {
      std::string_view g = f[3];
      while (true) {
        size_t comma = g.find(',');
        u.groups.emplace_back(g.substr(0, comma));
        if (comma == std::string_view::npos) break;
        g.remove_prefix(comma + 1);
      }
    }
    u.groups.emplace_back(kAuthenticated);
    t.first_token_of_user.emplace(u.name, f[0]);
    t.by_token[f[0]] = std::move(u);
  }
  return t;
}

// kube-apiserver's bearertoken authenticator: the header trimmed (strings.TrimSpace), split on
// single spaces into at most 3 parts; the scheme "bearer" in any case; the token is the second
// part, so `Bearer   tok` has an empty token (401) and `Bearer tok rest` the token "tok".
std::optional<UserInfo> Authenticate(const TokenTable& tokens, std::string_view authorization) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  while (!authorization.empty() && space(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && space(authorization.back())) authorization.remove_suffix(1);
  const size_t first = authorization.find(' ');
  if (first == std::string_view::npos) return std::nullopt;
  std::string scheme(authorization.substr(0, first));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (scheme != "bearer") return std::nullopt;
  std::string_view token = authorization.substr(first + 1);
  token = token.substr(0, token.find(' '));
  auto it = tokens.by_token.find(token);
  if (token.empty() || it == tokens.by_token.end()) return std::nullopt;
  return it->second;
}

std::string VerbOf(std::string_view method, bool has_name, bool watch) {
  if (method == "GET" || method == "HEAD") return watch ? "watch" : has_name ? "get" : "list";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return has_name ? "delete" : "deletecollection";
  return "";
}

AuthClass AuthClassOf(KindId id) {
  switch (id) {
    case KindId::kPod:
    case KindId::kPodDisruptionBudget:
    case KindId::kPodGroup:
    case KindId::kJob:
      return AuthClass::kTenant;
    case KindId::kEvent:
    case KindId::kResourceQuota:
    case KindId::kLimitRange:
    case KindId::kElasticQuota:
      return AuthClass::kOperatorOwned;
    case KindId::kNode:
    case KindId::kPriorityClass:
    case KindId::kQoS:
    case KindId::kPoolPolicy:
    case KindId::kPriceBook:
    case KindId::kResourceFlavor:
      return AuthClass::kPublic;
    case KindId::kNamespace:
      return AuthClass::kAdmin;
  }
  return AuthClass::kAdmin;
}

namespace {
// The class of a request's resource (its API group and plural, as RBAC matches them; the plural
// alone answered SelfSubjectAccessReviews "allowed" for pods in any made-up group):
// kOperatorOwned for a namespaced resource not in the kinds table (the namespace's users may
// read it, as they may read every namespaced resource, and the server answers 404; nobody but
// an admin may write it), kAdmin for a cluster-scoped one.
AuthClass ClassOfResource(std::string_view group, std::string_view plural, bool namespaced) {
  for (const ApiKind& k : ApiKinds())
    if (plural == k.plural && group == k.group) return AuthClassOf(k.id);
  return namespaced ? AuthClass::kOperatorOwned : AuthClass::kAdmin;
}
}  // namespace

Decision Authorize(const UserInfo& u, const RequestAttributes& a) {
  if (IsAdmin(u)) return {true, "cluster admin"};
  // Kubernetes' system:basic-user role: every user may ask what it may do and who it is.
  if (a.resource_request && a.verb == "create" && a.namespace_.empty() && a.name.empty() &&
      a.subresource.empty() &&
      ((a.api_group == "authorization.k8s.io" && a.resource == "selfsubjectaccessreviews") ||
       (a.api_group == "authentication.k8s.io" && a.resource == "selfsubjectreviews")))
    return {true, "basic user"};
  if (!a.resource_request) {
    if (IsPublicPath(a.path) && a.verb == "get") return {true, "non-resource path"};
    return {false, ""};
  }
  const bool own_namespace_get = a.verb == "get" && a.subresource.empty();
  if (!a.namespace_.empty()) {
    const bool editor = u.InGroup("arbiter:editors:" + a.namespace_);
    const bool viewer = u.InGroup("arbiter:viewers:" + a.namespace_);
    const AuthClass c = ClassOfResource(a.api_group, a.resource, true);
    if (c == AuthClass::kAdmin) {
      // /api/v1/namespaces/NS as a namespaced path of itself: reading one's own namespace.
      if ((editor || viewer) && own_namespace_get && a.name == a.namespace_)
        return {true, "own namespace"};
      return {false, ""};
    }
    if (!a.subresource.empty()) {
      // Kubernetes' edit role: evict, and exec / attach / port-forward (which arbiter serve
      // answers with "pods are virtual in this mode").
      if ((a.subresource == "eviction" || a.subresource == "exec" || a.subresource == "attach" ||
           a.subresource == "portforward") &&
          a.verb == "create" && editor)
        return {true, "namespace editor"};
      if (IsReadVerb(a.verb) && (editor || viewer)) return {true, "namespace reader"};
      return {false, ""};
    }
    if (editor && IsReadVerb(a.verb)) return {true, "namespace editor"};
    if (editor && IsWriteVerb(a.verb) && c == AuthClass::kTenant) return {true, "namespace editor"};
    if (viewer && IsReadVerb(a.verb)) return {true, "namespace viewer"};
    return {false, ""};
  }
  // Cluster scope (or all namespaces).
  const AuthClass c = ClassOfResource(a.api_group, a.resource, false);
  if (IsReadVerb(a.verb) && a.subresource.empty() && c == AuthClass::kPublic)
    return {true, "public cluster object"};
  if (a.resource == ApiKindOf(KindId::kNamespace).plural && own_namespace_get && !a.name.empty() &&
      (u.InGroup("arbiter:editors:" + a.name) || u.InGroup("arbiter:viewers:" + a.name)))
    return {true, "own namespace"};
  return {false, ""};
}

std::string ForbiddenReason(const UserInfo& u, const RequestAttributes& a) {
  if (!a.resource_request) return "User " + Q(u.name) + " cannot " + a.verb + " path " + Q(a.path);
  std::string resource = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
  std::string s = "User " + Q(u.name) + " cannot " + a.verb + " resource " + Q(resource) +
                  " in API group " + Q(a.api_group);
  if (!a.namespace_.empty()) return s + " in the namespace " + Q(a.namespace_);
  return s + " at the cluster scope";
}

KubeStatus ForbiddenStatus(const UserInfo& u, const RequestAttributes& a) {
  if (!a.resource_request) return Forbidden(ResourceName{}, "", ForbiddenReason(u, a));
  return Forbidden(ResourceName{a.api_group, a.resource}, a.name, ForbiddenReason(u, a));
}

}  // namespace arbiter::kube
