// An incremental HTTP/1.1 request parser for the daemon's event loop (http_server.h): bytes go in
// as they arrive, a cpp-httplib Request (the type every handler takes) comes out. Bounded: the
// request line and headers at most `max_header_bytes` (431), a body at most `max_body_bytes`,
// Content-Length or chunked (413, decided as soon as the limit is passed, not after reading it).
// Refused before any body is read: a method it does not serve (405: PRI, CONNECT, TRACE...),
// both Content-Length and Transfer-Encoding, conflicting lengths, a transfer coding other than
// chunked (the request-smuggling cases of RFC 9112 section 6.3); as Go's net/http refuses them
// (400): an HTTP/1.1 request without a Host header, two Host headers or a malformed one, a
// control byte (but tab) in a header field. Pure: no I/O.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace httplib {
struct Request;
}

namespace arbiter::server {

struct HttpParseLimits {
  size_t max_header_bytes = 64 * 1024;
  size_t max_body_bytes = 3u << 20;
};

class HttpRequestParser {
 public:
  enum class State { kHeaders, kBody, kDone, kError };

  explicit HttpRequestParser(HttpParseLimits limits);
  ~HttpRequestParser();

  // Consumes a prefix of `data` and returns its length; stops at the end of a request (kDone) or
  // at an error (kError). Bytes of a next (pipelined) request are left unconsumed.
  size_t Feed(std::string_view data);
  State state() const { return state_; }
  // The HTTP status of the error (400, 405, 413, 431, 501, 505) and why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // Once the headers are in: the client waits for "100 Continue" before sending the body.
  bool expects_continue() const { return expect_continue_; }
  // Once the headers are in: whether the connection may serve another request after this one.
  bool keep_alive() const { return keep_alive_; }
  // The request (its body once kDone); the parser's until Reset().
  httplib::Request& request() { return *request_; }
  // Takes the finished request out and readies the parser for the next one.
  std::unique_ptr<httplib::Request> Take();
  void Reset();

 private:
  size_t FeedHeaders(std::string_view data);
  bool ParseHead(std::string_view head);
  // ParseHead's steps; false after Fail(). `has_length`, `length`: the Content-Length so far.
  bool ParseRequestLine(std::string_view line);
  bool ParseHeaderField(std::string_view line, bool* has_length, size_t* length);
  bool CheckHost();
  size_t FeedChunked(std::string_view data);
  void Fail(int status, std::string message);
  bool AppendBody(std::string_view bytes);

  enum class Chunk { kSize, kData, kDataEnd, kTrailer };

  HttpParseLimits limits_;
  State state_ = State::kHeaders;
  std::unique_ptr<httplib::Request> request_;
  size_t scanned_ = 0;  // header bytes already searched for the blank line
  int error_status_ = 0;
  std::string error_message_;
  bool expect_continue_ = false;
  bool keep_alive_ = true;
  bool chunked_ = false;
  size_t remaining_ = 0;  // Content-Length bytes, or the current chunk's, still to read
  Chunk chunk_ = Chunk::kSize;
  std::string line_;  // a chunk-size or trailer line being read
  size_t trailer_bytes_ = 0;
};

}  // namespace arbiter::server
