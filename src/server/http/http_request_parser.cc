#include "server/http/http_request_parser.h"

#include <httplib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace arbiter::server {

namespace {

constexpr std::array<std::string_view, 7> kMethods = {"GET",   "HEAD",   "POST",   "PUT",
                                                      "PATCH", "DELETE", "OPTIONS"};
constexpr size_t kMaxChunkLine = 4096;

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c <= ' ' || c >= 127 || std::string_view("\"(),/:;<=>?@[\\]{}").find(c) != s.npos)
      return false;
  return true;
}

// Go's httpguts.ValidHeaderFieldValue (net/http refuses a request whose header value has one):
// no control byte but the horizontal tab.
bool IsFieldValue(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < ' ' && b != '\t') || b == 0x7f;
  });
}

// Go's httpguts.ValidHostHeader: the bytes of a host, a port and an IPv6 literal or zone.
bool IsHost(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!$%&'()*+,-.:;=[]_~").find(c) != std::string_view::npos;
  });
}

// A comma-separated header value holds `token` (case-insensitive).
bool ListHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (EqualsNoCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == value.npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// The query's parameters as Go's url.ParseQuery reads them (kube-apiserver's): pairs split at
// '&', each at its first '=' (a value keeps the rest: `labelSelector=app=web` is "app=web"),
// '+' and %XX decoded; every pair kept, in order. cpp-httplib's parse_query_text kept only the
// text after a pair's last '=' and dropped a pair repeated verbatim.
void ParseQuery(std::string_view query, httplib::Params& params) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == query.npos ? query.size() : amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = eq == pair.npos ? std::string_view() : pair.substr(eq + 1);
    if (key.empty()) continue;
    params.emplace(httplib::detail::decode_url(std::string(key), true),
                   httplib::detail::decode_url(std::string(value), true));
  }
}

}  // namespace

HttpRequestParser::HttpRequestParser(HttpParseLimits limits)
    : limits_(limits), request_(std::make_unique<httplib::Request>()) {}

HttpRequestParser::~HttpRequestParser() = default;

void HttpRequestParser::Reset() {
  state_ = State::kHeaders;
  request_ = std::make_unique<httplib::Request>();
  scanned_ = 0;
  error_status_ = 0;
  error_message_.clear();
  expect_continue_ = false;
  keep_alive_ = true;
  chunked_ = false;
  remaining_ = 0;
  chunk_ = Chunk::kSize;
  line_.clear();
  trailer_bytes_ = 0;
}

std::unique_ptr<httplib::Request> HttpRequestParser::Take() {
  auto r = std::move(request_);
  Reset();
  return r;
}

void HttpRequestParser::Fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  keep_alive_ = false;
}

size_t HttpRequestParser::Feed(std::string_view data) {
  size_t used = 0;
  if (state_ == State::kHeaders) {
    used = FeedHeaders(data);
    if (state_ != State::kBody) return used;
    data.remove_prefix(used);
  }
  if (state_ != State::kBody) return used;
  if (chunked_) return used + FeedChunked(data);
  const size_t n = std::min(remaining_, data.size());
  request_->body.append(data.data(), n);
  remaining_ -= n;
  if (remaining_ == 0) state_ = State::kDone;
  return used + n;
}

size_t HttpRequestParser::FeedHeaders(std::string_view data) {
  // Leading blank lines between requests are ignored (RFC 9112 section 2.2).
  size_t start = 0;
  while (scanned_ == 0 && start < data.size() && (data[start] == '\r' || data[start] == '\n'))
    ++start;
  if (start > 0) return start;
  const size_t from = scanned_ > 3 ? scanned_ - 3 : 0;
  size_t end = data.find("\r\n\r\n", from);
  size_t term = 4;
  const size_t lf = data.find("\n\n", from);
  if (lf != data.npos && (end == data.npos || lf < end)) {
    end = lf;
    term = 2;
  }
  if (end == data.npos) {
    scanned_ = data.size();
    if (data.size() > limits_.max_header_bytes)
      Fail(431,
           "the request's headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
    return 0;
  }
  if (end + term > limits_.max_header_bytes) {
    Fail(431,
         "the request's headers exceed " + std::to_string(limits_.max_header_bytes) + " bytes");
    return 0;
  }
  if (ParseHead(data.substr(0, end)))
    state_ = remaining_ > 0 || chunked_ ? State::kBody : State::kDone;
  return end + term;
}

// The request line: method, target (path and query) and version.
bool HttpRequestParser::ParseRequestLine(std::string_view line) {
  httplib::Request& r = *request_;
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == line.npos ? line.npos : line.find(' ', sp1 + 1);
  if (sp2 == line.npos || line.find(' ', sp2 + 1) != line.npos) {
    Fail(400, "malformed request line");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    Fail(version.rfind("HTTP/", 0) == 0 ? 505 : 400, "unsupported HTTP version");
    return false;
  }
  r.method = std::string(method);
  r.version = std::string(version);
  keep_alive_ = version == "HTTP/1.1";
  if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
    Fail(IsToken(method) ? 405 : 400, "the method " + std::string(method) + " is not served");
    return false;
  }
  // Absolute form (a proxy's): only its path and query are looked at.
  if (target.rfind("http://", 0) == 0 || target.rfind("https://", 0) == 0) {
    const size_t slash = target.find('/', target.find("//") + 2);
    target = slash == target.npos ? std::string_view("/") : target.substr(slash);
  }
  if (target.empty() || target[0] != '/') {
    Fail(400, "malformed request target");
    return false;
  }
  r.target = std::string(target);
  const size_t q = target.find('?');
  r.path = httplib::detail::decode_url(std::string(target.substr(0, q)), false);
  if (q != target.npos) ParseQuery(target.substr(q + 1), r.params);
  return true;
}

// One header field (not empty), and what the parser takes from it: the body's length or
// coding, the connection's persistence, Expect: 100-continue.
bool HttpRequestParser::ParseHeaderField(std::string_view line, bool* has_length, size_t* length) {
  const size_t colon = line.find(':');
  if (colon == line.npos || !IsToken(line.substr(0, colon))) {
    Fail(400, "malformed header field");  // obsolete line folding too
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = Trim(line.substr(colon + 1));
  if (!IsFieldValue(value)) {
    Fail(400, "invalid header value");
    return false;
  }
  if (EqualsNoCase(name, "Content-Length")) {
    size_t n = 0;
    const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || p != value.data() + value.size() || (*has_length && n != *length)) {
      Fail(400, "malformed or conflicting Content-Length");
      return false;
    }
    *has_length = true;
    *length = n;
  } else if (EqualsNoCase(name, "Transfer-Encoding")) {
    if (!EqualsNoCase(value, "chunked")) {
      Fail(501, "the transfer coding \"" + std::string(value) + "\" is not served");
      return false;
    }
    chunked_ = true;
  } else if (EqualsNoCase(name, "Connection")) {
    if (ListHas(value, "close")) keep_alive_ = false;
    if (ListHas(value, "keep-alive")) keep_alive_ = true;
  } else if (EqualsNoCase(name, "Expect")) {
    expect_continue_ = EqualsNoCase(value, "100-continue");
  }
  request_->headers.emplace(std::string(name), std::string(value));
  return true;
}

// The request line and the header fields; false after Fail().
bool HttpRequestParser::ParseHead(std::string_view head) {
  size_t eol = head.find('\n');
  if (!ParseRequestLine(Trim(head.substr(0, eol)))) return false;
  head = eol == head.npos ? std::string_view() : head.substr(eol + 1);
  bool has_length = false;
  size_t length = 0;
  while (!head.empty()) {
    eol = head.find('\n');
    std::string_view line = head.substr(0, eol);
    head = eol == head.npos ? std::string_view() : head.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!ParseHeaderField(line, &has_length, &length)) return false;
  }
  if (chunked_ && has_length) {
    Fail(400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  if (!CheckHost()) return false;
  if (has_length && length > limits_.max_body_bytes) {
    Fail(413, "body too large");
    return false;
  }
  remaining_ = length;
  if (remaining_ == 0 && !chunked_) expect_continue_ = false;
  return true;
}

// Go's net/http (kube-apiserver's server): an HTTP/1.1 request names its host once, in host
// characters; HTTP/1.0 may leave it out.
bool HttpRequestParser::CheckHost() {
  const auto [first, last] = request_->headers.equal_range("Host");
  const auto hosts = std::distance(first, last);
  if (hosts == 0 && request_->version == "HTTP/1.1") {
    Fail(400, "missing required Host header");
    return false;
  }
  if (hosts > 1) {
    Fail(400, "too many Host headers");
    return false;
  }
  if (hosts == 1 && !IsHost(first->second)) {
    Fail(400, "malformed Host header");
    return false;
  }
  return true;
}

bool HttpRequestParser::AppendBody(std::string_view bytes) {
  if (request_->body.size() + bytes.size() > limits_.max_body_bytes) {
    Fail(413, "body too large");
    return false;
  }
  request_->body.append(bytes.data(), bytes.size());
  return true;
}

size_t HttpRequestParser::FeedChunked(std::string_view data) {
  size_t used = 0;
  while (used < data.size() && state_ == State::kBody) {
    if (chunk_ == Chunk::kData) {
      const size_t n = std::min(remaining_, data.size() - used);
      if (!AppendBody(data.substr(used, n))) return used;
      used += n;
      remaining_ -= n;
      if (remaining_ == 0) chunk_ = Chunk::kDataEnd;
      continue;
    }
    // A line: the chunk's size, the CRLF after its data, or a trailer field.
    const size_t nl = data.find('\n', used);
    const size_t take = (nl == data.npos ? data.size() : nl + 1) - used;
    line_.append(data.data() + used, take);
    used += take;
    if (line_.size() > kMaxChunkLine) {
      Fail(400, "malformed chunked body");
      return used;
    }
    if (nl == data.npos) break;
    std::string_view l = line_;
    l.remove_suffix(1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (chunk_ == Chunk::kDataEnd) {
      if (!l.empty()) {
        Fail(400, "malformed chunked body");
        return used;
      }
      chunk_ = Chunk::kSize;
    } else if (chunk_ == Chunk::kSize) {
      const std::string_view hex = Trim(l.substr(0, l.find(';')));
      size_t n = 0;
      const auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), n, 16);
      if (hex.empty() || ec != std::errc() || p != hex.data() + hex.size()) {
        Fail(ec == std::errc::result_out_of_range ? 413 : 400, "malformed chunk size");
        return used;
      }
      if (n > limits_.max_body_bytes - request_->body.size()) {
        Fail(413, "body too large");
        return used;
      }
      remaining_ = n;
      chunk_ = n == 0 ? Chunk::kTrailer : Chunk::kData;
    } else {  // trailer fields are read and dropped; an empty line ends the body
      trailer_bytes_ += line_.size();
      if (trailer_bytes_ > limits_.max_header_bytes) {
        Fail(431, "the request's trailer fields are too large");
        return used;
      }
      if (l.empty()) state_ = State::kDone;
    }
    line_.clear();
  }
  return used;
}

}  // namespace arbiter::server
