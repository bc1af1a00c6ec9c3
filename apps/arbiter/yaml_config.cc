#include "yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

namespace arbiter::app {

namespace {

class YamlConfig final : public CLI::Config {
 public:
  explicit YamlConfig(const CLI::App* cmd) : cmd_(cmd) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return ""; }

  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    const std::string file =
        cmd_->get_config_ptr() ? cmd_->get_config_ptr()->as<std::string>() : std::string("config");
    std::stringstream text;
    text << in.rdbuf();
    YAML::Node root;
    try {
      root = YAML::Load(text.str());
    } catch (const YAML::Exception& e) {
      throw CLI::ConfigError(file + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg);
    }
    std::vector<CLI::ConfigItem> items;
    if (root.IsNull()) return items;
    if (!root.IsMap())
      throw CLI::ConfigError(file + ":" + std::to_string(root.Mark().line + 1) +
                             ": expected a mapping of option names to values");
    std::set<std::string> seen;
    for (const auto& kv : root) {
      const std::string line = std::to_string(kv.first.Mark().line + 1);
      const std::string key = kv.first.Scalar();
      const CLI::Option* opt = key.empty() ? nullptr : cmd_->get_option_no_throw("--" + key);
      if (!opt || opt == cmd_->get_config_ptr() || opt == cmd_->get_help_ptr())
        throw CLI::ConfigError(file + ":" + line + ": unknown key \"" + key +
                               "\" (known: " + Known() + ")");
      if (!seen.insert(key).second)
        throw CLI::ConfigError(file + ":" + line + ": key \"" + key + "\" is given twice");
      CLI::ConfigItem item;
      item.name = key;
      if (kv.second.IsScalar()) {
        item.inputs.push_back(kv.second.Scalar());
      } else if (kv.second.IsSequence()) {
        for (const auto& v : kv.second) {
          if (!v.IsScalar())
            throw CLI::ConfigError(file + ":" + std::to_string(v.Mark().line + 1) + ": \"" + key +
                                   "\": expected a value or a list of values");
          item.inputs.push_back(v.Scalar());
        }
      } else {
        throw CLI::ConfigError(file + ":" + line + ": \"" + key +
                               "\": expected a value or a list of values");
      }
      items.push_back(std::move(item));
    }
    return items;
  }

 private:
  std::string Known() const {
    std::string out;
    for (const CLI::Option* o : cmd_->get_options()) {
      if (o == cmd_->get_config_ptr() || o == cmd_->get_help_ptr() || o->get_lnames().empty())
        continue;
      out += (out.empty() ? "" : ", ") + o->get_lnames().front();
    }
    return out;
  }
  const CLI::App* cmd_;
};

}  // namespace

void AddYamlConfig(CLI::App* cmd, const std::string& help) {
  cmd->set_config("--config", "", help);
  cmd->config_formatter(std::make_shared<YamlConfig>(cmd));
  cmd->allow_config_extras(CLI::config_extras_mode::error);
}

}  // namespace arbiter::app
