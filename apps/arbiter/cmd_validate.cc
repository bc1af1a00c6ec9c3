// `arbiter validate -f FILE [-f FILE ...]`: load manifests, run every check, print one line per
// problem (sorted by file and line) and a summary. Exit 0 when there is no error (warnings
// alone are fine), 1 on any error or unreadable file. Usage errors (exit 2) are CLI11's.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "adapters/yaml/manifest_loader.h"
#include "commands.h"
#include "core/plural.h"
#include "core/validation.h"

namespace arbiter::app {

void RegisterValidate(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Load manifests and report every problem found.\n"
      "Reads multi-document YAML (Kubernetes Namespace, Node, Pod, ResourceQuota, LimitRange,\n"
      "PriorityClass, PodDisruptionBudget; Arbiter PoolPolicy, ElasticQuota, PriceBook, QoS),\n"
      "checks every field and the references between objects, and prints one line per problem:\n"
      "  FILE:LINE: Kind/name: field.path: message\n"
      "(warnings say `warning:` before the message), sorted by file and line, then a summary.\n"
      "Exit status: 0 no errors (warnings allowed), 1 errors or unreadable file, 2 usage error.\n"
      "Field reference: docs/manifests.md.");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("-f,--file", *files, "Manifest file (multi-document YAML); repeatable")
      ->required();
  cmd->callback([files, exit_code] {
    bool unreadable = false;
    for (const auto& f : *files) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(f, ec) || !std::ifstream(f)) {
        std::cerr << "arbiter validate: cannot read " << f << ": "
                  << (std::filesystem::exists(f, ec) ? "not a readable file" : "no such file")
                  << "\n";
        unreadable = true;
      }
    }
    if (unreadable) {
      *exit_code = 1;
      return;
    }
    yaml::ManifestLoad load = yaml::LoadManifestFiles(*files);
    load.diagnostics.Sort();
    for (const auto& d : load.diagnostics.items) std::cout << d.ToString() << "\n";
    std::string what = files->size() == 1 ? (*files)[0] : Plural(files->size(), "file");
    std::cout << what << ": " << Plural(CountObjects(load.set), "object") << ", "
              << Plural(load.diagnostics.ErrorCount(), "error") << ", "
              << Plural(load.diagnostics.WarningCount(), "warning") << "\n";
    *exit_code = load.ok() ? 0 : 1;
  });
}

}  // namespace arbiter::app
