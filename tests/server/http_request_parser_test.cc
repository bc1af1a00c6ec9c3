// The event loop's HTTP/1.1 request parser (server/http/http_request_parser.h): requests fed whole,
// byte by byte and pipelined; chunked bodies; every refusal decided before the body is read.
#include "server/http/http_request_parser.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace arbiter::server {
namespace http_request_parser_test {

using State = HttpRequestParser::State;

HttpParseLimits Small() { return {256, 64}; }

TEST(HttpRequestParser, ParsesARequestWithQueryAndBodyFedByteByByte) {
  HttpRequestParser p(Small());
  const std::string text =
      "POST /api/v1/namespaces/a%20b/pods?labelSelector=app%3Dx&dryRun=All&dryRun=x HTTP/1.1\r\n"
      "Host: h\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello";
  std::string buffer;
  for (char c : text) {
    buffer += c;
    buffer.erase(0, p.Feed(buffer));
  }
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_TRUE(buffer.empty());
  const httplib::Request& r = p.request();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/api/v1/namespaces/a b/pods");
  EXPECT_EQ(r.get_param_value("labelSelector"), "app=x");
  EXPECT_EQ(r.get_param_value_count("dryRun"), 2u);
  EXPECT_EQ(r.get_header_value("content-type"), "application/json");
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(p.keep_alive());
}

// Go's url.ParseQuery, as kube-apiserver reads a query: a value is everything after the pair's
// first '=' (curl users write `labelSelector=app=web` unencoded; it selected nothing when only
// the text after the last '=' was kept), a pair repeated verbatim is kept twice.
TEST(HttpRequestParser, AQueryValueKeepsTheEqualsSignsAfterItsFirst) {
  HttpRequestParser p(Small());
  p.Feed(
      "GET /p?labelSelector=app=web&fieldSelector=a==b,c!=d&x&=y&dryRun=All&dryRun=All "
      "HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p.state(), State::kDone);
  const httplib::Request& r = p.request();
  EXPECT_EQ(r.get_param_value("labelSelector"), "app=web");
  EXPECT_EQ(r.get_param_value("fieldSelector"), "a==b,c!=d");
  EXPECT_TRUE(r.has_param("x"));
  EXPECT_EQ(r.get_param_value("x"), "");
  EXPECT_FALSE(r.has_param(""));
  EXPECT_EQ(r.get_param_value_count("dryRun"), 2u);
}

TEST(HttpRequestParser, LeavesAPipelinedRequestForTheNextRound) {
  HttpRequestParser p(Small());
  std::string in = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.0\r\n\r\n";
  in.erase(0, p.Feed(in));
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.Take()->path, "/a");
  in.erase(0, p.Feed(in));
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.request().path, "/b");
  EXPECT_FALSE(p.keep_alive());  // HTTP/1.0 without keep-alive
  EXPECT_TRUE(in.empty());
}

TEST(HttpRequestParser, DecodesChunkedBodiesWithExtensionsAndTrailers) {
  HttpRequestParser p(Small());
  std::string in =
      "PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
      "5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-Trailer: t\r\n\r\n";
  const size_t head = in.find("\r\n\r\n") + 4;
  EXPECT_EQ(p.Feed(std::string_view(in).substr(0, head)), head);
  EXPECT_EQ(p.state(), State::kBody);
  EXPECT_TRUE(p.expects_continue());
  in.erase(0, head);
  EXPECT_EQ(p.Feed(in), in.size());
  ASSERT_EQ(p.state(), State::kDone);
  EXPECT_EQ(p.request().body, "hello!");
}

int ErrorOf(const std::string& text, HttpParseLimits limits = Small()) {
  HttpRequestParser p(limits);
  p.Feed(text);
  return p.state() == State::kError ? p.error_status() : 0;
}

TEST(HttpRequestParser, RefusesBeforeReadingTheBody) {
  EXPECT_EQ(ErrorOf("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 505);
  EXPECT_EQ(ErrorOf("PRI /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 405);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n"), 413);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"), 400);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(ErrorOf("GET /x HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(ErrorOf("GET x HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(ErrorOf("GET /" + std::string(300, 'a')), 431);  // no end of headers in sight
}

TEST(HttpRequestParser, StopsAChunkedBodyAtTheLimit) {
  // 60 bytes pass, the chunk that would pass 64 is refused as soon as its size is read.
  HttpRequestParser p(Small());
  const std::string in = "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n" +
                         std::string(60, 'a') + "\r\n5\r\n";
  p.Feed(in);
  ASSERT_EQ(p.state(), State::kError);
  EXPECT_EQ(p.error_status(), 413);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: "
                    "chunked\r\n\r\nfffffffffffffffffff\r\n"),
            413);
  EXPECT_EQ(ErrorOf("POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            400);
}

// Go's net/http (kube-apiserver's server) refuses these with 400 before any handler sees them:
// an HTTP/1.1 request without Host (HTTP/1.0 may omit it), two Host headers or one with a byte
// no host has, and a control byte other than tab in a header's name or value. They were served.
TEST(HttpRequestParser, RefusesWhatGoRefusesInTheHostAndHeaderBytes) {
  auto refusal = [](const std::string& text) {
    HttpRequestParser p(Small());
    p.Feed(text);
    return p.state() == State::kError ? std::to_string(p.error_status()) + " " + p.error_message()
                                      : std::string("served");
  };
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\n\r\n"), "400 missing required Host header");
  EXPECT_EQ(refusal("GET http://h/x HTTP/1.1\r\n\r\n"), "400 missing required Host header");
  EXPECT_EQ(refusal("GET /x HTTP/1.0\r\n\r\n"), "served");
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: \r\n\r\n"), "served");  // empty is Go's too
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: [::1]:6443\r\n\r\n"), "served");
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), "400 too many Host headers");
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: a b\r\n\r\n"), "400 malformed Host header");
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n"), "400 malformed Host header");
  EXPECT_EQ(refusal(std::string("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 38)),
            "400 invalid header value");
  for (const char* bad : {"\x01", "\x1f", "\x7f", "\r", "\x0b"})
    EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a" + std::string(bad) + "b\r\n\r\n"),
              "400 invalid header value")
        << int(bad[0]);
  EXPECT_EQ(refusal(std::string("GET /x HTTP/1.1\r\nHost: h\r\nX\0A: b\r\n\r\n", 36)),
            "400 malformed header field");
  EXPECT_EQ(refusal("GET /x HTTP/1.1\r\nHost: h\r\nX-A: a\tb\xff\r\n\r\n"), "served");
}

}  // namespace http_request_parser_test
}  // namespace arbiter::server
