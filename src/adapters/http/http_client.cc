#include "adapters/http/http_client.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

namespace arbiter::http {

namespace {
int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out += static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string PercentEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string EncodeParams(const Params& p) {
  std::string out;
  for (const auto& [k, v] : p) {
    if (!out.empty()) out += '&';
    out += PercentEncode(k) + "=" + PercentEncode(v);
  }
  return out;
}

Result<Url> ParseUrl(std::string_view text) {
  Url u;
  size_t p = text.find("://");
  if (p == std::string_view::npos || p == 0)
    return Result<Url>::Error("URL \"" + std::string(text) +
                              "\" has no scheme (expected scheme://host[:port])");
  u.scheme = std::string(text.substr(0, p));
  for (char& c : u.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = text.substr(p + 3);
  size_t q = rest.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view() : rest.substr(q + 1);
  rest = rest.substr(0, q);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) u.path = std::string(rest.substr(slash));
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view cred = authority.substr(0, at);
    authority = authority.substr(at + 1);
    size_t colon = cred.find(':');
    u.user = PercentDecode(cred.substr(0, colon));
    if (colon != std::string_view::npos) u.password = PercentDecode(cred.substr(colon + 1));
  }
  std::string_view host = authority;
  if (!authority.empty() && authority.front() == '[') {  // [ipv6]:port
    size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return Result<Url>::Error("URL \"" + std::string(text) + "\": unclosed [ in the host");
    host = authority.substr(1, close - 1);
    authority = authority.substr(close + 1);
    if (!authority.empty() && authority.front() != ':')
      return Result<Url>::Error("URL \"" + std::string(text) + "\": junk after the host");
    if (!authority.empty())
      authority = authority.substr(1);
    else
      authority = {};
    u.host = std::string(host);
    host = {};
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      authority = authority.substr(colon + 1);
    } else {
      authority = {};
    }
    u.host = std::string(host);
  }
  if (!authority.empty()) {
    int port = 0;
    for (char c : authority) {
      if (c < '0' || c > '9' || port > 65535)
        return Result<Url>::Error("URL \"" + std::string(text) + "\": port \"" +
                                  std::string(authority) + "\" is not a number");
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535)
      return Result<Url>::Error("URL \"" + std::string(text) + "\": port out of range");
    u.port = port;
  }
  if (u.host.empty()) return Result<Url>::Error("URL \"" + std::string(text) + "\" has no host");
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    size_t eq = kv.find('=');
    u.query[PercentDecode(kv.substr(0, eq))] =
        eq == std::string_view::npos ? "" : PercentDecode(kv.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return u;
}

Client::Client(std::string base, std::string what, Options opts)
    : base_(std::move(base)),
      what_(std::move(what)),
      opts_(opts),
      cli_(std::make_unique<httplib::Client>(base_)) {
  cli_->set_connection_timeout(opts_.connect_timeout / 1000, (opts_.connect_timeout % 1000) * 1000);
  cli_->set_read_timeout(opts_.read_timeout / 1000, (opts_.read_timeout % 1000) * 1000);
  cli_->set_write_timeout(opts_.read_timeout / 1000, (opts_.read_timeout % 1000) * 1000);
  cli_->set_keep_alive(true);
  // httplib sends a request's headers and its body in two writes: with Nagle's algorithm on, the
  // body waits for the server's delayed ACK of the headers, 40 ms per request on a kept-alive
  // connection (5 of a warehouse invoice's 6 round trips; issue 28).
  cli_->set_tcp_nodelay(true);
}

Client::~Client() = default;

namespace {
std::string Why(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (refused, no route or name not resolved)";
    case httplib::Error::Read:
      return "no answer (the read failed or timed out)";
    case httplib::Error::Write:
      return "the request could not be sent";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "TLS certificate not trusted";
    default:
      return httplib::to_string(e);
  }
}
}  // namespace

template <typename F>
Result<Response> Client::Do(const char* method, const std::string& path, bool retryable, F&& send) {
  Millis wait = opts_.backoff;
  const int attempts = retryable ? 1 + std::max(0, opts_.retries) : 1;
  std::string last;
  for (int i = 0; i < attempts; ++i) {
    if (i > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
      wait *= 2;
    }
    ++requests_;
    httplib::Result res = send();
    if (!res) {
      last = what_ + " unreachable (" + method + " " + path + "): " + Why(res.error());
      continue;
    }
    Response r{res->status, res->body};
    if (r.status == 429 || r.status >= 500) {
      last = what_ + " answered HTTP " + std::to_string(r.status) + " to " + method + " " + path +
             ": " + r.body.substr(0, 2000);
      if (i + 1 < attempts) continue;
    }
    return r;
  }
  if (attempts > 1) last += " (after " + std::to_string(attempts) + " attempts)";
  return Result<Response>::Error(last);
}

namespace {
httplib::Headers ToHeaders(const Headers& h) {
  httplib::Headers out;
  for (const auto& [k, v] : h) out.emplace(k, v);
  return out;
}
}  // namespace

Result<Response> Client::PostForm(const std::string& path, const Params& form, bool retryable) {
  std::string body = EncodeParams(form);
  return Do("POST", path, retryable, [&] {
    return cli_->Post(path.c_str(), ToHeaders(headers_), body, "application/x-www-form-urlencoded");
  });
}

Result<Response> Client::Post(const std::string& path, const Params& query, const std::string& body,
                              const std::string& content_type, bool retryable) {
  std::string target = query.empty() ? path : path + "?" + EncodeParams(query);
  return Do("POST", path, retryable, [&] {
    return cli_->Post(target.c_str(), ToHeaders(headers_), body, content_type.c_str());
  });
}

Result<Response> Client::Get(const std::string& path, const Params& query, bool retryable) {
  std::string target = query.empty() ? path : path + "?" + EncodeParams(query);
  return Do("GET", path, retryable, [&] { return cli_->Get(target.c_str(), ToHeaders(headers_)); });
}

}  // namespace arbiter::http
