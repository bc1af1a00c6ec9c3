// kubeconfig text for a user of `arbiter serve`: one cluster ("arbiter"), one user, one context,
// selected as current-context, in the YAML kubectl reads (apiVersion v1, kind Config).
// Pure: no I/O (the CA certificate's PEM text is passed in).
#pragma once

#include <string>

#include "core/status.h"

namespace arbiter::kube {

struct KubeconfigOptions {
  std::string server;      // "https://127.0.0.1:6443" or "http://127.0.0.1:8080"
  std::string user;        // the user name (the token file's second column)
  std::string token;       // bearer token; "" for a server without a token file (loopback only)
  std::string ca_pem;      // PEM of the server's CA (certificate-authority-data), "" for none
  std::string namespace_;  // the context's default namespace, "" for none
  std::string cluster = "arbiter";
};

// kInvalidArgument when the server is not an http:// or https:// URL, the user is empty, or a CA
// is given for an http:// server.
Result<std::string> KubeconfigYaml(const KubeconfigOptions& o);

// RFC 4648 base64 (certificate-authority-data).
std::string Base64(std::string_view bytes);

}  // namespace arbiter::kube
