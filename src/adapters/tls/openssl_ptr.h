// Owning pointers for the OpenSSL objects our TLS code reads PEM text into: the server's
// certificate and key (server/http/tls_server.cc) and a kubeconfig's CA, client certificate and key
// (adapters/kubeclient/api_client.cc).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace arbiter::tls {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// A read-only BIO over `pem` (which must outlive it). PEM inputs are capped well below INT_MAX
// by their readers.
inline BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace arbiter::tls
