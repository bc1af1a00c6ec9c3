#include "adapters/slurm/name_map.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "adapters/slurm/slurm_names.h"
#include "core/text.h"

namespace arbiter::slurm {

namespace {

std::string Where(const std::string& file, const YAML::Node& n) {
  const int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
  return line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";
}

// Reads one `section:` mapping of scalar keys to scalar values.
Status ReadSection(const YAML::Node& sec, const std::string& file, const char* what, bool gres_keys,
                   std::map<std::string, std::string>* out) {
  if (sec.IsNull()) return Status::Ok();
  if (!sec.IsMap()) return Status::Error(Where(file, sec) + what + ": expected a mapping");
  std::map<std::string, std::string> seen_values;
  for (auto it = sec.begin(); it != sec.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar() || !v.IsScalar())
      return Status::Error(Where(file, k) + what + ": keys and values must be plain text");
    const std::string key = k.Scalar(), value = v.Scalar();
    const bool key_ok = gres_keys ? IsValidGresType(key) : IsValidSlurmName(key);
    if (!key_ok)
      return Status::Error(Where(file, k) + what + "." + key + ": " + Quoted(key) +
                           " is not a valid Slurm " + (gres_keys ? "gres type" : "name") +
                           " (lowercase letters, digits, '_', '-'" + (gres_keys ? ", '.'" : "") +
                           "; at most 64 characters; see docs/slurm.md)");
    if (value.empty()) return Status::Error(Where(file, v) + what + "." + key + ": empty value");
    if (out->count(key))
      return Status::Error(Where(file, k) + what + ": duplicate key " + Quoted(key));
    if (auto s = seen_values.find(value); s != seen_values.end())
      return Status::Error(Where(file, v) + what + "." + key + ": " + Quoted(value) +
                           " is already mapped from " + Quoted(s->second) +
                           "; the mapping must be one to one");
    seen_values[value] = key;
    (*out)[key] = value;
  }
  return Status::Ok();
}

}  // namespace

Result<NameMap> NameMap::Parse(const std::string& text, const std::string& file) {
  NameMap m;
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return Result<NameMap>::Error(file + ":" + std::to_string(line) + ": not valid YAML: " + e.msg);
  }
  if (doc.IsNull()) return m;
  if (!doc.IsMap())
    return Result<NameMap>::Error(Where(file, doc) +
                                  "expected a mapping with accounts: and gpuTypes:");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const YAML::Node k = it->first;
    const std::string key = k.IsScalar() ? k.Scalar() : "";
    Status s;
    if (key == "accounts")
      s = ReadSection(it->second, file, "accounts", false, &m.accounts_);
    else if (key == "gpuTypes")
      s = ReadSection(it->second, file, "gpuTypes", true, &m.gpu_types_);
    else
      return Result<NameMap>::Error(Where(file, k) + "unknown field " + Quoted(key) +
                                    " (allowed: accounts, gpuTypes)");
    if (!s.ok()) return Result<NameMap>(s);
  }
  for (const auto& [account, ns] : m.accounts_) {
    m.account_of_[ns] = account;
    m.ns_of_[account] = ns;
  }
  for (const auto& [type, product] : m.gpu_types_) {
    m.type_of_[product] = type;
    m.product_of_[type] = product;
  }
  return m;
}

Result<NameMap> NameMap::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Result<NameMap>::Error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

Status NameMap::AddNamespace(const std::string& ns) {
  if (account_of_.count(ns)) return Status::Ok();
  const std::string account = ToSlurmName(ns);
  if (account == "root")
    return Status::Error(
        "namespace " + Quoted(ns) +
        " would be the Slurm account \"root\", which is Slurm's own root association; map it to "
        "another account with --account-map");
  if (auto it = ns_of_.find(account); it != ns_of_.end() && it->second != ns)
    return Status::Error("namespaces " + Quoted(it->second) + " and " + Quoted(ns) +
                         " both map to the Slurm account " + Quoted(account) +
                         "; give one another name with --account-map");
  account_of_[ns] = account;
  ns_of_[account] = ns;
  return Status::Ok();
}

Status NameMap::AddGpuProduct(const std::string& product) {
  if (type_of_.count(product)) return Status::Ok();
  const std::string type = GresTypeOfProduct(product);
  if (auto it = product_of_.find(type); it != product_of_.end() && it->second != product)
    return Status::Error("GPU models " + Quoted(it->second) + " and " + Quoted(product) +
                         " both map to the gres type " + Quoted(type) +
                         "; name one in gpuTypes of --account-map");
  type_of_[product] = type;
  product_of_[type] = product;
  return Status::Ok();
}

Status NameMap::AddMigResource(const std::string& resource) {
  if (type_of_.count(resource)) return Status::Ok();
  const std::string type = GresTypeOfMig(resource);
  if (auto it = product_of_.find(type); it != product_of_.end() && it->second != resource)
    return Status::Error(Quoted(it->second) + " and " + Quoted(resource) +
                         " both map to the gres type " + Quoted(type) +
                         "; name one in gpuTypes of --account-map");
  type_of_[resource] = type;
  product_of_[type] = resource;
  return Status::Ok();
}

std::string NameMap::AccountOf(const std::string& ns) const {
  auto it = account_of_.find(ns);
  return it != account_of_.end() ? it->second : ToSlurmName(ns);
}

std::string NameMap::GresTypeOf(const std::string& product_or_mig) const {
  auto it = type_of_.find(product_or_mig);
  if (it != type_of_.end()) return it->second;
  return product_or_mig.rfind("nvidia.com/mig-", 0) == 0 ? GresTypeOfMig(product_or_mig)
                                                         : GresTypeOfProduct(product_or_mig);
}

std::optional<std::string> NameMap::NamespaceOf(const std::string& account) const {
  auto it = ns_of_.find(account);
  if (it == ns_of_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> NameMap::ProductOf(const std::string& gres_type) const {
  auto it = product_of_.find(gres_type);
  if (it == product_of_.end()) return std::nullopt;
  return it->second;
}

}  // namespace arbiter::slurm
