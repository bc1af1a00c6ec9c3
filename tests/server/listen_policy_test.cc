// Who may reach the daemon: loopback without a token file, TLS with one elsewhere.
#include "server/http/listen_policy.h"

#include <gtest/gtest.h>

namespace arbiter::server {
namespace {

TEST(ListenPolicy, LoopbackIs127Slash8OrIpv6LoopbackOrLocalhost) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"})
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  for (const char* h : {"0.0.0.0", "", "10.0.0.1", "128.0.0.1", "example.com", "::"})
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
}

TEST(ListenPolicy, WithoutATokenFileOnlyLoopbackWithOneOffLoopbackOnlyOverTls) {
  EXPECT_TRUE(CheckListenPolicy("127.0.0.1", false, false).ok());
  EXPECT_TRUE(CheckListenPolicy("127.0.0.1", true, false).ok());
  EXPECT_TRUE(CheckListenPolicy("0.0.0.0", true, true).ok());
  Status open = CheckListenPolicy("0.0.0.0", false, true);
  EXPECT_FALSE(open.ok());
  EXPECT_NE(open.message().find("'0.0.0.0' is not a loopback address, and without --token-file"),
            std::string::npos)
      << open.message();
  Status clear = CheckListenPolicy("10.0.0.1", true, false);
  EXPECT_FALSE(clear.ok());
  EXPECT_NE(clear.message().find("needs --tls-cert-file and --tls-private-key-file"),
            std::string::npos)
      << clear.message();
}

}  // namespace
}  // namespace arbiter::server
