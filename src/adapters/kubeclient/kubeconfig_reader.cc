#include "adapters/kubeclient/kubeconfig_reader.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace arbiter::kubeclient {

Result<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  int pad = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=') {
      ++pad;
      continue;
    } else {
      return Status::InvalidArgument("not base64: unexpected character");
    }
    if (pad > 0) return Status::InvalidArgument("not base64: data after the padding");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (pad > 2 || bits >= 6) return Status::InvalidArgument("not base64: bad length or padding");
  return out;
}

namespace {

// The entry of `list` (a sequence of {name: N, <field>: {...}}) named `name`.
YAML::Node Named(const YAML::Node& list, const std::string& field, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& e : list)
    if (e.IsMap() && e["name"] && e["name"].IsScalar() && e["name"].as<std::string>() == name)
      return e[field];
  return YAML::Node();
}

std::string Scalar(const YAML::Node& map, const char* key) {
  if (!map || !map.IsMap()) return "";
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.as<std::string>() : "";
}

// `*-data` (base64) or the file `*` (relative to dir).
Result<std::string> DataOrFile(const YAML::Node& map, const std::string& key,
                               const std::string& dir, const FileReader& read,
                               const std::string& where) {
  const std::string data = Scalar(map, (key + "-data").c_str());
  if (!data.empty()) {
    auto bytes = Base64Decode(data);
    if (!bytes.ok())
      return Status::InvalidArgument(where + "." + key + "-data: " + bytes.message());
    return *bytes;
  }
  std::string file = Scalar(map, key.c_str());
  if (file.empty()) return std::string();
  if (!std::filesystem::path(file).is_absolute() && !dir.empty())
    file = (std::filesystem::path(dir) / file).string();
  auto bytes = read(file);
  if (!bytes.ok()) return Status::InvalidArgument(where + "." + key + ": " + bytes.message());
  return *bytes;
}

Result<KubeConfig> FromYaml(const YAML::Node& root, const std::string& dir,
                            const std::string& want_context, const FileReader& read) {
  if (!root.IsMap()) return Status::InvalidArgument("not a kubeconfig (not a YAML mapping)");
  KubeConfig c;
  c.context = want_context.empty() ? Scalar(root, "current-context") : want_context;
  if (c.context.empty())
    return Status::InvalidArgument("no current-context (and no context given)");
  const YAML::Node ctx = Named(root["contexts"], "context", c.context);
  if (!ctx || !ctx.IsMap())
    return Status::InvalidArgument("context \"" + c.context + "\" is not in contexts");
  const std::string cluster_name = Scalar(ctx, "cluster");
  const std::string user_name = Scalar(ctx, "user");
  c.namespace_ = Scalar(ctx, "namespace");
  const YAML::Node cluster = Named(root["clusters"], "cluster", cluster_name);
  if (!cluster || !cluster.IsMap())
    return Status::InvalidArgument("cluster \"" + cluster_name + "\" (of context \"" + c.context +
                                   "\") is not in clusters");
  c.server = Scalar(cluster, "server");
  if (c.server.rfind("https://", 0) != 0 && c.server.rfind("http://", 0) != 0)
    return Status::InvalidArgument("cluster \"" + cluster_name +
                                   "\": server must be an https:// or http:// URL, got \"" +
                                   c.server + "\"");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  c.insecure_skip_tls_verify = Scalar(cluster, "insecure-skip-tls-verify") == "true";
  auto ca = DataOrFile(cluster, "certificate-authority", dir, read, "cluster " + cluster_name);
  if (!ca.ok()) return ca.status();
  c.ca_pem = *ca;
  if (user_name.empty()) return c;
  const YAML::Node user = Named(root["users"], "user", user_name);
  if (!user) return Status::InvalidArgument("user \"" + user_name + "\" is not in users");
  if (!user.IsMap()) return c;  // `user: {}`
  if (user["exec"] || user["auth-provider"])
    return Status::InvalidArgument("user \"" + user_name +
                                   "\": exec and auth-provider credential plugins are not "
                                   "supported (use a client certificate or a token)");
  if (user["username"] || user["password"])
    return Status::InvalidArgument("user \"" + user_name +
                                   "\": basic authentication is not supported");
  const std::string where = "user " + user_name;
  auto cert = DataOrFile(user, "client-certificate", dir, read, where);
  if (!cert.ok()) return cert.status();
  auto key = DataOrFile(user, "client-key", dir, read, where);
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty())
    return Status::InvalidArgument(where +
                                   ": a client certificate needs its key, and a key its "
                                   "certificate");
  c.client_cert_pem = *cert;
  c.client_key_pem = *key;
  c.token = Scalar(user, "token");
  if (c.token.empty() && !Scalar(user, "tokenFile").empty()) {
    std::string file = Scalar(user, "tokenFile");
    if (!std::filesystem::path(file).is_absolute() && !dir.empty())
      file = (std::filesystem::path(dir) / file).string();
    auto t = read(file);
    if (!t.ok()) return Status::InvalidArgument(where + ".tokenFile: " + t.message());
    c.token = *t;
    while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r'))
      c.token.pop_back();
  }
  if (c.server.rfind("http://", 0) == 0 && (!c.client_cert_pem.empty()))
    return Status::InvalidArgument(where + ": a client certificate needs an https:// server");
  return c;
}

}  // namespace

Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& dir,
                                   const std::string& context, const FileReader& read) {
  if (text.size() > kMaxKubeconfigBytes)
    return Status::InvalidArgument("kubeconfig larger than " + std::to_string(kMaxKubeconfigBytes) +
                                   " bytes");
  try {
    return FromYaml(YAML::Load(std::string(text)), dir, context, read);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("not a kubeconfig: ") + e.what());
  }
}

namespace {
Result<std::string> ReadSmallFile(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status::InvalidArgument("cannot read " + path + ": " + ec.message());
  if (size > kMaxKubeconfigBytes)
    return Status::InvalidArgument(path + " is larger than " + std::to_string(kMaxKubeconfigBytes) +
                                   " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadSmallFile(path);
  if (!text.ok()) return Status::InvalidArgument("kubeconfig: " + text.message());
  auto c = ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context,
                           ReadSmallFile);
  if (!c.ok()) return Status::InvalidArgument("kubeconfig " + path + ": " + c.message());
  return c;
}

}  // namespace arbiter::kubeclient
