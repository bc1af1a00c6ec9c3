#include "adapters/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

namespace arbiter::kube {

std::string Base64(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> KubeconfigYaml(const KubeconfigOptions& o) {
  const bool https = o.server.rfind("https://", 0) == 0;
  const bool http = o.server.rfind("http://", 0) == 0;
  if (!https && !http)
    return Status::InvalidArgument("the server must be an http:// or https:// URL, got \"" +
                                   o.server + "\"");
  if (o.user.empty()) return Status::InvalidArgument("the user name is empty");
  if (http && !o.ca_pem.empty())
    return Status::InvalidArgument("a certificate authority is given for an http:// server");
  const std::string context = o.cluster + "-" + o.user;
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "apiVersion" << YAML::Value << "v1";
  e << YAML::Key << "kind" << YAML::Value << "Config";
  e << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << o.cluster;
  e << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "server" << YAML::Value << o.server;
  if (!o.ca_pem.empty())
    e << YAML::Key << "certificate-authority-data" << YAML::Value << Base64(o.ca_pem);
  e << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << o.user;
  e << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  if (!o.token.empty()) e << YAML::Key << "token" << YAML::Value << YAML::DoubleQuoted << o.token;
  e << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << context;
  e << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "cluster" << YAML::Value << o.cluster;
  e << YAML::Key << "user" << YAML::Value << o.user;
  if (!o.namespace_.empty()) e << YAML::Key << "namespace" << YAML::Value << o.namespace_;
  e << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  e << YAML::Key << "current-context" << YAML::Value << context;
  e << YAML::Key << "preferences" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  e << YAML::EndMap;
  if (!e.good()) return Status::Internal(std::string("kubeconfig: ") + e.GetLastError());
  return std::string(e.c_str()) + "\n";
}

}  // namespace arbiter::kube
