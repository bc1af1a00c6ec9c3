// The dashboard's static files (web/), embedded in the binary at build time by
// cmake/embed_web.cmake (which generates their definition).
#pragma once

#include <string_view>
#include <vector>

namespace arbiter::server::dashboard {

struct WebAsset {
  std::string_view path;  // relative to web/: "index.html", "app.js"
  std::string_view content_type;
  std::string_view bytes;
};

const std::vector<WebAsset>& WebAssets();

}  // namespace arbiter::server::dashboard
