#include "adapters/yaml/manifest_loader.h"

namespace arbiter::yaml {

void LoadManifestText(const std::string&, const std::string& file, ManifestLoad* out) {
  out->diagnostics.Add({Severity::kError, file, 0, "", "", "", "loader not implemented yet"});
}

ManifestLoad LoadManifestFiles(const std::vector<std::string>& paths) {
  ManifestLoad out;
  for (const auto& p : paths) LoadManifestText("", p, &out);
  return out;
}

}  // namespace arbiter::yaml
