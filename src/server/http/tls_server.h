// HTTPS for `arbiter serve` (--tls-cert-file, --tls-private-key-file): the PEM files are read and
// checked here, with messages that name the flag and the file, then made into the OpenSSL context
// the event loop serves with (http_server.h). TLS 1.2 at least; an encrypted key is refused (the
// daemon never prompts for a passphrase).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace arbiter::server {

struct TlsFiles {
  std::string cert_file;  // PEM: the server's certificate, then any intermediates
  std::string key_file;   // PEM: its private key (unencrypted)
  bool enabled() const { return !cert_file.empty(); }
};

// Reads both files and checks that the certificate and the key are PEM and belong together:
//   "--tls-cert-file: F: no such file" (io::ReadInputFile's reasons)
//   "--tls-cert-file 'F' holds no PEM certificate"
//   "--tls-private-key-file 'K' holds no PEM private key (or it is encrypted: ...)"
//   "--tls-private-key-file 'K' does not match the certificate in --tls-cert-file 'F'"
Status CheckTlsFiles(const TlsFiles& files);

// The server's TLS context for `files` (CheckTlsFiles's error otherwise); null without files.
Result<std::shared_ptr<ssl_ctx_st>> NewTlsContext(const TlsFiles& files);

}  // namespace arbiter::server
