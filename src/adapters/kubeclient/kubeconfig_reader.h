// Reads a kubeconfig (the file kubectl reads: apiVersion v1, kind Config) for a client of a real
// kube-apiserver: the current context's server, certificate authority, and credentials (client
// certificate and key, or a bearer token). Certificates and keys may be inline (`*-data`, base64)
// or files (paths relative to the kubeconfig's directory, as kubectl resolves them).
// Not supported (a clear error): exec and auth-provider plugins, username/password.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace arbiter::kubeclient {

struct KubeConfig {
  std::string server;           // "https://127.0.0.1:6443"
  std::string ca_pem;           // "" for the system's trust store (or http://)
  std::string client_cert_pem;  // with client_key_pem, or both ""
  std::string client_key_pem;
  std::string token;  // bearer token, "" for none
  bool insecure_skip_tls_verify = false;
  std::string context;     // the context used
  std::string namespace_;  // the context's namespace, "" for none
};

// A kubeconfig larger than this is refused (a real one is a few KiB; certificates inline).
inline constexpr size_t kMaxKubeconfigBytes = 4 << 20;

// Reads the file at `path` (for the referenced certificate, key and token files); returns its
// bytes or an error.
using FileReader = std::function<Result<std::string>(const std::string& path)>;

// Parses kubeconfig text. `dir` is the kubeconfig's directory (relative file paths are resolved
// against it); `context` selects a context other than current-context. Pure apart from `read`.
Result<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& dir,
                                   const std::string& context, const FileReader& read);
// Reads and parses the file (files it names read from disk, each at most kMaxKubeconfigBytes).
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

// RFC 4648 base64 (whitespace ignored); an error on any other character or bad padding.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace arbiter::kubeclient
