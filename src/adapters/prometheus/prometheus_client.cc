#include "adapters/prometheus/prometheus_client.h"

#include <nlohmann/json.hpp>

namespace arbiter::prometheus {

using billing::i128;

std::string PromTime(Millis t) {
  std::string sign = t < 0 ? "-" : "";
  uint64_t a = t < 0 ? static_cast<uint64_t>(-(t + 1)) + 1 : static_cast<uint64_t>(t);
  std::string ms = std::to_string(a % 1000);
  while (ms.size() < 3) ms = "0" + ms;
  return sign + std::to_string(a / 1000) + "." + ms;
}

Result<i128> ScaleValue(std::string_view text, i128 mul, i128 div) {
  auto bad = [&](const char* why) {
    return Result<i128>::Error("value \"" + std::string(text) + "\" " + why);
  };
  if (div <= 0) return bad("divided by a non-positive number");
  size_t i = 0;
  bool neg = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
  i128 digits = 0;
  int frac = 0, exp10 = 0;
  bool any = false, dot = false;
  constexpr i128 kLimit = static_cast<i128>(1) << 120;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (dot && frac >= 30) continue;
      if (digits > kLimit / 10) return bad("is too large");
      digits = digits * 10 + (c - '0');
      if (dot) ++frac;
    } else if (c == '.' && !dot) {
      dot = true;
    } else if ((c == 'e' || c == 'E') && any) {
      ++i;
      bool eneg = false;
      if (i < text.size() && (text[i] == '+' || text[i] == '-')) eneg = text[i++] == '-';
      if (i >= text.size()) return bad("has an empty exponent");
      int e = 0;
      for (; i < text.size(); ++i) {
        if (text[i] < '0' || text[i] > '9') return bad("is not a number");
        if (e > 400) return bad("is out of range");
        e = e * 10 + (text[i] - '0');
      }
      exp10 = eneg ? -e : e;
      break;
    } else {
      return bad("is not a finite number");
    }
  }
  if (!any) return bad("is not a finite number");
  int scale = frac - exp10;  // value = digits / 10^scale
  while (scale < 0) {
    if (digits > kLimit / 10) return bad("is too large");
    digits *= 10;
    ++scale;
  }
  while (scale > 36) {  // keep the divisor within 128 bits; rounding below 10^-36 is moot
    digits /= 10;
    --scale;
  }
  i128 pow = 1;
  for (int k = 0; k < scale; ++k) pow *= 10;
  // round_half_up(digits × mul / (div × 10^scale)); the divisor must stay below 2^127.
  if (pow > (static_cast<i128>(1) << 126) / div) {
    // Tiny value: reduce the digits first (the result is 0 or ±1 at most for sane units).
    while (pow > (static_cast<i128>(1) << 126) / div && scale > 0) {
      digits /= 10;
      pow /= 10;
      --scale;
    }
  }
  i128 v = billing::MulDivRoundHalfUp(digits, mul, div * pow);
  return neg ? -v : v;
}

Result<std::unique_ptr<Client>> Client::Create(const std::string& url, http::Options opts) {
  auto u = http::ParseUrl(url);
  if (!u.ok()) return u.status();
  if (u->scheme != "http" && u->scheme != "https")
    return Result<std::unique_ptr<Client>>::Error("Prometheus URL \"" + url +
                                                  "\" must be http:// or https://");
  std::string base =
      u->scheme + "://" + (u->host.find(':') != std::string::npos ? "[" + u->host + "]" : u->host);
  if (u->port) base += ":" + std::to_string(u->port);
  std::string prefix = u->path;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  auto c = std::make_unique<http::Client>(base, "Prometheus at " + url, opts);
  if (!u->user.empty()) {
    std::string cred = u->user + ":" + u->password;
    // Basic auth header, base64.
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string enc;
    size_t i = 0;
    for (; i + 2 < cred.size(); i += 3) {
      uint32_t n = (uint8_t(cred[i]) << 16) | (uint8_t(cred[i + 1]) << 8) | uint8_t(cred[i + 2]);
      enc += {b64[n >> 18], b64[(n >> 12) & 63], b64[(n >> 6) & 63], b64[n & 63]};
    }
    if (i + 1 == cred.size()) {
      uint32_t n = uint8_t(cred[i]) << 16;
      enc += {b64[n >> 18], b64[(n >> 12) & 63], '=', '='};
    } else if (i + 2 == cred.size()) {
      uint32_t n = (uint8_t(cred[i]) << 16) | (uint8_t(cred[i + 1]) << 8);
      enc += {b64[n >> 18], b64[(n >> 12) & 63], b64[(n >> 6) & 63], '='};
    }
    c->SetHeaders({{"Authorization", "Basic " + enc}});
  }
  return std::unique_ptr<Client>(new Client(url, prefix, std::move(c)));
}

Result<std::vector<Series>> Client::Call(const std::string& api, const http::Params& form,
                                         const std::string& query) {
  using R = Result<std::vector<Series>>;
  auto res = http_->PostForm(prefix_ + api, form, /*retryable=*/true);
  if (!res.ok()) return res.status();
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  auto shortq = query.size() > 300 ? query.substr(0, 300) + "..." : query;
  if (res->status != 200) {
    std::string detail = res->body.substr(0, 1000);
    if (!j.is_discarded() && j.is_object() && j.contains("error"))
      detail = j.value("errorType", std::string("error")) + ": " + j["error"].get<std::string>();
    return R::Error(http_->what() + " answered HTTP " + std::to_string(res->status) + " to " + api +
                    " (" + detail + ") for query " + shortq);
  }
  if (j.is_discarded() || !j.is_object())
    return R::Error(http_->what() + ": " + api +
                    " did not answer JSON (is this a Prometheus server?)");
  if (j.value("status", std::string()) != "success")
    return R::Error(http_->what() + ": " + api +
                    " failed: " + j.value("errorType", std::string("error")) + ": " +
                    j.value("error", std::string("(no message)")) + " for query " + shortq);
  if (j.contains("warnings") && j["warnings"].is_array() && !j["warnings"].empty()) {
    std::string w;
    for (const auto& x : j["warnings"])
      w += (w.empty() ? "" : "; ") + (x.is_string() ? x.get<std::string>() : x.dump());
    return R::Error(http_->what() + " returned partial data (warnings: " + w + ") for query " +
                    shortq + "; refusing to bill from it");
  }
  const auto& data = j["data"];
  if (!data.is_object() || !data.contains("result") || !data["result"].is_array())
    return R::Error(http_->what() + ": " + api + " answer has no data.result array");
  std::string type = data.value("resultType", std::string());
  std::vector<Series> out;
  out.reserve(data["result"].size());
  auto sample = [&](const nlohmann::json& p, Series* s) -> bool {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) return false;
    // Timestamps are float seconds with millisecond precision: round to ms.
    double sec = p[0].get<double>();
    s->samples.push_back(
        {static_cast<Millis>(sec * 1000.0 + (sec >= 0 ? 0.5 : -0.5)), p[1].get<std::string>()});
    return true;
  };
  for (const auto& r : data["result"]) {
    Series s;
    if (r.contains("metric") && r["metric"].is_object())
      for (auto it = r["metric"].begin(); it != r["metric"].end(); ++it)
        if (it.value().is_string()) s.labels[it.key()] = it.value().get<std::string>();
    bool ok = true;
    if (type == "matrix") {
      if (!r.contains("values") || !r["values"].is_array())
        ok = false;
      else {
        s.samples.reserve(r["values"].size());
        for (const auto& p : r["values"]) ok = ok && sample(p, &s);
      }
    } else if (type == "vector") {
      ok = r.contains("value") && sample(r["value"], &s);
    } else {
      return R::Error(http_->what() + ": unexpected result type \"" + type + "\" for query " +
                      shortq);
    }
    if (!ok) return R::Error(http_->what() + ": malformed sample in the answer to " + shortq);
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<Series>> Client::QueryRange(const std::string& query, Millis start, Millis end,
                                               Millis step) {
  std::string step_text = std::to_string(step / 1000) +
                          (step % 1000 ? "." + std::to_string(1000 + step % 1000).substr(1) : "");
  return Call(
      "/api/v1/query_range",
      {{"query", query}, {"start", PromTime(start)}, {"end", PromTime(end)}, {"step", step_text}},
      query);
}

Result<std::vector<Series>> Client::Query(const std::string& query, Millis time) {
  return Call("/api/v1/query", {{"query", query}, {"time", PromTime(time)}}, query);
}

}  // namespace arbiter::prometheus
