#include "adapters/kubeclient/api_client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <string_view>

#include "adapters/http/http_client.h"
#include "adapters/tls/openssl_ptr.h"

namespace arbiter::kubeclient {

std::string EncodeQuery(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) {
    if (!out.empty()) out += '&';
    out += http::PercentEncode(k) + "=" + http::PercentEncode(v);
  }
  return out;
}

namespace {

using tls::BioPtr;
using tls::KeyPtr;
using tls::MemBio;
using tls::X509Ptr;

// Every certificate of a PEM bundle, in a new store (nullptr when there is none).
X509_STORE* StoreOf(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  if (!bio) return nullptr;
  X509_STORE* store = X509_STORE_new();
  int n = 0;
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, x);
    X509_free(x);
    ++n;
  }
  ERR_clear_error();
  if (n == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Why(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (refused, no route or name not resolved)";
    case httplib::Error::Read:
      return "the connection was cut or timed out while reading the answer";
    case httplib::Error::Write:
      return "the request could not be sent";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed (is the client certificate accepted?)";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate is not trusted by the kubeconfig's certificate "
             "authority";
    case httplib::Error::Canceled:
      return "canceled (the answer was larger than allowed, or the client stopped)";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace

Result<std::unique_ptr<ApiClient>> ApiClient::Connect(const KubeConfig& config,
                                                      const ClientOptions& options) {
  auto url = http::ParseUrl(config.server);
  if (!url.ok()) return Status::InvalidArgument("server: " + url.message());
  std::unique_ptr<ApiClient> c(new ApiClient());
  c->server_ = config.server;
  c->options_ = options;
  c->token_ = config.token;
  const bool https = url->scheme == "https";
  const int port = url->port ? url->port : (https ? 443 : 80);
  if (https) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!config.client_cert_pem.empty()) {
      BioPtr cb = MemBio(config.client_cert_pem);
      X509Ptr cert(cb ? PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr) : nullptr);
      BioPtr kb = MemBio(config.client_key_pem);
      KeyPtr key(kb ? PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr) : nullptr);
      ERR_clear_error();
      if (!cert) return Status::InvalidArgument("the client certificate is not a PEM certificate");
      if (!key) return Status::InvalidArgument("the client key is not a PEM private key");
      if (X509_check_private_key(cert.get(), key.get()) != 1) {
        ERR_clear_error();
        return Status::InvalidArgument("the client key does not match the client certificate");
      }
      // The SSL context takes its own references.
      ssl = std::make_unique<httplib::SSLClient>(url->host, port, cert.get(), key.get());
    } else {
      ssl = std::make_unique<httplib::SSLClient>(url->host, port);
    }
    if (!ssl->is_valid()) return Status::InvalidArgument("cannot set up TLS for " + config.server);
    if (config.insecure_skip_tls_verify) {
      ssl->enable_server_certificate_verification(false);
    } else if (!config.ca_pem.empty()) {
      X509_STORE* store = StoreOf(config.ca_pem);
      if (!store)
        return Status::InvalidArgument("the certificate authority is not a PEM certificate");
      ssl->set_ca_cert_store(store);  // owned by the client from here
    }
    c->cli_ = std::move(ssl);
  } else {
    c->cli_ = std::make_unique<httplib::ClientImpl>(url->host, port);
  }
  c->cli_->set_connection_timeout(options.connect_timeout / 1000,
                                  (options.connect_timeout % 1000) * 1000);
  c->cli_->set_read_timeout(options.read_timeout / 1000, (options.read_timeout % 1000) * 1000);
  c->cli_->set_write_timeout(options.read_timeout / 1000, (options.read_timeout % 1000) * 1000);
  c->cli_->set_keep_alive(true);
  // A request goes out as headers, then body: without TCP_NODELAY, Nagle's algorithm holds the
  // body until the server's delayed ACK (40 ms), and one connection makes at most ~25 calls a
  // second (measured: bench/kubesched.sh, 20 bindings/s before, docs/kubernetes.md).
  c->cli_->set_tcp_nodelay(true);
  if (!c->token_.empty()) c->cli_->set_bearer_token_auth(c->token_.c_str());
  return c;
}

ApiClient::~ApiClient() = default;

void ApiClient::Stop() {
  if (cli_) cli_->stop();
}

Result<ApiResponse> ApiClient::Send(const char* method, const std::string& target,
                                    const std::string& body, const std::string& content_type) {
  httplib::Request req;
  req.method = method;
  req.path = target;
  req.headers.emplace("Accept", "application/json");
  req.headers.emplace("User-Agent", options_.user_agent);
  if (!body.empty() || std::string(method) == "POST" || std::string(method) == "PUT" ||
      std::string(method) == "PATCH") {
    req.body = body;
    req.headers.emplace("Content-Type", content_type);
  }
  ApiResponse out;
  bool too_large = false;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (out.body.size() + len > options_.max_body_bytes) {
      too_large = true;
      return false;
    }
    out.body.append(data, len);
    return true;
  };
  // A connection idle past max_idle is not trusted; one that turns out dead when reused is
  // replaced and the request sent again, when that is safe: it was not sent (a write error), or it
  // is a GET.
  if (last_used_ns_ != 0 && SteadyNs() - last_used_ns_ > options_.max_idle * 1000000) cli_->stop();
  const bool reused = cli_->is_socket_open() != 0;
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  bool ok = cli_->send(req, res, err);
  if (!ok && reused && !too_large &&
      (err == httplib::Error::Write ||
       (err == httplib::Error::Read && std::string_view(method) == "GET"))) {
    cli_->stop();
    out.body.clear();
    err = httplib::Error::Success;
    ok = cli_->send(req, res, err);
  }
  last_used_ns_ = SteadyNs();
  if (too_large)
    return Status::ResourceExhausted(std::string(method) + " " + target + ": answer larger than " +
                                     std::to_string(options_.max_body_bytes) + " bytes");
  if (!ok)
    return Status::Unavailable("kube-apiserver at " + server_ + " unreachable (" + method + " " +
                               target.substr(0, target.find('?')) + "): " + Why(err));
  out.status = res.status;
  return out;
}

Result<ApiResponse> ApiClient::Get(const std::string& path, const Params& query) {
  return Send("GET", query.empty() ? path : path + "?" + EncodeQuery(query), "", "");
}
Result<ApiResponse> ApiClient::Post(const std::string& path, const std::string& json_body) {
  return Send("POST", path, json_body, "application/json");
}
Result<ApiResponse> ApiClient::Patch(const std::string& path, const std::string& body,
                                     const std::string& content_type) {
  return Send("PATCH", path, body, content_type);
}
Result<ApiResponse> ApiClient::Put(const std::string& path, const std::string& json_body) {
  return Send("PUT", path, json_body, "application/json");
}
Result<ApiResponse> ApiClient::Delete(const std::string& path, const std::string& json_body) {
  return Send("DELETE", path, json_body, "application/json");
}

Result<int> ApiClient::Stream(const std::string& path, const Params& query, Millis read_timeout,
                              const std::function<bool(std::string_view)>& on_bytes,
                              std::string* error_body) {
  const std::string target = query.empty() ? path : path + "?" + EncodeQuery(query);
  cli_->set_read_timeout(read_timeout / 1000, (read_timeout % 1000) * 1000);
  httplib::Request req;
  req.method = "GET";
  req.path = target;
  req.headers.emplace("Accept", "application/json");
  req.headers.emplace("User-Agent", options_.user_agent);
  int status = 0;
  bool stopped = false;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (status != 200) {
      if (error_body && error_body->size() < 65536)
        error_body->append(data, std::min(len, 65536 - error_body->size()));
      return true;
    }
    if (!on_bytes(std::string_view(data, len))) {
      stopped = true;
      return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool ok = cli_->send(req, res, err);
  cli_->set_read_timeout(options_.read_timeout / 1000, (options_.read_timeout % 1000) * 1000);
  if (stopped) return status;
  if (!ok) return Status::Unavailable("watch " + path + " at " + server_ + ": " + Why(err));
  return status != 0 ? status : res.status;
}

}  // namespace arbiter::kubeclient
