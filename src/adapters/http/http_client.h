// A small HTTP client for the adapters that talk to services (Prometheus, ClickHouse), over
// Debian's cpp-httplib. Every request has a connect and a read timeout; retries (with
// exponential backoff) only for requests the caller marks safe to repeat, and only on a
// connection failure, a timeout, 429 or 5xx. No exception leaves this file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/duration.h"
#include "core/status.h"

namespace httplib {
class Client;
}

namespace arbiter::http {

// scheme://[user[:password]@]host[:port][/path][?query]
struct Url {
  std::string scheme;  // "http", "https", "clickhouse", "postgresql", ...
  std::string user, password;
  std::string host;
  int port = 0;      // 0: not given
  std::string path;  // "" or "/..."
  std::map<std::string, std::string> query;
};
Result<Url> ParseUrl(std::string_view text);
std::string PercentDecode(std::string_view s);
std::string PercentEncode(std::string_view s);  // RFC 3986 unreserved characters kept

struct Options {
  Millis connect_timeout = 5000;
  Millis read_timeout = 30000;
  int retries = 3;       // extra attempts after the first, for retryable requests
  Millis backoff = 200;  // first wait; doubles per attempt
};

struct Response {
  int status = 0;
  std::string body;
};

using Params = std::vector<std::pair<std::string, std::string>>;
using Headers = std::vector<std::pair<std::string, std::string>>;

class Client {
 public:
  // base: "http://host:port" (https when built with TLS support). `what` names the service in
  // error messages ("Prometheus at http://...").
  Client(std::string base, std::string what, Options opts);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST with an application/x-www-form-urlencoded body of `form`.
  Result<Response> PostForm(const std::string& path, const Params& form, bool retryable);
  // POST `body` to path?query.
  Result<Response> Post(const std::string& path, const Params& query, const std::string& body,
                        const std::string& content_type, bool retryable);
  Result<Response> Get(const std::string& path, const Params& query, bool retryable);
  void SetHeaders(Headers h) { headers_ = std::move(h); }
  const std::string& what() const { return what_; }
  int64_t requests() const { return requests_; }

 private:
  template <typename F>
  Result<Response> Do(const char* method, const std::string& path, bool retryable, F&& send);
  std::string base_, what_;
  Options opts_;
  Headers headers_;
  std::unique_ptr<httplib::Client> cli_;
  int64_t requests_ = 0;
};

// "a=1&b=x%20y"
std::string EncodeParams(const Params& p);

}  // namespace arbiter::http
