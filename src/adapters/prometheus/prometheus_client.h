// Prometheus HTTP API client: /api/v1/query_range and /api/v1/query (POST form, so long
// queries never hit URL limits; both are read-only and retried on connection errors, timeouts,
// 429 and 5xx). Errors say which: unreachable, a non-200 answer with Prometheus' own
// errorType/error, a body that is not the documented JSON, or partial data (warnings).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adapters/http/http_client.h"
#include "core/billing/exact.h"

namespace arbiter::prometheus {

struct Sample {
  Millis t = 0;
  std::string value;  // Prometheus' float text ("12.5", "NaN", "+Inf")
};
struct Series {
  std::map<std::string, std::string> labels;
  std::vector<Sample> samples;
};

class Client {
 public:
  // url: http://host:port[/prefix]
  static Result<std::unique_ptr<Client>> Create(const std::string& url, http::Options opts);
  // Range query, evaluated at start, start+step, ..., <= end (all Unix ms). A matrix.
  Result<std::vector<Series>> QueryRange(const std::string& query, Millis start, Millis end,
                                         Millis step);
  // Instant query at `time`: a vector (each series has one sample) or a matrix (range selector).
  Result<std::vector<Series>> Query(const std::string& query, Millis time);
  int64_t requests() const { return http_->requests(); }
  const std::string& url() const { return url_; }

 private:
  Client(std::string url, std::string prefix, std::unique_ptr<http::Client> c)
      : url_(std::move(url)), prefix_(std::move(prefix)), http_(std::move(c)) {}
  Result<std::vector<Series>> Call(const std::string& api, const http::Params& form,
                                   const std::string& query);
  std::string url_, prefix_;
  std::unique_ptr<http::Client> http_;
};

// Unix ms as Prometheus' seconds text ("1767225600.5").
std::string PromTime(Millis t);

// Exact conversion of a Prometheus value text to an integer: round_half_up(value × mul / div).
// Accepts plain decimals and exponents ("1.5", "-2", "1e+06", "4.2E-3"); refuses NaN, ±Inf and
// values too large for 128 bits. Fractional digits beyond 30 are ignored (far below any unit).
Result<billing::i128> ScaleValue(std::string_view text, billing::i128 mul, billing::i128 div);

}  // namespace arbiter::prometheus
