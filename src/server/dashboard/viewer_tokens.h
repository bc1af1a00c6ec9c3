// Who a dashboard request comes from: the bearer token is looked up in the daemon's token table
// (adapters/kube/auth.h, the API's own authentication: kube-apiserver's --token-auth-file CSV)
// and the user's groups give a Viewer by the API's documented authorization policy:
// `system:masters` / `arbiter:admins` see everything; `arbiter:editors:<ns>` and
// `arbiter:viewers:<ns>` see namespace <ns>; other users see nothing. Pure.
#pragma once

#include <optional>
#include <string_view>

#include "adapters/kube/auth.h"
#include "server/dashboard/views.h"

namespace arbiter::server::dashboard {

using ViewerTokens = kube::TokenTable;  // parsed by kube::ParseTokenFile

// What `user` may see.
Viewer ViewerOf(const kube::UserInfo& user);

// The viewer of an `Authorization: Bearer <token>` header; nullopt when missing or unknown.
std::optional<Viewer> ViewerFor(const ViewerTokens& tokens, std::string_view authorization);

}  // namespace arbiter::server::dashboard
