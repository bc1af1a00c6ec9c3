// Who a dashboard request comes from: bearer tokens in kube-apiserver's --token-auth-file CSV
// (`token,user,uid[,"group1,group2"]`) mapped to a Viewer by the groups of the API's documented
// authorization policy: `system:masters` / `arbiter:admins` see everything; `arbiter:editors:<ns>`
// and `arbiter:viewers:<ns>` see namespace <ns>; other users see nothing. Pure.
// (A stand-in until the daemon authenticates its API with adapters/kube/auth.h: then the
// dashboard takes the same table.)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/dashboard/views.h"

namespace arbiter::server::dashboard {

using ViewerTokens = std::map<std::string, Viewer, std::less<>>;

// `path` names the file in messages ("token file 'F' line 3: expected token,user,uid[,groups]").
Result<ViewerTokens> ParseViewerTokens(std::string_view text, std::string_view path);

// The viewer of an `Authorization: Bearer <token>` header; nullopt when missing or unknown.
std::optional<Viewer> ViewerFor(const ViewerTokens& tokens, std::string_view authorization);

}  // namespace arbiter::server::dashboard
