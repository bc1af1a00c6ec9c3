// `arbiter validate -f FILE [-f FILE ...]`: load manifests, run every check, print one line per
// problem (sorted by file and line) and a summary. Exit 0 when there is no error (warnings
// alone are fine), 1 on any error or unreadable file. Usage errors (exit 2) are CLI11's.
#include <iostream>

#include "adapters/io/input_file.h"
#include "adapters/yaml/manifest_loader.h"
#include "cli_flags.h"
#include "commands.h"
#include "core/api_kinds.h"
#include "core/plural.h"
#include "core/validation.h"

namespace arbiter::app {

namespace {

// Loads the manifests, prints every problem and a summary: 0 without errors, else the exit code.
int RunValidate(const std::vector<std::string>& files) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& f : files) inputs.push_back({"-f", f});
  if (int rc = StdinOnce("arbiter validate", inputs); rc != kExitOk) return rc;
  yaml::ManifestLoad load = yaml::LoadManifestFiles(files);
  load.diagnostics.Sort();
  for (const auto& d : load.diagnostics.items) std::cout << d.ToString() << "\n";
  std::string what = files.size() == 1 ? io::InputName(files[0]) : Plural(files.size(), "file");
  std::cout << what << ": " << Plural(CountObjects(load.set), "object") << ", "
            << Plural(load.diagnostics.ErrorCount(), "error") << ", "
            << Plural(load.diagnostics.WarningCount(), "warning") << "\n";
  return load.ok() ? 0 : 1;
}

}  // namespace

void RegisterValidate(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Load manifests and report every problem found.\n" +
          WrapText("Reads multi-document YAML of these kinds (apiVersion, then kinds): " +
                       ApiKindsText([](const ApiKind& k) { return k.in_manifests; }) +
                       "; and v1 List of them.",
                   90) +
          "\nChecks every field and the references between objects, and prints one line per "
          "problem:\n"
          "  FILE:LINE: Kind/name: field.path: message\n"
          "(warnings say `warning:` before the message), sorted by file and line, then a summary.\n"
          "Exit status: 0 no errors (warnings allowed), 1 errors or unreadable file, 2 usage "
          "error.\n"
          "Inputs: regular files of at most 512 MiB each, or - for standard input (once).\n"
          "Field reference: docs/manifests.md.");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("-f,--file", *files,
                  "Manifest file (multi-document YAML; - for standard input); repeatable")
      ->required();
  cmd->callback([files, exit_code] { *exit_code = RunValidate(*files); });
}

}  // namespace arbiter::app
