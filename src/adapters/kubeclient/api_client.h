// A client of a real kube-apiserver: HTTPS with the kubeconfig's certificate authority and client
// certificate and key (or a bearer token), over cpp-httplib. One connection per client (not
// thread-safe: each thread makes its own). Every answer is bounded (a body over its cap is an
// error, the connection dropped); no exception leaves this file.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/kubeclient/kubeconfig_reader.h"
#include "core/duration.h"
#include "core/status.h"

namespace httplib {
class ClientImpl;
}

namespace arbiter::kubeclient {

using Params = std::vector<std::pair<std::string, std::string>>;

struct ClientOptions {
  Millis connect_timeout = 5000;
  Millis read_timeout = 30000;  // a request's; a watch sets its own
  size_t max_body_bytes = 256 << 20;
  std::string user_agent = "arbiter-scheduler";
  // A kept-alive connection idle this long is closed before the next request, which opens a new
  // one: kube-apiserver closes connections idle for 90 s (its http.Server IdleTimeout), and over
  // TLS a closed connection still looks alive to the client (the server's close_notify is data to
  // read), so the first request after a long quiet spell failed ("could not be sent").
  Millis max_idle = 45000;
};

struct ApiResponse {
  int status = 0;
  std::string body;
};

class ApiClient {
 public:
  // The server's TLS settings from the kubeconfig: kInvalidArgument when a certificate or key is
  // not PEM, or the key does not match the certificate.
  static Result<std::unique_ptr<ApiClient>> Connect(const KubeConfig& config,
                                                    const ClientOptions& options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // An error Result when the server cannot be reached (connection, TLS, timeout) or the answer is
  // over the cap; otherwise the HTTP status and body, whatever the status.
  Result<ApiResponse> Get(const std::string& path, const Params& query = {});
  Result<ApiResponse> Post(const std::string& path, const std::string& json_body);
  // content_type: "application/merge-patch+json", "application/strategic-merge-patch+json", ...
  Result<ApiResponse> Patch(const std::string& path, const std::string& body,
                            const std::string& content_type);
  Result<ApiResponse> Put(const std::string& path, const std::string& json_body);
  Result<ApiResponse> Delete(const std::string& path, const std::string& json_body = "");

  // A streamed GET (a watch): `on_bytes` gets the body as it arrives (false stops). Returns the
  // HTTP status when the server ends the answer (or `on_bytes` stopped it); an error when the
  // connection failed or was cut (the caller reconnects). A non-200 answer's body is returned
  // in `error_body` (at most 64 KiB).
  Result<int> Stream(const std::string& path, const Params& query, Millis read_timeout,
                     const std::function<bool(std::string_view)>& on_bytes,
                     std::string* error_body);
  // Cuts the connection from another thread (an open Stream returns).
  void Stop();

  const std::string& server() const { return server_; }

 private:
  ApiClient() = default;
  Result<ApiResponse> Send(const char* method, const std::string& target, const std::string& body,
                           const std::string& content_type);
  std::string server_;
  ClientOptions options_;
  std::string token_;
  std::unique_ptr<httplib::ClientImpl> cli_;
  int64_t last_used_ns_ = 0;  // steady clock, when the last request ended; 0: none yet
};

// "a=1&b=x%20y"
std::string EncodeQuery(const Params& p);

}  // namespace arbiter::kubeclient
