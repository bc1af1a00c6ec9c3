#include "adapters/kube/continue_token.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "adapters/kube/status.h"

namespace arbiter::kube {
namespace continue_token_test {

TEST(ContinueTokenTest, EncodesAsKubeApiserverDoes) {
  // kube-apiserver: base64.RawURLEncoding of {"v":"meta.k8s.io/v1","rv":RV,"start":"KEY\u0000"}.
  const std::string t = EncodeContinue({42, std::string("default/p-1\0", 12)});
  auto bytes = DecodeBase64RawUrl(t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes.value(), R"({"v":"meta.k8s.io/v1","rv":42,"start":"default/p-1\u0000"})");
  EXPECT_EQ(t.find('='), std::string::npos);  // no padding
  auto back = DecodeContinue(t);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(back.value().resource_version, 42);
  EXPECT_EQ(back.value().start, std::string("default/p-1\0", 12));
}

TEST(ContinueTokenTest, Base64RawUrlMatchesRfc4648Vectors) {
  EXPECT_EQ(Base64RawUrl(""), "");
  EXPECT_EQ(Base64RawUrl("f"), "Zg");
  EXPECT_EQ(Base64RawUrl("fo"), "Zm8");
  EXPECT_EQ(Base64RawUrl("foo"), "Zm9v");
  EXPECT_EQ(Base64RawUrl("foob"), "Zm9vYg");
  EXPECT_EQ(Base64RawUrl("\xfb\xff"), "-_8");
  EXPECT_EQ(DecodeBase64RawUrl("-_8").value(), "\xfb\xff");
  EXPECT_EQ(DecodeBase64RawUrl("Zm9vYg").value(), "foob");
}

std::string Token(const std::string& json) { return Base64RawUrl(json); }

TEST(ContinueTokenTest, BadTokensGetKubeApiserversMessages) {
  EXPECT_EQ(DecodeContinue("abc$").message(),
            "continue key is not valid: illegal base64 data at input byte 3");
  EXPECT_EQ(DecodeContinue("Zm9vYg==").message(),
            "continue key is not valid: illegal base64 data at input byte 6");
  EXPECT_EQ(DecodeContinue("A").message(),
            "continue key is not valid: illegal base64 data at input byte 0");
  EXPECT_NE(DecodeContinue(Token("not json")).message().find("continue key is not valid: "),
            std::string::npos);
  EXPECT_EQ(DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":0,"start":"a"})")).message(),
            "continue key is not valid: incorrect encoded start resourceVersion (version "
            "meta.k8s.io/v1)");
  EXPECT_EQ(DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":5,"start":""})")).message(),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)");
  EXPECT_EQ(DecodeContinue(Token(R"({"v":"meta.k8s.io/v2","rv":5,"start":"a"})")).message(),
            "continue key is not valid: server does not recognize this encoded version "
            "meta.k8s.io/v2");
  // path.Clean would change these: a way out of the list's prefix.
  EXPECT_EQ(
      DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":5,"start":"../secrets/x"})")).message(),
      "continue key is not valid: ../secrets/x");
  EXPECT_FALSE(DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":5,"start":"a//b"})")).ok());
  EXPECT_FALSE(DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":"5","start":"a"})")).ok());
  EXPECT_FALSE(DecodeContinue(Token("[1,2]")).ok());
}

TEST(ContinueTokenTest, NegativeResourceVersionAndLeadingSlashAreAccepted) {
  auto t = DecodeContinue(Token(R"({"v":"meta.k8s.io/v1","rv":-1,"start":"/ns/p\u0000"})"));
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t.value().resource_version, -1);
  EXPECT_EQ(t.value().start, std::string("ns/p\0", 5));
}

// The list writer's fast path gives the bytes nlohmann's dump(-1, ' ', false, replace) gives.
TEST(WireJsonTest, SameBytesAsNlohmannForEveryKindOfValue) {
  using nlohmann::json;
  const json values[] = {
      json::object(),
      json::array(),
      json{{"b", 1}, {"a", {1, -2, 3u, true, false, nullptr}}, {"c", "x"}},
      json{{"quote\"back\\slash", "tab\tnl\ncr\rbs\bff\f\x01\x1f\x7f"}},
      json{{"utf8", "naïve — 日本 🚀"}},
      json{{"bad", std::string("a\xff"
                               "b\xc3")}},
      json{{"float", 1.5}, {"big", 1e300}, {"neg", -0.25}},
      json{{"min", INT64_MIN}, {"max", UINT64_MAX}},
      json("plain"),
      json(7),
  };
  for (const json& v : values)
    EXPECT_EQ(WireJson(v), v.dump(-1, ' ', false, json::error_handler_t::replace))
        << v.dump(-1, ' ', true, json::error_handler_t::replace);
  std::string out = "[";
  AppendWireJson(out, values[2]);
  EXPECT_EQ(out, "[" + values[2].dump());
}

}  // namespace continue_token_test
}  // namespace arbiter::kube
