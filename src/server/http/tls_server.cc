#include "server/http/tls_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <vector>

#include "adapters/io/input_file.h"
#include "adapters/tls/openssl_ptr.h"

namespace arbiter::server {

namespace {

constexpr io::InputKind kPemInput{"PEM file", 1 * io::kMiB};

using CertPtr = tls::X509Ptr;
using tls::KeyPtr;

// Never prompts for a passphrase (OpenSSL's default would ask on the terminal).
int NoPassphrase(char*, int, int, void*) { return 0; }

std::string Named(const char* flag, const std::string& path) {
  return std::string(flag) + " '" + path + "'";
}

// The certificate and its chain, and the key, parsed and checked.
struct TlsMaterial {
  std::vector<CertPtr> chain;  // leaf first
  KeyPtr key;
};

Result<TlsMaterial> Load(const TlsFiles& f) {
  constexpr const char* kCertFlag = "--tls-cert-file";
  constexpr const char* kKeyFlag = "--tls-private-key-file";
  auto cert_text = io::ReadInputFile(f.cert_file, kPemInput);
  if (!cert_text.ok()) return Status::InvalidArgument(kCertFlag + (": " + cert_text.message()));
  auto key_text = io::ReadInputFile(f.key_file, kPemInput);
  if (!key_text.ok()) return Status::InvalidArgument(kKeyFlag + (": " + key_text.message()));
  TlsMaterial m;
  {
    tls::BioPtr bio = tls::MemBio(*cert_text);
    while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr))
      m.chain.emplace_back(x);
    ERR_clear_error();  // the end of the PEM data reads as an error
  }
  if (m.chain.empty())
    return Status::InvalidArgument(Named(kCertFlag, f.cert_file) +
                                   " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  {
    tls::BioPtr bio = tls::MemBio(*key_text);
    m.key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
    ERR_clear_error();
  }
  if (!m.key)
    return Status::InvalidArgument(
        Named(kKeyFlag, f.key_file) +
        " holds no PEM private key (or it is encrypted: the daemon takes an unencrypted key, "
        "readable by its user only)");
  if (X509_check_private_key(m.chain.front().get(), m.key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(Named(kKeyFlag, f.key_file) +
                                   " does not match the certificate in " +
                                   Named(kCertFlag, f.cert_file));
  }
  return m;
}

}  // namespace

Status CheckTlsFiles(const TlsFiles& files) { return Load(files).status(); }

Result<std::shared_ptr<ssl_ctx_st>> NewTlsContext(const TlsFiles& files) {
  if (!files.enabled()) return std::shared_ptr<ssl_ctx_st>();
  auto m = Load(files);
  if (!m.ok()) return m.status();
  const TlsMaterial& tls = m.value();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  bool ok = ctx != nullptr;
  if (ok) {
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                       SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_default_passwd_cb(ctx.get(), NoPassphrase);
    ok = SSL_CTX_use_certificate(ctx.get(), tls.chain.front().get()) == 1;
    for (size_t i = 1; ok && i < tls.chain.size(); ++i)
      ok = SSL_CTX_add1_chain_cert(ctx.get(), tls.chain[i].get()) == 1;
    ok = ok && SSL_CTX_use_PrivateKey(ctx.get(), tls.key.get()) == 1 &&
         SSL_CTX_check_private_key(ctx.get()) == 1;
  }
  if (!ok) {
    ERR_clear_error();
    return Status::InvalidArgument("cannot set up TLS with " +
                                   Named("--tls-cert-file", files.cert_file) + " and " +
                                   Named("--tls-private-key-file", files.key_file));
  }
  return ctx;
}

}  // namespace arbiter::server
