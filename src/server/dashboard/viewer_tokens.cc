#include "server/dashboard/viewer_tokens.h"

namespace arbiter::server::dashboard {

Viewer ViewerOf(const kube::UserInfo& user) {
  Viewer v;
  v.user = user.name;
  v.all = user.InGroup("system:masters") || user.InGroup("arbiter:admins");
  for (const std::string& g : user.groups)
    for (std::string_view p : {"arbiter:editors:", "arbiter:viewers:"})
      if (g.size() > p.size() && g.compare(0, p.size(), p) == 0)
        v.namespaces.insert(g.substr(p.size()));
  return v;
}

std::optional<Viewer> ViewerFor(const ViewerTokens& tokens, std::string_view authorization) {
  auto user = kube::Authenticate(tokens, authorization);
  if (!user) return std::nullopt;
  return ViewerOf(*user);
}

}  // namespace arbiter::server::dashboard
