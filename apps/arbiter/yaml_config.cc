#include "yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace arbiter::app {

namespace {

std::string Known(const CLI::App* cmd, const CLI::Option* self) {
  std::string out;
  for (const CLI::Option* o : cmd->get_options()) {
    if (o == self || o == cmd->get_help_ptr() || o->get_lnames().empty()) continue;
    out += (out.empty() ? "" : ", ") + o->get_lnames().front();
  }
  return out;
}

// The file's options, checked: (option, values) in file order.
std::vector<std::pair<CLI::Option*, std::vector<std::string>>> Read(CLI::App* cmd,
                                                                    const CLI::Option* self,
                                                                    const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw CLI::ConfigError(file + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    throw CLI::ConfigError(file + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg);
  }
  std::vector<std::pair<CLI::Option*, std::vector<std::string>>> out;
  if (root.IsNull()) return out;
  if (!root.IsMap())
    throw CLI::ConfigError(file + ":" + std::to_string(root.Mark().line + 1) +
                           ": expected a mapping of option names to values");
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const std::string at = file + ":" + std::to_string(kv.first.Mark().line + 1) + ": ";
    const std::string key = kv.first.Scalar();
    CLI::Option* opt = key.empty() ? nullptr : cmd->get_option_no_throw("--" + key);
    if (!opt || opt == self || opt == cmd->get_help_ptr())
      throw CLI::ConfigError(at + "unknown key \"" + key + "\" (known: " + Known(cmd, self) + ")");
    if (!seen.insert(key).second) throw CLI::ConfigError(at + "key \"" + key + "\" is given twice");
    std::vector<std::string> values;
    if (kv.second.IsScalar()) {
      values.push_back(kv.second.Scalar());
    } else if (kv.second.IsSequence()) {
      for (const auto& v : kv.second) {
        if (!v.IsScalar())
          throw CLI::ConfigError(file + ":" + std::to_string(v.Mark().line + 1) + ": \"" + key +
                                 "\": expected a value or a list of values");
        values.push_back(v.Scalar());
      }
    } else {
      throw CLI::ConfigError(at + "\"" + key + "\": expected a value or a list of values");
    }
    out.emplace_back(opt, std::move(values));
  }
  return out;
}

}  // namespace

void AddYamlConfig(CLI::App* cmd, const std::string& help) {
  // Run with the options' callbacks, once the whole command line is parsed (so options given
  // there are known) and before the required options are checked.
  auto* self = cmd->add_option("--config", help);
  self->type_name("FILE");
  self->each([cmd, self](const std::string& file) {
    for (auto& [opt, values] : Read(cmd, self, file)) {
      if (opt->count() > 0) continue;  // given on the command line: the flag wins
      opt->add_result(values);
      opt->run_callback();
    }
  });
}

}  // namespace arbiter::app
