#include "server/dashboard/viewer_tokens.h"

#include <sstream>
#include <vector>

namespace arbiter::server::dashboard {

namespace {

// One CSV record (RFC 4180 quotes).
std::vector<std::string> SplitCsv(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        out.back() += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.emplace_back();
    } else if (ch != '\r') {
      out.back() += ch;
    }
  }
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

Result<ViewerTokens> ParseViewerTokens(std::string_view text, std::string_view path) {
  ViewerTokens out;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto f = SplitCsv(line);
    if (f.size() < 3)
      return Status::InvalidArgument("token file '" + std::string(path) + "' line " +
                                     std::to_string(n) + ": expected token,user,uid[,groups]");
    if (f[0].empty()) continue;
    Viewer v;
    v.user = f[1];
    v.all = false;
    if (f.size() > 3) {
      std::istringstream groups(f[3]);
      std::string g;
      while (std::getline(groups, g, ',')) {
        if (g == "system:masters" || g == "arbiter:admins") v.all = true;
        for (std::string_view p : {"arbiter:editors:", "arbiter:viewers:"})
          if (StartsWith(g, p) && g.size() > p.size()) v.namespaces.insert(g.substr(p.size()));
      }
    }
    out[f[0]] = std::move(v);  // a repeated token: the later record wins
  }
  return out;
}

std::optional<Viewer> ViewerFor(const ViewerTokens& tokens, std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (!StartsWith(authorization, kBearer)) return std::nullopt;
  const auto it = tokens.find(authorization.substr(kBearer.size()));
  if (it == tokens.end()) return std::nullopt;
  return it->second;
}

}  // namespace arbiter::server::dashboard
